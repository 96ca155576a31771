# SPDX-License-Identifier: GPL-2.0-only
"""Sweeps: the grid x seeds expansion, a local process pool giving the same
rows as a serial run, and a Dask LocalCluster (started here) giving the
same numbers as the pool.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pandas as pd
import pytest

import agentcg
from agentcg import Generator
from agentcg.sweeps import sweep_tasks

GEN = Generator("hogs", cpus=2, duration="60ms", weights="100,300")
GRID = {"policy": ["cfs", "fifo"], "machine.context_switch_ns": [1000, 40000]}


def test_tasks_cross_product_and_validation(small_trace) -> None:
    tasks = sweep_tasks(GEN, GRID, seeds=[1, 2, 3])
    assert len(tasks) == 2 * 2 * 3
    assert [t["index"] for t in tasks] == list(range(12))
    assert tasks[0]["params"] == {"policy": "cfs", "machine.context_switch_ns": 1000}
    with pytest.raises(agentcg.AgentcgError, match="unknown config key in grid 'machine.bogus'"):
        sweep_tasks(GEN, {"machine.bogus": [1]})
    with pytest.raises(agentcg.ConfigError):  # a known key, a bad value: the loader's error
        sweep_tasks(GEN, {"machine.speed_pct": [-5]})
    with pytest.raises(ValueError, match="bogus"):
        sweep_tasks(Generator("hogs", bogus=3), {}, seeds=[1])
    with pytest.raises(agentcg.AgentcgError, match="gen"):
        sweep_tasks(small_trace, {"gen.cpus": [1, 2]})
    with pytest.raises(agentcg.AgentcgError, match="no values"):
        sweep_tasks(GEN, {"policy": []})


def test_pool_equals_serial_and_grid_matters() -> None:
    serial = agentcg.sweep(GEN, GRID, seeds=[1, 2], workers=1)
    pool = agentcg.sweep(GEN, GRID, seeds=[1, 2], workers=2)
    pd.testing.assert_frame_equal(serial, pool)
    assert len(pool) == 8
    assert list(pool.columns[:3]) == ["policy", "machine.context_switch_ns", "seed"]
    # A 40x costlier context switch must change the outcome of the same point.
    cheap = pool[(pool["policy"] == "cfs") & (pool["machine.context_switch_ns"] == 1000)]
    dear = pool[(pool["policy"] == "cfs") & (pool["machine.context_switch_ns"] == 40000)]
    assert not cheap["context_switches"].reset_index(drop=True).equals(
        dear["context_switches"].reset_index(drop=True)) or not cheap["cpu_utilization"].reset_index(
        drop=True).equals(dear["cpu_utilization"].reset_index(drop=True))


def test_generator_options_on_the_grid() -> None:
    df = agentcg.sweep(Generator("hogs", cpus=2, duration="40ms"),
                       {"gen.weights": ["100,100", "100,900"]}, seeds=[1], workers=1)
    assert list(df["gen.weights"]) == ["100,100", "100,900"]
    even = df.iloc[0]
    skew = df.iloc[1]
    # 40 ms is a few CFS periods: equal weights stay within 1.5x, 1:9 is far apart.
    assert even["cpu_share[/hog-0]"] < 1.5 * even["cpu_share[/hog-1]"]
    assert even["cpu_share[/hog-1]"] < 1.5 * even["cpu_share[/hog-0]"]
    assert skew["cpu_share[/hog-1]"] > 3 * skew["cpu_share[/hog-0]"]


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_dask_local_cluster_matches_pool() -> None:
    distributed = pytest.importorskip("distributed")
    pool = agentcg.sweep(GEN, GRID, seeds=[1, 2], workers=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", silence_logs=50) as cluster:
        with distributed.Client(cluster) as client:
            via_client = agentcg.sweep(GEN, GRID, seeds=[1, 2], scheduler=client)
        via_address = agentcg.sweep(GEN, GRID, seeds=[1, 2], scheduler=cluster.scheduler_address)
    pd.testing.assert_frame_equal(pool, via_client)
    pd.testing.assert_frame_equal(pool, via_address)


def test_sweep_from_a_plain_script_without_main_guard(tmp_path) -> None:
    """The README's sweep pasted into a .py file with no __main__ guard: the
    pool's workers must not re-run the script (BrokenProcessPool before)."""
    from conftest import PYDIR

    script = tmp_path / "plain.py"
    script.write_text(
        "import agentcg\n"
        "df = agentcg.sweep(agentcg.Generator('hogs', cpus=2, duration='50ms'),\n"
        "                   grid={'policy': ['eevdf', 'agentcg']}, seeds=[1, 2], workers=2)\n"
        "print('rows', len(df))\n")
    env = dict(os.environ, PYTHONPATH=PYDIR, MPLBACKEND="Agg")
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300,
                         cwd=str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["rows 4"]  # printed once: the workers did not run the script


def test_a_knob_the_policy_does_not_read_is_reported() -> None:
    gen = agentcg.Generator("hogs", cpus=2, duration="300ms")
    with pytest.warns(UserWarning, match=r"'scheduler.base_slice_ms' changed no result under eevdf"):
        df = agentcg.sweep(gen, grid={"policy": ["eevdf"], "scheduler.base_slice_ms": [3, 50]},
                           seeds=[1], workers=1)
    assert len(df) == 2
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # agentcg reads it: no warning
        agentcg.sweep(gen, grid={"policy": ["agentcg"], "scheduler.base_slice_ms": [3, 50]},
                      seeds=[1], workers=1)
