#!/usr/bin/env bash
# The real training stages end to end, with host tools (rustc's LLVM 22 = Debian llvm-22):
#   gateway instrumented -> trainer profile -> PGO build (no hash mismatch, no missing function)
#   -> BOLT instrument -> trainer bolt-profile -> llvm-bolt -data (profile used)
# plus the fail-closed refusal of an llvm-profdata of another LLVM major.
#
# Usage (from anywhere): trainer/tests/stage-e2e.sh
# Env: STAGE_E2E_DIR (default <repo>/target/stage-e2e; release builds go there, never into
#      target/release), LLVM_PROFDATA, LLVM_BOLT, MERGE_FDATA, BOLT_RT (default: Debian's
#      llvm-22 paths for rustc's LLVM major), CARGO (default cargo), PGO_GENERATE_DIR
#      (the -Cprofile-generate dir; LLVM_PROFILE_FILE overrides it at run time anyway).
# Exits non-zero on the first failed step, naming it.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
CARGO=${CARGO:-cargo}
TD=${STAGE_E2E_DIR:-$ROOT/target/stage-e2e}
TRIPLE=$(rustc -vV | sed -n 's/^host: //p')
LLVM_VERSION=$(rustc -vV | sed -n 's/^LLVM version: //p')
MAJOR=${LLVM_VERSION%%.*}
LLVM_PROFDATA=${LLVM_PROFDATA:-/usr/bin/llvm-profdata-$MAJOR}
LLVM_BOLT=${LLVM_BOLT:-/usr/bin/llvm-bolt-$MAJOR}
MERGE_FDATA=${MERGE_FDATA:-/usr/bin/merge-fdata-$MAJOR}
BOLT_RT=${BOLT_RT:-/usr/lib/llvm-$MAJOR/lib/libbolt_rt_instr.a}

step() { echo "== stage-e2e: $* ($(date -u +%T))"; }
die() { echo "stage-e2e: FAIL: $*" >&2; exit 1; }
for t in "$LLVM_PROFDATA" "$LLVM_BOLT" "$MERGE_FDATA" "$BOLT_RT"; do
  [ -e "$t" ] || die "missing $t (apt-get install llvm-$MAJOR bolt-$MAJOR libbolt-$MAJOR-dev)"
done
command -v python3 >/dev/null || die "python3 is needed to check the manifests"
mkdir -p "$TD/bin"
BIN=$TD/bin

# The manifest checks: one profile file per training shape, each over the floor, the
# merged file's size and sha256 as recorded, functions > 0.
check_manifest() { # <out dir> <merged file name>
  python3 - "$1" "$2" "$ROOT/shapes" <<'PY'
import hashlib, json, os, sys, glob, tomllib
out, merged, shapes = sys.argv[1:4]
m = json.load(open(os.path.join(out, "manifest.json")))
training = sorted(
    t["name"] for t in (tomllib.load(open(f, "rb")) for f in glob.glob(os.path.join(shapes, "*.toml")))
    if not t.get("holdout", False))
names = [s["name"] for s in m["shapes"]]
assert sorted(names) == training, (names, training)
assert all(s["files"] == 1 for s in m["shapes"]), m["shapes"]
assert m["raw_files"] == len(training), m["raw_files"]
floor = m["floors"]["min_shape_bytes"]
assert all(s["bytes"] >= floor for s in m["shapes"]), (floor, m["shapes"])
assert all(s["ok"] == s["requests"] for s in m["shapes"])
path = os.path.join(out, merged)
data = open(path, "rb").read()
assert len(data) == m["merged_bytes"] >= m["floors"]["min_merged_bytes"]
assert hashlib.sha256(data).hexdigest() == m["merged_sha256"]
assert m["functions"] > 0
assert sorted(os.listdir(out)) == sorted([merged, "manifest.json"]), os.listdir(out)
print(f"manifest ok: {m['kind']}: {len(names)} shapes, {m['raw_files']} files, "
      f"{m['raw_bytes']} raw bytes, {merged} {m['merged_bytes']} bytes, "
      f"{m['functions']} functions, tool {m['tool']['tool']} {m['tool']['tool_version']}, "
      f"binary LLVM {m['tool']['binary_llvm']}, {m['seconds']:.1f} s")
for s in m["shapes"]:
    print(f"  {s['name']:<30} {s['requests']:>5} req {s['rate']:>8.0f} req/s {s['bytes']:>9} bytes")
PY
}

step "build trainer and the instrumented gateway ($TRIPLE)"
"$CARGO" build -q -p trainer
TRAINER=$ROOT/target/debug/trainer
[ -n "${CARGO_TARGET_DIR:-}" ] && TRAINER=$CARGO_TARGET_DIR/debug/trainer
# --target keeps RUSTFLAGS off build scripts and proc macros (TOOLCHAIN.md).
RUSTFLAGS="-Cprofile-generate=${PGO_GENERATE_DIR:-$TD/pgo-default}" \
  "$CARGO" build -q --release --target "$TRIPLE" -p gateway --target-dir "$TD/instrumented"
cp "$TD/instrumented/$TRIPLE/release/gateway" "$BIN/gateway-instrumented"

step "fail closed: llvm-profdata of another LLVM major is refused"
OTHER=/usr/bin/llvm-profdata   # Debian's default is LLVM 14 here
if [ -x "$OTHER" ] && ! "$OTHER" merge --version | grep -q "LLVM version $MAJOR\."; then
  rm -rf "$TD/profile-wrong-major"
  if "$TRAINER" profile --gateway-bin "$BIN/gateway-instrumented" --llvm-profdata "$OTHER" \
      --shapes shapes --out "$TD/profile-wrong-major" 2>"$TD/wrong-major.log"; then
    die "llvm-profdata $("$OTHER" merge --version | grep -o 'version [0-9.]*') was accepted"
  fi
  grep -q "major is $MAJOR" "$TD/wrong-major.log" || die "wrong-major refusal: $(cat "$TD/wrong-major.log")"
  [ ! -e "$TD/profile-wrong-major" ] || die "a refused run left $TD/profile-wrong-major"
  echo "refused: $(tail -1 "$TD/wrong-major.log")"
else
  echo "skipped: no llvm-profdata of another major at $OTHER"
fi

step "trainer profile (PGO training)"
rm -rf "$TD/profile"
env -u HOME "$TRAINER" profile --gateway-bin "$BIN/gateway-instrumented" --llvm-profdata "$LLVM_PROFDATA" \
  --expect-llvm-major "$MAJOR" --shapes shapes --out "$TD/profile"
check_manifest "$TD/profile" gateway.profdata
PROFILE_SHA=$(sha256sum "$TD/profile/gateway.profdata" | cut -c1-16)
# Cargo fingerprints RUSTFLAGS, not the profile's content: name the profile by its hash.
PROFDATA=$TD/merged-$PROFILE_SHA.profdata
cp "$TD/profile/gateway.profdata" "$PROFDATA"

step "PGO build (-Cprofile-use, --emit-relocs for BOLT)"
RUSTFLAGS="-Cprofile-use=$PROFDATA -Cllvm-args=-pgo-warn-missing-function -Clink-args=-Wl,--emit-relocs" \
  "$CARGO" build --release --target "$TRIPLE" -p gateway --target-dir "$TD/pgo" 2>"$TD/pgo-build.log" \
  || { tail -30 "$TD/pgo-build.log"; die "PGO build failed"; }
if grep -q "hash mismatch" "$TD/pgo-build.log"; then
  grep -B2 -A3 "hash mismatch" "$TD/pgo-build.log" | head -40
  die "PGO build: profile hash mismatch (stale profile)"
fi
# Functions that ran zero times still have records; a missing one means a stale profile.
if grep -q "no profile data available" "$TD/pgo-build.log"; then
  grep "no profile data available" "$TD/pgo-build.log" | head -20
  die "PGO build: functions missing from the profile (stale profile)"
fi
echo "PGO build: no hash mismatch, no function missing from the profile (workspace crates)"
cp "$TD/pgo/$TRIPLE/release/gateway" "$BIN/gateway-pgo"

step "BOLT instrument"
rm -rf "$TD/bolt-fdata"
"$LLVM_BOLT" "$BIN/gateway-pgo" -instrument --runtime-instrumentation-lib="$BOLT_RT" \
  -instrumentation-file="$TD/bolt-fdata/prof" -instrumentation-file-append-pid \
  -o "$BIN/gateway-bolt-instrumented" >"$TD/bolt-instrument.log" 2>&1 \
  || { tail -20 "$TD/bolt-instrument.log"; die "llvm-bolt -instrument failed"; }

step "trainer bolt-profile (BOLT training; the .fdata prefix is read from .note.bolt_info)"
rm -rf "$TD/bolt-profile"
env -u HOME "$TRAINER" bolt-profile --gateway-bin "$BIN/gateway-bolt-instrumented" \
  --merge-fdata "$MERGE_FDATA" --shapes shapes --out "$TD/bolt-profile"
check_manifest "$TD/bolt-profile" gateway.fdata

step "llvm-bolt -data uses the profile"
"$LLVM_BOLT" "$BIN/gateway-pgo" -o "$BIN/gateway-pgo-bolt" -data="$TD/bolt-profile/gateway.fdata" \
  -reorder-blocks=ext-tsp -reorder-functions=cdsort -split-functions -split-all-cold -split-eh \
  -icf=all -dyno-stats >"$TD/bolt-optimize.log" 2>&1 \
  || { tail -20 "$TD/bolt-optimize.log"; die "llvm-bolt -data failed"; }
grep -q "enabling relocation mode" "$TD/bolt-optimize.log" || die "BOLT did not enable relocation mode"
PROFILED=$(sed -n 's/^BOLT-INFO: \([0-9]*\) out of [0-9]* functions in the binary.*have non-empty execution profile.*/\1/p' "$TD/bolt-optimize.log" | head -1)
[ "${PROFILED:-0}" -gt 0 ] || die "BOLT found no function with profile: $(grep -i profile "$TD/bolt-optimize.log" | head -5)"
grep "have non-empty execution profile" "$TD/bolt-optimize.log" | head -1

ls -l "$TD/profile" "$TD/bolt-profile"
step "PASS"
