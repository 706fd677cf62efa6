#!/usr/bin/env bash
# The SDK suite: the official `openai`, `anthropic` and `google-genai` Python SDKs
# (tests/sdk/requirements.txt) against the real gateway and the mock upstream, each SDK on its
# own provider (passthrough) and on the others (translated), streaming and not, tools and
# errors included.
#
# Usage: tests/sdk/run.sh [PYTEST ARGS...]
#   SDK_PYTHON   a python with the requirements installed (default: .venv-sdk/bin/python,
#                created by scripts/test-deps.sh: python3 -m venv .venv-sdk &&
#                .venv-sdk/bin/pip install -r tests/sdk/requirements.txt)
#   GATEWAY_BIN, TRAINER_BIN   prebuilt binaries; default: built here (debug) into target/
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"

python=${SDK_PYTHON:-$repo/.venv-sdk/bin/python}
if ! "$python" -c 'import openai, anthropic, google.genai, pytest' 2>/dev/null; then
  echo "tests/sdk: $python lacks the SDKs; run:" >&2
  echo "  python3 -m venv .venv-sdk && .venv-sdk/bin/pip install -r tests/sdk/requirements.txt" >&2
  exit 2
fi
if [ -z "${GATEWAY_BIN:-}" ] || [ -z "${TRAINER_BIN:-}" ]; then
  cargo build -p gateway -p trainer --locked
  export GATEWAY_BIN=${GATEWAY_BIN:-$repo/target/debug/gateway}
  export TRAINER_BIN=${TRAINER_BIN:-$repo/target/debug/trainer}
fi
"$python" -c 'import openai, anthropic; from google import genai; print(f"tests/sdk: openai {openai.__version__}, anthropic {anthropic.__version__}, google-genai {genai.__version__}")'
# -p no:cacheprovider: nothing written into the repository.
exec "$python" -m pytest -p no:cacheprovider -q -ra tests/sdk "$@"
