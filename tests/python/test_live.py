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

from conftest import REPO, run_cli, build_under_test

import agentcg
from agentcg import fidelity, live, machine
from agentcg._errors import AgentcgError


def _fake_guest_out(root: Path, reps: int = 0) -> None:
    """A test double of what the guest writes: rep-N folders when reps > 0."""
    for s, p99, cyc in (("eevdf", 4000000, 120), ("agentcg", 2000000, 60)):
        for rep in (range(1, reps + 1) if reps else [0]):
            d = root / "compare" / s / (f"rep-{rep}" if rep else "")
            d.mkdir(parents=True)
            jitter = 1 + 0.03 * rep  # repetitions differ a little, the schedulers a lot
            r = {"wakeup_latency_ns": {"count": 10, "p50": 1000000, "p99": int(p99 * jitter)},
                 "tool_call_latency_ns": {"count": 0}, "context_switches": 100, "cpu_utilization": 0.5,
                 "tasks": 3, "cgroups": {"/": {}, "/victim": {"cpu_share": 0.4, "tasks": 1},
                                         "/storm": {"cpu_share": 0.6, "tasks": 2}}}
            (d / "fork-storm.json").write_text(json.dumps(r))
            (d / "fork-storm.log").write_text("ok\n")
            (d / "bench.txt").write_text(f"scheduler {s} state enabled\ncyclictest_load_p99_us {int(cyc * jitter)}\n"
                                         f"hackbench_s {2.5 + 0.1 * (rep % 2)}\n")
    (root / "overhead").mkdir()
    (root / "overhead" / "progstats.txt").write_text(
        "AGENTCG-PROGSTAT fifo agentcg_enqueue 100 100000\n"
        "AGENTCG-PROGSTAT agentcg agentcg_enqueue 100 300000\n"
        "AGENTCG-PROGSTAT agentcg agentcg_dispatch 50 500000\nnoise line\n")


def test_collect_compare_layout_and_table(tmp_path: Path) -> None:
    _fake_guest_out(tmp_path / "vm")
    dest = tmp_path / "out"
    (tmp_path / "vm" / "kernel.json").write_text('{"release": "7.2.13", "config_hz": 250}\n')
    summary = live.collect_compare(tmp_path / "vm", dest, ["fork-storm", "agent"], ["eevdf", "agentcg"])
    assert (dest / "fork-storm" / "agentcg" / "results.json").exists()
    assert json.loads((dest / "kernel.json").read_text())["config_hz"] == 250  # for fidelity's tick_ns
    assert (dest / "fork-storm" / "eevdf" / "player.log").read_text() == "ok\n"
    assert summary["missing"] == ["agent/eevdf", "agent/agentcg"]
    assert summary["benchmarks"]["agentcg"][0]["cyclictest_load_p99_us"] == 60
    assert json.loads((dest / "overhead.json").read_text())["agentcg"]["dispatch"] == {"cnt": 50, "ns": 500000}
    table = live.format_sections(live.compare_sections(summary, ["eevdf", "agentcg"]), ["eevdf", "agentcg"])
    row = next(line for line in table.splitlines() if "wakeup latency p99" in line)
    assert row.split()[-2:] == ["4.00", "2.00"]
    assert "vs eevdf" not in table  # one run: no verdicts
    assert "40.0" in next(line for line in table.splitlines() if "/victim CPU share" in line)
    assert next(line for line in table.splitlines() if "CPU load p99" in line).split()[-2:] == ["120.0", "60.00"]
    ov = live.overhead_rows(summary["overhead"])
    enq = next(line for line in ov.splitlines() if line.startswith("enqueue"))
    assert enq.split()[1:4] == ["1000", "3000", "3.00"]


def test_overhead_repetitions_give_the_sum_and_each_runs_ratio(tmp_path: Path) -> None:
    """The overhead pass run N times (AGENTCG-PROGSTAT ... rep): the table's
    means are over every run, and a column gives the ratio per repetition,
    median (min-max); lines without a repetition are repetition 1."""
    p = tmp_path / "progstats.txt"
    lines = []
    for rep, (f_ns, a_ns) in enumerate(((100, 300), (100, 200), (200, 1000)), 1):
        lines += [f"AGENTCG-PROGSTAT fifo agentcg_enqueue 10 {f_ns * 10} {rep}",
                  f"AGENTCG-PROGSTAT agentcg agentcg_enqueue 10 {a_ns * 10} {rep}",
                  f"AGENTCG-PROGSTAT agentcg agentcg_dispatch 5 {a_ns * 5} {rep}", "AGENTCG-PROGSTAT bad x y"]
    p.write_text("\n".join(lines) + "\n")
    ov = live.read_progstats(p)
    assert ov["agentcg"]["enqueue"] == {"cnt": 30, "ns": 15000} and ov["fifo"]["enqueue"] == {"cnt": 30, "ns": 4000}
    assert [r["agentcg"]["enqueue"]["ns"] for r in ov["repetitions"]] == [3000, 2000, 10000]
    rows = live.overhead_rows(ov)
    enq = next(line for line in rows.splitlines() if line.startswith("enqueue")).split()
    # pooled: 500 / 133 ns = 3.75x; per repetition 3.00, 2.00, 5.00: median 3.00 (2.00-5.00)
    assert enq[1:4] == ["133", "500", "3.75"] and enq[5:] == ["3.00", "(2.00-5.00)"]
    assert "median (min-max) of 3" in rows.splitlines()[0]
    # dispatch: no FIFO figure, no ratio
    assert next(line for line in rows.splitlines() if line.startswith("dispatch")).split()[1] == "-"
    # one repetition (the old format): no per-repetition column
    p.write_text("AGENTCG-PROGSTAT fifo agentcg_enqueue 10 1000\nAGENTCG-PROGSTAT agentcg agentcg_enqueue 10 3000\n")
    one = live.overhead_rows(live.read_progstats(p))
    assert "per repetition" not in one and next(x for x in one.splitlines() if x.startswith("enqueue")).split()[3] == "3.00"


def test_collect_compare_keeps_the_recordings(tmp_path: Path) -> None:
    """compare_record's recordings (COMPARE_RECORD) land in DEST/recordings/
    for fidelity; one whose folder exists without a finished recording is
    named missing, and absent ones (--no-record) are not."""
    _fake_guest_out(tmp_path / "vm")
    rec = tmp_path / "vm" / "compare" / "recordings"
    (rec / "cyclictest-load" / "recording").mkdir(parents=True)
    (rec / "cyclictest-load" / "recording" / "meta.json").write_text('{"complete": true}\n')
    (rec / "cyclictest-load" / "bench.txt").write_text("cyclictest_load_p99_us 70\n")
    (rec / "fork-storm" / "recording").mkdir(parents=True)  # the recorder failed: no meta.json
    (rec / "agent" / "recording").mkdir(parents=True)  # the agent trace played under EEVDF
    (rec / "agent" / "recording" / "meta.json").write_text('{"complete": true}\n')
    summary = live.collect_compare(tmp_path / "vm", tmp_path / "out", ["fork-storm"], ["eevdf", "agentcg"])
    got = tmp_path / "out" / "recordings"
    assert (got / "cyclictest-load" / "recording" / "meta.json").exists()
    assert (got / "cyclictest-load" / "bench.txt").read_text() == "cyclictest_load_p99_us 70\n"
    assert (got / "agent" / "recording" / "meta.json").exists()
    assert not (got / "fork-storm").exists() and not (got / "cyclictest-storm").exists()
    assert "recordings/fork-storm" in summary["missing"] and "recordings/cyclictest-storm" not in summary["missing"]


def test_player_sleeper_passes_become_benchmark_rows(tmp_path: Path) -> None:
    """compare.sh's player_sleeper writes the player's results.json per pass
    (player-idle.json, player-load.json): their wakeup p50/p99 become bench
    keys in us, the files are kept, and one without wakeups is named missing
    instead of failing the collection."""
    _fake_guest_out(tmp_path / "vm")
    src = tmp_path / "vm" / "compare" / "agentcg"
    (src / "player-idle.json").write_text(json.dumps({"wakeup_latency_ns": {"count": 9000, "p50": 121400,
                                                                          "p99": 190000}}))
    (src / "player-load.json").write_text('{"wakeup_latency_ns": {"count": 0}}')  # none: no keys
    (tmp_path / "vm" / "compare" / "eevdf" / "player-idle.json").write_text("{truncated")
    dest = tmp_path / "out"
    summary = live.collect_compare(tmp_path / "vm", dest, ["fork-storm"], ["eevdf", "agentcg"])
    got = summary["benchmarks"]["agentcg"][0]
    assert got["player_idle_p50_us"] == 121.4 and got["player_idle_p99_us"] == 190.0
    assert "player_load_p50_us" not in got
    assert (dest / "benchmarks" / "agentcg" / "player-idle.json").exists()
    assert "player_idle_p50_us" not in summary["benchmarks"]["eevdf"][0]
    assert any("eevdf/player-idle.json" in m for m in summary["missing"])
    table = live.format_sections(live.compare_sections(summary, ["eevdf", "agentcg"]), ["eevdf", "agentcg"])
    assert "121.4" in next(line for line in table.splitlines() if "sleeping 1 ms, idle machine p50" in line)


def test_repetitions_give_medians_intervals_and_verdicts(tmp_path: Path) -> None:
    _fake_guest_out(tmp_path / "vm", reps=3)
    dest = tmp_path / "out"
    summary = live.collect_compare(tmp_path / "vm", dest, ["fork-storm"], ["eevdf", "agentcg"], repeat=3)
    for rep in (1, 2, 3):  # every repetition kept
        assert (dest / "fork-storm" / "agentcg" / f"rep-{rep}" / "results.json").exists()
    assert len(summary["results"]["fork-storm"]["eevdf"]) == 3
    table = live.format_sections(live.compare_sections(summary, ["eevdf", "agentcg"]), ["eevdf", "agentcg"])
    assert "vs eevdf" in table and "95 % bootstrap interval" in table
    p99 = next(line for line in table.splitlines() if "wakeup latency p99" in line)
    assert p99.startswith("wakeup latency p99") and p99.rstrip().endswith("better")
    assert "4.24 [" in p99  # median of 4.12, 4.24, 4.36 ms
    hb = next(line for line in table.splitlines() if line.startswith("hackbench"))
    assert hb.rstrip().endswith("indistinguishable")  # same numbers under both
    # the same samples give the same text (seeded bootstrap)
    assert table == live.format_sections(live.compare_sections(summary, ["eevdf", "agentcg"]), ["eevdf", "agentcg"])


def test_interleaved_order_cancels_drift() -> None:
    from agentcg import stats

    order = stats.interleaved_order(["eevdf", "flatcg", "agentcg"], 3)
    assert [s for s, _ in order] == ["eevdf", "flatcg", "agentcg", "agentcg", "flatcg", "eevdf",
                                     "eevdf", "flatcg", "agentcg"]
    assert [r for _, r in order] == [1, 1, 1, 2, 2, 2, 3, 3, 3]


def test_host_load_warning_and_progress_lines() -> None:
    quiet = live.host_load_summary([0.5, 0.7, 0.6], host_cpus=2)
    assert not quiet["busy"] and "warning" not in quiet
    busy = live.host_load_summary([3.0, 4.0, 5.0], host_cpus=2)
    assert busy["busy"] and "load average 4.0" in busy["warning"] and busy["max"] == 5.0
    assert live.progress_line("AGENTCG-DATA compare agentcg@2 player agent rc=0 wall_ms=31200") == \
        "agentcg (repetition 2): agent played (rc=0, 31.2 s)"
    assert live.progress_line("AGENTCG-DATA compare eevdf bench x 1") == "eevdf: benchmarks done"
    assert live.progress_line("[  1.0] kernel noise") is None


def test_median_doc_for_fidelity() -> None:
    docs = [{"a": 1, "b": {"p99": 10.0}}, {"a": 3, "b": {"p99": 30.0}}, {"a": 2, "b": {"p99": 20.0}, "c": "x"}]
    assert fidelity.median_doc(docs) == {"a": 2, "b": {"p99": 20.0}, "c": "x"}


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
    prof = machine.load_profile(str(out / "machine.yaml"))["machine"]
    assert prof["wakeup_overhead_ns"] == m["wakeup_overhead_ns"] and prof["cpus"] == 2
    assert "| fid-io/eevdf | wakeup latency p99 (ms) |" in (out / "fidelity.md").read_text()


def test_fidelity_with_nothing_to_fit_is_an_error(tmp_path: Path) -> None:
    """Tasks in the root cgroup only: no per-cgroup wakeups to fit on."""
    b = agentcg.TraceBuilder("rootonly", cpus=2, duration_ns=agentcg.ms(200))
    for _ in range(3):
        b.process(cgroup="/", comm="w").repeat(20, lambda o: o.run(agentcg.ms(2)).sleep(agentcg.ms(3)))
    src = tmp_path / "rootonly.json"
    b.write(str(src))
    live_dir = tmp_path / "live"
    for s in ("eevdf", "agentcg"):  # "live" results stood in by simulations (a test double)
        d = live_dir / "fid-rootonly" / s
        d.mkdir(parents=True)
        (d / "results.json").write_text(agentcg.run(str(src), s, seed=1).text)
    with pytest.raises(AgentcgError, match="nothing to fit"):
        fidelity.fidelity([str(src)], str(tmp_path / "out"), live_dir=str(live_dir), duration="200ms",
                          quiet=True)


def _live_build() -> Path:
    """The build under test (else build/ci): its agentcgroupd checks configs."""
    build = Path(build_under_test() or Path(REPO) / "build" / "ci")
    if not (build / "live" / "agentcgroupd" / "agentcgroupd").exists():
        pytest.skip(f"agentcgroupd is not built in {build}")
    return build


def test_compare_config_is_checked_before_the_boot(tmp_path: Path) -> None:
    """`live compare --config`: a good scheduler section passes as it is; a
    bad key fails with the daemon's file:line message and a section the
    harness writes in every pass is refused, both before any VM boots."""
    build = _live_build()
    good = tmp_path / "good.yaml"
    good.write_text("scheduler:\n  min_slice_us: 0\n")
    assert live.check_daemon_config(str(good), build) == good.read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text("scheduler:\n  min_slice_uz: 0\n")
    with pytest.raises(AgentcgError, match=r"bad.yaml:2: key 'scheduler.min_slice_uz': unknown key"):
        live.check_daemon_config(str(bad), build)
    harness = tmp_path / "harness.yaml"
    harness.write_text("scheduler:\n  min_slice_us: 0\ndaemon:\n  mode: fifo\n")
    with pytest.raises(AgentcgError, match=r"harness.yaml:3: 'daemon': live compare writes this section"):
        live.check_daemon_config(str(harness), build)
    # through the command: exit 1 (bad input) and the message, no boot (no VM output written)
    r = run_cli(["live", "compare", "--build", str(build), "--config", str(bad), "--out", str(tmp_path / "o")])
    assert r.returncode == 1 and "min_slice_uz" in r.stderr, r.stderr
    assert not (tmp_path / "o" / "vm-serial.log").exists()


def test_live_compare_records_unless_told_not_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guest records the benchmarks and the storm (COMPARE_RECORD=1) by
    default; not with --no-record (record=False) nor without benchmarks
    (--bench-seconds 0), where there is nothing to record."""
    from agentcg import cli

    build = _live_build()
    seen: list = []

    def fake_run_vm(b: Path, scenarios: str, out: Path, log: Path, env: dict, *rest: object) -> None:
        seen.append(dict(env))
        raise live.LiveSkip("stopped by the test before a boot")

    monkeypatch.setattr(live, "run_vm", fake_run_vm)
    for kw, want in (({}, "1"), ({"record": False}, "0"), ({"bench_s": 0}, "0")):
        with pytest.raises(live.LiveSkip):
            live.live_compare(str(tmp_path / "o"), build=str(build), traces=("hogs",), quiet=True, **kw)
        assert seen[-1]["COMPARE_RECORD"] == want, kw
    cli.main(["live", "compare", "--build", str(build), "--traces", "hogs", "--no-record", "--quiet",
              "--out", str(tmp_path / "o")])
    assert seen[-1]["COMPARE_RECORD"] == "0"


def test_live_compare_accepts_fifo_and_names_every_scheduler_it_knows(tmp_path: Path) -> None:
    """--schedulers takes the daemon's FIFO mode besides flatcg and agentcg
    (what sched_ext itself costs) and eevdf-nohrtick (the emulator's timer
    diagnostic); an unknown name is an error listing all."""
    with pytest.raises(AgentcgError, match="expected eevdf, flatcg, agentcg, fifo, eevdf-nohrtick"):
        live.live_compare(str(tmp_path / "o"), build=str(tmp_path / "none"), schedulers=("eevdf", "simple"))
    # they pass the check: what stops these calls is the missing build
    for extra in ("fifo", "eevdf-nohrtick"):
        with pytest.raises(live.LiveSkip, match="no build directory"):
            live.live_compare(str(tmp_path / "o"), build=str(tmp_path / "none"), schedulers=("eevdf", extra))


def test_baseline_build_runs_as_agentcg_base_beside_the_change(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """--baseline-build DIR: DIR's daemon is carried into the VM as
    agentcgroupd-base and its agentcg mode runs as the scheduler
    agentcg-base, interleaved with the others; a DIR without a daemon, or
    agentcg-base without a DIR, is an error before any boot."""
    build = _live_build()
    seen: list = []

    def fake_run_vm(b: Path, scenarios: str, out: Path, log: Path, env: dict, files: list, *rest: object) -> None:
        seen.append((dict(env), list(files)))
        raise live.LiveSkip("stopped by the test before a boot")

    monkeypatch.setattr(live, "run_vm", fake_run_vm)
    with pytest.raises(AgentcgError, match="agentcgroupd does not exist"):
        live.live_compare(str(tmp_path / "o"), build=str(build), traces=("hogs",), quiet=True,
                          baseline_build=str(tmp_path / "old"))
    with pytest.raises(AgentcgError, match="agentcg-base needs --baseline-build"):
        live.live_compare(str(tmp_path / "o"), build=str(build), traces=("hogs",), quiet=True,
                          schedulers=("eevdf", "agentcg", "agentcg-base"))
    assert not seen
    daemon = tmp_path / "old" / "live" / "agentcgroupd" / "agentcgroupd"
    daemon.parent.mkdir(parents=True)
    daemon.write_text("#!/bin/sh\n")
    with pytest.raises(live.LiveSkip):
        live.live_compare(str(tmp_path / "o"), build=str(build), traces=("hogs",), quiet=True, repeat=2,
                          schedulers=("eevdf", "agentcg"), baseline_build=str(tmp_path / "old"))
    env, files = seen[-1]
    assert files == [(str(daemon.resolve()), "/usr/bin/agentcgroupd-base")]
    assert env["COMPARE_SCHEDULERS"] == "eevdf,agentcg,agentcg-base"
    assert sorted(env["COMPARE_RUNS"].split(",")) == sorted(f"{s}:{r}" for s in ("eevdf", "agentcg", "agentcg-base")
                                                            for r in (1, 2))


def test_overhead_table_sets_the_change_against_the_baseline_build(tmp_path: Path) -> None:
    """The overhead pass with the baseline build's runs (mode agentcg-base):
    a '/ base' column, pooled and per repetition, beside the FIFO ratio."""
    p = tmp_path / "progstats.txt"
    lines = []
    for rep, (f_ns, a_ns, b_ns) in enumerate(((100, 300, 400), (100, 200, 300), (200, 1000, 900)), 1):
        lines += [f"AGENTCG-PROGSTAT fifo agentcg_enqueue 10 {f_ns * 10} {rep}",
                  f"AGENTCG-PROGSTAT agentcg agentcg_enqueue 10 {a_ns * 10} {rep}",
                  f"AGENTCG-PROGSTAT agentcg-base agentcg_enqueue 10 {b_ns * 10} {rep}"]
    p.write_text("\n".join(lines) + "\n")
    rows = live.overhead_rows(live.read_progstats(p))
    assert "/ base" in rows.splitlines()[0]
    enq = next(line for line in rows.splitlines() if line.startswith("enqueue"))
    left, right = enq.split("|")
    # against FIFO as before; against the base: 500 / 533 pooled, per
    # repetition 0.75, 0.67, 1.11: median 0.75 (0.67-1.11)
    assert left.split()[1:4] == ["133", "500", "3.75"]
    assert right.split() == ["533", "0.94", "0.75", "(0.67-1.11)"]


def test_overhead_idle_phase_is_its_own_table(tmp_path: Path) -> None:
    """The overhead pass's idle phase (modes MODE-idle: a 1 ms sleeper alone,
    cyclictest's path) gets its own table, and the mixed load's table is
    the same with or without those lines; a baseline build from before the
    phases (no agentcg-base-idle) leaves the idle table without a base
    column."""
    p = tmp_path / "progstats.txt"
    mixed = ["AGENTCG-PROGSTAT fifo agentcg_enqueue 10 1000 1",
             "AGENTCG-PROGSTAT agentcg agentcg_enqueue 10 3000 1",
             "AGENTCG-PROGSTAT agentcg-base agentcg_enqueue 10 4000 1"]
    p.write_text("\n".join(mixed) + "\n")
    alone = live.overhead_rows(live.read_progstats(p))
    p.write_text("\n".join(mixed + ["AGENTCG-PROGSTAT fifo-idle agentcg_runnable 4 800 1",
                                     "AGENTCG-PROGSTAT agentcg-idle agentcg_runnable 4 2000 1",
                                     "AGENTCG-PROGSTAT agentcg-idle agentcg_enqueue 2 9000 1"]) + "\n")
    ov = live.read_progstats(p)
    assert live.overhead_rows(ov) == alone
    idle = live.overhead_rows(ov, live.IDLE_PHASE)
    assert "/ base" not in idle.splitlines()[0]
    run = next(x for x in idle.splitlines() if x.startswith("runnable")).split()
    assert run[1:5] == ["200", "500", "2.50", "4"]
    # enqueue has no FIFO figure on this path (FIFO dispatches idle wakeups in select_cpu)
    assert next(x for x in idle.splitlines() if x.startswith("enqueue")).split()[1:3] == ["-", "4500"]
    assert "dispatch" not in idle


def _compare_doc(d: Path, verdicts: dict) -> Path:
    """A live-compare.json with one section whose rows have VERDICTS
    {metric: {scheduler: verdict}}."""
    rows = [{"metric": m, "unit": "ms", "lower_is_better": True, "section": "",
             "policies": {"eevdf": {"median": 1.0, "n": 3},
                          **{s: {"median": 2.0, "n": 3, "verdict": v} for s, v in per.items()}}}
            for m, per in verdicts.items()]
    d.mkdir()
    (d / "live-compare.json").write_text(json.dumps({"format": "agentcg-live-compare", "version": 1,
                                                      "sections": {"io (agentcg-player)": rows}}))
    return d


def test_live_agree_counts_agreeing_and_opposite_verdicts(tmp_path: Path) -> None:
    """Two invocations side by side: agreeing, merely uncalled, and opposite
    verdicts are told apart; '-' and 'n/a' are left out; bad input is named."""
    a = _compare_doc(tmp_path / "a", {"wakeup p50": {"agentcg": "worse", "flatcg": "worse"},
                                      "wakeup p99": {"agentcg": "indistinguishable", "flatcg": "better"},
                                      "switches": {"agentcg": "-"}, "share": {"agentcg": "n/a"}})
    b = _compare_doc(tmp_path / "b", {"wakeup p50": {"agentcg": "worse", "flatcg": "better"},
                                      "wakeup p99": {"agentcg": "worse", "flatcg": "better"},
                                      "switches": {"agentcg": "-"}, "share": {"agentcg": "higher"}})
    rows, text = live.verdict_agreement(a, b)
    assert [(r["metric"], r["scheduler"], r["agree"]) for r in rows] == [
        ("wakeup p50", "agentcg", True), ("wakeup p50", "flatcg", False),
        ("wakeup p99", "agentcg", False), ("wakeup p99", "flatcg", True)]
    assert text.splitlines()[-1] == ("verdicts against eevdf that agree: 2 of 4 (50 %); where either run calls a "
                                     "difference: 2 of 4; opposite (better against worse, higher against lower): 1")
    r = run_cli(["live", "agree", str(a), str(b)])
    assert r.returncode == 0 and r.stdout == text, r.stderr
    r = run_cli(["live", "agree", str(a)])
    assert r.returncode == 2 and "expected two live compare output directories" in r.stderr
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "live-compare.json").write_text("{\"format\": \"other\"}")
    with pytest.raises(AgentcgError, match="live-compare.json: field 'format'"):
        live.verdict_agreement(a, tmp_path / "bad")
    with pytest.raises(AgentcgError, match="not found"):
        live.verdict_agreement(a, tmp_path / "none")


def _idletrace_wakeup(t0: int, pid: int, cpu: int, kick: bool) -> list[str]:
    """One cyclictest wakeup as ftrace prints it (times in us from t0, a
    whole second so the lines' seconds field is t0 / 1e6)."""
    def ln(dt, task, event, rest):
        t = t0 + dt
        return f"  {task} [{cpu:03d}] d.h3.  {t // 1_000_000}.{t % 1_000_000:06d}: {event}: {rest}"
    idle = "<idle>-0"
    out = [ln(50, idle, "local_timer_entry", "vector=236"),
           ln(52, idle, "hrtimer_expire_entry", "hrtimer=(____ptrval____) now=1 function=hrtimer_wakeup"),
           ln(53, idle, "sched_waking", f"comm=cyclictest pid={pid} prio=120 target_cpu={cpu:03d}")]
    if kick:
        out.append(ln(55, idle, "ipi_send_cpu", f"cpu={cpu} callsite=irq_work_queue+0x2d/0x60"))
    out += [ln(60, idle, "sched_wakeup", f"comm=cyclictest pid={pid} prio=120 target_cpu={cpu:03d}"),
            ln(70, idle, "sched_switch", f"prev_comm=swapper/{cpu} prev_pid=0 prev_prio=120 prev_state=R "
                                         f"==> next_comm=cyclictest next_pid={pid} next_prio=120"),
            ln(75, f"cyclictest-{pid}", "hrtimer_start",
               f"hrtimer=(____ptrval____) function=hrtimer_wakeup expires={(t0 + 1000) * 1000} "
               f"softexpires={(t0 + 1000) * 1000} mode=ABS")]
    return out


def test_idletrace_splits_each_wakeup_into_its_parts():
    from agentcg import idletrace
    t0 = 5_000_000
    # the thread arms its first sleep (expiry at t0), then sleeps three times
    lines = [f"  cyclictest-7 [001] ....  {t0 // 1_000_000 - 1}.999000: hrtimer_start: hrtimer=(____ptrval____) "
             f"function=hrtimer_wakeup expires={t0 * 1000} softexpires={t0 * 1000} mode=ABS"]
    for k in range(3):
        lines += _idletrace_wakeup(t0 + 1000 * k, 7, 1, kick=k == 1)
    # another task's switches and a tick on the other CPU do not count
    lines.append("  sh-9 [000] d..2.  5.000100: sched_switch: prev_comm=sh prev_pid=9 prev_prio=120 "
                 "prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120")
    b = idletrace.breakdown(lines)
    assert b["wakeups"] == 3 and b["same_cpu"] == 3 and b["ipis"] == 1 and b["kicked"] == 1
    assert b["parts"]["timer"] == [50, 50, 50]
    assert b["parts"]["expire"] == [2, 2, 2]
    assert b["parts"]["wake"] == [7, 7, 7]
    assert b["parts"]["switch"] == [10, 10, 10]
    # no line shows a reschedule asked for: all of the wait is the decision's
    assert b["parts"]["resched"] == [17, 17, 17] and b["parts"]["preempt"] == [0, 0, 0]
    assert b["parts"]["user"] == [5, 5, 5]
    assert b["parts"]["total"] == [75, 75, 75]
    assert "3 wakeups" in idletrace.render("x.trace", b)


def test_idletrace_says_what_held_the_cpu_in_the_slowest_wakeups():
    from agentcg import idletrace
    t0 = 5_000_000
    lines = [f"  cyclictest-7 [001] ....  4.999000: hrtimer_start: hrtimer=(____ptrval____) "
             f"function=hrtimer_wakeup expires={t0 * 1000} softexpires={t0 * 1000} mode=ABS"]
    for k in range(99):  # 99 quick wakeups from the idle task (10 us each)
        lines += _idletrace_wakeup(t0 + 1000 * k, 7, 1, kick=False)
    # the 100th: a storm child runs on CPU 1 when the timer wakes the thread,
    # then a kworker, then the thread (300 + 100 us); CPU 0's switches do not count
    t = t0 + 99_000

    def ln(dt, task, cpu, event, rest, flags="d.h3."):
        u = t + dt
        return f"  {task} [{cpu:03d}] {flags}  {u // 1_000_000}.{u % 1_000_000:06d}: {event}: {rest}"
    storm = "stress-ng-fork-20"
    # the waking line already shows a reschedule (an earlier one): not this wakeup's;
    # CPU 0's (lazy L, then N) and CPU 1's lazy one do not count either
    lines += [ln(50, storm, 1, "local_timer_entry", "vector=236"),
              ln(52, storm, 1, "hrtimer_expire_entry", "hrtimer=(____ptrval____) now=1 function=hrtimer_wakeup"),
              ln(53, storm, 1, "sched_waking", "comm=cyclictest pid=7 prio=120 target_cpu=001", "dNh3."),
              ln(55, storm, 1, "local_timer_exit", "vector=236", "dLh3."),
              ln(56, "sh-9", 0, "local_timer_exit", "vector=236", "dLh3."),
              ln(58, "sh-9", 0, "local_timer_exit", "vector=236", "dNh3."),
              # the enqueue asks CPU 1 to reschedule; the storm child keeps it 393 us more
              ln(60, storm, 1, "sched_wakeup", "comm=cyclictest pid=7 prio=120 target_cpu=001", "dNh3."),
              ln(200, "sh-9", 0, "sched_switch", "prev_comm=sh prev_pid=9 prev_prio=120 prev_state=S "
                                                   "==> next_comm=swapper/0 next_pid=0 next_prio=120"),
              ln(353, storm, 1, "sched_switch", "prev_comm=stress-ng-fork prev_pid=20 prev_prio=120 prev_state=R "
                                                "==> next_comm=kworker/1:8 next_pid=30 next_prio=120"),
              ln(453, "kworker/1:8-30", 1, "sched_switch", "prev_comm=kworker/1:8 prev_pid=30 prev_prio=120 "
                                                           "prev_state=I ==> next_comm=cyclictest next_pid=7 next_prio=120"),
              ln(460, "cyclictest-7", 1, "hrtimer_start", "hrtimer=(____ptrval____) function=hrtimer_wakeup "
                                                          f"expires={(t + 1000) * 1000} softexpires=0 mode=ABS")]
    b = idletrace.breakdown(lines)
    assert b["wakeups"] == 100
    assert b["held"][0] == {idletrace.IDLE: 17} and b["held"][99] == {"stress-ng-fork": 300, "kworker": 100}
    assert b["parts"]["resched"][99] == 7 and b["parts"]["preempt"][99] == 393
    s = idletrace.slowest(b, 2.0)  # 2 of 100: the slow one and the first quick one
    assert s["n"] == 2
    assert s["parts"]["total"] == (460 + 75) / 2
    assert s["held"] == {"stress-ng-fork": 150, "kworker": 50, idletrace.IDLE: 8.5}
    assert list(s["held"]) == ["stress-ng-fork", "kworker", idletrace.IDLE]
    assert idletrace.slowest(b, 1.0)["held"] == {"stress-ng-fork": 300, "kworker": 100}
    assert "its CPU held by (us per wakeup): stress-ng-fork 150, kworker 50, (idle) 8" in idletrace.render("x", b)
    assert idletrace.slowest(idletrace.breakdown([]))["n"] == 0


def test_idletrace_command_line(tmp_path, capsys):
    from agentcg import idletrace
    t0 = 5_000_000
    f = tmp_path / "a.trace"
    f.write_text("\n".join([f"  cyclictest-7 [001] ....  4.999000: hrtimer_start: hrtimer=(____ptrval____) "
                            f"function=hrtimer_wakeup expires={t0 * 1000} softexpires=0 mode=ABS"]
                           + _idletrace_wakeup(t0, 7, 1, kick=False)) + "\n")
    assert idletrace.main(["--slowest", "50", str(f)]) == 0
    assert "slowest 50 % (1)" in capsys.readouterr().out
    for bad_pct in ("--slowest=0", "--slowest=x", "--slowest=nan"):
        with pytest.raises(SystemExit) as e:
            idletrace.main([bad_pct, str(f)])
        assert e.value.code == 2
        assert "expected a percentage in (0, 100]" in capsys.readouterr().err
    assert idletrace.main([str(tmp_path / "missing.trace")]) == 1
    with pytest.raises(AgentcgError, match="expected a percentage"):
        idletrace.analyse([str(f)], 0)
    bad = tmp_path / "bad.trace"
    bad.write_text(f"  cyclictest-7 [001] ....  4.999000: hrtimer_start: hrtimer=(____ptrval____) "
                   f"function=hrtimer_wakeup expires={t0 * 1000} softexpires=0 mode=ABS\n"
                   "  <idle>-0 [001] d.h1.  5.000050: local_timer_entry: vector=236\n"
                   "  <idle>-0 [001] d.h1.  5.000052: hrtimer_expire_entry: hrtimer=(____ptrval____) "
                   "function=hrtimer_wakeup\n"
                   "  <idle>-0 [001] d.h3.  5.000053: sched_waking: comm=cyclictest pid=7 prio=120 target_cpu=x\n")
    assert idletrace.main([str(bad)]) == 1
    assert "line 4: sched_waking with target_cpu=x (expected a CPU number)" in capsys.readouterr().err


def test_idletrace_says_which_line_is_malformed():
    from agentcg import idletrace
    bad = ["  cyclictest-7 [001] ....  4.999000: hrtimer_start: hrtimer=(____ptrval____) function=hrtimer_wakeup mode=ABS"]
    with pytest.raises(AgentcgError, match="line 1: hrtimer_start without an expires= field"):
        idletrace.breakdown(bad)
    with pytest.raises(AgentcgError, match="line 1: sched_wakeup without a pid= field"):
        idletrace.breakdown(["  <idle>-0 [001] dNh4.  5.000060: sched_wakeup: comm=cyclictest pid=x prio=120"])
    assert "no wakeup of cyclictest" in idletrace.render("empty.trace", idletrace.breakdown([]))


def test_run_vm_refuses_an_unknown_tcg_thread_mode(tmp_path):
    """AGENTCG_VM_TCG_THREAD picks qemu's TCG threading; anything but single
    or multi is refused before anything is built or booted."""
    import os
    import subprocess
    env = dict(os.environ, AGENTCG_VM_TCG_THREAD="dual")
    r = subprocess.run(["bash", str(Path(REPO) / "live" / "vm" / "run-vm.sh"), str(tmp_path / "build"),
                        str(tmp_path / "vm.log")], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "AGENTCG_VM_TCG_THREAD=dual: expected single or multi" in r.stderr
    assert not (tmp_path / "vm.log").exists()


def test_live_idletrace_command(tmp_path):
    """./agentcg live idletrace: options before or after the files, errors
    that name the file, usage errors with exit code 2."""
    t0 = 5_000_000
    f = tmp_path / "agentcg-1.trace"
    f.write_text("\n".join([f"  cyclictest-7 [001] ....  4.999000: hrtimer_start: hrtimer=(____ptrval____) "
                           f"function=hrtimer_wakeup expires={t0 * 1000} softexpires=0 mode=ABS"]
                          + _idletrace_wakeup(t0, 7, 1, kick=False)) + "\n")
    for args in (["--slowest", "50", str(f)], [str(f), "--slowest=50"]):
        r = run_cli(["live", "idletrace", *args])
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("agentcg-1.trace: 1 wakeups") and "slowest 50 % (1)" in r.stdout
    r = run_cli(["live", "idletrace", str(tmp_path / "none.trace")])
    assert r.returncode == 1 and "agentcg live idletrace: " in r.stderr and "none.trace" in r.stderr
    r = run_cli(["live", "idletrace"])
    assert r.returncode == 2 and "required: TRACE" in r.stderr
    r = run_cli(["live", "idletrace", "--slowest", "101", str(f)])
    assert r.returncode == 2 and "expected a percentage in (0, 100]" in r.stderr
