# SPDX-License-Identifier: GPL-2.0-only
"""The one comparison table: which rows, which values, how a cell reads.

`build_rows()` turns the results.json documents of a comparison (each label
-> its repetitions: seeds in the simulator, runs in the VM) into Rows; the
terminal (`render_text`), report.html (`render_html`, Jinja2) and `--json`
(`rows_json`) all print those same Rows, so the three never disagree.

Rules that keep the table honest:
- a missing value is NaN and reads "-", never 0 (a job that never finished
  has no JCT; a trace without tool calls has no tool-call row at all);
- rows that do not apply are omitted: no CPU rows for a trace without
  processes (a GPU-only scenario), no tool-call rows without tool calls, no
  throttling rows without cpu.max, no GPU rows without GPU jobs;
- the longest runnable wait is always shown, flagged "!" at or above
  STARVATION_NS (a task that waits that long is starved, whatever the
  percentiles say);
- fairness is Jain's index of cpu_share / demand-capped entitlement over the
  leaf cgroups with tasks (see `capped_entitlements`): a group that wants less
  than its weight entitles it to is not "treated unfairly";
- with more than AGGREGATE_ABOVE leaf cgroups (100 agent sessions) the
  per-cgroup figures collapse into aggregate rows (p50 and p99 over the
  cgroups, and the worst cgroup); `per_cgroup=True` adds every cgroup's rows;
- with repetitions a cell is "median [95 % interval]" and each policy other
  than the baseline (eevdf when present) gets a verdict column (stats.py);
- per-cgroup tool-call rows only when several cgroups make tool calls (with
  one, they would repeat the overall rows).

print_summary / print_compare put a table on stdout (cli.py's run and
compare, demo.py). `python3 -m agentcg.table` renders results already on
disk or on stdin (`agentcg-sim run|compare --json`): the C++ CLI prints no
table of its own, so this module is the only definition of one, with or
without the Python extension (it needs none).

Who calls it: cli.py (run, compare), demo.py, report.py, live.py, fidelity.py,
the `./agentcg` launcher when the extension is not built.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping

TYPE_CHECKING = False  # typing is imported by static checkers only: ~2.5 ms of start-up (issue 21)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Sequence

from . import stats

__all__ = ["AGGREGATE_ABOVE", "Row", "STARVATION_NS", "baseline_of", "build_rows", "capped_entitlements",
           "format_value", "print_compare", "print_summary", "render_html", "render_text", "rows_json"]

STARVATION_NS = 1_000_000_000  # a task runnable for 1 s without running is starved
AGGREGATE_ABOVE = 4           # more leaf cgroups than this: aggregate rows unless per_cgroup
NAN = float("nan")

Doc = Mapping  # a results.json document: Mapping[str, Any]


class Row:
    """One metric: its repetitions per label, unit, and which way is better."""

    __slots__ = ("metric", "unit", "values", "lower_is_better", "section", "flag_at")

    def __init__(self, metric: str, unit: str, values: Dict[str, List[float]],
                 lower_is_better: Optional[bool], section: str = "", flag_at: Optional[float] = None) -> None:
        self.metric = metric
        self.unit = unit  # "ms", "s", "%", "count", "GiB", "" (plain number)
        self.values = values
        self.lower_is_better = lower_is_better
        self.section = section
        self.flag_at = flag_at  # a median at or above this (in the row's unit) is flagged "!"

    def __repr__(self) -> str:
        return f"Row({self.metric!r}, {self.unit!r}, {self.values!r})"


def _f(v: Any, scale: float = 1.0) -> float:
    if v is None or isinstance(v, (dict, list, str)):
        return NAN
    try:
        return float(v) * scale
    except (TypeError, ValueError):
        return NAN


def _get(d: Any, *path: str) -> Any:
    for k in path:
        if not isinstance(d, Mapping) or k not in d:
            return None
        d = d[k]
    return d


def baseline_of(labels: Sequence[str]) -> str:
    """The reference column: eevdf (the kernel's default since 6.6) when
    present, else the first label."""
    for lbl in labels:
        if lbl == "eevdf" or lbl.startswith("eevdf/"):
            return lbl
    return labels[0]


def leaf_cgroups(r: Doc) -> List[str]:
    """Cgroups with tasks and no child cgroup with tasks (sorted)."""
    cg = r.get("cgroups", {}) or {}
    paths = [p for p, c in cg.items() if p != "/" and (c.get("tasks") or 0) > 0]
    return sorted(p for p in paths if not any(q != p and q.startswith(p.rstrip("/") + "/") for q in paths))


def capped_entitlements(entitled: Mapping[str, float], demand: Mapping[str, float]) -> Dict[str, float]:
    """Water-filling of the machine over the leaf cgroups: each gets a part in
    proportion to its weight-based entitlement, but never more than its
    demand; what a group does not want goes to the others, in proportion.

    entitled: leaf -> entitled_share (results.json, weights folded down the
    tree); demand: leaf -> the share of the machine it uses when never kept
    waiting. Flat over the leaves: spare capacity of one subtree is spread
    over all other leaves by their entitlement rather than first to its
    siblings, exact for the bundled (flat) traces."""
    capacity = sum(entitled.values())
    out: Dict[str, float] = {}
    active = {k for k, e in entitled.items() if e > 0}
    for k in entitled:
        if k not in active:
            out[k] = 0.0
    while active:
        weight = sum(entitled[k] for k in active)
        if weight <= 0:
            break
        capped = {k for k in active if demand.get(k, math.inf) <= capacity * entitled[k] / weight}
        if not capped:
            for k in active:
                out[k] = capacity * entitled[k] / weight
            break
        for k in capped:
            out[k] = max(0.0, demand[k])
            capacity -= out[k]
        active -= capped
    return out


def capped_jain(r: Doc, demand: Optional[Mapping[str, float]]) -> float:
    """Jain's index of cpu_share / demand-capped entitlement over the leaf
    cgroups (NaN with fewer than two); without demand figures, the plain
    entitlement (then a group that wants less than it may looks unfair)."""
    leaves = leaf_cgroups(r)
    if len(leaves) < 2:
        return NAN
    cg = r["cgroups"]
    ent = {p: float(cg[p].get("entitled_share") or 0.0) for p in leaves}
    if demand:
        ent = capped_entitlements(ent, {p: demand[p] for p in leaves if p in demand})
    xs = [float(cg[p].get("cpu_share") or 0.0) / ent[p] for p in leaves if ent.get(p, 0) > 0]
    if len(xs) < 2:
        return NAN
    s, s2 = sum(xs), sum(x * x for x in xs)
    return s * s / (len(xs) * s2) if s2 > 0 else NAN


WEIGHT_SHORTFALL_FLAG = 2.0  # points: above this, cpu.weight is not honoured


def weight_shortfall(r: Doc) -> float:
    """cpu.weight where a cgroup is busy: results.json's
    cpu_weight_shortfall_pts, the worst cgroup's mean shortfall, per 1 s
    window in which it had runnable tasks, below min(its runnable tasks, its
    weight's CPUs with every sibling busy, cpu.max included), in points of
    the machine (sim/results.h weight_shortfall_points). NaN where the
    results do not say (the live player cannot see runnable counts)."""
    return _f(r.get("cpu_weight_shortfall_pts"))


def _pctl(xs: List[float], q: float) -> float:
    """Nearest-rank percentile, as results.json's latency summaries."""
    xs = sorted(x for x in xs if not math.isnan(x))
    if not xs:
        return NAN
    k = max(0, min(len(xs) - 1, int(math.ceil(q / 100.0 * len(xs))) - 1))
    return xs[k]


def build_rows(runs: Mapping[str, Sequence[Doc]], per_cgroup: bool = False,
               demand: Optional[Mapping[str, float]] = None) -> List[Row]:
    """Rows for runs = {label: [results.json of each repetition]}."""
    labels = list(runs)
    rows: List[Row] = []

    def add(metric: str, unit: str, get: Callable[[Doc], float], lower: Optional[bool], section: str = "",
            flag_at: Optional[float] = None, keep: bool = False) -> None:
        vals = {lbl: [get(r) for r in runs[lbl]] for lbl in labels}
        if not keep and all(math.isnan(v) for vs in vals.values() for v in vs):
            return  # applies to no run: omitted, not a row of dashes
        rows.append(Row(metric, unit, vals, lower, section, flag_at))

    every = [r for lbl in labels for r in runs[lbl]]
    has_cpu = any((r.get("tasks") or 0) > 0 for r in every)
    has_tools = any((_get(r, "tool_call_latency_ns", "count") or 0) > 0 for r in every)
    if has_cpu:
        add("wakeup latency p50", "ms", lambda r: _f(_get(r, "wakeup_latency_ns", "p50"), 1e-6), True)
        add("wakeup latency p99", "ms", lambda r: _f(_get(r, "wakeup_latency_ns", "p99"), 1e-6), True)
        add("longest runnable wait", "ms", lambda r: _f(r.get("max_runnable_wait_ns"), 1e-6), True,
            flag_at=STARVATION_NS * 1e-6)
        if has_tools:
            add("tool-call latency p50", "ms", lambda r: _f(_get(r, "tool_call_latency_ns", "p50"), 1e-6), True)
            add("tool-call latency p99", "ms", lambda r: _f(_get(r, "tool_call_latency_ns", "p99"), 1e-6), True)
        # keys of the agent-policy work (main's simpol branch): shown where the results carry them
        add("tool calls completed", "count", lambda r: _f(r.get("tool_calls_completed")), False)
        add("interactive wakeup p50", "ms", lambda r: _f(_get(r, "interactive_wakeup_latency_ns", "p50"), 1e-6),
            True)
        add("interactive wakeup p99", "ms", lambda r: _f(_get(r, "interactive_wakeup_latency_ns", "p99"), 1e-6),
            True)
        add("new-step precision", "", lambda r: _f(_get(r, "new_step_detection", "precision")), False)
        add("new-step recall", "", lambda r: _f(_get(r, "new_step_detection", "recall")), False)
        add("context switches", "count", lambda r: _f(r.get("context_switches")), None)
        add("CPU utilisation", "%", lambda r: _f(r.get("cpu_utilization"), 100), None)
        add("fairness (Jain, demand-capped)" if demand else "fairness (Jain vs full entitlement)", "",
            lambda r: capped_jain(r, demand), False)
        add("cpu.weight shortfall where busy, worst cgroup", "points", weight_shortfall, True,
            flag_at=WEIGHT_SHORTFALL_FLAG)

        leaves = sorted({p for r in every for p in leaf_cgroups(r)})
        many = len(leaves) > AGGREGATE_ABOVE
        if many:
            _aggregate_rows(add, leaves, has_tools, len(leaves), demand)
        if per_cgroup or not many:
            _cgroup_rows(add, leaves, every, demand)
    if any(isinstance(r.get("gpu"), Mapping) for r in every):
        _gpu_rows(add, every)
    return rows


def _cg(r: Doc, p: str, *path: str) -> Any:
    return _get(r, "cgroups", p, *path)


def _aggregate_rows(add: Any, leaves: List[str], has_tools: bool, n: int,
                    demand: Optional[Mapping[str, float]]) -> None:
    sec = f"all {n} cgroups"

    def over(key: str, q: Optional[float]) -> Callable[[Doc], float]:
        def get(r: Doc) -> float:
            xs = [_f(_cg(r, p, key, "p99"), 1e-6) for p in leaves if (_cg(r, p, key, "count") or 0) > 0]
            return (max(xs) if xs else NAN) if q is None else _pctl(xs, q)
        return get

    for key, what in (("wakeup_latency_ns", "wakeup p99"),) + ((("tool_call_latency_ns", "tool-call p99"),)
                                                                if has_tools else ()):
        add(f"per-cgroup {what}: p50 over cgroups", "ms", over(key, 50), True, sec)
        add(f"per-cgroup {what}: p99 over cgroups", "ms", over(key, 99), True, sec)
        add(f"per-cgroup {what}: worst cgroup", "ms", over(key, None), True, sec)

    def least(r: Doc) -> float:
        mine = [p for p in leaves if _cg(r, p) is not None]
        ent = {p: _f(_cg(r, p, "entitled_share")) for p in mine}
        ent = {p: e for p, e in ent.items() if e == e}
        if demand:
            ent = capped_entitlements(ent, {p: demand[p] for p in ent if p in demand})
        xs = [_f(_cg(r, p, "cpu_share")) / e * 100 for p, e in ent.items() if e > 0]
        return min(xs) if xs else NAN
    add("least share / demand-capped entitlement" if demand else "least share / entitlement", "%", least, False,
        sec)


def _cgroup_rows(add: Any, leaves: List[str], every: Sequence[Doc], demand: Optional[Mapping[str, float]]) -> None:
    # one cgroup with tool calls: its rows would repeat the overall ones
    tool_leaves = sum(1 for p in leaves if any((_cg(r, p, "tool_call_latency_ns", "count") or 0) > 0 for r in every))
    for p in leaves:
        ent = [_f(_cg(r, p, "entitled_share")) for r in every if _cg(r, p) is not None]
        label = f"{p} CPU share"
        if ent and not math.isnan(ent[0]):
            label += f" (entitled {ent[0] * 100:.1f} %"
            if demand and p in demand and demand[p] < ent[0]:
                label += f", wants {demand[p] * 100:.1f} %"
            label += ")"
        add(label, "%", lambda r, p=p: _f(_cg(r, p, "cpu_share"), 100), None, p)
        add(f"{p} wakeup latency p99", "ms", lambda r, p=p: _f(_cg(r, p, "wakeup_latency_ns", "p99"), 1e-6),
            True, p)
        if tool_leaves > 1 and any((_cg(r, p, "tool_call_latency_ns", "count") or 0) > 0 for r in every):
            add(f"{p} tool-call latency p50", "ms",
                lambda r, p=p: _f(_cg(r, p, "tool_call_latency_ns", "p50"), 1e-6), True, p)
            add(f"{p} tool-call latency p99", "ms",
                lambda r, p=p: _f(_cg(r, p, "tool_call_latency_ns", "p99"), 1e-6), True, p)
        if any((_cg(r, p, "nr_periods") or 0) > 0 for r in every):
            add(f"{p} throttled", "ms", lambda r, p=p: _f(_cg(r, p, "throttled_ns"), 1e-6), None, p)


def _gpu_rows(add: Any, every: Sequence[Doc]) -> None:
    def g(*path: str, scale: float = 1.0) -> Callable[[Doc], float]:
        return lambda r: _f(_get(r, "gpu", *path), scale)

    add("GPU makespan", "s", g("makespan_ns", scale=1e-9), True, "gpu")
    add("GPU busy fraction", "%", g("busy_fraction", scale=100), False, "gpu")
    add("GPU lock switches", "count", g("switches"), None, "gpu")
    add("GPU bytes migrated", "GiB", g("bytes_migrated", scale=1 / 2**30), True, "gpu")
    jobs = sorted({j for r in every for j in (_get(r, "gpu", "jobs") or {})})
    for j in jobs:
        # kept even when no policy finished it: "-" says so
        add(f"job {j} completion time", "s", g("jobs", j, "jct_ns", scale=1e-9), True, "gpu", keep=True)
    clients = sorted({c for r in every for c, v in (_get(r, "gpu", "clients") or {}).items()
                      if isinstance(v, Mapping) and isinstance(v.get("limit_pct"), (int, float))
                      and v["limit_pct"] < 100})  # 100 % = no limit: nothing to compare against
    for c in clients:
        lim = next((_get(r, "gpu", "clients", c, "limit_pct") for r in every
                    if _get(r, "gpu", "clients", c, "limit_pct") is not None), None)
        add(f"client {c} GPU share (limit {lim} %)", "%", g("clients", c, "achieved_share", scale=100), None, "gpu")


# --- cells ----------------------------------------------------------------------

def format_value(v: float, unit: str) -> str:
    """One number in a row's unit; NaN reads '-'."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if unit == "count":
        return f"{v:,.0f}"
    if unit == "%":
        return f"{v:.1f}"
    if unit == "GiB":
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}"
    if unit == "":
        return f"{v:.3f}"
    a = abs(v)  # ms, s, us, forks/s: three significant digits or more
    return f"{v:,.0f}" if a >= 1000 else f"{v:.1f}" if a >= 100 else f"{v:.2f}" if a >= 1 else f"{v:.3f}"


def _cell(row: Row, label: str) -> str:
    s = stats.summarize(row.values[label])
    text = format_value(s.median, row.unit)
    lo, hi = format_value(s.lo, row.unit), format_value(s.hi, row.unit)
    if s.n >= 2 and (lo != text or hi != text):  # identical repetitions: no interval to show
        text += f" [{lo}, {hi}]"
    if row.flag_at is not None and not math.isnan(s.median) and s.median >= row.flag_at:
        text += " !"
    return text


def _reps(rows: Sequence[Row]) -> int:
    return max((len(v) for r in rows for v in r.values.values()), default=0)


def table_cells(rows: Sequence[Row], labels: Sequence[str]) -> Dict[str, Any]:
    """{'header': [...], 'rows': [[...]], 'notes': [...]} shared by the renderers."""
    base = baseline_of(labels)
    reps = _reps(rows)
    verdicts = reps >= 2 and len(labels) > 1
    header = ["metric", "unit"]
    for lbl in labels:
        header.append(lbl)
        if verdicts and lbl != base:
            header.append(f"vs {base}")
    body = []
    for row in rows:
        cells = [row.metric, row.unit]
        for lbl in labels:
            cells.append(_cell(row, lbl))
            if verdicts and lbl != base:
                cells.append(stats.verdict(row.values[lbl], row.values[base], row.lower_is_better))
        body.append(cells)
    notes = []
    flagged = {row.metric for row, cells in zip(rows, body) if any(c.endswith(" !") for c in cells)}
    if any(m.startswith("longest runnable wait") for m in flagged):
        notes.append(f"! = median at or above {STARVATION_NS / 1e9:g} s: a task was starved")
    if any(m.startswith("cpu.weight shortfall") for m in flagged):
        notes.append(f"! = {WEIGHT_SHORTFALL_FLAG:g} points or more: a busy cgroup got less than its weight owed it")
    if reps >= 2:
        notes.append(f"cells: median [95 % bootstrap interval] of {reps} repetitions; verdicts against "
                     f"{base} at 95 % confidence")
    return {"header": header, "rows": body, "notes": notes, "baseline": base, "repetitions": reps}


def render_text(rows: Sequence[Row], labels: Sequence[str], title: str = "") -> str:
    t = table_cells(rows, labels)
    all_rows = [t["header"]] + t["rows"]
    w = [max(len(r[i]) for r in all_rows) for i in range(len(t["header"]))]
    out = [title] if title else []
    for n, r in enumerate(all_rows):
        out.append("  ".join(c.ljust(w[i]) if i < 2 else c.rjust(w[i]) for i, c in enumerate(r)).rstrip())
        if n == 0:
            out.append("  ".join("-" * x for x in w))
    out.extend(t["notes"])
    return "\n".join(out) + "\n"


_HTML = """<table class="cmp">
<thead><tr>{% for h in t.header %}<th>{{ h }}</th>{% endfor %}</tr></thead>
<tbody>{% for r in t.rows %}
<tr>{% for c in r %}<td{% if c in verdict_classes %} class="v-{{ c | replace(' ', '') | replace('/', '') }}"{% endif %}>{{ c }}</td>{% endfor %}</tr>{% endfor %}
</tbody></table>
{% for n in t.notes %}<p class="note">{{ n }}</p>{% endfor %}
"""


def render_html(rows: Sequence[Row], labels: Sequence[str]) -> str:
    """The same cells as render_text, as an HTML table (Jinja2, autoescaped)."""
    import jinja2

    env = jinja2.Environment(autoescape=True)
    return env.from_string(_HTML).render(t=table_cells(rows, labels),
                                         verdict_classes=("better", "worse", "indistinguishable"))


def rows_json(rows: Sequence[Row], labels: Sequence[str]) -> List[Dict[str, Any]]:
    """The rows as plain data for --json (NaN -> null)."""
    base = baseline_of(labels)

    def num(v: float) -> Optional[float]:
        return None if v is None or math.isnan(v) else round(v, 6)

    out = []
    for row in rows:
        per: Dict[str, Any] = {}
        for lbl in labels:
            s = stats.summarize(row.values[lbl])
            per[lbl] = {"median": num(s.median), "ci95": [num(s.lo), num(s.hi)], "n": s.n,
                        "samples": [num(v) for v in row.values[lbl]]}
            if lbl != base:
                per[lbl]["verdict"] = stats.verdict(row.values[lbl], row.values[base], row.lower_is_better)
        out.append({"metric": row.metric, "unit": row.unit, "lower_is_better": row.lower_is_better,
                    "section": row.section, "policies": per})
    return out


def dumps(doc: Any) -> str:
    return json.dumps(doc, indent=1, sort_keys=True, allow_nan=False) + "\n"


# --- printing ---------------------------------------------------------------------

def print_summary(r: Doc, per_cgroup: bool = False) -> None:
    """One run's header line and table on stdout (`agentcg run`)."""
    label = _label(r)
    print(f"trace {r.get('trace')}  policy {label}  cpus {r.get('cpus')}  seed {r.get('seed')}  "
          f"simulated {float(r.get('duration_ns') or 0) / 1e9:g} s")
    print(render_text(build_rows({label: [r]}, per_cgroup=per_cgroup), [label]), end="")


def print_compare(name: str, cpus: Any, seeds: Sequence[int], runs: Mapping[str, Sequence[Doc]],
                  per_cgroup: bool = False, demand: Optional[Mapping[str, float]] = None) -> None:
    """A comparison's table on stdout (`agentcg compare`, `agentcg demo`)."""
    seed_text = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seed_range(seeds)}"
    labels = list(runs)
    print(render_text(build_rows(runs, per_cgroup=per_cgroup, demand=demand), labels,
                      title=f"trace {name} ({cpus} CPUs, {seed_text}; baseline {baseline_of(labels)})"), end="")


def _label(r: Doc) -> str:
    return str(r.get("policy")) + ("" if r.get("gpu_policy") in (None, "none") else f"/{r.get('gpu_policy')}")


def load_runs(doc: Any, where: str) -> Dict[str, List[Doc]]:
    """{label: [doc]} from one results.json document or from the
    "agentcg-compare-results" document of `agentcg-sim compare --json`."""
    if isinstance(doc, dict) and doc.get("format") == "agentcg-compare-results":
        res = doc.get("results")
        if not isinstance(res, dict) or not res:
            raise ValueError(f"{where}: field 'results': expected an object of policy -> results.json")
        order = [p for p in doc.get("policies") or [] if p in res] or list(res)  # the command line's order
        return {str(k): [res[k]] for k in order}
    if isinstance(doc, dict) and "policy" in doc and "wakeup_latency_ns" in doc:
        return {_label(doc): [doc]}
    raise ValueError(f"{where}: expected a results.json document (with 'policy' and 'wakeup_latency_ns') "
                     "or agentcg-sim compare --json output")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """python3 -m agentcg.table [--per-cgroup] SOURCE...: the table of
    results on disk (a results.json, a run's folder, a comparison's folder
    of POLICY/results.json) or on stdin ("-")."""
    import argparse
    import os
    import sys

    ap = argparse.ArgumentParser(prog="python3 -m agentcg.table",
                                 description="print the comparison table of results.json files (or of "
                                             "agentcg-sim run|compare --json on stdin: '-')")
    ap.add_argument("sources", nargs="+", metavar="SOURCE",
                    help="results.json, a folder holding one, a compare folder (POLICY/results.json), or -")
    ap.add_argument("--per-cgroup", action="store_true", help="per-cgroup rows also past 100 cgroups")
    a = ap.parse_args(argv)
    runs: Dict[str, List[Doc]] = {}
    try:
        for src in a.sources:
            if src == "-":
                found = [("<stdin>", sys.stdin.read())]
            elif os.path.isdir(src):
                direct = os.path.join(src, "results.json")
                files = [direct] if os.path.isfile(direct) else sorted(
                    os.path.join(src, d, "results.json") for d in os.listdir(src)
                    if os.path.isfile(os.path.join(src, d, "results.json")))
                if not files:
                    raise ValueError(f"{src}: no results.json in it or in its subfolders")
                found = [(f, open(f, encoding="utf-8").read()) for f in files]
            else:
                found = [(src, open(src, encoding="utf-8").read())]
            for where, text in found:
                try:
                    doc = json.loads(text)
                except json.JSONDecodeError as e:
                    raise ValueError(f"{where}:{e.lineno}: not JSON ({e.msg})") from None
                for lbl, docs in load_runs(doc, where).items():
                    runs.setdefault(lbl, []).extend(docs)
    except (OSError, ValueError) as e:
        print(f"agentcg table: {e}", file=sys.stderr)
        return 1
    traces = sorted({str(d.get("trace")) for docs in runs.values() for d in docs})
    if len(traces) > 1:
        print(f"agentcg table: the sources hold results of {len(traces)} traces ({', '.join(traces)}): "
              "a table compares one trace", file=sys.stderr)
        return 1
    base = baseline_of(list(runs))  # the baseline's column first, as `agentcg compare` prints it
    runs = {k: runs[k] for k in sorted(runs, key=lambda k: k != base)}  # stable: the sources' order otherwise
    first = next(iter(runs.values()))[0]
    if len(runs) == 1 and len(next(iter(runs.values()))) == 1:
        print_summary(first, per_cgroup=a.per_cgroup)
    else:
        seeds = sorted({int(d.get("seed") or 0) for docs in runs.values() for d in docs})
        print_compare(str(first.get("trace")), first.get("cpus"), seeds, runs, per_cgroup=a.per_cgroup)
    return 0


def seed_range(seeds: Sequence[int]) -> str:
    """1,2,3,4 -> "1-4"; anything else comma-separated."""
    s = list(seeds)
    if s == list(range(s[0], s[0] + len(s))) and len(s) > 2:
        return f"{s[0]}-{s[-1]}"
    return ",".join(str(x) for x in s)


if __name__ == "__main__":
    raise SystemExit(main())
