# SPDX-License-Identifier: GPL-2.0-only
"""agentcg-sim's command line (sim/cli/main.cc on CLI11, config/cli.h): the
rules every agentcg C++ binary follows. `--help` lists every subcommand and
exits 0; a usage error exits 2, names the flag and offers the closest name
(options, commands, policies); the trace subcommands and calibrate get their
arguments untouched (their parsers are the libraries' that the Python CLI
calls too); run and compare write histograms.json beside results.json.
Needs $AGENTCG_SIM (CTest sets it); skipped otherwise.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import List

import pytest

SIM = os.environ.get("AGENTCG_SIM", "")
pytestmark = pytest.mark.skipif(not SIM or not os.path.exists(SIM),
                                reason="AGENTCG_SIM (the agentcg-sim binary) is not set: run through CTest")


def sim(args: List[str]) -> subprocess.CompletedProcess:
    return subprocess.run([SIM] + args, capture_output=True, text=True, timeout=120)


def test_help_lists_every_subcommand() -> None:
    top = sim(["--help"])
    assert top.returncode == 0, top.stderr
    for cmd in ("run", "compare", "trace", "calibrate", "policies"):
        assert f"\n  {cmd}" in top.stdout, cmd
    tr = sim(["trace", "--help"])
    assert tr.returncode == 0
    for cmd in ("generate", "validate", "import", "stats", "merge", "mix"):
        assert f"\n  {cmd}" in tr.stdout, cmd
    run = sim(["run", "--help"])
    assert run.returncode == 0 and "eevdf" in run.stdout and "--perfetto" in run.stdout
    # no command at all: the list, as a usage error
    bare = sim([])
    assert bare.returncode == 2 and "compare" in bare.stderr


@pytest.mark.parametrize("args, named, hint", [
    (["run", "T", "--out", "d", "--polciy", "eevdf"], "--polciy", "did you mean --policy?"),
    (["compar", "T"], "'compar'", "did you mean compare?"),
    (["run", "T", "--out", "d", "--policy", "agentgc"], "--policy", "did you mean agentcg?"),
    (["compare", "T", "--out", "d", "--policies", "eevdf,flatgc"], "--policies", "did you mean flatcg?"),
    (["run", "T", "--out", "d", "--gpu-policy", "nvshar"], "--gpu-policy", "did you mean nvshare?"),
    (["run", "T", "--out", "d", "--seed", "-5"], "--seed", "non-negative integer"),
    (["run", "T"], "--out", "required"),
    (["trace", "generat"], "'generat'", "did you mean generate?"),
])
def test_usage_errors_exit_2_naming_the_flag(args: List[str], named: str, hint: str) -> None:
    res = sim(args)
    assert res.returncode == 2, (args, res.stdout, res.stderr)
    first = res.stderr.splitlines()[0]
    assert first.startswith("agentcg-sim: error: ") and named in first and hint in first, first
    assert "--help" in res.stderr  # where to look next
    assert res.stdout == ""


def test_version() -> None:
    v = sim(["--version"])
    assert v.returncode == 0 and v.stdout.startswith("agentcg-sim ")


def test_gpu_policy_on_a_cpu_trace_is_a_usage_error(small_trace_path: str, tmp_path: Path) -> None:
    res = sim(["run", small_trace_path, "--out", str(tmp_path), "--gpu-policy", "nvshare"])
    assert res.returncode == 2 and "has no GPU jobs" in res.stderr, res.stderr
    assert not (tmp_path / "results.json").exists()


def test_trace_subcommands_get_their_arguments_in_order(tmp_path: Path) -> None:
    """The library parses them: its own --help, its options before or after
    the kind, its own errors."""
    h = sim(["trace", "generate", "--help"])
    assert h.returncode == 0 and "hogs" in h.stdout
    a = sim(["trace", "generate", "hogs", "--seed", "3", "--duration", "50ms", "-o", "-"])
    b = sim(["trace", "generate", "--seed", "3", "--duration=50ms", "hogs", "-o", "-"])
    assert a.returncode == 0 and b.returncode == 0, (a.stderr, b.stderr)
    assert a.stdout == b.stdout and json.loads(a.stdout)["duration_ns"] == 50_000_000
    bad = sim(["trace", "generate", "hogs", "-o"])
    assert bad.returncode == 2 and "-o needs a file name" in bad.stderr
    v = sim(["trace", "validate", "--help"])
    assert v.returncode == 0 and "validate" in v.stdout


def test_compare_writes_histograms_per_policy(small_trace_path: str, tmp_path: Path) -> None:
    res = sim(["compare", small_trace_path, "--policies", "eevdf,agentcg", "--out", str(tmp_path), "--quiet"])
    assert res.returncode == 0, res.stderr
    for pol in ("eevdf", "agentcg"):
        results = json.loads((tmp_path / pol / "results.json").read_text())
        hist = json.loads((tmp_path / pol / "histograms.json").read_text())
        assert hist["format"] == "agentcg-histograms" and "histograms" not in results
        assert hist["wakeup_latency_ns"]["count"] == results["wakeup_latency_ns"]["count"]
        leaves = [p for p, c in results["cgroups"].items() if c["wakeup_latency_ns"]["count"]]
        assert set(leaves) == set(hist["cgroups"]), pol


def table_of(stdin: str, *args: str) -> subprocess.CompletedProcess:
    """python3 -m agentcg.table ARGS - < stdin, as the ./agentcg launcher runs it without the extension."""
    env = dict(os.environ)
    pydir = str(Path(__file__).resolve().parents[2] / "python")
    env["PYTHONPATH"] = pydir + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.run(["/usr/bin/python3", "-m", "agentcg.table", *args], input=stdin, capture_output=True,
                          text=True, timeout=120, env=env)


def test_the_engine_prints_no_table_of_its_own_and_feeds_the_one_table(small_trace_path: str,
                                                                       tmp_path: Path) -> None:
    plain = sim(["compare", small_trace_path, "--policies", "agentcg,eevdf", "--out", str(tmp_path)])
    assert plain.returncode == 0, plain.stderr
    assert "wakeup" not in plain.stdout and "python3 -m agentcg.table " + str(tmp_path) in plain.stdout
    doc = sim(["compare", small_trace_path, "--policies", "agentcg,eevdf", "--out", str(tmp_path), "--json"])
    assert doc.returncode == 0, doc.stderr
    piped = table_of(doc.stdout, "-")
    assert piped.returncode == 0, piped.stderr
    lines = piped.stdout.splitlines()
    assert "baseline eevdf" in lines[0]
    assert lines[1].split()[-2:] == ["eevdf", "agentcg"]  # the baseline's column first
    assert any(l.startswith("wakeup latency p99") for l in lines)
    # the same table from the folder the engine wrote
    on_disk = table_of("", str(tmp_path))
    assert on_disk.returncode == 0 and on_disk.stdout == piped.stdout
    one = sim(["run", small_trace_path, "--policy", "eevdf", "--out", str(tmp_path / "one"), "--json"])
    summary = table_of(one.stdout, "-")
    assert summary.returncode == 0 and summary.stdout.startswith("trace ") and "policy eevdf" in summary.stdout


def test_the_table_names_what_it_cannot_read(tmp_path: Path) -> None:
    bad = table_of('{"format": "x"}', "-")
    assert bad.returncode == 1 and "<stdin>: expected a results.json document" in bad.stderr
    broken = tmp_path / "results.json"
    broken.write_text("{\n  oops")
    res = table_of("", str(broken))
    assert res.returncode == 1 and f"{broken}:2: not JSON" in res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("args, hint", [
    (["trace", "generate", "hogs", "--wieghts", "1,2", "-o", "-"], "unknown option --wieghts (did you mean --weights?)"),
    (["trace", "generate", "hogz", "-o", "-"], "unknown generator kind \"hogz\" (did you mean hogs?)"),
    (["trace", "import", "--frm", "ftrace", "x.txt", "-o", "-"], "unknown option --frm (did you mean --from?)"),
    (["trace", "merge", "a.json", "--stager", "1s", "-o", "-"], "unknown option --stager (did you mean --stagger?)"),
    (["trace", "validate", "--polcy", "agentcg", "x.json"], "unknown option --polcy (did you mean --policy?)"),
    (["calibrate", "m.csv", "--cpu", "4", "-o", "-"], "unknown option --cpu (did you mean --cpus?)"),
])
def test_library_commands_name_the_closest_option(args: List[str], hint: str) -> None:
    """trace import/merge/mix/stats and calibrate read their arguments with
    sim/args.h (on CLI11), generate and validate with their own loop: each
    names the closest option or kind."""
    res = sim(args)
    assert res.returncode == 2, (args, res.stderr)
    assert hint in res.stderr, res.stderr
