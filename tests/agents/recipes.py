#!/usr/bin/env python3
"""The README's agent recipes (its block marked `<!-- readme-block: agents -->`), read as a
user reads them, for the agents tier to run verbatim.

Usage:
  recipes.py cases BLOCK CONFIG            one line per case: `INDEX CLIENT MODEL UPSTREAM`
  recipes.py gateway-config CONFIG MOCK    CONFIG with every target's base_url the mock's
  recipes.py setup BLOCK CONFIG INDEX MODEL PROMPT HOME
                                           writes the recipe's files under HOME (its `~/`),
                                           prints its command with "..." the prompt

BLOCK is the block's text (scripts/readme-block.sh agents), CONFIG the config the recipes
name (gateway.example.toml). A recipe is a run of comment lines and then one command (its
`\\` continuation lines included). A comment line ending in a `~/PATH` (or `~/PATH:`) opens a
file, whose lines follow as `#   LINE` (the text after the four characters is the file's
line). The client is the command's program (after its VAR=value assignments). Its models
are the config's models the recipe names; a recipe that says "any model of the config" also
runs on the first model of each other provider kind of the config (a model's kind: its
first target's provider), that model's name put where the recipe names its own, in the
command only. The command keeps every byte but its one "..." (the prompt), shell-quoted.

Exits 1 naming what is wrong: a recipe with no command, no "...", more than one, no client
the tier knows, no model of the config.
"""
import os
import re
import shlex
import sys
import tomllib

CLIENTS = ("claude", "codex", "gemini", "opencode")
PROMPT = '"..."'
FILE_OPEN = re.compile(r"(~/[\w./-]*[\w])[:]?$")
ANY_MODEL = "any model of the config"


def fail(msg):
    print(f"tests/agents/recipes.py: {msg}", file=sys.stderr)
    sys.exit(1)


def parse(block):
    """[(comments, files {path: text}, command)] in the block's order."""
    recipes, comments, files, current, command = [], [], {}, None, []
    for line in block.split("\n"):
        if command:
            command.append(line)
        elif line.startswith("#   ") and current is not None:
            files[current].append(line[4:])
            continue
        elif line.startswith("#"):
            comments.append(line)
            m = FILE_OPEN.search(line)
            current = m.group(1) if m else None
            if current is not None:
                files[current] = []
            continue
        elif line.strip():
            command = [line]
            current = None
        else:
            continue
        if not command[-1].endswith("\\"):
            recipes.append((comments, {p: "\n".join(t) + "\n" for p, t in files.items()},
                            "\n".join(command)))
            comments, files, command = [], {}, []
    if comments or files:
        fail(f"the block ends with comments and no command: {comments[-1]!r}")
    return recipes


def program(command):
    for word in shlex.split(command.replace("\\\n", " ")):
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word):
            return word
    return None


def models(config):
    """[(name, first target's provider, its upstream model)] of the config."""
    return [(m["name"], m["targets"][0]["provider"], m["targets"][0]["model"])
            for m in config.get("models", [])]


def named(text, name):
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.:-])", text) is not None


def cases(recipes, config):
    """[(index, client, model as the recipe names it, model run)]."""
    out = []
    known = models(config)
    for i, (comments, files, command) in enumerate(recipes):
        client = program(command)
        if client not in CLIENTS:
            fail(f"recipe {i + 1}: its command runs {client!r}, not a client of the tier "
                 f"({', '.join(CLIENTS)}): {command!r}")
        if command.count(PROMPT) != 1:
            fail(f"recipe {i + 1} ({client}): its command holds {command.count(PROMPT)} "
                 f"{PROMPT} (the prompt), not one")
        text = command + "\n" + "".join(files.values())
        own = [m for m in known if named(text, m[0])]
        if not own:
            fail(f"recipe {i + 1} ({client}) names no model of the config")
        runs = [(m[0], m) for m in own]
        if any(ANY_MODEL in c for c in comments):
            if len(own) != 1 or not named(command, own[0][0]):
                fail(f"recipe {i + 1} ({client}) says {ANY_MODEL!r}: its command must name "
                     "exactly one model")
            kinds = {own[0][1]}
            for m in known:
                if m[1] not in kinds:
                    kinds.add(m[1])
                    runs.append((own[0][0], m))
        out += [(i, client, written, m) for written, m in runs]
    return out


def gemini_upstream(provider, model):
    # A Gemini body names no model (the path does): traffic.py checks its dialect instead.
    return f"gemini:{model}" if provider in ("gemini", "vertex") else model


def main():
    if len(sys.argv) < 2:
        fail(__doc__)
    what, args = sys.argv[1], sys.argv[2:]
    if what == "gateway-config" and len(args) == 2:
        text = open(args[0], encoding="utf-8").read()
        # Only the upstreams move: every other key (listen, keys, models) is the config's.
        text, n = re.subn(r'(?m)^base_url = "[^"]*"', f'base_url = "{args[1]}"', text)
        if n == 0:
            fail(f"{args[0]} has no base_url")
        tomllib.loads(text)
        sys.stdout.write(text)
        return
    if what not in ("cases", "setup") or len(args) != (2 if what == "cases" else 6):
        fail(__doc__)
    recipes = parse(open(args[0], encoding="utf-8").read())
    config = tomllib.load(open(args[1], "rb"))
    all_cases = cases(recipes, config)
    if what == "cases":
        for i, client, _, (name, provider, upstream) in all_cases:
            print(i, client, name, gemini_upstream(provider, upstream))
        return
    index, model, prompt, home = int(args[2]), args[3], args[4], args[5]
    match = [c for c in all_cases if c[0] == index and c[3][0] == model]
    if not match:
        fail(f"no recipe {index} on model {model}")
    _, _, written, _ = match[0]
    _, files, command = recipes[index]
    for path, text in files.items():
        target = home + path[1:]
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as f:
            f.write(text)
    if model != written:
        command = re.sub(rf"(?<![\w.-]){re.escape(written)}(?![\w.:-])", model, command)
    print(command.replace(PROMPT, shlex.quote(prompt)))


if __name__ == "__main__":
    main()
