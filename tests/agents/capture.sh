#!/usr/bin/env bash
# Captures what the agent clients send, as gateway test fixtures: each client runs (as in
# run.sh, loopback only) on passthrough models whose upstream model is the client-facing
# name, so the mock (--record-dir) receives the client's own body. The bodies are scrubbed
# by tests/agents/scrub.py (ids, hashes, machine paths) into:
#
#   claude-code-claude.json              Claude Code's first request, --model claude-sonnet-4-5
#                                        (thinking enabled with a budget)
#   claude-code-opus.json                its first request on its default model, claude-opus-5-5
#                                        (adaptive thinking, output_config.effort)
#   claude-code-claude-tool-result.json  its request carrying a tool_result (a Read round trip)
#   claude-code-qwen.json                Claude Code's first request, --model qwen3-coder
#   codex.json                           Codex's first request (model gpt-5.5)
#   codex-tool-result.json               its request carrying a function_call_output
#   gemini-cli.json                      Gemini CLI's first request, -m gemini-3.8-flash
#                                        (streamGenerateContent; a Gemini body names no model)
#   gemini-cli-tool-result.json          its request carrying a functionResponse (read_file),
#                                        the mock's signed functionCall sent back
#   gemini-cli-router.json               its first request on its default model (no -m): the
#                                        router's classification, gemini-3.5-flash-lite, with
#                                        responseJsonSchema (slow: the mock's text is no JSON,
#                                        Gemini CLI retries it about 95 s, then falls back)
#   opencode.json                        opencode's agent request (tools), model qwen3-coder-oc
#                                        on its OpenAI-compatible provider (chat completions)
#   opencode-title.json                  its first request: the session title, no tools
#   opencode-claude.json                 its agent request on claude-sonnet-4-5-oc (Claude-named:
#                                        cache_control on messages)
#   opencode-tool-result.json            its request carrying a role: tool message (read)
#
# Usage: tests/agents/capture.sh [OUT_DIR]   (default gateway/tests/fixtures/agents)
#   AGENTS_DIR, GATEWAY_BIN, TRAINER_BIN as for run.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$repo/tests/agents/lib.sh"

find_clients
fresh_work CAPTURE_WORK "$repo/out/agents-capture"
dest=$(realpath -m "${1:-$repo/gateway/tests/fixtures/agents}")
mkdir -p "$dest"
enter_netns "$0" "$@"
work=$CAPTURE_WORK
trap stop_all EXIT

records=$work/mock-requests
mkdir -p "$records"
start_process "$work/mock.log" "$TRAINER_BIN" mock --listen 127.0.0.1:0 --record-dir "$records"
gateway_config "$STARTED_URL" "claude-sonnet-4-5 anthropic claude-sonnet-4-5" \
  "claude-opus-5-5 anthropic claude-opus-5-5" "qwen3-coder anthropic qwen3-coder" "gpt-5.5 openai gpt-5.5" \
  "gemini-3.8-flash gemini gemini-3.8-flash" "gemini-3.5-flash-lite gemini gemini-3.5-flash-lite" \
  "gemini-3.1-pro-preview gemini gemini-3.1-pro-preview" \
  "qwen3-coder-oc openai-compatible qwen3-coder-oc" \
  "claude-sonnet-4-5-oc openai-compatible claude-sonnet-4-5-oc" >"$work/gateway.toml"
start_process "$work/gateway.log" "$GATEWAY_BIN" --config "$work/gateway.toml"
gateway=$STARTED_URL

# capture CLIENT MODEL RUN PROMPT: runs the client; RUN names its directory; sets BODIES to
# the bodies the mock recorded meanwhile.
capture() {
  local client=$1 model=$2 run=$3 prompt=$4 before
  before=$(recordings "$records" | wc -l)
  mkdir -p "$work/$run/work"
  printf 'captured marker\n' >"$work/$run/work/marker.txt"
  if ! "run_$client" "$work/$run" "$gateway" "$model" "$prompt"; then
    echo "tests/agents/capture: $client failed:" >&2
    cat "$work/$run/stdout" "$work/$run/stderr" >&2
    exit 1
  fi
  mapfile -t BODIES < <(recordings "$records" | tail -n +$((before + 1)))
  [ "${#BODIES[@]}" -gt 0 ] || die "$run: the mock recorded nothing"
}

# The first body of BODIES that holds a tool result (Anthropic tool_result blocks, Responses
# function_call_output items, chat role: tool messages, Gemini functionResponse parts).
with_tool_result() {
  python3 - "${BODIES[@]}" <<'EOF'
import json, sys
for path in sys.argv[1:]:
    body = json.load(open(path, encoding="utf-8"))
    turns = body.get("messages") or body.get("input") or body.get("contents") or []
    for turn in turns if isinstance(turns, list) else []:
        blocks = turn.get("content") if isinstance(turn.get("content"), list) else []
        parts = turn.get("parts") if isinstance(turn.get("parts"), list) else []
        if turn.get("type") == "function_call_output" or turn.get("role") == "tool" or any(
                b.get("type") == "tool_result" for b in blocks) or any(
                "functionResponse" in p for p in parts):
            print(path)
            sys.exit(0)
sys.exit("no recorded body holds a tool result")
EOF
}

# The first body of BODIES that offers tools (opencode asks for a session title first).
with_tools() {
  python3 - "${BODIES[@]}" <<'EOF'
import json, sys
for path in sys.argv[1:]:
    if json.load(open(path, encoding="utf-8")).get("tools"):
        print(path)
        sys.exit(0)
sys.exit("no recorded body offers tools")
EOF
}

# scrub RUN BODY FIXTURE: the run's work dir becomes /work/project and its HOME /home/user,
# also where Claude Code writes the work dir as a name (every non-alphanumeric a dash).
scrub() {
  local dir=$work/$1 encoded
  encoded=${dir//[^a-zA-Z0-9]/-}-work
  python3 "$repo/tests/agents/scrub.py" "$2" "$dest/$3" \
    "$dir/work=/work/project" "$dir/home=/home/user" "$encoded=-work-project"
  echo "  $3 <- $1 ($(basename "$2"))"
}

echo "tests/agents/capture: into $dest"
capture claude claude-sonnet-4-5 claude-plain "Say hello. [mock: text]"
scrub claude-plain "${BODIES[0]}" claude-code-claude.json
capture claude claude-sonnet-4-5 claude-tool \
  "Read the marker. [mock: call Read {\"file_path\":\"$work/claude-tool/work/marker.txt\"}]"
scrub claude-tool "$(with_tool_result)" claude-code-claude-tool-result.json
capture claude claude-opus-5-5 claude-opus "Say hello. [mock: text]"
scrub claude-opus "${BODIES[0]}" claude-code-opus.json
capture claude qwen3-coder claude-qwen "Say hello. [mock: text]"
scrub claude-qwen "${BODIES[0]}" claude-code-qwen.json
capture codex gpt-5.5 codex-plain "Say hello. [mock: text]"
scrub codex-plain "${BODIES[0]}" codex.json
capture codex gpt-5.5 codex-tool 'Show the marker. [mock: call exec_command {"cmd":"cat marker.txt"}]'
scrub codex-tool "$(with_tool_result)" codex-tool-result.json
capture gemini gemini-3.8-flash gemini-plain "Say hello. [mock: text]"
scrub gemini-plain "${BODIES[0]}" gemini-cli.json
capture gemini gemini-3.8-flash gemini-tool \
  "Read the marker. [mock: call read_file {\"file_path\":\"$work/gemini-tool/work/marker.txt\"}]"
scrub gemini-tool "$(with_tool_result)" gemini-cli-tool-result.json
capture gemini - gemini-router "Say hello. [mock: text]"
scrub gemini-router "${BODIES[0]}" gemini-cli-router.json
capture opencode qwen3-coder-oc opencode-plain "Say hello. [mock: text]"
scrub opencode-plain "${BODIES[0]}" opencode-title.json
scrub opencode-plain "$(with_tools)" opencode.json
capture opencode claude-sonnet-4-5-oc opencode-claude "Say hello. [mock: text]"
scrub opencode-claude "$(with_tools)" opencode-claude.json
capture opencode qwen3-coder-oc opencode-tool \
  "Read the marker. [mock: call read {\"filePath\":\"$work/opencode-tool/work/marker.txt\"}]"
scrub opencode-tool "$(with_tool_result)" opencode-tool-result.json
