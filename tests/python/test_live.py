# SPDX-License-Identifier: GPL-2.0-only
"""The host side of `agentcg live compare` and `agentcg fidelity` without a
VM: parsing what the guest writes, the ratio tables, trace preparation, and
the calibration recovering known machine parameters from "live" results
that are simulations with other parameters (so the right answer is known).
The VM runs themselves are the live_vm_* CTest cases and the commands."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO, run_cli

import agentcg
from agentcg import fidelity, live
from agentcg._errors import AgentcgError


def _fake_guest_out(root: Path) -> None:
    for s, p99, cyc in (("eevdf", 4000000, 120), ("agentcg", 2000000, 60)):
        d = root / "compare" / s
        d.mkdir(parents=True)
        r = {"wakeup_latency_ns": {"count": 10, "p50": 1000000, "p99": p99},
             "tool_call_latency_ns": {"count": 0}, "context_switches": 100, "cpu_utilization": 0.5,
             "cgroups": {"/": {}, "/victim": {"cpu_share": 0.4}, "/storm": {"cpu_share": 0.6}}}
        (d / "fork-storm.json").write_text(json.dumps(r))
        (d / "fork-storm.log").write_text("ok\n")
        (d / "bench.txt").write_text(f"scheduler {s} state enabled\ncyclictest_load_p99_us {cyc}\nhackbench_s 2.5\n")
    (root / "overhead").mkdir()
    (root / "overhead" / "progstats.txt").write_text(
        "AGENTCG-PROGSTAT fifo agentcg_enqueue 100 100000\n"
        "AGENTCG-PROGSTAT agentcg agentcg_enqueue 100 300000\n"
        "AGENTCG-PROGSTAT agentcg agentcg_dispatch 50 500000\nnoise line\n")


def test_collect_compare_layout_and_ratio_table(tmp_path: Path) -> None:
    _fake_guest_out(tmp_path / "vm")
    dest = tmp_path / "out"
    summary = live.collect_compare(tmp_path / "vm", dest, ["fork-storm", "agent"], ["eevdf", "agentcg"])
    assert (dest / "fork-storm" / "agentcg" / "results.json").exists()
    assert (dest / "fork-storm" / "eevdf" / "player.log").read_text() == "ok\n"
    assert summary["missing"] == ["agent/eevdf", "agent/agentcg"]
    assert summary["benchmarks"]["agentcg"]["cyclictest_load_p99_us"] == 60
    assert json.loads((dest / "overhead.json").read_text())["agentcg"]["dispatch"] == {"cnt": 50, "ns": 500000}
    table = live.format_rows(live.compare_rows(summary, ["eevdf", "agentcg"]), ["eevdf", "agentcg"])
    row = next(line for line in table.splitlines() if "wakeup latency p99" in line)
    assert "4.000" in row and "2.000 (0.50)" in row
    assert "0.400" in next(line for line in table.splitlines() if "/victim CPU share" in line)
    assert "60 (0.50)" in next(line for line in table.splitlines() if "CPU load p99" in line)
    ov = live.overhead_rows(summary["overhead"])
    enq = next(line for line in ov.splitlines() if line.startswith("enqueue"))
    assert enq.split()[1:4] == ["1000", "3000", "3.00"]


def test_read_bench_names_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "bench.txt"
    p.write_text("scheduler x\ncyclictest_load_p50_us 12\nbroken line here\n")
    with pytest.raises(AgentcgError, match=r"bench.txt:3: expected 'key value'"):
        live.read_bench(p)


def test_missing_live_binaries_is_a_clear_skip(tmp_path: Path) -> None:
    with pytest.raises(live.LiveSkip, match="agentcgroupd is not built"):
        live.build_dir(str(tmp_path))
    r = run_cli(["live", "compare", "--build", str(tmp_path), "--out", str(tmp_path / "o")])
    assert r.returncode == 77 and "cannot run the live side here" in r.stderr


def test_prepare_trace_scales_memory_and_limits_duration(tmp_path: Path) -> None:
    dst = tmp_path / "agent.json"
    t = fidelity.prepare_trace(Path(REPO) / "traces" / "agent.json", dst, fidelity.parse_duration("5s"), 0.5)
    orig = json.loads((Path(REPO) / "traces" / "agent.json").read_text())
    assert t["duration_ns"] == 5_000_000_000
    hi = {c["path"]: c.get("memory_high") for c in orig["cgroups"]}
    for c in t["cgroups"]:
        if hi.get(c["path"]):
            assert c["memory_high"] == hi[c["path"]] // 2
    agentcg.load_trace(str(dst))  # still a valid trace
    with pytest.raises(AgentcgError, match="expected a duration"):
        fidelity.parse_duration("5 parsecs")


def test_calibration_recovers_a_known_wakeup_cost(tmp_path: Path) -> None:
    """The "live" side is the simulator with wakeup_overhead_ns 50000 on 2
    CPUs (not one of the search's starting points); the fit must find it
    again and the report's errors must shrink."""
    live_dir = tmp_path / "live"
    for name in ("io", "fork-storm"):
        prep = tmp_path / f"{name}.json"
        fidelity.prepare_trace(Path(REPO) / "traces" / f"{name}.json", prep, fidelity.parse_duration("5s"), 1.0)
        for s in ("eevdf", "agentcg"):
            r = agentcg.run(str(prep), policy=fidelity.SIM_POLICY[s], config={"machine": {"cpus": 2, "wakeup_overhead_ns": 50000}})
            d = live_dir / f"fid-{name}" / s
            d.mkdir(parents=True)
            (d / "results.json").write_text(r.text)
    out = tmp_path / "out"
    rep = fidelity.fidelity([str(Path(REPO) / "traces" / "io.json"), str(Path(REPO) / "traces" / "fork-storm.json")],
                            str(out), duration="5s", mem_scale=1.0, live_dir=str(live_dir), quiet=True)
    m = rep["machine"]
    assert m["cpus"] == 2
    assert abs(m["wakeup_overhead_ns"] - 50000) <= 5000
    assert rep["calibration_rounds"][0]["machine"]["wakeup_overhead_ns"] == 1000  # the defaults come first
    assert abs(m["speed_pct"] - 100) <= 10
    assert rep["error_after"]["wakeup_p50_max_err_pct"] < rep["error_before"]["wakeup_p50_max_err_pct"] / 2
    prof = agentcg.load_config(str(out / "machine.yaml"))["machine"]
    assert prof["wakeup_overhead_ns"] == m["wakeup_overhead_ns"] and prof["cpus"] == 2
    assert "| fid-io/eevdf | wakeup latency p99 (ms) |" in (out / "fidelity.md").read_text()
