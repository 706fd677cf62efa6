# shellcheck shell=bash
# Builder of the release tarball (nix/release/tarball.nix); runs the same way outside Nix
# (nix/tests/release-tests.sh builds it twice and compares the bytes).
#
# The tarball holds gateway-<version>-<system>/ with bin/<bin>, share/<bin>/{pgo,bolt}-proof.json,
# LICENSE, gateway.example.toml, release.json and SHA256SUMS. It is reproducible: files sorted
# by name, one mtime (SOURCE_DATE_EPOCH), owner 0:0 numeric, modes normalized, GNU format (no
# pax headers with atimes), `gzip -n` (no name or timestamp in the gzip header).
# The release check runs on the staged tree and again on the packed tarball, unpacked: what
# ships is exactly what was checked. The binary is copied byte for byte (never stripped or
# patched): its sha256 is the bolt-proof's output_sha256.
#
# Environment:
#   GATEWAY            the gateway-pgo-bolt output (bin/, share/<bin>/)
#   BIN_NAME           the binary (default gateway)
#   LICENSE_FILE       the project's LICENSE (required: a release carries its license)
#   EXAMPLE_CONFIG     gateway.example.toml
#   RELEASE_CHECK      scripts/release-check.sh
#   READELF            absolute path of readelf (for the release check)
#   VERSION SYSTEM REV the release's version, Nix system and source revision
#   SOURCE_DATE_EPOCH  the one mtime of every entry
#   OUT_DIR            where the .tar.gz and its .sha256 go (default $out)
set -euo pipefail

die() {
  echo "gateway-tarball: FAILED: $*" >&2
  exit 1
}
for v in GATEWAY EXAMPLE_CONFIG RELEASE_CHECK READELF VERSION SYSTEM REV SOURCE_DATE_EPOCH; do
  [ -n "${!v:-}" ] || die "environment variable $v is not set"
done
[ -s "${LICENSE_FILE:-/nonexistent}" ] ||
  die "no LICENSE: the repository must carry a LICENSE file at its top (Cargo.toml says Apache-2.0)"
BIN_NAME=${BIN_NAME:-gateway}
OUT_DIR=${OUT_DIR:-${out:-}}
[ -n "$OUT_DIR" ] || die "OUT_DIR (or \$out) is not set"
export READELF

name="$BIN_NAME-$VERSION-$SYSTEM"
work=$(mktemp -d "${TMPDIR:-/tmp}/tarball.XXXXXX")
trap 'rm -rf "$work"' EXIT
stage="$work/$name"
mkdir -p "$stage/bin" "$stage/share/$BIN_NAME"
cp "$GATEWAY/bin/$BIN_NAME" "$stage/bin/$BIN_NAME"
cp "$GATEWAY/share/$BIN_NAME/pgo-proof.json" "$GATEWAY/share/$BIN_NAME/bolt-proof.json" \
  "$stage/share/$BIN_NAME/"
cp "$LICENSE_FILE" "$stage/LICENSE"
cp "$EXAMPLE_CONFIG" "$stage/gateway.example.toml"
# The ELF interpreter is recorded because a Nix-built binary names the nixpkgs glibc loader by
# its store path: users of the tarball outside Nix need to know (README "Releases").
interp=$("$READELF" -lW "$stage/bin/$BIN_NAME" | sed -nE 's/.*Requesting program interpreter: ([^]]*)\]/\1/p')
# ... and the newest glibc symbol version it needs: the floor for running it with the host's
# loader instead (README "Releases").
glibc_min=$("$READELF" -W -V "$stage/bin/$BIN_NAME" | sed -n '/Version needs section/,$p' |
  grep -oE 'GLIBC_[0-9]+(\.[0-9]+)*' | sed 's/^GLIBC_//' | sort -uV | tail -n1)
needed=$("$READELF" -dW "$stage/bin/$BIN_NAME" | sed -nE 's/.*\(NEEDED\).*\[(.*)\]/\1/p' | paste -sd ' ' -)
{
  printf '{\n'
  printf '  "name": "%s",\n' "$BIN_NAME"
  printf '  "version": "%s",\n' "$VERSION"
  printf '  "system": "%s",\n' "$SYSTEM"
  printf '  "source_revision": "%s",\n' "$REV"
  printf '  "elf_interpreter": "%s",\n' "$interp"
  printf '  "glibc_min": "%s",\n' "$glibc_min"
  printf '  "needed_libraries": "%s"\n' "$needed"
  printf '}\n'
} >"$stage/release.json"

# Relative paths, sorted in the C locale, the tarball's own file excluded.
(cd "$stage" && find . -type f ! -name SHA256SUMS | sed 's#^\./##' | LC_ALL=C sort |
  xargs -d '\n' sha256sum) >"$work/SHA256SUMS"
mv "$work/SHA256SUMS" "$stage/SHA256SUMS"
chmod -R u+w,go-w "$stage"
chmod 0755 "$stage/bin/$BIN_NAME"

bash "$RELEASE_CHECK" --bin-name "$BIN_NAME" "$stage" >&2 || die "the release check refused the staged tree"

tarball="$work/$name.tar.gz"
(cd "$work" && LC_ALL=C tar --sort=name --format=gnu --mtime="@$SOURCE_DATE_EPOCH" \
  --owner=0 --group=0 --numeric-owner --mode='u=rwX,go=rX' -cf - "$name") | gzip -9 -n >"$tarball"

# What ships is what was checked: unpack the archive itself and check again.
mkdir "$work/verify"
tar -xzf "$tarball" -C "$work/verify"
bash "$RELEASE_CHECK" --bin-name "$BIN_NAME" "$work/verify/$name" >/dev/null ||
  die "the release check refused the packed tarball"

mkdir -p "$OUT_DIR"
install -m 0644 "$tarball" "$OUT_DIR/$name.tar.gz"
(cd "$OUT_DIR" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
echo "gateway-tarball: $OUT_DIR/$name.tar.gz $(cut -d' ' -f1 "$OUT_DIR/$name.tar.gz.sha256")" >&2
