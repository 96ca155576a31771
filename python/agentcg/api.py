# SPDX-License-Identifier: GPL-2.0-only
"""run() and compare(): simulations from Python, results as Python objects.

`run(trace, policy=..., gpu_policy=..., config=..., seed=...)` calls the C++
simulator (agentcg._core.run, GIL released) and returns a Result: the
results.json document (dict access, `result["jain_fairness"]`), its exact
text (`result.text`, byte-identical to what the C++ CLI writes for the same
trace, config and seed), and tables: `cgroups()` (one row per cgroup),
`series()` (CPU share per interval and cgroup), `gpu_jobs()`, `gpu_clients()`,
`schedule()` (task slices per CPU, when run with schedule=True), and
`latency_cdf()`: the distribution of every wakeup (tool-call) latency
sample, from the machine's LatencyHistogram that run() keeps beside the
results (`Result.histograms`; saved as histograms.json next to
results.json, which stays byte-identical to the C++ CLI's).

Config: None (defaults), a path to a YAML file (errors keep file:line), a
dict of sections ({"scheduler": {"fork_storm_threshold": 16}}), or a dict of
dotted keys ({"scheduler.fork_storm_threshold": 16}); `overrides` merges
dotted keys over a file. Invariant: the same inputs give the same Result text.
Who uses it: the CLI, sweeps (agentcg.sweep), plots, report, notebooks.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping

from . import _core
from ._errors import AgentcgError, unknown_name
from .traces import as_trace

TYPE_CHECKING = False  # typing is imported by static checkers only: ~2.5 ms of start-up (issue 21)
if TYPE_CHECKING:  # pandas/numpy are imported lazily: sweep workers stay light.
    from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

    import numpy
    import pandas

    from .traces import TraceLike

    ConfigLike = Union[None, str, "os.PathLike[str]", Mapping[str, Any]]


def __getattr__(name: str) -> Any:
    """ConfigLike, built on first use (it needs typing; see TYPE_CHECKING)."""
    if name == "ConfigLike":
        from typing import Any, Union

        alias = Union[None, str, "os.PathLike[str]", Mapping[str, Any]]
        globals()[name] = alias
        return alias
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "Comparison",
    "ConfigLike",
    "Result",
    "compare",
    "config_yaml",
    "cpu_policies",
    "default_config",
    "gpu_policies",
    "load_config",
    "run",
]

LATENCY_KEYS = ("count", "p50", "p90", "p99", "p999", "max", "mean")
HISTOGRAMS_FILE = "histograms.json"  # beside results.json: the machine's latency histograms


def cpu_policies() -> List[str]:
    """The simulator's CPU policies (cfs, fifo, flatcg, agentcg, ...)."""
    return list(_core.cpu_policies())


def gpu_policies() -> List[str]:
    """The simulator's GPU policies ("none" first)."""
    return list(_core.gpu_policies())


def default_config() -> Dict[str, Any]:
    """The defaults of the simulator's config sections, as nested dicts."""
    return dict(_core.default_config())


# --- config -------------------------------------------------------------------

def _nest(flat: Mapping[str, Any]) -> Dict[str, Any]:
    """{"scheduler.features.fork_aware": False} -> nested dicts."""
    out: Dict[str, Any] = {}
    for key, val in flat.items():
        parts = str(key).split(".")
        node = out
        for part in parts[:-1]:
            nxt = node.setdefault(part, {})
            if not isinstance(nxt, dict):
                raise AgentcgError(f"config key '{key}': '{part}' is both a value and a section")
            node = nxt
        if isinstance(val, Mapping):
            node.setdefault(parts[-1], {})
            _merge(node[parts[-1]], _nest(val))
        else:
            node[parts[-1]] = val
    return out


def _merge(base: Dict[str, Any], over: Mapping[str, Any]) -> Dict[str, Any]:
    import copy  # here, not at the top: ~0.8 ms of every command's start-up (issue 21)

    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(base.get(k), dict):
            _merge(base[k], v)
        else:
            base[k] = copy.deepcopy(v)
    return base


def _yaml_scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(str(v))  # a JSON string is a valid YAML string


def _to_yaml(d: Mapping[str, Any], indent: int = 0) -> str:
    # A tiny deterministic emitter (sorted keys) so config text, and thus any
    # error message quoting it, never depends on dict order or PyYAML's style.
    lines = []
    for k in sorted(d):
        v = d[k]
        if isinstance(v, Mapping):
            lines.append(" " * indent + f"{k}:")
            lines.append(_to_yaml(v, indent + 2).rstrip("\n"))
        else:
            lines.append(" " * indent + f"{k}: {_yaml_scalar(v)}")
    return "\n".join(line for line in lines if line) + "\n"


def config_yaml(config: ConfigLike = None, overrides: Optional[Mapping[str, Any]] = None
                ) -> Tuple[str, str, str]:
    """Resolves a ConfigLike to (path, yaml_text, source) for _core.run.

    A plain file path with no overrides is passed as a path so the C++ loader
    reports its own file:line; anything else becomes YAML text.
    """
    if config is None and not overrides:
        return "", "", "<config>"
    if isinstance(config, (str, os.PathLike)) and not overrides:
        return os.fspath(config), "", os.fspath(config)
    data: Dict[str, Any] = {}
    source = "<config dict>"
    if isinstance(config, (str, os.PathLike)):
        import yaml  # python3-yaml

        path = os.fspath(config)
        try:
            with open(path, encoding="utf-8") as f:
                loaded = yaml.safe_load(f) or {}
        except OSError as e:
            raise AgentcgError(f"{path}: cannot read config: {e.strerror}") from None
        except yaml.YAMLError as e:
            raise AgentcgError(f"{path}: invalid YAML: {e}") from None
        if not isinstance(loaded, dict):
            raise AgentcgError(f"{path}: expected a mapping of sections at the top level")
        data = loaded
        source = f"{path} (with overrides)"
    elif isinstance(config, Mapping):
        data = _nest(config)
    elif config is not None:
        raise AgentcgError(f"config: expected None, a file path or a dict, got {type(config).__name__}")
    if overrides:
        _merge(data, _nest(overrides))
    return "", _to_yaml(data) if data else "", source


def load_config(config: ConfigLike = None, overrides: Optional[Mapping[str, Any]] = None
                ) -> Dict[str, Any]:
    """Validates a config and returns the resolved values (raises ConfigError)."""
    path, text, source = config_yaml(config, overrides)
    if path:
        return dict(_core.load_config_file(path))
    if text:
        return dict(_core.load_config_string(text, source))
    return default_config()


# --- results ------------------------------------------------------------------

class Result(Mapping):  # Mapping[str, Any]
    """One simulation's results.json, with tables for analysis and plots."""

    def __init__(self, text: str, schedule_path: Optional[str] = None,
                 label: Optional[str] = None, schedule_text: Optional[str] = None,
                 histograms: Optional[str] = None) -> None:
        self.text = text
        self.data: Dict[str, Any] = json.loads(text)
        # histograms.json's content (sim/metrics.h dump_histograms, the one
        # definition): {"wakeup_latency_ns": LatencyHistogram JSON,
        # "tool_call_latency_ns": ... (the whole machine), "cgroups": {path:
        # {the same}}}, or None (results.json written without them)
        self.histograms: Optional[Dict[str, Any]] = None
        self._histograms_text: Optional[str] = None  # written back verbatim
        if histograms:
            self._set_histograms(histograms, "histograms")
        self._schedule_path = schedule_path
        self._schedule_text = schedule_text  # run(schedule=True): held in memory, no file left behind
        self._schedule: Optional[Any] = None
        self.label = label or self.default_label()

    # Mapping protocol: result["wakeup_latency_ns"]["p99"]
    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return (f"<agentcg Result {self.label}: trace={self.data.get('trace')!r} "
                f"seed={self.data.get('seed')}>")

    @classmethod
    def load(cls, path: Union[str, "os.PathLike[str]"]) -> "Result":
        """Reads a results.json (or a directory holding one)."""
        p = os.fspath(path)
        if os.path.isdir(p):
            p = os.path.join(p, "results.json")
        try:
            with open(p, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise AgentcgError(f"{p}: cannot read results: {e.strerror}") from None
        try:
            r = cls(text)
        except json.JSONDecodeError as e:
            raise AgentcgError(f"{p}:{e.lineno}: not a results.json: {e.msg}") from None
        if r.data.get("format") != "agentcg-results":
            raise AgentcgError(f"{p}: not a results.json (expected \"format\": \"agentcg-results\")")
        sched = os.path.join(os.path.dirname(p), "schedule.perfetto.json")
        if not os.path.exists(sched):  # `run --perfetto DIR/anything.json` beside results.json
            import glob

            found = [f for f in sorted(glob.glob(os.path.join(os.path.dirname(p), "*.json")))
                     if os.path.basename(f) != "results.json" and not os.path.basename(f).startswith("seed-")
                     and _looks_like_trace_events(f)]
            sched = found[0] if len(found) == 1 else sched
        if os.path.exists(sched):
            r._schedule_path = sched
        hist = os.path.join(os.path.dirname(p), HISTOGRAMS_FILE)
        if os.path.exists(hist) and os.path.basename(p) == "results.json":
            try:
                with open(hist, encoding="utf-8") as f:
                    text = f.read()
            except OSError as e:
                raise AgentcgError(f"{hist}: not a histograms file: {e}") from None
            r._set_histograms(text, hist)
        return r

    def _set_histograms(self, text: str, where: str) -> None:
        """Takes histograms.json text (version 1: the machine only; version 2
        adds "cgroups")."""
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise AgentcgError(f"{where}:{e.lineno}: not a histograms file: {e.msg}") from None
        if not isinstance(doc, dict) or doc.get("format") != "agentcg-histograms":
            raise AgentcgError(f"{where}: not a histograms file (expected \"format\": \"agentcg-histograms\")")
        if doc.get("version") not in (1, 2):
            raise AgentcgError(f"{where}: histograms version {doc.get('version')!r}: expected 1 or 2")
        self.histograms = {k: v for k, v in doc.items() if k.endswith("_latency_ns") or k == "cgroups"}
        self._histograms_text = text

    def default_label(self) -> str:
        pol = str(self.data.get("policy", "?"))
        gpu = self.data.get("gpu_policy", "none")
        return pol if gpu in (None, "none") else f"{pol}/{gpu}"

    @property
    def policy(self) -> str:
        return str(self.data.get("policy", ""))

    @property
    def gpu_policy(self) -> str:
        return str(self.data.get("gpu_policy", "none"))

    @property
    def seed(self) -> int:
        return int(self.data.get("seed", 0))

    @property
    def has_gpu(self) -> bool:
        return isinstance(self.data.get("gpu"), dict)

    def save(self, path: Union[str, "os.PathLike[str]"]) -> str:
        """Writes results.json (exact bytes); a directory gets DIR/results.json.
        Saved as .../results.json, the latency histograms go beside it
        (histograms.json) when the run kept them."""
        from ._files import atomic_write

        p = os.fspath(path)
        if os.path.isdir(p) or p.endswith(os.sep):
            os.makedirs(p, exist_ok=True)
            p = os.path.join(p, "results.json")
        atomic_write(p, self.text)
        if os.path.basename(p) == "results.json":
            self.save_histograms(os.path.dirname(p) or ".")
        return p

    def save_histograms(self, directory: str) -> Optional[str]:
        """DIR/histograms.json (the latency histograms) when the run kept them."""
        if not self._histograms_text:
            return None
        from ._files import atomic_write

        p = os.path.join(directory, HISTOGRAMS_FILE)
        atomic_write(p, self._histograms_text)  # the simulator's bytes, as agentcg-sim writes them
        return p

    def cgroup_histograms(self) -> Dict[str, Dict[str, Any]]:
        """{cgroup path: {"wakeup_latency_ns": H, "tool_call_latency_ns": H}}
        over each cgroup's subtree (cgroups with samples only); {} when the
        run kept none (results.json alone, or a version-1 histograms.json)."""
        return dict((self.histograms or {}).get("cgroups") or {})

    def latency_cdf(self, key: str = "wakeup_latency_ns", cgroup: Optional[str] = None) -> "pandas.DataFrame":
        """Every sample's latency as a CDF: rows (latency_ns, fraction), ascending,
        fraction = share of samples at or below latency_ns. Exact while the run
        had at most 1,024 samples; beyond that one row per histogram bucket (64
        per power of two: within 1.6 % of the value), at the bucket's upper edge.
        cgroup: that cgroup's subtree instead of the whole machine.
        Raises AgentcgError when the run kept no histograms."""
        import pandas as pd

        if cgroup is None:
            h = (self.histograms or {}).get(key)
        else:
            h = self.cgroup_histograms().get(cgroup, {}).get(key)
            if h is None and self.cgroup_histograms():
                raise AgentcgError(f"no {key} samples in cgroup {cgroup} (cgroups with samples: "
                                   f"{', '.join(sorted(self.cgroup_histograms()))})")
        if h is None:
            raise AgentcgError(f"no {key} histogram{' per cgroup' if cgroup else ''} in these results "
                               f"(results.json alone holds percentiles; runs from agentcg.run() and the CLI "
                               f"keep them in {HISTOGRAMS_FILE})")
        pts = _core.histogram_points(json.dumps(h))
        total = sum(n for _, _, n in pts)
        rows, acc = [], 0
        for _, hi, n in pts:
            acc += n
            rows.append((hi, acc / total if total else float("nan")))
        return pd.DataFrame(rows, columns=["latency_ns", "fraction"])

    def summary(self) -> Dict[str, Any]:
        """Flat scalar metrics (the row a sweep or a comparison table holds)."""
        d = self.data
        out: Dict[str, Any] = {}
        for key in ("context_switches", "jain_fairness", "cpu_utilization", "max_runnable_wait_ns",
                    "duration_ns"):
            if key in d:
                out[key] = d[key]
        for lat in ("wakeup_latency_ns", "tool_call_latency_ns"):
            none = isinstance(d.get(lat), dict) and not d[lat].get("count")
            for k in ("p50", "p99", "p999", "max", "mean", "count"):
                v = d.get(lat, {}).get(k) if isinstance(d.get(lat), dict) else None
                if none and k != "count":
                    v = float("nan")  # no samples: missing, not 0
                if v is not None:
                    base = lat.replace("_latency_ns", "")  # wakeup_p99_ns, tool_call_count
                    out[f"{base}_{k}_ns" if k != "count" else f"{base}_count"] = v
        for cg, m in sorted(d.get("cgroups", {}).items()):
            if "cpu_share" in m:
                out[f"cpu_share[{cg}]"] = m["cpu_share"]
        g = d.get("gpu")
        if isinstance(g, dict):
            for key in ("makespan_ns", "busy_fraction", "bytes_migrated", "switches"):
                if key in g:
                    out[f"gpu_{key}"] = g[key]
            jcts = [j.get("jct_ns") for j in g.get("jobs", {}).values() if j.get("jct_ns") is not None]
            if jcts:
                out["gpu_mean_jct_ns"] = sum(jcts) / len(jcts)
        return out

    def cgroups(self) -> "pandas.DataFrame":
        """One row per cgroup: share, entitlement, CPU time, latencies, throttling, memory."""
        import pandas as pd

        rows = []
        for path, m in sorted(self.data.get("cgroups", {}).items()):
            row: Dict[str, Any] = {"cgroup": path}
            for key, val in m.items():
                if isinstance(val, dict):
                    for sub, sv in val.items():
                        if not isinstance(sv, (dict, list)):
                            name = key[:-3] if key.endswith("_ns") else key
                            row[f"{name}_{sub}" + ("_ns" if key.endswith("_ns") and sub != "count" else "")] = sv
                elif not isinstance(val, list):
                    row[key] = val
            rows.append(row)
        return pd.DataFrame(rows).set_index("cgroup") if rows else pd.DataFrame()

    def series(self) -> "pandas.DataFrame":
        """CPU share per interval: index time_ns (interval start), one column per cgroup."""
        import pandas as pd

        s = self.data.get("series") or {}
        interval = int(s.get("interval_ns", 0) or 0)
        cols = s.get("cgroups", {})
        if not cols or interval <= 0:
            return pd.DataFrame()
        n = max(len(v) for v in cols.values())
        df = pd.DataFrame({k: list(v) + [float("nan")] * (n - len(v)) for k, v in sorted(cols.items())})
        df.index = pd.Index([i * interval for i in range(n)], name="time_ns")
        return df

    def series_array(self, cgroup: str) -> "numpy.ndarray":
        """CPU share per interval of one cgroup as a numpy array."""
        import numpy as np

        cols = (self.data.get("series") or {}).get("cgroups", {})
        if cgroup not in cols:
            raise AgentcgError(f"no series for cgroup '{cgroup}' (have: {', '.join(sorted(cols))})")
        return np.asarray(cols[cgroup], dtype=float)

    def latency(self, key: str = "wakeup_latency_ns") -> Dict[str, Any]:
        v = self.data.get(key)
        return dict(v) if isinstance(v, dict) else {}

    def gpu_jobs(self) -> "pandas.DataFrame":
        import pandas as pd

        g = self.data.get("gpu") or {}
        rows = [{"job": k, **{kk: vv for kk, vv in v.items() if not isinstance(vv, (dict, list))}}
                for k, v in sorted(g.get("jobs", {}).items())]
        return pd.DataFrame(rows).set_index("job") if rows else pd.DataFrame()

    def gpu_clients(self) -> "pandas.DataFrame":
        import pandas as pd

        g = self.data.get("gpu") or {}
        rows = [{"client": k, **{kk: vv for kk, vv in v.items() if not isinstance(vv, (dict, list))}}
                for k, v in sorted(g.get("clients", {}).items())]
        return pd.DataFrame(rows).set_index("client") if rows else pd.DataFrame()

    @property
    def schedule_path(self) -> Optional[str]:
        return self._schedule_path

    def schedule(self) -> "pandas.DataFrame":
        """Task slices (cpu, pid, name, cgroup, start_ns, end_ns) from the Perfetto trace.

        Needs run(..., schedule=True) or a results directory written with
        --perfetto; raises AgentcgError otherwise.
        """
        if self._schedule is None:
            if self._schedule_text is not None:
                self._schedule = _slices(_events_from_text(self._schedule_text, "<schedule>"))
            elif self._schedule_path:
                self._schedule = read_perfetto_slices(self._schedule_path)
            else:
                raise AgentcgError("no schedule recorded: run with schedule=True (CLI: --perfetto FILE)")
        return self._schedule

    @property
    def has_schedule(self) -> bool:
        return self._schedule_text is not None or bool(self._schedule_path)

    def schedule_text(self) -> Optional[str]:
        """The recorded schedule trace's text (None when none was recorded)."""
        if self._schedule_text is not None:
            return self._schedule_text
        if self._schedule_path and os.path.exists(self._schedule_path):
            with open(self._schedule_path, encoding="utf-8") as f:
                return f.read()
        return None

    def gpu_slices(self) -> "pandas.DataFrame":
        """GPU lock holds and drains (gpu, job, kind "hold"/"drain", start_ns,
        end_ns) from the recorded schedule: a hold runs from a grant to the
        DROP or release, a drain from the DROP to the release. Needs
        run(..., schedule=True) or --perfetto; raises AgentcgError otherwise."""
        if self._schedule_text is not None:
            return _gpu_slices(_events_from_text(self._schedule_text, "<schedule>"))
        if not self._schedule_path:
            raise AgentcgError("no schedule recorded: run with schedule=True (CLI: --perfetto FILE)")
        return _gpu_slices(_perfetto_events(self._schedule_path))

    def schedule_counters(self) -> "pandas.DataFrame":
        """Counter samples (track, ts_ns, value) from the Perfetto trace."""
        if self._schedule_text is not None:
            return _counters(_events_from_text(self._schedule_text, "<schedule>"))
        if not self._schedule_path:
            raise AgentcgError("no schedule recorded: run with schedule=True (CLI: --perfetto FILE)")
        return read_perfetto_counters(self._schedule_path)


def _looks_like_trace_events(path: str) -> bool:
    """A Chrome/Perfetto trace-event file (its first bytes open "traceEvents")."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(200)
    except OSError:
        return False
    return '"traceEvents"' in head or head.lstrip().startswith('[{"')


def _us_to_ns(v: Any) -> int:
    # write_perfetto prints "us.nnn" exactly; round() undoes binary fractions.
    return int(round(float(v) * 1000))


def _perfetto_events(path: str) -> List[Dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise AgentcgError(f"{path}: cannot read Perfetto trace: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise AgentcgError(f"{path}: byte {e.start}: not UTF-8 text (a trace-event JSON file expected)") from None
    return _events_from_text(text, path)


def _events_from_text(text: str, path: str) -> List[Dict[str, Any]]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise AgentcgError(f"{path}:{e.lineno}: not a trace-event JSON file: {e.msg}") from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise AgentcgError(f"{path}: expected a trace-event JSON file with \"traceEvents\"")
    return events


def read_perfetto_slices(path: str) -> "pandas.DataFrame":
    """The "X" events of a schedule trace as a DataFrame sorted by (cpu, start)."""
    return _slices(_perfetto_events(path))


def _slices(events: List[Dict[str, Any]]) -> "pandas.DataFrame":
    import pandas as pd

    rows = []
    for e in events:
        if e.get("ph") != "X" or e.get("cat", "sched") != "sched":
            continue
        start = _us_to_ns(e.get("ts", 0))
        args = e.get("args", {})
        rows.append({"cpu": int(e.get("pid", 0)), "pid": int(args.get("pid", 0)),
                     "name": str(e.get("name", "")), "cgroup": str(args.get("cgroup", "")),
                     "start_ns": start, "end_ns": start + _us_to_ns(e.get("dur", 0))})
    df = pd.DataFrame(rows, columns=["cpu", "pid", "name", "cgroup", "start_ns", "end_ns"])
    return df.sort_values(["cpu", "start_ns"], kind="stable").reset_index(drop=True)


def _gpu_slices(events: List[Dict[str, Any]]) -> "pandas.DataFrame":
    """The GPU lock holds and drains ("cat":"gpu" slices, sim/perfetto.cc)."""
    import pandas as pd

    rows = []
    for e in events:
        if e.get("ph") != "X" or e.get("cat") != "gpu":
            continue
        start = _us_to_ns(e.get("ts", 0))
        args = e.get("args", {})
        rows.append({"gpu": int(args.get("gpu", 0)), "job": str(args.get("job", "")),
                     "kind": "hold" if e.get("name") == "holds GPU" else "drain",
                     "start_ns": start, "end_ns": start + _us_to_ns(e.get("dur", 0))})
    df = pd.DataFrame(rows, columns=["gpu", "job", "kind", "start_ns", "end_ns"])
    return df.sort_values(["gpu", "job", "start_ns"], kind="stable").reset_index(drop=True)


def read_perfetto_counters(path: str) -> "pandas.DataFrame":
    return _counters(_perfetto_events(path))


def _counters(events: List[Dict[str, Any]]) -> "pandas.DataFrame":
    import pandas as pd

    rows = [{"track": str(e.get("name", "")), "ts_ns": _us_to_ns(e.get("ts", 0)),
             "value": float((e.get("args") or {}).get("value", 0.0))}
            for e in events if e.get("ph") == "C"]
    return pd.DataFrame(rows, columns=["track", "ts_ns", "value"])


# --- run / compare -------------------------------------------------------------

def run(trace: TraceLike, policy: str = "eevdf", gpu_policy: str = "none", config: ConfigLike = None,
        seed: int = 1, overrides: Optional[Mapping[str, Any]] = None,
        perfetto: Optional[Union[str, "os.PathLike[str]"]] = None, schedule: bool = False,
        label: Optional[str] = None) -> Result:
    """Runs one simulation and returns its Result.

    perfetto: write the Chrome/Perfetto schedule trace to this file.
    schedule: record the schedule (to a temporary file if no perfetto path)
    so that Result.schedule() and the timeline plot work.
    """
    check_seed(seed)
    check_policy(policy, gpu_policy)
    if overrides:
        check_config_keys(overrides, "overrides")
    if isinstance(config, Mapping):
        check_config_keys(config, "config")
    t = as_trace(trace)
    if gpu_policy != "none" and not _core.trace_has_gpu(t):
        raise AgentcgError(f"gpu_policy '{gpu_policy}': the trace {t.name} has no GPU jobs (no 'gpu' section); "
                           "use gpu_policy='none' or a GPU trace (trace generate gpu-oversub ...)")
    cpath, ctext, csource = config_yaml(config, overrides)
    ppath = os.fspath(perfetto) if perfetto is not None else ""
    if schedule and not ppath:
        # Read back into memory at once and removed: nothing is left in /tmp.
        import tempfile  # only with a schedule: it imports random (start-up)

        fd, ppath = tempfile.mkstemp(prefix="agentcg-schedule-", suffix=".json")
        os.close(fd)
        try:
            text, hist = _core.run_with_histograms(t, policy, gpu_policy, int(seed), cpath, ctext, csource, ppath)
            with open(ppath, encoding="utf-8") as f:
                sched = f.read()
        finally:
            os.unlink(ppath)
        return Result(text, None, label, schedule_text=sched, histograms=hist)
    text, hist = _core.run_with_histograms(t, policy, gpu_policy, int(seed), cpath, ctext, csource, ppath)
    return Result(text, ppath or None, label, histograms=hist)


SEED_MAX = 2**64 - 1


def check_seed(seed: Any, flag: str = "seed") -> int:
    """A run seed is an integer 0..2**64-1 (the simulator's u64)."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        try:
            ok = isinstance(seed, str) and str(int(seed)) == seed.strip()
        except ValueError:
            ok = False
        if not ok:
            raise AgentcgError(f"{flag} {seed!r}: expected an integer from 0 to 2**64-1")
        seed = int(seed)
    if not 0 <= seed <= SEED_MAX:
        raise AgentcgError(f"{flag} {seed}: expected an integer from 0 to 2**64-1")
    return int(seed)


def check_policy(policy: str, gpu_policy: str = "none") -> None:
    """Unknown policy names fail before anything runs, with did-you-mean."""
    if policy not in _core.cpu_policies():
        raise unknown_name("CPU policy", policy, list(_core.cpu_policies()))
    if gpu_policy not in _core.gpu_policies():
        raise unknown_name("GPU policy", gpu_policy, list(_core.gpu_policies()))


_OTHER_SECTIONS = ("daemon", "monitor")  # valid in the YAML file, unused by the simulator


def check_config_keys(config: Mapping[str, Any], where: str) -> None:
    """Every dotted or nested key must exist in the defaults: a typo names
    the key and the close matches (the YAML loader would only see
    '<config dict>:LINE')."""
    defaults = default_config()
    nested = _nest(config)
    sections = sorted(set(defaults) | set(_OTHER_SECTIONS))
    for sec, body in nested.items():
        if sec not in sections:
            raise unknown_name(f"config section in {where}", sec, sections)
        if sec not in defaults or not isinstance(body, Mapping):
            continue
        _check_under(body, defaults[sec], f"{sec}.", where)


def _check_under(body: Mapping[str, Any], ref: Any, prefix: str, where: str) -> None:
    if not isinstance(ref, Mapping):
        return
    for k, v in body.items():
        if k not in ref:
            raise unknown_name(f"config key in {where}", prefix + k, [prefix + x for x in sorted(ref)])
        if isinstance(v, Mapping):
            _check_under(v, ref[k], f"{prefix}{k}.", where)


def demand_shares(trace: TraceLike, seed: int = 1, config: ConfigLike = None) -> Dict[str, float]:
    """What each cgroup would use of the trace's machine if it never had to
    wait: its CPU time in a run on a machine with many CPUs (cfs, 64x the
    CPUs, at most 1024), as a share of the trace's machine over that run.
    Used for the demand-capped entitlement of the fairness index (table.py):
    an approximation, since a workload that paces itself on its own progress
    may ask for more when it runs faster."""
    t = as_trace(trace)
    cpus = min(1024, max(1, int(t.cpus)) * 64)
    over = {"machine.cpus": cpus}
    r = json.loads(_core.run(t, "cfs", "none", int(seed), *_cfg_args(config, over), ""))
    dur = float(r.get("duration_ns") or 0) * max(1, int(t.cpus))
    if dur <= 0:
        return {}
    return {p: float(c.get("cpu_time_ns") or 0) / dur for p, c in (r.get("cgroups") or {}).items()}


def _cfg_args(config: ConfigLike, over: Mapping[str, Any]) -> Tuple[str, str, str]:
    return config_yaml(config, over)


class Comparison(Mapping):  # Mapping[str, Result]
    """Results of one trace under several policies, keyed by label."""

    def __init__(self, results: Mapping[str, Result]) -> None:
        self.results: Dict[str, Result] = dict(results)

    def __getitem__(self, key: str) -> Result:
        return self.results[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def table(self) -> "pandas.DataFrame":
        """One row per policy: the Result.summary() metrics."""
        import pandas as pd

        rows = [{"policy": k, **r.summary()} for k, r in self.results.items()]
        return pd.DataFrame(rows).set_index("policy")

    def cgroup_table(self, metric: str = "cpu_share") -> "pandas.DataFrame":
        """Rows = cgroups, columns = policies, values = one per-cgroup metric."""
        import pandas as pd

        cols = {}
        for k, r in self.results.items():
            cg = r.cgroups()
            if metric in cg.columns:
                cols[k] = cg[metric]
        return pd.DataFrame(cols)

    def save(self, out_dir: Union[str, "os.PathLike[str]"]) -> None:
        """DIR/<label>/results.json for each policy plus DIR/summary.csv."""
        d = os.fspath(out_dir)
        os.makedirs(d, exist_ok=True)
        for k, r in self.results.items():
            sub = os.path.join(d, _safe(k))
            os.makedirs(sub, exist_ok=True)
            r.save(os.path.join(sub, "results.json"))
            dst = os.path.join(sub, "schedule.perfetto.json")
            if not (r.schedule_path and os.path.abspath(dst) == os.path.abspath(r.schedule_path)):
                text = r.schedule_text()
                if text is not None:
                    with open(dst, "w", encoding="utf-8", newline="") as out:
                        out.write(text)
        self.table().to_csv(os.path.join(d, "summary.csv"))


def _safe(label: str) -> str:
    return label.replace("/", "+").replace(os.sep, "+")


def compare(trace: TraceLike, policies: Sequence[str] = ("eevdf", "flatcg", "agentcg"),
            gpu_policies: Optional[Sequence[str]] = None, config: ConfigLike = None, seed: int = 1,
            overrides: Optional[Mapping[str, Any]] = None, schedule: bool = False,
            progress: bool = False) -> Comparison:
    """Runs the same trace under each policy (and each GPU policy if given).

    Labels: the CPU policy; the GPU policy when only GPU policies vary;
    "cpu/gpu" when both vary.
    """
    t = as_trace(trace)
    gpols = list(gpu_policies) if gpu_policies else ["none"]
    cpols = list(policies)
    if not cpols:
        raise AgentcgError("compare: no policies given")
    pairs = [(c, g) for c in cpols for g in gpols]
    results: Dict[str, Result] = {}
    it: Any = pairs
    if progress:
        from .progress import bar

        it = bar(pairs, desc="compare", unit="run")
    for c, g in it:
        if len(gpols) > 1 and len(cpols) == 1:
            label = g
        elif len(gpols) > 1:
            label = f"{c}/{g}"
        else:
            label = c
        results[label] = run(t, c, g, config, seed, overrides, schedule=schedule, label=label)
    return Comparison(results)
