#!/usr/bin/env bash
# Tier e: the binary-cache round trip, over HTTP as every CI cache is. Tier c's chain (every
# stage and every training part) is copied to a signed binary cache, a directory of static files
# served by a plain static web server on 127.0.0.1 (python3's http.server); a fresh, empty Nix
# store that trusts the cache's key, substituting from http://, then
#   1. substitutes every stage with nothing built (`--dry-run` says so), and really fetches
#      the optimized gateway, byte for byte tier c's;
#   2. refuses the same cache under a key it does not trust (the fetch fails on the signature);
#   3. after a one-shape edit, would build only that shape's PGO training, the merge and the
#      stages after it (the PGO build, the gate, the BOLT training parts, BOLT), fetching the
#      instrumented build and every other shape's training; and does build the edited profile
#      for real: one part trained, the other parts substituted, merged;
#   4. refuses a tampered narinfo (another path's NAR under the instrumented build's name and
#      signature: the signature no longer matches) and a tampered NAR (one byte of the
#      instrumented build's NAR flipped under its intact, signed narinfo: the NAR hash).
# Reuses tier c's store paths: run tier c first.
#
# Usage: nix/tests/tier-e.sh [TIER_C_OUTDIR]   (default ./out/tier-c)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tier_c=${1:-$repo/out/tier-c}
t0=$(date +%s)
fail() {
  echo "tier e: FAIL: $*" >&2
  exit 1
}
. "$repo/scripts/chain-host-env.sh"
[ -e "$tier_c/result-gateway-pgo-bolt" ] || fail "run tier c first (no $tier_c/result-gateway-pgo-bolt)"
work=$(mktemp -d /var/tmp/tier-e.XXXXXX)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
nixc=(--extra-experimental-features nix-command)
stages="trainer gateway-instrumented gateway-profile gateway-pgo-build gateway-pgo gateway-bolt-profile gateway-pgo-bolt"
chain_attrs=()
for a in $stages; do chain_attrs+=(-A "$a"); done

echo "== the chain into a signed cache, served over HTTP"
nix-store --generate-binary-cache-key tier-e-1 "$work/key.sec" "$work/key.pub"
nix-store --generate-binary-cache-key tier-e-other "$work/other.sec" "$work/other.pub"
# The server's root holds the cache and, for step 4, two tampered copies of it.
www="$work/www"
mkdir -p "$www"
# Port 0: the kernel picks a free one, written to a file once bound. Requests are logged.
python3 -c 'import functools, http.server, sys
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
open(sys.argv[2] + ".tmp", "w").write(str(s.server_address[1]))
__import__("os").rename(sys.argv[2] + ".tmp", sys.argv[2])
s.serve_forever()' "$www" "$work/port" 2>"$work/http.log" &
http_pid=$!
trap 'kill "$http_pid" 2>/dev/null; chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || fail "the HTTP server did not start"
http="http://127.0.0.1:$(cat "$work/port")"
cache="$http/cache"
# What a CI cache holds after tier c: every output tier c built for these stages, with the
# build-time helpers (setup hooks, dummy sources, shape copies, workload scripts) and every
# training part; not the toolchain, which a real machine gets from its own cache.
drvs=$(nix-instantiate "$repo/nix/host/chain.nix" "${host_nix_args[@]}" "${chain_attrs[@]}" 2>/dev/null) ||
  fail "the chain does not evaluate"
# shellcheck disable=SC2086 # a path list
paths=$(nix-store -qR --include-outputs $drvs | grep -v '\.drv$' | grep -vx "$rust_toolchain" |
  while IFS= read -r p; do if nix-store --check-validity "$p" 2>/dev/null; then echo "$p"; fi; done)
# shellcheck disable=SC2086,SC2046 # path lists
for d in $drvs; do nix-store --check-validity $(nix-store -q --outputs "$d") 2>/dev/null ||
  fail "$d is not built: run tier c first"; done
t1=$(date +%s)
# shellcheck disable=SC2086 # a path list
# Written as files (a static server takes no uploads; a CI writes its bucket likewise).
nix copy "${nixc[@]}" --to "file://$www/cache?secret-key=$work/key.sec&compression=zstd" $paths
echo "  ok: $(echo "$paths" | wc -w) paths, $(du -sm "$www/cache" | cut -f1) MiB, in $(($(date +%s) - t1)) s; served at $cache"
curl -fsS "$cache/nix-cache-info" | grep -q '^StoreDir: /nix/store$' || fail "$cache/nix-cache-info is not served"

# A fresh store: only the toolchain, which a real machine substitutes from its own cache.
fresh="$work/fresh"
nix copy "${nixc[@]}" --to "local?root=$fresh" "$rust_toolchain"
from_cache() { # PUBKEY_FILE ARGS...: nix-build on the fresh store, substituting from the cache
  local pub=$1
  shift
  nix-build "$repo/nix/host/chain.nix" "${host_nix_args[@]}" --store "$fresh" \
    --option substituters "$cache" --option trusted-public-keys "$(cat "$pub")" "$@"
}
# names WHAT LOG: the derivation names (no hash, no version, no .drv) the dry run lists under
# "will be built" (WHAT=built) or the store paths' names under "will be fetched".
names() {
  awk -v what="$1" '/will be built/ { s = "built"; next } /will be fetched/ { s = "fetched"; next }
    /^  \/nix\/store\// { if (s == what) print } /^[^ ]/ { s = "" }' "$2" |
    sed -E 's|^ +/nix/store/[a-z0-9]{32}-||; s|\.drv$||; s|-0\.1\.0$||' | sort
}

echo "== 1. a fresh store substitutes every stage, building nothing"
from_cache "$work/key.pub" "${chain_attrs[@]}" --dry-run >"$work/dry.log" 2>&1 || {
  cat "$work/dry.log"
  fail "the dry run failed"
}
built=$(names built "$work/dry.log")
[ -z "$built" ] || { cat "$work/dry.log"; fail "a fresh store would build: $built"; }
fetched=$(names fetched "$work/dry.log")
for a in $stages; do
  printf '%s\n' "$fetched" | grep -qx "$a" || { cat "$work/dry.log"; fail "$a is not fetched"; }
done
echo "  ok: nothing to build; fetched: $(echo "$fetched" | tr '\n' ' ')"
from_cache "$work/key.pub" -A gateway-pgo-bolt --no-out-link >"$work/fetch.log" 2>&1 || {
  cat "$work/fetch.log"
  fail "substituting gateway-pgo-bolt failed"
}
grep -q "building '" "$work/fetch.log" && { cat "$work/fetch.log"; fail "substituting built something"; }
want=$(sha256sum <"$tier_c/result-gateway-pgo-bolt/bin/gateway")
got=$(sha256sum <"$fresh$(readlink -f "$tier_c/result-gateway-pgo-bolt")/bin/gateway")
[ "$want" = "$got" ] || fail "the substituted gateway differs from tier c's"
nars=$(grep -c '"GET /cache/nar/[^ ]* HTTP/1.1" 200' "$work/http.log" || true)
[ "$nars" -gt 0 ] || fail "no NAR was served over HTTP"
echo "  ok: gateway-pgo-bolt fetched over HTTP ($nars NARs served), its bin/gateway byte for byte tier c's"

echo "== 2. the same cache under a key the store does not trust substitutes nothing"
# A dry run only asks the cache what it has; signatures are checked when a path is fetched.
# --max-jobs 0: the store may not build instead, so a refused path fails the command.
if from_cache "$work/other.pub" -A gateway-instrumented --no-out-link --max-jobs 0 >"$work/untrusted.log" 2>&1; then
  cat "$work/untrusted.log"
  fail "a path signed with a key the store does not trust was substituted"
fi
grep -q "is not signed by any of the keys" "$work/untrusted.log" || {
  cat "$work/untrusted.log"
  fail "the untrusted fetch failed, but not on the signature"
}
grep -m1 "is not signed by any of the keys" "$work/untrusted.log" | sed 's/^/  log: /'
echo "  ok: refused, nothing substituted"

echo "== 3. a one-shape edit rebuilds that shape's training, the merge and what follows"
edited="$work/edited"
mkdir -p "$edited"
(cd "$repo" && git ls-files -z | tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -C "$edited" -xf -
shape=chat-nonstream-minimal
sed -i -E 's/^requests = [0-9]+/requests = 500/' "$edited/shapes/$shape.toml"
from_cache "$work/key.pub" --arg root "$edited" "${chain_attrs[@]}" --dry-run >"$work/edit.log" 2>&1 || {
  cat "$work/edit.log"
  fail "the dry run after the edit failed"
}
built=$(names built "$work/edit.log")
fetched=$(names fetched "$work/edit.log")
printf '  would build: %s\n' "$(echo "$built" | tr '\n' ' ')"
printf '  would fetch: %s\n' "$(echo "$fetched" | tr '\n' ' ')"
training=$(grep -L -E '^holdout *= *true' "$repo"/shapes/*.toml | xargs -n1 basename | sed 's/\.toml$//')
for n in $built; do
  case $n in
    "gateway-shape-$shape-validated" | "gateway-workload-$shape" | "gateway-profile-$shape" | gateway-profile) ;;
    gateway-pgo-build | gateway-pgo-build-deps | gateway-pgo | gateway-bolt-profile | gateway-pgo-bolt) ;;
    # The PGO dependency build's dummy source (its name is the source's): rebuilt with it.
    gateway-src) ;;
    gateway-bolt-profile-*) ;; # every BOLT part trains on the new PGO binary
    *) fail "a one-shape edit rebuilds $n" ;;
  esac
done
for n in gateway-profile-$shape gateway-profile gateway-pgo-build gateway-pgo gateway-bolt-profile gateway-pgo-bolt; do
  printf '%s\n' "$built" | grep -qx "$n" || fail "a one-shape edit does not rebuild $n"
done
for s in $training; do
  [ "$s" != "$shape" ] || continue
  printf '%s\n' "$fetched" | grep -qx "gateway-profile-$s" ||
    fail "the untouched shape $s's training is not fetched from the cache"
done
printf '%s\n' "$fetched" | grep -qx gateway-instrumented || fail "gateway-instrumented is not fetched"
echo "  ok: one PGO training part, the merge and the stages after it; the other $(($(echo "$training" | wc -w) - 1)) parts and the instrumented build fetched"
from_cache "$work/key.pub" --arg root "$edited" -A gateway-profile --no-out-link >"$work/edit-build.log" 2>&1 || {
  tail -n 40 "$work/edit-build.log"
  fail "building the edited profile failed"
}
ran=$(grep -oE "building '/nix/store/[a-z0-9]{32}-[^']+'" "$work/edit-build.log" |
  sed -E "s|building '/nix/store/[a-z0-9]{32}-||; s|\.drv'||" | sort | tr '\n' ' ')
echo "  built for real: $ran"
case " $ran " in
  *" gateway-profile-$shape "*) ;;
  *) fail "the edited shape's training did not run" ;;
esac
for s in $training; do
  [ "$s" = "$shape" ] || case " $ran " in *" gateway-profile-$s "*) fail "shape $s retrained" ;; esac
done

echo "== 4. a tampered narinfo and a tampered NAR are refused"
inst=$(readlink -f "$tier_c/result-gateway-instrumented")
other=$(readlink -f "$tier_c/result-trainer")
info() { echo "$1/$(basename "$2" | cut -c1-32).narinfo"; }
field() { sed -n "s/^$1: //p" "$2"; }
# Copies of the cache (hard links: the files a step rewrites are replaced, never edited).
cp -al "$www/cache" "$www/bad-narinfo"
cp -al "$www/cache" "$www/bad-nar"
# The narinfo: the instrumented build's name, references and signature over the trainer's
# NAR and NAR hash, a self-consistent download of the wrong content.
bad=$(info "$www/bad-narinfo" "$inst")
src=$(info "$www/cache" "$other")
rm "$bad"
{
  grep -vE '^(URL|Compression|FileHash|FileSize|NarHash|NarSize):' "$(info "$www/cache" "$inst")"
  grep -E '^(URL|Compression|FileHash|FileSize|NarHash|NarSize):' "$src"
} >"$bad"
# The NAR: one byte of the binary's contents flipped (the middle of the NAR, inside bin/gateway,
# so it still unpacks), recompressed, under the untouched signed narinfo.
nar="$www/bad-nar/$(field URL "$(info "$www/cache" "$inst")")"
[ "$(field Compression "$(info "$www/cache" "$inst")")" = zstd ] || fail "the cache is not zstd-compressed"
zstd -q -d -c "$nar" >"$work/inst.nar"
rm "$nar"
python3 -c 'import sys
b = bytearray(open(sys.argv[1], "rb").read()); b[len(b) // 2] ^= 0xff
open(sys.argv[1], "wb").write(b)' "$work/inst.nar"
zstd -q -c "$work/inst.nar" >"$nar"
tampered() { # NAME FLAGS...: fetch the instrumented build from the tampered copy NAME
  local name=$1
  shift
  rm -rf "$work/t-$name"
  # A store of its own: nothing else in it to substitute from or fall back on.
  nix copy "${nixc[@]}" --from "$http/$name" --to "local?root=$work/t-$name" \
    --option trusted-public-keys "$(cat "$work/key.pub")" "$@" "$inst" >"$work/$name.log" 2>&1
}
refused() { # NAME MESSAGE
  if tampered "$1"; then
    cat "$work/$1.log"
    fail "the $1 cache's instrumented build was accepted"
  fi
  grep -q "$2" "$work/$1.log" || { cat "$work/$1.log"; fail "the $1 fetch failed, but not on: $2"; }
  # Not valid (an unpacked NAR may lie there, unregistered, garbage for the next GC).
  if nix "${nixc[@]}" path-info --store "local?root=$work/t-$1" "$inst" >/dev/null 2>&1; then
    fail "the $1 fetch made $inst valid in the store"
  fi
  grep -m1 "$2" "$work/$1.log" | sed 's/^/  log: /'
}
refused bad-narinfo "lacks a valid signature"
# The copy is what the signature stops: unchecked, the store takes the trainer's NAR.
tampered bad-narinfo --no-check-sigs || { cat "$work/bad-narinfo.log"; fail "the unchecked bad-narinfo fetch failed"; }
nix "${nixc[@]}" path-info --store "local?root=$work/t-bad-narinfo" "$inst" >/dev/null &&
  [ -e "$work/t-bad-narinfo$inst/bin/trainer" ] || fail "the unchecked bad-narinfo fetch did not deliver the trainer"
echo "  ok: the tampered narinfo refused (unchecked, it delivers the trainer's files as $(basename "$inst"))"
refused bad-nar "hash mismatch"
echo "  ok: the tampered NAR refused"
echo "tier e: PASS in $(($(date +%s) - t0)) s"
