#!/usr/bin/env bash
# Whether the fuzz targets catch what they claim to: each planted bug
# (gateway/src/fuzz/planted/*.patch, a patch whose first line names the target that must
# catch it) is applied to a scratch copy of a tree, the gateway's unit tests are built there,
# and the target runs RUNS times at SECS seconds each with the seeds 1..RUNS, JOBS at once. A
# run catches the bug when the target fails. Prints, per bug, the catches and the cases each catch took
# (cases do not depend on the machine's speed; seconds do: compare them with the cases a
# target runs in CI, which `cargo test` prints as `fuzz NAME: N cases in S s`).
# The tree itself is never patched: the scratch copy is, and it is removed at the end.
# docs/testing.md ("Fuzz targets") reports the last run.
#
# Usage: scripts/fuzz-planted.sh [PATCH...]   (default: every planted bug)
# Environment:
#   RUNS        runs per bug (default 10)
#   SECS        GATEWAY_FUZZ_SECS of each run (default 2, what `cargo test` uses)
#   JOBS        runs at once (default 2: `cargo test` on CI's two cores runs two tests at once)
#   REV         a commit whose targets run instead of this checkout's (the planted bugs are
#               this checkout's): e.g. the targets before a change to them
#   SCRATCH     where the copy goes (default a new directory under /tmp; a fixed path keeps
#               the gateway crate's build between runs of this script)
#   CARGO_TARGET_DIR  as cargo reads it (a shared one rebuilds only the workspace's crates)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
rev=${REV:-}
runs=${RUNS:-10}
secs=${SECS:-2}
jobs=${JOBS:-2}
if [ $# -eq 0 ]; then
  set -- "$repo"/gateway/src/fuzz/planted/*.patch
fi
scratch=${SCRATCH:-}
made=
if [ -z "$scratch" ]; then
  scratch=$(mktemp -d /tmp/fuzz-planted.XXXXXX)
  made=1
fi
copy="$scratch/tree"
cleanup() {
  if [ -n "$made" ]; then rm -rf "$scratch"; else rm -rf "$copy"; fi
}
trap cleanup EXIT

# A fresh copy per bug: REV's tree, or the files git sees here (tracked, and untracked ones
# not ignored).
fresh() {
  rm -rf "$copy"
  mkdir -p "$copy"
  if [ -n "$rev" ]; then
    git -C "$repo" archive "$rev" | tar -xf - -C "$copy"
  else
    (cd "$repo" && git ls-files -z -c -o --exclude-standard | tar --null -T - -cf -) | tar -xf - -C "$copy"
  fi
}

printf '%-28s %-46s %7s  %-30s %s\n' bug target caught "cases to catch (min/med/max)" \
  "cases in a run that missed (median)"
for patch in "$@"; do
  patch=$(realpath "$patch")
  name=$(basename "$patch" .patch)
  target=$(sed -n '1s/^target: *//p' "$patch")
  [ -n "$target" ] || { echo "$patch: the first line must be 'target: TEST'" >&2; exit 1; }
  fresh
  (cd "$copy" && git apply "$patch") || { echo "$name: does not apply to ${rev:-this checkout}" >&2; exit 1; }
  bin=$(cd "$copy" && cargo test -q -p gateway --lib --no-run --message-format=json 2>/dev/null \
    | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
  [ -x "$bin" ] || { echo "$name: the unit tests do not build" >&2; exit 1; }
  caught=0
  cases=()
  missed=()
  # JOBS runs at once, as `cargo test` runs JOBS tests at once on CI's cores: the cases a
  # run gets in SECS are then about what the target gets there.
  for seed in $(seq 1 "$runs"); do
    (
      cd "$copy/gateway"
      rc=0
      GATEWAY_FUZZ_SEED=$seed GATEWAY_FUZZ_SECS=$secs "$bin" --exact "$target" \
        --test-threads=1 >"$copy/out.$seed" 2>&1 || rc=$?
      echo "$rc" >"$copy/rc.$seed"
    ) &
    if [ $((seed % jobs)) -eq 0 ]; then wait; fi
  done
  wait
  for seed in $(seq 1 "$runs"); do
    out=$(cat "$copy/out.$seed")
    if [ "$(cat "$copy/rc.$seed")" -eq 0 ]; then
      # A run that passed: the target's test must have run (the name is right).
      n=$(sed -n 's/.*fuzz [a-z_]*: \([0-9]*\) cases in .*/\1/p' <<<"$out" | head -n 1)
      [ -n "$n" ] || { echo "$name: $target ran no fuzz target" >&2; exit 1; }
      missed+=("$n")
    elif grep -q 'of CPU$' <<<"$out"; then
      # A slow case is the time bound's failure, not this bug's.
      echo "$name: seed $seed failed on the time bound, not the bug:" >&2
      grep -m1 'of CPU$' <<<"$out" >&2
      exit 1
    else
      # Only a property's failure is a catch (the runner names the cases it took); a panic
      # before any case (a missing corpus, say) is not.
      n=$(sed -n 's/^after \([0-9]*\) cases; replay.*/\1/p' <<<"$out" | head -n 1)
      [ -n "$n" ] || { echo "$name: seed $seed failed before any case:" >&2; tail -n 20 <<<"$out" >&2; exit 1; }
      caught=$((caught + 1))
      cases+=("$n")
    fi
  done
  spread=-
  if [ "$caught" -gt 0 ]; then
    mapfile -t sorted < <(printf '%s\n' "${cases[@]}" | sort -n)
    mean=$(printf '%s\n' "${cases[@]}" | awk '{ t += $1 } END { printf "%.0f", t / NR }')
    spread="${sorted[0]}/${sorted[$(((caught - 1) / 2))]}/${sorted[$((caught - 1))]}, mean $mean"
  fi
  ran=-
  if [ "${#missed[@]}" -gt 0 ]; then
    mapfile -t sorted < <(printf '%s\n' "${missed[@]}" | sort -n)
    ran=${sorted[$(((${#missed[@]} - 1) / 2))]}
  fi
  printf '%-28s %-46s %4s/%-2s  %-30s %s\n' "$name" "$target" "$caught" "$runs" "$spread" "$ran"
done
