# SPDX-License-Identifier: GPL-2.0-only
"""Parameter sweeps: many simulations in parallel, one DataFrame out.

(The module is `sweeps`, not `sweep`: the package's lazy attribute
`agentcg.sweep` is the function, and a submodule of the same name would
replace it on the package as soon as anything imported the module.)

    df = sweep(Generator("fork-storm", cpus=4, duration="2s"),
               grid={"policy": ["flatcg", "agentcg"],
                     "scheduler.fork_storm_threshold": [8, 16, 32],
                     "gen.storm_rate": [200, 500]},
               seeds=[1, 2, 3])

Grid keys: "policy" and "gpu_policy" pick policies; "gen.<option>" sets a
generator option (when sweeping a Generator); any other key is a dotted
config key merged over `config`. The cross product of the grid times the
seeds is run, each point on a worker: a local process pool by default
(`workers`, default = CPU count; 1 = in this process), or a Dask cluster when
`scheduler` is its address ("tcp://host:8786") or a distributed.Client.

Invariants: rows come back in task order (grid in key order, then seeds)
whatever finishes first, and each point's numbers depend only on its inputs,
so the pool, Dask and a serial run give identical DataFrames. A Generator is
regenerated per seed on the worker (the seed drives both the trace and the
run); a fixed trace is shipped to workers as its canonical JSON (pickled).

From a plain script: the local pool's workers start from a fork server,
which by default re-imports the script's __main__ module (and would run its
top-level sweep() again: BrokenProcessPool without an
`if __name__ == "__main__":` guard). The workers need nothing from
__main__ (tasks are plain data, the work function lives here), so the pool
is started with __main__'s file hidden and a script works as written.

A grid key that changes no result at all (a scheduler.* knob under eevdf,
which does not read it) is reported with a warning naming the key and the
policies, instead of silently producing identical rows.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import sys
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from . import _core
from ._errors import AgentcgError
from .api import ConfigLike, Result, config_yaml
from .traces import TraceLike, as_trace

if TYPE_CHECKING:
    import pandas

__all__ = ["Generator", "sweep", "sweep_tasks"]


@dataclass(frozen=True)
class Generator:
    """A trace generator kind and its options, regenerated for every seed."""

    kind: str
    options: Dict[str, Any] = field(default_factory=dict)

    def __init__(self, kind: str, options: Optional[Mapping[str, Any]] = None, **kw: Any) -> None:
        merged = dict(options or {})
        merged.update(kw)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "options", merged)

    def make(self, seed: int, extra: Optional[Mapping[str, Any]] = None) -> "_core.Trace":
        opts = dict(self.options)
        opts.update(extra or {})
        return _core.generate(self.kind, int(seed),
                              {str(k).replace("_", "-"): str(v) for k, v in opts.items()})


def _run_task(task: Dict[str, Any]) -> Dict[str, Any]:
    """One sweep point (runs on a worker; must stay importable and picklable)."""
    gen = task.get("generator")
    if gen is not None:
        trace = Generator(gen[0], gen[1]).make(task["seed"], task["gen_options"])
    else:
        trace = task["trace"]
    text = _core.run(trace, task["policy"], task["gpu_policy"], task["seed"], task["config_path"],
                     task["config_yaml"], task["config_source"], "")
    row: Dict[str, Any] = dict(task["params"])
    row["seed"] = task["seed"]
    row.update(Result(text).summary())
    return row


def sweep_tasks(trace_or_generator: Union[TraceLike, Generator], grid: Optional[Mapping[str, Sequence[Any]]] = None,
                seeds: Sequence[int] = (1,), policies: Optional[Sequence[str]] = None,
                gpu_policies: Optional[Sequence[str]] = None, config: ConfigLike = None
                ) -> List[Dict[str, Any]]:
    """The list of picklable tasks a sweep runs (exposed for benchmarks)."""
    g: Dict[str, List[Any]] = {k: list(v) for k, v in (grid or {}).items()}
    if policies is not None:
        if "policy" in g:
            raise AgentcgError("sweep: give policies either as policies= or as grid['policy'], not both")
        g = {"policy": list(policies), **g}
    if gpu_policies is not None:
        if "gpu_policy" in g:
            raise AgentcgError("sweep: give gpu_policies either as gpu_policies= or grid['gpu_policy']")
        g = {"gpu_policy": list(gpu_policies), **g}
    for k, v in g.items():
        if not v:
            raise AgentcgError(f"sweep: grid key '{k}' has no values")
    if not seeds:
        raise AgentcgError("sweep: no seeds given")
    is_gen = isinstance(trace_or_generator, Generator)
    if not is_gen and any(k.startswith("gen.") for k in g):
        raise AgentcgError("sweep: 'gen.*' grid keys need a Generator, not a fixed trace")
    trace = None if is_gen else as_trace(trace_or_generator)  # type: ignore[arg-type]
    if is_gen:
        gen = trace_or_generator
        assert isinstance(gen, Generator)
        # Fail early, in this process, on an unknown kind or option.
        gen.make(int(seeds[0]), {k[4:]: v[0] for k, v in g.items() if k.startswith("gen.")})
    from .api import check_config_keys, check_policy, check_seed

    for k, v in g.items():
        if k == "policy":
            for pol in v:
                check_policy(str(pol))
        elif k == "gpu_policy":
            for pol in v:
                check_policy("eevdf", str(pol))
        elif not k.startswith("gen."):
            check_config_keys({k: v[0]}, "grid")
    for seed in seeds:
        check_seed(seed)
    keys = list(g)
    tasks: List[Dict[str, Any]] = []
    for values in itertools.product(*[g[k] for k in keys]):
        params = dict(zip(keys, values))
        overrides = {k: v for k, v in params.items()
                     if k not in ("policy", "gpu_policy") and not k.startswith("gen.")}
        cpath, ctext, csource = config_yaml(config, overrides or None)
        if ctext:  # validate once here rather than failing on every worker
            _core.load_config_string(ctext, csource)
        for seed in seeds:
            task: Dict[str, Any] = {
                "index": len(tasks), "params": params, "seed": int(seed),
                "policy": str(params.get("policy", "eevdf")),
                "gpu_policy": str(params.get("gpu_policy", "none")),
                "config_path": cpath, "config_yaml": ctext, "config_source": csource,
                "gen_options": {k[4:]: v for k, v in params.items() if k.startswith("gen.")},
            }
            if is_gen:
                assert isinstance(trace_or_generator, Generator)
                task["generator"] = (trace_or_generator.kind, dict(trace_or_generator.options))
            else:
                task["trace"] = trace
            tasks.append(task)
    return tasks


def _dataframe(rows: List[Dict[str, Any]]) -> "pandas.DataFrame":
    import pandas as pd

    return pd.DataFrame(rows)


def sweep(trace_or_generator: Union[TraceLike, Generator], grid: Optional[Mapping[str, Sequence[Any]]] = None,
          seeds: Sequence[int] = (1,), policies: Optional[Sequence[str]] = None,
          gpu_policies: Optional[Sequence[str]] = None, config: ConfigLike = None,
          workers: Optional[int] = None, scheduler: Any = None, progress: bool = False
          ) -> "pandas.DataFrame":
    """Runs the grid x seeds; returns one row per point (params, seed, metrics)."""
    tasks = sweep_tasks(trace_or_generator, grid, seeds, policies, gpu_policies, config)
    if scheduler is not None:
        rows = _run_dask(tasks, scheduler, progress)
    else:
        rows = _run_local(tasks, workers, progress)
    df = _dataframe(rows)
    _warn_inert_keys(df, tasks)
    return df


def inert_keys(df: "pandas.DataFrame", tasks: Sequence[Mapping[str, Any]]) -> List[str]:
    """Grid config keys whose values changed no metric of any point (every
    other parameter and the seed held fixed)."""
    if not tasks:
        return []
    params = list(tasks[0]["params"])
    knobs = [k for k in params if k not in ("policy", "gpu_policy") and not k.startswith("gen.")]
    metrics = [c for c in df.columns if c not in params and c != "seed"]
    out = []
    for k in knobs:
        if df[k].nunique(dropna=False) < 2:
            continue
        others = [c for c in params if c != k] + ["seed"]
        by: Any = others[0] if len(others) == 1 else others  # a 1-list warns in pandas 1.5
        groups = df.groupby(by, dropna=False, sort=False)
        if all((g[metrics].astype(str).nunique(dropna=False) <= 1).all() for _, g in groups):
            out.append(k)
    return out


def _warn_inert_keys(df: "pandas.DataFrame", tasks: Sequence[Mapping[str, Any]]) -> None:
    for k in inert_keys(df, tasks):
        pols = sorted({str(t["policy"]) for t in tasks})
        hint = (" (scheduler.* are flatcg/agentcg tunables: sweep with grid={'policy': ['agentcg', ...]})"
                if k.startswith("scheduler.") and not set(pols) & {"flatcg", "agentcg"} else "")
        warnings.warn(f"sweep: '{k}' changed no result under {', '.join(pols)}: the policy does not read "
                      f"this knob, or it makes no difference on this trace{hint}", UserWarning, stacklevel=3)


@contextlib.contextmanager
def _main_hidden() -> Any:
    """Hides __main__'s file and spec while pool workers start, so the fork
    server does not re-run a plain script's top level (see the module doc)."""
    main = sys.modules.get("__main__")
    saved = {}
    if main is not None:
        for attr in ("__file__", "__spec__"):
            if hasattr(main, attr):
                saved[attr] = getattr(main, attr)
        if "__file__" in saved:
            del main.__file__
        if "__spec__" in saved:
            main.__spec__ = None
    try:
        yield
    finally:
        if main is not None:
            for attr, v in saved.items():
                setattr(main, attr, v)


# The backends run `fn` (default: one sweep point) over tasks that carry an
# "index"; agentcg.fleet passes its per-host function.
TaskFn = Callable[[Dict[str, Any]], Dict[str, Any]]


def _run_local(tasks: List[Dict[str, Any]], workers: Optional[int], progress: bool,
               fn: Optional[TaskFn] = None, desc: str = "sweep") -> List[Dict[str, Any]]:
    fn = fn or _run_task
    from .progress import bar

    n = workers if workers is not None else (os.cpu_count() or 1)
    if n < 1:
        raise AgentcgError(f"sweep: workers must be >= 1, got {n}")
    rows: List[Optional[Dict[str, Any]]] = [None] * len(tasks)
    pbar = bar(total=len(tasks), desc=desc, unit="sim") if progress else None
    try:
        if n == 1 or len(tasks) == 1:
            for t in tasks:
                rows[t["index"]] = fn(t)
                if pbar is not None:
                    pbar.update(1)
        else:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor, as_completed

            # forkserver: workers start from a clean, single-threaded server
            # (fork from a process running Dask or tqdm threads can deadlock).
            ctx = multiprocessing.get_context("forkserver")
            with _main_hidden(), ProcessPoolExecutor(max_workers=min(n, len(tasks)), mp_context=ctx) as ex:
                futs = {ex.submit(fn, t): t["index"] for t in tasks}
                for f in as_completed(futs):
                    rows[futs[f]] = f.result()
                    if pbar is not None:
                        pbar.update(1)
    finally:
        if pbar is not None:
            pbar.close()
    return [r for r in rows if r is not None]


def _run_dask(tasks: List[Dict[str, Any]], scheduler: Any, progress: bool,
              fn: Optional[TaskFn] = None, desc: str = "sweep") -> List[Dict[str, Any]]:
    from distributed import Client, as_completed

    from .progress import bar

    own = not isinstance(scheduler, Client)
    client = Client(scheduler) if own else scheduler
    try:
        futs = client.map(fn or _run_task, tasks, pure=False)
        if progress:
            pbar = bar(total=len(futs), desc=f"{desc} (dask)", unit="sim")
            for _ in as_completed(futs):
                pbar.update(1)
            pbar.close()
        rows = client.gather(futs)
    finally:
        if own:
            client.close()
    return list(rows)
