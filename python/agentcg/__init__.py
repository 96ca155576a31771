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

import importlib
import sys


class _SiteOnDemand:
    """Started with `python3 -S` (the launcher does so for `./agentcg run`,
    issue 21: the site module and the .pth files of the system's packages
    are ~2 ms of start-up a run without a third-party module does not
    need), the first import that nothing else finds runs site.main(),
    which the interpreter would have run at start-up, and is looked up
    again: `import yaml` (a --machine profile laid over a --config file)
    works as without -S."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> Any:
        if path is not None:  # a submodule: its package was found already
            return None
        sys.meta_path.remove(_SiteOnDemand)  # once
        import site
        from importlib.machinery import PathFinder

        site.main()
        return PathFinder.find_spec(name)


if sys.flags.no_site and _SiteOnDemand not in sys.meta_path:
    sys.meta_path.append(_SiteOnDemand)

TYPE_CHECKING = False  # typing is imported by static checkers only: ~2.5 ms of start-up (issue 21)
if TYPE_CHECKING:
    from typing import Any

# PEP 562 lazy attributes: `import agentcg` (and so `python3 -m agentcg.cli`,
# which imports the package first) loads no submodule; each public name
# imports its module on first use. The CLI's start-up (issue 21: <= 25 ms
# for `./agentcg run`) then pays only for what a command uses.
_LAZY = {
    "AgentcgError": "_errors", "ConfigError": "_errors", "TraceError": "_errors",
    "Comparison": "api", "Result": "api", "compare": "api", "cpu_policies": "api",
    "default_config": "api", "gpu_policies": "api", "load_config": "api", "run": "api",
    "Generator": "sweeps", "sweep": "sweeps",
    "Ops": "traces", "ProcessBuilder": "traces", "Template": "traces", "Trace": "traces",
    "TraceBuilder": "traces", "as_trace": "traces", "exponential": "traces", "generate": "traces",
    "generator_help": "traces", "load_trace": "traces", "lognormal": "traces", "ms": "traces",
    "parse_duration": "traces", "parse_trace": "traces", "s": "traces", "uniform": "traces",
    "us": "traces",
}


def _core_module() -> Any:
    try:
        return importlib.import_module("._core", __name__)
    except ImportError as e:  # pragma: no cover - depends on the build
        raise ImportError(
            "agentcg._core is not built: configure with -DAGENTCG_BUILD_PYTHON=ON and build the "
            "target agentcg_core_py (it is copied into python/agentcg/); "
            f"original error: {e}") from e


def __getattr__(name: str) -> Any:
    if name == "__version__":
        v: str = _core_module().__version__
        globals()[name] = v
        return v
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _core_module()  # the clear "not built" message before any submodule's own import of it
    value = getattr(importlib.import_module("." + mod, __name__), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list:
    return sorted(list(globals()) + list(_LAZY) + ["__version__"])


if TYPE_CHECKING:  # static checkers see the eager names
    from ._errors import AgentcgError, ConfigError, TraceError
    from .api import (Comparison, Result, compare, cpu_policies, default_config, gpu_policies,
                      load_config, run)
    from .sweeps import Generator, sweep
    from .traces import (Ops, ProcessBuilder, Template, Trace, TraceBuilder, as_trace, exponential,
                         generate, generator_help, load_trace, lognormal, ms, parse_duration,
                         parse_trace, s, uniform, us)

    __version__: str

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
