#!/usr/bin/env bash
# The release gate: nothing is published unless this passes on the artifact's contents.
# Fail-closed: a missing, unreadable or implausible proof, a binary that is not the one the
# proofs describe, or a figure under its floor exits 1 with every reason listed.
#
# Usage: scripts/release-check.sh [--bin-name NAME] DIR
#   DIR is a <NAME>-pgo-bolt output (`result/`; NAME defaults to gateway, any chain's binary
#   works) or an unpacked release tarball: it holds bin/NAME, share/NAME/pgo-proof.json
#   (stage NAME-pgo) and share/NAME/bolt-proof.json (stage NAME-pgo-bolt); a SHA256SUMS file
#   at its top (tarballs carry one) is verified too, and must cover those three files.
#
# Environment (all optional):
#   READELF                    readelf to use (default: `readelf` on PATH)
# The defaults are implausibility floors, far under a real run's figures (host chain, tier c:
# 8 profraw files, 2.5 MB profile of 8802 functions, 3.2 MB fdata, 837 of 5155 functions with
# a BOLT profile), so that only a run that trained next to nothing falls under them:
#   RELEASE_MIN_PROFRAW        floor of profraw_count (default 8: the v1 matrix trains 8
#                              shapes, one process and one .profraw each)
#   RELEASE_MIN_PROFILE_BYTES  floor of the merged profile (default 65536, the trainer's own)
#   RELEASE_MIN_PROFILE_FUNCS  floor of profile_total_functions (default 1000)
#   RELEASE_MIN_FDATA_BYTES    floor of the merged BOLT profile (default 16384, the trainer's)
#   RELEASE_MIN_BOLT_FUNCS     floor of functions_with_profile (default 100)
#   RELEASE_MAX_MISSING        allowed missing_profile_warnings (default 0, as the PGO gate)
#
# Needs bash, coreutils, grep, sed and readelf only (no jq, no python): it runs in the Nix
# build sandbox (checks.release), in the release workflow and on a user's machine.
set -euo pipefail

bin_name=gateway
while [ $# -gt 0 ]; do
  case $1 in
    --bin-name)
      bin_name=${2:?--bin-name needs a value}
      shift 2
      ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    --)
      shift
      break
      ;;
    -*)
      echo "release-check: unknown option $1" >&2
      exit 2
      ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || {
  echo "usage: $0 [--bin-name NAME] DIR" >&2
  exit 2
}
dir=${1%/}
READELF=${READELF:-readelf}
min_profraw=${RELEASE_MIN_PROFRAW:-8}
min_profile_bytes=${RELEASE_MIN_PROFILE_BYTES:-65536}
min_profile_funcs=${RELEASE_MIN_PROFILE_FUNCS:-1000}
min_fdata_bytes=${RELEASE_MIN_FDATA_BYTES:-16384}
min_bolt_funcs=${RELEASE_MIN_BOLT_FUNCS:-100}
max_missing=${RELEASE_MAX_MISSING:-0}

failures=()
fail() { failures+=("$*"); }
ok() { echo "release-check: ok: $*"; }
finish() {
  if [ "${#failures[@]}" -gt 0 ]; then
    printf 'release-check: FAILED: %s\n' "${failures[@]}" >&2
    echo "release-check: $dir is NOT releasable (${#failures[@]} problem(s))" >&2
    exit 1
  fi
  echo "release-check: PASS: $dir"
  exit 0
}

# The proofs are flat JSON objects written by nix/lib/stages/*.sh: one "key": value per line
# (a key that appears twice is a failure of its own, checked below).
json_raw() {
  grep -E "^[[:space:]]*\"$1\"[[:space:]]*:" "$2" | head -n1 |
    sed -E 's/^[^:]*:[[:space:]]*//; s/,[[:space:]]*$//'
}
# num FILE KEY: an integer value, or empty.
num() {
  json_raw "$2" "$1" | grep -xE '[0-9]+' || true
}
# str FILE KEY: a string value without its quotes, or empty.
str() {
  json_raw "$2" "$1" | sed -nE 's/^"(.*)"$/\1/p'
}
# at_least FILE KEY FLOOR
at_least() {
  local v
  v=$(num "$1" "$2")
  if [ -z "$v" ]; then
    fail "$(basename "$1"): \"$2\" is missing or not a number"
  elif [ "$v" -lt "$3" ]; then
    fail "$(basename "$1"): \"$2\" = $v is below the floor $3"
  else
    ok "$2 = $v (floor $3)"
  fi
}
# equals WHAT EXPECTED ACTUAL
equals() {
  if [ "$2" = "$3" ]; then ok "$1 = $3"; else fail "$1: expected '$2', got '$3'"; fi
}
sha256_of() { sha256sum "$1" | cut -d' ' -f1; }
is_sha256() { printf '%s' "$1" | grep -qxE '[0-9a-f]{64}'; }

[ -d "$dir" ] || {
  fail "no such directory: $dir"
  finish
}
bin="$dir/bin/$bin_name"
pgo="$dir/share/$bin_name/pgo-proof.json"
bolt="$dir/share/$bin_name/bolt-proof.json"
missing=0
for f in "$bin" "$pgo" "$bolt"; do
  [ -s "$f" ] || {
    fail "missing or empty: $f"
    missing=1
  }
done
[ "$missing" -eq 0 ] || finish
[ -x "$bin" ] || fail "not executable: $bin"
command -v "$READELF" >/dev/null || {
  fail "readelf not found (READELF=$READELF)"
  finish
}
for f in "$pgo" "$bolt"; do
  if [ "$(head -c1 "$f")" != "{" ] || [ "$(tail -n1 "$f" | tr -d '[:space:]')" != "}" ]; then
    fail "$(basename "$f") is not a JSON object"
  fi
  # A key given twice: a hand edit could hide a figure behind the one this script reads.
  dups=$(grep -oE '^[[:space:]]*"[^"]+"[[:space:]]*:' "$f" | tr -d ' :' | sort | uniq -d | paste -sd ' ' -)
  [ -z "$dups" ] || fail "$(basename "$f") repeats key(s) $dups"
done

# --- the PGO proof (nix/lib/stages/pgo-gate.sh)
equals "pgo-proof stage" "$bin_name-pgo" "$(str "$pgo" stage)"
v=$(str "$pgo" profile_sha256)
if is_sha256 "$v"; then ok "profile_sha256 = $v"; else fail "pgo-proof.json: profile_sha256 is not a sha256: '$v'"; fi
at_least "$pgo" profraw_count "$min_profraw"
at_least "$pgo" profile_bytes "$min_profile_bytes"
at_least "$pgo" profile_total_functions "$min_profile_funcs"
equals "hash_mismatch_warnings" 0 "$(num "$pgo" hash_mismatch_warnings)"
v=$(num "$pgo" missing_profile_warnings)
if [ -z "$v" ] || [ "$v" -gt "$max_missing" ]; then
  fail "pgo-proof.json: missing_profile_warnings = '${v}' (allowed: $max_missing)"
else
  ok "missing_profile_warnings = $v"
fi
rustc=$(str "$pgo" rustc)
rustc_llvm=$(str "$pgo" rustc_llvm)
profdata=$(str "$pgo" llvm_profdata)
printf '%s' "$rustc" | grep -qE '^rustc [0-9]+\.[0-9]+' || fail "pgo-proof.json: no rustc version: '$rustc'"
# The profile format follows LLVM's major: llvm-profdata of another major than rustc's cannot
# have produced a profile rustc accepted.
llvm_major=${rustc_llvm%%.*}
profdata_major=$(printf '%s' "$profdata" | grep -oE 'version [0-9]+' | head -n1 | grep -oE '[0-9]+' || true)
if [ -n "$llvm_major" ] && [ "$llvm_major" = "$profdata_major" ]; then
  ok "llvm-profdata major = rustc's LLVM major = $llvm_major"
else
  fail "pgo-proof.json: rustc's LLVM '$rustc_llvm' vs llvm-profdata '$profdata'"
fi
flags=$(str "$pgo" rustflags)
case "$flags" in *-Cprofile-use=*) ok "rustflags carry -Cprofile-use" ;; *) fail "pgo-proof.json: rustflags carry no -Cprofile-use: '$flags'" ;; esac
case "$flags" in *--emit-relocs*) ok "rustflags carry --emit-relocs" ;; *) fail "pgo-proof.json: rustflags carry no --emit-relocs (BOLT needs them)" ;; esac

# --- the BOLT proof (nix/lib/stages/bolt-optimize.sh)
equals "bolt-proof stage" "$bin_name-pgo-bolt" "$(str "$bolt" stage)"
# keepDebugInfo's record (bolt-optimize.sh); proofs from before it carry none.
case $(str "$bolt" debug_info) in
  kept | dropped | none) ok "debug_info = $(str "$bolt" debug_info)" ;;
  '') if grep -q '"debug_info"' "$bolt"; then fail "bolt-proof.json: debug_info is empty"; fi ;;
  *) fail "bolt-proof.json: debug_info is '$(str "$bolt" debug_info)', not kept, dropped or none" ;;
esac
at_least "$bolt" fdata_bytes "$min_fdata_bytes"
at_least "$bolt" functions_with_profile "$min_bolt_funcs"
with=$(num "$bolt" functions_with_profile)
total=$(num "$bolt" functions_total)
if [ -n "$with" ] && [ -n "$total" ] && [ "$with" -le "$total" ]; then
  ok "functions_with_profile $with <= functions_total $total"
else
  fail "bolt-proof.json: functions_with_profile '$with' vs functions_total '$total'"
fi
for k in fdata_sha256 input_sha256 output_sha256; do
  v=$(str "$bolt" "$k")
  is_sha256 "$v" || fail "bolt-proof.json: $k is not a sha256: '$v'"
done
[ "$(str "$bolt" input_sha256)" != "$(str "$bolt" output_sha256)" ] ||
  fail "bolt-proof.json: BOLT's output equals its input (nothing was rewritten)"
actual=$(sha256_of "$bin")
equals "sha256 of bin/$bin_name (bolt-proof output_sha256)" "$(str "$bolt" output_sha256)" "$actual"
equals "bolt-proof gnu_stack" RW "$(str "$bolt" gnu_stack)"
if str "$bolt" bolt_version | grep -q 'LLVM version'; then
  ok "bolt_version recorded"
else
  fail "bolt-proof.json: no BOLT/LLVM version"
fi
bflags=$(str "$bolt" flags)
case " $bflags " in
  *" -use-gnu-stack "*) fail "bolt-proof.json: flags carry -use-gnu-stack (executable thread stacks)" ;;
  *-data=*) ok "BOLT flags carry -data=" ;;
  *) fail "bolt-proof.json: flags carry no -data= (BOLT ran without a profile): '$bflags'" ;;
esac

# --- the binary itself
note=$("$READELF" -p .note.bolt_info "$bin" 2>/dev/null || true)
if printf '%s\n' "$note" | grep -q 'BOLT revision'; then
  ok "binary carries .note.bolt_info"
else
  fail "bin/$bin_name has no .note.bolt_info: BOLT did not produce it"
fi
case "$note" in */nix/store/*) fail ".note.bolt_info names a store path (a runtime reference to an intermediate)" ;; esac
stack=$("$READELF" -lW "$bin" 2>/dev/null | awk '$1 == "GNU_STACK" {print $7}')
equals "GNU_STACK flags of bin/$bin_name" RW "$stack"

# --- SHA256SUMS (release tarballs): every line verifies, and it covers binary and proofs.
if [ -f "$dir/SHA256SUMS" ]; then
  if (cd "$dir" && sha256sum --quiet --strict -c SHA256SUMS) >&2; then
    ok "SHA256SUMS verifies"
  else
    fail "SHA256SUMS does not verify"
  fi
  for f in "bin/$bin_name" "share/$bin_name/pgo-proof.json" "share/$bin_name/bolt-proof.json"; do
    grep -qE "^[0-9a-f]{64}  $f\$" "$dir/SHA256SUMS" || fail "SHA256SUMS does not cover $f"
  done
fi

finish
