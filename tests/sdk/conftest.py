"""Starts the stack the SDK suite talks to: the mock upstream (`trainer mock`) and the real
gateway binary, both on 127.0.0.1 ephemeral ports, once per session.

Binaries: $GATEWAY_BIN and $TRAINER_BIN, default target/debug/{gateway,trainer}
(tests/sdk/run.sh builds them).

The gateway's models (client-facing name -> provider, upstream model):

  gpt-mock        openai              the mock's chat/responses routes
  claude-mock     anthropic           the mock's messages route
  gpt-error-429   openai              mock-error-429 (the mock answers 429)
  claude-error-429, claude-error-529  anthropic, mock-error-429 / mock-error-529
  gpt5-mock       openai              gpt-5-mini (a reasoning model: the mock refuses a
                  temperature or top_p other than 1, as OpenAI does)

`compat-mock` (provider openai-compatible) lives in a second gateway, so a gateway that does
not know that provider fails only the tests that use it. Likewise the Gemini gateway, for
Google's SDK (`google-genai`) and for the other SDKs on a Gemini target:

  gem-mock        gemini              the mock's Gemini routes (`/v1beta/models/...`)
  gem-error-429   gemini              mock-error-429
  gpt-mock, claude-mock, compat-mock, gpt-error-429, claude-error-529   as above, for
                  the Gemini client translated
"""

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import anthropic
import openai
import pytest
from google import genai
from google.genai import types as genai_types

from oracle import Oracle

REPO = Path(__file__).resolve().parents[2]
GATEWAY_KEY = "sdk-suite-key"
# Input tokens the mock reports as cache reads; the tests check they survive translation.
CACHED_TOKENS = 5
START_TIMEOUT_S = 30
# The mock's stdout line and the gateway's first stderr line (`gateway X: listening on URL`).
LISTENING = re.compile(r"listening on (http://\S+)")


def binary(env: str, name: str) -> Path:
    path = Path(os.environ.get(env) or REPO / "target" / "debug" / name)
    if not path.is_file():
        pytest.exit(f"{path} is missing: build it (tests/sdk/run.sh does) or set ${env}", 2)
    return path


@dataclass
class Process:
    proc: subprocess.Popen
    log: Path
    url: str

    def stop(self) -> int:
        """SIGTERM, then the exit code (the gateway must exit 0 after a clean drain)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def start(argv: list, log: Path) -> Process:
    """Runs argv with stdout and stderr to `log` and waits for its `listening on URL`."""
    out = log.open("wb")
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    out.close()
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        found = LISTENING.search(log.read_text(errors="replace"))
        if found:
            return Process(proc, log, found.group(1).rstrip("/"))
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise RuntimeError(f"{argv[0]} did not start:\n{log.read_text(errors='replace')}")


def target(provider: str, upstream: str, model: str) -> str:
    return (
        f'[[models.targets]]\nprovider = "{provider}"\nbase_url = "{upstream}"\n'
        f'model = "{model}"\n'
    )


def gateway_config(models: dict, upstream: str) -> str:
    """A gateway config routing each model name to (provider, upstream model) on the mock."""
    text = (
        '[server]\nlisten = "127.0.0.1:0"\nshutdown_grace_ms = 5000\n\n'
        "[upstream]\nconnect_timeout_ms = 2000\nfirst_byte_timeout_ms = 10000\n"
        "idle_timeout_ms = 10000\n\n"
        '[observability]\naccess_log = "off"\nmetrics = false\n\n'
        f'[[keys]]\nname = "sdk"\nkey = "{GATEWAY_KEY}"\n\n'
    )
    for name, (provider, model) in models.items():
        text += f'[[models]]\nname = "{name}"\n' + target(provider, upstream, model) + "\n"
    return text


@pytest.fixture(scope="session")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("sdk-stack")


@pytest.fixture(scope="session")
def mock(workdir):
    trainer = binary("TRAINER_BIN", "trainer")
    proc = start(
        [str(trainer), "mock", "--listen", "127.0.0.1:0", "--cached-tokens", str(CACHED_TOKENS)],
        workdir / "mock.log",
    )
    yield proc.url
    proc.stop()


def run_gateway(workdir: Path, name: str, models: dict, mock_url: str):
    config = workdir / f"{name}.toml"
    config.write_text(gateway_config(models, mock_url))
    gateway = binary("GATEWAY_BIN", "gateway")
    proc = start(
        [str(gateway), "--config", str(config), "--workers", "2"], workdir / f"{name}.log"
    )
    try:
        yield proc.url
    finally:
        code = proc.stop()
        assert code == 0, f"{name} exited {code}:\n{proc.log.read_text(errors='replace')}"


@pytest.fixture(scope="session")
def gateway(workdir, mock):
    models = {
        "gpt-mock": ("openai", "gpt-upstream"),
        "claude-mock": ("anthropic", "claude-upstream"),
        "gpt-error-429": ("openai", "mock-error-429"),
        "claude-error-429": ("anthropic", "mock-error-429"),
        "claude-error-529": ("anthropic", "mock-error-529"),
        "gpt5-mock": ("openai", "gpt-5-mini"),
    }
    yield from run_gateway(workdir, "gateway", models, mock)


@pytest.fixture(scope="session")
def compat_gateway(workdir, mock):
    models = {"compat-mock": ("openai-compatible", "compat-upstream")}
    yield from run_gateway(workdir, "gateway-compat", models, mock)


@pytest.fixture(scope="session")
def gemini_gateway(workdir, mock):
    models = {
        "gem-mock": ("gemini", "gem-upstream"),
        "gem-error-429": ("gemini", "mock-error-429"),
        "gpt-error-429": ("openai", "mock-error-429"),
        "claude-error-529": ("anthropic", "mock-error-529"),
        "gpt-mock": ("openai", "gpt-upstream"),
        "claude-mock": ("anthropic", "claude-upstream"),
        "compat-mock": ("openai-compatible", "compat-upstream"),
    }
    yield from run_gateway(workdir, "gateway-gemini", models, mock)


# The official clients, unmodified but for base_url and key. No retries: an error must
# surface at once, and a retried request would hide a failure the suite should see.
def openai_client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=GATEWAY_KEY, max_retries=0, timeout=20)


def anthropic_client(url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, api_key=GATEWAY_KEY, max_retries=0, timeout=20)


def genai_client(url: str, key: str = GATEWAY_KEY, api_version: str | None = None) -> genai.Client:
    """Google's SDK on the gateway: base_url set (the SDK then asks `/v1/models/...`, its
    default version for a custom base URL, unless `api_version` says `v1beta`), the key
    in `x-goog-api-key`, no retries (the SDK's default without `retry_options`)."""
    options = genai_types.HttpOptions(base_url=url, timeout=20_000, api_version=api_version)
    return genai.Client(api_key=key, http_options=options)


@pytest.fixture(scope="session")
def gai(gemini_gateway) -> genai.Client:
    return genai_client(gemini_gateway)


@pytest.fixture(scope="session")
def oai(gateway) -> openai.OpenAI:
    return openai_client(gateway)


@pytest.fixture(scope="session")
def ant(gateway) -> anthropic.Anthropic:
    return anthropic_client(gateway)


@pytest.fixture(scope="session")
def oracle(mock) -> Oracle:
    return Oracle(mock)
