#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Sweep throughput benchmark: simulations per second with 1 and 2 local
workers (agentcg.sweep over a generated fork-storm trace). Prints figures;
asserts nothing about speed (performance is measured, not tested).

    PYTHONPATH=python /usr/bin/python3 tests/bench/sweep_bench.py [--sims N] [--duration 1s]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import agentcg  # noqa: E402
from agentcg.sweeps import _run_local, sweep_tasks  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sims", type=int, default=24, help="simulations per measurement (default 24)")
    p.add_argument("--kind", default="fork-storm")
    p.add_argument("--duration", default="4s", help="simulated time per run (default 4s)")
    p.add_argument("--workers", default="1,2", help="worker counts to measure (default 1,2)")
    a = p.parse_args()
    gen = agentcg.Generator(a.kind, cpus=4, duration=a.duration)
    pols = [x for x in ("cfs", "flatcg", "agentcg") if x in agentcg.cpu_policies()]
    seeds = list(range(1, max(1, a.sims // len(pols)) + 1))
    tasks = sweep_tasks(gen, {"policy": pols}, seeds=seeds)
    print(f"sweep_bench: {len(tasks)} simulations of {a.kind} ({a.duration} simulated, 4 CPUs), "
          f"policies {','.join(pols)}, {os.cpu_count()} CPUs on this machine")
    for w in [int(x) for x in a.workers.split(",") if x]:
        t0 = time.perf_counter()
        rows = _run_local(tasks, w, progress=False)
        dt = time.perf_counter() - t0
        print(f"  workers={w}: {len(rows)} sims in {dt:.2f} s = {len(rows) / dt:.2f} sims/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
