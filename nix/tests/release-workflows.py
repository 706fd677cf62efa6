"""Static checks of .github/workflows (nix/tests/release-tests.sh).

Usage: python3 release-workflows.py REPO RUN_DIR
Parses every workflow with PyYAML and checks the rules of issue 6: actions pinned by full
commit SHA, read-only default token, native x86_64 and aarch64 runners, the Nix build, the
flake check and the release gate before anything is published, publish only after the
builds, secrets only through env/with (never inside a run script), no command tracing.
Writes each `run:` script to RUN_DIR/<workflow>-<job>-<n>.sh (expressions replaced by a
placeholder) so the caller can shellcheck them. Exits 1 listing every problem.
"""

import pathlib
import re
import sys

import yaml

repo = pathlib.Path(sys.argv[1])
run_dir = pathlib.Path(sys.argv[2])
run_dir.mkdir(parents=True, exist_ok=True)
problems = []


def need(cond, msg):
    if not cond:
        problems.append(msg)


def load(name):
    path = repo / ".github" / "workflows" / name
    with open(path) as f:
        doc = yaml.safe_load(f)
    need(isinstance(doc, dict), f"{name}: not a mapping")
    # PyYAML reads the key `on` as the boolean True (YAML 1.1).
    doc["on"] = doc.pop(True, doc.get("on"))
    return doc


def steps(doc):
    for job_name, job in doc["jobs"].items():
        for i, step in enumerate(job.get("steps", [])):
            yield job_name, i, step


def common(name, doc):
    need(doc.get("permissions") == {"contents": "read"}, f"{name}: default token must be contents: read")
    for job_name, i, step in steps(doc):
        uses = step.get("uses")
        if uses:
            need(
                re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", uses) is not None,
                f"{name}: {job_name} step {i}: {uses} is not pinned by a full commit SHA",
            )
            if uses.startswith("actions/checkout@"):
                need(
                    step.get("with", {}).get("persist-credentials") is False,
                    f"{name}: {job_name}: checkout must not persist the token",
                )
        run = step.get("run")
        if run:
            need("secrets." not in run, f"{name}: {job_name} step {i}: a secret inside a run script")
            need(
                re.search(r"(^|\s)set\s+-[a-z]*x", run) is None and "bash -x" not in run,
                f"{name}: {job_name} step {i}: command tracing would echo secrets",
            )
            script = re.sub(r"\$\{\{[^}]*\}\}", "EXPR", run)
            out = run_dir / f"{name.removesuffix('.yml')}-{job_name}-{i}.sh"
            # GitHub runs `run:` with bash -e {0}; -euo pipefail is at least as strict.
            out.write_text("#!/usr/bin/env bash\nset -euo pipefail\n" + script)


def chain_job(name, job):
    matrix = job["strategy"]["matrix"]["include"]
    systems = {m["system"]: m["runner"] for m in matrix}
    need(
        systems == {"x86_64-linux": "ubuntu-24.04", "aarch64-linux": "ubuntu-24.04-arm"},
        f"{name}: native runners expected, got {systems}",
    )
    need(job["runs-on"] == "${{ matrix.runner }}", f"{name}: runs-on must follow the matrix")
    uses = [s.get("uses", "") for s in job["steps"]]
    runs = [s.get("run", "") for s in job["steps"]]
    need(any(u.startswith("cachix/install-nix-action@") for u in uses), f"{name}: Nix not installed")
    need(any(u.startswith("cachix/cachix-action@") for u in uses), f"{name}: no binary cache")
    order = []
    for r in runs:
        for key in ("nix build -L .#gateway-pgo-bolt", "nix flake check", "scripts/release-check.sh result"):
            if key in r:
                order.append(key)
    need(
        order[:3] == ["nix build -L .#gateway-pgo-bolt", "nix flake check", "scripts/release-check.sh result"],
        f"{name}: build, flake check and release gate must run in that order, got {order}",
    )
    need(any("builtins.currentSystem" in r for r in runs), f"{name}: no native-system guard")


ci = load("ci.yml")
common("ci.yml", ci)
need(set(ci["on"]) == {"pull_request", "push"}, "ci.yml: runs on pull requests and pushes")
chain_job("ci.yml", ci["jobs"]["chain"])
cachix = [s for s in ci["jobs"]["chain"]["steps"] if s.get("uses", "").startswith("cachix/cachix-action@")]
need(
    cachix and cachix[0]["with"].get("skipPush") == "${{ github.event_name == 'pull_request' }}",
    "ci.yml: pull requests must not push to the cache",
)
need("permissions" not in ci["jobs"]["chain"], "ci.yml: the chain job needs no write permission")

rel = load("release.yml")
common("release.yml", rel)
need(rel["on"] == {"push": {"tags": ["v*"]}}, "release.yml: runs on v* tags only")
build, publish = rel["jobs"]["build"], rel["jobs"]["publish"]
chain_job("release.yml", build)
need("permissions" not in build, "release.yml: the build job must not be able to publish")
need(publish.get("needs") == "build", "release.yml: publish must need the builds")
need(
    publish.get("permissions") == {"contents": "write", "packages": "write"},
    "release.yml: publish needs exactly contents and packages write",
)
pub_runs = [s.get("run", "") for s in publish["steps"]]
gate = next((i for i, r in enumerate(pub_runs) if "scripts/release-check.sh" in r), None)
release = next((i for i, r in enumerate(pub_runs) if "gh release create" in r), None)
push = next((i for i, r in enumerate(pub_runs) if "skopeo copy" in r), None)
need(gate is not None and release is not None and push is not None, "release.yml: gate, release, push steps")
if None not in (gate, release, push):
    need(gate < release and gate < push, "release.yml: the release gate must run before publishing")
for r in pub_runs:
    if "login" in r:
        need("--password-stdin" in r, "release.yml: registry logins must read the token from stdin")
need(
    any('[ "$TAG" = "v$version" ]' in s.get("run", "") for s in build["steps"]),
    "release.yml: the tag must match the version",
)

if problems:
    for p in problems:
        print(f"workflows: FAIL: {p}")
    sys.exit(1)
print(f"workflows: ok: ci.yml, release.yml ({len(list(run_dir.iterdir()))} run scripts extracted)")
