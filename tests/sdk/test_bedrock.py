"""AWS Bedrock targets (`provider = "bedrock"`, Converse and ConverseStream) through the
gateway, against bedrock_mock.py, which checks every request's SigV4 signature with botocore
itself. Every client dialect is translated (no client speaks Converse): openai (chat and
responses), anthropic and google-genai, streaming and not, tools, usage, errors. Runs on a
gateway of its own, so a gateway without Bedrock fails only these tests."""

import json
import os

import anthropic
import openai
import pytest

import bedrock_mock
from conftest import GATEWAY_KEY, anthropic_client, binary, genai_client, openai_client, start

CLAUDE = "anthropic.claude-3-5-sonnet-20240620-v1:0"
CLAUDE_45 = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
PROFILE_ARN = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-x"
WRONG_SECRET = "wrong-secret-for-the-sdk-test-0123456789"
SESSION_KEY = "ASIAGATEWAYSDKTEST02"
SESSION_SECRET = "session-secret-for-the-sdk-test-98765"
PROMPT = [{"role": "user", "content": "Say hello."}]
TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                         "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                        "required": ["city"]}}}


@pytest.fixture(scope="module")
def bedrock():
    mock = bedrock_mock.start()
    mock.keys[SESSION_KEY] = (SESSION_SECRET, bedrock_mock.SESSION_TOKEN)
    yield mock
    mock.server.shutdown()


def bedrock_target(url: str, model: str, extra: str) -> str:
    return (f'[[models.targets]]\nprovider = "bedrock"\nbase_url = "{url}"\nregion = "us-east-1"\n'
            f'model = "{model}"\n{extra}')


@pytest.fixture(scope="module")
def bedrock_gateway(workdir, bedrock):
    creds = workdir / "aws-credentials"
    creds.write_text(
        f"[wrong]\naws_access_key_id = {bedrock_mock.ACCESS_KEY}\naws_secret_access_key = {WRONG_SECRET}\n\n"
        f"[session]\naws_access_key_id = {SESSION_KEY}\naws_secret_access_key = {SESSION_SECRET}\n"
        f"aws_session_token = {bedrock_mock.SESSION_TOKEN}\n"
    )
    env = 'aws_credentials = "env"\n'
    models = {
        "br-claude": (CLAUDE, env),
        "br-claude-45": (CLAUDE_45, env),
        "br-arn": (PROFILE_ARN, 'aws_credentials = "profile"\naws_profile = "session"\n'),
        "br-apikey": (CLAUDE, 'api_key_env = "GW_SDK_BEDROCK_API_KEY"\n'),
        "br-wrong": (CLAUDE, 'aws_credentials = "profile"\naws_profile = "wrong"\n'),
        "br-container": (CLAUDE, 'aws_credentials = "container"\n'),
        "br-web-identity": (CLAUDE, 'aws_credentials = "web-identity"\n'),
        "br-throttle": ("mock-throttle", env),
        "br-stream-error": ("mock-stream-error", env),
        "br-bad-crc": ("mock-bad-crc", env),
        "br-cut": ("mock-cut", env),
    }
    text = (
        '[server]\nlisten = "127.0.0.1:0"\nshutdown_grace_ms = 5000\n\n'
        "[upstream]\nconnect_timeout_ms = 2000\nfirst_byte_timeout_ms = 10000\nidle_timeout_ms = 10000\n\n"
        '[observability]\naccess_log = "stderr"\nmetrics = false\n\n'
        f'[[keys]]\nname = "sdk"\nkey = "{GATEWAY_KEY}"\n\n'
    )
    for name, (model, extra) in models.items():
        text += f'[[models]]\nname = "{name}"\n' + bedrock_target(bedrock.url, model, extra) + "\n"
    config = workdir / "gateway-bedrock.toml"
    config.write_text(text)
    web_token = workdir / "web-identity-token"
    web_token.write_text(bedrock_mock.WEB_TOKEN + "\n")
    env_vars = {
        "AWS_CONTAINER_CREDENTIALS_FULL_URI": f"{bedrock.url}/container-creds",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN": bedrock_mock.CONTAINER_AUTH,
        "AWS_WEB_IDENTITY_TOKEN_FILE": str(web_token),
        "AWS_ROLE_ARN": bedrock_mock.ROLE_ARN,
        "AWS_ENDPOINT_URL_STS": f"{bedrock.url}/sts",
        "AWS_ACCESS_KEY_ID": bedrock_mock.ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": bedrock_mock.SECRET_KEY,
        "AWS_SHARED_CREDENTIALS_FILE": str(creds),
        "GW_SDK_BEDROCK_API_KEY": bedrock_mock.API_KEY,
    }
    saved = {k: os.environ.get(k) for k in env_vars}
    os.environ.update(env_vars)
    os.environ.pop("AWS_SESSION_TOKEN", None)
    try:
        proc = start([str(binary("GATEWAY_BIN", "gateway")), "--config", str(config), "--workers", "2"],
                     workdir / "gateway-bedrock.log")
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    try:
        yield proc
    finally:
        code = proc.stop()
        log = proc.log.read_text(errors="replace")
        assert code == 0, f"gateway-bedrock exited {code}:\n{log}"
        # No secret ever reaches the log.
        for secret in (bedrock_mock.SECRET_KEY, WRONG_SECRET, SESSION_SECRET, bedrock_mock.SESSION_TOKEN,
                       bedrock_mock.API_KEY, bedrock_mock.CONTAINER_AUTH, bedrock_mock.WEB_TOKEN, "tmp-secret-",
                       "tmp-token-"):
            assert secret not in log, log


def new_seen(mock, before):
    with mock.lock:
        return mock.seen[before:]


def test_chat_text_system_usage_signed(bedrock, bedrock_gateway):
    oai = openai_client(bedrock_gateway.url)
    before = len(bedrock.seen)
    r = oai.chat.completions.create(model="br-claude", max_tokens=50, temperature=0.5,
                                    messages=[{"role": "system", "content": "Be brief."}, *PROMPT])
    assert r.choices[0].message.content == bedrock_mock.TEXT
    assert r.choices[0].finish_reason == "stop"
    assert r.model == CLAUDE  # Converse names no model: the target's
    assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (11, 4)
    [s] = new_seen(bedrock, before)
    assert s.verified and s.status == 200
    assert s.path == "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse"
    assert s.body["system"] == [{"text": "Be brief."}]
    assert s.body["inferenceConfig"] == {"maxTokens": 50, "temperature": 0.5}
    assert "model" not in s.body
    assert s.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=" + bedrock_mock.ACCESS_KEY)
    assert "x-amz-security-token" not in s.headers


def test_claude_4_5_gets_temperature_or_top_p(bedrock, bedrock_gateway):
    # Bedrock refuses both samplers on Claude 4.5 (so does the mock, refusals.py): top_p is
    # dropped and named, temperature carried (issue 51).
    oai = openai_client(bedrock_gateway.url)
    before = len(bedrock.seen)
    raw = oai.chat.completions.with_raw_response.create(
        model="br-claude-45", max_tokens=50, temperature=0.5, top_p=0.9, messages=PROMPT)
    assert raw.parse().choices[0].message.content == bedrock_mock.TEXT
    assert raw.headers["x-gateway-dropped-fields"] == "top_p"
    [s] = new_seen(bedrock, before)
    assert s.status == 200
    assert s.body["inferenceConfig"] == {"maxTokens": 50, "temperature": 0.5}


def test_chat_stream(bedrock, bedrock_gateway):
    oai = openai_client(bedrock_gateway.url)
    before = len(bedrock.seen)
    chunks = list(oai.chat.completions.create(model="br-claude", messages=PROMPT, stream=True,
                                              stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == bedrock_mock.TEXT
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage.prompt_tokens == 11
    assert {c.model for c in chunks} == {CLAUDE}
    [s] = new_seen(bedrock, before)
    assert s.verified and s.path.endswith("/converse-stream")


@pytest.mark.parametrize("stream", [False, True])
def test_chat_tools_round_trip(bedrock, bedrock_gateway, stream):
    oai = openai_client(bedrock_gateway.url)
    msgs = [{"role": "user", "content": "Weather in Paris?"}]
    if stream:
        calls = {}
        finish = None
        for c in oai.chat.completions.create(model="br-claude", messages=msgs, tools=[TOOL], stream=True):
            for tc in (c.choices[0].delta.tool_calls or []) if c.choices else []:
                entry = calls.setdefault(tc.index, {"id": tc.id, "name": tc.function.name, "args": ""})
                entry["args"] += tc.function.arguments or ""
            if c.choices and c.choices[0].finish_reason:
                finish = c.choices[0].finish_reason
        call = calls[0]
        assert finish == "tool_calls"
        call_id, name, args = call["id"], call["name"], call["args"]
    else:
        r = oai.chat.completions.create(model="br-claude", messages=msgs, tools=[TOOL], tool_choice="required")
        assert r.choices[0].finish_reason == "tool_calls"
        tc = r.choices[0].message.tool_calls[0]
        call_id, name, args = tc.id, tc.function.name, tc.function.arguments
    assert (call_id, name, json.loads(args)) == ("tooluse_mock1", "get_weather", {"city": "Paris"})
    before = len(bedrock.seen)
    msgs += [{"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}]},
        {"role": "tool", "tool_call_id": call_id, "content": "18C"}]
    r = oai.chat.completions.create(model="br-claude", messages=msgs, tools=[TOOL])
    assert r.choices[0].message.content == bedrock_mock.TOOL_TEXT
    [s] = new_seen(bedrock, before)
    assert s.verified
    assert s.body["messages"][1]["content"][0]["toolUse"]["input"] == {"city": "Paris"}
    assert s.body["messages"][2]["content"][0]["toolResult"] == {
        "toolUseId": "tooluse_mock1", "content": [{"text": "18C"}], "status": "success"}


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_messages(bedrock, bedrock_gateway, stream):
    ant = anthropic_client(bedrock_gateway.url)
    kw = dict(model="br-claude", max_tokens=64, system="Be brief.", messages=PROMPT)
    if stream:
        with ant.messages.stream(**kw) as s:
            m = s.get_final_message()
    else:
        m = ant.messages.create(**kw)
    assert m.content[0].text == bedrock_mock.TEXT
    assert m.stop_reason == "end_turn"
    assert (m.usage.input_tokens, m.usage.output_tokens) == (11, 4)
    r = ant.messages.create(model="br-claude", max_tokens=64, messages=[{"role": "user", "content": "Weather?"}],
                            tools=[{"name": "get_weather", "input_schema": TOOL["function"]["parameters"]}])
    assert r.stop_reason == "tool_use"
    assert r.content[0].input == {"city": "Paris"}


def test_responses(bedrock, bedrock_gateway):
    oai = openai_client(bedrock_gateway.url)
    r = oai.responses.create(model="br-claude", input="Say hello.", instructions="Be brief.")
    assert r.output_text == bedrock_mock.TEXT
    events = list(oai.responses.create(model="br-claude", input="Say hello.", stream=True))
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == bedrock_mock.TEXT


@pytest.mark.parametrize("stream", [False, True])
def test_gemini(bedrock, bedrock_gateway, stream):
    gai = genai_client(bedrock_gateway.url)
    if stream:
        text = "".join(c.text or "" for c in gai.models.generate_content_stream(model="br-claude", contents="Say hello."))
    else:
        r = gai.models.generate_content(model="br-claude", contents="Say hello.")
        text = r.text
        assert r.usage_metadata.prompt_token_count == 11
    assert text == bedrock_mock.TEXT


def test_arn_with_session_token_and_api_key(bedrock, bedrock_gateway):
    """An inference-profile ARN (`:` and `/` in one path segment) signed with temporary
    keys from a profile (the session token signed too), and a Bedrock API key (Bearer)."""
    oai = openai_client(bedrock_gateway.url)
    before = len(bedrock.seen)
    assert oai.chat.completions.create(model="br-arn", messages=PROMPT).choices[0].message.content == bedrock_mock.TEXT
    assert oai.chat.completions.create(model="br-apikey", messages=PROMPT).choices[0].message.content == bedrock_mock.TEXT
    arn, key = new_seen(bedrock, before)
    assert arn.verified and arn.model == PROFILE_ARN
    assert arn.path == "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-x/converse"
    assert arn.headers["x-amz-security-token"] == bedrock_mock.SESSION_TOKEN
    assert key.verified and key.headers["authorization"] == f"Bearer {bedrock_mock.API_KEY}"
    assert "x-amz-date" not in key.headers


@pytest.mark.parametrize("model,how", [("br-container", "container"), ("br-web-identity", "sts")])
def test_fetched_keys_sign(bedrock, bedrock_gateway, model, how):
    """Container credentials and a web identity (STS AssumeRoleWithWebIdentity): the
    gateway fetches temporary keys in the background and signs with them, session token
    included."""
    oai = openai_client(bedrock_gateway.url)
    before = len(bedrock.seen)
    r = oai.chat.completions.create(model=model, messages=PROMPT, stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in r if c.choices) == bedrock_mock.TEXT
    [s] = [x for x in new_seen(bedrock, before) if x.path.startswith("/model/")]
    assert s.verified
    issued = [ak for h, ak in bedrock.issued if h == how]
    assert issued and s.headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={issued[-1]}/")
    assert s.headers["x-amz-security-token"].startswith(f"tmp-token-{how}-")


def test_the_verifier_refuses_a_changed_request(bedrock):
    """The mock's check can fail: botocore's signature over a one-byte-changed body differs."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    url = bedrock.url + "/model/m/converse"
    req = AWSRequest(method="POST", url=url, data=b'{"a":1}', headers={"content-type": "application/json"})
    SigV4Auth(Credentials(bedrock_mock.ACCESS_KEY, bedrock_mock.SECRET_KEY), "bedrock", "us-east-1").add_auth(req)
    headers = {k.lower(): v for k, v in req.headers.items()}
    headers["host"] = url.split("/")[2]
    args = ("POST", url, headers)
    assert bedrock_mock.verify_sigv4(*args, b'{"a":1}', bedrock_mock.ACCESS_KEY, bedrock_mock.SECRET_KEY)
    assert not bedrock_mock.verify_sigv4(*args, b'{"a":2}', bedrock_mock.ACCESS_KEY, bedrock_mock.SECRET_KEY)


def test_wrong_signature_is_a_403_in_each_envelope(bedrock, bedrock_gateway):
    oai = openai_client(bedrock_gateway.url)
    with pytest.raises(openai.PermissionDeniedError) as e:
        oai.chat.completions.create(model="br-wrong", messages=PROMPT)
    assert e.value.status_code == 403
    body = e.value.response.text
    assert "signature" in body
    assert WRONG_SECRET not in body and bedrock_mock.SECRET_KEY not in body
    ant = anthropic_client(bedrock_gateway.url)
    with pytest.raises(anthropic.PermissionDeniedError) as e:
        ant.messages.create(model="br-wrong", max_tokens=10, messages=PROMPT)
    assert e.value.body["error"]["type"] == "permission_error"
    assert not bedrock.seen[-1].verified


@pytest.mark.parametrize("stream", [False, True])
def test_throttling_is_each_sdks_rate_limit_error(bedrock_gateway, stream):
    oai = openai_client(bedrock_gateway.url)
    with pytest.raises(openai.RateLimitError) as e:
        r = oai.chat.completions.create(model="br-throttle", messages=PROMPT, stream=stream)
        if stream:
            list(r)
    assert e.value.status_code == 429
    ant = anthropic_client(bedrock_gateway.url).with_options(max_retries=0)
    with pytest.raises(anthropic.RateLimitError) as e:
        if stream:
            with ant.messages.stream(model="br-throttle", max_tokens=10, messages=PROMPT) as s:
                s.get_final_message()
        else:
            ant.messages.create(model="br-throttle", max_tokens=10, messages=PROMPT)
    assert e.value.body["error"]["type"] == "rate_limit_error"


def test_mid_stream_error_reaches_each_client(bedrock_gateway):
    oai = openai_client(bedrock_gateway.url)
    with pytest.raises(openai.APIError) as e:
        list(oai.chat.completions.create(model="br-stream-error", messages=PROMPT, stream=True))
    assert "failed mid-answer" in str(e.value)
    ant = anthropic_client(bedrock_gateway.url)
    with pytest.raises(anthropic.APIStatusError) as e:
        with ant.messages.stream(model="br-stream-error", max_tokens=10, messages=PROMPT) as s:
            s.get_final_message()
    assert "failed mid-answer" in str(e.value)


def test_broken_streams_end_with_an_error(bedrock_gateway):
    """A frame with a bad CRC ends the answer with the client's in-stream error; a stream cut
    inside a frame is a truncation (the gateway cuts the client's stream, as for any
    upstream stream that ends early): never a clean end."""
    oai = openai_client(bedrock_gateway.url)
    with pytest.raises(openai.APIError) as e:
        list(oai.chat.completions.create(model="br-bad-crc", messages=PROMPT, stream=True))
    assert "cannot be read on" in str(e.value) and "checksum" in str(e.value)
    with pytest.raises(openai.APIConnectionError):
        list(oai.chat.completions.create(model="br-cut", messages=PROMPT, stream=True))


def test_access_log_names_the_provider(bedrock_gateway):
    oai = openai_client(bedrock_gateway.url)
    oai.chat.completions.create(model="br-claude", messages=PROMPT)
    lines = [json.loads(line) for line in bedrock_gateway.log.read_text().splitlines() if line.startswith("{")]
    mine = [r for r in lines if r.get("model") == "br-claude"]
    assert mine and all(r["provider"] == "bedrock" and r["translated"].endswith("->converse") for r in mine)
