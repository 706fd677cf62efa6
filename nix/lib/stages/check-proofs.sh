# shellcheck shell=bash
# Check `pgo-proof`: re-reads the shipped proofs and holds them against the artefacts they
# describe (profile hash and size, fdata size, the shipped size, the BOLT note and GNU_STACK of
# the binary).
#
# Environment:
#   STAGE_COMMON  path of common.sh
#   RESULT        the <BIN_NAME>-pgo-bolt output (bin/, share/<BIN_NAME>/)
#   PROFILE_DIR   the profile stage's output (<BIN_NAME>.profdata)
#   BOLT_PROFILE  the BOLT profile stage's output (<BIN_NAME>.fdata)
#   READELF       absolute path of readelf
#   BIN_NAME      the optimized binary
set -euo pipefail
# shellcheck source=common.sh
. "$STAGE_COMMON"
STAGE_NAME=${STAGE_NAME:-check-pgo-proof}
stage_start
need_var RESULT
need_var PROFILE_DIR
need_var BOLT_PROFILE
need_exe READELF "${READELF:-}"

need_var BIN_NAME
pgo="$RESULT/share/$BIN_NAME/pgo-proof.json"
bolt="$RESULT/share/$BIN_NAME/bolt-proof.json"
bin="$RESULT/bin/$BIN_NAME"
nonempty "$pgo" "pgo-proof.json"
nonempty "$bolt" "bolt-proof.json"
nonempty "$bin" "optimized binary"

expect_eq() {
  [ "$2" = "$3" ] || die "$1: proof says '$2', actual '$3'"
  note "ok: $1 = $3"
}
expect_pos() {
  [ "${2:-0}" -gt 0 ] 2>/dev/null || die "$1 must be > 0, got '${2:-}'"
  note "ok: $1 = $2"
}

expect_eq profile_sha256 "$(json_strval profile_sha256 "$pgo")" "$(sha256_of "$PROFILE_DIR/$BIN_NAME.profdata")"
expect_eq profile_bytes "$(json_num profile_bytes "$pgo")" "$(bytes_of "$PROFILE_DIR/$BIN_NAME.profdata")"
expect_pos profraw_count "$(json_num profraw_count "$pgo")"
expect_pos profile_total_functions "$(json_num profile_total_functions "$pgo")"
expect_eq hash_mismatch_warnings "$(json_num hash_mismatch_warnings "$pgo")" 0
grep -q '"rustc": "rustc [0-9]' "$pgo" || die "pgo-proof.json has no rustc version"
grep -q '"rustc_llvm": "[0-9]' "$pgo" || die "pgo-proof.json has no LLVM version"
grep -q -- '-Cprofile-use=' "$pgo" || die "pgo-proof.json rustflags carry no -Cprofile-use"
grep -q -- '--emit-relocs' "$pgo" || die "pgo-proof.json rustflags carry no --emit-relocs"

expect_eq fdata_bytes "$(json_num fdata_bytes "$bolt")" "$(bytes_of "$BOLT_PROFILE/$BIN_NAME.fdata")"
expect_eq fdata_sha256 "$(json_strval fdata_sha256 "$bolt")" "$(sha256_of "$BOLT_PROFILE/$BIN_NAME.fdata")"
expect_pos functions_with_profile "$(json_num functions_with_profile "$bolt")"
expect_eq output_sha256 "$(json_strval output_sha256 "$bolt")" "$(sha256_of "$bin")"
grep -q '"bolt_version": ".*LLVM version' "$bolt" || die "bolt-proof.json has no BOLT version"
"$READELF" -p .note.bolt_info "$bin" | grep -q 'BOLT revision' || die "binary lacks .note.bolt_info"
# `size` is there when the BOLT stage had the crate's own build (PLAIN_BIN): its shipped bytes
# are the binary's, and its ratio is theirs over the crate build's.
if grep -q '"size"' "$bolt"; then
  shipped_bytes=$(json_num shipped_bytes "$bolt")
  crate_bytes=$(json_num crate_build_bytes "$bolt")
  expect_eq size.shipped_bytes "$shipped_bytes" "$(bytes_of "$bin")"
  expect_pos size.crate_build_bytes "$crate_bytes"
  expect_eq size.ratio "$(json_num ratio "$bolt")" \
    "$(awk -v s="$shipped_bytes" -v c="$crate_bytes" 'BEGIN { printf "%.3f", s / c }')"
fi
stack=$("$READELF" -lW "$bin" | grep GNU_STACK | awk '{print $7}')
expect_eq gnu_stack "$(json_strval gnu_stack "$bolt")" "$stack"
expect_eq gnu_stack_flags RW "$stack"
stage_done
