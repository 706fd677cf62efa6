# shellcheck shell=bash
# Stage: the PGO profile. Runs the caller's workload (the contract: workload.sh) against the
# instrumented binary with LLVM_PROFILE_FILE pointing at a fresh directory, one .profraw per
# process; then checks the files, merges them with the pinned llvm-profdata, checks the merged
# profile and writes it with its manifest. Fail-closed: OUT_DIR receives <BIN_NAME>.profdata and
# manifest.json only when every check passed, so a failed run leaves no output (and in Nix no
# store path).
#
# With PARTS set it is the merge of a fanned-out training instead (chain.nix `workloads`):
# no workload runs; each part is this stage's output for one part of the workload, checked
# against its manifest, and the parts' profiles are merged and checked the same way. The
# manifest then sums the parts' .profraw figures and names each part with its profile's sha256.
#
# Environment:
#   STAGE_COMMON       path of common.sh
#   STAGE_WORKLOAD     path of workload.sh
#   WORKLOAD           absolute path of the workload executable
#   BIN                the instrumented binary (-Cprofile-generate)
#   BIN_NAME           the binary's name: the profile is <BIN_NAME>.profdata
#   LLVM_PROFDATA      absolute path of llvm-profdata of rustc's LLVM (never PATH's)
#   READELF            absolute path of readelf: which LLVM linked BIN (its .comment)
#   MIN_PROFILES       fewest .profraw files the workload must leave (default 1)
#   MIN_PROFILE_BYTES  smallest acceptable .profraw (default 1024)
#   WORKLOAD_TIMEOUT   seconds (default 3600)
#   OUT_DIR            where the profile and manifest.json go (defaults to $out)
#   PARTS              merge mode: "NAME=DIR ..." (each DIR a part's output); then only
#                      STAGE_COMMON, BIN_NAME, LLVM_PROFDATA and OUT_DIR are read
set -euo pipefail
# shellcheck source=common.sh
. "$STAGE_COMMON"
# shellcheck source=workload.sh
. "$STAGE_WORKLOAD"
STAGE_NAME=${STAGE_NAME:-pgo-profile}
stage_start

need_exe LLVM_PROFDATA "${LLVM_PROFDATA:-}"
need_var BIN_NAME
OUT_DIR=${OUT_DIR:-${out:-}}
need_var OUT_DIR
min_profiles=${MIN_PROFILES:-1}
min_bytes=${MIN_PROFILE_BYTES:-1024}

profdata_version=$("$LLVM_PROFDATA" --version 2>&1 | grep -oE 'LLVM version [0-9.]+' | head -n1 | sed 's/LLVM version //' || true)
[ -n "$profdata_version" ] || die "$LLVM_PROFDATA prints no LLVM version"
work=$(mktemp -d "${TMPDIR:-/tmp}/pgo-profile.XXXXXX")
# What the merged profile is made of: the inputs to merge and the manifest's fields for them.
inputs=()
part_fields=()
if [ -n "${PARTS:-}" ]; then
  read_parts profdata binary_sha256 min_profile_bytes
else
  need_exe WORKLOAD "${WORKLOAD:-}"
  need_exe BIN "${BIN:-}"
  need_exe READELF "${READELF:-}"
  # The profile format follows LLVM's major version: llvm-profdata must be rustc's. rustc links
  # with its own LLD, which signs .comment "Linker: LLD <version> (/checkout/src/llvm-project
  # ...)"; a binary linked otherwise says nothing and only the PGO build's gate can tell.
  binary_llvm=$("$READELF" -p .comment "$BIN" 2>/dev/null | grep -oE 'Linker: LLD [0-9.]+ \(/checkout/src/llvm-project' |
    head -n1 | grep -oE '[0-9.]+' | head -n1 || true)
  if [ -n "$binary_llvm" ] && [ "${binary_llvm%%.*}" != "${profdata_version%%.*}" ]; then
    die "llvm-profdata is LLVM $profdata_version but $BIN_NAME was built with LLVM $binary_llvm: use the llvm-profdata of rustc's own toolchain (component llvm-tools)"
  fi
  binary_llvm=${binary_llvm:-unknown}
  bin_sha=$(sha256_of "$BIN")
  workload_name=$(scrub_store "$WORKLOAD")

  mkdir -p "$work/raw"
  # %p: one file per process; %m: the binary's signature, so a reused pid merges into its
  # file instead of overwriting it.
  run_workload "$WORKLOAD" "$BIN" "$work/run" LLVM_PROFILE_FILE="$work/raw/$BIN_NAME-%p-%m.profraw"

  shopt -s nullglob
  inputs=("$work/raw"/*.profraw)
  shopt -u nullglob
  raw_bytes=$(check_profile_files .profraw "$min_profiles" "$min_bytes" "${inputs[@]}")
  raw_count=${#inputs[@]}
fi

mkdir -p "$work/out"
merged="$work/out/$BIN_NAME.profdata"
"$LLVM_PROFDATA" merge -o "$merged" "${inputs[@]}" >"$work/merge.log" 2>&1 || {
  cat "$work/merge.log" >&2
  die "llvm-profdata merge failed"
}
nonempty "$merged" "merged profile"
show=$("$LLVM_PROFDATA" show "$merged") || die "llvm-profdata cannot read the merged profile"
functions=$(printf '%s\n' "$show" | sed -nE 's/^Total functions: ([0-9]+).*/\1/p' | head -n1)
[ "${functions:-0}" -gt 0 ] || die "the merged profile reports no functions"
# Total functions counts every instrumented function, run or not; what the workload reached is
# the functions with a non-zero count (--covered: one name per line).
covered=$("$LLVM_PROFDATA" show --covered "$merged") || die "llvm-profdata show --covered failed"
executed=$(printf '%s\n' "$covered" | grep -c . || true)
[ "${executed:-0}" -gt 0 ] || die "the merged profile has no executed function: the workload ran nothing"

# File names and sums only: a store path here would make the profile reference its inputs.
json_object "$work/out/manifest.json" \
  kind '"pgo"' \
  binary "$(json_str "$BIN_NAME")" \
  binary_sha256 "$(json_str "$bin_sha")" \
  binary_llvm "$(json_str "$binary_llvm")" \
  workload "$(json_str "$workload_name")" \
  tool '"llvm-profdata"' \
  tool_version "$(json_str "$profdata_version")" \
  min_profiles "$min_profiles" \
  min_profile_bytes "$min_bytes" \
  raw_files "$raw_count" \
  raw_bytes "$raw_bytes" \
  merged_file "$(json_str "$BIN_NAME.profdata")" \
  merged_bytes "$(bytes_of "$merged")" \
  merged_sha256 "$(json_str "$(sha256_of "$merged")")" \
  functions "$functions" \
  functions_executed "$executed" \
  "${part_fields[@]}"
note "profile: $raw_count .profraw files, $raw_bytes bytes, merged $(bytes_of "$merged") bytes, $executed of $functions functions executed"

mkdir -p "$OUT_DIR"
mv "$merged" "$work/out/manifest.json" "$OUT_DIR/"
rm -rf "$work"
stage_done
