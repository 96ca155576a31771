#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Start-up benchmark of `./agentcg run` (issue 21: <= 25 ms over the C++
binary). Runs, interleaved, N times each:
  - python3 -c pass         (the interpreter alone: the floor),
  - agentcg-sim run TRACE   (the C++ CLI on a tiny trace),
  - ./agentcg run TRACE     (launcher + Python CLI + the same simulation),
and prints the median wall time and the median CPU time (user+sys of the
child, from wait4: less sensitive to a shared host than wall time) with
min-max spread, then the launcher's cost = ./agentcg - agentcg-sim. The
tiny trace (hogs, 2 CPUs, 10 ms) keeps the simulation itself negligible.
Prints figures; asserts nothing about speed.

    /usr/bin/python3 tests/bench/startup_bench.py [--runs 10] [--build build/ci] [--baseline CHECKOUT]

--baseline adds CHECKOUT's ./agentcg (another checkout with its Python
extension built, e.g. the commit before a change) to the same interleaved
runs, for a before/after ratio measured side by side.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Sequence, Tuple

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def timed(cmd: Sequence[str], env: Dict[str, str]) -> Tuple[float, float]:
    """(wall ms, CPU ms) of one run of cmd; fails loudly if it fails."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - t0) * 1e3
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    if p.stderr:
        p.stderr.close()
    if p.returncode != 0:
        raise SystemExit(f"startup_bench: {' '.join(cmd)} exited {p.returncode}: {err.strip()}")
    return wall, (ru.ru_utime + ru.ru_stime) * 1e3


def fmt(xs: List[float]) -> str:
    return f"{statistics.median(xs):7.1f} ({min(xs):.1f}-{max(xs):.1f})"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=10, help="runs per command (default 10; median reported)")
    p.add_argument("--build", default=os.path.join(ROOT, "build", "ci"), help="build directory (default build/ci)")
    p.add_argument("--baseline", help="another checkout whose ./agentcg runs side by side (before/after)")
    p.add_argument("--no-bytecode-cache", action="store_true",
                   help="compile every module on every run (PYTHONDONTWRITEBYTECODE=1)")
    a = p.parse_args()
    sim = os.path.join(a.build, "sim", "agentcg-sim")
    if not os.access(sim, os.X_OK):
        raise SystemExit(f"startup_bench: {sim} is not built (cmake --build {a.build} --target agentcg-sim)")
    env = dict(os.environ, AGENTCG_BUILD_DIR=a.build)
    # Measure what a user's second call costs: bytecode cached in
    # __pycache__ (the warm-up run writes it), unless --no-bytecode-cache.
    if a.no_bytecode_cache:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory(prefix="startup_bench.") as tmp:
        trace = os.path.join(tmp, "tiny.json")
        subprocess.run([sim, "trace", "generate", "hogs", "--cpus", "2", "--duration", "10ms", "-o", trace],
                       check=True, stdout=subprocess.DEVNULL)
        out = os.path.join(tmp, "out")  # one output directory per command
        cmds = {
            "python3 -c pass": [sys.executable, "-c", "pass"],
            "agentcg-sim run": [sim, "run", trace, "--out", out + "-sim", "--quiet"],
            "./agentcg run": [os.path.join(ROOT, "agentcg"), "run", trace, "--out", out, "--quiet"],
            # what a user types: the summary table printed (to /dev/null here)
            "./agentcg run, table": [os.path.join(ROOT, "agentcg"), "run", trace, "--out", out + "-t"],
        }
        if a.baseline:
            cmds["baseline run"] = [os.path.join(a.baseline, "agentcg"), "run", trace, "--out", out + "-base", "--quiet"]
            cmds["baseline run, table"] = [os.path.join(a.baseline, "agentcg"), "run", trace, "--out", out + "-bt"]
        wall: Dict[str, List[float]] = {k: [] for k in cmds}
        cpu: Dict[str, List[float]] = {k: [] for k in cmds}
        for k in cmds:  # warm the page cache (and write __pycache__) once
            timed(cmds[k], env)
        for _ in range(a.runs):  # interleaved: a load change hits every command alike
            for k, c in cmds.items():
                w, u = timed(c, env)
                wall[k].append(w)
                cpu[k].append(u)
    print(f"startup_bench: {a.runs} runs each, interleaved; median (min-max) in ms; host load "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; bytecode "
          f"{'not cached' if a.no_bytecode_cache else 'cached'}")
    print(f"{'command':<24} {'wall ms':>22} {'cpu ms':>22}")
    for k in cmds:
        print(f"{k:<24} {fmt(wall[k]):>22} {fmt(cpu[k]):>22}")

    def over_binary(k: str) -> Tuple[List[float], List[float]]:
        """k's cost over agentcg-sim run, per interleaved pair (wall, CPU)."""
        return ([x - y for x, y in zip(wall[k], wall["agentcg-sim run"])],
                [x - y for x, y in zip(cpu[k], cpu["agentcg-sim run"])])

    for k, label in (("./agentcg run", "launcher cost"), ("./agentcg run, table", "with the table")):
        dw, dc = over_binary(k)
        print(f"{label:<24} {fmt(dw):>22} {fmt(dc):>22}   ({k} - agentcg-sim run, per pair)")
        if a.baseline:
            bw, bc = over_binary(k.replace("./agentcg", "baseline"))
            print(f"{'  baseline':<24} {fmt(bw):>22} {fmt(bc):>22}   ({a.baseline}; ratio of medians "
                  f"wall {statistics.median(dw) / statistics.median(bw):.2f}x, "
                  f"cpu {statistics.median(dc) / statistics.median(bc):.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
