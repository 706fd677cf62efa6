# shellcheck shell=bash
# Helpers shared by the stage scripts. Sourced, never run. The same file is used inside the
# Nix sandbox (chain.nix passes it as $STAGE_COMMON) and by scripts/chain-local.sh, so it may
# use nothing but bash and coreutils/grep/sed: no jq, no python (a fresh Debian box and the
# bare host-builder sandbox have neither).

die() {
  echo "stage ${STAGE_NAME:-?}: FAILED: $*" >&2
  exit 1
}

note() {
  echo "stage ${STAGE_NAME:-?}: $*" >&2
}

# need_exe NAME PATH: tools are passed by absolute path, never looked up on PATH (PATH holds
# LLVM 14's llvm-profdata on Debian, which cannot read rustc's profiles).
need_exe() {
  case "$2" in
    /*) ;;
    *) die "$1 must be an absolute path, got '$2'" ;;
  esac
  [ -x "$2" ] || die "$1 is not an executable file: $2"
}

need_var() {
  [ -n "${!1:-}" ] || die "environment variable $1 is not set"
}

# nonempty FILE WHAT: fail closed on a missing or empty result.
nonempty() {
  [ -s "$1" ] || die "$2 is missing or empty: $1"
}

sha256_of() {
  sha256sum "$1" | cut -d' ' -f1
}

bytes_of() {
  stat -c %s "$1"
}

# scrub_store STRING: replace the hash part of store paths so a proof file copied into an
# output creates no runtime reference (Nix scans outputs for store hashes: a proof naming the
# profile's store path would drag the profile into the closure of gateway-pgo-bolt).
scrub_store() {
  printf '%s' "$1" | scrub_store_lines
}

# scrub_store_lines: scrub_store on stdin.
scrub_store_lines() {
  sed -E 's#/nix/store/[0-9a-z]{32}-#/nix/store/<hash>-#g'
}

# json_str STRING: a JSON string literal (quotes, backslashes and control characters escaped).
json_str() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\n'/\\n}
  s=${s//$'\r'/\\r}
  s=${s//$'\t'/\\t}
  printf '"%s"' "$s"
}

# json_object FILE KEY VALUE [KEY VALUE ...]: writes FILE, a flat JSON object with one
# "KEY": VALUE per line in the order given; each VALUE is JSON already (json_str for strings).
# Every manifest and proof is written by it: their readers (json_num below, the proof checks,
# scripts/release-check.sh) read them line by line, so they stay flat.
json_object() {
  local file=$1
  shift
  [ $(($# % 2)) -eq 0 ] || die "json_object: a key without a value"
  {
    printf '{\n'
    while [ $# -gt 2 ]; do
      printf '  "%s": %s,\n' "$1" "$2"
      shift 2
    done
    [ $# -eq 0 ] || printf '  "%s": %s\n' "$1" "$2"
    printf '}\n'
  } >"$file"
}

# json_num KEY FILE: the first numeric value of "KEY" in a JSON file, or nothing. Enough for
# the flat figures the trainer's manifest carries; a missing key is the caller's failure.
json_num() {
  grep -oE "\"$1\"[[:space:]]*:[[:space:]]*-?[0-9]+(\.[0-9]+)?" "$2" 2>/dev/null |
    head -n1 | sed -E 's/.*:[[:space:]]*//'
}

# json_strval KEY FILE: the first string value of "KEY" in a JSON file, or nothing.
json_strval() {
  grep -oE "\"$1\"[[:space:]]*:[[:space:]]*\"[^\"]*\"" "$2" 2>/dev/null |
    head -n1 | sed -E 's/^[^:]*:[[:space:]]*"//; s/"$//'
}

# llvm_major "VERSION TEXT": the first LLVM major version number in a --version/-vV text.
llvm_major() {
  printf '%s\n' "$1" | grep -oE '(LLVM version|llvm-profdata version|version) [0-9]+' |
    head -n1 | grep -oE '[0-9]+$'
}

# rustc's PGO diagnostics: what the PGO gate (pgo-gate.sh) judges, and all that the
# profile-use build keeps of cargo's stderr (pgo-diagnostics.sh). Case-insensitive (grep -iE).
# An unreadable profile: rustc only warns, then builds without it.
# shellcheck disable=SC2034 # read by the scripts that source this file
pgo_unusable_re='invalid instrumentation profile|Error in reading profile|profile data may be corrupt|unsupported instrumentation profile format|malformed instrumentation profile'
# shellcheck disable=SC2034
pgo_diagnostic_re="hash mismatch|no profile data available|$pgo_unusable_re"

# Stage wall time, printed at the end so CI logs carry the per-stage timings.
stage_start() {
  STAGE_T0=$(date +%s)
  note "start"
}

stage_done() {
  note "done in $(($(date +%s) - STAGE_T0)) s"
}
