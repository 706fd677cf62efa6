# shellcheck shell=bash
# Gate + proof of the PGO build, the stage <bin>-pgo: judges the -Cprofile-use build. Fails
# closed on `hash mismatch` (a stale profile: the source changed since training), on a profile
# rustc could not read, and on functions with no profile data in workspace crates; only then
# writes pgo-proof.json and the binary.
# Cargo prints LLVM's PGO warnings for workspace crates only (deps need -vv), which is exactly
# the scope of this gate: deps are profile-used too but their source never changes under a
# fixed Cargo.lock.
# A stage of its own, after the profile-use build (<bin>-pgo-build) like every other gate
# after what it judges: its output exists only when every check passed.
#
# Every input comes on this script's own command line (its environment prefix), never from
# a variable that a build phase set without exporting (nix/lib/chain.nix states the contract).
#   STAGE_COMMON          path of common.sh
#   PGO_BUILD             output of the profile-use build: bin/<BIN_NAME>, and
#                         share/<BIN_NAME>/pgo-build/{diagnostics.txt,rustc-vV.txt}
#                         (pgo-diagnostics.sh)
#   PROFILE_DIR           output of the profile stage (<BIN_NAME>.profdata, manifest.json)
#   BIN_NAME              the binary: names the profile and the proof's stage
#   PGO_RUSTFLAGS         the flags the build used (recorded, store hashes scrubbed)
#   TARGET                the target triple the build used (recorded)
#   OUT_DIR               where to write bin/<BIN_NAME> and share/<BIN_NAME>/pgo-proof.json
#   LLVM_PROFDATA         absolute path of llvm-profdata (rustc's LLVM), for `show`
#   MAX_MISSING_PROFILES  allowed "no profile data available" warnings (default 0)
#   CARGO_ARGS            the build's cargo arguments; PROFILE_RELEASE the release profile the
#                         chain's preflight resolved (a JSON object); SYMBOL_MANGLING v0 or
#                         legacy; RUSTFLAGS_APPLIED the rustflags by source (a JSON list of
#                         { source, flags }): recorded when given (nix/lib/chain.nix gives them)
#   C_PROOF               c-proof.sh, when the build scripts' C took the profile (chain.nix's
#                         cPgo): the C proof's fields join pgo-proof.json, and its gates (a
#                         clang of another LLVM, `hash mismatch` in C) fail this stage;
#                         C_PGO_FLAGS the C flags the build used (recorded)
#
# What a different toolchain changes, and how this gate says so (the flake pins fenix stable,
# Rust 1.97.1; CI builds with the host's 1.95): the LLVM major of rustc and llvm-profdata
# (checked first, by name), an unreadable profile (named as an LLVM mismatch when rustc says
# "unsupported ... version"), and the count of missing-profile warnings (a newer rustc can
# emit functions the profile never saw: the message names rustc's version and the knob).
set -euo pipefail
# shellcheck source=common.sh
. "$STAGE_COMMON"
# shellcheck disable=SC2034 # read by common.sh's note and die
STAGE_NAME=${STAGE_NAME:-pgo-gate}
stage_start

need_var PGO_BUILD
need_var PROFILE_DIR
need_var OUT_DIR
need_exe LLVM_PROFDATA "${LLVM_PROFDATA:-}"
need_var BIN_NAME
built="$PGO_BUILD/bin/$BIN_NAME"
log="$PGO_BUILD/share/$BIN_NAME/pgo-build/diagnostics.txt"
rustc_vv_file="$PGO_BUILD/share/$BIN_NAME/pgo-build/rustc-vV.txt"
[ -x "$built" ] || die "the PGO build has no executable $built"
[ -f "$log" ] || die "the PGO build kept no diagnostics: $log"
nonempty "$rustc_vv_file" "the PGO build's rustc -vV"
profile="$PROFILE_DIR/$BIN_NAME.profdata"
manifest="$PROFILE_DIR/manifest.json"
nonempty "$profile" "profile"
nonempty "$manifest" "profile manifest"
case "${PGO_RUSTFLAGS:-}" in
  *-Cprofile-use=*) ;;
  *) die "RUSTFLAGS carry no -Cprofile-use: this would be a plain build" ;;
esac

rustc_vv=$(cat "$rustc_vv_file")
rustc_release=$(printf '%s\n' "$rustc_vv" | head -n1)
rustc_llvm=$(printf '%s\n' "$rustc_vv" | sed -nE 's/^LLVM version: (.*)/\1/p')
profdata_version=$("$LLVM_PROFDATA" --version 2>&1 | grep -iE 'version' | head -n1 | sed -E 's/^[[:space:]]+//')
rustc_major=${rustc_llvm%%.*}
profdata_major=$(printf '%s\n' "$profdata_version" | grep -oE '[0-9]+' | head -n1 || true)
# The profile format follows LLVM's major version: a toolchain bump (fenix's 1.97 vs the
# host's 1.95) must bring its own llvm-profdata (rustup/fenix component llvm-tools).
if [ -n "$rustc_major" ] && [ -n "$profdata_major" ] && [ "$rustc_major" != "$profdata_major" ]; then
  die "LLVM mismatch: $rustc_release uses LLVM $rustc_llvm but $LLVM_PROFDATA is LLVM $profdata_major; use the llvm-profdata of rustc's own toolchain (component llvm-tools)"
fi

# rustc only WARNS about an unreadable profile and then builds without it: a silent fallback
# to a plain build, refused here.
# shellcheck disable=SC2154 # set by common.sh
if grep -qiE "$pgo_unusable_re" "$log"; then
  grep -iE "$pgo_unusable_re" "$log" | head -n 5 >&2
  if grep -qiE 'unsupported instrumentation profile format' "$log"; then
    die "rustc could not use the profile: it was written by an LLVM other than $rustc_release's (LLVM $rustc_llvm); retrain with this toolchain (rustc falls back to a plain build)"
  fi
  die "rustc could not use the profile (it falls back to a plain build)"
fi
mismatch=$(grep -c 'hash mismatch' "$log" || true)
missing=$(grep -c 'no profile data available' "$log" || true)
if [ "$mismatch" -gt 0 ]; then
  grep 'hash mismatch' "$log" | head -n 20 >&2
  die "$mismatch 'hash mismatch' warning(s): the profile was trained on a different source"
fi
if [ "$missing" -gt "${MAX_MISSING_PROFILES:-0}" ]; then
  grep 'no profile data available' "$log" | head -n 20 >&2
  die "$missing function(s) in workspace crates without profile data (allowed: ${MAX_MISSING_PROFILES:-0}, maxMissingProfiles): code the training never ran, or functions that $rustc_release emits and the training build did not"
fi

show=$("$LLVM_PROFDATA" show "$profile") || die "llvm-profdata cannot read $profile"
total_functions=$(printf '%s\n' "$show" | sed -nE 's/^Total functions: ([0-9]+).*/\1/p' | head -n1)
[ "${total_functions:-0}" -gt 0 ] || die "profile reports no functions"
# The profile stage's manifest: raw_files/raw_bytes are the .profraw files, merged_sha256 the profile.
profraw_count=$(json_num raw_files "$manifest")
profraw_bytes=$(json_num raw_bytes "$manifest")
[ "${profraw_count:-0}" -gt 0 ] || die "manifest records no .profraw files: $manifest"
[ "$(json_strval merged_sha256 "$manifest")" = "$(sha256_of "$profile")" ] ||
  die "manifest's merged_sha256 is not the profile's: $manifest"

build_fields=()
if [ -n "${C_PROOF:-}" ]; then
  c_fields=$(STAGE_COMMON="$STAGE_COMMON" LLVM_PROFDATA="$LLVM_PROFDATA" PROFILE="$profile" \
    C_OBJECTS_DIR="$PGO_BUILD/share/$BIN_NAME/pgo-build" \
    RUSTC_LLVM="$rustc_llvm" STAGE_NAME="$STAGE_NAME" bash "$C_PROOF") || exit 1
  while IFS=$'\t' read -r key value; do
    build_fields+=("$key" "$value")
  done <<<"$c_fields"
  build_fields+=(c_flags "$(json_str "$(scrub_store "${C_PGO_FLAGS:-}")")")
fi
[ -z "${CARGO_ARGS:-}" ] || build_fields+=(cargo_args "$(json_str "$(scrub_store "$CARGO_ARGS")")")
[ -z "${PROFILE_RELEASE:-}" ] || build_fields+=(profile_release "$PROFILE_RELEASE")
[ -z "${SYMBOL_MANGLING:-}" ] || build_fields+=(symbol_mangling "$(json_str "$SYMBOL_MANGLING")")
[ -z "${RUSTFLAGS_APPLIED:-}" ] || build_fields+=(rustflags_applied "$(scrub_store "$RUSTFLAGS_APPLIED")")
proof="$OUT_DIR/share/$BIN_NAME/pgo-proof.json"
mkdir -p "$OUT_DIR/bin" "$(dirname "$proof")"
json_object "$proof.tmp" \
  stage "$(json_str "$BIN_NAME-pgo")" \
  profile_sha256 "$(json_str "$(sha256_of "$profile")")" \
  profile_bytes "$(bytes_of "$profile")" \
  profile_total_functions "$total_functions" \
  profraw_count "$profraw_count" \
  profraw_bytes "${profraw_bytes:-0}" \
  manifest_sha256 "$(json_str "$(sha256_of "$manifest")")" \
  hash_mismatch_warnings "$mismatch" \
  missing_profile_warnings "$missing" \
  rustc "$(json_str "$rustc_release")" \
  rustc_llvm "$(json_str "$rustc_llvm")" \
  llvm_profdata "$(json_str "$profdata_version")" \
  target "$(json_str "${TARGET:-}")" \
  rustflags "$(json_str "$(scrub_store "$PGO_RUSTFLAGS")")" \
  "${build_fields[@]}"
cp "$built" "$OUT_DIR/bin/$BIN_NAME.tmp"
mv "$proof.tmp" "$proof"
mv "$OUT_DIR/bin/$BIN_NAME.tmp" "$OUT_DIR/bin/$BIN_NAME"
note "gated binary: $OUT_DIR/bin/$BIN_NAME, proof: $proof"
stage_done
