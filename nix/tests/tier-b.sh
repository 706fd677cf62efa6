#!/usr/bin/env bash
# Tier b: evaluation. Debian's nix-bin (Nix 2.8) evaluates the flake with nixpkgs, fenix and
# fenix/rust-analyzer-src overridden by the stub flakes in nix/tests/stubs, and crane by the
# crane stand-in that tier c builds with (nix/host/crane); the real ones cannot be fetched here: `nix flake show`, every package's, check's and devShell's drvPath,
# the apps, lib.mkPgoBoltChain, and the wiring of the stages (flags, target, tool paths).
# Nothing is built. Runs as root without a daemon.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
t0=$(date +%s)
# shellcheck source-path=SCRIPTDIR source=stub-inputs.sh
. "$repo/nix/tests/stub-inputs.sh"
# A git flake sees tracked files only (and never target/): stage new files with `git add`.
flake="git+file://$repo"
fail() {
  echo "tier b: FAIL: $*" >&2
  exit 1
}
errlog=$(mktemp)
trap 'rm -f "$errlog"' EXIT
# nix eval: the value on stdout; the override warnings go to a log shown only on failure.
ev() {
  nix eval "${nixf[@]}" "$@" 2>"$errlog" || {
    cat "$errlog" >&2
    return 1
  }
}

echo "== nix flake show"
nix flake show "${nixf[@]}" "$flake" 2>"$errlog" | sed 's/^/  /' || {
  cat "$errlog" >&2
  fail "nix flake show"
}

for system in x86_64-linux aarch64-linux; do
  echo "== $system: drvPaths"
  for kind in packages checks devShells; do
    ev --json "$flake#$kind.$system" --apply 'builtins.mapAttrs (n: d: d.drvPath)' >/tmp/tier-b-$kind.json ||
      { cat /tmp/tier-b-$kind.json; fail "$kind.$system does not evaluate"; }
    tr ',' '\n' </tmp/tier-b-$kind.json | sed 's/^[{ ]*/  /; s/}$//'
    echo
  done
  for p in gateway gateway-instrumented gateway-profile gateway-pgo-build gateway-pgo gateway-bolt-profile gateway-pgo-bolt trainer bench default; do
    grep -q "\"$p\":\"/nix/store/" /tmp/tier-b-packages.json || fail "packages.$system.$p missing"
  done
  for c in tests clippy fmt pgo-proof closure holdout; do
    grep -q "\"$c\":\"/nix/store/" /tmp/tier-b-checks.json || fail "checks.$system.$c missing"
  done
  ev --json "$flake#apps.$system" --apply 'builtins.mapAttrs (n: a: a.type)' | grep -q '"chain-local":"app"' ||
    fail "apps.$system.chain-local"
done

echo "== hydraJobs (x86_64-linux)"
# Every stage and check as a job <name>.x86_64-linux (checks.<name>.x86_64-linux), each the
# same derivation as the package or check it names: Hydra builds what `nix build` would.
jobsOf='j: let sys = "x86_64-linux"; line = kind: name: job: "${kind} ${name} "
    + builtins.concatStringsSep "," (builtins.attrNames job) + " " + job.${sys}.drvPath;
  in builtins.concatStringsSep "\n" (builtins.attrValues
    (builtins.mapAttrs (line "package") (builtins.removeAttrs j [ "checks" ]))
    ++ builtins.attrValues (builtins.mapAttrs (line "check") j.checks))'
drvsOf='kind: s: builtins.concatStringsSep "\n" (builtins.attrValues
  (builtins.mapAttrs (name: d: "${kind} ${name} ${d.drvPath}") s))'
hydra=$(ev --raw "$flake#hydraJobs" --apply "$jobsOf") || fail "hydraJobs does not evaluate"
want=$(ev --raw "$flake#packages.x86_64-linux" --apply "($drvsOf) \"package\"" &&
  echo && ev --raw "$flake#checks.x86_64-linux" --apply "($drvsOf) \"check\"") ||
  fail "packages or checks do not evaluate"
jobs=0
while read -r kind name systems job; do
  [ "$systems" = x86_64-linux ] || fail "hydraJobs $name is for [$systems], not x86_64-linux"
  grep -qx "$kind $name $job" <<<"$want" || fail "hydraJobs $name is $job, not the $kind's derivation"
  jobs=$((jobs + 1))
done <<<"$hydra"
for j in gateway gateway-instrumented gateway-profile gateway-pgo-build gateway-pgo gateway-bolt-profile gateway-pgo-bolt trainer bench; do
  grep -q "^package $j " <<<"$hydra" || fail "hydraJobs.$j missing"
done
for c in tests clippy fmt pgo-proof closure holdout release; do
  grep -q "^check $c " <<<"$hydra" || fail "hydraJobs.checks.$c missing"
done
echo "  ok: $jobs jobs, each the package's or check's derivation: $(cut -d' ' -f2 <<<"$hydra" | tr '\n' ' ')"

echo "== stage wiring (x86_64-linux)"
# One evaluation for all values (separate ones could see different sources in a working tree
# that others are editing): NAME=VALUE lines.
# A profile-use build has no RUSTFLAGS attribute: its flags are PGO_RUSTFLAGS='...' in the
# preUnpack hook that resolves them (nix/lib/builder.nix).
wiring=$(ev --raw "$flake#packages.x86_64-linux" --apply 'p: let
  oneLine = builtins.replaceStrings ["\n"] [" "];
  q = builtins.fromJSON "\"\\u0027\"";
  flagsOf = d: let m = builtins.match (".*PGO_RUSTFLAGS=" + q + "([^" + q + "]*)" + q + ".*")
      (oneLine (d.preUnpack or ""));
    in if m == null then "<none>" else builtins.head m;
  attrOf = d: d.RUSTFLAGS or "<none>";
in builtins.concatStringsSep "\n" [
  ("profile=" + p.gateway-profile.outPath)
  ("instrumented=" + p.gateway-instrumented.outPath)
  ("pgo=" + p.gateway-pgo.outPath)
  ("pgoBuild=" + p.gateway-pgo-build.outPath)
  ("gateBuild=" + p.gateway-pgo.PGO_BUILD)
  ("gateProfile=" + p.gateway-pgo.PROFILE_DIR)
  ("gateFlags=" + p.gateway-pgo.PGO_RUSTFLAGS)
  ("gateScript=" + oneLine p.gateway-pgo.buildCommand)
  ("boltProfile=" + p.gateway-bolt-profile.outPath)
  ("instrumentedFlags=" + p.gateway-instrumented.RUSTFLAGS)
  ("instrumentedTarget=" + p.gateway-instrumented.CARGO_BUILD_TARGET)
  ("pgoFlags=" + flagsOf p.gateway-pgo-build)
  ("pgoFlagsAttr=" + attrOf p.gateway-pgo-build)
  ("pgoPreUnpack=" + oneLine (p.gateway-pgo-build.preUnpack or ""))
  ("pgoTarget=" + p.gateway-pgo-build.CARGO_BUILD_TARGET)
  ("pgoPostInstall=" + builtins.replaceStrings ["\n"] [" "] p.gateway-pgo-build.postInstall)
  ("pgoDontStrip=" + (if p.gateway-pgo-build.dontStrip then "true" else "false"))
  ("pgoBuildCommand=" + builtins.replaceStrings ["\n"] [" "] p.gateway-pgo-build.buildPhase)
  ("pgoDepsFlags=" + flagsOf p.gateway-pgo-build.cargoArtifacts)
  ("pgoDepsFlagsAttr=" + attrOf p.gateway-pgo-build.cargoArtifacts)
  ("pgoDepsPreUnpack=" + oneLine (p.gateway-pgo-build.cargoArtifacts.preUnpack or ""))
  ("pgoDepsBuildCommand=" + builtins.replaceStrings ["\n"] [" "] p.gateway-pgo-build.cargoArtifacts.buildPhase)
  ("plainFlags=[" + p.gateway.RUSTFLAGS + "]")
  ("profdata=" + p.gateway-profile.LLVM_PROFDATA)
  ("profileBin=" + p.gateway-profile.BIN)
  ("profileParts=" + toString (builtins.attrNames p.gateway-profile.parts))
  ("boltParts=" + toString (builtins.attrNames p.gateway-bolt-profile.parts))
  ("profilePARTS=" + p.gateway-profile.PARTS)
  ("boltPARTS=" + p.gateway-bolt-profile.PARTS)
  ("partPath=" + p.gateway-profile.parts.chat-nonstream-minimal.outPath)
  ("boltPartPath=" + p.gateway-bolt-profile.parts.chat-nonstream-minimal.outPath)
  ("profileWorkload=" + p.gateway-profile.parts.chat-nonstream-minimal.WORKLOAD)
  ("profileMin=" + p.gateway-profile.parts.chat-nonstream-minimal.MIN_PROFILES)
  ("profilePartBin=" + p.gateway-profile.parts.chat-nonstream-minimal.BIN)
  ("boltWorkload=" + p.gateway-bolt-profile.parts.chat-nonstream-minimal.WORKLOAD)
  ("boltPartBin=" + p.gateway-bolt-profile.parts.chat-nonstream-minimal.BIN)
  ("boltRt=" + p.gateway-bolt-profile.BOLT_RT_LIB)
  ("boltProfileBin=" + p.gateway-bolt-profile.BIN)
  ("boltFlags=" + p.gateway-pgo-bolt.BOLT_FLAGS)
  ("plainCC=" + p.gateway.CC_x86_64_unknown_linux_gnu)
  ("plainCFlags=" + p.gateway.CFLAGS_x86_64_unknown_linux_gnu)
  ("instrumentedCC=" + p.gateway-instrumented.CC_x86_64_unknown_linux_gnu)
  ("instrumentedCFlags=" + p.gateway-instrumented.CFLAGS_x86_64_unknown_linux_gnu)
  ("instrumentedCxxFlags=" + p.gateway-instrumented.CXXFLAGS_x86_64_unknown_linux_gnu)
  ("instrumentedDepsCFlags=" + p.gateway-instrumented.cargoArtifacts.CFLAGS_x86_64_unknown_linux_gnu)
  ("pgoCC=" + p.gateway-pgo-build.CC_x86_64_unknown_linux_gnu)
  ("pgoCxx=" + p.gateway-pgo-build.CXX_x86_64_unknown_linux_gnu)
  ("pgoCFlagsAttr=" + (p.gateway-pgo-build.CFLAGS_x86_64_unknown_linux_gnu or "<none>"))
  ("gateCProof=" + p.gateway-pgo.C_PROOF)
  ("gateCFlags=" + p.gateway-pgo.C_PGO_FLAGS)
  ("fdata=" + p.gateway-pgo-bolt.FDATA)
  ("default=" + p.default.drvPath)
  ("pgoBolt=" + p.gateway-pgo-bolt.drvPath)
]') || fail "the stage wiring does not evaluate"
declare -A w
while IFS='=' read -r k v; do w[$k]=$v; done <<<"$wiring"
expect() {
  case "$2" in
    *"$3"*) echo "  ok: $1 has $3" ;;
    *) fail "$1 = '$2' lacks '$3'" ;;
  esac
}
reject() {
  case "$2" in
    *"$3"*) fail "$1 = '$2' has '$3'" ;;
    *) echo "  ok: $1 has no $3" ;;
  esac
}
expect gateway-instrumented.RUSTFLAGS "${w[instrumentedFlags]}" "-Cprofile-generate="
expect gateway-instrumented.CARGO_BUILD_TARGET "${w[instrumentedTarget]}" "x86_64-unknown-linux-gnu"
# The profile is staged at a fixed path (pgo-use-flags.sh): its store path is never in
# RUSTFLAGS. It is staged and the flags resolved in preUnpack, before any phase that may run
# cargo (issue 18: crane's install hook runs `cargo metadata` with the exported RUSTFLAGS), so
# no RUSTFLAGS attribute carries the token, for the binary and its dependencies alike.
expect gateway-pgo-build.RUSTFLAGS "${w[pgoFlags]}" "-Cprofile-use=@pgoProfile@"
reject gateway-pgo-build.RUSTFLAGS "${w[pgoFlags]}" "/nix/store/"
expect "gateway-pgo-build's RUSTFLAGS attribute" "${w[pgoFlagsAttr]}" "<none>"
expect "gateway-pgo-build deps' RUSTFLAGS attribute" "${w[pgoDepsFlagsAttr]}" "<none>"
expect gateway-pgo-build.preUnpack "${w[pgoPreUnpack]}" "PGO_PROFILE=${w[profile]}/gateway.profdata"
expect gateway-pgo-build.preUnpack "${w[pgoPreUnpack]}" "pgo-use-flags.sh"
expect gateway-pgo-build.preUnpack "${w[pgoPreUnpack]}" "export RUSTFLAGS"
expect gateway-pgo-build.cargoArtifacts.preUnpack "${w[pgoDepsPreUnpack]}" "PGO_PROFILE=${w[profile]}/gateway.profdata"
reject gateway-pgo-build.buildPhase "${w[pgoBuildCommand]}" "PGO_PROFILE="
expect gateway-pgo-build.cargoArtifacts.buildPhase "${w[pgoDepsBuildCommand]}" "cargo-build.sh"
expect gateway-pgo-build.RUSTFLAGS "${w[pgoFlags]}" "-Wl,--emit-relocs"
expect gateway-pgo-build.RUSTFLAGS "${w[pgoFlags]}" "-pgo-warn-missing-function"
# The PGO gate is a stage of its own (gateway-pgo) after the build: the build keeps rustc's PGO
# diagnostics (pgo-diagnostics.sh), given cargo's stderr on its own command line (the
# build-time contract); the gate judges that build, with that profile and those flags.
expect gateway-pgo-build.postInstall "${w[pgoPostInstall]}" "pgo-diagnostics.sh"
reject gateway-pgo-build.postInstall "${w[pgoPostInstall]}" "pgo-gate.sh"
expect gateway-pgo.PGO_BUILD "${w[gateBuild]}" "${w[pgoBuild]}"
expect gateway-pgo.PROFILE_DIR "${w[gateProfile]}" "${w[profile]}"
expect gateway-pgo.PGO_RUSTFLAGS "${w[gateFlags]}" "${w[pgoFlags]}"
expect gateway-pgo.buildCommand "${w[gateScript]}" "pgo-gate.sh"
expect gateway-pgo-build.postInstall "${w[pgoPostInstall]}" 'CARGO_STDERR_LOG="$NIX_BUILD_TOP/cargo-stderr.log"'
expect gateway-pgo-build.buildPhase "${w[pgoBuildCommand]}" 'CARGO_STDERR_LOG="$NIX_BUILD_TOP/cargo-stderr.log"'
expect gateway-pgo-build.buildPhase "${w[pgoBuildCommand]}" "cargo-build.sh"
expect gateway-pgo-build.CARGO_BUILD_TARGET "${w[pgoTarget]}" "x86_64-unknown-linux-gnu"
expect gateway-pgo-build.dontStrip "${w[pgoDontStrip]}" "true"
expect "gateway-pgo-build deps' PGO_RUSTFLAGS (the binary's)" "${w[pgoDepsFlags]}" "${w[pgoFlags]}"
# The plain build: the chain's mangling (symbolMangling, default v0) and nothing else; every
# other stage carries it too, so that all train and ship the same symbols.
expect gateway.RUSTFLAGS "${w[plainFlags]}" "[-Csymbol-mangling-version=v0]"
expect gateway-instrumented.RUSTFLAGS "${w[instrumentedFlags]}" "-Csymbol-mangling-version=v0 "
expect gateway-pgo-build.RUSTFLAGS "${w[pgoFlags]}" "-Csymbol-mangling-version=v0 "
expect gateway-profile.LLVM_PROFDATA "${w[profdata]}" "/lib/rustlib/x86_64-unknown-linux-gnu/bin/llvm-profdata"
expect gateway-profile.BIN "${w[profileBin]}" "${w[instrumented]}/bin/gateway"
# The workload contract, fanned out: both profile stages train one derivation per training
# shape (`trainer workload` over a directory holding that shape alone), each expecting one
# profile, and merge them (PARTS: every part, by its store path).
training=$(grep -L -E '^holdout *= *true' "$repo"/shapes/*.toml | xargs -n1 basename | sed 's/\.toml$//' | sort | tr '\n' ' ')
[ "${w[profileParts]} " = "$training" ] || fail "gateway-profile's parts are [${w[profileParts]}], not the training shapes [$training]"
[ "${w[boltParts]} " = "$training" ] || fail "gateway-bolt-profile's parts are [${w[boltParts]}], not the training shapes [$training]"
echo "  ok: one PGO and one BOLT training part per training shape ($(echo $training | wc -w))"
expect gateway-profile.PARTS "${w[profilePARTS]}" "chat-nonstream-minimal=${w[partPath]}"
expect gateway-bolt-profile.PARTS "${w[boltPARTS]}" "chat-nonstream-minimal=${w[boltPartPath]}"
expect "a PGO part's WORKLOAD" "${w[profileWorkload]}" "-gateway-workload-chat-nonstream-minimal"
[ "${w[profileWorkload]}" = "${w[boltWorkload]}" ] || fail "a shape's PGO and BOLT parts run different workloads"
[ "${w[profileMin]}" = 1 ] || fail "a part's MIN_PROFILES is ${w[profileMin]}, not 1 (one gateway lifetime)"
expect "a PGO part's BIN" "${w[profilePartBin]}" "${w[instrumented]}/bin/gateway"
expect "a BOLT part's BIN" "${w[boltPartBin]}" "${w[pgo]}/bin/gateway"
expect gateway-bolt-profile.BOLT_RT_LIB "${w[boltRt]}" "stub-bolt-22/lib/libbolt_rt_instr.a"
expect gateway-bolt-profile.BIN "${w[boltProfileBin]}" "${w[pgo]}/bin/gateway"
# The build scripts' C (`cc`, `cmake`): the pinned clang in every stage, plain too (the
# baseline of every ratio), instrumented into the same profile, profile-used from the same
# staged profile: the token resolved in preUnpack (c-flags.sh), never an attribute.
expect gateway.CC_x86_64_unknown_linux_gnu "${w[plainCC]}" "stub-clang-22/bin/clang"
# DWARF 4 in every stage: valgrind 3.19 (the holdout gate's) cannot read clang 22's DWARF 5.
expect gateway.CFLAGS_x86_64_unknown_linux_gnu "${w[plainCFlags]}" "-fdebug-default-version=4"
expect gateway-instrumented.CFLAGS_x86_64_unknown_linux_gnu "${w[instrumentedCFlags]}" "-fdebug-default-version=4"
expect gateway-instrumented.CC_x86_64_unknown_linux_gnu "${w[instrumentedCC]}" "stub-clang-22/bin/clang"
expect gateway-instrumented.CFLAGS_x86_64_unknown_linux_gnu "${w[instrumentedCFlags]}" "-fprofile-generate="
expect gateway-instrumented.CXXFLAGS_x86_64_unknown_linux_gnu "${w[instrumentedCxxFlags]}" "-fprofile-generate="
expect "gateway-instrumented deps' CFLAGS (the binary's)" "${w[instrumentedDepsCFlags]}" "${w[instrumentedCFlags]}"
expect gateway-pgo-build.CC_x86_64_unknown_linux_gnu "${w[pgoCC]}" "stub-clang-22/bin/clang"
expect gateway-pgo-build.CXX_x86_64_unknown_linux_gnu "${w[pgoCxx]}" "stub-clang-22/bin/clang++"
expect "gateway-pgo-build's CFLAGS attribute" "${w[pgoCFlagsAttr]}" "<none>"
expect gateway-pgo-build.preUnpack "${w[pgoPreUnpack]}" "PGO_CFLAGS='-fdebug-default-version=4 -fprofile-use=@pgoProfile@"
expect gateway-pgo-build.preUnpack "${w[pgoPreUnpack]}" "c-flags.sh"
expect gateway-pgo-build.cargoArtifacts.preUnpack "${w[pgoDepsPreUnpack]}" "c-flags.sh"
expect gateway-pgo-build.postInstall "${w[pgoPostInstall]}" "c-objects.sh"
expect gateway-pgo.C_PROOF "${w[gateCProof]}" "c-proof.sh"
expect gateway-pgo.C_PGO_FLAGS "${w[gateCFlags]}" "-fprofile-use=@pgoProfile@"
expect gateway-pgo.C_PGO_FLAGS "${w[gateCFlags]}" "-fdebug-default-version=4"
expect gateway-pgo-bolt.BOLT_FLAGS "${w[boltFlags]}" "-icf=all"
reject gateway-pgo-bolt.BOLT_FLAGS "${w[boltFlags]}" "-use-gnu-stack"
expect gateway-pgo-bolt.FDATA "${w[fdata]}" "${w[boltProfile]}/gateway.fdata"
expect default "${w[default]}" "${w[pgoBolt]}"
expect devShell.LLVM_PROFDATA "$(ev --raw "$flake#devShells.x86_64-linux.default.LLVM_PROFDATA")" \
  "rust-stable-with-components"

echo "== checks.tests runs the tests (crane's cargoTest runs nothing without doCheck)"
[ "$(ev --json "$flake#checks.x86_64-linux.tests.doCheck")" = true ] || fail "checks.tests.doCheck is not true"
echo "  ok: checks.tests.doCheck = true"

echo "== lib.mkPgoBoltChain with another project's arguments"
out=$(ev --impure --json "$flake#lib" --apply "lib:
  let
    pkgs = (builtins.getFlake \"path:$stubs/nixpkgs\").legacyPackages.aarch64-linux;
    c = lib.mkPgoBoltChain {
      inherit pkgs;
      src = builtins.toFile \"src\" \"x\";
      binName = \"other\";
      version = \"3.1.4\";
      workload = \"/bin/false\";
      minProfiles = 3;
    };
  in [ c.other-pgo-bolt.drvPath c.other-pgo-build.preUnpack c.other-instrumented.CARGO_BUILD_TARGET (builtins.attrNames c.checks)
       c.other-profile.WORKLOAD c.other-profile.MIN_PROFILES c.other-bolt-profile.MIN_PROFILES c.other-pgo-bolt.FDATA ]")
echo "  $out"
expect mkPgoBoltChain "$out" "other-pgo-bolt-3.1.4.drv"
expect mkPgoBoltChain "$out" "aarch64-unknown-linux-gnu"
expect mkPgoBoltChain "$out" '"closure","pgo-proof"'
expect mkPgoBoltChain "$out" '"/bin/false","3","3"'
expect mkPgoBoltChain "$out" "-other-bolt-profile/other.fdata"
# The retired trainer contract is refused by name, not silently ignored.
if retired=$(nix eval "${nixf[@]}" --impure --json "$flake#lib" --apply "lib: (lib.mkPgoBoltChain {
    pkgs = (builtins.getFlake \"path:$stubs/nixpkgs\").legacyPackages.x86_64-linux;
    src = builtins.toFile \"src\" \"x\"; binName = \"other\"; workload = \"/bin/false\";
    trainCommand = \"/bin/false\"; }).other-profile.drvPath" 2>&1); then
  fail "mkPgoBoltChain accepted the retired trainCommand argument"
fi
expect "mkPgoBoltChain with trainCommand" "$retired" "unexpected argument 'trainCommand'"

echo "== lib.mkPgoBoltChain: a packager's package, pname, version and BOLT arguments"
# examples/textsearch's Cargo.toml gives the version; package and binary named apart (as
# ripgrep's ripgrep and rg). The attributes keep the binary's name, the store paths pname's.
out=$(ev --impure --json "$flake#lib" --apply "lib:
  let
    pkgs = (builtins.getFlake \"path:$stubs/nixpkgs\").legacyPackages.x86_64-linux;
    args = { inherit pkgs; src = $repo/examples/textsearch; binName = \"ts\"; workload = \"/bin/true\"; };
    c = lib.mkPgoBoltChain (args // { package = \"textsearch\"; pname = \"tsearch\"; extraBoltFlags = [ \"-x-extra\" ]; });
    d = lib.mkPgoBoltChain (args // { version = \"9.9.9\"; keepDebugInfo = false; });
  in [ c.ts-pgo-bolt.name c.ts-profile.name c.ts-pgo.name c.checks.closure.name c.ts.name c.ts.buildPhase
       c.ts-pgo-bolt.BOLT_FLAGS c.ts-pgo-bolt.KEEP_DEBUG_INFO c.ts-pgo-bolt.STAGE_NAME c.ts-pgo.STAGE_NAME
       d.ts-pgo-bolt.name d.ts.buildPhase d.ts-pgo-bolt.BOLT_FLAGS d.ts-pgo-bolt.KEEP_DEBUG_INFO ]")
echo "  $out" | cut -c1-300
expect "pname and version from Cargo.toml" "$out" '["tsearch-pgo-bolt-0.1.0","tsearch-profile","tsearch-pgo-0.1.0","tsearch-check-closure",'
expect "package apart from binName" "$out" "--locked -p textsearch --bin ts"
expect "the cargo builds' names" "$out" '"tsearch-0.1.0"'
expect "extraBoltFlags, after the defaults, and debug info kept" "$out" '-no-huge-pages -use-old-text -x-extra -update-debug-sections","1","tsearch-pgo-bolt","tsearch-pgo"'
expect "version given" "$out" '"ts-pgo-bolt-9.9.9"'
expect "package defaults to binName" "$out" "--locked -p ts --bin ts"
expect "keepDebugInfo = false" "$out" '-use-old-text","0"]'
if refused=$(nix eval "${nixf[@]}" --impure --raw "$flake#lib" --apply "lib: (lib.mkPgoBoltChain {
    pkgs = (builtins.getFlake \"path:$stubs/nixpkgs\").legacyPackages.x86_64-linux;
    src = builtins.toFile \"Cargo.toml\" \"\"; binName = \"other\"; workload = \"/bin/true\";
    }).other-pgo-bolt.name" 2>&1); then
  fail "mkPgoBoltChain named a version from a src without Cargo.toml: $refused"
fi
expect "a src without a version" "$refused" "give \`version\`"
# Rustflags from every source (issue 50): -Copt-level=0 in extraRustflags built the whole chain
# while the proof said opt-level 3. Refused at evaluation; a flag that passes is recorded by source.
if refused=$(nix eval "${nixf[@]}" --impure --raw "$flake#lib" --apply "lib: (lib.mkPgoBoltChain {
    pkgs = (builtins.getFlake \"path:$stubs/nixpkgs\").legacyPackages.x86_64-linux;
    src = $repo/examples/textsearch; binName = \"textsearch\"; workload = \"/bin/true\";
    extraRustflags = \"-Copt-level=0\"; }).textsearch-pgo.drvPath" 2>&1); then
  fail "mkPgoBoltChain accepted extraRustflags = \"-Copt-level=0\""
fi
expect "extraRustflags = -Copt-level=0" "$refused" "rustflags (extraRustflags) set -Copt-level=0"
out=$(ev --impure --raw "$flake#lib" --apply "lib: (lib.mkPgoBoltChain {
    pkgs = (builtins.getFlake \"path:$stubs/nixpkgs\").legacyPackages.x86_64-linux;
    src = $repo/examples/textsearch; binName = \"textsearch\"; workload = \"/bin/true\";
    extraRustflags = \"-Ctarget-cpu=x86-64-v2\"; }).textsearch-pgo.RUSTFLAGS_APPLIED")
expect "pgo-proof's rustflags_applied" "$out" '{"flags":"-Ctarget-cpu=x86-64-v2","source":"extraRustflags"}'
expect "pgo-proof's rustflags_applied" "$out" '"source":"chain (the profile-use stage)"'
for rel in examples/textsearch/chain.nix nix/tests/fixtures/ripgrep/chain.nix; do
  echo "== nix/host/packager.nix: $rel's chainAttrs"
  attrs=$(nix-instantiate --eval "$repo/nix/host/packager.nix" --arg chainFile "$repo/$rel" \
    --argstr rustSysroot /nonexistent --argstr vendorDir /nonexistent -A chainAttrs 2>"$errlog") || { cat "$errlog" >&2; fail "packager.nix does not evaluate $rel"; }
  echo "  $attrs"
  bin=$(sed -n 's/.*binName = "\([a-z]*\)".*/\1/p' "$repo/$rel")
  [ "$attrs" = "\"$bin-instrumented $bin-profile $bin-pgo-build $bin-pgo $bin-bolt-profile $bin-pgo-bolt $bin checks.closure checks.pgo-proof\"" ] ||
    fail "$rel's chainAttrs are $attrs"
done
echo "== trainingData: examples/textsearch's training/ is an input of the training stages only"
# Every stage's and check's drvPath of the textsearch chain on a copy of the example (the
# packager command's evaluation), before and after one edit: an edit of the training data (or
# of the workload) must change the profile stages and what follows them, and nothing before.
td=$(mktemp -d /var/tmp/tier-b-training.XXXXXX)
trap 'rm -f "$errlog"; rm -rf "$td"' EXIT
(cd "$repo" && git ls-files -z --cached --others --exclude-standard examples/textsearch |
  tar --null -T - -cf -) | tar -C "$td" -xf -
ts_drvs() {
  nix-instantiate --eval --read-write-mode --strict --json -E "let
      c = import $repo/nix/host/packager.nix { chainFile = $td/examples/textsearch/chain.nix;
        rustSysroot = \"/nonexistent\"; vendorDir = \"/nonexistent\"; };
      names = [ \"textsearch\" \"textsearch-instrumented\" \"textsearch-profile\"
        \"textsearch-pgo-build\" \"textsearch-pgo\" \"textsearch-bolt-profile\"
        \"textsearch-pgo-bolt\" ];
    in map (n: n + \"=\" + c.\${n}.drvPath) names
      ++ map (n: \"checks.\" + n + \"=\" + c.checks.\${n}.drvPath) (builtins.attrNames c.checks)
      ++ [ (\"data=\" + c.textsearch-profile.TRAINING_DATA)
           (\"boltData=\" + c.textsearch-bolt-profile.TRAINING_DATA) ]" 2>"$errlog" |
    tr -d '[]"' | tr ',' '\n' | sort || { cat "$errlog" >&2; return 1; }
}
ts_drvs >"$td/base" || fail "the textsearch chain does not evaluate"
data=$(sed -n 's/^data=//p' "$td/base")
expect "textsearch-profile.TRAINING_DATA" "$data" "-textsearch-training-data"
[ "$(sed -n 's/^boltData=//p' "$td/base")" = "$data" ] || fail "the BOLT training sees other training data"
[ "$(cat "$data/queries.txt")" = "$(cat "$repo/examples/textsearch/training/queries.txt")" ] ||
  fail "TRAINING_DATA does not hold training/queries.txt"
# ts_changed FILE LINE: the names whose derivation an appended LINE changes (restored after).
ts_changed() {
  cp "$td/examples/textsearch/$1" "$td/saved"
  printf '%s\n' "$2" >>"$td/examples/textsearch/$1"
  ts_drvs >"$td/edited" || fail "the textsearch chain does not evaluate after editing $1"
  cp "$td/saved" "$td/examples/textsearch/$1"
  join -t= -j1 "$td/base" "$td/edited" | awk -F= '$2 != $3 { print $1 }' | words
}
words() { sort | tr '\n' ' ' | sed 's/ $//'; }
trained="checks.closure checks.pgo-proof textsearch-profile textsearch-pgo-build textsearch-pgo
  textsearch-bolt-profile textsearch-pgo-bolt"
want=$(printf '%s\n' $trained data boltData | words)
got=$(ts_changed training/queries.txt "-c edit")
[ "$got" = "$want" ] || fail "a training data edit changed [$got], expected [$want]"
echo "  ok: a training data edit changes: $got; not textsearch, textsearch-instrumented"
want=$(printf '%s\n' $trained | words)
got=$(ts_changed workload.sh "# edit")
[ "$got" = "$want" ] || fail "a workload edit changed [$got], expected [$want]"
echo "  ok: a workload edit changes the same stages"
# A build's result link beside the data is not data.
ln -s /nonexistent "$td/examples/textsearch/training/result"
ts_drvs >"$td/edited" || fail "the textsearch chain does not evaluate with a result link"
rm "$td/examples/textsearch/training/result"
cmp -s "$td/base" "$td/edited" || fail "a result link in training/ changed the chain"
echo "  ok: a result link in training/ changes nothing"

echo "== the host pkgs refuses what it does not offer, naming docs/chain.md"
if refused=$(nix-instantiate --eval -E "(import $repo/nix/host/pkgs.nix {}).lib.optional" 2>&1); then
  fail "the host pkgs offered lib: $refused"
fi
expect "host pkgs.lib" "$refused" 'docs/chain.md "Chain files"'

echo "== lib.mkPgoBoltChain fanned out: workloads = { <part> = executable; }"
out=$(ev --impure --json "$flake#lib" --apply "lib:
  let
    c = lib.mkPgoBoltChain {
      pkgs = (builtins.getFlake \"path:$stubs/nixpkgs\").legacyPackages.x86_64-linux;
      src = builtins.toFile \"src\" \"x\"; version = \"1.0.0\";
      binName = \"other\";
      workloads = { small = \"/bin/true\"; large = \"/bin/false\"; };
    };
  in [ (builtins.attrNames c.other-profile.parts) c.other-profile.parts.large.WORKLOAD
       c.other-bolt-profile.parts.small.WORKLOAD c.other-profile.PARTS c.other-bolt-profile.PARTS
       c.other-profile.parts.small.name c.other-bolt-profile.parts.large.name
       (c.other-profile ? WORKLOAD) ]")
echo "  $out" | cut -c1-300
expect "fanned-out chain" "$out" '[["large","small"],"/bin/false","/bin/true","large=/nix/store/'
expect "fanned-out chain" "$out" '"other-profile-small","other-bolt-profile-large",false]'
expect "fanned-out chain" "$out" "-other-bolt-profile-large small=/nix/store/"
for bad in "" "workloads = { a = \"/bin/true\"; };" "workloads = { };" "workloads = { \"a b\" = \"/bin/true\"; }; workload = null;"; do
  if refused=$(nix eval "${nixf[@]}" --impure --json "$flake#lib" --apply "lib: (lib.mkPgoBoltChain {
      pkgs = (builtins.getFlake \"path:$stubs/nixpkgs\").legacyPackages.x86_64-linux;
      src = builtins.toFile \"src\" \"x\"; version = \"1.0.0\"; binName = \"other\";
      $( [ -n "$bad" ] && [ "${bad#*workload = null}" = "$bad" ] && [ "$bad" != "workloads = { };" ] && echo 'workload = "/bin/true";' ) $bad
    }).other-profile.drvPath" 2>&1); then
    fail "mkPgoBoltChain accepted [${bad:-no workload}]"
  fi
  case $refused in
    *"give exactly one of"* | *"names no part"* | *"is not [A-Za-z0-9_-]"*) echo "  ok: refused [${bad:-no workload}]: $(printf '%s' "$refused" | grep -oE "(give exactly one of|names no part|is not \[A-Za-z0-9_-\])" | head -n1)" ;;
    *) fail "mkPgoBoltChain [${bad:-no workload}] failed otherwise: $refused" ;;
  esac
done

echo "== lib.gatewayChain from a release's published profiles (lib.publishedProfiles)"
out=$(ev --impure --json "$flake#lib" --apply "lib:
  let
    pkgs = (builtins.getFlake \"path:$stubs/nixpkgs\").legacyPackages.x86_64-linux;
    published = lib.publishedProfiles {
      inherit pkgs;
      profdata = builtins.toFile \"g.profdata\" \"p\";
      profileManifest = builtins.toFile \"g.profdata.manifest.json\" \"{}\";
      fdata = builtins.toFile \"g.fdata\" \"f\";
      fdataManifest = builtins.toFile \"g.fdata.manifest.json\" \"{}\";
    };
    trained = lib.gatewayChain \"x86_64-linux\" { };
    c = lib.gatewayChain \"x86_64-linux\" published;
    flagsOf = d: builtins.head (builtins.match \".*PGO_RUSTFLAGS='([^']*)'.*\"
      (builtins.replaceStrings [\"\\n\"] [\" \"] d.preUnpack));
  in [ (flagsOf c.gateway-pgo-build) (flagsOf trained.gateway-pgo-build) c.gateway-profile.name
       c.gateway-pgo-bolt.FDATA c.gateway-pgo-bolt.FDATA_MANIFEST c.gateway-pgo-build.preUnpack ]") ||
  fail "lib.gatewayChain with published profiles does not evaluate"
echo "  $out" | cut -c1-400
expect gatewayChain "$out" '"published-profile"'
expect gatewayChain "$out" "-published-bolt-profile/gateway.fdata"
expect gatewayChain "$out" "-published-bolt-profile/manifest.json"
expect gatewayChain "$out" "-published-profile/gateway.profdata"
# The same flags whichever derivation supplied the profile.
flags=$(printf '%s' "$out" | sed -nE 's/^\["([^"]*)","([^"]*)".*/\1|\2/p')
[ -n "$flags" ] && [ "${flags%%|*}" = "${flags#*|}" ] && echo "  ok: RUSTFLAGS are the same trained or published" ||
  fail "RUSTFLAGS differ between a trained and a published profile: $flags"

echo "== lib.gatewayChain { perShape = false; }: one training derivation over all shapes"
out=$(ev --impure --json "$flake#lib" --apply "lib:
  let c = lib.gatewayChain \"x86_64-linux\" { perShape = false; };
  in [ (c.gateway-profile ? parts) c.gateway-profile.MIN_PROFILES c.gateway-profile.WORKLOAD
       (c.gateway-bolt-profile ? parts) ]") || fail "lib.gatewayChain { perShape = false; } does not evaluate"
echo "  $out" | cut -c1-300
n_training=$(grep -L -E '^holdout *= *true' "$repo"/shapes/*.toml | wc -l)
expect "gatewayChain { perShape = false; }" "$out" "[false,\"$n_training\",\"/nix/store/"
expect "gatewayChain { perShape = false; }" "$out" '-gateway-workload",false]'

echo "== lib.gatewayChain { allocator = \"mimalloc\"; }: every cargo stage builds that allocator"
# Per build: does its build phase run cargo with the allocator's feature, alone?
out=$(ev --impure --json "$flake#lib" --apply "lib:
  let c = lib.gatewayChain \"x86_64-linux\" { allocator = \"mimalloc\"; };
      d = lib.gatewayChain \"x86_64-linux\" { };
      has = s: d: builtins.length (builtins.split s d.buildPhase) > 1;
      mi = \"--locked -p gateway --bin gateway --no-default-features --features alloc-mimalloc\";
  in [ (has mi c.gateway) (has mi c.gateway-instrumented) (has mi c.gateway-pgo-build)
       (has mi c.gateway-pgo-build.cargoArtifacts) (has \"--features\" d.gateway-pgo-build)
       (has \"--locked -p gateway --bin gateway\" d.gateway-pgo-build) ]") ||
  fail "lib.gatewayChain { allocator = \"mimalloc\"; } does not evaluate"
[ "$out" = '[true,true,true,true,false,true]' ] &&
  echo "  ok: plain, instrumented, PGO and its dependencies build alloc-mimalloc; the default chain no feature" ||
  fail "allocator = \"mimalloc\" does not reach every cargo build (plain, instrumented, pgo-build, its deps; default): $out"
# A name that is not one of the crate's allocator features fails at evaluation, naming them.
if refused=$(nix eval "${nixf[@]}" --impure --json "$flake#lib" --apply 'lib: (lib.gatewayChain
    "x86_64-linux" { allocator = "tcmalloc"; }).gateway.drvPath' 2>&1); then
  fail "gatewayChain { allocator = \"tcmalloc\"; } evaluated"
fi
expect "allocator = \"tcmalloc\" refused" "$refused" "choose one of jemalloc, mimalloc, system"

echo "== lib.gatewayChain on the user's own shapes (nix/tests/fixtures/user-shapes)"
user_shapes="$repo/nix/tests/fixtures/user-shapes"
out=$(ev --impure --json "$flake#lib" --apply "lib:
  let c = lib.gatewayChain \"x86_64-linux\" { shapes = $user_shapes; };
  in [ (toString (builtins.length (builtins.attrNames c.gateway-profile.parts)))
       c.gateway-profile.parts.triage-chat.WORKLOAD c.gateway-pgo-bolt.drvPath
       c.checks.holdout.drvPath ]") || fail "lib.gatewayChain with the user's shapes does not evaluate"
echo "  $out" | cut -c1-300
expect "gatewayChain { shapes }" "$out" '["3",'
expect "gatewayChain { shapes }" "$out" "-gateway-workload-triage-chat"
[ "$(printf '%s' "$out" | grep -o '"/nix/store/[^"]*gateway-pgo-bolt-[^"]*.drv"')" != "\"${w[pgoBolt]}\"" ] ||
  fail "the user's shapes give the same gateway-pgo-bolt as shapes/"
holdout_drv=$(printf '%s' "$out" | grep -oE '/nix/store/[^"]*-gateway-check-holdout.drv')
nix show-derivation "${nixf[@]}" "$holdout_drv" 2>/dev/null | grep -q 'user-shapes\|--shapes /nix/store/' ||
  fail "checks.holdout does not measure the user's shapes"
echo "  ok: 3 training shapes, its own workload and holdout check"

echo "== the template: nix flake init -t, then the packager's flake evaluates"
tpl=$(mktemp -d /var/tmp/tier-b-template.XXXXXX)
trap 'rm -f "$errlog"; rm -rf "$tpl" "$td"' EXIT
# `nix flake init` takes no lock flags: the template is read without this flake's inputs.
(cd "$tpl" && nix flake init --extra-experimental-features 'nix-command flakes' \
  --option substituters '' --option build-users-group '' -t "$flake" 2>"$errlog") || {
  cat "$errlog" >&2
  fail "nix flake init -t"
}
for f in flake.nix chain.nix workload.sh training/queries.txt Cargo.toml Cargo.lock src/main.rs; do
  [ -e "$tpl/$f" ] || fail "the template lacks $f"
done
# The template's flake takes this repository as its `pgo-bolt` input (its nixpkgs follows
# ours), with the same stub inputs as above underneath.
tplf=(
  --extra-experimental-features 'nix-command flakes'
  --option substituters ''
  --option build-users-group ''
  --no-write-lock-file
  --override-input pgo-bolt "$flake"
  --override-input pgo-bolt/nixpkgs "path:$stubs/nixpkgs"
  --override-input pgo-bolt/crane "path:$repo/nix/host/crane"
  --override-input pgo-bolt/fenix "path:$stubs/fenix"
  --override-input pgo-bolt/fenix/rust-analyzer-src "path:$stubs/rust-analyzer-src"
)
out=$(nix eval "${tplf[@]}" --json "path:$tpl#packages.x86_64-linux" --apply 'p: [
  p.default.drvPath p.textsearch-pgo-bolt.drvPath p.textsearch-profile.WORKLOAD
  p.textsearch-profile.MIN_PROFILES p.textsearch-bolt-profile.WORKLOAD p.textsearch-pgo-build.preUnpack
  p.textsearch-instrumented.RUSTFLAGS ]' 2>"$errlog") || {
  cat "$errlog" >&2
  fail "the template's packages do not evaluate"
}
echo "  $out" | cut -c1-300
def=$(printf '%s' "$out" | sed -nE 's/^\["([^"]*)","([^"]*)".*/\1|\2/p')
[ -n "$def" ] && [ "${def%%|*}" = "${def#*|}" ] || fail "the template's default is not textsearch-pgo-bolt"
expect template "$out" "-textsearch-workload"
expect template "$out" '"35"'
expect template "$out" "-Cprofile-use=@pgoProfile@"
checks=$(nix eval "${tplf[@]}" --json "path:$tpl#checks.x86_64-linux" --apply 'builtins.attrNames' 2>"$errlog") || {
  cat "$errlog" >&2
  fail "the template's checks do not evaluate"
}
expect "template checks" "$checks" '"closure","pgo-proof"'

echo "== the edit matrix: what an edit rebuilds"
"$repo/nix/tests/edit-matrix.sh"

echo "tier b: PASS in $(($(date +%s) - t0)) s"
