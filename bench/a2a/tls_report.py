#!/usr/bin/env python3
"""The report of `TLS=1 bench/a2a/run.sh`: the network listener over TLS beside plain loopback,
as a markdown table with the ratios TLS/plain, and what a handshake adds.

    tls_report.py RESULTS.jsonl SECONDS_PER_CELL LOAD_BEFORE LOAD_AFTER
"""

import json
import os
import platform
import sys

path, secs, load_before, load_after = sys.argv[1:]
rows = {(r["label"], r["method"], r["connections"]): r for r in map(json.loads, open(path))}
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(
    f"Machine: {os.cpu_count()} cores ({cpu}), Linux {platform.release()}; the client and the daemon "
    f"share them. Load average before/after: {load_before} / {load_after}."
)
print(
    f"{secs} s per cell after 1 s of warm-up; one daemon, the same asker's token on both listeners; "
    "TLS 1.3 with the self-signed ECDSA P-256 certificate, rustls (ring) on both ends."
)
print()
print(
    "| workload | conns | plain req/s | p50 ms | p99 ms | CPU µs/call | TLS req/s | p50 ms | p99 ms "
    "| CPU µs/call | **TLS/plain req/s** | p50 TLS/plain | CPU/call TLS/plain |"
)
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")


def cpu_per_call(x):
    return x["serverCpuMs"] * 1000 / x["calls"] if x.get("calls") else 0.0


def line(name, plain, tls, conns):
    p, t = rows.get((plain, name, conns)), rows.get((tls, name, conns))
    if not p or not t:
        return False
    pc, tc = cpu_per_call(p), cpu_per_call(t)
    label = name + (" (a new connection per call)" if plain.endswith("fresh") else "")
    print(
        f"| {label} | {conns} | {p['rps']:,.0f} | {p['p50Us'] / 1000:.2f} | {p['p99Us'] / 1000:.2f} | {pc:,.0f} | "
        f"{t['rps']:,.0f} | {t['p50Us'] / 1000:.2f} | {t['p99Us'] / 1000:.2f} | {tc:,.0f} | "
        f"**{t['rps'] / p['rps']:.2f}×** | {t['p50Us'] / max(p['p50Us'], 1):.2f}× | {tc / pc if pc else 0:.2f}× |"
    )
    for x in (p, t):
        if x["errors"]:
            print(f"<!-- {x['label']} {name} c={conns}: {x['errors']} errors; first: {x['firstError']} -->")
    return True


ok = all([line(m, "plain", "tls", c) for m in ("GetTask", "SendMessage") for c in (1, 16)])
ok = line("GetTask", "plain-fresh", "tls-fresh", 1) and ok
fresh_p, fresh_t = rows.get(("plain-fresh", "GetTask", 1)), rows.get(("tls-fresh", "GetTask", 1))
if fresh_p and fresh_t:
    print()
    print(
        f"A handshake (a new connection, a full TLS 1.3 handshake, GetTask, close) adds "
        f"{(fresh_t['p50Us'] - fresh_p['p50Us']) / 1000:.2f} ms at p50 and "
        f"{cpu_per_call(fresh_t) - cpu_per_call(fresh_p):,.0f} µs of the daemon's CPU per connection."
    )
print()
print(f"raw results: {path}")
sys.exit(0 if ok else 1)
