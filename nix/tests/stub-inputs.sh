# shellcheck shell=bash
# The flake's inputs replaced by the stubs in nix/tests/stubs and crane by the crane stand-in
# (the real ones cannot be fetched here), as `nix eval` arguments: nixf. Sourced by the tests
# that evaluate the flake (tier-b.sh, edit-matrix.sh, release-tests.sh) after setting repo.
: "${repo:?repo must be set}"
stubs="$repo/nix/tests/stubs"
# shellcheck disable=SC2034 # read by the scripts that source this file
nixf=(
  --extra-experimental-features 'nix-command flakes'
  --option substituters ''
  --option build-users-group ''
  --no-write-lock-file
  --override-input nixpkgs "path:$stubs/nixpkgs"
  --override-input crane "path:$repo/nix/host/crane"
  --override-input fenix "path:$stubs/fenix"
  --override-input fenix/rust-analyzer-src "path:$stubs/rust-analyzer-src"
)
