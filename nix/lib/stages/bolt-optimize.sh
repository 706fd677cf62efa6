# shellcheck shell=bash
# Stage: PGO+BOLT. Rewrites the PGO binary with the trained .fdata and proves it did:
# the output must carry .note.bolt_info, keep a non-executable GNU_STACK, and BOLT must have
# run in relocation mode with a non-empty profile for some functions. Then bolt-proof.json.
#
# Environment:
#   STAGE_COMMON  path of common.sh
#   PGO_BIN       the PGO binary (--emit-relocs, symbols kept)
#   PGO_PROOF     its pgo-proof.json, carried into the output
#   FDATA         the merged <BIN_NAME>.fdata
#   FDATA_MANIFEST  its manifest.json: its pgo_bin_sha256 must be PGO_BIN's sha256
#   LLVM_BOLT     absolute path of llvm-bolt
#   READELF       absolute path of readelf
#   BOLT_FLAGS    the optimization flags (see chain.nix; never -use-gnu-stack: it drops
#                 GNU_STACK and the tokio thread stacks become executable). With
#                 -use-old-text, a binary whose old text BOLT cannot empty (it refuses to
#                 leave a function in place: ring's hand-written assembly) is rewritten
#                 without it; the proof's `use_old_text` says which
#   KEEP_DEBUG_INFO  1: BOLT_FLAGS must carry -update-debug-sections, and an input with
#                 .debug_info must give an output with it; 0: dropped. The proof's debug_info
#                 says which: kept, dropped, or none (the input had none)
#   SHIP_STRIP    symbols: the crate asks strip = true or "symbols", which the chain's builds
#                 could not honour (BOLT needs the symbols and relocations): the output is
#                 stripped here, keeping .note.bolt_info; none (default): shipped as BOLT wrote it
#   SHIP_STRIP_SETTING  the crate's own words for it (`Cargo.toml [profile.release] strip =
#                 "symbols"`), quoted in the log and the proof (optional)
#   STRIP         absolute path of llvm-strip, read when SHIP_STRIP=symbols or PLAIN_BIN is
#                 given with SHIP_STRIP=symbols
#   PLAIN_BIN     the crate's own build (the plain stage) (optional): the proof's `size` then
#                 sets the shipped binary beside it, stripped the crate's way
#   BIN_NAME      the binary's name (bin/<BIN_NAME>; the stage is <BIN_NAME>-pgo-bolt)
#   OUT_DIR       install prefix (defaults to $out): bin/, share/<BIN_NAME>/
set -euo pipefail
# shellcheck source=common.sh
. "$STAGE_COMMON"
STAGE_NAME=${STAGE_NAME:-${BIN_NAME:-?}-pgo-bolt}
stage_start

need_var BIN_NAME
need_exe PGO_BIN "${PGO_BIN:-}"
need_exe LLVM_BOLT "${LLVM_BOLT:-}"
need_exe READELF "${READELF:-}"
nonempty "${FDATA:-/nonexistent}" "BOLT profile (.fdata)"
nonempty "${PGO_PROOF:-/nonexistent}" "pgo-proof.json"
nonempty "${FDATA_MANIFEST:-/nonexistent}" "BOLT profile manifest"
# A BOLT profile fits only the binary it was trained on: one from a cache or a release,
# applied to another PGO build, would lay out the wrong code (llvm-bolt only warns).
input_sha=$(sha256_of "$PGO_BIN")
trained_sha=$(sed -nE 's/^ *"pgo_bin_sha256": "([0-9a-f]{64})".*/\1/p' "$FDATA_MANIFEST" | head -n1)
[ -n "$trained_sha" ] || die "the BOLT profile's manifest names no pgo_bin_sha256 (the binary it was trained on)"
[ "$trained_sha" = "$input_sha" ] ||
  die "the BOLT profile was trained on another binary (sha256 $trained_sha), not this PGO build ($input_sha)"
need_var BOLT_FLAGS
case " $BOLT_FLAGS " in
  *" -use-gnu-stack "*) die "-use-gnu-stack makes the thread stacks executable" ;;
esac
case ${KEEP_DEBUG_INFO:-} in
  1) case " $BOLT_FLAGS " in
    *" -update-debug-sections "*) ;;
    *) die "KEEP_DEBUG_INFO=1 but BOLT_FLAGS lack -update-debug-sections: BOLT would drop the DWARF" ;;
  esac ;;
  0) ;;
  *) die "KEEP_DEBUG_INFO must be 1 or 0, not '${KEEP_DEBUG_INFO:-}'" ;;
esac
OUT_DIR=${OUT_DIR:-${out:-}}
need_var OUT_DIR

work=$(mktemp -d "${TMPDIR:-/tmp}/bolt.XXXXXX")
# Copy input and profile into the build dir: .note.bolt_info records the whole command line,
# and a store path in it would become a runtime reference of the output.
cp "$PGO_BIN" "$work/$BIN_NAME"
cp "$FDATA" "$work/$BIN_NAME.fdata"
chmod u+w "$work/$BIN_NAME" "$work/$BIN_NAME.fdata"
# bolt FLAGS: llvm-bolt on the copy, its log in bolt.log.
bolt() {
  # shellcheck disable=SC2086 # the flags are a word list by design
  (cd "$work" && exec -a llvm-bolt "$LLVM_BOLT" "$BIN_NAME" -o "$BIN_NAME.bolt" \
    -data="$BIN_NAME.fdata" $1) >"$work/bolt.log" 2>&1
}
# -use-old-text puts the new code into the original .text, which BOLT otherwise keeps beside
# it (sd: 3.24 MB shipped without, 2.63 MB with, 2.39 MB for its own stripped build; the same
# instructions). It needs every function moved out: BOLT refuses a function it cannot
# rewrite ("cannot ignore non-empty function ... in current mode"; the gateway's ring
# assembly), and then the old text stays.
use_old_text=no
case " $BOLT_FLAGS " in *" -use-old-text "*) use_old_text=yes ;; esac
if ! bolt "$BOLT_FLAGS"; then
  if [ "$use_old_text" = yes ] && grep -q 'cannot ignore non-empty function' "$work/bolt.log"; then
    note "-use-old-text refused ($(grep -m1 -o 'cannot ignore non-empty function [^ ]*' "$work/bolt.log")): rewriting with the old text kept"
    use_old_text="refused: $(grep -m1 -o 'cannot ignore non-empty function [^ ]*' "$work/bolt.log")"
    BOLT_FLAGS=$(printf '%s\n' $BOLT_FLAGS | grep -vx -- '-use-old-text' | paste -sd ' ' -)
    bolt "$BOLT_FLAGS" || {
      cat "$work/bolt.log" >&2
      die "llvm-bolt failed"
    }
  else
    cat "$work/bolt.log" >&2
    die "llvm-bolt failed"
  fi
fi
grep -E 'BOLT-(INFO|WARNING): .*(relocation mode|profile|functions)' "$work/bolt.log" >&2 || true

grep -q 'enabling relocation mode' "$work/bolt.log" ||
  die "BOLT did not run in relocation mode (link the PGO build with -Wl,--emit-relocs)"
profiled_line=$(grep -E 'functions in the binary .* have non-empty execution profile' "$work/bolt.log" | head -n1 || true)
functions_with_profile=$(printf '%s' "$profiled_line" | sed -nE 's/.*BOLT-INFO: ([0-9]+) out of ([0-9]+) functions.*/\1/p')
functions_total=$(printf '%s' "$profiled_line" | sed -nE 's/.*BOLT-INFO: ([0-9]+) out of ([0-9]+) functions.*/\2/p')
[ "${functions_with_profile:-0}" -gt 0 ] || die "no function has a BOLT profile: $profiled_line"

note_text=$("$READELF" -p .note.bolt_info "$work/$BIN_NAME.bolt" 2>/dev/null || true)
printf '%s\n' "$note_text" | grep -q 'BOLT revision' || die "output has no .note.bolt_info"
case "$note_text" in
  */nix/store/*) die ".note.bolt_info names a store path" ;;
esac
stack=$("$READELF" -lW "$work/$BIN_NAME.bolt" | grep GNU_STACK || true)
[ -n "$stack" ] || die "output has no GNU_STACK program header"
case "$(printf '%s' "$stack" | awk '{print $7}')" in
  RW) ;;
  *) die "GNU_STACK is not plain RW: $stack" ;;
esac

# has_debug_info FILE: whether FILE has a non-empty .debug_info section.
has_debug_info() {
  "$READELF" -SW "$1" | sed -E 's/^ *\[ *[0-9]+\] +//' |
    awk '$1 == ".debug_info" && $5 !~ /^0+$/ { found = 1 } END { exit !found }'
}
# Without -update-debug-sections BOLT writes no DWARF at all (27 MB -> 12.7 MB on the gateway):
# stale DWARF, describing the pre-BOLT layout, would be worse than none.
if ! has_debug_info "$work/$BIN_NAME"; then
  debug_info=none
elif has_debug_info "$work/$BIN_NAME.bolt"; then
  [ "$KEEP_DEBUG_INFO" = 1 ] ||
    die "BOLT's output carries .debug_info it was not told to update (-update-debug-sections)"
  debug_info=kept
elif [ "$KEEP_DEBUG_INFO" = 1 ]; then
  die "the PGO build has .debug_info but BOLT's output lost it (keepDebugInfo is set)"
else
  debug_info=dropped
fi

# The size the crate intends: strip = true or "symbols", applied after BOLT (which needed the
# symbols).
shipped="$work/$BIN_NAME.bolt"
case ${SHIP_STRIP:-none} in
  none) ;;
  symbols)
    need_exe STRIP "${STRIP:-}"
    "$STRIP" --strip-all --keep-section=.note.bolt_info -o "$work/$BIN_NAME.shipped" "$shipped" ||
      die "strip --strip-all failed"
    # Stripping removes what no segment maps, nothing else: GNU strip 2.40 moves BOLT's
    # 2 MiB-aligned code segment ("can't be allocated in segment"), exits 0, and the binary
    # segfaults. Hence llvm-strip, and this check: every program header keeps its addresses,
    # sizes, flags and alignment (only its file offset may move, page-congruent with its
    # address, as the loader requires).
    segments() { "$READELF" -lW "$1" | grep -E '^ +[A-Z_]+ +0x' | awk '{ $2 = ""; print }'; }
    [ "$(segments "$shipped")" = "$(segments "$work/$BIN_NAME.shipped")" ] ||
      die "$(basename "$STRIP") changed the program headers: the stripped binary would not load as BOLT laid it out"
    "$READELF" -lW "$work/$BIN_NAME.shipped" | awk '$1 == "LOAD" { print $2, $3 }' |
      while read -r offset vaddr; do
        [ $((offset % 4096)) -eq $((vaddr % 4096)) ] ||
          die "$(basename "$STRIP") left a LOAD segment at offset $offset for address $vaddr"
      done
    "$READELF" -p .note.bolt_info "$work/$BIN_NAME.shipped" 2>/dev/null | grep -q 'BOLT revision' ||
      die "the stripped output lost .note.bolt_info"
    "$READELF" -SW "$work/$BIN_NAME.shipped" >"$work/shipped-sections.txt"
    ! grep -qE ' \.(symtab|debug_info) ' "$work/shipped-sections.txt" ||
      die "strip left a symbol table or debug info"
    [ "$("$READELF" -lW "$work/$BIN_NAME.shipped" | grep GNU_STACK | awk '{print $7}')" = RW ] ||
      die "the stripped output's GNU_STACK is not plain RW"
    note "stripped (the crate's ${SHIP_STRIP_SETTING:-strip = true}): $(bytes_of "$shipped") -> $(bytes_of "$work/$BIN_NAME.shipped") bytes"
    shipped="$work/$BIN_NAME.shipped"
    ;;
  *) die "SHIP_STRIP must be none or symbols, not '$SHIP_STRIP'" ;;
esac

# What the chain costs in bytes: the shipped binary beside the crate's own build (the plain
# stage, stripped as the crate's profile asks), for the proof's `size`.
size_fields=()
if [ -n "${PLAIN_BIN:-}" ]; then
  need_exe PLAIN_BIN "$PLAIN_BIN"
  crate_build="$PLAIN_BIN"
  crate_how="the plain stage as built"
  if [ "${SHIP_STRIP:-none}" = symbols ]; then
    "$STRIP" --strip-all -o "$work/$BIN_NAME.plain-stripped" "$PLAIN_BIN" || die "strip of the plain build failed"
    crate_build="$work/$BIN_NAME.plain-stripped"
    crate_how="the plain stage stripped (${SHIP_STRIP_SETTING:-strip = true})"
  fi
  crate_bytes=$(bytes_of "$crate_build")
  shipped_bytes=$(bytes_of "$shipped")
  ratio=$(awk -v s="$shipped_bytes" -v c="$crate_bytes" 'BEGIN { printf "%.3f", s / c }')
  note "size: shipped $shipped_bytes bytes, the crate's own build $crate_bytes ($crate_how): ${ratio}x"
  size_fields=(size "{\"shipped_bytes\": $shipped_bytes, \"crate_build_bytes\": $crate_bytes, \"crate_build\": $(json_str "$crate_how"), \"ratio\": $ratio}")
fi

bolt_version=$("$LLVM_BOLT" --version 2>&1 | grep -E 'LLVM version|BOLT revision' | sed -E 's/^[[:space:]]+//' | paste -sd ';' -)
mkdir -p "$OUT_DIR/bin" "$OUT_DIR/share/$BIN_NAME"
tmp="$work/bolt-proof.json"
json_object "$tmp" \
  stage "$(json_str "$BIN_NAME-pgo-bolt")" \
  fdata_sha256 "$(json_str "$(sha256_of "$work/$BIN_NAME.fdata")")" \
  fdata_bytes "$(bytes_of "$work/$BIN_NAME.fdata")" \
  functions_with_profile "$functions_with_profile" \
  functions_total "${functions_total:-0}" \
  input_sha256 "$(json_str "$(sha256_of "$work/$BIN_NAME")")" \
  bolt_output_sha256 "$(json_str "$(sha256_of "$work/$BIN_NAME.bolt")")" \
  output_sha256 "$(json_str "$(sha256_of "$shipped")")" \
  output_bytes "$(bytes_of "$shipped")" \
  strip "$(json_str "${SHIP_STRIP:-none}")" \
  strip_setting "$(json_str "${SHIP_STRIP_SETTING:-}")" \
  use_old_text "$(json_str "$use_old_text")" \
  bolt_version "$(json_str "$bolt_version")" \
  gnu_stack "$(json_str "$(printf '%s' "$stack" | awk '{print $7}')")" \
  debug_info "$(json_str "$debug_info")" \
  bolt_info "$(json_str "$(printf '%s\n' "$note_text" | grep -o 'BOLT revision.*' | head -n1)")" \
  flags "$(json_str "-data=$BIN_NAME.fdata $BOLT_FLAGS")" \
  "${size_fields[@]}"
install -m 0755 "$shipped" "$OUT_DIR/bin/$BIN_NAME"
install -m 0644 "$PGO_PROOF" "$OUT_DIR/share/$BIN_NAME/pgo-proof.json"
install -m 0644 "$tmp" "$OUT_DIR/share/$BIN_NAME/bolt-proof.json"
rm -rf "$work"
stage_done
