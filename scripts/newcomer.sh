#!/usr/bin/env bash
# A stranger's first hour, replayed: a fresh Debian bookworm root (debootstrap
# --variant=minbase, with the bookworm, -updates and -security suites of this machine's own
# apt sources), a clean clone of this repository's HEAD, and the README's `main` block run
# there verbatim (scripts/readme-block.sh), as .ci/run runs it. Nothing else is installed.
#
# Three things stand in for what this machine cannot do:
#  - the README's Rust prerequisite downloads rustup, which this machine cannot reach: this
#    machine's Rust 1.95 toolchain is copied in as rustup would leave it ($HOME/.rustup,
#    $HOME/.cargo/bin, $HOME/.cargo/env); its apt line (curl, ca-certificates, gcc) is NOT run,
#    so the main block's own line must bring what the chain needs;
#  - a network that inspects TLS has certificate authorities of its own: this machine's
#    (/usr/local/share/ca-certificates) are copied in, to be picked up when the README's line
#    installs ca-certificates;
#  - Nix cannot sandbox a build inside a chroot, so the run is judged by how far it gets: past
#    every install step and the chain's evaluation, to its first derivation build. A run that
#    stops before that fails, with the log's last lines.
#
# Usage: scripts/newcomer.sh [WORKDIR]   (default /var/tmp/newcomer; as root; needs debootstrap)
#   KEEP_ROOT=1 reuses WORKDIR/root's debootstrap (skips the download) but never what the
#   README's block installed: that is undone by starting from a tarball of the fresh root.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/var/tmp/newcomer}
root=$work/root
say() { echo "newcomer: $*"; }
fail() {
  echo "newcomer: FAIL: $*" >&2
  exit 1
}
[ "$(id -u)" = 0 ] || fail "run as root (debootstrap, chroot, mounts)"
command -v debootstrap >/dev/null || fail "needs debootstrap (apt-get install -y debootstrap)"

# This machine's Debian mirror, from its own apt sources (deb822 or one-line format).
mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
  grep -v security | head -n1 || true)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 !~ /security/ { print $2; exit }' \
  /etc/apt/sources.list 2>/dev/null || true)
[ -n "$mirror" ] || fail "no Debian mirror in /etc/apt/sources.list{,.d}"

mounted=()
cleanup() {
  local m
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT

mkdir -p "$work"
t0=$SECONDS
if [ "${KEEP_ROOT:-0}" = 1 ] && [ -f "$work/minbase.tar" ]; then
  say "reusing $work/minbase.tar (KEEP_ROOT=1)"
else
  rm -rf "$work/minbase"
  say "debootstrap --variant=minbase bookworm from $mirror"
  debootstrap --variant=minbase bookworm "$work/minbase" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 20 "$work/debootstrap.log" >&2; fail "debootstrap failed"; }
  tar -C "$work/minbase" -cf "$work/minbase.tar" .
  rm -rf "$work/minbase"
fi
rm -rf "$root"
mkdir -p "$root"
tar -C "$root" -xf "$work/minbase.tar"
say "fresh root in $((SECONDS - t0)) s: $(chroot "$root" dpkg-query -W | wc -l) packages"

# The three suites, as this machine's apt has them (its disabled extra sources left out).
rm -f "$root/etc/apt/sources.list"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; do
  [ -f "$f" ] && cp "$f" "$root$f"
done
cp /etc/resolv.conf "$root/etc/resolv.conf"
# This machine's own certificate authorities (a TLS-inspecting network trusts them locally):
# the README's ca-certificates package picks them up when it is installed, as on this machine.
if compgen -G '/usr/local/share/ca-certificates/*' >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi

# Rust 1.95 as rustup leaves it (see above).
sysroot=$(rustc --print sysroot)
tc=$(basename "$sysroot")
mkdir -p "$root/root/.rustup/toolchains/$tc" "$root/root/.cargo/bin"
cp -a "$sysroot/bin" "$sysroot/lib" "$root/root/.rustup/toolchains/$tc/"
printf 'version = "12"\ndefault_toolchain = "%s"\nprofile = "minimal"\n' "$tc" \
  >"$root/root/.rustup/settings.toml"
rustup_bin=$(command -v rustup) || fail "no rustup on this machine to copy"
cp "$rustup_bin" "$root/root/.cargo/bin/rustup"
for proxy in cargo rustc rustdoc rustfmt cargo-fmt cargo-clippy clippy-driver; do
  ln -f "$root/root/.cargo/bin/rustup" "$root/root/.cargo/bin/$proxy"
done
# shellcheck disable=SC2016 # written for the chroot's shell
printf '#!/bin/sh\ncase ":${PATH}:" in *:"$HOME/.cargo/bin":*) ;; *) export PATH="$HOME/.cargo/bin:$PATH" ;; esac\n' \
  >"$root/root/.cargo/env"

# A clean clone of HEAD: what a stranger gets, nothing of this work tree's ignored files.
git clone -q --no-local "$repo" "$root/root/gateway"
git -C "$root/root/gateway" checkout -q "$(git -C "$repo" rev-parse HEAD)"

for m in proc sys dev dev/pts; do
  mkdir -p "$root/$m"
  mount --bind "/$m" "$root/$m"
  mounted+=("$root/$m")
done

block=$(cd "$root/root/gateway" && scripts/readme-block.sh main)
say "running the README's main block in the fresh root (log: $work/main.log):"
printf '%s\n' "$block" | sed 's/^/  | /'
t1=$SECONDS
set +e
chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb DEBIAN_FRONTEND=noninteractive \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  /bin/bash -c 'cd /root/gateway && . "$HOME/.cargo/env" && bash -euo pipefail -c "$1"' \
  newcomer "$block" >"$work/main.log" 2>&1
rc=$?
set -e
say "the block exited $rc after $((SECONDS - t1)) s; its last lines:"
tail -n 15 "$work/main.log" | sed 's/^/  > /'
if [ "$rc" = 0 ]; then
  say "PASS: the README's main command built the whole chain in the fresh root"
elif grep -qE 'derivations? will be built:' "$work/main.log" &&
  grep -qE "^building '/nix/store/|cannot perform a sandboxed build" "$work/main.log"; then
  # Evaluation and every install step passed: Nix listed the chain's derivations and stopped
  # at the first build, which a chroot cannot sandbox.
  first=$(grep -m1 -A1 -E 'derivations? will be built:' "$work/main.log" | tail -n1 | tr -d ' ')
  say "PASS: every install step and the chain's evaluation passed; stopped at the first sandboxed build ($first)"
else
  fail "the README's main block stopped before the chain's first build (exit $rc; $work/main.log)"
fi
