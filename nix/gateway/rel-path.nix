# relPath DIR PATH: PATH relative to DIR, for a builtins.path filter under DIR. Not by the
# prefix's length: evaluated against a chroot store (`--store /some/root`, tier e's fresh
# store), Nix hands a filter the physical path, /some/root/nix/store/..., of a DIR in the store
# (a flake's `self`, a cleaned source), so the part after DIR's own path is taken instead.
dir:
let
  marker = (toString dir) + "/";
in
path:
let
  m = builtins.match "[^\n]*\n(.*)" (builtins.replaceStrings [ marker ] [ "\n" ] (toString path));
in
if m == null then
  throw "relPath: ${toString path} is not below ${toString dir}"
else
  builtins.head m
