# shellcheck shell=bash
# Stage: the BOLT profile. Instruments the PGO binary with llvm-bolt (no PMU on these VMs, so
# instrumentation, not perf sampling; one .fdata per process), runs the caller's workload (the
# contract: workload.sh) against it, checks the files, merges them with merge-fdata and writes
# <BIN_NAME>.fdata with its manifest. Fail-closed like pgo-profile.sh.
#
# With PARTS set it is the merge of a fanned-out training (chain.nix `workloads`), as in
# pgo-profile.sh: each part this stage's output for one part of the workload, all trained on
# one PGO binary (their pgo_bin_sha256 agree), merged with merge-fdata and checked the same way.
#
# Environment:
#   STAGE_COMMON     path of common.sh
#   STAGE_WORKLOAD   path of workload.sh
#   WORKLOAD         absolute path of the workload executable
#   BIN              the PGO binary, linked with --emit-relocs
#   BIN_NAME         the binary's name: the profile is <BIN_NAME>.fdata
#   LLVM_BOLT        absolute path of llvm-bolt
#   READELF          absolute path of readelf (the symbol length check)
#   BOLT_RT_LIB      absolute path of libbolt_rt_instr.a: llvm-bolt otherwise looks for it next
#                    to its own binary and fails with "library not found" when that is elsewhere
#   MERGE_FDATA      absolute path of merge-fdata
#   MIN_PROFILES     fewest .fdata files the workload must leave (default 1)
#   MIN_FDATA_BYTES  smallest acceptable .fdata (default 64)
#   WORKLOAD_TIMEOUT seconds (default 3600)
#   OUT_DIR          where the fdata and manifest.json go (defaults to $out)
#   PARTS            merge mode: "NAME=DIR ..." (each DIR a part's output); then only
#                    STAGE_COMMON, BIN_NAME, MERGE_FDATA and OUT_DIR are read
set -euo pipefail
# shellcheck source=common.sh
. "$STAGE_COMMON"
# shellcheck source=workload.sh
. "$STAGE_WORKLOAD"
STAGE_NAME=${STAGE_NAME:-bolt-profile}
stage_start

need_exe MERGE_FDATA "${MERGE_FDATA:-}"
need_var BIN_NAME
OUT_DIR=${OUT_DIR:-${out:-}}
need_var OUT_DIR
min_profiles=${MIN_PROFILES:-1}
min_bytes=${MIN_FDATA_BYTES:-64}

# BOLT 22's instrumentation runtime writes each fdata line, `1 FROM OFF 1 TO OFF 0 COUNT`, into
# a stack buffer of BOLT_LINE_BUFFER bytes (bolt/runtime/common.h BufSize = 10240; Debian's
# libbolt_rt_instr.a 22.1.8 compares against 0x27e7 = 10240 - 25). A branch inside a function
# names it twice. Past the buffer the process exits 1, "Assertion failed: buffer overflow,
# function name too large" (llvm/llvm-project#169899), leaving a partial .fdata that
# merge-fdata accepts; a few characters short of that it exits 0 and writes a malformed line
# that llvm-bolt -data rejects later. Measured on nix/tests/fixtures/long-symbols: a branching
# function fails from 5,101 characters. So the limit leaves 100 bytes for the offsets, the
# count, the separators and BOLT's `/N` suffix of local symbols: 5,070. Legacy Rust mangling
# writes whole generic types into symbols (11,415 characters in a JSON query tool, 1,067 in v0).
# Checked on the PGO binary before instrumenting, to name the symbol and the fix instead of
# leaving the workload to fail. BOLT_LINE_BUFFER is set only by tier d, to reach the runtime.
check_symbol_lengths() {
  local longest symbol limit=$(((${BOLT_LINE_BUFFER:-10240} - 100) / 2))
  need_exe READELF "${READELF:-}"
  longest=$("$READELF" -sW "$1" | awk '$4 == "FUNC" && length($8) > n { n = length($8); s = $8 } END { print n + 0, s }')
  symbol=${longest#* }
  [ "${longest%% *}" -le "$limit" ] ||
    die "the PGO binary has a function symbol of ${longest%% *} characters, more than BOLT's" \
      "instrumentation runtime can write ($limit): ${symbol:0:160}...; build with" \
      "symbolMangling = \"v0\" (the default; it shortens generic symbols), or shorten the type behind it"
  note "longest function symbol: ${longest%% *} characters (BOLT's instrumentation limit: $limit)"
  symbol_fields=(longest_function_symbol "${longest%% *}")
}

work=$(mktemp -d "${TMPDIR:-/tmp}/bolt-profile.XXXXXX")
inputs=()
part_fields=()
symbol_fields=()
if [ -n "${PARTS:-}" ]; then
  read_parts fdata pgo_bin_sha256 min_fdata_bytes
else
  need_exe WORKLOAD "${WORKLOAD:-}"
  need_exe BIN "${BIN:-}"
  need_exe LLVM_BOLT "${LLVM_BOLT:-}"
  nonempty "${BOLT_RT_LIB:-/nonexistent}" "BOLT runtime library"
  mkdir -p "$work/pgo" "$work/bin" "$work/fdata"
  # Copy first: the instrumented binary must not name a store path of its input. The workload
  # gets it under the binary's own name (argv[0] and usage texts stay the same).
  cp "$BIN" "$work/pgo/$BIN_NAME"
  chmod u+w "$work/pgo/$BIN_NAME"
  bin_sha=$(sha256_of "$work/pgo/$BIN_NAME")
  workload_name=$(scrub_store "$WORKLOAD")
  check_symbol_lengths "$work/pgo/$BIN_NAME"
  # The runtime writes <prefix>.<pid>.fdata at a normal exit; it does not create the directory.
  # exec -a: llvm-bolt records argv[0] in .note.bolt_info; keep store paths out of it.
  (cd "$work" && exec -a llvm-bolt "$LLVM_BOLT" "pgo/$BIN_NAME" -o "bin/$BIN_NAME" \
    -instrument \
    --runtime-instrumentation-lib="$BOLT_RT_LIB" \
    -instrumentation-file="$work/fdata/$BIN_NAME" \
    -instrumentation-file-append-pid) >"$work/instrument.log" 2>&1 || {
    cat "$work/instrument.log" >&2
    die "llvm-bolt -instrument failed"
  }
  tail -n 3 "$work/instrument.log" >&2

  run_workload "$WORKLOAD" "$work/bin/$BIN_NAME" "$work/run"

  shopt -s nullglob
  inputs=("$work/fdata/$BIN_NAME".*.fdata)
  shopt -u nullglob
  raw_bytes=$(check_profile_files .fdata "$min_profiles" "$min_bytes" "${inputs[@]}")
  raw_count=${#inputs[@]}
fi

mkdir -p "$work/out"
merged="$work/out/$BIN_NAME.fdata"
"$MERGE_FDATA" "${inputs[@]}" -o "$merged" >"$work/merge.log" 2>&1 || {
  cat "$work/merge.log" >&2
  die "merge-fdata failed"
}
nonempty "$merged" "merged fdata"
# Branch lines are `<is_sym> <from> <off> <is_sym> <to> <off> <mispred> <count>`: a function
# counts where its is_sym is 1 (0 marks an address outside any known function).
functions=$(awk '$1 == "1" { f[$2] = 1 } $4 == "1" { f[$5] = 1 } END { n = 0; for (k in f) n++; print n }' "$merged")
[ "$functions" -gt 0 ] || die "the merged fdata names no function"

# The fdata only fits the binary it was trained on (BOLT matches functions by address and
# layout): pgo_bin_sha256 records that binary, and bolt-optimize.sh requires it to equal its
# input's, so a published or cached fdata cannot be applied to another PGO build unnoticed.
json_object "$work/out/manifest.json" \
  kind '"bolt"' \
  pgo_bin_sha256 "$(json_str "$bin_sha")" \
  binary "$(json_str "$BIN_NAME")" \
  workload "$(json_str "$workload_name")" \
  tool '"merge-fdata"' \
  min_profiles "$min_profiles" \
  min_fdata_bytes "$min_bytes" \
  raw_files "$raw_count" \
  raw_bytes "$raw_bytes" \
  merged_file "$(json_str "$BIN_NAME.fdata")" \
  merged_bytes "$(bytes_of "$merged")" \
  merged_sha256 "$(json_str "$(sha256_of "$merged")")" \
  functions "$functions" \
  "${symbol_fields[@]}" \
  "${part_fields[@]}"
note "fdata: $raw_count files, $raw_bytes bytes, merged $(bytes_of "$merged") bytes, $functions functions"

mkdir -p "$OUT_DIR"
mv "$merged" "$work/out/manifest.json" "$OUT_DIR/"
rm -rf "$work"
stage_done
