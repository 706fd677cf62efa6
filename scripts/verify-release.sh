#!/usr/bin/env bash
# Verifies a release: rebuilds gateway-pgo and gateway-pgo-bolt from a checkout of the
# release's source and the profiles published with it (no training), and compares the
# rebuilt binaries with the released one, bit for bit (docs/releases.md "Verifiable releases").
#
# Usage: scripts/verify-release.sh [--builder flake|host] RELEASE_DIR [CHECKOUT]
#   RELEASE_DIR  the release's files for one system, as published:
#                  <name>.tar.gz                   the tarball (release.json inside it)
#                  <name>.profdata, <name>.profdata.manifest.json
#                  <name>.fdata,    <name>.fdata.manifest.json
#                where <name> is gateway-<version>-<system>
#   CHECKOUT     the source at the release's tag (default: this repository)
#   --builder    flake (default): the checkout's flake, `lib.gatewayChain` with
#                  `lib.publishedProfiles` (the pinned fenix toolchain: what releases use)
#                host: nix/host/chain.nix with the host's rustc and Debian's LLVM 22 (what CI
#                  runs: tier c's outputs are built that way; needs scripts/chain-host-env.sh's
#                  tools). Either way: the same nix/lib/chain.nix and nix/lib/builder.nix.
#
# Exit status: 0 verified (both binaries identical); 1 not verified: the output names the
# first stage whose output differs (gateway-pgo: the profile-use build; gateway-pgo-bolt: the
# BOLT rewrite), or the published file that does not match release.json; 2 usage errors.
# Nothing is trained: a published profile that does not fit the source still fails the
# chain's gates (`hash mismatch`; an fdata trained on another binary).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

builder=flake
if [ "${1:-}" = --builder ]; then
  builder=${2:?--builder needs flake or host}
  shift 2
fi
case $builder in flake | host) ;; *)
  echo "verify-release: unknown builder '$builder' (flake or host)" >&2
  exit 2
  ;;
esac
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  sed -n '6,16p' "$0" >&2
  exit 2
fi
release_dir=$(cd "$1" && pwd)
checkout=$(cd "${2:-$here}" && pwd)

say() { echo "verify-release: $*" >&2; }
not_verified() {
  say "NOT VERIFIED: $*"
  exit 1
}
usage_error() {
  say "$*"
  exit 2
}
sha() { sha256sum "$1" | cut -d' ' -f1; }
# json_field FILE KEY: a string field, one key per line as the release's JSON files are written.
json_field() { sed -nE "s/^ *\"$2\": \"([^\"]*)\".*/\\1/p" "$1" | head -n1; }

shopt -s nullglob
tarballs=("$release_dir"/*.tar.gz)
shopt -u nullglob
[ "${#tarballs[@]}" -eq 1 ] || usage_error "expected one <name>.tar.gz in $release_dir, found ${#tarballs[@]}"
tarball=${tarballs[0]}
name=$(basename "$tarball" .tar.gz)
bin_name=${name%%-[0-9]*}

work=$(mktemp -d "${TMPDIR:-/tmp}/verify-release.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
tar -xzf "$tarball" -C "$work"
rel="$work/$name"
if [ ! -s "$rel/release.json" ] || [ ! -x "$rel/bin/$bin_name" ]; then
  usage_error "$tarball holds no $name/release.json and bin/$bin_name"
fi
released_sha=$(sha "$rel/bin/$bin_name")
released_pgo_sha=$(json_field "$rel/release.json" pgo_bin_sha256)
[ -n "$released_pgo_sha" ] || usage_error "$name/release.json records no evidence (a release before verifiable releases?)"
revision=$(json_field "$rel/release.json" source_revision)
say "release $name: $bin_name sha256 $released_sha, built from revision '$revision'"

# 1. The published evidence must be the files release.json names: a tampered or swapped
#    profile is refused before anything is built.
for f in "$name.profdata" "$name.profdata.manifest.json" "$name.fdata" "$name.fdata.manifest.json"; do
  [ -s "$release_dir/$f" ] || not_verified "the published $f is missing from $release_dir"
  want=$(json_field "$rel/release.json" "$f")
  [ -n "$want" ] || not_verified "release.json records no sha256 for $f"
  got=$(sha "$release_dir/$f")
  [ "$got" = "$want" ] || not_verified "the published $f (sha256 $got) is not the file release.json records ($want)"
done
say "published profiles match release.json"

# 2. The checkout must be the release's source (a warning only when the release says 'dirty'
#    or the checkout is not a git repository: the PGO gate still refuses a profile trained on
#    other source).
if head=$(git -C "$checkout" rev-parse HEAD 2>/dev/null); then
  case $revision in
    "" | dirty | test) say "warning: the release records revision '$revision'; checkout is at $head" ;;
    *) case $head in
      "$revision"*) ;;
      *) usage_error "the checkout is at $head, the release was built from $revision: check out its tag" ;;
    esac ;;
  esac
fi

# 3. Rebuild from the published files, staged in the store as the chain's profile inputs.
mkdir -p "$work/published-profile" "$work/published-bolt-profile"
cp "$release_dir/$name.profdata" "$work/published-profile/gateway.profdata"
cp "$release_dir/$name.profdata.manifest.json" "$work/published-profile/manifest.json"
cp "$release_dir/$name.fdata" "$work/published-bolt-profile/gateway.fdata"
cp "$release_dir/$name.fdata.manifest.json" "$work/published-bolt-profile/manifest.json"
chmod -R a-w "$work/published-profile" "$work/published-bolt-profile"
profile=$(nix-store --add "$work/published-profile")
bolt_profile=$(nix-store --add "$work/published-bolt-profile")
say "building gateway-pgo and gateway-pgo-bolt with the $builder builder (no training)"
case $builder in
  host)
    # shellcheck disable=SC2034 # read by chain-host-env.sh
    repo=$checkout
    # The checkout's own host environment (its Cargo.lock's vendored crates).
    # shellcheck source=/dev/null
    . "$checkout/scripts/chain-host-env.sh"
    build() {
      # shellcheck disable=SC2154 # host_nix_args: set by chain-host-env.sh
      nix-build "$checkout/nix/host/chain.nix" "${host_nix_args[@]}" --arg root "$checkout" \
        --arg profile "builtins.storePath \"$profile\"" \
        --arg boltProfile "builtins.storePath \"$bolt_profile\"" \
        -A "$1" --no-out-link
    }
    ;;
  flake)
    system=${name##*-"$(json_field "$rel/release.json" version)"-}
    # nix-build -E rather than `nix build`: it prints the output path on every Nix with flakes.
    build() {
      nix-build --no-out-link --extra-experimental-features 'nix-command flakes' -E "
          let
            flake = builtins.getFlake \"path:$checkout\";
            published = { profile = builtins.storePath \"$profile\"; boltProfile = builtins.storePath \"$bolt_profile\"; };
          in (flake.lib.gatewayChain \"$system\" published).$1"
    }
    ;;
esac
pgo=$(build "$bin_name-pgo") || not_verified "stage $bin_name-pgo failed to build from the published profile (see above)"
pgo_sha=$(sha "$pgo/bin/$bin_name")
say "$bin_name-pgo:      rebuilt $pgo_sha, released (BOLT's input) $released_pgo_sha"
if [ "$pgo_sha" != "$released_pgo_sha" ]; then
  diff <(grep -v '"stage"' "$pgo/share/$bin_name/pgo-proof.json") \
    <(grep -v '"stage"' "$rel/share/$bin_name/pgo-proof.json") >&2 || true
  not_verified "first differing stage: $bin_name-pgo (the profile-use build; the pgo-proof differences, if any, are above)"
fi
bolt=$(build "$bin_name-pgo-bolt") || not_verified "stage $bin_name-pgo-bolt failed to build from the published fdata (see above)"
bolt_sha=$(sha "$bolt/bin/$bin_name")
say "$bin_name-pgo-bolt: rebuilt $bolt_sha, released $released_sha"
[ "$bolt_sha" = "$released_sha" ] ||
  not_verified "first differing stage: $bin_name-pgo-bolt (the BOLT rewrite of an identical PGO binary)"
say "VERIFIED: $name's $bin_name is bit for bit the build of $checkout with its published profiles"
