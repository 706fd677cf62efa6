# shellcheck shell=bash
# Gate + proof of the PGO build: run after cargo built with -Cprofile-use. Fails closed on
# `hash mismatch` (a stale profile: the source changed since training), on a profile rustc
# could not read, and on functions with no profile data in workspace crates; only then
# writes pgo-proof.json.
# Cargo prints LLVM's PGO warnings for workspace crates only (deps need -vv), which is exactly
# the scope of this gate: deps are profile-used too but their source never changes under a
# fixed Cargo.lock.
#
# Environment:
#   STAGE_COMMON          path of common.sh
#   cargoStderrLog        cargo's stderr of the PGO build
#   PROFILE_DIR           output of the profile stage (gateway.profdata, manifest.json)
#   RUSTFLAGS             the flags the build used (recorded, store hashes scrubbed)
#   PROOF_OUT             where to write pgo-proof.json
#   LLVM_PROFDATA         absolute path of llvm-profdata (rustc's LLVM), for `show`
#   MAX_MISSING_PROFILES  allowed "no profile data available" warnings (default 0)
#   RUSTC                 rustc to ask for versions (default: rustc on PATH, the one that built)
set -euo pipefail
# shellcheck source=common.sh
. "$STAGE_COMMON"
# shellcheck disable=SC2034 # read by common.sh's note and die
STAGE_NAME=pgo-gate
stage_start

cargoStderrLog=${cargoStderrLog:-}
need_var cargoStderrLog
need_var PROFILE_DIR
need_var PROOF_OUT
need_exe LLVM_PROFDATA "${LLVM_PROFDATA:-}"
profile="$PROFILE_DIR/gateway.profdata"
manifest="$PROFILE_DIR/manifest.json"
nonempty "$profile" "profile"
nonempty "$manifest" "profile manifest"
[ -f "$cargoStderrLog" ] || die "cargo log missing: $cargoStderrLog"
case "${RUSTFLAGS:-}" in
  *-Cprofile-use=*) ;;
  *) die "RUSTFLAGS carry no -Cprofile-use: this would be a plain build" ;;
esac

# rustc only WARNS about an unreadable profile and then builds without it: a silent fallback
# to a plain build, refused here.
unusable_re='invalid instrumentation profile|Error in reading profile|profile data may be corrupt|unsupported instrumentation profile format|malformed instrumentation profile'
if grep -qiE "$unusable_re" "$cargoStderrLog"; then
  grep -iE "$unusable_re" "$cargoStderrLog" | head -n 5 >&2
  die "rustc could not use the profile (it falls back to a plain build)"
fi
mismatch=$(grep -c 'hash mismatch' "$cargoStderrLog" || true)
missing=$(grep -c 'no profile data available' "$cargoStderrLog" || true)
if [ "$mismatch" -gt 0 ]; then
  grep 'hash mismatch' "$cargoStderrLog" | head -n 20 >&2
  die "$mismatch 'hash mismatch' warning(s): the profile was trained on a different source"
fi
if [ "$missing" -gt "${MAX_MISSING_PROFILES:-0}" ]; then
  grep 'no profile data available' "$cargoStderrLog" | head -n 20 >&2
  die "$missing function(s) without profile data (allowed: ${MAX_MISSING_PROFILES:-0})"
fi

show=$("$LLVM_PROFDATA" show "$profile") || die "llvm-profdata cannot read $profile"
total_functions=$(printf '%s\n' "$show" | sed -nE 's/^Total functions: ([0-9]+).*/\1/p' | head -n1)
[ "${total_functions:-0}" -gt 0 ] || die "profile reports no functions"

rustc_vv=$("${RUSTC:-rustc}" -vV)
rustc_release=$(printf '%s\n' "$rustc_vv" | head -n1)
rustc_llvm=$(printf '%s\n' "$rustc_vv" | sed -nE 's/^LLVM version: (.*)/\1/p')
profdata_version=$("$LLVM_PROFDATA" --version 2>&1 | grep -iE 'version' | head -n1 | sed -E 's/^[[:space:]]+//')
# The trainer's manifest: raw_files/raw_bytes are the .profraw files, merged_sha256 the profile.
profraw_count=$(json_num raw_files "$manifest")
profraw_bytes=$(json_num raw_bytes "$manifest")
[ "${profraw_count:-0}" -gt 0 ] || die "manifest records no .profraw files: $manifest"
[ "$(json_strval merged_sha256 "$manifest")" = "$(sha256_of "$profile")" ] ||
  die "manifest's merged_sha256 is not the profile's: $manifest"

tmp="$PROOF_OUT.tmp"
mkdir -p "$(dirname "$PROOF_OUT")"
{
  printf '{\n'
  printf '  "stage": "gateway-pgo",\n'
  printf '  "profile_sha256": %s,\n' "$(json_str "$(sha256_of "$profile")")"
  printf '  "profile_bytes": %s,\n' "$(bytes_of "$profile")"
  printf '  "profile_total_functions": %s,\n' "$total_functions"
  printf '  "profraw_count": %s,\n' "$profraw_count"
  printf '  "profraw_bytes": %s,\n' "${profraw_bytes:-0}"
  printf '  "manifest_sha256": %s,\n' "$(json_str "$(sha256_of "$manifest")")"
  printf '  "hash_mismatch_warnings": %s,\n' "$mismatch"
  printf '  "missing_profile_warnings": %s,\n' "$missing"
  printf '  "rustc": %s,\n' "$(json_str "$rustc_release")"
  printf '  "rustc_llvm": %s,\n' "$(json_str "$rustc_llvm")"
  printf '  "llvm_profdata": %s,\n' "$(json_str "$profdata_version")"
  printf '  "target": %s,\n' "$(json_str "${CARGO_BUILD_TARGET:-}")"
  printf '  "rustflags": %s\n' "$(json_str "$(scrub_store "$RUSTFLAGS")")"
  printf '}\n'
} >"$tmp"
mv "$tmp" "$PROOF_OUT"
note "proof: $PROOF_OUT"
stage_done
