# SPDX-License-Identifier: GPL-2.0-only
"""Perfetto output (sim/perfetto.cc through run(perfetto=...) and the CLI's
--perfetto): valid trace-event JSON, one named process per CPU, every slice
inside the run and on a CPU that exists, no overlapping slices on a CPU, and
the schedule agrees with the results' CPU time. The ftrace text form: every
line parses as Perfetto's systrace importer parses it, the wakeups
(sched_waking) give back the simulator's wakeup latencies through the
project's own ftrace importer, and a GPU run has a GPU track (lock holds
and drains as atrace slices, residency counters) that adds up to the GPU
results.
"""
from __future__ import annotations

import json
import re
from typing import Dict

import pytest

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
    assert lines and all(": sched_switch: prev_comm=" in x or ": sched_waking: comm=" in x
                         or ": sched_wakeup_new: comm=" in x for x in lines)
    assert any(": sched_waking: " in x for x in lines)
    res = run_cli(["trace", "stats", str(txt), "--from", "ftrace", "--json"])
    assert res.returncode == 0, res.stderr
    stats = json.loads(res.stdout[res.stdout.index("{"):res.stdout.rindex("}") + 1])
    run = _load(str(tmp_path / "r" / "results.json"))
    cpu_ns = run["cgroups"]["/"]["cpu_time_ns"]
    # within 1 %: microsecond timestamps, and the slices still running when
    # the run stops have no switch-out (as in a kernel capture that ends)
    assert abs(stats["cpu_demand_ns"] - cpu_ns) <= 0.01 * cpu_ns, (stats["cpu_demand_ns"], cpu_ns)
    # The wakeups are there: the importer measures, from sched_waking /
    # sched_wakeup_new to the switch that runs the task, the same wakeup
    # latencies the simulator reported (microsecond timestamps: 1 us slack).
    got, want = stats["wakeup_latency_ns"], run["wakeup_latency_ns"]
    assert got["count"] >= 0.95 * want["count"], (got, want)
    for q in ("p50", "p99"):
        assert abs(got[q] - want[q]) <= 2000 + 0.01 * want[q], (q, got, want)


# Perfetto's own systrace line tokenizer (src/trace_processor/importers/
# systrace/systrace_line_tokenizer.cc): "TASK-PID (TGID) [CPU] FLAGS TS: EVENT:"
_PERFETTO_LINE = re.compile(r"-(\d+)\s+\(?\s*(\d+|-+)?\)?\s?\[(\d+)\]\s*"
                            r"[a-zA-Z0-9.]{0,4}\s+(\d+\.\d+):\s+(\S+):")


def _check_systrace_lines(text: str) -> Dict[str, int]:
    """Every event line parses as Perfetto's systrace importer parses it
    (systrace_line_parser.cc: the fields it requires per event), timestamps
    never go back, atrace B/E slices balance per thread. Returns the count
    of each event."""
    counts: Dict[str, int] = {}
    open_by_tid: Dict[int, int] = {}
    last_ts = -1.0
    for n, line in enumerate(text.splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        m = _PERFETTO_LINE.search(line)
        assert m, f"line {n}: not a systrace event line: {line!r}"
        tid, ts, event = int(m.group(1)), float(m.group(4)), m.group(5)
        assert ts >= last_ts, f"line {n}: time goes back"
        last_ts = ts
        args = line[m.end():].strip()
        kv = dict(tok.split("=", 1) for tok in args.split() if "=" in tok)
        counts[event] = counts.get(event, 0) + 1
        if event == "sched_switch":
            for k in ("prev_pid", "prev_prio", "next_pid", "next_prio"):
                assert kv[k].isdigit(), f"line {n}: {k}"
            assert kv["prev_state"] in ("R", "S"), f"line {n}"
        elif event in ("sched_waking", "sched_wakeup_new"):
            assert kv["pid"].isdigit() and kv["comm"] and kv["target_cpu"].isdigit(), f"line {n}"
        elif event == "tracing_mark_write":
            parts = args.split("|")
            assert parts[0] in ("B", "E", "C") and parts[1].isdigit(), f"line {n}: {args!r}"
            assert m.group(2) is not None and int(m.group(2)) == int(parts[1]), f"line {n}: tgid column"
            if parts[0] == "B":
                assert len(parts) == 3 and parts[2], f"line {n}"
                open_by_tid[tid] = open_by_tid.get(tid, 0) + 1
            elif parts[0] == "E":
                assert open_by_tid.get(tid, 0) == 1, f"line {n}: E without B on {tid}"
                open_by_tid[tid] -= 1
            else:
                assert len(parts) == 4 and float(parts[3]) >= 0, f"line {n}"
                counts["counter"] = counts.get("counter", 0) + 1
            counts[parts[0]] = counts.get(parts[0], 0) + 1
        else:
            raise AssertionError(f"line {n}: unexpected event {event}")
    assert all(v == 0 for v in open_by_tid.values()), "unbalanced B/E"
    return counts


def test_systrace_matches_perfettos_line_format(small_trace, tmp_path) -> None:
    txt = tmp_path / "s.systrace"
    r = agentcg.run(small_trace, "eevdf", perfetto=str(txt))
    counts = _check_systrace_lines(txt.read_text())
    assert counts["sched_switch"] > 0
    # one sched_waking per wakeup the simulator counted (forks: sched_wakeup_new)
    assert counts["sched_waking"] + counts.get("sched_wakeup_new", 0) >= r["wakeup_latency_ns"]["count"]


def _gpu_trace() -> "agentcg.Trace":
    try:
        t = agentcg.generate("gpu-oversub", seed=1)
    except ValueError as e:
        pytest.skip(f"GPU generators not built: {e}")
    return t


def test_gpu_track_in_the_json_and_the_text(tmp_path) -> None:
    """A GPU run's Perfetto output has a GPU track: under nvshare one job
    holds the lock at a time, each grant opens a hold and each DROP a drain,
    and the slices add up to each job's run time in results.json."""
    t = _gpu_trace()
    js = tmp_path / "g.json"
    r = agentcg.run(t, "eevdf", "nvshare", perfetto=str(js))
    g = r["gpu"]
    doc = _load(str(js))
    events = doc["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert "GPU 0" in names.values()
    sl = r.gpu_slices()
    assert len(sl) > 0 and set(sl["kind"]) <= {"hold", "drain"}
    assert (sl["kind"] == "hold").sum() == g["grants"] > 1
    assert (sl["kind"] == "drain").sum() == g["drops"]
    for job, d in g["jobs"].items():
        mine = sl[sl["job"] == job]
        assert int((mine["end_ns"] - mine["start_ns"]).sum()) == d["run_ns"], job
    for gpu, part in sl.groupby("gpu"):  # exclusive holder: no overlap on a GPU
        spans = sorted(zip(part["start_ns"], part["end_ns"]))
        for (a0, a1), (b0, _) in zip(spans, spans[1:]):
            assert b0 >= a1, (gpu, a0, a1, b0)
        order = sorted(zip(part["start_ns"], part["end_ns"], part["job"]))
        # a switch: the lock goes to another job than the one that released it
        # (a handover after a job finished is not a switch)
        switches = sum(1 for (_, e0, a), (_, _, b) in zip(order, order[1:])
                       if a != b and g["jobs"][a]["finish_ns"] != e0)
        assert switches == g["gpus"][gpu]["switches"] > 0
    res = r.schedule_counters()
    assert res["track"].str.contains("GPU 0 resident ").any()
    cap = g["gpus"][0]["memory_bytes"]
    assert (res["value"] <= cap).all() and (res["value"] >= 0).all()

    txt = tmp_path / "g.txt"
    agentcg.run(t, "eevdf", "nvshare", perfetto=str(txt))
    counts = _check_systrace_lines(txt.read_text())
    assert counts["B"] == counts["E"] == len(sl)
    assert counts["counter"] == int(res["track"].str.contains(" resident ").sum())
