# shellcheck shell=bash
# Stage step of a profile-use build (deps and binary alike): stage the profile at one fixed
# path inside the build and print the RUSTFLAGS that use it. The builder runs it before the
# first phase that may run cargo (nix/lib/builder.nix: preUnpack) and exports what it prints, so no
# process of the build ever sees the `@pgoProfile@` token: crane's own hooks run cargo too
# (installFromCargoBuildLog runs `cargo metadata`, which asks rustc for target information
# with the exported RUSTFLAGS; a token there fails the build after cargo built it).
#
# Why a fixed path: RUSTFLAGS then never name the profile's store path, so the same profile
# bytes give the same flags, and the same binary, whichever derivation supplied them
# (trained, cached or published with a release).
#
# Usage: PGO_PROFILE=FILE PGO_RUSTFLAGS=FLAGS [PGO_PROFILE_STAGE_DIR=DIR] \
#          [STAGE_COMMON=common.sh] bash pgo-use-flags.sh      -> the resolved flags on stdout
#   PGO_PROFILE            the .profdata to use
#   PGO_RUSTFLAGS          the flags, naming the profile as `-Cprofile-use=@pgoProfile@`
#   PGO_PROFILE_STAGE_DIR  where the profile goes, as profile.profdata (default
#                          $NIX_BUILD_TOP/pgo-profile: /build/pgo-profile in Nix's sandbox)
set -euo pipefail
# shellcheck source=common.sh
. "${STAGE_COMMON:-$(dirname "${BASH_SOURCE[0]}")/common.sh}"
STAGE_NAME=${STAGE_NAME:-pgo-use-flags}
need_var PGO_PROFILE
need_var PGO_RUSTFLAGS
nonempty "$PGO_PROFILE" "PGO profile (PGO_PROFILE)"
case "$PGO_RUSTFLAGS" in
  *-Cprofile-use=@pgoProfile@*) ;;
  *) die "PGO_RUSTFLAGS have no -Cprofile-use=@pgoProfile@: the profile would not be used" ;;
esac
stage_dir=${PGO_PROFILE_STAGE_DIR:-${NIX_BUILD_TOP:-}/pgo-profile}
[ "$stage_dir" != /pgo-profile ] || die "PGO_PROFILE needs NIX_BUILD_TOP or PGO_PROFILE_STAGE_DIR"
mkdir -p "$stage_dir"
install -m 0644 "$PGO_PROFILE" "$stage_dir/profile.profdata"
# mtime 1, as every file in the store and in crane's artifact archives: rustc lists the profile
# among each crate's inputs, and cargo rebuilds a crate whose input is newer than its last
# build. Staged with the time of staging, the profile made the dependency build's artifacts
# (restored at mtime 1) look stale, and the profile-use build recompiled every dependency.
touch -h -d @1 "$stage_dir/profile.profdata"
note "profile $(scrub_store "$PGO_PROFILE") staged at $stage_dir/profile.profdata"
printf '%s\n' "${PGO_RUSTFLAGS//@pgoProfile@/$stage_dir/profile.profdata}"
