#!/usr/bin/env python3
"""Scrubs a request body captured from a real agent client into a test fixture: ids, hashes,
machine paths and timestamps replaced by stable placeholders, everything else kept byte for
byte in meaning (re-serialized with sorted keys? no: key order kept, as the client sent it).

Usage: scrub.py IN.json OUT.json [PATH=PLACEHOLDER ...]
IN is a raw body (or a capture record {"body": "..."}); each PATH=PLACEHOLDER replaces a
machine path (the client's working directory, its HOME) wherever it appears.
"""
import json
import re
import sys

UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
HEX64 = re.compile(r"\b[0-9a-f]{64}\b")
# Codex's time-ordered ids inside item ids (msg_<uuid>, fco_<uuid>) are uuids too; epoch ms.
EPOCH_MS = re.compile(r'("turn_started_at_unix_ms\\?"\s*:\s*)\d+')


def scrub(text, paths):
    for path, placeholder in paths:
        text = text.replace(path, placeholder)
    seen = {}

    def uuid(m):
        return seen.setdefault(m.group(0), f"00000000-0000-4000-8000-{len(seen):012d}")

    text = UUID.sub(uuid, text)
    text = HEX64.sub("0" * 64, text)
    text = EPOCH_MS.sub(r"\g<1>0", text)
    return text


def main():
    src, dst, *pairs = sys.argv[1:]
    raw = open(src, encoding="utf-8").read()
    try:
        record = json.loads(raw)
        if isinstance(record, dict) and "body" in record and isinstance(record["body"], str):
            raw = record["body"]
    except json.JSONDecodeError:
        pass
    paths = [tuple(p.split("=", 1)) for p in pairs]
    # Longest first: a HOME inside a working directory must not be half-replaced.
    paths.sort(key=lambda p: -len(p[0]))
    body = json.loads(scrub(raw, paths))
    with open(dst + ".tmp", "w", encoding="utf-8") as f:
        json.dump(body, f, indent=1, ensure_ascii=False)
        f.write("\n")
    import os

    os.replace(dst + ".tmp", dst)


if __name__ == "__main__":
    main()
