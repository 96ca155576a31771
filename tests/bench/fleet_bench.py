#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Fleet benchmark: N hosts of C CPUs (agent generator, S sessions in all,
D simulated), through the local process pool and then a local Dask cluster;
prints the wall time, peak RSS per worker, the fleet summary, and whether
the two fleet.json texts are byte-identical. Prints figures; asserts
nothing about speed.

    PYTHONPATH=python /usr/bin/python3 tests/bench/fleet_bench.py \\
        --hosts 1000 --sessions 100000 --cpus 64 --duration 60s --workers 2 [--no-dask]
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from agentcg import Generator  # noqa: E402
from agentcg.fleet import run_fleet  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hosts", type=int, default=20)
    p.add_argument("--sessions", type=int, default=2000)
    p.add_argument("--cpus", type=int, default=64)
    p.add_argument("--duration", default="60s")
    p.add_argument("--policy", default="cfs")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--no-dask", action="store_true", help="skip the Dask LocalCluster run")
    p.add_argument("--out", default=None, help="also write DIR/pool/ and DIR/dask/ fleet.json + run.json")
    a = p.parse_args()
    gen = Generator("agent", cpus=a.cpus, duration=a.duration)
    print(f"fleet_bench: {a.hosts} hosts x {a.cpus} CPUs, {a.sessions} sessions, {a.duration} simulated, "
          f"policy {a.policy}, {a.workers} workers, {os.cpu_count()} CPUs on this machine")
    digests = {}
    runs = [("pool", dict(workers=a.workers))]
    if not a.no_dask:
        runs.append(("dask", dict(dask_local=a.workers)))
    for name, kw in runs:
        fs = run_fleet(a.hosts, gen, a.sessions, policy=a.policy, **kw)
        text = fs.fleet_json()
        digests[name] = hashlib.sha256(text.encode()).hexdigest()
        print(f"--- {name}: fleet.json sha256 {digests[name][:16]}")
        print(fs.text())
        w = fs.run["per_worker"]
        print(f"  workers: " + ", ".join(f"pid {x['pid']}: {x['hosts']} hosts, busy {x['busy_s']:.1f} s, "
                                         f"peak RSS {x['peak_rss_kib'] / 1024:.0f} MiB" for x in w))
        hw = fs.run["host_wall_ms"]
        print(f"  per-host wall: min {hw['min']} ms, median {hw['median']} ms, max {hw['max']} ms")
        if a.out:
            fs.write(os.path.join(a.out, name))
    if len(digests) == 2:
        print("pool and dask fleet.json byte-identical:", digests["pool"] == digests["dask"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
