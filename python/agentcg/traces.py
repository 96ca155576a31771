# SPDX-License-Identifier: GPL-2.0-only
"""Traces from Python: load, parse, generate, and build them in code.

A `Trace` is the C++ object (agentcg._core.Trace): always parsed and
validated, so holding one means the simulator will accept it. Anything that
takes a trace in this package accepts a Trace, a path to a trace file, a dict
in the JSON trace format (traces/README.md), JSON text, or a TraceBuilder
(see `as_trace`).

TraceBuilder writes the JSON trace format v1 (the same document a generator
writes) with a small chaining API:

    b = TraceBuilder("two-groups", cpus=2, duration_ns=ms(500))
    b.cgroup("/a", cpu_weight=100)
    b.cgroup("/b", cpu_weight=300)
    for cg in ("/a", "/b"):
        b.process(cgroup=cg, comm="hog").run(ms(500))
    trace = b.build()          # validated by the C++ parser

Invariants: the builder never guesses defaults the parser does not also use
(absent keys stay absent); pids are assigned 1, 2, ... in creation order
unless given; output dicts have a fixed key order, so the same calls give the
same JSON. Who uses it: agentcg.api (run/compare/sweep), the CLI, notebooks.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping

from . import _core
from . import units
from ._errors import AgentcgError

TYPE_CHECKING = False  # typing is imported by static checkers only: ~2.5 ms of start-up (issue 21)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

    TraceLike = Union["_core.Trace", str, "os.PathLike[str]", Mapping[str, Any], "TraceBuilder"]
    ValueLike = Union[int, float, Mapping[str, Any]]

Trace = _core.Trace


def __getattr__(name: str) -> Any:
    """TraceLike and ValueLike, built on first use (they need typing; see TYPE_CHECKING)."""
    if name in ("TraceLike", "ValueLike"):
        from typing import Any, Union

        aliases = {"TraceLike": Union["_core.Trace", str, "os.PathLike[str]", Mapping[str, Any], "TraceBuilder"],
                   "ValueLike": Union[int, float, Mapping[str, Any]]}
        globals().update(aliases)
        return aliases[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "Ops",
    "ProcessBuilder",
    "Template",
    "Trace",
    "TraceBuilder",
    "TraceLike",
    "as_trace",
    "exponential",
    "generate",
    "generator_help",
    "load_trace",
    "lognormal",
    "ms",
    "parse_duration",
    "parse_trace",
    "s",
    "uniform",
    "us",
]


# --- units -----------------------------------------------------------------

def us(v: float) -> int:
    """Microseconds -> integer nanoseconds."""
    return int(round(v * 1_000))


def ms(v: float) -> int:
    """Milliseconds -> integer nanoseconds."""
    return int(round(v * 1_000_000))


def s(v: float) -> int:
    """Seconds -> integer nanoseconds."""
    return int(round(v * 1_000_000_000))


def parse_duration(text: Union[str, int]) -> int:
    """'10s', '500ms', '250us', '1000ns', '2m' -> ns (the one grammar, agentcg.units);
    an int is already ns."""
    if isinstance(text, int):
        return text
    return units.parse_duration_ns(str(text))


# --- distributions (JSON form of a Value) -------------------------------------

def _cap(d: Dict[str, Any], cap: Optional[int]) -> Dict[str, Any]:
    if cap is not None:
        d["max"] = int(cap)
    return d


def uniform(lo: int, hi: int) -> Dict[str, Any]:
    """Uniform integer in [lo, hi] (inclusive), drawn at run time."""
    return {"dist": "uniform", "min": int(lo), "max": int(hi)}


def exponential(mean: int, cap: Optional[int] = None) -> Dict[str, Any]:
    """Exponential with the given mean, optionally clamped to `cap`."""
    return _cap({"dist": "exponential", "mean": int(mean)}, cap)


def lognormal(median: int, sigma: float, cap: Optional[int] = None) -> Dict[str, Any]:
    """Log-normal with the given median and shape, optionally clamped to `cap`."""
    return _cap({"dist": "lognormal", "median": int(median), "sigma": float(sigma)}, cap)


def _value(v: ValueLike, what: str) -> Union[int, Dict[str, Any]]:
    if isinstance(v, Mapping):
        return dict(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        raise AgentcgError(f"{what}: expected a non-negative number of ns/bytes or a "
                           f"distribution (uniform/exponential/lognormal), got {v!r}")
    return int(v)


# --- loading ------------------------------------------------------------------

def load_trace(path: Union[str, "os.PathLike[str]"]) -> "_core.Trace":
    """Loads and validates a trace file (raises TraceError with file:line)."""
    p = os.fspath(path)
    try:
        return _core.Trace.from_file(p)
    except UnicodeDecodeError:
        # The C++ message quotes the offending bytes, which Python cannot
        # decode: say where they are instead.
        raise not_utf8_error(p) from None


def not_utf8_error(path: str) -> AgentcgError:
    """'FILE:LINE: column C: byte 0xff is not UTF-8 (...)' for the first bad byte."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        return AgentcgError(f"{path}:{line}: column {col}: byte 0x{data[e.start]:02x} is not UTF-8 "
                            "(trace files are UTF-8 JSON; re-encode the file, e.g. with iconv)")
    except OSError as e:
        return AgentcgError(f"{path}: cannot read: {e.strerror}")
    return AgentcgError(f"{path}: a message about this file is not UTF-8 text")


def parse_trace(text: str, source: str = "<string>") -> "_core.Trace":
    """Parses and validates JSON trace text; errors name `source`."""
    return _core.Trace.from_json(text, source)


def as_trace(trace: TraceLike) -> "_core.Trace":
    """Anything trace-like -> a validated Trace."""
    if isinstance(trace, _core.Trace):
        return trace
    if isinstance(trace, TraceBuilder):
        return trace.build()
    if isinstance(trace, Mapping):
        return parse_trace(json.dumps(trace), "<dict>")
    if isinstance(trace, (str, os.PathLike)):
        text = os.fspath(trace)
        if text.lstrip().startswith("{"):
            return parse_trace(text)
        return load_trace(text)
    raise AgentcgError(f"expected a Trace, a trace file path, a dict or a TraceBuilder, "
                       f"got {type(trace).__name__}")


def generate(kind: str, seed: int = 1, **options: Any) -> "_core.Trace":
    """Synthetic trace of KIND (agent, fork-storm, io, hogs, mixed, gpu-*).

    Options are the CLI's --key value pairs: use underscores or dashes
    (`storm_rate=500` == `--storm-rate 500`); values may be numbers or strings
    such as "10s". Unknown options raise ValueError naming the key.
    """
    opts = {k.replace("_", "-"): str(v) for k, v in options.items()}
    return _core.generate(kind, int(seed), opts)


def generator_help() -> str:
    """One line per generator kind with its options and defaults."""
    return _core.generator_help()


# --- builder ------------------------------------------------------------------

class Ops:
    """A list of ops (a process body, a repeat body or a fork template)."""

    def __init__(self) -> None:
        self.ops: List[Dict[str, Any]] = []

    def _add(self, op: Dict[str, Any]) -> "Ops":
        self.ops.append(op)
        return self

    def run(self, ns: ValueLike) -> "Ops":
        """Consume `ns` of CPU (runnable until done)."""
        return self._add({"op": "run", "ns": _value(ns, "run.ns")})

    def sleep(self, ns: ValueLike) -> "Ops":
        """Sleep voluntarily (e.g. waiting for an LLM)."""
        return self._add({"op": "sleep", "ns": _value(ns, "sleep.ns")})

    def io(self, ns: ValueLike) -> "Ops":
        """Block on I/O for `ns` (wakes as an I/O wakeup)."""
        return self._add({"op": "io", "ns": _value(ns, "io.ns")})

    def mem(self, nbytes: ValueLike) -> "Ops":
        """Set this process's memory use (RSS) in bytes."""
        return self._add({"op": "mem", "bytes": _value(nbytes, "mem.bytes")})

    def exec(self, comm: str) -> "Ops":
        return self._add({"op": "exec", "comm": comm})

    def wait(self) -> "Ops":
        """Wait until every child forked so far has exited."""
        return self._add({"op": "wait"})

    def exit(self) -> "Ops":
        return self._add({"op": "exit"})

    def step(self, n: int) -> "Ops":
        """Agent annotation: a new agent step starts."""
        return self._add({"op": "step", "step": int(n)})

    def tool_begin(self, tool: str) -> "Ops":
        return self._add({"op": "tool_begin", "tool": tool})

    def tool_end(self) -> "Ops":
        return self._add({"op": "tool_end"})

    def tool(self, name: str, body: Union["Ops", Callable[["Ops"], Any]]) -> "Ops":
        """tool_begin NAME, the body's ops, tool_end."""
        self.tool_begin(name)
        self.ops.extend(_body(body))
        return self.tool_end()

    def repeat(self, count: int, body: Union["Ops", Callable[["Ops"], Any]]) -> "Ops":
        """`count` x body; body is an Ops or a function filling a fresh Ops."""
        if count < 1:
            raise AgentcgError(f"repeat: count must be >= 1, got {count}")
        return self._add({"op": "repeat", "count": int(count), "body": _body(body)})

    def fork(self, target: Union["ProcessBuilder", "Template", int]) -> "Ops":
        """Fork a listed process (ProcessBuilder or pid) or an inline Template."""
        if isinstance(target, Template):
            return self._add({"op": "fork", "child": target.to_dict()})
        if isinstance(target, ProcessBuilder):
            return self._add({"op": "fork", "pid": target.pid})
        return self._add({"op": "fork", "pid": int(target)})


def _body(body: Union[Ops, Callable[[Ops], Any]]) -> List[Dict[str, Any]]:
    if isinstance(body, Ops):
        return list(body.ops)
    o = Ops()
    body(o)
    return o.ops


class Template(Ops):
    """An inline process template for fork (comm, optional cgroup, ops)."""

    def __init__(self, comm: str = "child", cgroup: Optional[str] = None,
                 session: Optional[str] = None) -> None:
        super().__init__()
        self.comm = comm
        self.cgroup = cgroup
        self.session = session

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"comm": self.comm}
        if self.cgroup is not None:
            d["cgroup"] = self.cgroup
        if self.session is not None:
            d["agent"] = {"session": self.session}
        d["ops"] = list(self.ops)
        return d


class ProcessBuilder(Ops):
    """A listed process: pid, cgroup, start time (unless forked), ops."""

    def __init__(self, pid: int, cgroup: str, comm: str, start_ns: Optional[int],
                 parent: Optional[int], session: Optional[str]) -> None:
        super().__init__()
        self.pid = pid
        self.cgroup = cgroup
        self.comm = comm
        self.start_ns = start_ns
        self.parent = parent
        self.session = session

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"pid": self.pid}
        if self.parent is not None:
            d["parent"] = self.parent
        d["cgroup"] = self.cgroup
        if self.start_ns is not None:
            d["start_ns"] = self.start_ns
        d["comm"] = self.comm
        if self.session is not None:
            d["agent"] = {"session": self.session}
        d["ops"] = list(self.ops)
        return d


class TraceBuilder:
    """Builds a trace (JSON format v1) in code; `build()` validates it."""

    def __init__(self, name: str = "built", cpus: int = 1, duration_ns: Optional[int] = None,
                 description: str = "", context_switch_ns: Optional[int] = None,
                 wakeup_overhead_ns: Optional[int] = None) -> None:
        self.name = name
        self.description = description
        self.cpus = int(cpus)
        self.duration_ns = duration_ns
        self.context_switch_ns = context_switch_ns
        self.wakeup_overhead_ns = wakeup_overhead_ns
        self._cgroups: List[Dict[str, Any]] = []
        self._processes: List[ProcessBuilder] = []
        self._gpus: List[Dict[str, Any]] = []
        self._gpu_jobs: List[Dict[str, Any]] = []
        self._next_pid = 1

    def cgroup(self, path: str, cpu_weight: Optional[int] = None,
               cpu_max: Optional[Tuple[int, int]] = None, memory_high: Optional[int] = None,
               memory_max: Optional[int] = None) -> "TraceBuilder":
        """Adds a cgroup; cpu_max = (quota_us, period_us)."""
        d: Dict[str, Any] = {"path": path}
        if cpu_weight is not None:
            d["cpu_weight"] = int(cpu_weight)
        if cpu_max is not None:
            d["cpu_max"] = {"quota_us": int(cpu_max[0]), "period_us": int(cpu_max[1])}
        if memory_high is not None:
            d["memory_high"] = int(memory_high)
        if memory_max is not None:
            d["memory_max"] = int(memory_max)
        self._cgroups.append(d)
        return self

    def process(self, cgroup: str = "/", comm: str = "task", start_ns: Optional[int] = 0,
                pid: Optional[int] = None, parent: Optional[ProcessBuilder] = None,
                session: Optional[str] = None) -> ProcessBuilder:
        """Adds a listed process and returns it to add ops to.

        A process started by another's fork op passes start_ns=None.
        """
        if pid is None:
            pid = self._next_pid
        self._next_pid = max(self._next_pid, pid + 1)
        p = ProcessBuilder(pid, cgroup, comm, start_ns,
                           parent.pid if parent is not None else None, session)
        self._processes.append(p)
        return p

    def gpu(self, memory_gb: float = 16, pcie: str = "gen3", **extra: Any) -> "TraceBuilder":
        """Adds a modelled GPU (the GPU model's "gpus" entries; see sim/gpu/README.md)."""
        d: Dict[str, Any] = {"memory_gb": memory_gb, "pcie": pcie}
        d.update(extra)
        self._gpus.append(d)
        return self

    def gpu_job(self, id: str, arrival_ns: int, memory_bytes: int, **fields: Any) -> "TraceBuilder":
        """Adds a GPU job (iterations, kernel_ns, touched_fraction, limit_pct, ...)."""
        d: Dict[str, Any] = {"id": id, "arrival_ns": int(arrival_ns),
                             "memory_bytes": int(memory_bytes)}
        d.update(fields)
        self._gpu_jobs.append(d)
        return self

    def to_dict(self) -> Dict[str, Any]:
        machine: Dict[str, Any] = {"cpus": self.cpus}
        if self.context_switch_ns is not None:
            machine["context_switch_ns"] = self.context_switch_ns
        if self.wakeup_overhead_ns is not None:
            machine["wakeup_overhead_ns"] = self.wakeup_overhead_ns
        d: Dict[str, Any] = {"format": "agentcg-trace", "version": 1, "name": self.name}
        if self.description:
            d["description"] = self.description
        if self.duration_ns is not None:
            d["duration_ns"] = int(self.duration_ns)
        d["machine"] = machine
        d["cgroups"] = list(self._cgroups)
        d["processes"] = [p.to_dict() for p in self._processes]
        if self._gpus or self._gpu_jobs:
            d["gpu"] = {"gpus": list(self._gpus), "jobs": list(self._gpu_jobs)}
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1) + "\n"

    def build(self) -> "_core.Trace":
        """The validated Trace (raises TraceError pointing into the JSON)."""
        return parse_trace(self.to_json(), f"<TraceBuilder {self.name}>")

    def write(self, path: Union[str, "os.PathLike[str]"]) -> "_core.Trace":
        """Validates, then writes the canonical form to `path`."""
        t = self.build()
        t.write(os.fspath(path))
        return t


def split_options(items: Sequence[str]) -> Dict[str, str]:
    """['--storm-rate', '500', '--cpus', '4'] -> {'storm-rate': '500', 'cpus': '4'}."""
    out: Dict[str, str] = {}
    it = iter(items)
    for tok in it:
        if not tok.startswith("--") or len(tok) <= 2:
            raise AgentcgError(f"generator option '{tok}': expected --key value")
        key = tok[2:]
        if "=" in key:
            key, val = key.split("=", 1)
        else:
            try:
                val = next(it)
            except StopIteration:
                raise AgentcgError(f"generator option '--{key}' needs a value") from None
        out[key] = val
    return out
