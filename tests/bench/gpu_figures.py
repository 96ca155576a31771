#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""The scenario x policy table of sim/gpu/README.md ("Figures"), printed as
Markdown: each scenario generated (seed 1) and run under every GPU policy at
its defaults with `./agentcg run`. Deterministic (the simulator is).

    tests/bench/gpu_figures.py > /tmp/table.md
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGENTCG = os.path.join(ROOT, "agentcg")
POLICIES = ("none", "nvshare", "memory-aware", "compute-limit", "memory-aware+compute-limit")


def nvshare_paper(path):
    """nvshare's published experiment: two 15.3 GB jobs on a 16 GiB P100 (gen3)."""
    job = {"arrival_ns": 0, "memory_bytes": 15300000000, "touched_fraction": 1.0, "iterations": 3000,
           "kernel_ns": 10000000, "kernels_per_iteration": 10}
    t = {"format": "agentcg-trace", "version": 1, "name": "nvshare-paper",
         "description": "two 15.3 GB jobs on a 16 GiB GPU (tests/bench/gpu_figures.py)", "machine": {"cpus": 1},
         "cgroups": [], "processes": [],
         "gpu": {"gpus": [{"memory_bytes": 16 << 30, "pcie": "gen3", "context_overhead_mb": 512}],
                 "jobs": [dict(job, id="a"), dict(job, id="b")]}}
    with open(path, "w") as f:
        json.dump(t, f)


SCENARIOS = (
    ("2x15.3GB/16GiB (nvshare paper)", None),
    ("4x12GiB/16GiB (gpu-oversub)", ["gpu-oversub"]),
    ("8x12GiB on 2x16GiB, arrivals over 20 s",
     ["gpu-oversub", "--jobs", "8", "--gpus", "2", "--arrival-spread-ms", "20000"]),
    ("4x3GiB/16GiB (gpu-fit)", ["gpu-fit"]),
    ("limits 25,50,75 (gpu-quota, 100 s)", ["gpu-quota", "--limits", "25,50,75"]),
    ("limits 30,60 (gpu-quota, 100 s)", ["gpu-quota", "--limits", "30,60"]),
)


def row(name, policy, g):
    jobs = g["jobs"].values()
    done = [j["jct_ns"] for j in jobs if j.get("finish_ns")]
    jct = "%.0f" % (sum(done) / len(done) / 1e9) if done and len(done) == len(g["jobs"]) else "-"
    wait = max(j["wait_ns"] for j in jobs) / 1e9
    shares = ""
    for c in g.get("clients", {}).values():
        if c.get("limit_pct", 100) != 100:
            shares += "%d%%:%.3f " % (c["limit_pct"], c["achieved_share"])
    return "| %s | %s | %.1f | %.2f | %.1f | %d | %d | %s | %.1f | %s |" % (
        name, policy, g["makespan_ns"] / 1e9, g["busy_fraction"], g["bytes_migrated"] / 1e9, g["switches"],
        g["drops"], jct, wait, shares)


def main():
    print("| scenario | policy | makespan s | busy | migrated GB | switches | drops | mean JCT s | max wait s "
          "| achieved shares |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="agentcg-gpufig-") as tmp:
        for k, (name, gen) in enumerate(SCENARIOS):
            trace = os.path.join(tmp, "t%d.json" % k)
            if gen is None:
                nvshare_paper(trace)
            else:
                subprocess.run([AGENTCG, "trace", "generate", gen[0], "--seed", "1", *gen[1:], "-o", trace],
                               check=True, stdout=subprocess.DEVNULL)
            for p in POLICIES:
                out = os.path.join(tmp, "o%d-%s" % (k, p))
                subprocess.run([AGENTCG, "run", trace, "--gpu-policy", p, "--out", out], check=True,
                               stdout=subprocess.DEVNULL)
                with open(os.path.join(out, "results.json")) as f:
                    print(row(name, p, json.load(f)["gpu"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
