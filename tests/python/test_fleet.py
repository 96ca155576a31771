# SPDX-License-Identifier: GPL-2.0-only
"""Fleet runs (agentcg.fleet): hosts split the sessions, the merged fleet
percentiles equal those of one histogram over every host's samples, a
process pool and a local Dask cluster write byte-identical fleet.json, and
the CLI subcommand writes its files and rejects bad arguments.
"""
from __future__ import annotations

import json
import pytest

import agentcg
from agentcg import Generator, _core
from agentcg.fleet import fleet_tasks, run_fleet
from conftest import run_cli

GEN = Generator("agent", cpus=2, duration="2s", stagger="200ms", think="lognormal:100ms:0.5")


def test_tasks_split_sessions_and_seed_per_host() -> None:
    tasks = fleet_tasks(3, GEN, sessions=8, seed=5)
    assert [t["generator"][1]["sessions"] for t in tasks] == [3, 3, 2]
    assert [t["seed"] for t in tasks] == [5, 6, 7]
    assert [t["host"] for t in tasks] == ["host-0", "host-1", "host-2"]
    with pytest.raises(agentcg.AgentcgError, match="cannot fill"):
        fleet_tasks(4, GEN, sessions=3)
    with pytest.raises(agentcg.AgentcgError, match="generator"):
        fleet_tasks(2)
    with pytest.raises(ValueError, match="bogus"):
        fleet_tasks(2, Generator("agent", bogus=1))


def test_fleet_merge_equals_one_histogram_of_all_hosts() -> None:
    fs = run_fleet(3, GEN, sessions=6, workers=1)
    fl = fs.fleet
    assert fl["hosts"] == 3 and fl["sessions"] == 6 and len(fl["per_host"]) == 3
    # Hosts differ (own seeds), and the fleet counts are the hosts' sums.
    assert len({json.dumps(h["wakeup_latency_ns"]) for h in fl["per_host"]}) == 3
    assert fl["wakeup_latency_ns"]["count"] == sum(h["wakeup_latency_ns"]["count"] for h in fl["per_host"])
    assert fl["tasks"] == sum(h["tasks"] for h in fl["per_host"])
    # The fleet max is the hosts' max; p50 lies within the hosts' p50 range.
    w = [h["wakeup_latency_ns"] for h in fl["per_host"]]
    assert fl["wakeup_latency_ns"]["max"] == max(x["max"] for x in w)
    assert min(x["p50"] for x in w) <= fl["wakeup_latency_ns"]["p50"] <= max(x["max"] for x in w)
    # Each host's summary is its own results.json's (one definition), and
    # merging the hosts' histograms in reverse order gives the fleet figures.
    hists = []
    for i, t in enumerate(fleet_tasks(3, GEN, sessions=6)):
        r = json.loads(_core.run(Generator(*t["generator"]).make(t["seed"]), "cfs", "none", t["seed"],
                                 histograms=True))
        assert fl["per_host"][i]["wakeup_latency_ns"] == r["wakeup_latency_ns"]
        hists.append(json.dumps(r["histograms"]["wakeup_latency_ns"]))
    again = json.loads(_core.merge_histograms(hists[::-1]))
    assert again["summary"] == fl["wakeup_latency_ns"]
    assert again["histogram"] == fl["histograms"]["wakeup_latency_ns"]


def test_merge_histograms_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="histogram 0: not JSON"):
        _core.merge_histograms(["{"])
    with pytest.raises(ValueError, match="histogram 1: histogram field 'count'"):
        _core.merge_histograms(['{"count":0,"sum":"0","min":0,"max":0,"samples":[]}',
                                '{"count":2,"sum":"3","min":1,"max":2,"samples":[1]}'])


def test_pool_equals_serial_bytes() -> None:
    a = run_fleet(4, GEN, sessions=8, workers=1).fleet_json()
    b = run_fleet(4, GEN, sessions=8, workers=2).fleet_json()
    assert a == b


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_dask_local_cluster_bytes_equal_pool() -> None:
    pytest.importorskip("distributed")
    pool = run_fleet(4, GEN, sessions=8, workers=2)
    dask = run_fleet(4, GEN, sessions=8, dask_local=2)
    assert dask.fleet_json() == pool.fleet_json()
    assert dask.run["backend"].startswith("dask")


def test_cli_fleet(tmp_path, small_trace_path) -> None:
    out = tmp_path / "fl"
    res = run_cli(["fleet", "--generate", "agent", "--hosts", "2", "--sessions", "4", "--gen", "cpus=2",
                   "--gen", "duration=1s", "--workers", "1", "--out", str(out), "--quiet"])
    assert res.returncode == 0, res.stderr
    fl = json.loads((out / "fleet.json").read_text())
    assert fl["hosts"] == 2 and fl["format"] == "agentcg-fleet"
    assert json.loads((out / "run.json").read_text())["per_worker"]
    # Trace files: one host each (the same trace twice: the same figures).
    res = run_cli(["fleet", small_trace_path, small_trace_path, "--workers", "1",
                   "--out", str(tmp_path / "f2"), "--quiet"])
    assert res.returncode == 0, res.stderr
    fl2 = json.loads((tmp_path / "f2" / "fleet.json").read_text())
    assert fl2["hosts"] == 2
    assert fl2["per_host"][0]["wakeup_latency_ns"] == fl2["per_host"][1]["wakeup_latency_ns"]
    res = run_cli(["fleet", "--generate", "agent", "--out", str(tmp_path / "f3")])
    assert res.returncode == 2 and "--hosts" in res.stderr
