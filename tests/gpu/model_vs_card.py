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
page faults) is modelled as `none` with pages created at once. A policy named
P-noprefetch is P with prefetch_on_switch_in off (memory-aware before its
first-grant prefetch, where nothing is evicted).

  model_vs_card.py --card-bytes B --capacity-bytes C --clients N --client-bytes M
                   [--policies plain,nvshare,...] [--core-limits 25,75]
  model_vs_card.py --card-json tests/gpu/h200_2026-11-29.json [--check 15]

--card-json takes recorded runs ({"runs": [{"policy", "clients",
"client_memory_bytes", "scheduled_capacity_bytes", "gpu_total_bytes",
"core_limits", "makespan_s"}, ...]}), puts each scenario through the model
and prints the card's median and range beside it; --check PCT fails (exit 1)
when a policy's model makespan is more than PCT % from the card's median
(plain is printed, not checked: the model has no process or CUDA context
start, 0.7-0.9 s there). Deterministic (the simulator is). --sim takes the
agentcg-sim binary (default: ./agentcg).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def trace(s, resident):
    jobs = []
    limits = [int(x) for x in s["core_limits"].split(",")] if s["core_limits"] else []
    for i in range(s["clients"]):
        j = {"id": "c%d" % i, "arrival_ns": 0, "memory_bytes": s["client_bytes"], "touched_fraction": 1.0,
             "iterations": s["iters"], "kernel_ns": s["kernel_ms"] * 1000000, "kernels_per_iteration": 1,
             "sm_pct": s["sm_pct"]}
        if i < len(limits):
            j["limit_pct"] = limits[i]
        jobs.append(j)
    gpu = {"memory_bytes": s["card_bytes"], "pcie": s["pcie"], "context_overhead_mb": 0}
    if resident:  # cudaMalloc: pages exist on the GPU from the start, nothing faults
        gpu["first_touch_bytes_per_s"] = 1 << 50
    return {"format": "agentcg-trace", "version": 1, "name": "model-vs-card",
            "description": "tests/gpu/run_gpu.py's jobs (tests/gpu/model_vs_card.py)", "machine": {"cpus": 1},
            "cgroups": [], "processes": [], "gpu": {"gpus": [gpu], "jobs": jobs}}


def model(sim, s, policy, tmp):
    """The model's makespan (s) of scenario s under policy (plain, P or P-noprefetch)."""
    base = policy[:-len("-noprefetch")] if policy.endswith("-noprefetch") else policy
    tp = os.path.join(tmp, "t.json")
    with open(tp, "w") as f:
        json.dump(trace(s, base == "plain"), f)
    cfg = os.path.join(tmp, "c.yaml")
    with open(cfg, "w") as f:
        f.write("gpu:\n  memory_reserve_mb: %d\n  context_overhead_mb: 0\n  time_quantum_ms: %d\n"
                "  compute_window_ms: %d\n  switch_time_mode: fixed\n  switch_time_fixed_s: %g\n"
                "  prefetch_on_switch_in: %s\n"
                % (max(0, (s["card_bytes"] - s["capacity_bytes"]) >> 20), s["quantum_ms"], s["window_ms"],
                   s["quantum_ms"] / 1000, "true" if base == policy else "false"))
    out = os.path.join(tmp, "o")
    subprocess.run([sim, "run", tp, "--gpu-policy", "none" if base == "plain" else base, "--config", cfg,
                    "--out", out], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "results.json")) as f:
        r = json.load(f)
    return r.get("gpu", r)["makespan_ns"] / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--card-json", help="recorded run_gpu.py runs (see above)")
    ap.add_argument("--check", type=float, help="fail when a model makespan is more than this %% off the card's median")
    ap.add_argument("--sim", default=os.path.join(ROOT, "agentcg"), help="agentcg-sim (or ./agentcg)")
    ap.add_argument("--card-bytes", type=int)
    ap.add_argument("--capacity-bytes", type=int)
    ap.add_argument("--clients", type=int)
    ap.add_argument("--client-bytes", type=int)
    ap.add_argument("--kernel-ms", type=int, default=50)
    ap.add_argument("--iters", type=int, default=60)
    ap.add_argument("--sm-pct", type=int, default=12)
    ap.add_argument("--pcie", default="gen5")
    ap.add_argument("--quantum-ms", type=int, default=2000)
    ap.add_argument("--window-ms", type=int, default=1000)
    ap.add_argument("--core-limits", default="")
    ap.add_argument("--policies", default="plain,nvshare,memory-aware")
    a = ap.parse_args()
    fixed = {"kernel_ms": a.kernel_ms, "iters": a.iters, "sm_pct": a.sm_pct, "pcie": a.pcie,
             "quantum_ms": a.quantum_ms, "window_ms": a.window_ms}
    rows = []  # (scenario, policy, card makespans)
    if a.card_json:
        with open(a.card_json) as f:
            runs = json.load(f)["runs"]
        groups = {}
        for r in runs:
            s = dict(fixed, card_bytes=r["gpu_total_bytes"], capacity_bytes=r["scheduled_capacity_bytes"],
                     clients=r["clients"], client_bytes=r["client_memory_bytes"], core_limits=r["core_limits"])
            key = (json.dumps(s, sort_keys=True), r["policy"])
            groups.setdefault(key, (s, r["policy"], []))[2].append(r["makespan_s"])
        rows = sorted(groups.values(), key=lambda g: (g[0]["clients"], g[1]))
    else:
        if None in (a.card_bytes, a.capacity_bytes, a.clients, a.client_bytes):
            ap.error("give --card-json, or --card-bytes, --capacity-bytes, --clients and --client-bytes")
        s = dict(fixed, card_bytes=a.card_bytes, capacity_bytes=a.capacity_bytes, clients=a.clients,
                 client_bytes=a.client_bytes, core_limits=a.core_limits)
        rows = [(s, p, []) for p in a.policies.split(",")]
    print("| clients x GB | policy | model (s) | card median (s) | card range (s) | model - card |")
    print("|---|---|---|---|---|---|")
    bad = []
    with tempfile.TemporaryDirectory(prefix="agentcg-mvc-") as tmp:
        for s, p, card in rows:
            m = model(a.sim, s, p, tmp)
            who = "%d x %.1f" % (s["clients"], s["client_bytes"] / 1e9)
            if not card:
                print("| %s | %s | %.2f | - | - | - |" % (who, p, m))
                continue
            med = statistics.median(card)
            off = (m - med) / med * 100
            print("| %s | %s | %.2f | %.2f | %.2f-%.2f | %+.0f %% |" % (who, p, m, med, min(card), max(card), off))
            if a.check is not None and p != "plain" and abs(off) > a.check:
                bad.append("%s %s: model %.2f s, card median %.2f s (%+.0f %%, more than %g %%)"
                           % (who, p, m, med, off, a.check))
    for b in bad:
        print("FAIL: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
