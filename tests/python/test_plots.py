# SPDX-License-Identifier: GPL-2.0-only
"""Plots: each figure exists, is non-empty, and has titled, labelled axes
(checked on the matplotlib objects), and the files written are real
PNG/SVG documents.
"""
from __future__ import annotations

import os

import pytest
from matplotlib.figure import Figure

import agentcg
from agentcg import plots

from conftest import policies


@pytest.fixture(scope="module")
def cmp(small_trace):
    return agentcg.compare(small_trace, policies=policies("cfs", "fifo", "flatcg", "agentcg"),
                           schedule=True)


def _check_axes(fig: Figure, xlabel_part: str, ylabel_part: str) -> None:
    ax = fig.axes[0]
    assert ax.get_title(), "missing title"
    assert xlabel_part in ax.get_xlabel()
    assert ylabel_part in ax.get_ylabel()
    assert ax.has_data()


def test_shared_window_and_cgroup_colours(cmp) -> None:
    """Every policy's timeline shows the same window, and a cgroup keeps its
    colour from plot to plot."""
    rs = dict(list(cmp.items())[:2])
    win = plots.action_window(list(rs.values()), span_ns=20_000_000)
    assert win[1] - win[0] == 20_000_000
    figs = dict(plots.comparison_figures(cmp))
    lims = [f.axes[0].get_xlim() for name, f in figs.items() if name.startswith("schedule-")]
    assert len(lims) == len(cmp) and all(x == lims[0] for x in lims)
    assert plots.cgroup_color("/victim") == plots.cgroup_color("/victim")
    share = plots.plot_cpu_share(next(iter(rs.values())))
    for line in share.axes[0].get_lines():
        cg = line.get_label().split()[0]
        if cg.startswith("/"):
            assert line.get_color() == plots.cgroup_color(cg)


def test_wakeup_cdf_from_every_sample(cmp) -> None:
    """With the runs' histograms the curve is the empirical CDF of every
    sample: one step per sample (small runs keep exact samples), rising to
    1 at the max, and it agrees with results.json's nearest-rank p50/p99."""
    fig = plots.plot_wakeup_cdf(cmp)
    _check_axes(fig, "latency (ms", "fraction of samples")
    ax = fig.axes[0]
    assert "every sample" in ax.get_title()
    assert len(ax.get_lines()) == 2 * len(cmp)  # a CDF and a max marker per policy
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert all(any(p in lbl for lbl in labels) for p in cmp)
    lines = ax.get_lines()
    for (label, r), curve, mx in zip(cmp.items(), lines[0::2], lines[1::2]):
        lat = r["wakeup_latency_ns"]
        cdf = r.latency_cdf()
        exact = lat["count"] <= 1024  # LatencyHistogram::kExactMax
        assert len(cdf) == lat["count"] if exact else len(cdf) < lat["count"]
        xs, fr = list(cdf["latency_ns"]), list(cdf["fraction"])
        assert xs == sorted(xs) and fr == sorted(fr) and fr[-1] == 1.0
        assert xs[-1] == lat["max"] and xs[0] >= 0
        # nearest rank: the p50 value is the first sample with fraction >= 0.5
        first50 = next(x for x, f in zip(xs, fr) if f >= 0.5)
        first99 = next(x for x, f in zip(xs, fr) if f >= 0.99)
        if exact:
            assert (first50, first99) == (lat["p50"], lat["p99"]), label
        else:  # bucket edges: within one bucket (64 per power of two)
            for got, want in ((first50, lat["p50"]), (first99, lat["p99"])):
                assert abs(got - want) <= max(1, want // 32), (label, got, want)
        assert len(curve.get_xdata()) == len(xs) + 1 and mx.get_color() == curve.get_color()
        assert mx.get_xdata()[0] == max(lat["max"], 1) / 1e6
    assert [t.get_text() for t in ax.get_yticklabels()][-1] == "max"


def test_wakeup_cdf_falls_back_to_percentiles(cmp, tmp_path) -> None:
    """A results.json on its own (no histograms.json beside it) gives the
    percentile curve, and the title says so."""
    r = next(iter(cmp.values()))
    p = tmp_path / "r.json"
    p.write_text(r.text)
    alone = agentcg.Result.load(str(p))
    assert alone.histograms is None
    fig = plots.plot_wakeup_cdf({"x": alone})
    ax = fig.axes[0]
    assert "percentiles" in ax.get_title()
    assert len(ax.get_lines()[0].get_xdata()) == 4
    with pytest.raises(agentcg.AgentcgError, match="no wakeup_latency_ns histogram"):
        alone.latency_cdf()


def test_cgroup_cdf_from_every_sample(cmp, tmp_path) -> None:
    """One panel per policy, one CDF per cgroup from histograms.json's
    per-cgroup histograms, in the cgroup's colour of the share plot, ending
    at the cgroup's max of results.json; results without them are refused."""
    fig = plots.plot_cgroup_cdf(cmp)
    panels = [a for a in fig.axes if a.has_data()]
    assert len(panels) == len(cmp)
    assert "latency (ms" in fig.axes[-1].get_xlabel() and "per cgroup" in fig._suptitle.get_text()
    for ax, (label, r) in zip(panels, cmp.items()):
        assert ax.get_title() == label
        lines = ax.get_lines()
        curves, marks = lines[0::2], lines[1::2]
        shown = [c.get_label().split()[0] for c in curves]
        assert len(shown) >= 2 and set(shown) <= set(r.cgroup_histograms())
        for cg, curve, mark in zip(shown, curves, marks):
            lat = r["cgroups"][cg]["wakeup_latency_ns"]
            assert curve.get_color() == plots.cgroup_color(cg) == mark.get_color()
            cdf = r.latency_cdf(cgroup=cg)
            assert list(cdf["fraction"])[-1] == 1.0 and list(cdf["latency_ns"])[-1] == lat["max"]
            assert len(cdf) == lat["count"]  # small runs: one step per sample
            assert mark.get_xdata()[0] == max(lat["max"], 1) / 1e6
    assert "wakeup-cdf-cgroups" in dict(plots.comparison_figures(cmp))
    r = next(iter(cmp.values()))
    p = tmp_path / "r.json"
    p.write_text(r.text)
    with pytest.raises(agentcg.AgentcgError, match="no per-cgroup histograms"):
        plots.plot_cgroup_cdf({"x": agentcg.Result.load(str(p))})
    with pytest.raises(agentcg.AgentcgError, match="no wakeup_latency_ns samples in cgroup /nope"):
        r.latency_cdf(cgroup="/nope")


def test_cgroup_cdf_chooses_and_says_what_it_left_out() -> None:
    """Twelve cgroups: the default shows at most 8 and says how many more
    have samples; `cgroups=` takes paths and patterns; a pattern that
    matches nothing is an error naming it."""
    t = agentcg.traces.generate("hogs", seed=1, duration="200ms", cpus=2, weights=",".join(["100"] * 12),
                                **{"tasks-per-group": "1"})
    many = {"eevdf": agentcg.run(t, "eevdf")}
    fig = plots.plot_cgroup_cdf(many)
    shown = [c.get_label().split()[0] for c in fig.axes[0].get_lines()[0::2]]
    assert len(shown) == 8 and "4 more with samples" in fig._suptitle.get_text()
    fig = plots.plot_cgroup_cdf(many, cgroups=["/hog-1*", "/hog-2"])
    shown = [c.get_label().split()[0] for c in fig.axes[0].get_lines()[0::2]]
    assert shown == ["/hog-1", "/hog-10", "/hog-11", "/hog-2"]
    assert "8 more with samples" in fig._suptitle.get_text()
    with pytest.raises(agentcg.AgentcgError, match="--cgroups /nope\\*: no cgroup with samples matches it"):
        plots.plot_cgroup_cdf(many, cgroups=["/nope*"])


def test_tool_call_latency(cmp) -> None:
    fig = plots.plot_tool_call_latency(cmp)
    _check_axes(fig, "policy", "tool-call latency (ms)")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == list(cmp)


def test_cpu_share(cmp) -> None:
    r = cmp["cfs"]
    fig = plots.plot_cpu_share(r)
    _check_axes(fig, "time (s)", "CPU share")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "/hogs/b share" in labels and "/hogs/b entitled" in labels
    fig = plots.plot_cpu_share_comparison(cmp)
    assert len([a for a in fig.axes if a.has_data()]) == len(cmp)
    with pytest.raises(agentcg.AgentcgError):
        plots.plot_cpu_share(r, cgroups=["/nope"])


def test_schedule_timeline(cmp) -> None:
    r = cmp["cfs"]
    fig = plots.plot_schedule_timeline(r, window=(0, 20_000_000))
    _check_axes(fig, "ms", "CPU")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["CPU 0", "CPU 1"]
    assert ax.get_xlim() == (0.0, 20.0)
    assert ax.get_legend() is not None
    with pytest.raises(agentcg.AgentcgError):
        plots.plot_schedule_timeline(r, window=(5, 5))


def test_sweep_heatmap() -> None:
    df = agentcg.sweep(agentcg.Generator("hogs", cpus=2, duration="40ms"),
                       {"policy": ["cfs", "fifo"], "machine.context_switch_ns": [1000, 20000, 80000]},
                       seeds=[1, 2], workers=1)
    fig = plots.plot_sweep_heatmap(df, "machine.context_switch_ns", "policy", "wakeup_p99_ns")
    _check_axes(fig, "machine.context_switch_ns", "policy")
    assert "ms" in fig.axes[1].get_ylabel()  # colour bar with unit
    assert "2 seed" in fig.axes[0].get_title()
    with pytest.raises(agentcg.AgentcgError, match="no column"):
        plots.plot_sweep_heatmap(df, "nope", "policy")


def test_saved_files_are_real_images(cmp, tmp_path) -> None:
    files = plots.plot_comparison(cmp, str(tmp_path / "p"))
    names = {os.path.basename(f) for f in files}
    assert {"wakeup-cdf.png", "wakeup-cdf.svg", "cpu-share.png", "tool-call-latency.png",
            "schedule-cfs.png"} <= names
    for f in files:
        with open(f, "rb") as fh:
            data = fh.read()
        assert len(data) > 1000
        if f.endswith(".png"):
            assert data[:8] == b"\x89PNG\r\n\x1a\n"
        else:
            assert b"<svg" in data[:2000]


def test_svg_is_deterministic(cmp, tmp_path) -> None:
    a = plots.save(plots.plot_wakeup_cdf(cmp), str(tmp_path / "a"), ("svg",))[0]
    b = plots.save(plots.plot_wakeup_cdf(cmp), str(tmp_path / "b"), ("svg",))[0]
    with open(a, "rb") as fa, open(b, "rb") as fb:
        assert fa.read() == fb.read()


def test_gpu_plots_when_the_gpu_model_is_built() -> None:
    try:
        t = agentcg.generate("gpu-quota", seed=1)
    except ValueError as e:
        pytest.skip(f"GPU generators not built yet: {e}")
    if not t.has_gpu:
        pytest.skip("GPU model not built yet")
    cmp = agentcg.compare(t, policies=["cfs"], gpu_policies=["nvshare", "compute-limit"])
    if not cmp["compute-limit"]["gpu"].get("jobs_finished", 1):
        pytest.skip("GPU jobs do not run to completion in this build yet (jobs_finished = 0)")
    fig = plots.plot_gpu_timeline(cmp["compute-limit"])
    _check_axes(fig, "time (s)", "GPU job")
    fig = plots.plot_gpu_share(cmp)
    _check_axes(fig, "GPU client", "compute share")


def test_gpu_timeline_draws_every_hold_and_drain() -> None:
    """With the schedule recorded, the GPU timeline draws one bar per lock
    hold and per drain after a DROP (nvshare's switches are visible), a grey
    span per job, and a residency panel; without it, the summary bars."""
    try:
        t = agentcg.generate("gpu-oversub", seed=1)
    except ValueError as e:
        pytest.skip(f"GPU generators not built: {e}")
    r = agentcg.run(t, "eevdf", "nvshare", schedule=True)
    g = r["gpu"]
    fig = plots.plot_gpu_timeline(r)
    ax = fig.axes[0]
    assert "lock holds" in ax.get_title() and f"{g['switches']} switches" in ax.get_title()
    rects = sum(len(c.get_paths()) for c in ax.collections)
    assert rects == len(g["jobs"]) + g["grants"] + g["drops"]
    assert g["grants"] > len(g["jobs"])  # jobs were switched out and back in
    assert len(fig.axes) == 2 and "resident" in fig.axes[1].get_ylabel()
    assert len(fig.axes[1].get_lines()) == len(g["jobs"]) + len(g["gpus"])  # + each GPU's capacity line
    plain = agentcg.run(t, "eevdf", "nvshare")
    fig = plots.plot_gpu_timeline(plain)
    assert len(fig.axes) == 1 and "GPU job" in fig.axes[0].get_ylabel()
