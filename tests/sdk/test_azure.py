"""Azure OpenAI targets (`provider = "azure-openai"`) through the gateway, against
azure_mock.py, which checks each request's route, `api-version` and credential the way Azure
does and answers errors in Azure's envelope. A classic target (a dated api-version, the
deployments URL, an `api-key`) and a v1 target (`/openai/v1/...`, an Entra bearer token):
openai chat and Responses pass through; anthropic and google-genai are translated to chat.
Streaming and not, tool round trips, a wrong key, an unknown deployment, throttling and a
cut stream. Runs on a gateway of its own, so a gateway without Azure fails only these."""

import json
import os
import urllib.error
import urllib.request

import anthropic
import openai
import pytest
from google.genai import errors as genai_errors

import azure_mock
from conftest import GATEWAY_KEY, anthropic_client, binary, genai_client, openai_client, start

CLASSIC_VERSION = "2025-04-01-preview"
OLD_VERSION = "2024-10-21"
WRONG_KEY = "azure-wrong-key-gw-sdk-fedcba9876543210"
PROMPT = [{"role": "user", "content": "Say hello."}]
TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                         "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                        "required": ["city"]}}}
SECRETS = (azure_mock.API_KEY, azure_mock.ENTRA_TOKEN, WRONG_KEY)


@pytest.fixture(scope="module")
def azure():
    mock = azure_mock.start()
    yield mock
    mock.server.shutdown()


def azure_target(url: str, deployment: str, version: str, key_env: str, extra: str = "") -> str:
    return (f'[[models.targets]]\nprovider = "azure-openai"\nbase_url = "{url}"\nmodel = "gpt-4o"\n'
            f'deployment = "{deployment}"\napi_version = "{version}"\napi_key_env = "{key_env}"\n{extra}')


@pytest.fixture(scope="module")
def azure_gateway(workdir, azure):
    entra = 'auth = "entra"\n'
    models = {
        "az-classic": ("gpt-4o-dep", CLASSIC_VERSION, "GW_SDK_AZURE_KEY", ""),
        "az-old": ("gpt-4o-dep", OLD_VERSION, "GW_SDK_AZURE_KEY", ""),
        "az-v1": ("gpt-4o-dep", "v1", "GW_SDK_AZURE_TOKEN", entra),
        "az-wrong-key": ("gpt-4o-dep", CLASSIC_VERSION, "GW_SDK_AZURE_WRONG", ""),
        "az-wrong-token": ("gpt-4o-dep", "v1", "GW_SDK_AZURE_WRONG", entra),
        "az-missing": ("no-such-deployment", CLASSIC_VERSION, "GW_SDK_AZURE_KEY", ""),
        "az-throttle": ("throttle", CLASSIC_VERSION, "GW_SDK_AZURE_KEY", ""),
        "az-cut": ("cut", CLASSIC_VERSION, "GW_SDK_AZURE_KEY", ""),
        "az-filtered": ("filtered", CLASSIC_VERSION, "GW_SDK_AZURE_KEY", ""),
    }
    text = (
        '[server]\nlisten = "127.0.0.1:0"\nshutdown_grace_ms = 5000\n\n'
        "[upstream]\nconnect_timeout_ms = 2000\nfirst_byte_timeout_ms = 10000\nidle_timeout_ms = 10000\n\n"
        '[observability]\naccess_log = "stderr"\nmetrics = false\n\n'
        f'[[keys]]\nname = "sdk"\nkey = "{GATEWAY_KEY}"\n\n'
    )
    for name, args in models.items():
        text += f'[[models]]\nname = "{name}"\n' + azure_target(azure.url, *args) + "\n"
    config = workdir / "gateway-azure.toml"
    config.write_text(text)
    env_vars = {"GW_SDK_AZURE_KEY": azure_mock.API_KEY, "GW_SDK_AZURE_TOKEN": azure_mock.ENTRA_TOKEN,
                "GW_SDK_AZURE_WRONG": WRONG_KEY}
    saved = {k: os.environ.get(k) for k in env_vars}
    os.environ.update(env_vars)
    try:
        proc = start([str(binary("GATEWAY_BIN", "gateway")), "--config", str(config), "--workers", "2"],
                     workdir / "gateway-azure.log")
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
        assert code == 0, f"gateway-azure exited {code}:\n{log}"
        for secret in SECRETS:  # no key or token ever reaches the log
            assert secret not in log, log


def new_seen(mock, before):
    with mock.lock:
        return mock.seen[before:]


def assert_classic(s, path: str, version: str = CLASSIC_VERSION):
    """The classic API as Azure takes it: the exact path, one api-version, the resource key
    as `api-key` and no bearer beside it."""
    assert (s.path, s.query, s.status) == (path, f"api-version={version}", 200)
    assert s.headers["api-key"] == azure_mock.API_KEY
    assert "authorization" not in s.headers


def assert_v1(s, path: str):
    """The v1 API: no query, the Entra token as a bearer and no `api-key` beside it."""
    assert (s.path, s.query, s.status) == (path, "", 200)
    assert s.headers["authorization"] == f"Bearer {azure_mock.ENTRA_TOKEN}"
    assert "api-key" not in s.headers
    assert s.body["model"] == "gpt-4o-dep"  # v1 routes by the body's model: the deployment


def no_secret(text: str):
    for secret in SECRETS:
        assert secret not in text


# The mock itself: it refuses what Azure refuses (so a pass below means something).
def post(url: str, headers: dict, body: dict) -> tuple:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json", **headers})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_the_mock_refuses_what_azure_refuses(azure):
    key = {"api-key": azure_mock.API_KEY}
    body = {"messages": PROMPT}
    chat = f"{azure.url}/openai/deployments/gpt-4o-dep/chat/completions"
    assert post(f"{chat}?api-version={OLD_VERSION}", key, body)[0] == 200
    assert post(chat, key, body) == (404, azure_mock.azure_error("404", "Resource not found"))
    status, err = post(f"{chat}?api-version={OLD_VERSION}", {"api-key": WRONG_KEY}, body)
    assert (status, err["error"]["code"]) == (401, "401")
    assert err["error"]["message"].startswith("Access denied due to invalid subscription key")
    status, err = post(f"{chat}?api-version={OLD_VERSION}", {"authorization": f"Bearer {azure_mock.API_KEY}"}, body)
    assert (status, err["error"]["code"]) == (401, "401")
    status, err = post(f"{azure.url}/openai/deployments/nope/chat/completions?api-version={OLD_VERSION}", key, body)
    assert (status, err["error"]["code"]) == (404, "DeploymentNotFound")
    assert post(f"{azure.url}/openai/v1/chat/completions?api-version={OLD_VERSION}", key,
                {"model": "gpt-4o-dep", **body})[0] == 404
    assert post(f"{azure.url}/openai/responses?api-version={OLD_VERSION}", key,
                {"model": "gpt-4o-dep", "input": "hi"})[0] == 400


@pytest.mark.parametrize("stream", [False, True])
def test_openai_chat_classic_api_key(azure, azure_gateway, stream):
    oai = openai_client(azure_gateway.url)
    before = len(azure.seen)
    if stream:
        chunks = list(oai.chat.completions.create(model="az-classic", messages=PROMPT, stream=True,
                                                  stream_options={"include_usage": True}))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
        usage = chunks[-1].usage
    else:
        r = oai.chat.completions.create(model="az-classic", messages=PROMPT, max_tokens=50)
        text, usage = r.choices[0].message.content, r.usage
        assert r.choices[0].finish_reason == "stop"
    assert text == azure_mock.TEXT
    assert (usage.prompt_tokens, usage.completion_tokens) == (9, 4)
    [s] = new_seen(azure, before)
    assert_classic(s, "/openai/deployments/gpt-4o-dep/chat/completions")
    assert s.body["model"] == "gpt-4o-dep"
    assert s.body.get("stream", False) is stream


@pytest.mark.parametrize("stream", [False, True])
def test_openai_chat_v1_entra(azure, azure_gateway, stream):
    oai = openai_client(azure_gateway.url)
    before = len(azure.seen)
    if stream:
        text = "".join(c.choices[0].delta.content or "" for c in
                       oai.chat.completions.create(model="az-v1", messages=PROMPT, stream=True) if c.choices)
    else:
        text = oai.chat.completions.create(model="az-v1", messages=PROMPT).choices[0].message.content
    assert text == azure_mock.TEXT
    [s] = new_seen(azure, before)
    assert_v1(s, "/openai/v1/chat/completions")


@pytest.mark.parametrize("model", ["az-classic", "az-v1"])
@pytest.mark.parametrize("stream", [False, True])
def test_openai_responses(azure, azure_gateway, model, stream):
    oai = openai_client(azure_gateway.url)
    before = len(azure.seen)
    if stream:
        events = list(oai.responses.create(model=model, input="Say hello.", stream=True))
        assert events[-1].type == "response.completed"
        assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == azure_mock.TEXT
        r = events[-1].response
    else:
        r = oai.responses.create(model=model, input="Say hello.", instructions="Be brief.")
    assert r.output_text == azure_mock.TEXT
    assert (r.usage.input_tokens, r.usage.output_tokens) == (9, 4)
    [s] = new_seen(azure, before)
    if model == "az-classic":
        # Responses is not deployment-routed: the body's model names the deployment.
        assert_classic(s, "/openai/responses")
        assert s.body["model"] == "gpt-4o-dep"
    else:
        assert_v1(s, "/openai/v1/responses")


def test_responses_on_a_version_too_old_is_azures_400(azure, azure_gateway):
    oai = openai_client(azure_gateway.url)
    with pytest.raises(openai.BadRequestError) as e:
        oai.responses.create(model="az-old", input="Say hello.")
    assert "2025-03-01-preview" in str(e.value)
    # Chat on the same target works: the version is Azure's to judge, not the gateway's.
    assert oai.chat.completions.create(model="az-old", messages=PROMPT).choices[0].message.content == azure_mock.TEXT


@pytest.mark.parametrize("model", ["az-classic", "az-v1"])
@pytest.mark.parametrize("stream", [False, True])
def test_openai_chat_tools_round_trip(azure, azure_gateway, model, stream):
    oai = openai_client(azure_gateway.url)
    msgs = [{"role": "user", "content": "Weather in Paris?"}]
    if stream:
        calls, finish = {}, None
        for c in oai.chat.completions.create(model=model, messages=msgs, tools=[TOOL], stream=True):
            for tc in (c.choices[0].delta.tool_calls or []) if c.choices else []:
                entry = calls.setdefault(tc.index, {"id": tc.id, "name": tc.function.name, "args": ""})
                entry["args"] += tc.function.arguments or ""
            if c.choices and c.choices[0].finish_reason:
                finish = c.choices[0].finish_reason
        assert finish == "tool_calls"
        call_id, name, args = calls[0]["id"], calls[0]["name"], calls[0]["args"]
    else:
        r = oai.chat.completions.create(model=model, messages=msgs, tools=[TOOL])
        assert r.choices[0].finish_reason == "tool_calls"
        tc = r.choices[0].message.tool_calls[0]
        call_id, name, args = tc.id, tc.function.name, tc.function.arguments
    assert (call_id, name, json.loads(args)) == (azure_mock.CALL_ID, "get_weather", {"city": "Paris"})
    before = len(azure.seen)
    msgs += [{"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}]},
        {"role": "tool", "tool_call_id": call_id, "content": "18C"}]
    r = oai.chat.completions.create(model=model, messages=msgs, tools=[TOOL])
    assert r.choices[0].message.content == azure_mock.TOOL_TEXT
    [s] = new_seen(azure, before)
    assert s.body["messages"][2] == {"role": "tool", "tool_call_id": azure_mock.CALL_ID, "content": "18C"}


@pytest.mark.parametrize("stream", [False, True])
def test_openai_responses_tools_round_trip(azure, azure_gateway, stream):
    oai = openai_client(azure_gateway.url)
    tool = {"type": "function", **TOOL["function"]}
    if stream:
        events = list(oai.responses.create(model="az-v1", input="Weather in Paris?", tools=[tool], stream=True))
        r = events[-1].response
    else:
        r = oai.responses.create(model="az-v1", input="Weather in Paris?", tools=[tool])
    [call] = [o for o in r.output if o.type == "function_call"]
    assert (call.call_id, call.name, json.loads(call.arguments)) == (azure_mock.CALL_ID, "get_weather",
                                                                     {"city": "Paris"})
    before = len(azure.seen)
    r = oai.responses.create(model="az-v1", tools=[tool], input=[
        {"role": "user", "content": "Weather in Paris?"},
        {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "18C"}])
    assert r.output_text == azure_mock.TOOL_TEXT
    [s] = new_seen(azure, before)
    assert_v1(s, "/openai/v1/responses")
    assert s.body["input"][2] == {"type": "function_call_output", "call_id": azure_mock.CALL_ID, "output": "18C"}


@pytest.mark.parametrize("model", ["az-classic", "az-v1"])
@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_messages(azure, azure_gateway, model, stream):
    ant = anthropic_client(azure_gateway.url)
    kw = dict(model=model, max_tokens=64, system="Be brief.", messages=PROMPT)
    before = len(azure.seen)
    if stream:
        with ant.messages.stream(**kw) as s:
            m = s.get_final_message()
    else:
        m = ant.messages.create(**kw)
    assert m.content[0].text == azure_mock.TEXT
    assert m.stop_reason == "end_turn"
    assert m.usage.input_tokens == 9 and m.usage.output_tokens == 4
    # Azure's model, streaming too (its first chunk, the prompt filter's, names none).
    assert m.model == azure_mock.MODEL
    [s] = new_seen(azure, before)
    if model == "az-classic":
        assert_classic(s, "/openai/deployments/gpt-4o-dep/chat/completions")
    else:
        assert_v1(s, "/openai/v1/chat/completions")
    assert s.body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert "anthropic-version" not in s.headers and "x-api-key" not in s.headers


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_tools_round_trip(azure, azure_gateway, stream):
    ant = anthropic_client(azure_gateway.url)
    tools = [{"name": "get_weather", "description": "Weather in a city", "input_schema": TOOL["function"]["parameters"]}]
    msgs = [{"role": "user", "content": "Weather in Paris?"}]
    if stream:
        with ant.messages.stream(model="az-classic", max_tokens=64, messages=msgs, tools=tools) as s:
            m = s.get_final_message()
    else:
        m = ant.messages.create(model="az-classic", max_tokens=64, messages=msgs, tools=tools)
    assert m.stop_reason == "tool_use"
    [use] = [b for b in m.content if b.type == "tool_use"]
    assert (use.id, use.name, use.input) == (azure_mock.CALL_ID, "get_weather", {"city": "Paris"})
    before = len(azure.seen)
    msgs += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in m.content]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "18C"}]}]
    r = ant.messages.create(model="az-classic", max_tokens=64, messages=msgs, tools=tools)
    assert r.content[0].text == azure_mock.TOOL_TEXT
    [s] = new_seen(azure, before)
    assert_classic(s, "/openai/deployments/gpt-4o-dep/chat/completions")
    assert any(x.get("role") == "tool" and x.get("tool_call_id") == azure_mock.CALL_ID for x in s.body["messages"])


@pytest.mark.parametrize("model", ["az-classic", "az-v1"])
@pytest.mark.parametrize("stream", [False, True])
def test_gemini(azure, azure_gateway, model, stream):
    gai = genai_client(azure_gateway.url)
    before = len(azure.seen)
    if stream:
        chunks = list(gai.models.generate_content_stream(model=model, contents="Say hello."))
        text = "".join(c.text or "" for c in chunks)
        assert {c.model_version for c in chunks} == {azure_mock.MODEL}
    else:
        r = gai.models.generate_content(model=model, contents="Say hello.")
        text = r.text
        assert r.usage_metadata.prompt_token_count == 9
        assert r.model_version == azure_mock.MODEL
    assert text == azure_mock.TEXT
    [s] = new_seen(azure, before)
    if model == "az-classic":
        assert_classic(s, "/openai/deployments/gpt-4o-dep/chat/completions")
    else:
        assert_v1(s, "/openai/v1/chat/completions")
    assert "x-goog-api-key" not in s.headers


@pytest.mark.parametrize("model", ["az-wrong-key", "az-wrong-token"])
def test_wrong_credential_is_each_sdks_authentication_error(azure, azure_gateway, model):
    oai = openai_client(azure_gateway.url)
    with pytest.raises(openai.AuthenticationError) as e:
        oai.chat.completions.create(model=model, messages=PROMPT)
    assert e.value.status_code == 401
    no_secret(e.value.response.text)
    assert azure.seen[-1].status == 401
    ant = anthropic_client(azure_gateway.url)
    with pytest.raises(anthropic.AuthenticationError) as e:
        ant.messages.create(model=model, max_tokens=10, messages=PROMPT)
    assert e.value.body["type"] == "error" and e.value.body["error"]["type"] == "authentication_error"
    no_secret(e.value.response.text)
    gai = genai_client(azure_gateway.url)
    with pytest.raises(genai_errors.ClientError) as e:
        gai.models.generate_content(model=model, contents="Say hello.")
    assert e.value.code == 401
    no_secret(json.dumps(e.value.details))


def test_unknown_deployment_is_a_404(azure, azure_gateway):
    oai = openai_client(azure_gateway.url)
    with pytest.raises(openai.NotFoundError) as e:
        oai.chat.completions.create(model="az-missing", messages=PROMPT)
    assert "deployment" in str(e.value).lower()
    ant = anthropic_client(azure_gateway.url)
    with pytest.raises(anthropic.NotFoundError) as e:
        ant.messages.create(model="az-missing", max_tokens=10, messages=PROMPT)
    assert e.value.body["error"]["type"] == "not_found_error"
    assert azure.seen[-1].deployment == "no-such-deployment" and azure.seen[-1].status == 404


@pytest.mark.parametrize("stream", [False, True])
def test_throttling_is_each_sdks_rate_limit_error(azure_gateway, stream):
    oai = openai_client(azure_gateway.url)
    with pytest.raises(openai.RateLimitError) as e:
        r = oai.chat.completions.create(model="az-throttle", messages=PROMPT, stream=stream)
        if stream:
            list(r)
    assert e.value.status_code == 429
    assert e.value.response.headers.get("retry-after") == "1"
    ant = anthropic_client(azure_gateway.url)
    with pytest.raises(anthropic.RateLimitError) as e:
        if stream:
            with ant.messages.stream(model="az-throttle", max_tokens=10, messages=PROMPT) as s:
                s.get_final_message()
        else:
            ant.messages.create(model="az-throttle", max_tokens=10, messages=PROMPT)
    assert e.value.body["error"]["type"] == "rate_limit_error"
    assert e.value.response.headers.get("retry-after") == "1"
    gai = genai_client(azure_gateway.url)
    with pytest.raises(genai_errors.ClientError) as e:
        gai.models.generate_content(model="az-throttle", contents="Say hello.")
    assert e.value.code == 429


@pytest.mark.parametrize("stream", [False, True])
def test_content_filter_stop_is_each_clients_own(azure_gateway, stream):
    """Azure's content filter ends an answer with `finish_reason: "content_filter"`: the
    openai client gets it as is, anthropic a `refusal`, google-genai `SAFETY`."""
    oai = openai_client(azure_gateway.url)
    if stream:
        chunks = list(oai.chat.completions.create(model="az-filtered", messages=PROMPT, stream=True))
        assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "content_filter"
    else:
        r = oai.chat.completions.create(model="az-filtered", messages=PROMPT)
        assert r.choices[0].finish_reason == "content_filter"
    ant = anthropic_client(azure_gateway.url)
    kw = dict(model="az-filtered", max_tokens=10, messages=PROMPT)
    if stream:
        with ant.messages.stream(**kw) as s:
            m = s.get_final_message()
    else:
        m = ant.messages.create(**kw)
    assert m.stop_reason == "refusal"
    gai = genai_client(azure_gateway.url)
    if stream:
        chunks = list(gai.models.generate_content_stream(model="az-filtered", contents="Say hello."))
        reasons = [c.candidates[0].finish_reason for c in chunks if c.candidates and c.candidates[0].finish_reason]
    else:
        reasons = [gai.models.generate_content(model="az-filtered", contents="Say hello.").candidates[0].finish_reason]
    assert [r.name for r in reasons] == ["SAFETY"]


def test_a_cut_stream_never_ends_cleanly(azure_gateway):
    """Azure's connection dies inside a chunk: each client's stream fails, never ends as if
    the answer were whole."""
    oai = openai_client(azure_gateway.url)
    with pytest.raises(openai.APIError):
        list(oai.chat.completions.create(model="az-cut", messages=PROMPT, stream=True))
    ant = anthropic_client(azure_gateway.url)
    with pytest.raises(Exception) as e:  # noqa: PT011: the SDK lets its transport's error through
        with ant.messages.stream(model="az-cut", max_tokens=10, messages=PROMPT) as s:
            s.get_final_message()
    assert isinstance(e.value, anthropic.APIError) or type(e.value).__name__ == "RemoteProtocolError", e.value
    gai = genai_client(azure_gateway.url)
    with pytest.raises(Exception) as e:  # noqa: PT011: google-genai surfaces its transport's error
        list(gai.models.generate_content_stream(model="az-cut", contents="Say hello."))
    assert isinstance(e.value, genai_errors.APIError) or type(e.value).__name__ == "RemoteProtocolError", e.value


def test_access_log_names_the_provider_and_no_key(azure_gateway):
    oai = openai_client(azure_gateway.url)
    oai.chat.completions.create(model="az-classic", messages=PROMPT)
    log = azure_gateway.log.read_text()
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    mine = [r for r in lines if r.get("model") == "az-classic"]
    assert mine and all(r["provider"] == "azure-openai" for r in mine)
    no_secret(log)
