# The preflight: what a crate carries that the chain cannot take, refused at evaluation, in
# seconds and before any build, with the fix named; and what the chain does itself about the
# rest. A packager otherwise learns of it from the PGO build, ten minutes in (rust-lld:
# "--strip-all and --emit-relocs may not be used together").
#
# Reads the release profile as cargo resolves it for the chain's builds: the workspace root's
# Cargo.toml, overridden by src's .cargo/config.toml (or .cargo/config), overridden by
# `--config profile.release.KEY=VALUE` in the cargo arguments; and the rustflags of that
# config file, which the chain's RUSTFLAGS would otherwise silently replace, and of
# extraRustflags: every place a rustflag of the chain's builds can come from (cargo's
# CARGO_ENCODED_RUSTFLAGS, which would replace them all, is refused by stages/cargo-build.sh).
# What each refusal means: docs/chain.md "Packager checklist".
#
# Arguments: src (the cargo workspace), binName, cargoArgs (the cargo arguments of every build,
# one string), extraRustflags, keepDebugInfo, symbolMangling, hostTriple.
#
# Returns, or throws every refusal at once:
#   buildEnv         the environment every cargo build gets (the chain's profile overrides)
#   configRustflags  the config file's rustflags for hostTriple, to prepend to every stage's
#   manglingFlags    "-Csymbol-mangling-version=v0" or ""
#   shipStrip        "symbols" when the crate asked for a stripped binary: the chain builds
#                    with symbols (BOLT needs them) and strips <bin>-pgo-bolt's output
#   profile          the effective release profile, as the proofs record it
#   rustflagSources  [ { source, flags } ]: the rustflags every stage applies, by where they
#                    come from (the config file, extraRustflags), as pgo-proof.json records them
#   stripSetting     the crate's strip setting in its own words and place
#                    (`Cargo.toml [profile.release] strip = "symbols"`), or "" when unset
{
  src,
  binName,
  cargoArgs,
  extraRustflags,
  keepDebugInfo,
  symbolMangling,
  hostTriple,
}:
let
  inherit (builtins)
    concatStringsSep
    elem
    filter
    head
    isList
    isString
    match
    pathExists
    readFile
    fromTOML
    ;
  readToml = p: if pathExists p then fromTOML (readFile p) else { };
  manifest = readToml (src + "/Cargo.toml");
  configPath =
    if pathExists (src + "/.cargo/config.toml") then
      src + "/.cargo/config.toml"
    else
      src + "/.cargo/config";
  config = readToml configPath;

  # The cargo arguments as words (the builder passes them to bash unquoted, so a word may
  # carry shell quotes: stripped here).
  words = map (w: let m = match "'(.*)'" w; in if m == null then w else head m) (
    filter (w: isString w && w != "") (builtins.split "[[:space:]]+" cargoArgs)
  );
  # The values of every `--config X` / `--config=X` among the words.
  configArgs =
    let
      go =
        ws:
        if ws == [ ] then
          [ ]
        else
          let
            w = head ws;
            rest = builtins.tail ws;
            eq = match "--config=(.*)" w;
          in
          if w == "--config" && rest != [ ] then
            [ (head rest) ] ++ go (builtins.tail rest)
          else if eq != null then
            [ (head eq) ] ++ go rest
          else
            go rest;
    in
    go words;
  # `--config profile.release.KEY=VALUE` (VALUE in TOML) as { KEY = value; }.
  argProfile = builtins.listToAttrs (
    builtins.concatMap (
      c:
      let
        m = match "profile\\.release\\.([A-Za-z-]+)=(.*)" c;
      in
      if m == null then
        [ ]
      else
        [
          {
            name = head m;
            value = (fromTOML "v = ${builtins.elemAt m 1}").v;
          }
        ]
    ) configArgs
  );
  given = (manifest.profile.release or { }) // (config.profile.release or { }) // argProfile;

  # cargo's release defaults (the cargo book, "Profiles"); strip defaults to "debuginfo" when
  # debug info is off (cargo >= 1.77).
  debug =
    let
      d = given.debug or false;
    in
    if d == false || d == 0 || d == "none" then
      "none"
    else if d == true || d == 2 || d == "full" then
      "full"
    else if d == 1 then
      "limited"
    else
      toString d;
  strip =
    let
      s = given.strip or (if debug == "none" then "debuginfo" else "none");
    in
    if s == true then
      "symbols"
    else if s == false then
      "none"
    else
      s;
  # The crate's own words for strip, quoted in the messages and the proof: `strip = "symbols"`
  # and `strip = true` ask for the same, but a packager searches for what their file says.
  stripSetting =
    let
      v = given.strip;
      shown = if v == true then "true" else if v == false then "false" else "\"${toString v}\"";
    in
    if argProfile ? strip then
      "--config profile.release.strip=${shown}"
    else if config.profile.release.strip or null != null then
      ".cargo/${baseNameOf (toString configPath)} [profile.release] strip = ${shown}"
    else if given ? strip then
      "Cargo.toml [profile.release] strip = ${shown}"
    else
      "";
  lto =
    let
      l = given.lto or false;
    in
    if l == true then
      "fat"
    else if l == false then
      "false"
    else
      l;
  profile = {
    opt-level = toString (given.opt-level or 3);
    inherit debug strip lto;
    split-debuginfo = given.split-debuginfo or "off";
    codegen-units = toString (given.codegen-units or 16);
    panic = given.panic or "unwind";
  };

  # The config file's rustflags for the chain's target: cargo takes target.<triple>.rustflags,
  # else build.rustflags, and ignores both whenever RUSTFLAGS is set, as it is in every
  # chain build. So the chain passes them on itself.
  flagList = f: if isList f then f else filter (w: isString w && w != "") (builtins.split " +" f);
  configRustflags = concatStringsSep " " (
    flagList (config.target.${hostTriple}.rustflags or config.build.rustflags or [ ])
  );
  cfgTargets = filter (t: match "cfg\\(.*" t != null && config.target.${t} ? rustflags) (
    builtins.attrNames (config.target or { })
  );

  has = re: s: match ".*(${re}).*" s != null;
  allRustflags = "${configRustflags} ${extraRustflags}";
  # Where each of the chain's rustflags comes from, as every stage applies them (in this
  # order, before the stage's own): recorded in pgo-proof.json's `rustflags_applied`.
  configSource =
    if config.target.${hostTriple}.rustflags or null != null then
      ".cargo/${baseNameOf (toString configPath)} target.${hostTriple}.rustflags"
    else
      ".cargo/${baseNameOf (toString configPath)} build.rustflags";
  rustflagSources = filter (s: s.flags != "") [
    {
      source = configSource;
      flags = configRustflags;
    }
    {
      source = "extraRustflags";
      flags = extraRustflags;
    }
  ];
  # The opt-level rustc gets from rustflags: RUSTFLAGS follow cargo's own `-C opt-level=` from
  # the profile, and rustc takes the last value of a codegen option, so a flag here overrides
  # the profile in every rustc call (`-O` is opt-level 3). null: none.
  optLevelIn =
    flags:
    let
      go =
        prev: ws:
        if ws == [ ] then
          prev
        else
          let
            w = head ws;
            rest = builtins.tail ws;
            joined = match "(-C|--codegen)=?opt-level=(.*)" w;
            split =
              if
                elem w [
                  "-C"
                  "--codegen"
                ]
                && rest != [ ]
              then
                match "opt-level=(.*)" (head rest)
              else
                null;
          in
          if w == "-O" then
            go "3" rest
          else if joined != null then
            go (builtins.elemAt joined 1) rest
          else if split != null then
            go (head split) (builtins.tail rest)
          else
            go prev rest;
    in
    go null (flagList flags);
  flagOptLevel = optLevelIn allRustflags;
  # The source whose opt-level wins (the last that sets one), for the refusal to name.
  optLevelSource = builtins.foldl' (
    acc: s: if optLevelIn s.flags != null then s.source else acc
  ) "" rustflagSources;
  # `--config build.rustflags=...` / `target.<t>.rustflags`: cargo ignores both under RUSTFLAGS
  # (set in every chain build), so they would be silently dropped.
  configArgRustflags = filter (c: match "(build|target\.[^=]*)\.rustflags=.*" c != null) configArgs;
  owned = filter (
    w:
    elem w [
      "--release"
      "-r"
      "--profile"
      "--target"
      "--message-format"
    ]
    || match "--(profile|target|message-format)=.*" w != null
  ) words;
  stripsRe = "-C *strip=|--strip-all|-Wl,-s( |,|$)|link-arg=-s( |$)";
  # Each refusal: when it applies, and what to do (docs/chain.md "Packager checklist").
  refusals = map (r: r.why) (
    filter (r: r.when) [
      {
        when = pathExists (src + "/Cargo.toml") && !pathExists (src + "/Cargo.lock");
        why =
          "src has no Cargo.lock: the chain builds --locked and vendors the lock file; run"
          + " `cargo generate-lockfile` in the crate and add Cargo.lock to src";
      }
      {
        when = profile.opt-level == "0";
        why =
          "the release profile has opt-level = 0: profile-guided optimization has nothing to"
          + " guide; set opt-level to 1, 2, 3, \"s\" or \"z\"";
      }
      {
        when =
          keepDebugInfo
          && debug != "none"
          && elem profile.split-debuginfo [
            "packed"
            "unpacked"
          ];
        why =
          "the release profile has debug info (${debug}) with split-debuginfo ="
          + " \"${profile.split-debuginfo}\": the chain ships bin/${binName} alone, and BOLT"
          + " would rewrite DWARF that lives in .dwo files outside it; set split-debuginfo ="
          + " \"off\", or keepDebugInfo = false to drop the debug info";
      }
      {
        when = elem (argProfile.strip or null) [
          true
          "symbols"
        ];
        why =
          "cargo arguments set ${stripSetting}: the chain links with symbols and"
          + " relocations (BOLT reads them) and strips ${binName}-pgo-bolt itself when the"
          + " crate's profile says strip = true or \"symbols\"; drop the --config and set"
          + " strip in the crate's [profile.release]";
      }
      {
        when = has stripsRe allRustflags;
        why =
          "rustflags strip the binary (-Cstrip or a linker --strip-all): BOLT needs the"
          + " symbols and the --emit-relocs relocations; drop the flag (the chain strips"
          + " ${binName}-pgo-bolt itself when the crate's profile says strip = true or"
          + " \"symbols\")";
      }
      {
        # Below the profile's, or 0, it defeats what the profile guides while the proof's
        # profile_release would record the profile's value; any other value belongs there too.
        when = flagOptLevel != null && flagOptLevel != profile.opt-level;
        why =
          "rustflags (${optLevelSource}) set -Copt-level=${toString flagOptLevel}, which"
          + " overrides the release"
          + " profile's opt-level = ${profile.opt-level} in every rustc call (the proof would"
          + " record ${profile.opt-level}); drop the flag and set opt-level in the crate's"
          + " [profile.release] (or --config profile.release.opt-level=... in extraCargoArgs)";
      }
      {
        when = configArgRustflags != [ ];
        why =
          "cargo arguments set --config ${head configArgRustflags}: cargo ignores config"
          + " rustflags under RUSTFLAGS, which every chain build sets; give them as"
          + " `extraRustflags`";
      }
      {
        when = has "profile-generate|profile-use|profile-sample-use" allRustflags;
        why = "rustflags carry a -Cprofile-* flag: the chain sets those, one per stage; drop it";
      }
      {
        when = has "symbol-mangling-version" allRustflags;
        why =
          "rustflags set -Csymbol-mangling-version: the chain sets it from `symbolMangling`"
          + " (default \"v0\"); give that argument instead";
      }
      {
        when = owned != [ ];
        why =
          "cargo arguments carry ${concatStringsSep " " owned}: the chain builds --release"
          + " for ${hostTriple} itself (profile settings: the crate's [profile.release], or"
          + " --config profile.release.KEY=VALUE)";
      }
      {
        when = cfgTargets != [ ];
        why =
          "src's .cargo/${baseNameOf (toString configPath)} sets rustflags under"
          + " target.'${head cfgTargets}', which the chain cannot evaluate (its RUSTFLAGS"
          + " replace them): give those flags as `extraRustflags`";
      }
      {
        when =
          !elem symbolMangling [
            "v0"
            "legacy"
          ];
        why = "symbolMangling must be \"v0\" or \"legacy\", not \"${toString symbolMangling}\"";
      }
    ]
  );
in
if refusals != [ ] then
  throw (
    "mkPgoBoltChain ${binName}: preflight refused (docs/chain.md \"Packager checklist\"):\n  - "
    + concatStringsSep "\n  - " refusals
  )
else
  {
    inherit
      profile
      configRustflags
      rustflagSources
      stripSetting
      ;
    shipStrip = if strip == "symbols" then "symbols" else "none";
    # Linking with symbols and --emit-relocs: strip = "symbols" becomes "debuginfo" for the
    # chain's builds (rust-lld refuses --strip-all with --emit-relocs).
    buildEnv = if strip == "symbols" then { CARGO_PROFILE_RELEASE_STRIP = "debuginfo"; } else { };
    manglingFlags = if symbolMangling == "v0" then "-Csymbol-mangling-version=v0" else "";
  }
