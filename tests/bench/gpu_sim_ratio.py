#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Issue 21's GPU target, measured side by side: every GPU policy's cost
per event against nvshare's, for one or more engine_bench binaries run in
turn (A B A B ...), so that host drift falls on all of them alike.

Per binary and policy it prints the median (range) over the rounds of:
  - ns per event of the 1,000-iteration trace (BM_GpuSim), and its ratio
    to nvshare's in the same round;
  - the marginal ns per event, (time at 4k - time at 1k) / (events at 4k -
    events at 1k) from BM_GpuSim4k, which takes out the part of a run that
    does not grow with its events, and its ratio to nvshare's;
  - ns per simulated kernel at 4k (the unit of work, whatever an event
    carries), and its ratio to nvshare's.

    tests/bench/gpu_sim_ratio.py --rounds 11 OLD/engine_bench build/ci/tests/bench/engine_bench
"""
import argparse
import json
import statistics
import subprocess
import sys

POLICIES = ("nvshare", "none", "compute_limit", "memory_aware")


def one_round(binary):
    out = subprocess.run([binary, "--benchmark_filter=BM_GpuSim", "--benchmark_format=json"],
                         capture_output=True, text=True, check=True).stdout
    bench = {b["name"]: b for b in json.loads(out)["benchmarks"]}
    fig = {}
    for p in POLICIES:
        try:
            a = bench[f"BM_GpuSim/{p}/iterations:3"]
            c = bench[f"BM_GpuSim4k/{p}/iterations:3"]
        except KeyError as e:
            sys.exit(f"{binary}: no benchmark {e} in its output (expected BM_GpuSim and BM_GpuSim4k per policy)")
        ms = {"ms": 1e6, "us": 1e3, "ns": 1.0}
        ta = a["real_time"] * ms[a["time_unit"]]
        tc = c["real_time"] * ms[c["time_unit"]]
        # ns_per_kernel is an inverted rate counter: seconds per kernel
        fig[p] = (ta / a["events"], (tc - ta) / (c["events"] - a["events"]), c["ns_per_kernel"] * 1e9)
    return fig


def summary(values):
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binaries", nargs="+", help="engine_bench binaries, run in turn")
    ap.add_argument("--rounds", type=int, default=7, help="rounds (each runs every binary once; default 7)")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds: expected at least 1")
    rows = {b: {p: {k: [] for k in ("run", "marg", "kern", "run_x", "marg_x", "kern_x")} for p in POLICIES}
            for b in args.binaries}
    for _ in range(args.rounds):
        for b in args.binaries:
            fig = one_round(b)
            for p in POLICIES:
                r = rows[b][p]
                r["run"].append(fig[p][0])
                r["marg"].append(fig[p][1])
                r["run_x"].append(fig[p][0] / fig["nvshare"][0])
                r["marg_x"].append(fig[p][1] / fig["nvshare"][1])
                r["kern"].append(fig[p][2])
                r["kern_x"].append(fig[p][2] / fig["nvshare"][2])
    for b in args.binaries:
        print(f"{b} ({args.rounds} rounds; ns per event, median (range))")
        print(f"  {'policy':<14} {'1k':<22} {'/ nvshare':<20} {'marginal':<22} {'/ nvshare':<20} "
              f"{'per kernel, 4k':<22} {'/ nvshare'}")
        for p in POLICIES:
            r = rows[b][p]
            print(f"  {p:<14} {summary(r['run']):<22} {summary(r['run_x']):<20} "
                  f"{summary(r['marg']):<22} {summary(r['marg_x']):<20} {summary(r['kern']):<22} {summary(r['kern_x'])}")


if __name__ == "__main__":
    main()
