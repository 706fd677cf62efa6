"""Google Vertex AI targets (`vertex`, `vertex-anthropic`) through the gateway, against the
cloud mock (cloud_mock.py), which verifies the gateway's service-account assertions with
google-auth itself. google-auth's own `service_account.Credentials.refresh` against the same
mock is the oracle that keeps the mock honest. The SDKs: google-genai and anthropic
(passthrough) and openai (translated), streaming and not. Runs on a gateway of its own, so a
gateway without these providers fails only these tests."""

import time

import google.auth.exceptions
import google.auth.transport.requests
import pytest
from google.oauth2 import service_account

import cloud_mock
from conftest import anthropic_client, binary, genai_client, openai_client, start

PROJECT = "proj-sdk"
GEMINI = "gemini-2.5-flash"
CLAUDE = "claude-sonnet-4-5@20250929"
GEMINI_PATH = f"/v1/projects/{PROJECT}/locations/us-central1/publishers/google/models/{GEMINI}"
CLAUDE_PATH = f"/v1/projects/{PROJECT}/locations/us-east5/publishers/anthropic/models/{CLAUDE}"
# Short-lived tokens for the refresh test: the gateway must renew them in the background.
SHORT_LIFETIME_S = 4


@pytest.fixture(scope="module")
def cloud(workdir):
    mock = cloud_mock.start()
    keys = workdir / "vertex-keys"
    keys.mkdir(exist_ok=True)
    accounts = {
        "main": mock.make_service_account("gw-main", PROJECT, 3600, keys),
        "short": mock.make_service_account("gw-short", PROJECT, SHORT_LIFETIME_S, keys),
        "revoked": mock.make_service_account("gw-revoked", PROJECT, 3600, keys),
    }
    yield mock, accounts
    mock.server.shutdown()


def vertex_target(provider: str, url: str, location: str, model: str, key_file) -> str:
    return (
        f'[[models.targets]]\nprovider = "{provider}"\nbase_url = "{url}"\n'
        f'location = "{location}"\nmodel = "{model}"\ncredentials_file = "{key_file}"\n'
    )


@pytest.fixture(scope="module")
def vertex_gateway(workdir, cloud):
    from conftest import GATEWAY_KEY

    mock, accounts = cloud
    main, short, revoked = (accounts[k][0] for k in ("main", "short", "revoked"))
    models = {
        "vx-gemini": ("vertex", "us-central1", GEMINI, main),
        "vx-claude": ("vertex-anthropic", "us-east5", CLAUDE, main),
        "vx-short": ("vertex", "us-central1", GEMINI, short),
        "vx-revoked": ("vertex", "us-central1", GEMINI, revoked),
    }
    text = (
        '[server]\nlisten = "127.0.0.1:0"\nshutdown_grace_ms = 5000\n\n'
        # The floor lowered so that the short account's 4-second tokens are taken.
        "[upstream]\nconnect_timeout_ms = 2000\nfirst_byte_timeout_ms = 10000\nmin_credential_lifetime_ms = 2000\n\n"
        '[observability]\naccess_log = "off"\nmetrics = false\n\n'
        f'[[keys]]\nname = "sdk"\nkey = "{GATEWAY_KEY}"\n\n'
    )
    for name, (provider, location, model, key_file) in models.items():
        text += f'[[models]]\nname = "{name}"\n' + vertex_target(provider, mock.url, location, model, key_file) + "\n"
    config = workdir / "gateway-vertex.toml"
    config.write_text(text)
    proc = start([str(binary("GATEWAY_BIN", "gateway")), "--config", str(config), "--workers", "2"],
                 workdir / "gateway-vertex.log")
    try:
        yield proc.url
    finally:
        code = proc.stop()
        log = proc.log.read_text(errors="replace")
        assert code == 0, f"gateway-vertex exited {code}:\n{log}"
        # No key, assertion or token ever reaches the log.
        assert "PRIVATE KEY" not in log and "ya29." not in log and "assertion" not in log, log


def test_google_auth_itself_gets_a_token_from_the_mock(cloud, vertex_gateway):
    """The oracle: google-auth's own service-account flow succeeds against the mock, and the
    gateway's assertions carry the same claims and header as google-auth's, times aside."""
    mock, accounts = cloud
    _, info = accounts["main"]
    # The gateway's assertion for this account (fetched at start-up; wait for it).
    deadline = time.monotonic() + 10
    while not mock.exchanges_of(info["client_email"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    gateway_claims = mock.exchanges_of(info["client_email"])[0]
    creds = service_account.Credentials.from_service_account_info(
        info, scopes=[cloud_mock.CLOUD_PLATFORM]
    )
    creds.refresh(google.auth.transport.requests.Request())
    assert creds.token.startswith("ya29.mock-")
    oracle_claims = mock.exchanges_of(info["client_email"])[-1]
    untimed = lambda c: {k: v for k, v in c.items() if k not in ("iat", "exp")}  # noqa: E731
    assert untimed(gateway_claims[1]) == untimed(oracle_claims[1])
    assert gateway_claims[2] == oracle_claims[2]
    assert gateway_claims[1]["exp"] - gateway_claims[1]["iat"] == 3600
    assert mock.refused == []


def test_the_mock_refuses_an_assertion_from_another_key(cloud, workdir):
    """The mock's check can fail: a key it does not know the public half of is refused."""
    mock, accounts = cloud
    _, info = accounts["main"]
    other_dir = workdir / "other-key"
    other_dir.mkdir(exist_ok=True)
    forged = cloud_mock.CloudMock(url=mock.url)
    _, other = forged.make_service_account("gw-main", PROJECT, 3600, other_dir)
    # Same account name and token_uri, another private key.
    creds = service_account.Credentials.from_service_account_info(
        {**info, "private_key": other["private_key"]}, scopes=[cloud_mock.CLOUD_PLATFORM]
    )
    with pytest.raises(google.auth.exceptions.RefreshError):
        creds.refresh(google.auth.transport.requests.Request())
    assert mock.refused
    mock.refused.clear()


def test_gemini_passthrough_with_google_genai(cloud, vertex_gateway):
    mock, _ = cloud
    gai = genai_client(vertex_gateway)
    before = len(mock.seen)
    r = gai.models.generate_content(model="vx-gemini", contents="Say hello.")
    assert r.text == cloud_mock.GEMINI_TEXT
    assert r.usage_metadata.total_token_count == 8
    text = "".join(c.text or "" for c in gai.models.generate_content_stream(model="vx-gemini", contents="Say hello."))
    assert text == cloud_mock.GEMINI_TEXT
    seen = mock.seen[before:]
    assert [(s.path, s.query) for s in seen] == [
        (f"{GEMINI_PATH}:generateContent", ""),
        (f"{GEMINI_PATH}:streamGenerateContent", "alt=sse"),
    ]
    for s in seen:
        assert s.status == 200
        assert s.headers["authorization"].startswith("Bearer ya29.mock-")
        assert "x-goog-api-key" not in s.headers


def test_claude_passthrough_with_anthropic(cloud, vertex_gateway):
    mock, _ = cloud
    ant = anthropic_client(vertex_gateway)
    before = len(mock.seen)
    r = ant.messages.create(model="vx-claude", max_tokens=64, system="Be brief.",
                            messages=[{"role": "user", "content": "Say hello."}])
    assert r.content[0].text == cloud_mock.CLAUDE_TEXT
    assert (r.usage.input_tokens, r.usage.output_tokens) == (5, 3)
    with ant.messages.stream(model="vx-claude", max_tokens=64,
                             messages=[{"role": "user", "content": "Say hello."}]) as stream:
        assert "".join(stream.text_stream) == cloud_mock.CLAUDE_TEXT
        assert stream.get_final_message().stop_reason == "end_turn"
    seen = mock.seen[before:]
    assert [s.path for s in seen] == [f"{CLAUDE_PATH}:rawPredict", f"{CLAUDE_PATH}:streamRawPredict"]
    for s in seen:
        assert s.status == 200, s
        assert "model" not in s.body
        assert s.body["anthropic_version"] == cloud_mock.VERTEX_ANTHROPIC_VERSION
        assert s.body["max_tokens"] == 64
        assert "anthropic-version" not in s.headers
    assert seen[0].body["system"] == "Be brief."
    assert seen[1].body["stream"] is True


@pytest.mark.parametrize("model,text,path", [
    ("vx-gemini", cloud_mock.GEMINI_TEXT, GEMINI_PATH),
    ("vx-claude", cloud_mock.CLAUDE_TEXT, CLAUDE_PATH),
])
def test_openai_client_is_translated(cloud, vertex_gateway, model, text, path):
    mock, _ = cloud
    oai = openai_client(vertex_gateway)
    before = len(mock.seen)
    r = oai.chat.completions.create(model=model, messages=[{"role": "user", "content": "Say hello."}])
    assert r.choices[0].message.content == text
    chunks = oai.chat.completions.create(model=model, messages=[{"role": "user", "content": "Say hello."}],
                                         stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == text
    r = oai.responses.create(model=model, input="Say hello.")
    assert r.output_text == text
    seen = mock.seen[before:]
    assert len(seen) == 3 and all(s.path.startswith(path) and s.status == 200 for s in seen), seen


def test_google_genai_on_claude_is_translated(cloud, vertex_gateway):
    gai = genai_client(vertex_gateway)
    r = gai.models.generate_content(model="vx-claude", contents="Say hello.")
    assert r.text == cloud_mock.CLAUDE_TEXT


def test_short_tokens_are_refreshed_before_they_expire(cloud, vertex_gateway):
    """Tokens that live 4 s: requests spread over 6 s all pass, on live tokens (the mock
    never had to refuse one, so none was renewed late), with at least 2 exchanges and no
    request waiting on one."""
    mock, accounts = cloud
    email = accounts["short"][1]["client_email"]
    oai = openai_client(vertex_gateway)
    oai.chat.completions.create(model="vx-short", messages=[{"role": "user", "content": "hi"}])
    exchanges = len(mock.exchanges_of(email))
    started, slowest = time.monotonic(), 0.0
    while time.monotonic() - started < 6:
        t = time.monotonic()
        r = oai.chat.completions.create(model="vx-short", messages=[{"role": "user", "content": "hi"}])
        slowest = max(slowest, time.monotonic() - t)
        assert r.choices[0].message.content == cloud_mock.GEMINI_TEXT
        time.sleep(0.2)
    assert len(mock.exchanges_of(email)) - exchanges >= 2
    seen = mock.seen_of(email)
    assert seen and all(s.status == 200 for s in seen), [s.status for s in seen]
    assert len({s.token for s in seen}) >= 3
    # A debug build on a shared machine: generous, but far below a token's life.
    assert slowest < 0.5, slowest


def test_a_refused_token_is_refreshed_and_the_request_retried(cloud, vertex_gateway):
    mock, accounts = cloud
    email = accounts["revoked"][1]["client_email"]
    oai = openai_client(vertex_gateway)
    oai.chat.completions.create(model="vx-revoked", messages=[{"role": "user", "content": "hi"}])
    exchanges = len(mock.exchanges_of(email))
    mock.revoke(email)
    before = len(mock.seen)
    r = oai.chat.completions.create(model="vx-revoked", messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == cloud_mock.GEMINI_TEXT
    seen = mock.seen[before:]
    assert [s.status for s in seen] == [401, 200]
    assert seen[0].token != seen[1].token
    assert len(mock.exchanges_of(email)) == exchanges + 1
