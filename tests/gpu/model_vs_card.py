#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The GPU model against a real card: the jobs of tests/gpu/run_gpu.py as a
simulator trace, run under each policy, printed beside the card's makespans.

run_gpu.py's jobs (gpu_job.cu): N clients, each with M bytes of memory that
the shim makes managed, `iters` iterations of one kernel that touches every
page and spins `kernel_ms` on the GPU clock; agentcg-gpud schedules a
capacity below the card's (40 % of free by default), so the policy sees the
clients oversubscribe it while the card holds them all. Here: one GPU of the
card's memory, `memory_reserve_mb` leaving the scheduled capacity, no context
overhead (run_gpu.py's config), the daemon's quantum and compute window,
`sm_pct` for the share of the SMs one kernel occupies (1,024 spinning warps of
an H100/H200's 8,448 warp slots: 12), and the PCIe preset (gen5: fitted to an
H200 by tests/gpu/um_rates.cu). `plain` (no daemon, no shim: cudaMalloc, no
page faults) is modelled as `none` with the pages resident from the start
(`--plain-resident`, default on).

  model_vs_card.py [--card-json runs.json] --card-bytes B --capacity-bytes C
                   --clients N --client-bytes M [--core-limits 25,75]

A policy named P-noprefetch is P with prefetch_on_switch_in off (memory-aware
before its first-grant prefetch, where nothing is evicted). --card-json takes a JSON list of run_gpu.py reports (their "policy" and
"makespan_s") and prints each policy's measured range beside the model.
Prints one table; deterministic (the simulator is).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def trace(a, resident):
    jobs = []
    limits = [int(x) for x in a.core_limits.split(",")] if a.core_limits else []
    for i in range(a.clients):
        j = {"id": "c%d" % i, "arrival_ns": 0, "memory_bytes": a.client_bytes, "touched_fraction": 1.0,
             "iterations": a.iters, "kernel_ns": a.kernel_ms * 1000000, "kernels_per_iteration": 1,
             "sm_pct": a.sm_pct}
        if i < len(limits):
            j["limit_pct"] = limits[i]
        jobs.append(j)
    gpu = {"memory_bytes": a.card_bytes, "pcie": a.pcie, "context_overhead_mb": 0}
    if resident:  # cudaMalloc: pages exist on the GPU from the start, nothing faults
        gpu["first_touch_bytes_per_s"] = 1 << 50
    return {"format": "agentcg-trace", "version": 1, "name": "model-vs-card",
            "description": "tests/gpu/run_gpu.py's jobs (tests/gpu/model_vs_card.py)", "machine": {"cpus": 1},
            "cgroups": [], "processes": [], "gpu": {"gpus": [gpu], "jobs": jobs}}


def run(a, policy, resident, tmp, prefetch=True):
    tp = os.path.join(tmp, "t-%s.json" % policy)
    with open(tp, "w") as f:
        json.dump(trace(a, resident), f)
    reserve_mb = max(0, (a.card_bytes - a.capacity_bytes) >> 20)
    cfg = os.path.join(tmp, "c.yaml")
    with open(cfg, "w") as f:
        f.write("gpu:\n  memory_reserve_mb: %d\n  context_overhead_mb: 0\n  time_quantum_ms: %d\n"
                "  compute_window_ms: %d\n  switch_time_mode: fixed\n  switch_time_fixed_s: %g\n"
                "  prefetch_on_switch_in: %s\n"
                % (reserve_mb, a.quantum_ms, a.window_ms, a.quantum_ms / 1000, "true" if prefetch else "false"))
    out = os.path.join(tmp, "o-" + policy)
    subprocess.run([os.path.join(ROOT, "agentcg"), "run", tp, "--gpu-policy", policy, "--config", cfg,
                    "--out", out], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "results.json")) as f:
        r = json.load(f)
    return r.get("gpu", r)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--card-json", help="a JSON list of run_gpu.py reports")
    ap.add_argument("--card-bytes", type=int, required=True)
    ap.add_argument("--capacity-bytes", type=int, required=True)
    ap.add_argument("--clients", type=int, required=True)
    ap.add_argument("--client-bytes", type=int, required=True)
    ap.add_argument("--kernel-ms", type=int, default=50)
    ap.add_argument("--iters", type=int, default=60)
    ap.add_argument("--sm-pct", type=int, default=12)
    ap.add_argument("--pcie", default="gen5")
    ap.add_argument("--quantum-ms", type=int, default=2000)
    ap.add_argument("--window-ms", type=int, default=1000)
    ap.add_argument("--core-limits", default="")
    ap.add_argument("--policies", default="plain,nvshare,memory-aware")
    a = ap.parse_args()
    card = {}
    if a.card_json:
        with open(a.card_json) as f:
            for r in json.load(f):
                card.setdefault(r["policy"], []).append(r["makespan_s"])
    print("| policy | model (s) | card (s) |")
    print("|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="agentcg-mvc-") as tmp:
        for p in a.policies.split(","):
            base = p[:-len("-noprefetch")] if p.endswith("-noprefetch") else p
            r = run(a, "none" if base == "plain" else base, base == "plain", tmp, prefetch=base == p)
            m = card.get(p)
            got = "%.2f-%.2f" % (min(m), max(m)) if m else "-"
            print("| %s | %.2f | %s |" % (p, r["makespan_ns"] / 1e9, got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
