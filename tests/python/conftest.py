# SPDX-License-Identifier: GPL-2.0-only
"""Shared fixtures of the Python suite: small traces (a few hundred ms of
simulated time on 2 CPUs, so each run takes milliseconds), the repository
root, and a helper running the CLI in a subprocess exactly as ./agentcg does.
"""
from __future__ import annotations

import os
import subprocess
import sys
from typing import List, Sequence

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _package_dir() -> str:
    """The directory holding the agentcg package to test: the first PYTHONPATH
    entry that has one (CTest sets the build's: python/ for the ci preset,
    build/sanitize/python/pkg for the sanitize preset, whose ASan-built
    extension must not replace the source tree's), else python/."""
    for d in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if d and os.path.isfile(os.path.join(d, "agentcg", "__init__.py")):
            return os.path.abspath(d)
    return os.path.join(REPO, "python")


PYDIR = _package_dir()


def build_under_test() -> "str | None":
    """The build directory under test: the one whose agentcg-sim CTest names
    in AGENTCG_SIM (BUILD/sim/agentcg-sim), or None outside CTest."""
    sim = os.environ.get("AGENTCG_SIM")
    return os.path.dirname(os.path.dirname(os.path.realpath(sim))) if sim else None
if PYDIR not in sys.path:
    sys.path.insert(0, PYDIR)

import agentcg  # noqa: E402
from agentcg import TraceBuilder, exponential, ms  # noqa: E402


def build_small(name: str = "small", duration_ms: int = 300) -> TraceBuilder:
    """Two weighted hog groups, an I/O-bound task and an agent with tool calls."""
    b = TraceBuilder(name, cpus=2, duration_ns=ms(duration_ms), description="pytest trace")
    b.cgroup("/hogs", cpu_weight=100)
    b.cgroup("/hogs/a", cpu_weight=100)
    b.cgroup("/hogs/b", cpu_weight=300)
    b.cgroup("/io", cpu_weight=100)
    b.cgroup("/agent", cpu_weight=100)
    for cg in ("/hogs/a", "/hogs/b"):
        for _ in range(2):
            b.process(cgroup=cg, comm="hog").run(ms(duration_ms))
    b.process(cgroup="/io", comm="io").repeat(200, lambda o: o.run(300_000).io(exponential(ms(2))))
    agent = b.process(cgroup="/agent", comm="agent", session="s1")
    for step in range(1, 4):
        agent.step(step).sleep(ms(20)).tool("Bash", lambda o: o.run(ms(5)).io(ms(1)).run(ms(3)))
    return b


@pytest.fixture(scope="session")
def repo() -> str:
    return REPO


@pytest.fixture(scope="session")
def small_builder() -> TraceBuilder:
    return build_small()


@pytest.fixture(scope="session")
def small_trace(small_builder: TraceBuilder) -> "agentcg.Trace":
    return small_builder.build()


@pytest.fixture(scope="session")
def small_trace_path(tmp_path_factory: pytest.TempPathFactory, small_trace: "agentcg.Trace") -> str:
    p = tmp_path_factory.mktemp("traces") / "small.json"
    small_trace.write(str(p))
    return str(p)


def run_cli(args: List[str], cwd: str = REPO, timeout: float = 300,
            python_flags: Sequence[str] = ()) -> subprocess.CompletedProcess:
    """`python3 -m agentcg.cli ARGS` as the ./agentcg launcher runs it
    (python_flags: the interpreter's own, e.g. -S as the launcher gives `run`)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = PYDIR + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["MPLBACKEND"] = "Agg"
    return subprocess.run([sys.executable, *python_flags, "-m", "agentcg.cli"] + args, cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def policies(*wanted: str) -> List[str]:
    """The wanted CPU policies that this build has (flatcg/agentcg land later)."""
    have = agentcg.cpu_policies()
    return [p for p in wanted if p in have]
