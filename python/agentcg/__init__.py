# SPDX-License-Identifier: GPL-2.0-only
"""agentcg: agent-aware CPU and GPU scheduling, driven from Python.

    import agentcg
    trace = agentcg.load_trace("traces/fork-storm.json")
    cmp = agentcg.compare(trace, policies=["cfs", "flatcg", "agentcg"])
    print(cmp.table())
    df = agentcg.sweep(agentcg.Generator("fork-storm", cpus=4, duration="2s"),
                       grid={"policy": ["flatcg", "agentcg"],
                             "scheduler.fork_storm_threshold": [8, 32]},
                       seeds=[1, 2])

The simulator itself is C++ (agentcg._core, built by CMake with
AGENTCG_BUILD_PYTHON=ON); this package is the typed public face over it:
traces (load, generate, build in code), run/compare/sweep, plots
(agentcg.plots), the HTML report (agentcg.report) and the CLI (agentcg.cli).
See python/README.md.
"""
from __future__ import annotations

try:
    from . import _core
except ImportError as _e:  # pragma: no cover - depends on the build
    raise ImportError(
        "agentcg._core is not built: configure with -DAGENTCG_BUILD_PYTHON=ON and build the "
        "target agentcg_core_py (it is copied into python/agentcg/); "
        f"original error: {_e}") from _e

from ._errors import AgentcgError, ConfigError, TraceError
from .api import (Comparison, Result, compare, cpu_policies, default_config, gpu_policies,
                  load_config, run)
from .sweep import Generator, sweep
from .traces import (Ops, ProcessBuilder, Template, Trace, TraceBuilder, as_trace, exponential,
                     generate, generator_help, load_trace, lognormal, ms, parse_duration,
                     parse_trace, s, uniform, us)

__version__: str = _core.__version__

__all__ = [
    "AgentcgError",
    "Comparison",
    "ConfigError",
    "Generator",
    "Ops",
    "ProcessBuilder",
    "Result",
    "Template",
    "Trace",
    "TraceBuilder",
    "TraceError",
    "__version__",
    "as_trace",
    "compare",
    "cpu_policies",
    "default_config",
    "exponential",
    "generate",
    "generator_help",
    "gpu_policies",
    "load_config",
    "load_trace",
    "lognormal",
    "ms",
    "parse_duration",
    "parse_trace",
    "run",
    "s",
    "sweep",
    "uniform",
    "us",
]
