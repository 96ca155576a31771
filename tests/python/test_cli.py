# SPDX-License-Identifier: GPL-2.0-only
"""The Python CLI (python -m agentcg.cli, what ./agentcg runs): exit codes
(0 ok, 1 invalid input, 2 usage), one error line without a traceback unless
--debug, --help everywhere, and the files each subcommand writes.
"""
from __future__ import annotations

import json
import os

import pytest

from conftest import REPO, policies, run_cli

SUBCOMMANDS = ["demo", "run", "compare", "sweep", "plot", "report", "policies"]


def _one_line_error(stderr: str) -> None:
    assert "Traceback" not in stderr
    lines = [ln for ln in stderr.splitlines() if ln.startswith("agentcg")]
    assert len(lines) == 1, stderr


def test_no_arguments_is_a_usage_error() -> None:
    res = run_cli([])
    assert res.returncode == 2
    assert "usage" in res.stderr.lower()


@pytest.mark.parametrize("args", [
    ["frobnicate"],
    ["run"],                                   # no TRACE
    ["run", "x.json", "--out", "o", "--seed", "-1"],            # seeds are 0..2**64-1
    ["run", "x.json", "--out", "o", "--seed", str(2**64)],
    ["compare", "x.json", "--out", "o", "--seeds", "3-1"],
    ["run", "x.json", "--out", "o", "--policy", "agentgc"],     # did-you-mean
    ["run", "x.json", "--out", "o", "--set", "scheduler.fork_storm_treshold=3"],
    ["run", "x.json", "--policy", "cfs"],      # no --out
    ["run", "x.json", "--policy", "cfs", "--out", "o", "--seed", "abc"],
    ["compare", "x.json", "--out", "o", "--policies", ","],
    ["sweep", "--out", "o"],                   # neither TRACE nor --generate
    ["sweep", "--generate", "hogs", "--grid", "nonsense", "--out", "o"],
    ["sweep", "--generate", "hogs", "--seeds", "a-b", "--out", "o"],
    ["plot", "d", "--formats", "gif"],
    ["trace", "frob"],
])
def test_usage_errors_exit_2(args, tmp_path) -> None:
    res = run_cli(args, cwd=str(tmp_path))
    assert res.returncode == 2, (args, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("cmd", SUBCOMMANDS)
def test_help_on_every_subcommand(cmd) -> None:
    res = run_cli([cmd, "--help"])
    assert res.returncode == 0, res.stderr
    assert "usage" in res.stdout.lower()


@pytest.mark.parametrize("sub", ["generate", "validate", "convert", "import", "stats", "merge"])
def test_help_on_trace_subcommands(sub) -> None:
    res = run_cli(["trace", sub, "--help"])
    assert res.returncode == 0, res.stderr
    assert f"trace {sub}" in res.stdout
    if sub == "generate":
        assert "fork-storm" in res.stdout


def test_missing_trace_file_is_input_error(tmp_path) -> None:
    res = run_cli(["run", str(tmp_path / "nope.json"), "--policy", "cfs", "--out", str(tmp_path / "o")])
    assert res.returncode == 1
    _one_line_error(res.stderr)
    assert "nope.json" in res.stderr


def test_bad_trace_names_file_and_line(tmp_path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{\n "format": "agentcg-trace",\n "version": 1,\n "machine": {"cpus": 0}\n}\n')
    res = run_cli(["run", str(bad), "--policy", "cfs", "--out", str(tmp_path / "o")])
    assert res.returncode == 1
    _one_line_error(res.stderr)
    assert "bad.json:4" in res.stderr
    res = run_cli(["--debug", "run", str(bad), "--policy", "cfs", "--out", str(tmp_path / "o")])
    assert res.returncode == 1
    assert "Traceback" in res.stderr


def test_bad_config_is_input_error(small_trace_path, tmp_path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("scheduler:\n  fork_storm_threshold: -4\n")
    res = run_cli(["run", small_trace_path, "--policy", "cfs", "--config", str(cfg), "--out", str(tmp_path)])
    assert res.returncode == 1
    _one_line_error(res.stderr)
    assert "c.yaml:2" in res.stderr and "fork_storm_threshold" in res.stderr


def test_unknown_policy_is_usage_error(small_trace_path, tmp_path) -> None:
    res = run_cli(["run", small_trace_path, "--policy", "nope", "--out", str(tmp_path)])
    assert res.returncode == 2
    _one_line_error(res.stderr)
    assert "nope" in res.stderr


def test_run_prints_summary_and_writes_results(small_trace_path, tmp_path) -> None:
    out = tmp_path / "run"
    res = run_cli(["run", small_trace_path, "--policy", "cfs", "--out", str(out),
                   "--set", "machine.context_switch_ns=3000"])
    assert res.returncode == 0, res.stderr
    assert "wakeup latency p50" in res.stdout and "/hogs/b" in res.stdout
    doc = json.loads((out / "results.json").read_text())
    assert doc["policy"] == "cfs"
    assert doc["config"]["machine"]["context_switch_ns"] == 3000
    assert not (out / "results.json.tmp").exists()


def test_run_without_the_site_module_imports_system_packages_on_demand(small_trace_path, tmp_path) -> None:
    """The launcher starts `run` with python3 -S (issue 21's start-up). A run
    that needs a system package still works: a --machine profile laid over a
    --config file reads the file with python3-yaml, from dist-packages,
    which only the site module puts on sys.path; agentcg runs site.main()
    at the first import nothing else finds (without it: ModuleNotFoundError,
    exit 1)."""
    profile = tmp_path / "vm.yaml"
    profile.write_text("format: agentcg-machine-profile\nversion: 1\nmachine:\n  wakeup_overhead_ns: 7000\n")
    config = tmp_path / "c.yaml"
    config.write_text("scheduler:\n  base_slice_ms: 2\n")
    out = tmp_path / "o"
    p = run_cli(["run", small_trace_path, "--config", str(config), "--machine", str(profile), "--quiet",
                 "--out", str(out)], python_flags=["-S"])
    assert p.returncode == 0, p.stderr
    doc = json.loads((out / "results.json").read_text())
    assert doc["config"]["machine"]["wakeup_overhead_ns"] == 7000
    assert doc["config"]["scheduler"]["base_slice_ms"] == 2


def test_compare_plots_report(small_trace_path, tmp_path) -> None:
    pols = policies("cfs", "fifo", "flatcg", "agentcg")
    out = tmp_path / "cmp"
    res = run_cli(["compare", small_trace_path, "--policies", ",".join(pols), "--out", str(out), "--plots"])
    assert res.returncode == 0, res.stderr
    assert "wakeup latency p99" in res.stdout and "longest runnable wait" in res.stdout
    for p in pols:
        assert (out / p / "results.json").exists()
    assert (out / "plots" / "wakeup-cdf.png").stat().st_size > 1000
    assert (out / "plots" / "wakeup-cdf.svg").stat().st_size > 1000
    res = run_cli(["report", str(out)])
    assert res.returncode == 0, res.stderr
    page = (out / "report.html").read_text()
    assert "data:image/png;base64," in page
    assert "http://" not in page and "https://" not in page  # readable offline
    for p in pols:
        assert f"<th>{p}</th>" in page
    res = run_cli(["plot", str(out), "--out", str(tmp_path / "plots2"), "--formats", "png"])
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "plots2" / "cpu-share.png").exists()


def test_trace_generate_validate(tmp_path) -> None:
    f = tmp_path / "h.json"
    res = run_cli(["trace", "generate", "hogs", "--seed", "2", "-o", str(f), "--weights", "100,200",
                   "--duration", "100ms"])
    assert res.returncode == 0, res.stderr
    res = run_cli(["trace", "validate", str(f)])
    assert res.returncode == 0, res.stderr
    assert "valid" in res.stdout
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    res = run_cli(["trace", "validate", str(bad)])
    assert res.returncode == 1
    assert "bad.json:1" in res.stderr
    res = run_cli(["trace", "generate", "hogs", "--bogus", "1", "-o", str(tmp_path / "x.json")])
    assert res.returncode in (1, 2)
    assert "bogus" in res.stderr


def test_trace_convert_round_trip_and_run(tmp_path) -> None:
    # JSON -> binary -> JSON is byte for byte; run and validate take the
    # binary form and give the same results.json as from the JSON.
    src = tmp_path / "h.json"
    res = run_cli(["trace", "generate", "hogs", "--seed", "2", "-o", str(src), "--duration", "100ms"])
    assert res.returncode == 0, res.stderr
    binary = tmp_path / "h.agtb"
    res = run_cli(["trace", "convert", str(src), str(binary)])
    assert res.returncode == 0, res.stderr
    assert binary.read_bytes()[:8] == b"\x89AGTB\r\n\x1a"
    assert binary.stat().st_size < src.stat().st_size
    back = tmp_path / "back.json"
    res = run_cli(["trace", "convert", str(binary), str(back)])
    assert res.returncode == 0, res.stderr
    assert back.read_bytes() == src.read_bytes()
    res = run_cli(["trace", "validate", str(binary)])
    assert res.returncode == 0 and "valid" in res.stdout, res.stderr
    outs = []
    for name, trace in (("j", src), ("b", binary)):
        res = run_cli(["run", str(trace), "--policy", "cfs", "--out", str(tmp_path / name), "--quiet"])
        assert res.returncode == 0, res.stderr
        outs.append((tmp_path / name / "results.json").read_bytes())
    assert outs[0] == outs[1]
    # a binary file cut short: one line naming the file and the byte
    cut = tmp_path / "cut.agtb"
    cut.write_bytes(binary.read_bytes()[:20])
    res = run_cli(["trace", "validate", str(cut)])
    assert res.returncode == 1
    assert f"{cut}: /" in res.stderr and "binary trace, byte" in res.stderr
    res = run_cli(["trace", "convert", str(src), str(tmp_path / "wrong.json")])
    assert res.returncode == 2
    assert ".agtb" in res.stderr


def test_sweep_cli_writes_csv(tmp_path) -> None:
    out = tmp_path / "sw"
    res = run_cli(["sweep", "--generate", "hogs", "--gen", "cpus=2", "--gen", "duration=50ms",
                   "--grid", "machine.context_switch_ns=1000,50000", "--seeds", "1-2",
                   "--workers", "1", "--out", str(out)])
    assert res.returncode == 0, res.stderr
    import pandas as pd

    df = pd.read_csv(out / "sweep.csv")
    assert len(df) == 4
    assert sorted(df["machine.context_switch_ns"].unique()) == [1000, 50000]
    res = run_cli(["plot", str(out)])
    assert res.returncode == 0, res.stderr
    assert any(n.endswith(".png") for n in os.listdir(out / "plots"))


def test_policies_lists_both_kinds() -> None:
    res = run_cli(["policies"])
    assert res.returncode == 0
    assert "cpu cfs" in res.stdout and "gpu none" in res.stdout


def test_an_import_that_yields_nothing_fails(tmp_path) -> None:
    """An empty recording, or an --only-cgroup that matches no process, is an
    error (exit 1) naming the input, not an empty trace with exit 0; the
    cgroup error lists the recording's cgroups."""
    empty = tmp_path / "empty.txt"
    empty.write_text("# tracer: nop\n#\n")
    out = tmp_path / "t.json"
    r = run_cli(["trace", "import", "--from", "ftrace", str(empty), "-o", str(out)])
    assert r.returncode == 1, r.stderr
    assert f"{empty}: the import produced no processes" in r.stderr
    assert not out.exists()
    rec = os.path.join(REPO, "tests", "data", "recordings", "record_small")
    r = run_cli(["trace", "import", "--from", "agentcg-record", rec, "--only-cgroup", "/nope", "-o", str(out)])
    assert r.returncode == 1, r.stderr
    assert "--only-cgroup /nope matched no process" in r.stderr and "/a" in r.stderr
    assert not out.exists()
    r = run_cli(["trace", "import", "--from", "agentcg-record", rec, "--only-cgroup", "/a", "-o", str(out)])
    assert r.returncode == 0, r.stderr
    csv = tmp_path / "jobs.csv"
    csv.write_text("")
    r = run_cli(["trace", "import", "--from", "gpu-csv", str(csv), "-o", str(out)])
    assert r.returncode != 0 and "Traceback" not in r.stderr
