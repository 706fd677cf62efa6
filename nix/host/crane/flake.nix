# The crane stand-in as a flake (tier b's `--override-input crane`): the same library that the
# host chain builds with (tier c), evaluated there against the stub nixpkgs.
{
  description = "crane stand-in: mkLib and the builders the gateway flake calls, build-capable";

  inputs = { };

  outputs =
    { self }:
    {
      mkLib = pkgs: import ./lib { inherit pkgs; };
    };
}
