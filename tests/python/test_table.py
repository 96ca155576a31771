# SPDX-License-Identifier: GPL-2.0-only
"""The one comparison table (agentcg.table) and its statistics
(agentcg.stats): which rows appear, what a missing value reads, the
demand-capped fairness, aggregate rows at many cgroups, medians, bootstrap
intervals and verdicts; and the commands that print it (compare --seeds,
--json, run --json) and the error paths of the CLI front end (did-you-mean,
non-UTF-8 files, --help that never builds, --version)."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, build_small, run_cli

import agentcg
from agentcg import stats, table


# --- statistics -------------------------------------------------------------------

def test_summary_is_median_with_a_seeded_interval() -> None:
    s = stats.summarize([3.0, 1.0, 2.0, float("nan"), None])
    assert s.median == 2.0 and s.n == 3
    assert 1.0 <= s.lo <= 2.0 <= s.hi <= 3.0
    again = stats.summarize([3.0, 1.0, 2.0])
    assert (again.lo, again.hi) == (s.lo, s.hi)  # deterministic
    one = stats.summarize([5.0])
    assert one.median == 5.0 and one.n == 1 and one.lo != one.lo  # NaN: no interval from one sample
    assert stats.summarize([]).n == 0


def test_one_sample_cells_do_not_import_numpy() -> None:
    """A single run's table (`./agentcg run`) needs no numpy: importing it
    cost the command ~45 ms of start-up (issue 21)."""
    code = ("import sys; from agentcg import stats; "
            "s = stats.summarize([5.0]); v = stats.verdict([1.0], [2.0], True); "
            "print(s.median, v, 'numpy' in sys.modules)")
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    out = subprocess.run(["/usr/bin/python3", "-c", code], env=env, check=True, capture_output=True, text=True)
    assert out.stdout.split() == ["5.0", "n/a", "False"]


def test_verdicts() -> None:
    base = [10.0, 10.5, 9.8, 10.2, 10.1]
    assert stats.verdict([5.0, 5.2, 4.9, 5.1, 5.0], base, lower_is_better=True) == "better"
    assert stats.verdict([5.0, 5.2, 4.9, 5.1, 5.0], base, lower_is_better=False) == "worse"
    assert stats.verdict([20.0, 21.0, 19.0], base, lower_is_better=True) == "worse"
    # overlapping samples: no call
    assert stats.verdict([9.0, 10.4, 11.0, 9.9, 10.6], base, lower_is_better=True) == "indistinguishable"
    # certain but tiny (0.2 %): not worth a verdict
    assert stats.verdict([10.08] * 3, [10.1] * 3, lower_is_better=True) == "indistinguishable"
    # deterministic runs: identical samples, a real difference is a verdict
    assert stats.verdict([8.0] * 3, [10.0] * 3, lower_is_better=True) == "better"
    assert stats.verdict([5.0], base, lower_is_better=True) == "n/a"
    assert stats.verdict([5.0, 5.1], base, lower_is_better=True) == "n/a"  # two samples: too few to call
    assert stats.verdict([5.0, 6.0], base, lower_is_better=None) == "-"


# --- rows ------------------------------------------------------------------------

def _doc(**kw: object) -> dict:
    d = {"format": "agentcg-results", "tasks": 4, "cpus": 2, "seed": 1,
         "wakeup_latency_ns": {"count": 10, "p50": 1_000_000, "p99": 4_000_000},
         "tool_call_latency_ns": {"count": 0, "p50": 0, "p99": 0},
         "max_runnable_wait_ns": 50_000_000, "context_switches": 100, "cpu_utilization": 0.9,
         "cgroups": {"/": {"tasks": 0}, "/a": {"tasks": 2, "cpu_share": 0.7, "entitled_share": 0.5,
                                               "wakeup_latency_ns": {"count": 5, "p99": 1_000_000},
                                               "tool_call_latency_ns": {"count": 0}},
                     "/b": {"tasks": 2, "cpu_share": 0.2, "entitled_share": 0.5,
                            "wakeup_latency_ns": {"count": 5, "p99": 2_000_000},
                            "tool_call_latency_ns": {"count": 0}}}}
    d.update(kw)
    return d


def _metrics(rows: list) -> list:
    return [r.metric for r in rows]


def test_rows_that_do_not_apply_are_omitted() -> None:
    rows = table.build_rows({"eevdf": [_doc()], "agentcg": [_doc()]})
    m = _metrics(rows)
    assert "longest runnable wait" in m and "wakeup latency p99" in m
    assert not any("tool-call" in x for x in m)  # no tool calls in this trace
    assert not any("throttled" in x for x in m)  # no cpu.max
    assert not any(x.startswith("GPU") for x in m)
    # a GPU-only scenario: no CPU rows at all; an unfinished job reads "-", not 0
    gpu = {"tasks": 0, "cgroups": {}, "gpu": {"makespan_ns": 2e9, "busy_fraction": 0.5, "switches": 3,
                                               "bytes_migrated": 0,
                                               "jobs": {"j1": {"jct_ns": 1e9}, "j2": {"jct_ns": None}}}}
    rows = table.build_rows({"nvshare": [gpu]})
    assert all(r.section == "gpu" for r in rows)
    text = table.render_text(rows, ["nvshare"])
    assert next(line for line in text.splitlines() if line.startswith("job j2")).split()[-1] == "-"
    assert "wakeup" not in text


def test_agent_policy_keys_when_present() -> None:
    """Rows for keys some results carry (tool calls completed, interactive
    wakeups, new-step detection); a null precision reads '-'."""
    with_keys = _doc(tool_calls_completed=40, interactive_wakeup_latency_ns={"count": 3, "p50": 2e6, "p99": 5e6},
                     new_step_detection={"precision": 0.9, "recall": None})
    rows = table.build_rows({"eevdf": [_doc()], "agentcg": [with_keys]})
    m = _metrics(rows)
    assert "tool calls completed" in m and "interactive wakeup p99" in m and "new-step precision" in m
    assert "new-step recall" not in m  # null everywhere: the row does not apply
    text = table.render_text(rows, ["eevdf", "agentcg"])
    assert next(x for x in text.splitlines() if x.startswith("new-step precision")).split()[-2:] == ["-", "0.900"]
    assert "tool calls completed" not in _metrics(table.build_rows({"eevdf": [_doc()]}))


def test_starvation_flag() -> None:
    starved = _doc(max_runnable_wait_ns=1_282_000_000)
    text = table.render_text(table.build_rows({"eevdf": [_doc()], "agentcg": [starved]}), ["eevdf", "agentcg"])
    row = next(line for line in text.splitlines() if line.startswith("longest runnable wait"))
    assert row.split()[-3:] == ["50.00", "1,282", "!"]
    assert "a task was starved" in text
    text = table.render_text(table.build_rows({"eevdf": [_doc()]}), ["eevdf"])
    assert "starved" not in text


def test_demand_capped_fairness() -> None:
    # /b wants 20 % of the machine and gets it: fair, although below its 50 % entitlement
    ent = table.capped_entitlements({"/a": 0.5, "/b": 0.5}, {"/a": 1.0, "/b": 0.2})
    assert ent == pytest.approx({"/a": 0.8, "/b": 0.2})
    # three groups, one capped: the rest split by entitlement
    ent = table.capped_entitlements({"/a": 0.25, "/b": 0.25, "/c": 0.5}, {"/a": 0.05})
    assert ent == pytest.approx({"/a": 0.05, "/b": 0.95 / 3, "/c": 0.95 * 2 / 3})
    d = _doc()
    d["cgroups"]["/a"]["cpu_share"] = 0.8
    assert table.capped_jain(d, {"/a": 1.0, "/b": 0.2}) == pytest.approx(1.0)
    assert table.capped_jain(d, None) < 0.75  # the plain entitlement calls it unfair


def test_weight_shortfall_row_where_the_results_have_it() -> None:
    # the simulator's figure (its computation: WeightGuarantee.* in
    # cpu_model_test.cc); flagged over 2 points; no row for a live run
    short = _doc(cpu_weight_shortfall_pts=2.5)
    rows = table.build_rows({"eevdf": [_doc(cpu_weight_shortfall_pts=0.0)], "agentcg": [short]})
    row = next(r for r in rows if r.metric.startswith("cpu.weight shortfall"))
    assert row.values == {"eevdf": [0.0], "agentcg": [2.5]} and row.flag_at == 2.0
    text = table.render_text(rows, ["eevdf", "agentcg"])
    line = next(x for x in text.splitlines() if x.startswith("cpu.weight shortfall"))
    assert line.rstrip().endswith("!")
    assert "less than its weight owed it" in text and "starved" not in text
    assert not any(r.metric.startswith("cpu.weight shortfall") for r in table.build_rows({"eevdf": [_doc()]}))


def test_many_cgroups_aggregate_rows_and_per_cgroup() -> None:
    d = _doc()
    for i in range(20):
        d["cgroups"][f"/s{i:02d}"] = {"tasks": 1, "cpu_share": 0.01 * (i + 1), "entitled_share": 0.05,
                                      "wakeup_latency_ns": {"count": 3, "p99": (i + 1) * 1_000_000},
                                      "tool_call_latency_ns": {"count": 0}}
    rows = table.build_rows({"eevdf": [d]})
    m = _metrics(rows)
    assert not any(x.startswith("/s05") for x in m)
    worst = next(r for r in rows if r.metric == "per-cgroup wakeup p99: worst cgroup")
    assert worst.values["eevdf"] == [20.0]
    p50 = next(r for r in rows if r.metric == "per-cgroup wakeup p99: p50 over cgroups")
    assert p50.values["eevdf"] == [9.0]  # nearest rank 11 of 22 leaves: 1, 2 (/a, /b) and 1..20
    rows = table.build_rows({"eevdf": [d]}, per_cgroup=True)
    assert "/s05 wakeup latency p99" in _metrics(rows)


def test_text_html_and_json_show_the_same_cells() -> None:
    runs = {"eevdf": [_doc(), _doc(), _doc()],
            "agentcg": [_doc(max_runnable_wait_ns=10_000_000 + i) for i in range(3)]}
    rows = table.build_rows(runs)
    cells = table.table_cells(rows, ["eevdf", "agentcg"])
    text = table.render_text(rows, ["eevdf", "agentcg"])
    page = table.render_html(rows, ["eevdf", "agentcg"])
    for r in cells["rows"]:
        for c in r:
            assert c in text and f">{c}</td>" in page
    doc = table.rows_json(rows, ["eevdf", "agentcg"])
    wait = next(r for r in doc if r["metric"] == "longest runnable wait")
    assert wait["policies"]["agentcg"]["verdict"] == "better"
    assert wait["policies"]["agentcg"]["samples"] == [10.0, 10.000001, 10.000002]


# --- the commands ----------------------------------------------------------------

def test_compare_seeds_json_keeps_every_repetition(tmp_path: Path, small_trace_path: str) -> None:
    out = tmp_path / "cmp"
    args = ["compare", small_trace_path, "--policies", "eevdf,agentcg", "--seeds", "1-3", "--out", str(out),
            "--json"]
    res = run_cli(args)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["seeds"] == [1, 2, 3] and doc["baseline"] == "eevdf"
    for p in ("eevdf", "agentcg"):
        for s in (1, 2, 3):
            r = json.loads((out / p / f"seed-{s}.results.json").read_text())
            assert r["seed"] == s and r["policy"] == p
    p99 = next(r for r in doc["rows"] if r["metric"] == "wakeup latency p99")
    assert len(p99["policies"]["agentcg"]["samples"]) == 3
    assert p99["policies"]["agentcg"]["verdict"] in ("better", "worse", "indistinguishable")
    assert json.loads((out / "compare.json").read_text()) == doc
    again = run_cli(args[:-2] + [str(tmp_path / "cmp2"), "--json"])
    assert again.stdout == res.stdout  # same seeds, same verdicts, byte for byte
    text = run_cli(args[:-1])
    assert "vs eevdf" in text.stdout and "95 % bootstrap interval" in text.stdout


def test_run_json_is_the_results_document(tmp_path: Path, small_trace_path: str) -> None:
    res = run_cli(["run", small_trace_path, "--out", str(tmp_path / "r"), "--json"])
    assert res.returncode == 0, res.stderr
    assert res.stdout == (tmp_path / "r" / "results.json").read_text()
    assert json.loads(res.stdout)["policy"] == "eevdf"  # the default: the kernel's since 6.6


def test_help_texts_name_eevdf_as_baseline() -> None:
    for cmd in (["run", "--help"], ["compare", "--help"], ["demo", "--help"]):
        res = run_cli(cmd)
        assert res.returncode == 0 and "eevdf" in res.stdout, cmd
    assert "%%" not in run_cli(["fidelity", "--help"]).stdout
    assert "calibrate" in run_cli(["--help"]).stdout
    res = run_cli(["--version"])
    assert res.returncode == 0 and res.stdout.strip() == f"agentcg {agentcg.__version__}"


@pytest.mark.parametrize("args,needle", [
    (["run", "T", "--policy", "agentgc"], "did you mean agentcg?"),
    (["compare", "T", "--policies", "eevdf,flatgc"], "did you mean flatcg?"),
    (["run", "T", "--set", "scheduler.fork_storm_treshold=8"], "did you mean scheduler.fork_storm_threshold"),
    (["run", "T", "--seed", "-1"], "--seed: -1 is out of range"),
    (["run", "T", "--gpu-policy", "nvshare"], "--gpu-policy nvshare: "),
])
def test_usage_errors_name_the_flag(args: list, needle: str, tmp_path: Path, small_trace_path: str) -> None:
    args = [small_trace_path if a == "T" else a for a in args] + ["--out", str(tmp_path / "o")]
    res = run_cli(args)
    assert res.returncode == 2, res.stderr
    assert needle in res.stderr and "Traceback" not in res.stderr


def test_python_api_errors_are_python_exceptions(small_trace: agentcg.Trace) -> None:
    with pytest.raises(ValueError, match=r"seed -1: expected an integer from 0 to 2\*\*64-1"):
        agentcg.run(small_trace, "eevdf", seed=-1)
    with pytest.raises(ValueError, match="did you mean agentcg"):
        agentcg.run(small_trace, "agentgc")
    with pytest.raises(ValueError, match="did you mean scheduler.fork_storm_threshold"):
        agentcg.run(small_trace, "agentcg", overrides={"scheduler.fork_storm_treshold": 3})


def test_missing_and_non_utf8_files_name_file_and_line(tmp_path: Path) -> None:
    res = run_cli(["run", os.path.join(REPO, "traces", "fork-strom.json"), "--out", str(tmp_path / "o")])
    assert res.returncode == 1 and "did you mean" in res.stderr and "fork-storm.json" in res.stderr
    text = build_small().to_json().replace('"small"', '"sm\udcffall"', 1)
    bad = tmp_path / "latin.json"
    bad.write_bytes(text.encode("utf-8", "surrogateescape"))
    line = 1 + text[:text.index("sm\udcff")].count("\n")
    for args in (["run", str(bad), "--out", str(tmp_path / "o")], ["trace", "validate", str(bad)]):
        res = run_cli(args)
        assert res.returncode == 1, res.stderr
        assert f"latin.json:{line}: column" in res.stderr and "not UTF-8" in res.stderr, res.stderr
        assert "codec" not in res.stderr


def test_policy_depth_limit_names_file_and_line(tmp_path: Path) -> None:
    """Issue 17: cgroups deeper than agentcg's and flatcg's 15 levels made
    `run` exit 2 without file or line; now exit 1 with both (the C++ CLI's
    rows are in the bad-input table)."""
    bad = os.path.join("tests", "data", "bad-traces", "cgroup-too-deep-for-agentcg.json")
    for policy in ("agentcg", "flatcg"):
        res = run_cli(["run", bad, "--policy", policy, "--out", str(tmp_path / policy)])
        assert res.returncode == 1, res.stderr
        assert f"{bad}:21: /cgroups/15/path:" in res.stderr and "at most 15" in res.stderr, res.stderr


def test_help_never_builds(tmp_path: Path) -> None:
    """The launcher's --help paths must not configure, build or install:
    cmake and the set-up script are replaced by test doubles that leave a mark."""
    fake = tmp_path / "bin"
    fake.mkdir()
    mark = tmp_path / "built"
    for name in ("cmake", "ninja", "apt-get", "sudo"):
        p = fake / name
        p.write_text(f"#!/bin/sh\necho {name} >> {mark}\nexit 1\n")
        p.chmod(p.stat().st_mode | stat.S_IXUSR)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
    for args in (["demo", "--help"], ["live", "compare", "--help"], ["fidelity", "--help"], ["selftest", "--help"],
                 ["setup", "--help"], ["--version"]):
        res = subprocess.run([os.path.join(REPO, "agentcg")] + args, env=env, capture_output=True, text=True,
                             timeout=120)
        assert res.returncode == 0, (args, res.stderr)
        assert "usage" in res.stdout.lower() or "agentcg" in res.stdout, args
        assert not mark.exists(), (args, mark.read_text())
    # live agree only reads two live compare directories: it never builds either
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "live-compare.json").write_text(json.dumps({
            "format": "agentcg-live-compare", "version": 1, "sections": {"io (agentcg-player)": [
                {"metric": "wakeup p50", "lower_is_better": True,
                 "policies": {"eevdf": {"median": 1.0}, "agentcg": {"median": 2.0, "verdict": "worse"}}}]}}))
    res = subprocess.run([os.path.join(REPO, "agentcg"), "live", "agree", str(tmp_path / "a"), str(tmp_path / "b")],
                         env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "agree: 1 of 1" in res.stdout, res.stderr
    assert not mark.exists(), mark.read_text()


def test_cpp_cli_follows_the_same_rules(tmp_path: Path, small_trace_path: str) -> None:
    """agentcg-sim (the launcher's fallback engine): --version, eevdf by
    default, --json; and the launcher without the Python extension prints
    the one table (this module's) from agentcg-sim's --json."""
    sim = os.environ.get("AGENTCG_SIM")
    if not sim or not os.path.exists(sim):
        pytest.skip("AGENTCG_SIM (the agentcg-sim binary) is not set: run through CTest")
    v = subprocess.run([sim, "--version"], capture_output=True, text=True)
    assert v.returncode == 0 and v.stdout.strip() == f"agentcg-sim {agentcg.__version__}"
    res = subprocess.run([sim, "compare", small_trace_path, "--out", str(tmp_path / "c")], capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr
    wrote = [ln.split("/")[-2] for ln in res.stdout.splitlines() if ln.startswith("wrote ")]
    assert wrote == ["eevdf", "flatcg", "agentcg"]
    assert "wakeup" not in res.stdout  # no table of its own
    res = subprocess.run([sim, "run", small_trace_path, "--out", str(tmp_path / "r"), "--json"], capture_output=True,
                         text=True)
    assert res.returncode == 0 and res.stdout == (tmp_path / "r" / "results.json").read_text()
    assert json.loads(res.stdout)["policy"] == "eevdf"
    # a checkout whose extension is not built: the launcher, the package's
    # pure-Python modules, and this build's agentcg-sim as build/default
    root = tmp_path / "checkout"
    (root / "python" / "agentcg").mkdir(parents=True)
    (root / "build").mkdir()
    shutil.copy2(os.path.join(REPO, "agentcg"), root / "agentcg")
    for py in Path(REPO, "python", "agentcg").glob("*.py"):
        shutil.copy2(py, root / "python" / "agentcg" / py.name)
    (root / "build" / "default").symlink_to(Path(sim).resolve().parents[1])
    env = {k: v for k, v in os.environ.items() if k not in ("AGENTCG_BUILD_DIR", "PYTHONPATH")}
    res = subprocess.run([str(root / "agentcg"), "compare", small_trace_path, "--out", str(tmp_path / "l")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    head = res.stdout.splitlines()[1].split()
    assert head == ["metric", "unit", "eevdf", "flatcg", "agentcg"]
    assert any(ln.startswith("longest runnable wait") for ln in res.stdout.splitlines())
    bad = subprocess.run([str(root / "agentcg"), "run", small_trace_path + ".missing", "--out", str(tmp_path / "m")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode == 1 and ".missing" in bad.stderr and "Traceback" not in bad.stderr
    # --help needs no extension: the Python CLI's help, with a note on stderr
    for cmd in ("demo", "compare", "fidelity"):
        h = subprocess.run([str(root / "agentcg"), cmd, "--help"], capture_output=True, text=True, env=env,
                           timeout=60)
        assert h.returncode == 0 and h.stdout.startswith(f"usage: agentcg {cmd}"), (cmd, h.stderr)
        assert "extension is not built yet" in h.stderr
