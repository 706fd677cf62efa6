# shellcheck shell=bash
# The workload contract, shared by pgo-profile.sh and bolt-profile.sh (sourced after
# common.sh). The caller of the chain supplies only the workload; collecting, checking and
# merging the profiles is the stages' job.
#
# A workload is an executable that receives the binary to exercise as its only argument ($1)
# and exits 0 when it exercised it, and only then (every check it makes passed). The stage
# runs it:
#   - in a fresh, empty working directory, stdin from /dev/null, TMPDIR its own;
#   - with the stage's environment plus the profile variable (LLVM_PROFILE_FILE for PGO; for
#     BOLT nothing: the instrumented binary names its own output file);
#   - under a time limit of WORKLOAD_TIMEOUT seconds (default 3600): a hung workload fails
#     the build instead of holding the builder forever.
# Each process of the binary that exits normally (return from main or exit(); not a signal
# death, not _exit) writes one profile file; the stage requires MIN_PROFILES of them, each of
# at least the kind's size floor.
# In Nix the workload runs in the build sandbox: no network, only the PATH the builder gives.

# run_workload WORKLOAD BIN DIR [VAR=VALUE ...]: runs `WORKLOAD BIN` in DIR (created, empty)
# with the extra variables; dies naming the cause unless it exits 0.
run_workload() {
  local workload=$1 bin=$2 dir=$3 limit=${WORKLOAD_TIMEOUT:-3600} status=0
  shift 3
  mkdir -p "$dir/cwd" "$dir/tmp"
  note "workload: $(scrub_store "$workload") $(basename "$bin")"
  (cd "$dir/cwd" && exec env TMPDIR="$dir/tmp" "$@" timeout --kill-after=30 "$limit" \
    "$workload" "$bin") </dev/null || status=$?
  case $status in
    0) ;;
    124 | 137) die "the workload did not finish within ${limit} s (WORKLOAD_TIMEOUT)" ;;
    *) die "the workload failed (exit $status): it exits 0 only when it exercised the binary" ;;
  esac
}

# check_profile_files WHAT MIN_COUNT MIN_BYTES FILE...: at least MIN_COUNT files, each of
# MIN_BYTES or more (a smaller one is truncated or not this binary's). Prints the total bytes.
check_profile_files() {
  local what=$1 min_count=$2 min_bytes=$3 f size total=0
  shift 3
  [ "$#" -ge "$min_count" ] ||
    die "the workload left $# $what file(s), fewer than the $min_count expected (minProfiles): each process of the binary must exit normally"
  for f in "$@"; do
    size=$(bytes_of "$f")
    [ "$size" -ge "$min_bytes" ] ||
      die "$what file $(basename "$f") is $size bytes, under the floor of $min_bytes: truncated, or written by another binary"
    total=$((total + size))
  done
  printf '%s\n' "$total"
}
