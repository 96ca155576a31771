# SPDX-License-Identifier: GPL-2.0-only
"""`agentcg report DIR`: one self-contained HTML page for a results folder.

Finds the runs/comparisons (results.json files, grouped as plots.find_results
does) and sweeps (sweep.csv) under DIR and writes DIR/report.html with, per
group, the comparison table, the per-cgroup table and the plots embedded as
base64 PNG, so the file reads offline and can be mailed around. Invariant:
no network references (no CDN scripts, no external CSS or images).
"""
from __future__ import annotations

import base64
import datetime
import html
import io
import json
import os
from typing import Any, Dict, List, Optional

from ._errors import AgentcgError
from .api import Comparison, Result

__all__ = ["figure_html", "write_report"]

_CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1150px; color: #222; padding: 0 1em; }
h1 { border-bottom: 2px solid #d62728; padding-bottom: .2em; }
h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: .8em 0; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f4f4f4; }
td:first-child, th:first-child { text-align: left; }
img { max-width: 100%; margin: .5em 0; border: 1px solid #eee; }
.note { color: #666; font-size: 13px; }
"""


def figure_html(fig: Any, alt: str) -> str:
    """A matplotlib figure as an inline <img> (base64 PNG)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _fmt_ms(ns: Any) -> str:
    try:
        return f"{float(ns) / 1e6:.3f}"
    except (TypeError, ValueError):
        return ""


def comparison_table(cmp: Comparison) -> str:
    """Metric rows x policy columns, like `agentcg compare` prints."""
    labels = list(cmp)
    rows: List[List[str]] = []

    def add(name: str, f: Any) -> None:
        cells = []
        for lbl in labels:
            try:
                cells.append(f(cmp[lbl].data))
            except (KeyError, TypeError, ValueError):
                cells.append("")
        rows.append([name] + cells)

    add("wakeup p50 (ms)", lambda r: _fmt_ms(r["wakeup_latency_ns"]["p50"]))
    add("wakeup p99 (ms)", lambda r: _fmt_ms(r["wakeup_latency_ns"]["p99"]))
    add("wakeup max (ms)", lambda r: _fmt_ms(r["wakeup_latency_ns"]["max"]))
    add("tool-call p50 (ms)", lambda r: _fmt_ms(r["tool_call_latency_ns"]["p50"]))
    add("tool-call p99 (ms)", lambda r: _fmt_ms(r["tool_call_latency_ns"]["p99"]))
    add("max runnable wait (ms)", lambda r: _fmt_ms(r["max_runnable_wait_ns"]))
    add("context switches", lambda r: str(r["context_switches"]))
    add("CPU utilisation", lambda r: f"{float(r['cpu_utilization']) * 100:.1f}%")
    add("Jain fairness", lambda r: f"{float(r['jain_fairness']):.3f}")
    first = next(iter(cmp.values()))
    for path, c in sorted(first.data.get("cgroups", {}).items()):
        if path == "/" or c.get("tasks", 1) == 0:
            continue
        add(f"{path} share / entitled", lambda r, p=path: f"{float(r['cgroups'][p]['cpu_share']) * 100:.1f}% / "
            f"{float(r['cgroups'][p]['entitled_share']) * 100:.1f}%")
        add(f"{path} wakeup p99 (ms)", lambda r, p=path: _fmt_ms(r["cgroups"][p]["wakeup_latency_ns"]["p99"]))
        if (c.get("tool_call_latency_ns") or {}).get("count", 0):
            add(f"{path} tool-call p99 (ms)",
                lambda r, p=path: _fmt_ms(r["cgroups"][p]["tool_call_latency_ns"]["p99"]))
    if all(r.has_gpu for r in cmp.values()):
        add("GPU makespan (s)", lambda r: f"{float(r['gpu']['makespan_ns']) / 1e9:.3f}")
        add("GPU busy fraction", lambda r: f"{float(r['gpu']['busy_fraction']):.3f}")
        add("GPU switches", lambda r: str(r["gpu"]["switches"]))
        add("GPU migrated (GiB)", lambda r: f"{int(r['gpu']['bytes_migrated']) / 2**30:.2f}")
        for j in sorted(first.data["gpu"].get("jobs", {})):
            add(f"job {j} JCT (s)", lambda r, j=j: f"{float(r['gpu']['jobs'][j]['jct_ns']) / 1e9:.3f}")
        for c in sorted(first.data["gpu"].get("clients", {})):
            if first.data["gpu"]["clients"][c].get("limit_pct") is not None:
                add(f"client {c} share / limit",
                    lambda r, c=c: f"{float(r['gpu']['clients'][c]['achieved_share']) * 100:.1f}% / "
                    f"{r['gpu']['clients'][c]['limit_pct']}%")
    head = "<tr><th>metric</th>" + "".join(f"<th>{html.escape(lbl)}</th>" for lbl in labels) + "</tr>"
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table>{head}{body}</table>"


def write_report(root: str, output: Optional[str] = None, title: str = "agentcg report") -> str:
    """Writes the HTML report for everything under root; returns its path."""
    from . import plots

    if not os.path.isdir(root):
        raise AgentcgError(f"{root}: not a directory")
    out = output or os.path.join(root, "report.html")
    parts: List[str] = [f"<h1>{html.escape(title)}</h1>",
                        f'<p class="note">Results under <code>{html.escape(os.path.abspath(root))}'
                        f"</code>. Latencies are simulated time. Generated by agentcg.</p>"]
    groups = plots.find_results(root)
    sweeps = []
    for d, dirs, names in os.walk(root):
        dirs.sort()
        if "sweep.csv" in names:
            sweeps.append(d)
    if not groups and not sweeps:
        raise AgentcgError(f"{root}: no results.json or sweep.csv found")
    for gdir, members in groups.items():
        cmp = Comparison({label: Result.load(p) for label, p in members.items()})
        first = next(iter(cmp.values()))
        rel = os.path.relpath(gdir, root)
        name = first.data.get("trace", rel)
        parts.append(f"<h2>{html.escape(str(name))}</h2>")
        parts.append(f'<p class="note">folder <code>{html.escape(rel)}</code>, {first.data.get("cpus")} CPUs, '
                     f"seed {first.data.get('seed')}, policies: {html.escape(', '.join(cmp))}</p>")
        parts.append(comparison_table(cmp))
        for fname, fig in plots.comparison_figures(cmp):
            parts.append(figure_html(fig, fname))
    for d in sweeps:
        import pandas as pd

        df = pd.read_csv(os.path.join(d, "sweep.csv"))
        grid: Optional[Dict[str, Any]] = None
        meta = os.path.join(d, "sweep.json")
        if os.path.exists(meta):
            with open(meta, encoding="utf-8") as f:
                grid = json.load(f).get("grid")
        rel = os.path.relpath(d, root)
        parts.append(f"<h2>Sweep <code>{html.escape(rel)}</code> ({len(df)} simulations)</h2>")
        axes = plots.sweep_axes(df, grid)
        metrics = [m for m in ("wakeup_p99_ns", "tool_call_p99_ns", "jain_fairness", "gpu_makespan_ns")
                   if m in df.columns]
        if axes and metrics:
            summary = df.groupby(axes)[metrics].mean().reset_index()
            parts.append(summary.to_html(index=False, float_format=lambda v: f"{v:.4g}"))
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            for p in plots.plot_sweep(df, os.path.join(tmp, "sweep"), grid, formats=("png",)):
                with open(p, "rb") as f:
                    data = base64.b64encode(f.read()).decode("ascii")
                parts.append(f'<img alt="sweep heat-map" src="data:image/png;base64,{data}">')
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    doc = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>\n"
           + "\n".join(parts) + f'\n<p class="note">written {stamp}</p></body></html>\n')
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write(doc)
    return out
