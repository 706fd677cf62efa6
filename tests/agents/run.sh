#!/usr/bin/env bash
# The agents tier: the most used agent CLIs, Claude Code, Codex, Gemini CLI and opencode
# (pinned in tests/agents/clients.txt), unmodified and in their default setup, run
# non-interactively through the real gateway against the mock upstream, in a network
# namespace that has only `lo`. Each model's client-facing name routes to a target of
# another provider (translated) or of the client's own (the passthrough control). The prompts carry the mock's directives
# (trainer/src/mock/mod.rs, "Answers on demand"): a plain answer, a tool round trip, and
# for Codex on translated models a call of its freeform `apply_patch` tool. The `readme-*`
# cases run README.md's agent recipes (its block marked `readme-block: agents`) verbatim,
# the prompt their only change, against a gateway on the recipes' 127.0.0.1:8080 with
# gateway.example.toml's models and keys (only its upstream base URLs moved to the mock).
# Cases and what each checks: tests/agents/README.md.
#
# Usage: tests/agents/run.sh [CASE PATTERN...]   (shell patterns on case names, e.g.
#        '*passthrough*'; default: every case)
#   AGENTS_DIR   the clients' npm prefix (default .agents; scripts/test-deps.sh installs them there)
#   GATEWAY_BIN, TRAINER_BIN   prebuilt binaries; default: built here (debug) into target/
#   AGENTS_OUT   logs, one directory per case (default out/agents; emptied first)
#   AGENTS_CLIENT_TIMEOUT_S   the limit of one client run (default 120)
#   AGENTS_README   the README whose recipes the readme-* cases run (default README.md: a
#                   changed copy proves the cases fail on a broken recipe)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$repo/tests/agents/lib.sh"

find_clients
fresh_work AGENTS_OUT "${AGENTS_OUT:-$repo/out/agents}"
enter_netns "$0" "$@"
out=$AGENTS_OUT
trap stop_all EXIT
# The mock's answer to tool results starts with this (trainer/src/mock/conversation.rs).
TOOL_RESULT_PREFIX="Tool said: "

# The gateway's models: NAME PROVIDER [TOML LINE]; the target's upstream model is up-NAME.
# Codex sends a hosted `web_search` tool, which a translated target cannot run: the
# translated Codex models drop built-in tools.
DROP='builtin_tools = "drop"'
CONTROL_MODELS=(
  "claude-passthrough anthropic"
  "codex-passthrough openai"
  "gpt-5.5-passthrough openai"
  "qwen3-coder-oc openai-compatible"
)
TRANSLATED_MODELS=(
  "claude-sonnet-4-5 openai"
  "qwen3-coder openai-compatible"
  "codex-anthropic anthropic $DROP"
  "codex-compat openai-compatible $DROP"
  "gpt-5.5-anthropic anthropic $DROP"
  "gpt-5.5-compat openai-compatible $DROP"
  "gemini-3-openai openai"
  "gemini-3-anthropic anthropic"
  # The README's "Gemini CLI on Claude": a Claude 4.5 upstream id, which the mock holds to
  # Anthropic's temperature-or-top_p rule (Gemini CLI sends both on every request).
  "claude-sonnet-4-5-gcli anthropic"
  "gemini-3-compat openai-compatible"
  "claude-sonnet-4-5-oc anthropic"
)
# Models whose target is a Gemini one, on a gateway of their own (the newest provider): Gemini
# CLI's passthrough control and opencode translated to generateContent. Gemini CLI's default
# models (run with no -m, the case `gemini default text`: its router model classifies the
# prompt with a JSON-schema request, then the chosen model answers) on openai targets.
GEMINI_MODELS=(
  "gemini-3-passthrough gemini"
  "gemini-3-oc gemini"
)
GEMINI_DEFAULT_MODELS=(gemini-3.5-flash-lite gemini-3.8-flash gemini-3.1-pro-preview)
for name in "${GEMINI_DEFAULT_MODELS[@]}"; do
  TRANSLATED_MODELS+=("$name openai")
done
# CLIENT MODEL KIND: text (a plain answer), tool (a tool round trip), patch (apply_patch).
# Codex picks its tools by model name: a name it does not know (codex-*) gets fallback
# metadata and no apply_patch; one that starts with a known model's (gpt-5.5-*) gets that
# model's tools, apply_patch (a freeform `custom` tool) and tool_search among them.
CASES=(
  "claude claude-sonnet-4-5 text"
  "claude claude-sonnet-4-5 tool"
  "claude qwen3-coder text"
  "claude qwen3-coder tool"
  "claude claude-passthrough text"
  "claude claude-passthrough tool"
  "codex codex-anthropic text"
  "codex codex-anthropic tool"
  "codex codex-compat text"
  "codex codex-compat tool"
  "codex codex-passthrough text"
  "codex codex-passthrough tool"
  "codex gpt-5.5-anthropic text"
  "codex gpt-5.5-anthropic tool"
  "codex gpt-5.5-anthropic patch"
  "codex gpt-5.5-compat text"
  "codex gpt-5.5-compat tool"
  "codex gpt-5.5-compat patch"
  "codex gpt-5.5-passthrough text"
  "codex gpt-5.5-passthrough tool"
  "gemini gemini-3-passthrough text"
  "gemini gemini-3-passthrough tool"
  "gemini gemini-3-openai text"
  "gemini gemini-3-openai tool"
  "gemini gemini-3-anthropic text"
  "gemini gemini-3-anthropic tool"
  "gemini gemini-3-compat text"
  "gemini gemini-3-compat tool"
  "gemini claude-sonnet-4-5-gcli text"
  "gemini claude-sonnet-4-5-gcli tool"
  # Its default setup (no -m): the router's JSON-schema request (the mock answers a JSON
  # instance of the schema), then the model it picked.
  "gemini default text"
  "opencode qwen3-coder-oc text"
  "opencode qwen3-coder-oc tool"
  "opencode claude-sonnet-4-5-oc text"
  "opencode claude-sonnet-4-5-oc tool"
  "opencode gemini-3-oc text"
  "opencode gemini-3-oc tool"
)
# README.md's recipes, as the reader runs them: CLIENT `readme/INDEX/CLIENT` (the recipe's
# place in the block), on each model the recipe names (recipes.py), text and tool.
README=${AGENTS_README:-$repo/README.md}
"$repo/scripts/readme-block.sh" agents "$README" >"$out/readme-agents.sh" ||
  die "$README has no agents block"
readme_cases=$(python3 "$repo/tests/agents/recipes.py" cases "$out/readme-agents.sh" \
  "$repo/gateway.example.toml") || die "$README's agent recipes cannot be run as written"
mapfile -t README_CASES <<<"$readme_cases"
declare -A readme_upstream
for spec in "${README_CASES[@]}"; do
  read -r index client model upstream <<<"$spec"
  readme_upstream[$model]=$upstream
  CASES+=("readme/$index/$client $model text" "readme/$index/$client $model tool")
done

selected() {
  local pattern
  [ "$#" -gt 1 ] || return 0
  for pattern in "${@:2}"; do
    # shellcheck disable=SC2053 # a pattern by intent
    [[ $1 == $pattern ]] && return 0
  done
  return 1
}

model_specs() {
  local spec name provider rest
  for spec in "$@"; do
    read -r name provider rest <<<"$spec"
    echo "$name $provider up-$name $rest"
  done
}

t_start=$EPOCHREALTIME
echo "tests/agents: clients:"
mkdir -p "$out/versions"
env -i "${CLIENT_ENV[@]}" HOME="$out/versions" "$CLAUDE" --version
env -i "${CLIENT_ENV[@]}" HOME="$out/versions" "$CODEX" --version
echo "gemini $(env -i "${CLIENT_ENV[@]}" HOME="$out/versions" "$GEMINI" --version)"
echo "opencode $(env -i "${CLIENT_ENV[@]}" HOME="$out/versions" OPENCODE_DISABLE_MODELS_FETCH=1 \
  "$OPENCODE" --version)"

records=$out/mock-requests
mkdir -p "$records"
start_process "$out/mock.log" "$TRAINER_BIN" mock --listen 127.0.0.1:0 --record-dir "$records"
mock=$STARTED_URL
# The oracle: the mock's plain text answer, asked of the mock itself.
expected_text=$(python3 - "$mock" <<'EOF'
import json, sys, urllib.request
req = urllib.request.Request(sys.argv[1] + "/v1/chat/completions", data=b'{"model":"oracle"}',
                             headers={"content-type": "application/json"})
print(json.load(urllib.request.urlopen(req, timeout=10))["choices"][0]["message"]["content"])
EOF
)

# Three gateways, so that one that refuses its config (a key or provider it does not know
# yet) fails only its own cases.
declare -A gateway_url gateway_log gateway_of upstream_of
for side in control translated gemini; do
  case $side in
    control) specs=("${CONTROL_MODELS[@]}") ;;
    translated) specs=("${TRANSLATED_MODELS[@]}") ;;
    gemini) specs=("${GEMINI_MODELS[@]}") ;;
  esac
  mapfile -t lines < <(model_specs "${specs[@]}")
  gateway_config "$mock" "${lines[@]}" >"$out/gateway-$side.toml"
  for line in "${lines[@]}"; do
    read -r name provider upstream _ <<<"$line"
    gateway_of[$name]=$side
    # A Gemini body names no model (the path does): traffic.py checks its dialect instead.
    upstream_of[$name]=$upstream
    [ "$provider" != gemini ] || upstream_of[$name]=gemini:$upstream
  done
done
# Gemini CLI's default setup: any of its default models (router, then the chosen one).
gateway_of[default]=translated
upstream_of[default]=$(printf 'up-%s,' "${GEMINI_DEFAULT_MODELS[@]}")
upstream_of[default]=${upstream_of[default]%,}
# The README's gateway: gateway.example.toml, its upstreams the mock (and their keys, which
# the mock does not check, set), on the 127.0.0.1:8080 the recipes name: free in the
# namespace, which has nothing else.
python3 "$repo/tests/agents/recipes.py" gateway-config "$repo/gateway.example.toml" "$mock" \
  >"$out/gateway-readme.toml"
for model in "${!readme_upstream[@]}"; do
  gateway_of[readme:$model]=readme
  upstream_of[readme:$model]=${readme_upstream[$model]}
done
gateway_env=(OPENAI_API_KEY=mock-openai-key ANTHROPIC_API_KEY=mock-anthropic-key
  GEMINI_API_KEY=mock-gemini-key GATEWAY_KEY_TEAM_B=gw-team-b-mock-key)
for side in control translated gemini readme; do
  gateway_log[$side]=$out/gateway-$side.log
  if start_process "${gateway_log[$side]}" env "${gateway_env[@]}" "$GATEWAY_BIN" \
    --config "$out/gateway-$side.toml"; then
    gateway_url[$side]=$STARTED_URL
  else
    gateway_url[$side]=
  fi
done

# Seconds since T0 (an $EPOCHREALTIME), to a tenth.
elapsed() {
  local us=$((${EPOCHREALTIME/./} - ${1/./}))
  printf '%d.%d' $((us / 1000000)) $((us / 100000 % 10))
}

access_count() { grep -c '^{"ts_ms"' "$1" || true; }

results=()
failed=0
for case in "${CASES[@]}"; do
  read -r client model kind <<<"$case"
  # A README recipe's case: its recipe's index, and the client it runs.
  recipe=
  key=$model
  if [[ $client == readme/* ]]; then
    IFS=/ read -r _ recipe client <<<"$client"
    key=readme:$model
  fi
  name=${recipe:+readme-}$client-$model-$kind
  selected "$name" "$@" || continue
  dir=$out/$name
  mkdir -p "$dir/work"
  side=${gateway_of[$key]}
  gateway=${gateway_url[$side]}
  log=${gateway_log[$side]}
  # Found in the answer only if the tool really ran: the prompt names the file, never this.
  marker="agents-marker-$(printf %s "$name" | cksum | cut -d' ' -f1)"
  printf '%s\n' "$marker" >"$dir/work/marker.txt"
  case $client-$kind in
    *-text) prompt="Say hello. [mock: text]" ;;
    claude-tool)
      prompt="Read the marker. [mock: call Read {\"file_path\":\"$dir/work/marker.txt\"}]" ;;
    codex-tool) prompt='Show the marker. [mock: call exec_command {"cmd":"cat marker.txt"}]' ;;
    # read_file and read need no permission in a headless run.
    gemini-tool)
      prompt="Read the marker. [mock: call read_file {\"file_path\":\"$dir/work/marker.txt\"}]" ;;
    opencode-tool)
      prompt="Read the marker. [mock: call read {\"filePath\":\"$dir/work/marker.txt\"}]" ;;
    # Codex's default read-only sandbox refuses the patch, and says so in the tool's output:
    # the refusal proves Codex's apply_patch handler got the call (a custom_tool_call).
    codex-patch)
      patch='*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n'
      prompt="Add hello.txt. [mock: call apply_patch {\"input\":\"$patch\"}]" ;;
  esac
  echo "=== $name"
  if [ -z "$gateway" ]; then
    reason="gateway-$side did not start: $(head -3 "$log" | tr '\n' ' ')"
    results+=("FAIL $name: $reason")
    failed=$((failed + 1))
    echo "FAIL: $reason"
    continue
  fi
  log_skip=$(access_count "$log")
  record_skip=$(recordings "$records" | wc -l)
  t0=$EPOCHREALTIME
  rc=0
  run_model=$model
  [ "$model" != default ] || run_model=-
  if [ -n "$recipe" ]; then
    run_readme "$dir" "$out/readme-agents.sh" "$recipe" "$model" "$prompt" || rc=$?
  else
    "run_$client" "$dir" "$gateway" "$run_model" "$prompt" || rc=$?
  fi
  seconds=$(elapsed "$t0")
  answer=$(cat "$dir/stdout")
  problems=()
  if [ "$rc" -eq 124 ]; then
    problems+=("$client timed out after ${CLIENT_TIMEOUT_S}s")
  elif [ "$rc" -ne 0 ]; then
    problems+=("$client exited $rc")
  fi
  case $kind in
    text) want=$expected_text ;;
    tool) want="$TOOL_RESULT_PREFIX*$marker" ;;
    patch) want="${TOOL_RESULT_PREFIX}patch rejected: writing is blocked by read-only sandbox" ;;
  esac
  # shellcheck disable=SC2053 # $want is a pattern: the tool case's text around the marker
  [[ $answer == *$want* ]] || problems+=("the final answer does not match *$want*")
  case $client in
    claude) route=/v1/messages ;;
    codex) route=/v1/responses ;;
    # The access log names Gemini's route by its template.
    gemini) route='/v1beta/models/{model}:generateContent' ;;
    opencode) route=/v1/chat/completions ;;
  esac
  traffic=$(python3 "$repo/tests/agents/traffic.py" "$log" "$log_skip" "$records" \
    "$record_skip" "$route" "${upstream_of[$key]}") ||
    problems+=("traffic: $(grep '^problem' <<<"$traffic" | tr '\n' ' ')")
  requests=$(head -1 <<<"$traffic")
  echo "$requests"
  if [ "${#problems[@]}" -eq 0 ]; then
    results+=("PASS $name (${seconds}s; $requests)")
    echo "PASS (${seconds}s)"
    continue
  fi
  failed=$((failed + 1))
  results+=("FAIL $name (${seconds}s): ${problems[*]}")
  printf 'FAIL: %s\n' "${problems[@]}"
  echo "--- $client stdout ($dir/stdout):"
  tail -n 40 "$dir/stdout"
  echo "--- $client stderr ($dir/stderr):"
  tail -n 40 "$dir/stderr"
  echo "--- gateway-$side log, this case ($log):"
  tail -n +$((log_skip + 1)) <(grep '^{"ts_ms"' "$log" || true) | tail -n 20
  grep -v '^{"ts_ms"' "$log" | tail -n 5
done

stop_all
echo "=== agents tier: ${#results[@]} cases in $(elapsed "$t_start")s, logs in $out"
printf '  %s\n' "${results[@]}"
[ "${#results[@]}" -gt 0 ] || die "no case matches: $*"
[ "$failed" -eq 0 ] || {
  echo "tests/agents: $failed of ${#results[@]} cases failed" >&2
  exit 1
}
