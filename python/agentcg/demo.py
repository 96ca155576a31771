# SPDX-License-Identifier: GPL-2.0-only
"""`agentcg demo`: the whole story in one command.

Runs eevdf (the kernel's default since 6.6: the baseline of every verdict),
flatcg, agentcg and cfs (the pre-6.6 reference) on the bundled traces
traces/{agent,fork-storm,io}.json over a few seeds and, when the GPU model
and its generators are built in, the GPU policies on the generated GPU
scenarios (gpu-oversub, gpu-fit, gpu-quota); prints one comparison table per
scenario (agentcg.table: median [95 % interval] and a verdict against
eevdf), writes DIR/<scenario>/<policy>/results.json (first seed) and
seed-N.results.json (every seed), DIR/<scenario>/compare.json, DIR/plots/
and DIR/report.html. The bundled traces are found beside the package (the
repository's traces/), wherever the command runs; a missing one is an
error (exit 1), not a silent skip.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _core, progress
from ._errors import AgentcgError
from .api import Comparison, demand_shares, run

CPU_TRACES = ("agent", "fork-storm", "io")
CPU_POLICIES = ("eevdf", "flatcg", "agentcg", "cfs")
GPU_SCENARIOS: Tuple[Tuple[str, Dict[str, str]], ...] = (
    ("gpu-oversub", {}),
    ("gpu-fit", {}),
    ("gpu-quota", {}),
)
GPU_POLICIES = ("nvshare", "memory-aware", "compute-limit", "memory-aware+compute-limit")
TRACES_DIR = Path(__file__).resolve().parents[2] / "traces"


def _scenarios(root: str, seed: int) -> List[Tuple[str, Any, List[Tuple[str, str]]]]:
    """(name, trace, [(cpu policy, gpu policy)...]) for everything available."""
    out: List[Tuple[str, Any, List[Tuple[str, str]]]] = []
    cpols = [p for p in CPU_POLICIES if p in _core.cpu_policies()]
    for name in CPU_TRACES:
        path = os.path.join(root, f"{name}.json")
        if not os.path.exists(path):
            raise AgentcgError(f"{path}: bundled trace not found (--traces DIR: the folder holding "
                               f"{', '.join(t + '.json' for t in CPU_TRACES)})")
        out.append((name, _core.Trace.from_file(path), [(p, "none") for p in cpols]))
    gpols = [g for g in GPU_POLICIES if g in _core.gpu_policies()]
    for kind, opts in GPU_SCENARIOS:
        try:
            trace = _core.generate(kind, seed, dict(opts))
        except (ValueError, RuntimeError) as e:
            print(f"agentcg demo: skipping GPU scenario {kind} (not built in: {e})", file=sys.stderr)
            continue
        if not _core.trace_has_gpu(trace):
            continue
        pols = list(gpols)
        if kind != "gpu-quota":  # limits only matter where clients have them
            pols = [g for g in pols if "compute-limit" not in g] + ["none"]
        else:
            pols = ["nvshare", "compute-limit", "memory-aware+compute-limit"]
            pols = [g for g in pols if g in gpols]
        out.append((kind, trace, [("eevdf", g) for g in pols]))
    return out


def run_demo(out_dir: str, seed: int = 1, quiet: bool = False,
             root: Optional[str] = None, seeds: Optional[Sequence[int]] = None) -> int:
    from . import _files, plots, report, table

    seeds = list(seeds) if seeds else [seed]
    scenarios = _scenarios(root or str(TRACES_DIR), seeds[0])
    total = sum(len(p) * len(seeds) for _, _, p in scenarios)
    pbar = progress.bar(total=total, desc="demo", unit="sim")
    done: List[Tuple[str, Any, Dict[str, List[Dict[str, Any]]], Optional[Dict[str, float]]]] = []
    for name, trace, pairs in scenarios:
        gpu = any(g != "none" for _, g in pairs)
        runs: Dict[str, List[Dict[str, Any]]] = {}
        first = {}
        for s in seeds:
            for c, g in pairs:
                label = g if gpu else c
                pbar.set_postfix_str(f"{name}/{label}/seed {s}")
                r = run(trace, c, g, seed=s, schedule=(s == seeds[0] and (gpu or name == "fork-storm")),
                        label=label)
                runs.setdefault(label, []).append(r.data)
                if s == seeds[0]:
                    first[label] = r
                else:
                    sub = os.path.join(out_dir, name, label.replace("/", "+"))
                    os.makedirs(sub, exist_ok=True)
                    r.save(os.path.join(sub, f"seed-{s}.results.json"))
                pbar.update(1)
        Comparison(first).save(os.path.join(out_dir, name))
        if len(seeds) > 1:
            for label, r in first.items():
                r.save(os.path.join(out_dir, name, label.replace("/", "+"), f"seed-{seeds[0]}.results.json"))
        demand = demand_shares(trace, seeds[0]) if trace.nr_processes else None
        labels = list(runs)
        rows = table.build_rows(runs, demand=demand)
        doc = {"format": "agentcg-compare", "version": 1, "trace": trace.name, "cpus": trace.cpus,
               "seeds": seeds, "baseline": table.baseline_of(labels), "policies": labels,
               "rows": table.rows_json(rows, labels)}
        _files.atomic_write(os.path.join(out_dir, name, "compare.json"), table.dumps(doc))
        done.append((name, trace, runs, demand))
    pbar.close()
    if not quiet:
        for name, trace, runs, demand in done:
            table.print_compare(name if trace.name == name else f"{name} ({trace.name})", trace.cpus, seeds, runs,
                              demand=demand)
            print()
    files = plots.plot_directory(out_dir, os.path.join(out_dir, "plots"))
    path = report.write_report(out_dir, title="agentcg demo")
    if not quiet:
        print(f"wrote {out_dir}/<scenario>/<policy>/results.json, {len(files)} plot files in "
              f"{os.path.join(out_dir, 'plots')}, and {path}")
    return 0
