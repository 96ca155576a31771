# SPDX-License-Identifier: GPL-2.0-only
"""Perfetto output (sim/perfetto.cc through run(perfetto=...) and the CLI's
--perfetto): valid trace-event JSON, one named process per CPU, every slice
inside the run and on a CPU that exists, no overlapping slices on a CPU, and
the schedule agrees with the results' CPU time.
"""
from __future__ import annotations

import json

import agentcg

from conftest import run_cli


def _load(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def test_perfetto_events_within_the_run(small_trace, tmp_path) -> None:
    p = str(tmp_path / "s.json")
    r = agentcg.run(small_trace, "cfs", perfetto=p)
    doc = _load(p)
    events = doc["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert names[0] == "CPU 0" and names[1] == "CPU 1"
    slices = [e for e in events if e["ph"] == "X"]
    assert slices
    end_us = r["duration_ns"] / 1000
    for e in slices:
        assert e["pid"] in (0, 1)
        assert e["ts"] >= 0 and e["dur"] >= 0
        assert e["ts"] + e["dur"] <= end_us + 1e-6
        assert e["args"]["cgroup"] in small_trace.cgroup_paths or e["args"]["cgroup"] == "/"
    # A CPU runs one task at a time.
    for cpu in (0, 1):
        mine = sorted((e["ts"], e["ts"] + e["dur"]) for e in slices if e["pid"] == cpu)
        for (a0, a1), (b0, _) in zip(mine, mine[1:]):
            assert b0 >= a1 - 1e-6
    # Time on CPU per cgroup in the schedule matches the results (within one switch).
    sched = r.schedule() if r.schedule_path else agentcg.api.read_perfetto_slices(p)
    per_cg = (sched["end_ns"] - sched["start_ns"]).groupby(sched["cgroup"]).sum()
    for cg in ("/hogs/a", "/hogs/b"):
        assert abs(per_cg[cg] - r["cgroups"][cg]["cpu_time_ns"]) <= 0.02 * r["cgroups"][cg]["cpu_time_ns"]


def test_schedule_dataframe(small_trace) -> None:
    r = agentcg.run(small_trace, "cfs", schedule=True)
    df = r.schedule()
    assert list(df.columns) == ["cpu", "pid", "name", "cgroup", "start_ns", "end_ns"]
    assert (df["end_ns"] >= df["start_ns"]).all()
    assert set(df["cpu"]) <= {0, 1}
    assert any(n.startswith("hog (") for n in df["name"])


def test_cli_perfetto_flag(small_trace_path, tmp_path) -> None:
    p = tmp_path / "sched.json"
    res = run_cli(["run", small_trace_path, "--policy", "cfs", "--out", str(tmp_path / "o"),
                   "--perfetto", str(p), "--quiet"])
    assert res.returncode == 0, res.stderr
    doc = _load(str(p))
    assert any(e["ph"] == "X" for e in doc["traceEvents"])
    res = run_cli(["run", small_trace_path, "--policy", "cfs", "--out", str(tmp_path / "o"),
                   "--perfetto", str(tmp_path / "no-such-dir" / "x.json")])
    assert res.returncode == 1
    assert "Traceback" not in res.stderr


def test_systrace_text_is_read_by_the_ftrace_importer(small_trace_path, tmp_path) -> None:
    """A .txt path gets ftrace text; the project's own ftrace importer (the
    trace-cmd/tracefs parser) reads every line of it, and the CPU time it
    finds in the sched_switch lines is the run's CPU time."""
    txt = tmp_path / "s.txt"
    res = run_cli(["run", small_trace_path, "--policy", "eevdf", "--out", str(tmp_path / "r"),
                   "--perfetto", str(txt), "--quiet"])
    assert res.returncode == 0, res.stderr
    text = txt.read_text()
    assert text.startswith("# tracer: nop\n")
    lines = [x for x in text.splitlines() if x and not x.startswith("#")]
    assert lines and all(": sched_switch: prev_comm=" in x for x in lines)
    res = run_cli(["trace", "stats", str(txt), "--from", "ftrace", "--json"])
    assert res.returncode == 0, res.stderr
    stats = json.loads(res.stdout[res.stdout.index("{"):res.stdout.rindex("}") + 1])
    run = _load(str(tmp_path / "r" / "results.json"))
    cpu_ns = run["cgroups"]["/"]["cpu_time_ns"]
    # within 1 %: microsecond timestamps, and the slices still running when
    # the run stops have no switch-out (as in a kernel capture that ends)
    assert abs(stats["cpu_demand_ns"] - cpu_ns) <= 0.01 * cpu_ns, (stats["cpu_demand_ns"], cpu_ns)
