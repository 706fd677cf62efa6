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
#     BOLT nothing: the instrumented binary names its own output file), and TRAINING_DATA, the
#     store path of the chain's `trainingData`, when given;
#   - under a time limit of WORKLOAD_TIMEOUT seconds (default 3600): a hung workload fails
#     the build instead of holding the builder forever.
# Each process of the binary that exits normally (return from main or exit(); not a signal
# death, not _exit) writes one profile file; the stage requires MIN_PROFILES of them, each of
# at least the kind's size floor.
# In Nix the workload runs in the build sandbox: no network, only the PATH the builder gives.

# run_workload WORKLOAD BIN DIR [VAR=VALUE ...]: runs `WORKLOAD BIN` in DIR (created, empty)
# with the extra variables; dies naming the cause unless it exits 0.
run_workload() {
  local workload=$1 bin=$2 dir=$3 limit=${WORKLOAD_TIMEOUT:-3600} status=0 again
  shift 3
  mkdir -p "$dir/cwd" "$dir/tmp"
  note "workload: $(scrub_store "$workload") $(basename "$bin")"
  # The chain's trainingData, named to the workload by TRAINING_DATA (chain.nix).
  if [ -n "${TRAINING_DATA:-}" ]; then
    [ -e "$TRAINING_DATA" ] || die "TRAINING_DATA names $TRAINING_DATA, which does not exist"
    note "training data: $(scrub_store "$TRAINING_DATA")"
  fi
  (cd "$dir/cwd" && exec env TMPDIR="$dir/tmp" "$@" timeout --kill-after=30 "$limit" \
    "$workload" "$bin") </dev/null || status=$?
  case $status in
    0) ;;
    124 | 137) die "the workload did not finish within ${limit} s (WORKLOAD_TIMEOUT)" ;;
    *)
      diagnose_workload "$workload" "$bin" "$dir/diagnosis" "$@"
      again="all $diag_processes process(es) of $(basename "$bin") exited 0: its own checks failed"
      [ "$diag_processes" -gt 0 ] || again="it ran no process of $(basename "$bin")"
      die "the workload failed (exit $status): it exits 0 only when it exercised the binary; run again, $again"
      ;;
  esac
}

# diagnose_workload WORKLOAD BIN DIR [VAR=VALUE ...]: after a failed run, runs the workload once
# more with BIN behind a recorder that keeps each process's exit status and stderr (the
# workload may discard them), and dies naming the binary's own cause when a process of it
# failed: an instrumented binary can die in its runtime (a BOLT assertion, an LLVM profile
# error), which is not the workload's fault. Returns when every process exited 0, with
# diag_processes set to their count.
diagnose_workload() {
  local workload=$1 bin=$2 dir=$3 name f st sig shown=0 failed=0 cause="" msg=""
  shift 3
  name=$(basename "$bin")
  mkdir -p "$dir/bin" "$dir/procs" "$dir/cwd" "$dir/tmp"
  # stderr into a file and replayed after the exit, synchronously: a workload that reads it
  # finds it whole. stdin passed on explicitly (a background job's is /dev/null otherwise);
  # TERM and INT forwarded (servers are stopped by signal).
  {
    printf '#!%s\n' "$BASH"
    printf 'procs=%q bin=%q\n' "$dir/procs" "$bin"
    cat <<'EOF'
rec=$(mktemp "$procs/XXXXXX")
printf '%s\n' "$*" >"$rec.args"
child=""
trap '[ -z "$child" ] || kill -TERM "$child" 2>/dev/null' TERM
trap '[ -z "$child" ] || kill -INT "$child" 2>/dev/null' INT
exec 3<&0
"$bin" "$@" <&3 3<&- 2>"$rec.err" &
child=$!
while :; do
  wait "$child"
  st=$?
  kill -0 "$child" 2>/dev/null || break
done
echo "$st" >"$rec.status"
cat "$rec.err" >&2
exit "$st"
EOF
  } >"$dir/bin/$name"
  chmod +x "$dir/bin/$name"
  note "the workload failed: running it once more, recording each process of $name"
  (cd "$dir/cwd" && exec env TMPDIR="$dir/tmp" "$@" timeout --kill-after=30 \
    "${WORKLOAD_TIMEOUT:-3600}" "$workload" "$dir/bin/$name") </dev/null >"$dir/workload.log" 2>&1 || true
  diag_processes=0
  for f in "$dir"/procs/*.status; do
    [ -e "$f" ] || continue
    diag_processes=$((diag_processes + 1))
    st=$(cat "$f")
    [ "$st" != 0 ] || continue
    failed=$((failed + 1))
    f=${f%.status}
    # The runtimes' own words: BOLT's instrumentation runtime and LLVM's profile runtime.
    if [ -z "$cause" ] && grep -qE 'Assertion failed|BOLT-ERROR|LLVM Profile Error' "$f.err"; then
      cause=$(grep -m1 -E 'Assertion failed|BOLT-ERROR|LLVM Profile Error' "$f.err")
    fi
    [ -s "$f.err" ] || [ "$st" -gt 128 ] || continue
    if [ "$shown" -lt 3 ]; then
      sig=""
      [ "$st" -le 128 ] || sig=" (signal $((st - 128)))"
      msg="$msg
    $name $(head -c 200 "$f.args" | head -n1) -> exit $st$sig:
$(tail -n 3 "$f.err" | sed 's/^/      /')"
      shown=$((shown + 1))
    fi
  done
  [ "$failed" -gt 0 ] || return 0
  case $cause in
    *'function name too large'*)
      die "the instrumented binary failed, not the workload: BOLT's instrumentation runtime aborted ($cause): a symbol is longer than it can write; build with symbolMangling = \"v0\" (the default).$msg" ;;
    ?*)
      die "the instrumented binary failed, not the workload: $cause$msg" ;;
  esac
  [ -n "$msg" ] || msg=" (none wrote to stderr)"
  die "the workload failed; in a second run, recorded, $failed process(es) of $name exited non-zero (a workload may expect some to), these with stderr or a signal:$msg"
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

# read_parts EXT BIN_KEY BYTES_KEY: the merge mode of pgo-profile.sh and bolt-profile.sh.
# PARTS is "NAME=DIR ...", each DIR that stage's own output for one part of a fanned-out
# workload (chain.nix `workloads`): <BIN_NAME>.EXT and its manifest.json. Each part must be
# whole (its file's sha256 is its manifest's merged_sha256) and all must come from one binary
# (the manifests' BIN_KEY agree): else it dies naming the part. Sets what the stage's manifest
# says of its inputs: inputs (the parts' files), raw_count and raw_bytes (the sums of the
# parts' raw_files and raw_bytes), part_fields (part_<NAME>_sha256, with parts and
# part_names), workload_name (the parts' workloads), bin_sha, binary_llvm (PGO only),
# min_profiles (the sum of the parts' floors) and min_bytes (BYTES_KEY, the largest).
read_parts() {
  local ext=$1 bin_key=$2 bytes_key=$3 entry name dir file manifest sha n names=""
  raw_count=0 raw_bytes=0 workload_name="" bin_sha="" binary_llvm="" min_profiles=0 min_bytes=0
  for entry in $PARTS; do
    name=${entry%%=*}
    dir=${entry#*=}
    { [ -n "$name" ] && [ "$dir" != "$entry" ]; } || die "PARTS entry '$entry' is not NAME=DIR"
    file="$dir/$BIN_NAME.$ext"
    manifest="$dir/manifest.json"
    nonempty "$file" "part $name's profile"
    nonempty "$manifest" "part $name's manifest"
    sha=$(sha256_of "$file")
    [ "$(json_strval merged_sha256 "$manifest")" = "$sha" ] ||
      die "part $name: its $BIN_NAME.$ext is not the one its manifest names (merged_sha256)"
    if [ -z "$bin_sha" ]; then
      bin_sha=$(json_strval "$bin_key" "$manifest")
      [ -n "$bin_sha" ] || die "part $name: its manifest names no $bin_key"
    elif [ "$(json_strval "$bin_key" "$manifest")" != "$bin_sha" ]; then
      die "part $name was trained on another binary than the other parts ($bin_key differs)"
    fi
    # PGO manifests only (a BOLT manifest has none: empty).
    [ -n "$binary_llvm" ] || binary_llvm=$(json_strval binary_llvm "$manifest" || true)
    n=$(json_num raw_files "$manifest")
    [ "${n:-0}" -gt 0 ] || die "part $name: its manifest records no raw files"
    raw_count=$((raw_count + n))
    raw_bytes=$((raw_bytes + $(json_num raw_bytes "$manifest")))
    min_profiles=$((min_profiles + $(json_num min_profiles "$manifest")))
    n=$(json_num "$bytes_key" "$manifest")
    [ "$n" -le "$min_bytes" ] || min_bytes=$n
    workload_name="${workload_name:+$workload_name }$(json_strval workload "$manifest")"
    names="${names:+$names }$name"
    inputs+=("$file")
    part_fields+=("part_${name}_sha256" "$(json_str "$sha")")
  done
  [ "${#inputs[@]}" -gt 0 ] || die "PARTS names no part"
  part_fields=(parts "${#inputs[@]}" part_names "$(json_str "$names")" "${part_fields[@]}")
}
