# SPDX-License-Identifier: GPL-2.0-only
"""`agentcg report DIR`: one self-contained HTML page for a results folder.

Finds the runs/comparisons (results.json files, grouped as plots.find_results
does; the repetitions beside them: seed-N.results.json of `compare --seeds`,
rep-N/results.json of `live compare`) and sweeps (sweep.csv) under DIR and
writes DIR/report.html: a contents list, then one section per scenario with
the comparison table (agentcg.table: the very rows and cells the terminal
prints) and the plots embedded as base64 PNG, so the file reads offline and
can be mailed around. The page is a Jinja2 template (Debian python3-jinja2,
autoescaped). Invariant: no network references (no CDN scripts, no
external CSS or images).
"""
from __future__ import annotations

import base64
import datetime
import glob
import io
import json
import os
import re
from typing import Any, Dict, List, Mapping, Optional

from ._errors import AgentcgError
from .api import Comparison, Result

__all__ = ["figure_html", "load_repetitions", "write_report"]

_CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1400px; color: #222; padding: 0 1em; }
h1 { border-bottom: 2px solid #d62728; padding-bottom: .2em; }
h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
nav ol { columns: 2; font-size: 14px; }
table { border-collapse: collapse; margin: .8em 0; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; }
td:first-child, th:first-child { text-align: left; }
td.v-better { background: #e3f4e1; } td.v-worse { background: #fbe3e1; }
td.v-indistinguishable { color: #777; }
.plots { display: flex; flex-wrap: wrap; gap: 8px; }
.plots img { width: 560px; max-width: 100%; border: 1px solid #eee; }
.plots img.wide { width: 100%; }
.note { color: #666; font-size: 13px; }
.scroll { overflow-x: auto; }
"""

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title><style>{{ css | safe }}</style></head>
<body>
<h1>{{ title }}</h1>
<p class="note">Results under <code>{{ root }}</code>. Latencies are simulated time unless the section says live.
Cells: median [95 % bootstrap interval] over the repetitions where there are several; "-" = does not apply
or not measured. Verdicts are against eevdf (the kernel's default since 6.6).</p>
<nav><h2>Contents</h2><ol>
{% for s in sections %}<li><a href="#{{ s.anchor }}">{{ s.title }}</a></li>
{% endfor %}</ol></nav>
{% for s in sections %}
<section id="{{ s.anchor }}">
<h2>{{ s.title }}</h2>
<p class="note">{{ s.note }}</p>
<div class="scroll">{{ s.table_html | safe }}</div>
<div class="plots">{% for f in s.figures %}<img alt="{{ f.alt }}"{% if f.wide %} class="wide"{% endif %} src="data:image/png;base64,{{ f.data }}">{% endfor %}</div>
</section>
{% endfor %}
<p class="note">written {{ stamp }}</p>
</body></html>
"""


def figure_html(fig: Any, alt: str) -> str:
    """A matplotlib figure as an inline <img> (base64 PNG)."""
    import html

    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{_png(fig)}">'


def _png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def load_repetitions(results_json: str) -> List[Dict[str, Any]]:
    """Every repetition stored beside one results.json (seed-N.results.json,
    rep-N/results.json), or just that file."""
    d = os.path.dirname(results_json)
    reps = sorted(glob.glob(os.path.join(d, "seed-*.results.json")),
                  key=lambda p: int(re.sub(r"\D", "", os.path.basename(p)) or 0))
    reps += sorted(glob.glob(os.path.join(d, "rep-*", "results.json")),
                   key=lambda p: int(re.sub(r"\D", "", os.path.basename(os.path.dirname(p))) or 0))
    out = []
    for p in reps or [results_json]:
        with open(p, encoding="utf-8") as f:
            out.append(json.load(f))
    return out


def comparison_table(cmp: Comparison, runs: Optional[Mapping[str, List[Dict[str, Any]]]] = None) -> str:
    """The terminal's table for these results, as HTML."""
    from . import table

    runs = runs or {lbl: [r.data] for lbl, r in cmp.items()}
    return table.render_html(table.build_rows(runs), list(runs))


def _ordered(gdir: str, members: Mapping[str, str]) -> Dict[str, str]:
    """Columns in the order the comparison ran (compare.json), else the
    baseline (eevdf) first and the rest by name, as the terminal shows them."""
    from . import table

    order: List[str] = []
    meta = os.path.join(gdir, "compare.json")
    if os.path.exists(meta):
        try:
            with open(meta, encoding="utf-8") as f:
                order = [str(x) for x in json.load(f).get("policies", [])]
        except (OSError, ValueError):
            order = []
    labels = list(members)
    base = table.baseline_of(sorted(labels))
    rank = {lbl: (order.index(lbl) if lbl in order else len(order), lbl != base, lbl) for lbl in labels}
    return {lbl: members[lbl] for lbl in sorted(labels, key=lambda x: rank[x])}


def _anchor(text: str, used: Dict[str, int]) -> str:
    a = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"
    used[a] = used.get(a, 0) + 1
    return a if used[a] == 1 else f"{a}-{used[a]}"


def write_report(root: str, output: Optional[str] = None, title: str = "agentcg report") -> str:
    """Writes the HTML report for everything under root; returns its path."""
    import jinja2

    from . import plots

    if not os.path.isdir(root):
        raise AgentcgError(f"{root}: not a directory")
    out = output or os.path.join(root, "report.html")
    groups = plots.find_results(root)
    sweeps = []
    for d, dirs, names in os.walk(root):
        dirs.sort()
        if "sweep.csv" in names:
            sweeps.append(d)
    if not groups and not sweeps:
        raise AgentcgError(f"{root}: no results.json or sweep.csv found")
    sections: List[Dict[str, Any]] = []
    used: Dict[str, int] = {}
    for gdir, members in groups.items():
        members = _ordered(gdir, members)
        cmp = Comparison({label: Result.load(p) for label, p in members.items()})
        runs = {label: load_repetitions(p) for label, p in members.items()}
        first = next(iter(cmp.values()))
        rel = os.path.relpath(gdir, root)
        name = str(first.data.get("trace", rel))
        heading = name if rel in (".", name) else f"{rel}: {name}"
        live = "live" in first.data
        seeds = sorted({int(r.get("seed", 0)) for rs in runs.values() for r in rs})
        reps = max(len(v) for v in runs.values())
        note = (f"folder {rel}, {first.data.get('cpus')} CPUs, "
                + (f"{reps} live repetitions" if live and reps > 1 else
                   f"seeds {', '.join(map(str, seeds))}" if len(seeds) > 1 else f"seed {first.data.get('seed')}")
                + f"; policies: {', '.join(cmp)}")
        figs = [{"alt": fname, "data": _png(fig), "wide": fname.startswith(("schedule", "gpu-timeline"))}
                for fname, fig in plots.comparison_figures(cmp)]
        sections.append({"anchor": _anchor(heading, used), "title": heading + (" (live)" if live else ""),
                         "note": note, "table_html": comparison_table(cmp, runs), "figures": figs})
    for d in sweeps:
        import tempfile

        import pandas as pd

        df = pd.read_csv(os.path.join(d, "sweep.csv"))
        grid: Optional[Dict[str, Any]] = None
        meta = os.path.join(d, "sweep.json")
        if os.path.exists(meta):
            with open(meta, encoding="utf-8") as f:
                grid = json.load(f).get("grid")
        rel = os.path.relpath(d, root)
        axes = plots.sweep_axes(df, grid)
        metrics = [m for m in ("wakeup_p99_ns", "tool_call_p99_ns", "jain_fairness", "gpu_makespan_ns")
                   if m in df.columns]
        html_table = ""
        if axes and metrics:
            summary = df.groupby(axes)[metrics].median().reset_index()
            html_table = summary.to_html(index=False, float_format=lambda v: f"{v:.4g}", na_rep="-")
        figs = []
        with tempfile.TemporaryDirectory() as tmp:
            for p in plots.plot_sweep(df, os.path.join(tmp, "sweep"), grid, formats=("png",)):
                with open(p, "rb") as f:
                    figs.append({"alt": "sweep heat-map", "data": base64.b64encode(f.read()).decode("ascii"),
                                 "wide": False})
        title_s = f"Sweep {rel}"
        sections.append({"anchor": _anchor(title_s, used), "title": title_s,
                         "note": f"{len(df)} simulations; medians over the seeds", "table_html": html_table,
                         "figures": figs})
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    env = jinja2.Environment(autoescape=True)
    doc = env.from_string(_PAGE).render(title=title, css=_CSS, root=root, sections=sections,
                                        stamp=stamp)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write(doc)
    return out
