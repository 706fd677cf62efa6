#!/usr/bin/env python3
"""Checks one case's traffic: the gateway's access-log lines written since the case began
and the request bodies the mock recorded since then (trainer mock --record-dir).

Usage: traffic.py GATEWAY_LOG LOG_SKIP RECORD_DIR RECORD_SKIP ROUTE UPSTREAM_MODEL
  LOG_SKIP, RECORD_SKIP  access-log lines / recordings that belong to earlier cases

Prints one line `requests: ...` (what the client sent), then each problem; exits 1 on any:
a request off ROUTE or not answered 200 (the gateway's error code is in the line), a count
of client requests other than the mock's (each passes through exactly once), a recorded
body whose model is not UPSTREAM_MODEL (the request went to another target).

UPSTREAM_MODEL may list several, comma-separated (a client that asks more than one model);
`gemini:NAME` is a Gemini target's: its bodies name no model (the path does, which the
mock's recordings do not keep), so each must be a Gemini body (`contents`, no `model`).
"""
import json
import os
import sys
import time

# The gateway writes a request's line when its body ends, which can be just after the
# client read it and exited: wait for the lines, up to this long.
WAIT_S = 5


def access_lines(path, skip):
    lines = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith('{"ts_ms"'):
                lines.append(json.loads(line))
    return lines[skip:]


def main():
    log, log_skip, record_dir, record_skip, route, upstream = sys.argv[1:]
    names = sorted(n for n in os.listdir(record_dir) if n[0].isdigit() and n.endswith(".json"))
    bodies = [json.load(open(os.path.join(record_dir, n), encoding="utf-8"))
              for n in names[int(record_skip):]]
    deadline = time.monotonic() + WAIT_S
    while True:
        lines = access_lines(log, int(log_skip))
        if len(lines) >= max(len(bodies), 1) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    seen = ", ".join(f"{l['route']} {l['status']}" for l in lines) or "none"
    print(f"requests: {len(lines)} ({seen}); reached the mock: {len(bodies)}")
    problems = []
    if not lines:
        problems.append("no request reached the gateway")
    for l in lines:
        if l["route"] != route or l["status"] != 200:
            problems.append(
                f"gateway answered {l['route']} (model {l['model']}) with {l['status']}, "
                f"error {l['error']}")
    if len(lines) != len(bodies):
        problems.append(f"{len(lines)} requests at the gateway, {len(bodies)} at the mock")
    wanted = upstream.split(",")
    for b in bodies:
        if all(w.startswith("gemini:") for w in wanted):
            if "model" in b or "contents" not in b:
                problems.append(f"the mock got a body with keys {sorted(b)}, expected a Gemini "
                                f"body (for {upstream})")
        elif b.get("model") not in wanted:
            problems.append(f"the mock got model {b.get('model')!r}, expected {upstream!r}")
    # A client that retries sends the same refused request again: one line per problem.
    for p in dict.fromkeys(problems):
        n = problems.count(p)
        print(f"problem: {p}" + (f" (x{n})" if n > 1 else ""))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
