#!/usr/bin/env bash
# The chain on Nix's remote builders (on demand: scripts/test.sh remote-builders; a whole chain
# built again, 20-40 minutes). An ssh server on loopback (Debian's openssh-server, a throwaway
# key, started and stopped here) fronts Nix stores standing for other machines (ssh-ng://, each
# store a chroot store under /var/tmp); a fresh client store holding only the toolchain builds
# with --max-jobs 0, so nothing can build locally:
#   1. one builder: every stage (the instrumented build, each shape's training part, the merges,
#      the PGO and BOLT stages, the proof check) builds there and is copied back; the builds
#      before training are byte for byte tier c's (local) ones; the profiles are compared (if
#      training here is not deterministic, by how much they differ), and the stages after them
#      are tier c's if the profiles are, else rebuilt locally from the builder's inputs
#      (`--check`): byte-identical given the same profile;
#   2. two builders: the PGO training parts split between them, merged on one; both trained.
# Reuses tier c's store paths for the comparison: run tier c first.
#
# Usage: nix/tests/remote-builders.sh [TIER_C_OUTDIR]   (default ./out/tier-c)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tier_c=${1:-$repo/out/tier-c}
t0=$(date +%s)
fail() {
  echo "remote builders: FAIL: $*" >&2
  exit 1
}
[ "$(id -u)" = 0 ] || fail "run as root (no daemon: the stores are chroot stores)"
. "$repo/scripts/chain-host-env.sh"
[ -e "$tier_c/result-gateway-pgo-bolt" ] || fail "run tier c first (no $tier_c/result-gateway-pgo-bolt)"
if [ ! -x /usr/sbin/sshd ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server >/dev/null
fi
work=$(mktemp -d /var/tmp/remote-builders.XXXXXX)
sshd_pid=
cleanup() {
  [ -z "$sshd_pid" ] || kill "$sshd_pid" 2>/dev/null || true
  # REMOTE_BUILDERS_KEEP=1 keeps the stores and logs to look into.
  [ "${REMOTE_BUILDERS_KEEP:-}" = 1 ] && echo "kept $work" && return
  chmod -R u+w "$work" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
nixc=(--extra-experimental-features nix-command)
stages="trainer gateway-instrumented gateway-profile gateway-pgo-build gateway-pgo gateway-bolt-profile gateway-pgo-bolt"

echo "== sshd on loopback, a throwaway key"
mkdir -p "$work/ssh" /run/sshd
ssh-keygen -q -t ed25519 -N '' -C remote-builders-host -f "$work/ssh/host"
ssh-keygen -q -t ed25519 -N '' -C remote-builders-client -f "$work/ssh/client"
cp "$work/ssh/client.pub" "$work/ssh/authorized_keys"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/ssh/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $work/ssh/host
PidFile $work/ssh/sshd.pid
AuthorizedKeysFile $work/ssh/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
EOF
# -D: in the foreground, so its pid is ours to stop.
/usr/sbin/sshd -D -f "$work/ssh/sshd_config" -E "$work/ssh/sshd.log" &
sshd_pid=$!
for _ in $(seq 50); do [ -s "$work/ssh/sshd.pid" ] && break; sleep 0.1; done
[ -s "$work/ssh/sshd.pid" ] || { cat "$work/ssh/sshd.log"; fail "sshd did not start"; }
# The builders' Nix: their own nix.conf (the remote side reads NIX_CONF_DIR, as a real machine
# reads its /etc/nix), with the sandbox and the host tools that tier c's builds see.
mkdir -p "$work/conf" "$work/bin"
cat >"$work/conf/nix.conf" <<EOF
build-users-group =
sandbox = true
sandbox-paths = $nix_sandbox_paths
substituters =
experimental-features = nix-command
EOF
cat >"$work/bin/nix-daemon" <<EOF
#!/bin/sh
NIX_CONF_DIR=$work/conf exec nix-daemon "\$@"
EOF
chmod +x "$work/bin/nix-daemon"
export NIX_SSHOPTS="-p $port"
host_key=$(base64 -w0 <"$work/ssh/host.pub")
builder() { # STORE_DIR MAX_JOBS: a builders line for a store standing for another machine
  echo "ssh-ng://root@127.0.0.1?remote-store=local%3Froot%3D$1&remote-program=$work/bin/nix-daemon x86_64-linux $work/ssh/client $2 1 - - $host_key"
}
ssh -p "$port" -i "$work/ssh/client" -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no \
  root@127.0.0.1 true 2>/dev/null || { cat "$work/ssh/sshd.log"; fail "ssh to 127.0.0.1:$port refused"; }
echo "  ok: 127.0.0.1:$port"

fresh_client() { # DIR: a client store holding only the toolchain (a real machine substitutes it)
  nix copy "${nixc[@]}" --to "local?root=$1" "$rust_toolchain" 2>/dev/null
}
remote_build() { # CLIENT BUILDERS LOG ATTRS...: build on the builders only, nothing locally
  local client=$1 builders=$2 log=$3
  shift 3
  local args=()
  for a in "$@"; do args+=(-A "$a"); done
  local try
  for try in 1 2; do
    if nix-build "$repo/nix/host/chain.nix" "${host_nix_args[@]}" --store "local?root=$client" \
      --max-jobs 0 --builders "$builders" "${args[@]}" --no-out-link >"$log.out" 2>>"$log"; then
      return 0
    fi
    # Once in four runs here a builder's first build was SIGKILLed within a second of starting,
    # with an empty log (cause not found). Retried once, saying so: the built paths stay.
    if [ "$try" = 2 ] || ! grep -q "failed due to signal 9 (Killed)" "$log"; then break; fi
    echo "  note: a build on the builder was killed (signal 9): retrying once"
    grep -m1 "failed due to signal 9" "$log" | sed 's/^/  log: /'
  done
  tail -n 60 "$log"
  fail "the remote build failed"
}
# ran_on LOG BUILDER-STORE...: "DERIVATION-NAME BUILDER-STORE" per build the log shows. The
# machine that built a derivation keeps its build log (an input copied to a builder has none
# there), so that log names the builder; a build with none, or with two, is a failure.
ran_on() {
  local log=$1
  shift
  grep -oE "^building '/nix/store/[^']+\.drv'" "$log" | sed -E "s|^building '/nix/store/||; s|'$||" |
    while IFS= read -r drv; do
      on=()
      for b in "$@"; do
        [ ! -e "$b/nix/var/log/nix/drvs/${drv:0:2}/${drv:2}.bz2" ] || on+=("$b")
      done
      [ "${#on[@]}" = 1 ] || { echo "$drv: build logs on ${#on[@]} builders" >&2; return 1; }
      echo "$(sed -E 's/^[a-z0-9]{32}-//; s/\.drv$//' <<<"$drv") ${on[0]}"
    done | sort -u # Nix 2.8 prints a remote build twice (the client's line and the builder's)
}
nar_hash() { # STORE PATH
  nix-store --store "$1" -q --hash "$2"
}

echo "== 1. one builder: every stage builds there, nothing here"
client="$work/client"
b1="$work/builder-1"
fresh_client "$client"
t1=$(date +%s)
# shellcheck disable=SC2086 # a word list
remote_build "$client" "$(builder "$b1" 2)" "$work/one.log" $stages checks.pgo-proof
one_s=$(($(date +%s) - t1))
ran_on "$work/one.log" "$b1" >"$work/one.ran" || fail "a derivation was not built on the builder"
[ -s "$work/one.ran" ] || fail "nothing was built on the builder"
for a in $stages checks.pgo-proof; do
  drv=$(nix-instantiate "$repo/nix/host/chain.nix" "${host_nix_args[@]}" -A "$a" 2>/dev/null)
  name=$(basename "$drv" .drv)
  grep -qx "${name:33} $b1" "$work/one.ran" || fail "$a was not built on the builder"
done
parts=$(grep -cE '^gateway-(bolt-)?profile-' "$work/one.ran" || true)
echo "  ok: $(wc -l <"$work/one.ran") derivations built on the builder ($parts training parts), none here, in $one_s s"
# What the builder received and what came back.
echo "  builder store: $(du -sm "$b1/nix/store" | cut -f1) MiB; client store: $(du -sm "$client/nix/store" | cut -f1) MiB"
# What travels to a builder for each stage: the closure of its inputs (its input derivations'
# outputs and its sources), which the client copies there first, less what the builder has.
# The host tools (sandbox-paths: vendored crates, LLVM 22) do not travel: each builder has its own.
mib() { awk '{ s += $1 } END { printf "%.1f MiB", s / 1048576 }'; }
echo "  each stage's input closure (what travels to a builder that has none of it; the toolchain, $(nix-store -q --size "$rust_toolchain" | mib), once):"
for a in $stages gateway-profile.parts.chat-nonstream-minimal gateway-bolt-profile.parts.chat-nonstream-minimal; do
  drv=$(nix-instantiate "$repo/nix/host/chain.nix" "${host_nix_args[@]}" -A "$a" 2>/dev/null)
  inputs=$(nix-store -q --references "$drv" | while IFS= read -r r; do
    case $r in *.drv) nix-store -q --outputs "$r" ;; *) echo "$r" ;; esac
  done)
  # shellcheck disable=SC2086 # a path list
  closure=$(nix-store --store "local?root=$client" -qR $inputs)
  printf '    %-50s %3d paths, %s; its output %s\n' "$a" "$(wc -l <<<"$closure")" \
    "$(grep -vx "$rust_toolchain" <<<"$closure" | xargs -n1 nix-store --store "local?root=$client" -q --size | mib)" \
    "$(nix-store --store "local?root=$client" -q --outputs "$drv" | xargs -n1 nix-store --store "local?root=$client" -q --size | mib)"
done

echo "== the remote stages against tier c's (local) build"
same() { # ATTR: the stage's path is tier c's, and its NAR hash too
  local p
  p=$(readlink -f "$tier_c/result-$1")
  nix-store --store "local?root=$client" --check-validity "$p" 2>/dev/null ||
    fail "$1: tier c's $p is not what the remote chain built (another derivation)"
  [ "$(nar_hash "local?root=$client" "$p")" = "$(nar_hash local "$p")" ]
}
for a in trainer gateway-instrumented; do
  same "$a" || fail "$a built on the builder differs from the local build"
  echo "  ok: $a byte-identical"
done
prof=$(readlink -f "$tier_c/result-gateway-profile")
if same gateway-profile; then
  echo "  ok: gateway-profile byte-identical (training deterministic here)"
  for a in gateway-pgo-build gateway-pgo gateway-bolt-profile gateway-pgo-bolt; do
    same "$a" || fail "$a differs from the local build, given the same profile"
    echo "  ok: $a byte-identical"
  done
else
  # Training counts what the workload ran (threads, timers, retries): the merged profile
  # differs from run to run. By how much: llvm-profdata's overlap of the two.
  "$LLVM_BIN/llvm-profdata" overlap "$prof/gateway.profdata" "$client$prof/gateway.profdata" \
    >"$work/overlap.txt" 2>&1 || { cat "$work/overlap.txt"; fail "llvm-profdata overlap failed"; }
  echo "  note: gateway-profile differs from the local one; llvm-profdata overlap (local vs remote):"
  grep -iE 'overlap|mismatch|functions' "$work/overlap.txt" | head -n 8 | sed 's/^/    /'
  bolt=$(readlink -f "$tier_c/result-gateway-bolt-profile")
  if same gateway-bolt-profile; then
    echo "  note: gateway-bolt-profile byte-identical"
  else
    total=$(wc -l <"$bolt/gateway.fdata")
    common=$(comm -12 <(sort "$bolt/gateway.fdata") <(sort "$client$bolt/gateway.fdata") | wc -l)
    echo "  note: gateway-bolt-profile differs: $common of $total local fdata lines (branch and count) identical in the remote one"
  fi
  # Given the same profile: each build after training rebuilt here, from the builder's inputs,
  # is byte for byte what the builder made (--check fails on any difference).
  for a in gateway-pgo-build gateway-pgo-bolt; do
    t2=$(date +%s)
    nix-build "$repo/nix/host/chain.nix" "${host_nix_args[@]}" --store "local?root=$client" \
      --max-jobs 1 -A "$a" --check --no-out-link >"$work/check-$a.log" 2>&1 || {
      tail -n 30 "$work/check-$a.log"
      fail "$a rebuilt locally from the builder's inputs differs from the builder's"
    }
    echo "  ok: $a, rebuilt locally from the same profile, byte-identical to the builder's ($(($(date +%s) - t2)) s)"
  done
fi
pgo_bolt=$(readlink -f "$tier_c/result-gateway-pgo-bolt")
for proof in pgo-proof.json bolt-proof.json; do
  [ -s "$client$pgo_bolt/share/gateway/$proof" ] || fail "the remote gateway-pgo-bolt has no $proof"
done
echo "  ok: the remote chain's proofs verified on the builder (checks.pgo-proof) and came back"

echo "== 2. two builders: the PGO training parts split between them"
client2="$work/client-2"
b2="$work/builder-2"
b3="$work/builder-3"
fresh_client "$client2"
# The instrumented build and the trainer as a CI would have them (from its cache): only the
# training parts and the merge are left to build.
inst=$(readlink -f "$tier_c/result-gateway-instrumented")
trainer=$(readlink -f "$tier_c/result-trainer")
# --no-check-sigs: a store-to-store copy of paths built here, unsigned.
nix copy "${nixc[@]}" --no-check-sigs --from "local?root=$client" --to "local?root=$client2" "$inst" "$trainer" 2>/dev/null
t1=$(date +%s)
remote_build "$client2" "$(builder "$b2" 1);$(builder "$b3" 1)" "$work/two.log" gateway-profile
two_s=$(($(date +%s) - t1))
ran_on "$work/two.log" "$b2" "$b3" >"$work/two.ran" || fail "a derivation was not built on a builder"
on2=$(grep -cE "^gateway-profile-.* $b2\$" "$work/two.ran" || true)
on3=$(grep -cE "^gateway-profile-.* $b3\$" "$work/two.ran" || true)
training=$(grep -L -E '^holdout *= *true' "$repo"/shapes/*.toml | wc -l)
[ "$((on2 + on3))" = "$training" ] || fail "$((on2 + on3)) training parts built, not $training"
if [ "$on2" = 0 ] || [ "$on3" = 0 ]; then fail "the parts did not split: $on2 and $on3"; fi
grep -qE "^gateway-profile ($b2|$b3)\$" "$work/two.ran" || fail "the merge was not built on a builder"
"$LLVM_BIN/llvm-profdata" show "$client2$prof/gateway.profdata" >/dev/null ||
  fail "the merged two-builder profile does not read"
echo "  ok: $training training parts, $on2 on one builder and $on3 on the other, merged; in $two_s s"
echo "remote builders: PASS in $(($(date +%s) - t0)) s (one builder: $one_s s; two builders, PGO training only: $two_s s)"
