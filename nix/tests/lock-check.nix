# Tier a: flake.lock is well formed and pins exactly DESIGN.md's inputs. Evaluated with
# `nix-instantiate --eval --strict` (Nix's own JSON parser: no jq or python needed).
#
# Arguments:
#   lockFile  path of flake.lock
{ lockFile }:
let
  lock = builtins.fromJSON (builtins.readFile lockFile);
  nodes = lock.nodes;
  # DESIGN.md "Pinned flake inputs" (tier-a.sh also greps these values in DESIGN.md itself).
  expected = {
    nixpkgs = {
      owner = "NixOS";
      repo = "nixpkgs";
      ref = "nixos-unstable";
      rev = "b7c2ada94fe99c15b0dbcf4d11fd7850b957a436";
      lastModified = 1785967620;
      narHash = "sha256-IItrdb7Puk05RqOBWZYFC5X6Wl1sJmCfh5MWVHw5iMM=";
    };
    crane = {
      owner = "ipetkov";
      repo = "crane";
      ref = null;
      rev = "2c71e194474d13de031d729b729c968ddbe3507f";
      lastModified = 1785782307;
      narHash = "sha256-MPaRdVkf6zZP5fCPxYCi8Dr4pZzgmXzg8T9nVEbp3Mw=";
    };
    fenix = {
      owner = "nix-community";
      repo = "fenix";
      ref = null;
      rev = "64f11a7a106236336239646bbffccc0b80563b5c";
      lastModified = 1786172426;
      narHash = "sha256-ac9Z+rwypunbmNoEWvCt/9lWSMOALa1ROt6XeMp5zio=";
    };
    rust-analyzer-src = {
      owner = "rust-lang";
      repo = "rust-analyzer";
      ref = "nightly";
      rev = "2cfd097a835dca6e760d95ce937927dc94b5a5d1";
      lastModified = 1786107464;
      narHash = "sha256-NfZ5p0Tiemwp63uGuRCJgQKbEVwJPC96byx3MNp3IPQ=";
    };
  };
  check = cond: msg: if cond then true else throw "flake.lock: ${msg}";
  # Follow an input reference: a node name, or a `follows` path from the root.
  resolve =
    ref:
    if builtins.isString ref then
      ref
    else
      builtins.foldl' (
        nodeName: inputName:
        let
          node = nodes.${nodeName};
        in
        assert check (node ? inputs && node.inputs ? ${inputName}) "a follows is dangling";
        resolve node.inputs.${inputName}
      ) lock.root ref;
  githubNode =
    name: e:
    let
      n = nodes.${name} or (throw "flake.lock: node ${name} missing");
      l = n.locked;
    in
    builtins.all (x: x) [
      (check (l.type == "github" && n.original.type == "github") "${name} is not a github node")
      (check (builtins.match "[0-9a-f]{40}" l.rev != null) "${name}: rev is not 40 hex digits")
      (check (builtins.isInt l.lastModified) "${name}: lastModified is not an integer")
      (check (builtins.match "sha256-[A-Za-z0-9+/]{43}=" l.narHash != null) "${name}: bad narHash")
      (check (l.rev == e.rev) "${name}: rev ${l.rev} is not DESIGN.md's ${e.rev}")
      (check (l.lastModified == e.lastModified) "${name}: lastModified differs from DESIGN.md")
      (check (l.narHash == e.narHash) "${name}: narHash differs from DESIGN.md")
      (check (l.owner == e.owner && l.repo == e.repo) "${name}: owner/repo differ")
      (check (n.original.owner == e.owner && n.original.repo == e.repo) "${name}: original differs")
      (check ((n.original.ref or null) == e.ref) "${name}: original ref differs")
      (check (!(n.original ? rev)) "${name}: original must not pin a rev (locked does)")
    ];
  root = nodes.${lock.root};
in
builtins.all (x: x) (
  [
    (check (lock.version == 7) "version is ${toString lock.version}, not 7")
    (check (lock.root == "root") "root is not \"root\"")
    (check (
      builtins.attrNames root.inputs == [
        "crane"
        "fenix"
        "nixpkgs"
      ]
    ) "root inputs are not exactly crane, fenix, nixpkgs")
    (check (
      builtins.sort builtins.lessThan (builtins.attrNames nodes) == [
        "crane"
        "fenix"
        "nixpkgs"
        "root"
        "rust-analyzer-src"
      ]
    ) "unexpected nodes")
    # fenix follows our nixpkgs (no second nixpkgs node) and locks its rust-analyzer-src.
    (check (nodes.fenix.inputs.nixpkgs == [ "nixpkgs" ]) "fenix/nixpkgs must follow nixpkgs")
    (check (resolve nodes.fenix.inputs.nixpkgs == "nixpkgs") "fenix/nixpkgs does not resolve")
    (check (resolve nodes.fenix.inputs.rust-analyzer-src == "rust-analyzer-src") "ra-src")
    (check ((nodes.rust-analyzer-src.flake or true) == false) "ra-src must be flake = false")
    (check (!(nodes.crane ? inputs) || nodes.crane.inputs == { }) "crane has no inputs at this rev")
  ]
  ++ builtins.attrValues (builtins.mapAttrs (n: e: githubNode n e) expected)
  ++ map (n: check (resolve root.inputs.${n} == n) "root input ${n} does not resolve") [
    "crane"
    "fenix"
    "nixpkgs"
  ]
)
