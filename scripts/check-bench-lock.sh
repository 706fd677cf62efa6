#!/usr/bin/env bash
# bench/ is a cargo workspace of its own, but the host chain vendors crates once, from the
# root Cargo.lock (scripts/chain-host-env.sh), and builds bench from that vendor directory:
# a crate version that only bench/Cargo.lock names fails there, late, in the bench stage.
# This says so at lint time, with the fix.
#
# Usage: scripts/check-bench-lock.sh [ROOT_LOCK BENCH_LOCK]   (default: the repository's)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
root_lock=${1:-$repo/Cargo.lock}
bench_lock=${2:-$repo/bench/Cargo.lock}
python3 - "$root_lock" "$bench_lock" <<'PY'
import sys, tomllib

def registry(path):
    with open(path, "rb") as f:
        packages = tomllib.load(f).get("package", [])
    # Path crates (the workspace's own) have no source and are not vendored.
    return {(p["name"], p["version"]) for p in packages if "source" in p}

root, bench = registry(sys.argv[1]), registry(sys.argv[2])
missing = sorted(bench - root)
if missing:
    for name, version in missing:
        have = sorted(v for n, v in root if n == name)
        fix = (f"cargo update --manifest-path bench/Cargo.toml -p {name}@{version} --precise {have[-1]}"
               if have else f"add {name} to the root workspace's lock first")
        print(f"bench/Cargo.lock: {name} {version} is not in Cargo.lock "
              f"(root has {', '.join(have) or 'none'}); {fix}", file=sys.stderr)
    sys.exit(1)
PY
