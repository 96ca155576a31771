# SPDX-License-Identifier: GPL-2.0-only
"""Plots of simulation results (matplotlib; Agg unless a backend is chosen).

Every function returns a matplotlib Figure (titles, axis labels with units,
legends) and never calls pyplot, so nothing leaks between calls and
notebooks display the returned figure. `save(fig, stem, formats)` writes
PNG/SVG. `plot_comparison` and `plot_directory` write the standard set for
a comparison (used by `agentcg compare --plots`, `agentcg plot`, the report
and the demo).

Plots: wakeup-latency CDF per policy (from every sample's histogram bucket
when the run kept its histograms, else from the reported percentiles; a
logit axis so p50..p99.9 are evenly spaced); the same per cgroup, one panel
per policy (plot_cgroup_cdf, colours of the share plot); tool-call latency per policy;
per-cgroup CPU share over time against entitlement; schedule timeline (task
slices per CPU for a window, from the Perfetto schedule); GPU job timeline
(waiting vs running per job, switches) and compute share vs limit per
client; sweep heat-maps. Colours are fixed per policy and per cgroup order so
figures of one report agree.
"""
from __future__ import annotations

import math
import os
import re
import sys
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

if "matplotlib.pyplot" not in sys.modules and not os.environ.get("MPLBACKEND"):
    import matplotlib

    matplotlib.use("Agg")

from matplotlib.figure import Figure

from ._errors import AgentcgError
from .api import Comparison, Result

if TYPE_CHECKING:
    import pandas

__all__ = [
    "plot_cgroup_cdf",
    "plot_comparison",
    "plot_cpu_share",
    "plot_directory",
    "plot_gpu_jobs",
    "plot_gpu_share",
    "plot_gpu_timeline",
    "plot_schedule_timeline",
    "plot_sweep_heatmap",
    "plot_tool_call_latency",
    "plot_wakeup_cdf",
    "save",
]

POLICY_COLORS = {
    "eevdf": "#2ca02c", "eevdf-nohrtick": "#98df8a", "cfs": "#7f7f7f", "fifo": "#2ca02c", "flatcg": "#1f77b4",
    "agentcg": "#d62728", "agentcg-base": "#ff9896",
    "none": "#000000", "nvshare": "#7f7f7f", "memory-aware": "#1f77b4",
    "compute-limit": "#ff7f0e", "memory-aware+compute-limit": "#9467bd",
}
# cgroups: one colour per path everywhere (share plots, schedule timelines),
# from a palette that avoids the policy colours' exact shades
_CGROUP_PALETTE = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d",
                   "#666666", "#17becf", "#bcbd22"]


def cgroup_color(path: str) -> str:
    """The colour of a cgroup in every plot: a stable function of its path
    (not of its position in one plot), so /victim looks the same everywhere."""
    import zlib

    return _CGROUP_PALETTE[zlib.crc32(path.encode("utf-8")) % len(_CGROUP_PALETTE)]
_CYCLE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf"]


def _color(label: str, i: int) -> str:
    key = label.split("/")[-1] if label not in POLICY_COLORS else label
    return POLICY_COLORS.get(label, POLICY_COLORS.get(key, _CYCLE[i % len(_CYCLE)]))


def _results(results: Any) -> Dict[str, Result]:
    if isinstance(results, Result):
        return {results.label: results}
    if isinstance(results, (Comparison, Mapping)):
        return dict(results.items())
    raise AgentcgError(f"expected a Result, a Comparison or a dict of Results, got {type(results).__name__}")


def _fig(w: float = 7.0, h: float = 4.2) -> Figure:
    return Figure(figsize=(w, h), dpi=100, layout="constrained")


def _trace_name(rs: Mapping[str, Result]) -> str:
    names = {str(r.data.get("trace", "")) for r in rs.values()}
    return names.pop() if len(names) == 1 else "several traces"


def _ms_label(ns: float) -> str:
    return f"{ns / 1e6:.3g} ms"


def save(fig: Figure, stem: str, formats: Sequence[str] = ("png", "svg")) -> List[str]:
    """Writes STEM.png / STEM.svg (...) and returns the paths."""
    d = os.path.dirname(stem)
    if d:
        os.makedirs(d, exist_ok=True)
    paths = []
    for fmt in formats:
        p = f"{stem}.{fmt}"
        # Fixed metadata so SVG/PDF bytes do not carry the date.
        meta: Dict[str, Any] = {"Date": None} if fmt in ("svg", "pdf") else {}
        if fmt == "svg":
            import matplotlib

            # A fixed salt makes SVG element ids (clip paths) reproducible.
            with matplotlib.rc_context({"svg.hashsalt": "agentcg"}):
                fig.savefig(p, format=fmt, metadata=meta)
        else:
            fig.savefig(p, format=fmt, dpi=110, metadata=meta or None)
        paths.append(p)
    return paths


# --- latency -------------------------------------------------------------------

_PCTS = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999))


def plot_wakeup_cdf(results: Any, key: str = "wakeup_latency_ns", cgroup: Optional[str] = None,
                    title: Optional[str] = None) -> Figure:
    """Wakeup (or, key="tool_call_latency_ns", tool-call) latency CDF per policy.

    From every sample when the results carry the machine's latency
    histogram (runs from agentcg.run() and the CLI: Result.latency_cdf(),
    exact up to 1,024 samples, then buckets within 1.6 %): a step CDF on a
    log x axis and a logit y axis (p50, p90, p99, p99.9 evenly spaced, so the
    tail is as visible as the body), each policy's maximum marked with a
    triangle at the top. Results without the histogram (a results.json on
    its own, a cgroup's view, live runs) fall back to the reported
    percentiles joined by a thin dashed line, and the title says so.
    """
    rs = _results(results)
    fig = _fig()
    ax = fig.add_subplot()
    plotted = 0
    from_samples = all(cgroup is None and (r.histograms or {}).get(key) for r in rs.values())
    for i, (label, r) in enumerate(rs.items()):
        src = r.data.get("cgroups", {}).get(cgroup, {}) if cgroup else r.data
        lat = src.get(key) or {}
        if not lat or int(lat.get("count", 0) or 0) == 0:
            continue
        col = _color(label, i)
        n = int(lat.get("count"))
        mx = lat.get("max")
        mx_text = f", max {_ms_label(float(mx))}" if mx is not None else ""
        if from_samples:
            cdf = r.latency_cdf(key)
            xs = [max(float(v), 1.0) / 1e6 for v in cdf["latency_ns"]]
            ys = [min(float(f), 0.99999) for f in cdf["fraction"]]
            # start the step at the smallest sample at fraction 0
            ax.step([xs[0]] + xs, [1e-5] + ys, where="post", lw=1.4, color=col, label=f"{label} (n={n:,}{mx_text})")
        else:
            xs = [max(float(lat.get(k, 0) or 0), 1.0) / 1e6 for k, _ in _PCTS]
            ax.plot(xs, [q for _, q in _PCTS], marker="o", lw=1, ls="--", color=col,
                    label=f"{label} (n={n:,}{mx_text}, percentiles only)")
        if mx is not None:  # the worst wait, never hidden behind the last step
            ax.plot([max(float(mx), 1.0) / 1e6], [0.9998], marker="v", ms=9, color=col, ls="none")
        plotted += 1
    ax.set_xscale("log")
    ax.set_yscale("logit")
    ax.set_ylim(0.01 if from_samples else 0.3, 0.99993)
    ticks = ([0.01, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9998] if from_samples else [0.5, 0.9, 0.99, 0.999, 0.9998])
    ax.set_yticks(ticks)
    ax.set_yticklabels([{0.01: "p1", 0.1: "p10", 0.5: "p50", 0.9: "p90", 0.99: "p99", 0.999: "p99.9",
                         0.9998: "max"}[t] for t in ticks])
    from matplotlib.ticker import NullLocator

    ax.yaxis.set_minor_locator(NullLocator())  # the logit axis' minor ticks are clutter here
    what = "Tool-call" if key.startswith("tool") else "Wakeup"
    ax.set_xlabel(f"{what.lower()} latency (ms, log scale)")
    ax.set_ylabel("fraction of samples at or below")
    where = f" in {cgroup}" if cgroup else ""
    kind = "CDF of every sample" if from_samples else "percentiles (no histogram kept)"
    ax.set_title(title or f"{what} latency {kind}{where}: {_trace_name(rs)}")
    ax.grid(True, which="major", alpha=0.4)
    ax.grid(True, which="minor", axis="x", alpha=0.15)
    if plotted:
        ax.legend(loc="lower right", fontsize="small")
    else:
        ax.text(0.5, 0.5, "no latency samples", transform=ax.transAxes, ha="center")
    return fig


def _cdf_cgroups(r: Result, key: str, limit: int = 8) -> List[str]:
    """The cgroups a per-cgroup CDF shows: those of the share plot when they
    have samples (same cgroups, same colours), else the leaf-most cgroups
    with samples, most samples first."""
    hists = r.cgroup_histograms()
    has = [p for p, h in hists.items() if p != "/" and int((h.get(key) or {}).get("count", 0) or 0)]
    try:
        shared = [c for c in _active_cgroups(r, None) if c in has]
    except AgentcgError:
        shared = []
    if shared:
        return shared[:limit]
    leaves = [p for p in has if not any(o != p and o.startswith(p.rstrip("/") + "/") for o in has)]
    leaves.sort(key=lambda p: (-int(hists[p][key]["count"]), p))
    return leaves[:limit]


def plot_cgroup_cdf(results: Any, key: str = "wakeup_latency_ns", cgroups: Optional[Sequence[str]] = None,
                    title: Optional[str] = None) -> Figure:
    """Wakeup (or tool-call) latency CDF of every sample, one curve per
    cgroup, one panel per policy (shared axes), each cgroup in its colour of
    the CPU-share plot (cgroup_color) and its maximum marked with a triangle.
    From histograms.json's per-cgroup histograms (runs from agentcg.run(),
    the CLI and agentcg-sim); raises AgentcgError when a run kept none.
    `cgroups`: paths or fnmatch patterns ("/sessions/s1*"); by default the
    cgroups of the share plot (at most 8, the busiest), and the title says
    how many cgroups with samples were left out."""
    rs = _results(results)
    missing = [label for label, r in rs.items() if not r.cgroup_histograms()]
    if missing:
        raise AgentcgError(f"no per-cgroup histograms for {', '.join(missing)} (results.json alone holds "
                           "percentiles; runs from agentcg.run() and the CLIs keep them in histograms.json)")
    first = next(iter(rs.values()))
    with_samples = sorted({p for r in rs.values() for p, h in r.cgroup_histograms().items()
                           if p != "/" and int((h.get(key) or {}).get("count", 0) or 0)})
    if cgroups is not None:  # paths or fnmatch patterns ("/sessions/*"), in the order given
        import fnmatch

        chosen = []
        for pat in cgroups:
            hits = [p for p in with_samples if fnmatch.fnmatchcase(p, pat)] if any(
                ch in pat for ch in "*?[") else [pat]
            if not hits:
                raise AgentcgError(f"--cgroups {pat}: no cgroup with samples matches it (cgroups with samples: "
                                   f"{', '.join(with_samples[:12])}{' ...' if len(with_samples) > 12 else ''})")
            chosen += [p for p in hits if p not in chosen]
    else:
        chosen = _cdf_cgroups(first, key)
    left_out = len([p for p in with_samples if p not in chosen and not any(
        c.startswith(p.rstrip("/") + "/") for c in chosen)])
    fig = _fig(8.0, 2.6 * len(rs) + 0.8)
    axes = fig.subplots(len(rs), 1, sharex=True, sharey=True, squeeze=False)[:, 0]
    what = "Tool-call" if key.startswith("tool") else "Wakeup"
    for ax, (label, r) in zip(axes, rs.items()):
        plotted = 0
        for cg in chosen:
            h = r.cgroup_histograms().get(cg, {}).get(key)
            if not h or not int(h.get("count", 0) or 0):
                continue
            cdf = r.latency_cdf(key, cgroup=cg)
            xs = [max(float(v), 1.0) / 1e6 for v in cdf["latency_ns"]]
            ys = [min(float(f), 0.99999) for f in cdf["fraction"]]
            col = cgroup_color(cg)
            mx = int(h["max"])
            ax.step([xs[0]] + xs, [1e-5] + ys, where="post", lw=1.4, color=col,
                    label=f"{cg} (n={int(h['count']):,}, max {_ms_label(float(mx))})")
            ax.plot([max(float(mx), 1.0) / 1e6], [0.9998], marker="v", ms=8, color=col, ls="none")
            plotted += 1
        ax.set_xscale("log")
        ax.set_yscale("logit")
        ax.set_ylim(0.01, 0.99993)
        ticks = [0.01, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9998]
        ax.set_yticks(ticks)
        ax.set_yticklabels(["p1", "p10", "p50", "p90", "p99", "p99.9", "max"])
        from matplotlib.ticker import NullLocator

        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_title(label, fontsize="medium")
        ax.set_ylabel("fraction at or below")
        ax.grid(True, which="major", alpha=0.4)
        if plotted:  # beside the data, never over it
            ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
        else:
            ax.text(0.5, 0.5, "no samples in these cgroups", transform=ax.transAxes, ha="center")
    axes[-1].set_xlabel(f"{what.lower()} latency (ms, log scale)")
    note = f" ({len(chosen)} shown, {left_out} more with samples: plot --cgroups to choose)" if left_out else ""
    fig.suptitle(title or f"{what} latency CDF per cgroup (every sample): {_trace_name(rs)}{note}",
                 fontsize="medium" if note else None)
    return fig


def plot_tool_call_latency(results: Any, title: Optional[str] = None) -> Figure:
    """Tool-call latency (p50, p90, p99) per policy, grouped bars, log scale."""
    import numpy as np

    rs = _results(results)
    fig = _fig()
    ax = fig.add_subplot()
    labels = list(rs)
    qs = [("p50", "p50"), ("p90", "p90"), ("p99", "p99")]
    width = 0.8 / len(qs)
    x = np.arange(len(labels))
    any_data = False
    all_vals: List[float] = []
    for j, (k, name) in enumerate(qs):
        vals = []
        for r in rs.values():
            lat = r.data.get("tool_call_latency_ns") or {}
            vals.append(float(lat.get(k, 0) or 0) / 1e6 if int(lat.get("count", 0) or 0) else 0.0)
        any_data = any_data or any(v > 0 for v in vals)
        all_vals += [v for v in vals if v > 0]
        bars = ax.bar(x + (j - 1) * width, vals, width, label=name, color=_CYCLE[j], alpha=0.85)
        for b, v in zip(bars, vals):
            if v > 0:
                from .table import format_value  # "21,300", never "2.13e+04"

                ax.annotate(format_value(v, "ms"), (b.get_x() + b.get_width() / 2, v), ha="center",
                            va="bottom", fontsize="x-small", rotation=90 if v >= 1000 else 0)
    ax.set_xticks(x)
    ax.set_xticklabels(labels)
    ax.set_xlabel("policy")
    # Log scale only when the bars span orders of magnitude; otherwise bars
    # starting at an arbitrary log floor would mislead.
    if any_data and max(all_vals) / min(all_vals) > 30:
        ax.set_yscale("log")
        ax.set_ylabel("tool-call latency (ms, log scale)")
    else:
        ax.set_ylabel("tool-call latency (ms)")
    if not any_data:
        ax.text(0.5, 0.5, "no tool calls in this trace", transform=ax.transAxes, ha="center")
    ax.set_title(title or f"Tool-call latency by policy: {_trace_name(rs)}")
    ax.legend(title="percentile", fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(True, axis="y", which="both", alpha=0.3)
    if any_data and ax.get_yscale() == "log":
        from matplotlib.ticker import FuncFormatter

        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    return fig


# --- CPU share -------------------------------------------------------------------

def _active_cgroups(r: Result, cgroups: Optional[Sequence[str]]) -> List[str]:
    series = (r.data.get("series") or {}).get("cgroups", {})
    if cgroups is not None:
        missing = [c for c in cgroups if c not in series]
        if missing:
            raise AgentcgError(f"no CPU-share series for {', '.join(missing)} "
                               f"(have: {', '.join(sorted(series))})")
        return list(cgroups)
    cg = r.data.get("cgroups", {})
    # Leaf-most cgroups that did work: parents are sums of their children.
    busy = [p for p in sorted(series) if p != "/" and any(v > 0 for v in series[p])]
    leaves = [p for p in busy if not any(o != p and o.startswith(p.rstrip("/") + "/") for o in busy)]
    leaves.sort(key=lambda p: -float(cg.get(p, {}).get("cpu_share", 0)))
    return leaves[:8]


def plot_cpu_share(result: Result, cgroups: Optional[Sequence[str]] = None, ax: Any = None,
                   title: Optional[str] = None) -> Figure:
    """Per-cgroup CPU share per interval (solid) against its entitlement (dashed)."""
    fig = ax.figure if ax is not None else _fig(8.0, 4.2)
    ax = ax if ax is not None else fig.add_subplot()
    s = result.data.get("series") or {}
    interval = int(s.get("interval_ns", 0) or 0)
    chosen = _active_cgroups(result, cgroups)
    # 100 ms bins swing 0-100 % with every burst; a 1 s moving average
    # (centred, shorter at the ends) shows the share a reader compares with
    # the entitlement
    k = max(1, int(round(1e9 / interval))) if interval else 1
    for i, cg in enumerate(chosen):
        vals = [float(v) for v in s["cgroups"][cg]]
        t = [(j + 0.5) * interval / 1e9 for j in range(len(vals))]
        col = cgroup_color(cg)
        half = k // 2
        smooth = [sum(vals[max(0, j - half):j - half + k]) / len(vals[max(0, j - half):j - half + k])
                  for j in range(len(vals))]
        ax.plot(t, [v * 100 for v in smooth], color=col, label=f"{cg} share", lw=1.6)
        ent = result.data.get("cgroups", {}).get(cg, {}).get("entitled_share")
        if ent is not None:
            ax.axhline(float(ent) * 100, color=col, ls="--", lw=1, alpha=0.8, label=f"{cg} entitled")
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("CPU share (%, 1 s mean)" if k > 1 else "CPU share of the machine (%)")
    ax.set_ylim(bottom=0)
    ax.set_title(title or f"CPU share over time vs entitlement: {result.data.get('trace')} / {result.label}")
    ax.grid(True, alpha=0.3)
    if chosen:  # beside the data, never over it
        ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    else:
        ax.text(0.5, 0.5, "no CPU-share series in these results", transform=ax.transAxes, ha="center")
    return fig


def plot_cpu_share_comparison(results: Any, cgroups: Optional[Sequence[str]] = None) -> Figure:
    """plot_cpu_share for each policy, stacked with a shared time axis."""
    rs = _results(results)
    fig = _fig(8.0, 2.6 * len(rs) + 0.6)
    axes = fig.subplots(len(rs), 1, sharex=True, sharey=True, squeeze=False)[:, 0]
    first = next(iter(rs.values()))
    chosen = list(cgroups) if cgroups is not None else _active_cgroups(first, None)
    for ax, (label, r) in zip(axes, rs.items()):
        plot_cpu_share(r, [c for c in chosen if c in (r.data.get("series") or {}).get("cgroups", {})],
                       ax=ax, title=f"{label}")
        if ax is not axes[-1]:
            ax.set_xlabel("")
    fig.suptitle(f"CPU share over time vs entitlement (dashed): {_trace_name(rs)}")
    return fig


# --- schedule timeline -------------------------------------------------------------

def action_window(results: Sequence[Result], span_ns: int = 50_000_000) -> Tuple[int, int]:
    """One window for every policy's timeline, where the scenario's action
    is: the span_ns stretch (on a 10 ms grid) in which the most distinct
    tasks ran, summed over the results (a fork storm's burst, not the quiet
    start). Ties go to the earliest."""
    import numpy as np

    frames = [r.schedule() for r in results if r.has_schedule]
    frames = [f for f in frames if len(f)]
    if not frames:
        return (0, span_ns)
    end = max(int(f["end_ns"].max()) for f in frames)
    if end <= span_ns:
        return (0, span_ns)
    step = 10_000_000
    starts = np.arange(0, end - span_ns + step, step, dtype=np.int64)
    score = np.zeros(len(starts), dtype=np.int64)
    for f in frames:
        a = f["start_ns"].to_numpy(dtype=np.int64)
        b = f["end_ns"].to_numpy(dtype=np.int64)
        pid = f["pid"].to_numpy(dtype=np.int64)
        for k, lo in enumerate(starts):
            m = (b > lo) & (a < lo + span_ns)
            score[k] += len(np.unique(pid[m]))
    k = int(np.argmax(score))
    return (int(starts[k]), int(starts[k]) + span_ns)


def plot_schedule_timeline(result: Result, window: Optional[Tuple[int, int]] = None,
                           max_cpus: int = 16, title: Optional[str] = None) -> Figure:
    """Which task ran on which CPU (bars coloured by cgroup) within `window` (ns).

    Needs the schedule (run(..., schedule=True) or --perfetto). Default
    window: 50 ms starting at the busiest tenth of the run.
    """
    df = result.schedule()
    fig = _fig(9.0, 0.45 * min(max(int(df["cpu"].max()) + 1 if len(df) else 1, 1), max_cpus) + 1.8)
    ax = fig.add_subplot()
    if len(df) == 0:
        ax.text(0.5, 0.5, "empty schedule", transform=ax.transAxes, ha="center")
        ax.set_xlabel("simulated time (ms)")
        ax.set_ylabel("CPU")
        ax.set_title(title or "Schedule timeline")
        return fig
    if window is None:
        window = action_window([result])
    lo, hi = int(window[0]), int(window[1])
    if hi <= lo:
        raise AgentcgError(f"schedule window: end {hi} must be after start {lo} (ns)")
    sel = df[(df["end_ns"] > lo) & (df["start_ns"] < hi) & (df["cpu"] < max_cpus)]
    cgs = sorted(set(df["cgroup"]))
    colors = {cg: cgroup_color(cg) for cg in cgs}
    for cg, part in sel.groupby("cgroup", sort=True):
        for cpu, rows in part.groupby("cpu", sort=True):
            spans = [(max(a, lo) / 1e6, (min(b, hi) - max(a, lo)) / 1e6)
                     for a, b in zip(rows["start_ns"], rows["end_ns"])]
            ax.broken_barh(spans, (cpu - 0.4, 0.8), facecolors=colors[cg], edgecolor="white",
                           linewidth=0.3)
    ncpu = min(int(df["cpu"].max()) + 1, max_cpus)
    ax.set_yticks(range(ncpu))
    ax.set_yticklabels([f"CPU {c}" for c in range(ncpu)], fontsize="small")
    ax.set_ylim(-0.6, ncpu - 0.4)
    ax.invert_yaxis()
    ax.set_xlim(lo / 1e6, hi / 1e6)
    ax.set_xlabel("simulated time (ms)")
    ax.set_ylabel("CPU")
    from matplotlib.patches import Patch

    shown = [cg for cg in cgs if cg in set(sel["cgroup"])]
    ax.legend(handles=[Patch(color=colors[c], label=c) for c in shown], title="cgroup",
              fontsize="x-small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title(title or f"Schedule timeline ({result.data.get('trace')} / {result.label}), "
                 f"{(hi - lo) / 1e6:.3g} ms window")
    return fig


# --- GPU ----------------------------------------------------------------------------

def plot_gpu_timeline(result: Result, title: Optional[str] = None) -> Figure:
    """Per GPU job: every lock hold (solid), every drain after a DROP
    (hatched) and the waits between them (grey), with each job's memory
    residency below, from the recorded schedule (run(..., schedule=True),
    --perfetto): nvshare's switches and memory-aware's co-running show as
    they happened. Without a recorded schedule: one bar per job from its
    first start to its finish (plot_gpu_jobs)."""
    g = result.data.get("gpu")
    if not isinstance(g, dict):
        raise AgentcgError("these results have no GPU section (the trace has no GPU jobs)")
    sl = result.gpu_slices() if result.has_schedule else None
    if sl is None or len(sl) == 0:
        return plot_gpu_jobs(result, title)
    from matplotlib.patches import Patch

    jobs = g.get("jobs", {})
    names = sorted(jobs, key=lambda j: (jobs[j].get("gpu") if jobs[j].get("gpu") is not None else -1,
                                        int(jobs[j].get("arrival_ns", 0) or 0), j))
    cnt = result.schedule_counters()
    res = cnt[cnt["track"].str.contains(" resident ", regex=False)] if len(cnt) else cnt
    fig = _fig(9.0, 0.42 * max(len(names), 1) + (4.4 if len(res) else 2.4))
    if len(res):
        ax, axm = fig.subplots(2, 1, sharex=True, height_ratios=[max(len(names), 2) * 0.42, 2.0])
    else:
        ax, axm = fig.add_subplot(), None
    end_ns = float(result.data.get("duration_ns") or 0)
    for i, j in enumerate(names):
        d = jobs[j]
        col = cgroup_color(j)
        arr = float(d.get("arrival_ns", 0) or 0)
        fin = d.get("finish_ns")
        stop = float(fin) if fin is not None else max(end_ns, arr)
        mine = sl[sl["job"] == j]
        ax.broken_barh([(arr / 1e9, (stop - arr) / 1e9)], (i - 0.3, 0.6), facecolors="#e0e0e0")
        hold = mine[mine["kind"] == "hold"]
        drain = mine[mine["kind"] == "drain"]
        if len(hold):
            ax.broken_barh([(a / 1e9, (b - a) / 1e9) for a, b in zip(hold["start_ns"], hold["end_ns"])],
                           (i - 0.38, 0.76), facecolors=col)
        if len(drain):
            ax.broken_barh([(a / 1e9, (b - a) / 1e9) for a, b in zip(drain["start_ns"], drain["end_ns"])],
                           (i - 0.38, 0.76), facecolors="white", edgecolor=col, hatch="////", linewidth=0.6)
        if fin is not None:
            ax.plot([float(fin) / 1e9], [i], marker="|", ms=14, mew=2, color="black")
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels([f"{j} (GPU {jobs[j].get('gpu')})" for j in names], fontsize="small")
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_ylabel("GPU job")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(handles=[Patch(color="#e0e0e0", label="arrived, waiting for the lock"),
                       Patch(color="#555555", label="holds the GPU lock (colour: job)"),
                       Patch(facecolor="white", edgecolor="#555555", hatch="////",
                             label="draining its queue after a DROP"),
                       Patch(color="black", label="finished (|)")],
              fontsize="x-small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if axm is not None:
        for track, part in res.groupby("track", sort=True):
            job = str(track).split(" resident ", 1)[1]
            xs = list(part["ts_ns"] / 1e9) + [end_ns / 1e9]
            ys = list(part["value"] / 2**30)
            axm.step(xs, ys + ys[-1:], where="post", lw=1.3, color=cgroup_color(job), label=job)
        caps = [float(x.get("memory_bytes", 0) or 0) / 2**30 for x in g.get("gpus", [])]
        for k, cap in enumerate(caps):
            if cap > 0:
                axm.axhline(cap, color="black", ls="--", lw=0.8)
                axm.annotate(f"GPU {k} memory {cap:.3g} GiB", (0.0, cap), xycoords=("axes fraction", "data"),
                             xytext=(2, 2), textcoords="offset points", fontsize="x-small")
        axm.set_ylabel("resident (GiB)")
        axm.set_ylim(bottom=0)
        axm.grid(True, alpha=0.3)
        axm.set_xlabel("simulated time (s)")
        if len(names) <= 12:
            axm.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.0, 1.0), title="job")
    else:
        ax.set_xlabel("simulated time (s)")
    ms = g.get("makespan_ns")
    ax.set_title(title or f"GPU lock holds under {result.gpu_policy} ({result.data.get('trace')})"
                 + (f": makespan {float(ms) / 1e9:.3g} s, {g.get('switches', 0)} switches, "
                    f"{g.get('drops', 0)} drops" if ms else ""))
    return fig


def plot_gpu_jobs(result: Result, title: Optional[str] = None) -> Figure:
    """Per GPU job: waiting (light) and first start to finish (solid): the
    summary view when no schedule was recorded (plot_gpu_timeline draws
    every hold when one was).

    Uses the job times of results["gpu"]["jobs"] (arrival_ns, start_ns or
    wait_ns, jct_ns / end_ns) and, when the schedule was recorded, GPU
    memory-residency counters from the Perfetto trace on a second axis.
    """
    g = result.data.get("gpu")
    if not isinstance(g, dict):
        raise AgentcgError("these results have no GPU section (the trace has no GPU jobs)")
    jobs = g.get("jobs", {})
    fig = _fig(8.5, 0.5 * max(len(jobs), 1) + 2.2)
    ax = fig.add_subplot()
    names = sorted(jobs, key=lambda j: (int(jobs[j].get("arrival_ns", 0) or 0), j))
    for i, j in enumerate(names):
        d = jobs[j]
        arr = float(d.get("arrival_ns", 0) or 0)
        end = d.get("end_ns", d.get("finish_ns"))
        if end is None and d.get("jct_ns") is not None:
            end = arr + float(d["jct_ns"])
        start = d.get("start_ns")
        if start is None and d.get("wait_ns") is not None:
            start = arr + float(d["wait_ns"])
        if end is None:
            continue
        start = arr if start is None else float(start)
        if start > arr:
            ax.broken_barh([(arr / 1e9, (start - arr) / 1e9)], (i - 0.35, 0.7), facecolors="#d9d9d9",
                           label="waiting" if i == 0 else None)
        ax.broken_barh([(start / 1e9, (float(end) - start) / 1e9)], (i - 0.35, 0.7),
                       facecolors=_CYCLE[i % len(_CYCLE)], alpha=0.85)
        run_ns = d.get("run_ns")
        ax.annotate(f"JCT {float(end - arr) / 1e9:.3g} s" +
                    (f", ran {float(run_ns) / 1e9:.3g} s" if run_ns is not None else ""),
                    (float(end) / 1e9, i), xytext=(4, 0), textcoords="offset points", va="center",
                    fontsize="x-small")
    if not any(jobs[j].get("jct_ns") is not None or jobs[j].get("finish_ns") is not None for j in names):
        ax.text(0.5, 0.5, "no GPU job finished in this run", transform=ax.transAxes, ha="center")
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels([f"job {j}" for j in names], fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("GPU job")
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color="#d9d9d9", label="arrived, not yet started"),
                       Patch(color=_CYCLE[0], label="first start to completion (may be switched out)")],
              fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, frameon=False)
    lo_x, hi_x = ax.get_xlim()
    ax.set_xlim(lo_x, hi_x + 0.22 * (hi_x - lo_x))  # room for the JCT labels
    ms = g.get("makespan_ns")
    ax.set_title(title or f"GPU jobs under {result.gpu_policy} ({result.data.get('trace')})"
                 + (f": makespan {float(ms) / 1e9:.3g} s, {g.get('switches', 0)} switches" if ms else ""))
    ax.grid(True, axis="x", alpha=0.3)
    if result.has_schedule:
        try:
            cnt = result.schedule_counters()
        except AgentcgError:
            cnt = None
        if cnt is not None and len(cnt):
            mem = cnt[cnt["track"].str.contains("gpu", case=False)]
            if len(mem):
                ax2 = ax.twinx()
                for k, (track, part) in enumerate(mem.groupby("track", sort=True)):
                    ax2.step(part["ts_ns"] / 1e9, part["value"] / 2**30, where="post", lw=1,
                             color=_CYCLE[(k + 5) % len(_CYCLE)], label=track)
                ax2.set_ylabel("GPU memory resident (GiB)")
                ax2.legend(fontsize="x-small", loc="upper right")
    return fig


def plot_gpu_share(results: Any, title: Optional[str] = None) -> Figure:
    """Achieved GPU compute share per client vs its limit, for each policy."""
    import numpy as np

    rs = {k: r for k, r in _results(results).items() if r.has_gpu}
    if not rs:
        raise AgentcgError("no GPU results to plot")
    clients = sorted({c for r in rs.values() for c in r.data["gpu"].get("clients", {})})
    fig = _fig(max(6.0, 1.1 * len(clients) * max(len(rs), 1) / 2 + 3), 4.2)
    ax = fig.add_subplot()
    width = 0.8 / max(len(rs), 1)
    x = np.arange(len(clients))
    for i, (label, r) in enumerate(rs.items()):
        cl = r.data["gpu"].get("clients", {})
        vals = [float(cl.get(c, {}).get("achieved_share", 0) or 0) * 100 for c in clients]
        ax.bar(x + (i - (len(rs) - 1) / 2) * width, vals, width, label=label, color=_color(label, i))
    limits = []
    for c in clients:
        lim = None
        for r in rs.values():
            v = r.data["gpu"].get("clients", {}).get(c, {}).get("limit_pct")
            if v is not None:
                lim = float(v)
        limits.append(lim)
    first = True
    for xi, lim in zip(x, limits):
        if lim is not None and lim < 100:
            ax.hlines(lim, xi - 0.45, xi + 0.45, colors="black", linestyles="--",
                      label="limit" if first else None)
            first = False
    ax.set_xticks(x)
    ax.set_xticklabels([str(c) for c in clients])
    ax.set_xlabel("GPU client")
    ax.set_ylabel("achieved compute share (% of GPU time)")
    ax.set_ylim(0, 105)
    ax.set_title(title or f"GPU compute share vs limit: {_trace_name(rs)}")
    ax.legend(fontsize="small")
    ax.grid(True, axis="y", alpha=0.3)
    return fig


# --- sweeps -------------------------------------------------------------------------

_METRIC_LABELS = {
    "wakeup_p99_ns": ("wakeup latency p99", 1e-6, "ms"),
    "wakeup_p50_ns": ("wakeup latency p50", 1e-6, "ms"),
    "tool_call_p99_ns": ("tool-call latency p99", 1e-6, "ms"),
    "tool_call_p50_ns": ("tool-call latency p50", 1e-6, "ms"),
    "max_runnable_wait_ns": ("max runnable wait", 1e-6, "ms"),
    "gpu_makespan_ns": ("GPU makespan", 1e-9, "s"),
    "gpu_mean_jct_ns": ("mean GPU job completion time", 1e-9, "s"),
    "jain_fairness": ("Jain's fairness index", 1.0, ""),
    "context_switches": ("context switches", 1.0, ""),
}


def metric_label(metric: str) -> Tuple[str, float, str]:
    if metric in _METRIC_LABELS:
        return _METRIC_LABELS[metric]
    if metric.startswith("cpu_share["):
        return (f"CPU share of {metric[10:-1]}", 100.0, "%")
    return (metric, 1e-6 if metric.endswith("_ns") else 1.0, "ms" if metric.endswith("_ns") else "")


def plot_sweep_heatmap(df: "pandas.DataFrame", x: str, y: str, metric: str = "wakeup_p99_ns",
                       agg: str = "mean", title: Optional[str] = None) -> Figure:
    """Heat-map of `metric` (mean over seeds and other axes) over two sweep axes."""
    for col in (x, y, metric):
        if col not in df.columns:
            raise AgentcgError(f"sweep heat-map: no column '{col}' (have: {', '.join(map(str, df.columns))})")
    name, scale, unit = metric_label(metric)
    table = df.pivot_table(index=y, columns=x, values=metric, aggfunc=agg).sort_index().sort_index(axis=1)
    data = table.to_numpy(dtype=float) * scale
    fig = _fig(max(5.0, 0.9 * table.shape[1] + 3), max(3.0, 0.55 * table.shape[0] + 2))
    ax = fig.add_subplot()
    im = ax.imshow(data, aspect="auto", cmap="viridis", origin="lower")
    ax.set_xticks(range(table.shape[1]))
    ax.set_xticklabels([str(c) for c in table.columns], rotation=30 if table.shape[1] > 6 else 0)
    ax.set_yticks(range(table.shape[0]))
    ax.set_yticklabels([str(i) for i in table.index])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    import numpy as np

    finite = data[np.isfinite(data)]
    mid = (float(finite.min()) + float(finite.max())) / 2 if finite.size else 0.0
    for (i, j), v in np.ndenumerate(data):
        if math.isfinite(v):
            ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize="x-small",
                    color="white" if v < mid else "black")
    cb = fig.colorbar(im, ax=ax)
    cb.set_label(f"{name} ({unit})" if unit else name)
    nseeds = df["seed"].nunique() if "seed" in df.columns else 1
    ax.set_title(title or f"{name}: {agg} over {nseeds} seed(s)")
    return fig


def sweep_axes(df: "pandas.DataFrame", grid: Optional[Mapping[str, Any]] = None) -> List[str]:
    """The sweep's varying parameter columns (grid order), excluding seed."""
    keys = list(grid) if grid else [c for c in df.columns if c in ("policy", "gpu_policy")
                                    or "." in str(c)]
    return [k for k in keys if k in df.columns and df[k].nunique() > 1]


def plot_sweep(df: "pandas.DataFrame", out_stem: str, grid: Optional[Mapping[str, Any]] = None,
               formats: Sequence[str] = ("png", "svg")) -> List[str]:
    """The standard heat-maps of a sweep table; returns the files written."""
    axes = sweep_axes(df, grid)
    if not axes:
        return []
    if len(axes) == 1:
        df = df.assign(_all="all")
        x, y = axes[0], "_all"
    else:
        y = "policy" if "policy" in axes else ("gpu_policy" if "gpu_policy" in axes else axes[1])
        x = next(a for a in axes if a != y)
    files: List[str] = []
    for metric in ("wakeup_p99_ns", "tool_call_p99_ns", "gpu_makespan_ns", "jain_fairness"):
        if metric in df.columns and df[metric].notna().any():
            fig = plot_sweep_heatmap(df, x, y, metric)
            if y == "_all":
                fig.axes[0].set_ylabel("")
                fig.axes[0].set_yticks([])
            files += save(fig, f"{out_stem}-{metric}", formats)
    return files


# --- standard sets -------------------------------------------------------------------

def comparison_figures(cmp: Any, window: Optional[Tuple[int, int]] = None,
                       cgroups: Optional[Sequence[str]] = None) -> List[Tuple[str, Figure]]:
    """(name, figure) for every plot that applies to a comparison."""
    rs = _results(cmp)
    figs: List[Tuple[str, Figure]] = []
    if any(int((r.data.get("wakeup_latency_ns") or {}).get("count", 0) or 0) for r in rs.values()):
        figs.append(("wakeup-cdf", plot_wakeup_cdf(rs)))
    if any(int((r.data.get("tool_call_latency_ns") or {}).get("count", 0) or 0) for r in rs.values()):
        figs.append(("tool-call-latency", plot_tool_call_latency(rs)))
        if all((r.histograms or {}).get("tool_call_latency_ns") for r in rs.values()):
            figs.append(("tool-call-cdf", plot_wakeup_cdf(rs, key="tool_call_latency_ns")))
    if any((r.data.get("series") or {}).get("cgroups") for r in rs.values()):
        figs.append(("cpu-share", plot_cpu_share_comparison(rs)))
    # per-cgroup CDFs when every run kept them and more than one cgroup has samples
    if all(r.cgroup_histograms() for r in rs.values()) and (cgroups or len(_cdf_cgroups(
            next(iter(rs.values())), "wakeup_latency_ns")) > 1):
        figs.append(("wakeup-cdf-cgroups", plot_cgroup_cdf(rs, cgroups=cgroups)))
    sched = [r for r in rs.values() if r.has_schedule and len(r.schedule())]
    if sched and window is None:
        window = action_window(sched)  # one window for every policy
    for label, r in rs.items():
        if r.has_schedule and len(r.schedule()):  # a GPU-only run has no CPU slices: no empty panel
            figs.append((f"schedule-{label.replace('/', '+')}", plot_schedule_timeline(r, window)))
    gpu = {k: r for k, r in rs.items() if r.has_gpu}
    if gpu:
        for label, r in gpu.items():
            figs.append((f"gpu-timeline-{label.replace('/', '+')}", plot_gpu_timeline(r)))
        if any(r.data["gpu"].get("clients") for r in gpu.values()):
            figs.append(("gpu-share", plot_gpu_share(gpu)))
    return figs


def plot_comparison(cmp: Any, out_dir: str, formats: Sequence[str] = ("png", "svg"),
                    window: Optional[Tuple[int, int]] = None, cgroups: Optional[Sequence[str]] = None) -> List[str]:
    """Writes every applicable plot of a comparison into out_dir."""
    files: List[str] = []
    for name, fig in comparison_figures(cmp, window, cgroups):
        files += save(fig, os.path.join(out_dir, name), formats)
    return files


def find_results(root: str) -> Dict[str, Dict[str, str]]:
    """Groups the results.json files under root: {group dir: {label: path}}.

    DIR/results.json is a group of one (a `run`); DIR/<label>/results.json
    files form the comparison DIR (a `compare`; `demo` nests one per scenario).
    """
    if not os.path.isdir(root):
        raise AgentcgError(f"{root}: not a directory")
    groups: Dict[str, Dict[str, str]] = {}
    for d, dirs, files in os.walk(root):
        dirs.sort()
        if re.fullmatch(r"rep-[0-9]+", os.path.basename(d)):
            continue  # a live repetition: read through its parent (report.load_repetitions)
        if "results.json" in files:
            p = os.path.join(d, "results.json")
            if os.path.normpath(d) == os.path.normpath(root):
                groups.setdefault(d, {})[Result.load(p).label] = p
            else:
                groups.setdefault(os.path.dirname(d), {})[os.path.basename(d).replace("+", "/")] = p
    return dict(sorted(groups.items()))


def plot_directory(root: str, out_dir: str, formats: Sequence[str] = ("png", "svg"),
                   window: Optional[Tuple[int, int]] = None, cgroups: Optional[Sequence[str]] = None) -> List[str]:
    """Plots every comparison and sweep found under root into out_dir."""
    files: List[str] = []
    groups = find_results(root)
    for gdir, members in groups.items():
        cmp = Comparison({label: Result.load(p) for label, p in members.items()})
        rel = os.path.relpath(gdir, root)
        sub = out_dir if rel == "." else os.path.join(out_dir, rel.replace(os.sep, "-"))
        files += plot_comparison(cmp, sub, formats, window, cgroups)
    for d, dirs, names in os.walk(root):
        dirs.sort()
        if "sweep.csv" in names:
            import json

            import pandas as pd

            df = pd.read_csv(os.path.join(d, "sweep.csv"))
            grid = None
            meta = os.path.join(d, "sweep.json")
            if os.path.exists(meta):
                with open(meta, encoding="utf-8") as f:
                    grid = json.load(f).get("grid")
            rel = os.path.relpath(d, root)
            stem = os.path.join(out_dir, "sweep" if rel == "." else rel.replace(os.sep, "-") + "-sweep")
            files += plot_sweep(df, stem, grid, formats)
    if not files:
        raise AgentcgError(f"{root}: no results.json or sweep.csv found to plot")
    return files
