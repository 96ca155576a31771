# SPDX-License-Identifier: GPL-2.0-only
"""`agentcg demo`: the whole story in one command.

Runs cfs, flatcg and agentcg on the bundled traces traces/{agent,fork-storm,
io}.json and, when the GPU model and its generators are built in, the GPU
policies on the generated GPU scenarios (gpu-oversub, gpu-fit, gpu-quota);
prints one comparison table per scenario, writes
DIR/<scenario>/<policy>/results.json, DIR/plots/ and DIR/report.html.
A missing bundled trace or GPU generator is reported and skipped, never
fatal, so the demo runs on partial builds.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Dict, List, Tuple

from . import _core, progress
from .api import Comparison, run

CPU_TRACES = ("agent", "fork-storm", "io")
CPU_POLICIES = ("cfs", "flatcg", "agentcg")
GPU_SCENARIOS: Tuple[Tuple[str, Dict[str, str]], ...] = (
    ("gpu-oversub", {}),
    ("gpu-fit", {}),
    ("gpu-quota", {}),
)
GPU_POLICIES = ("nvshare", "memory-aware", "compute-limit", "memory-aware+compute-limit")


def _scenarios(root: str, seed: int, quick: bool) -> List[Tuple[str, Any, List[Tuple[str, str]]]]:
    """(name, trace, [(cpu policy, gpu policy)...]) for everything available."""
    out: List[Tuple[str, Any, List[Tuple[str, str]]]] = []
    cpols = [p for p in CPU_POLICIES if p in _core.cpu_policies()]
    for name in CPU_TRACES:
        path = os.path.join(root, f"{name}.json")
        if not os.path.exists(path):
            print(f"agentcg demo: skipping {path} (not found)", file=sys.stderr)
            continue
        out.append((name, _core.Trace.from_file(path), [(p, "none") for p in cpols]))
    gpols = [g for g in GPU_POLICIES if g in _core.gpu_policies()]
    for kind, opts in GPU_SCENARIOS:
        try:
            trace = _core.generate(kind, seed, dict(opts))
        except (ValueError, RuntimeError) as e:
            print(f"agentcg demo: skipping GPU scenario {kind} ({e})", file=sys.stderr)
            continue
        if not _core.trace_has_gpu(trace):
            continue
        pols = list(gpols)
        if kind != "gpu-quota":  # limits only matter where clients have them
            pols = [g for g in pols if "compute-limit" not in g] + ["none"]
        else:
            pols = ["nvshare", "compute-limit", "memory-aware+compute-limit"]
            pols = [g for g in pols if g in gpols]
        out.append((kind, trace, [("cfs", g) for g in pols]))
    return out


def run_demo(out_dir: str, seed: int = 1, quick: bool = False, quiet: bool = False,
             root: str = "traces") -> int:
    from . import cli, plots, report

    scenarios = _scenarios(root, seed, quick)
    if not scenarios:
        print(f"agentcg demo: nothing to run (no traces in {root}, no GPU generators)", file=sys.stderr)
        return 1
    total = sum(len(p) for _, _, p in scenarios)
    pbar = progress.bar(total=total, desc="demo", unit="sim")
    comparisons: Dict[str, Comparison] = {}
    for name, trace, pairs in scenarios:
        results = {}
        gpu = any(g != "none" for _, g in pairs)
        for c, g in pairs:
            label = g if gpu else c
            pbar.set_postfix_str(f"{name}/{label}")
            results[label] = run(trace, c, g, seed=seed, schedule=not gpu and name == "fork-storm",
                                 label=label)
            pbar.update(1)
        cmp = Comparison(results)
        cmp.save(os.path.join(out_dir, name))
        comparisons[name] = cmp
    pbar.close()
    for name, cmp in comparisons.items():
        if not quiet:
            first = next(iter(cmp.values()))
            cli.print_compare(f"{name} ({first.data.get('trace')})", first.data.get("cpus"), seed,
                              list(cmp), [r.data for r in cmp.values()])
            print()
    files = plots.plot_directory(out_dir, os.path.join(out_dir, "plots"))
    path = report.write_report(out_dir, title="agentcg demo")
    if not quiet:
        print(f"wrote {out_dir}/<scenario>/<policy>/results.json, {len(files)} plot files in "
              f"{os.path.join(out_dir, 'plots')}, and {path}")
    return 0
