# shellcheck shell=bash
# Shared by tests/agents/run.sh and capture.sh (sourced): the pinned clients, the
# loopback-only network namespace, the mock and gateway processes, one run of each client.
#
# Callers set `repo` (the repository root) before sourcing.

AGENTS_DIR=${AGENTS_DIR:-$repo/.agents}
GATEWAY_KEY=agents-tier-key
# One client run, whole (both clients answer the mock in about a second).
CLIENT_TIMEOUT_S=${AGENTS_CLIENT_TIMEOUT_S:-120}
START_TIMEOUT_S=30

# Everything off that would call a machine other than the gateway: traffic that is not
# the model's (telemetry, error reports, feature flags, update checks), the autoupdater,
# the official plugin marketplace, the bug and feedback commands.
CLAUDE_OFFLINE_ENV=(
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
  DISABLE_AUTOUPDATER=1
  DISABLE_UPDATES=1
  DISABLE_TELEMETRY=1
  DISABLE_ERROR_REPORTING=1
  DISABLE_BUG_COMMAND=1
  DISABLE_FEEDBACK_COMMAND=1
  CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY=1
  CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL=1
)

die() {
  echo "tests/agents: $*" >&2
  exit 2
}

# Sets CLAUDE, CODEX, GEMINI and OPENCODE, or fails naming the install command: the clients
# at the versions tests/agents/clients.txt pins, in $AGENTS_DIR (scripts/test-deps.sh
# installs them, and opencode's plugin install, $AGENTS_DIR/opencode-config).
find_clients() {
  local spec name version have pins
  pins=$(grep -v '^#' "$repo/tests/agents/clients.txt" | tr '\n' ' ')
  while read -r spec; do
    case $spec in '' | '#'*) continue ;; esac
    name=${spec%@*}
    version=${spec##*@}
    have=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' \
      "$AGENTS_DIR/node_modules/$name/package.json" 2>/dev/null || true)
    if [ "$have" != "$version" ]; then
      echo "tests/agents: $name@$version is not in $AGENTS_DIR (found: ${have:-nothing}); run:" >&2
      echo "  npm install --prefix .agents --no-audit --no-fund $pins" >&2
      exit 2
    fi
  done <"$repo/tests/agents/clients.txt"
  CLAUDE=$AGENTS_DIR/node_modules/.bin/claude
  CODEX=$AGENTS_DIR/node_modules/.bin/codex
  GEMINI=$AGENTS_DIR/node_modules/.bin/gemini
  OPENCODE=$AGENTS_DIR/node_modules/.bin/opencode
  local bin
  for bin in "$CLAUDE" "$CODEX" "$GEMINI" "$OPENCODE"; do
    [ -x "$bin" ] || die "$bin is missing (run scripts/test-deps.sh)"
  done
  OPENCODE_SEED=$AGENTS_DIR/opencode-config
  [ -d "$OPENCODE_SEED/node_modules/@opencode-ai/plugin" ] ||
    die "$OPENCODE_SEED lacks opencode's @opencode-ai/plugin install (run scripts/test-deps.sh)"
}

# Exports GATEWAY_BIN and TRAINER_BIN: as given, else built here (debug), as tests/sdk does.
find_binaries() {
  if [ -z "${GATEWAY_BIN:-}" ] || [ -z "${TRAINER_BIN:-}" ]; then
    (cd "$repo" && cargo build -p gateway -p trainer --locked)
  fi
  GATEWAY_BIN=$(realpath "${GATEWAY_BIN:-$repo/target/debug/gateway}")
  TRAINER_BIN=$(realpath "${TRAINER_BIN:-$repo/target/debug/trainer}")
  export GATEWAY_BIN TRAINER_BIN
  if [ ! -x "$GATEWAY_BIN" ] || [ ! -x "$TRAINER_BIN" ]; then
    die "$GATEWAY_BIN or $TRAINER_BIN is missing"
  fi
}

# fresh_work VAR DIR: before the namespace is entered, finds the binaries and empties DIR
# for the script's files, exported as VAR for its run inside the namespace (where it is kept).
fresh_work() {
  [ "${AGENTS_NETNS:-}" != 1 ] || return 0
  find_binaries
  rm -rf "$2"
  mkdir -p "$2"
  export "$1=$2"
}

# Runs the calling script again ("$@": its path and arguments) in a fresh network namespace
# that has only `lo`, so any call off this machine fails: what passes there needs none.
# Inside it, brings `lo` up and returns. Without the privilege for a namespace, says loudly
# that nothing is proven and returns.
enter_netns() {
  if [ "${AGENTS_NETNS:-}" = 1 ]; then
    ip link set lo up
    local links
    links=$(ip -o link show | awk -F': ' '{print $2}' | tr '\n' ' ')
    [ "$links" = "lo " ] || die "the network namespace has links other than lo: $links"
    echo "tests/agents: in a network namespace with only lo (external calls fail)"
    return 0
  fi
  # As root, or else as the root of a new user namespace where unprivileged ones are allowed.
  local how
  for how in "--net" "--user --map-root-user --net"; do
    # shellcheck disable=SC2086 # $how is a list of flags
    if unshare $how true 2>/dev/null; then
      # shellcheck disable=SC2086
      AGENTS_NETNS=1 exec unshare $how -- "$BASH" "$@"
    fi
  done
  {
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    echo "tests/agents: WARNING: unshare --net is not permitted here: the clients run WITH"
    echo "  the network; that they make no external call is NOT proven by this run."
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
  } >&2
}

PIDS=()
stop_all() {
  local pid
  for pid in "${PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  PIDS=()
}

# start_process LOG CMD...: runs CMD, stdout and stderr to LOG, until it prints
# `listening on URL`; sets STARTED_URL. Fails (the log on stderr) if it exits or takes
# longer than START_TIMEOUT_S.
start_process() {
  local log=$1 pid url deadline=$((SECONDS + START_TIMEOUT_S))
  shift
  "$@" >"$log" 2>&1 </dev/null &
  pid=$!
  PIDS+=("$pid")
  while [ "$SECONDS" -le "$deadline" ]; do
    url=$(grep -om1 'listening on http://[^ ]*' "$log" || true)
    if [ -n "$url" ]; then
      STARTED_URL=${url#listening on }
      STARTED_URL=${STARTED_URL%/}
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  echo "tests/agents: $1 did not start:" >&2
  cat "$log" >&2
  return 1
}

# gateway_config MOCK_URL MODEL...: a gateway config on 127.0.0.1:0 with the access log on
# stdout; each MODEL is "NAME PROVIDER UPSTREAM_MODEL [TOML LINE...]", the TOML lines
# (e.g. `builtin_tools = "drop"`) set on the model.
gateway_config() {
  local mock=$1 spec name provider upstream
  shift
  cat <<EOF
[server]
listen = "127.0.0.1:0"
workers = 2
shutdown_grace_ms = 2000

[upstream]
connect_timeout_ms = 2000
first_byte_timeout_ms = 30000
idle_timeout_ms = 30000

[observability]
access_log = "stdout"
metrics = false

[[keys]]
name = "agents"
key = "$GATEWAY_KEY"
EOF
  for spec in "$@"; do
    read -r name provider upstream rest <<<"$spec"
    printf '\n[[models]]\nname = "%s"\n' "$name"
    [ -z "${rest:-}" ] || printf '%s\n' "$rest"
    printf '[[models.targets]]\nprovider = "%s"\nbase_url = "%s"\nmodel = "%s"\n' \
      "$provider" "$mock" "$upstream"
  done
}

# The environment of a client run, with HOME: nothing inherited but PATH (node runs Codex's
# launcher), so no key or setting of the machine running the tier leaks in.
CLIENT_ENV=(PATH="$PATH" LANG=C.UTF-8 TERM=dumb)

# run_claude DIR GATEWAY_URL MODEL PROMPT: `claude -p PROMPT --model MODEL` in DIR/work with
# a fresh HOME (DIR/home); stdout and stderr to DIR/stdout, DIR/stderr. Returns its status.
# DIR/work is a git repository of its own: Claude Code quotes the enclosing repository's
# status and recent commits in its prompt, which must not be this one's.
run_claude() {
  local dir=$1 gateway=$2 model=$3 prompt=$4
  mkdir -p "$dir/home" "$dir/work"
  git -C "$dir/work" init -q
  (cd "$dir/work" && env -i "${CLIENT_ENV[@]}" HOME="$dir/home" \
    ANTHROPIC_BASE_URL="$gateway" ANTHROPIC_API_KEY="$GATEWAY_KEY" "${CLAUDE_OFFLINE_ENV[@]}" \
    timeout "$CLIENT_TIMEOUT_S" "$CLAUDE" -p "$prompt" --model "$model" \
    >"$dir/stdout" 2>"$dir/stderr" </dev/null)
}

# The Codex config of a run: the gateway as the Responses provider, and every call to
# another machine off (update check, analytics, feedback, OpenTelemetry export, plugins:
# with plugins on, Codex syncs the curated plugin marketplace from api.github.com).
codex_config() {
  local gateway=$1 model=$2
  cat <<EOF
model = "$model"
model_provider = "gw"
check_for_update_on_startup = false

[model_providers.gw]
name = "gateway"
base_url = "$gateway/v1"
env_key = "GW_KEY"
wire_api = "responses"

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
trace_exporter = "none"
metrics_exporter = "none"

[features]
plugins = false
EOF
}

# run_codex DIR GATEWAY_URL MODEL PROMPT: `codex exec PROMPT` in DIR/work (a git repository,
# as Codex expects) with a fresh HOME holding only .codex/config.toml; stdout (the final
# message) and stderr (the transcript) to DIR/stdout, DIR/stderr. Returns its status.
run_codex() {
  local dir=$1 gateway=$2 model=$3 prompt=$4
  mkdir -p "$dir/home/.codex" "$dir/work"
  codex_config "$gateway" "$model" >"$dir/home/.codex/config.toml"
  git -C "$dir/work" init -q
  (cd "$dir/work" && env -i "${CLIENT_ENV[@]}" HOME="$dir/home" GW_KEY="$GATEWAY_KEY" \
    timeout "$CLIENT_TIMEOUT_S" "$CODEX" exec "$prompt" \
    >"$dir/stdout" 2>"$dir/stderr" </dev/null)
}

# Files in the mock's record dir (NNN.json), oldest first.
recordings() {
  find "$1" -maxdepth 1 -name '[0-9]*.json' | sort
}

# Gemini CLI's settings (~/.gemini/settings.json): the Gemini API key auth (what its first-run
# dialog stores for "Use Gemini API key"; without a choice `-p` exits 41, and the "gateway"
# auth it derives from GOOGLE_GEMINI_BASE_URL is refused by `-p` in 0.61), and every call to
# another machine off: usage statistics (Clearcut, play.googleapis.com, on by default),
# telemetry, the auto-update and its notification.
gemini_settings() {
  cat <<EOF
{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false}
}
EOF
}

# run_gemini DIR GATEWAY_URL MODEL PROMPT: `gemini -p PROMPT -m MODEL` in DIR/work (a git
# repository) with a fresh HOME holding only .gemini/settings.json, the gateway as
# GOOGLE_GEMINI_BASE_URL (Gemini CLI then asks POST /v1beta/models/MODEL:streamGenerateContent
# ?alt=sse, the key in x-goog-api-key). MODEL "-": its default model (no -m), which has its
# router model pick the model first. GEMINI_CLI_TRUST_WORKSPACE: the documented answer to
# its folder-trust check in headless runs (else exit 55). stdout (the final answer) and
# stderr to DIR/stdout, DIR/stderr; TMPDIR DIR/tmp (it writes its error reports there).
# Returns its status.
run_gemini() {
  local dir=$1 gateway=$2 model=$3 prompt=$4 args=()
  mkdir -p "$dir/home/.gemini" "$dir/work" "$dir/tmp"
  gemini_settings >"$dir/home/.gemini/settings.json"
  git -C "$dir/work" init -q
  [ "$model" = - ] || args=(-m "$model")
  (cd "$dir/work" && env -i "${CLIENT_ENV[@]}" HOME="$dir/home" \
    GEMINI_API_KEY="$GATEWAY_KEY" GOOGLE_GEMINI_BASE_URL="$gateway" \
    GEMINI_CLI_TRUST_WORKSPACE=true TMPDIR="$dir/tmp" \
    timeout "$CLIENT_TIMEOUT_S" "$GEMINI" -p "$prompt" "${args[@]}" \
    >"$dir/stdout" 2>"$dir/stderr" </dev/null)
}

# opencode's config (~/.config/opencode/opencode.json): the gateway as a custom provider
# `gw` on the AI SDK's OpenAI-compatible package (bundled in the opencode binary: nothing is
# downloaded), chat completions at GATEWAY/v1, the key from GW_KEY; autoupdate and sharing
# off.
opencode_config() {
  local gateway=$1 model=$2
  cat <<EOF
{
  "\$schema": "https://opencode.ai/config.json",
  "autoupdate": false,
  "share": "disabled",
  "model": "gw/$model",
  "provider": {
    "gw": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "gateway",
      "options": {"baseURL": "$gateway/v1", "apiKey": "{env:GW_KEY}"},
      "models": {"$model": {"name": "$model"}}
    }
  }
}
EOF
}

# run_opencode DIR GATEWAY_URL MODEL PROMPT: `opencode run` in DIR/work (a git repository)
# with a fresh HOME holding ~/.config/opencode/opencode.json, the prompt on stdin (`opencode
# run` wraps an argument holding spaces in quotes and escapes its double quotes, which would
# break a directive's JSON); stdout (the answer) and stderr to DIR/stdout, DIR/stderr.
# Returns its status. Every call to another machine off: OPENCODE_DISABLE_MODELS_FETCH (its
# model catalog, models.opencode.ai), and the config dir seeded with what opencode's own
# background install of @opencode-ai/plugin (from the npm registry, at every start) leaves
# there, so that it finds the install done: $OPENCODE_SEED (scripts/test-deps.sh), its
# package.json and lock copied, node_modules linked.
run_opencode() {
  local dir=$1 gateway=$2 model=$3 prompt=$4 config
  config=$dir/home/.config/opencode
  mkdir -p "$config" "$dir/work"
  opencode_config "$gateway" "$model" >"$config/opencode.json"
  cp "$OPENCODE_SEED/package.json" "$OPENCODE_SEED/package-lock.json" "$config/"
  ln -s "$OPENCODE_SEED/node_modules" "$config/node_modules"
  git -C "$dir/work" init -q
  (cd "$dir/work" && env -i "${CLIENT_ENV[@]}" HOME="$dir/home" GW_KEY="$GATEWAY_KEY" \
    OPENCODE_DISABLE_MODELS_FETCH=1 \
    timeout "$CLIENT_TIMEOUT_S" "$OPENCODE" run \
    >"$dir/stdout" 2>"$dir/stderr" <<<"$prompt")
}

# run_readme DIR BLOCK INDEX MODEL PROMPT: the README's recipe INDEX (of BLOCK, the README's
# agents block) on MODEL, as a fresh user runs it: in DIR/work (a git repository of its own,
# as a user's project is) with a fresh HOME (DIR/home) holding only the files the recipe
# shows, its command run verbatim by bash, the prompt its only change (recipes.py), the
# clients on PATH as their installs name them. Nothing else of the tier's runs is added:
# no setting, no variable but HOME, PATH, LANG, TERM and TMPDIR (DIR/tmp). Output to
# DIR/stdout, DIR/stderr, the command to DIR/command; returns its status.
run_readme() {
  local dir=$1 block=$2 index=$3 model=$4 prompt=$5 command
  mkdir -p "$dir/home" "$dir/work" "$dir/tmp"
  command=$(python3 "$repo/tests/agents/recipes.py" setup "$block" "$repo/gateway.example.toml" \
    "$index" "$model" "$prompt" "$dir/home") || return 2
  printf '%s\n' "$command" >"$dir/command"
  git -C "$dir/work" init -q
  (cd "$dir/work" && env -i PATH="$AGENTS_DIR/node_modules/.bin:$PATH" LANG=C.UTF-8 TERM=dumb \
    HOME="$dir/home" TMPDIR="$dir/tmp" timeout "$CLIENT_TIMEOUT_S" bash -c "$command" \
    >"$dir/stdout" 2>"$dir/stderr" </dev/null)
}
