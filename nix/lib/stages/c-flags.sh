# shellcheck shell=bash
# Stage step of a profile-use build (deps and binary alike), right after pgo-use-flags.sh:
# print the C and C++ flags of the build scripts' compiler (`cc`, `cmake` crates read
# CFLAGS_<target> and CXXFLAGS_<target>) with `@pgoProfile@` resolved to the profile
# pgo-use-flags.sh staged. One profile for both languages: rustc's and clang's of the same
# LLVM read the same format, and the training wrote C's counters into the same .profraw files.
# The builder exports what it prints before the first phase that may run cargo, as it does
# RUSTFLAGS: no process of the build sees the token, and the flags name no store path.
#
# Usage: PGO_CFLAGS=FLAGS [PGO_PROFILE_STAGE_DIR=DIR] [STAGE_COMMON=common.sh] bash c-flags.sh
#   PGO_CFLAGS             the flags, naming the profile as `-fprofile-use=@pgoProfile@`
#   PGO_PROFILE_STAGE_DIR  where pgo-use-flags.sh staged profile.profdata (its default:
#                          $NIX_BUILD_TOP/pgo-profile)
set -euo pipefail
# shellcheck source=common.sh
. "${STAGE_COMMON:-$(dirname "${BASH_SOURCE[0]}")/common.sh}"
STAGE_NAME=${STAGE_NAME:-c-flags}
need_var PGO_CFLAGS
case "$PGO_CFLAGS" in
  *-fprofile-use=@pgoProfile@*) ;;
  *) die "PGO_CFLAGS have no -fprofile-use=@pgoProfile@: the C would not use the profile" ;;
esac
stage_dir=${PGO_PROFILE_STAGE_DIR:-${NIX_BUILD_TOP:-}/pgo-profile}
[ "$stage_dir" != /pgo-profile ] || die "PGO_CFLAGS needs NIX_BUILD_TOP or PGO_PROFILE_STAGE_DIR"
nonempty "$stage_dir/profile.profdata" "the staged profile (pgo-use-flags.sh runs first)"
printf '%s\n' "${PGO_CFLAGS//@pgoProfile@/$stage_dir/profile.profdata}"
