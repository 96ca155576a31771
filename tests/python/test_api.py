# SPDX-License-Identifier: GPL-2.0-only
"""The Python API: traces (builder, load, errors), run/Result tables, config
handling, compare, and the byte-identity of a run from Python, from the
Python CLI and from the C++ CLI (agentcg-sim, when built: $AGENTCG_SIM).
"""
from __future__ import annotations

import json
import os
import pickle
import subprocess

import numpy as np
import pandas as pd
import pytest

import agentcg
from agentcg import TraceBuilder, ms

from conftest import build_small, policies, run_cli


def test_public_api_is_complete() -> None:
    for name in agentcg.__all__:
        assert hasattr(agentcg, name), name
    assert "cfs" in agentcg.cpu_policies()
    assert agentcg.gpu_policies()[0] == "none"
    assert isinstance(agentcg.__version__, str) and agentcg.__version__


def test_builder_produces_a_valid_trace(small_trace: agentcg.Trace) -> None:
    assert small_trace.cpus == 2
    assert small_trace.name == "small"
    assert small_trace.nr_processes == 6
    assert "/hogs/b" in small_trace.cgroup_paths
    # Canonical JSON round-trips through the C++ parser unchanged.
    text = small_trace.to_json()
    again = agentcg.parse_trace(text, "again")
    assert again.to_json() == text


def test_builder_error_points_into_the_json() -> None:
    b = TraceBuilder("bad", cpus=1)
    b.process(cgroup="/missing", comm="x").run(ms(1))
    with pytest.raises(agentcg.TraceError) as ei:
        b.build()
    assert "/missing" in str(ei.value)
    assert ei.value.pointer.startswith("/processes/0")


def test_load_trace_errors_name_file_and_line(tmp_path) -> None:
    p = tmp_path / "broken.json"
    p.write_text('{\n "format": "agentcg-trace",\n "version": 1,\n "machine": {"cpus": -3}\n}\n')
    with pytest.raises(agentcg.TraceError) as ei:
        agentcg.load_trace(str(p))
    assert ei.value.file.endswith("broken.json")
    assert ei.value.line == 4
    assert "broken.json:4" in str(ei.value)
    with pytest.raises(agentcg.TraceError):
        agentcg.load_trace(str(tmp_path / "nonexistent.json"))


def test_trace_pickles(small_trace: agentcg.Trace) -> None:
    t2 = pickle.loads(pickle.dumps(small_trace))
    assert t2.to_json() == small_trace.to_json()


def test_run_result_tables(small_trace: agentcg.Trace) -> None:
    r = agentcg.run(small_trace, policy="cfs", seed=3)
    assert r["format"] == "agentcg-results"
    assert r.policy == "cfs" and r.seed == 3
    assert r["trace"] == "small"
    cg = r.cgroups()
    assert isinstance(cg, pd.DataFrame)
    assert {"/hogs/a", "/hogs/b", "/io", "/agent"} <= set(cg.index)
    assert {"cpu_share", "entitled_share", "cpu_time_ns"} <= set(cg.columns)
    # Both CPUs are saturated by the hogs: shares of leaves cannot exceed 1.
    leaves = cg.loc[["/hogs/a", "/hogs/b", "/io", "/agent"], "cpu_share"]
    assert 0.0 < leaves.sum() <= 1.0 + 1e-9
    # Weight 300 vs 100 under group scheduling: b gets clearly more than a.
    assert cg.loc["/hogs/b", "cpu_share"] > 1.5 * cg.loc["/hogs/a", "cpu_share"]
    s = r.series()
    assert s.index.name == "time_ns"
    assert "/hogs/b" in s.columns
    arr = r.series_array("/hogs/b")
    assert isinstance(arr, np.ndarray) and len(arr) == len(s)
    assert np.all((arr >= 0) & (arr <= 1.0 + 1e-9))
    summ = r.summary()
    assert summ["wakeup_p99_ns"] >= summ["wakeup_p50_ns"] >= 0
    with pytest.raises(agentcg.AgentcgError):
        r.series_array("/nope")
    with pytest.raises(agentcg.AgentcgError):
        r.schedule()  # not recorded


def test_run_is_deterministic_and_seed_matters(small_trace: agentcg.Trace) -> None:
    a = agentcg.run(small_trace, "cfs", seed=1)
    b = agentcg.run(small_trace, "cfs", seed=1)
    assert a.text == b.text
    c = agentcg.run(small_trace, "cfs", seed=2)  # the I/O waits are drawn from the seed
    assert c.text != a.text


def test_run_accepts_dict_path_and_builder(small_builder: TraceBuilder, small_trace_path: str) -> None:
    texts = {agentcg.run(x, "cfs").text for x in (small_builder, small_builder.to_dict(),
                                                   small_trace_path)}
    assert len(texts) == 1


def test_unknown_policy_is_value_error(small_trace: agentcg.Trace) -> None:
    with pytest.raises(ValueError, match="unknown CPU policy 'nope'"):
        agentcg.run(small_trace, policy="nope")
    with pytest.raises(ValueError, match="nope"):
        agentcg.run(small_trace, policy="cfs", gpu_policy="nope")


def test_config_dict_overrides_and_errors(small_trace: agentcg.Trace, tmp_path) -> None:
    d = agentcg.default_config()
    assert d["scheduler"]["fork_storm_threshold"] == 32
    got = agentcg.load_config({"scheduler.fork_storm_threshold": 8,
                               "scheduler": {"features": {"fork_aware": False}}})
    assert got["scheduler"]["fork_storm_threshold"] == 8
    assert got["scheduler"]["features"]["fork_aware"] is False
    assert got["scheduler"]["features"]["mem_penalty"] is False  # off by default (tunables.h)
    assert got["scheduler"]["features"]["latency"] is True
    on = agentcg.load_config({"scheduler": {"features": {"mem_penalty": True}}})
    assert on["scheduler"]["features"]["mem_penalty"] is True
    with pytest.raises(agentcg.ConfigError, match="bogus"):
        agentcg.load_config({"scheduler.bogus": 1})
    f = tmp_path / "c.yaml"
    f.write_text("machine:\n  context_switch_ns: 5000\n")
    assert agentcg.load_config(str(f))["machine"]["context_switch_ns"] == 5000
    merged = agentcg.load_config(str(f), overrides={"machine.speed_pct": 50})
    assert merged["machine"] == {"context_switch_ns": 5000, "wakeup_overhead_ns": 1000, "speed_pct": 50,
                                 "cpus": 0, "runqueues": "global", "idle_exit_ns": 0, "idle_exit_after_ns": 0,
                                 "ipi_idle_ns": 0, "task_wakeup_ns": 0, "kick_busy_ns": 0, "timer_busy_ns": 0, "ext_timer_busy_ns": 0,
                                 "migration_cost_ns": 0, "background_cpu_pct": 0, "fork_cost_ns": 0, "exit_cost_ns": 0, "fork_after_ns": 0,
                                 "fork_child_ns": 0,
                                 "ext_busy_pct": 0, "ext_wakeup_ns": 0, "ext_fork_ns": 0,
                                 "mem_fault_ns_per_mib": 0, "fork_ns_per_mib": 0, "wakeup_work_ns": 0,
                                 "sleep_cost_ns": 0,
                                 "tick_ns": 0, "preempt": "full", "fork_placement": "idlest",
                                 "balance": "always"}
    bad = tmp_path / "bad.yaml"
    bad.write_text("machine:\n  speed_pct: 0\n")
    with pytest.raises(agentcg.ConfigError) as ei:
        agentcg.run(small_trace, "cfs", config=str(bad))
    assert "bad.yaml:2" in str(ei.value)
    # A config changes the run: a costlier context switch shows in the results.
    base = agentcg.run(small_trace, "cfs")
    slow = agentcg.run(small_trace, "cfs", config={"machine.context_switch_ns": 200000})
    assert slow["config"]["machine"]["context_switch_ns"] == 200000
    assert slow.text != base.text


def test_compare_table(small_trace: agentcg.Trace, tmp_path) -> None:
    pols = policies("cfs", "fifo", "flatcg", "agentcg")
    cmp = agentcg.compare(small_trace, policies=pols)
    assert list(cmp) == pols
    t = cmp.table()
    assert list(t.index) == pols
    assert "wakeup_p99_ns" in t.columns
    shares = cmp.cgroup_table("cpu_share")
    assert list(shares.columns) == pols and "/io" in shares.index
    cmp.save(str(tmp_path / "cmp"))
    for p in pols:
        again = agentcg.Result.load(str(tmp_path / "cmp" / p))
        assert again.text == cmp[p].text
    assert (tmp_path / "cmp" / "summary.csv").stat().st_size > 0


def test_generate_and_help() -> None:
    h = agentcg.generator_help()
    assert "fork-storm" in h and "hogs" in h
    t = agentcg.generate("hogs", seed=1, weights="100,300", cpus=2, duration="100ms")
    assert t.cpus == 2 and t.duration_ns == ms(100)
    with pytest.raises(ValueError, match="bogus"):
        agentcg.generate("hogs", bogus=1)


def test_python_cli_and_cpp_cli_write_identical_bytes(small_trace_path: str, tmp_path) -> None:
    api = agentcg.run(small_trace_path, "cfs", seed=7)
    res = run_cli(["run", small_trace_path, "--policy", "cfs", "--seed", "7", "--out",
                   str(tmp_path / "py"), "--quiet"])
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "py" / "results.json").read_text() == api.text
    sim = os.environ.get("AGENTCG_SIM", "")
    if not sim or not os.path.exists(sim):
        pytest.skip("C++ CLI agentcg-sim not built (set AGENTCG_SIM); Python API == Python CLI checked")
    out = subprocess.run([sim, "run", small_trace_path, "--policy", "cfs", "--seed", "7", "--out",
                          str(tmp_path / "cpp"), "--quiet"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "cpp" / "results.json").read_bytes() == api.text.encode()
    # histograms.json: one writer (sim::dump_histograms), the same bytes from both front ends
    cpp_hist = (tmp_path / "cpp" / "histograms.json").read_bytes()
    assert cpp_hist == (tmp_path / "py" / "histograms.json").read_bytes()
    doc = json.loads(cpp_hist)
    assert doc["format"] == "agentcg-histograms" and doc["version"] == 2
    assert doc["wakeup_latency_ns"]["count"] == api["wakeup_latency_ns"]["count"]
    for path, h in doc["cgroups"].items():  # each cgroup's samples behind its results.json percentiles
        assert h["wakeup_latency_ns"]["count"] == api["cgroups"][path]["wakeup_latency_ns"]["count"], path
        assert h["wakeup_latency_ns"]["max"] == api["cgroups"][path]["wakeup_latency_ns"]["max"], path


def test_result_load_rejects_other_json(tmp_path) -> None:
    p = tmp_path / "results.json"
    p.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(agentcg.AgentcgError, match="not a results.json"):
        agentcg.Result.load(str(tmp_path))


def test_tool_call_latency_is_measured() -> None:
    r = agentcg.run(build_small("tools"), "cfs")
    lat = r["tool_call_latency_ns"]
    assert lat["count"] == 3
    # Each tool call needs 8 ms of CPU and 1 ms of I/O at least.
    assert lat["p50"] >= ms(9)


def test_schedule_runs_leave_no_temporary_files(small_trace: agentcg.Trace, tmp_path) -> None:
    import glob
    import tempfile

    pattern = os.path.join(tempfile.gettempdir(), "agentcg-schedule-*")
    before = set(glob.glob(pattern))
    r = agentcg.run(small_trace, "eevdf", schedule=True)
    assert set(glob.glob(pattern)) == before
    assert len(r.schedule()) > 0 and r.has_schedule
    cmp = agentcg.Comparison({"eevdf": r})
    cmp.save(tmp_path / "c")
    assert (tmp_path / "c" / "eevdf" / "schedule.perfetto.json").read_text() == r.schedule_text()
