# SPDX-License-Identifier: GPL-2.0-only
"""Fleet runs: many independent simulated hosts, merged into one summary.

    fs = run_fleet(Generator("agent", cpus=64, duration="60s"), hosts=1000,
                   sessions=100_000, policy="cfs", workers=2)
    print(fs.text())          # fleet percentiles + the per-host spread
    fs.write("out/fleet")     # fleet.json (deterministic) + run.json (timing)

A fleet is a list of hosts; each host is one simulation of its own trace:
either one trace file per host, or one generator regenerated per host with
seed = seed0 + host index and sessions = sessions / hosts (the remainder
goes to the first hosts). Hosts do not interact (no shared queue, no
migration between hosts): sharding is exact, not an approximation.

Each host runs on a worker of the sweep backends (agentcg.sweep: a local
process pool, or a Dask cluster given by address / Client / a local cluster
started here) and returns its summary and the mergeable latency histograms
(sim/metrics.h, LatencyHistogram: exact nearest-rank up to 1,024 samples,
<= 0.79 % relative error above). The merge runs in C++
(_core.merge_histograms), the same definition as every results.json.

Invariants: fleet.json depends only on the hosts' inputs (host order, merge
order-independent), so the pool, Dask and a serial run write the same bytes;
timings and worker memory go to run.json, which is not deterministic.
Who calls it: `agentcg fleet` (cli.py), tests/python/test_fleet.py,
tests/bench/fleet_bench.py.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _core
from ._errors import AgentcgError
from .api import ConfigLike, config_yaml
from .sweeps import Generator, _run_dask, _run_local

__all__ = ["FleetResult", "fleet_tasks", "run_fleet"]

_LATENCIES = ("wakeup_latency_ns", "tool_call_latency_ns")


def _run_host(task: Dict[str, Any]) -> Dict[str, Any]:
    """One host (runs on a worker; must stay importable and picklable)."""
    import resource

    t0 = time.perf_counter()
    gen = task.get("generator")
    if gen is not None:
        trace = Generator(gen[0], gen[1]).make(task["seed"])
    else:
        trace = _core.Trace.from_file(task["trace_path"])
    text = _core.run(trace, task["policy"], task["gpu_policy"], task["seed"], task["config_path"],
                     task["config_yaml"], task["config_source"], "", True)
    del trace
    r = json.loads(text)
    host: Dict[str, Any] = {
        "host": task["host"], "seed": task["seed"], "trace": r.get("trace"),
        "cpus": r.get("cpus"), "duration_ns": r.get("duration_ns"), "events": r.get("events"),
        "tasks": r.get("tasks"), "context_switches": r.get("context_switches"),
        "cpu_utilization": r.get("cpu_utilization"), "jain_fairness": r.get("jain_fairness"),
    }
    for k in _LATENCIES:
        host[k] = r[k]
    # ru_maxrss: KiB on Linux; the worker's peak so far (all hosts it ran).
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"index": task["index"], "host": host,
            "histograms": {k: json.dumps(r["histograms"][k], sort_keys=True) for k in _LATENCIES},
            "worker": {"pid": os.getpid(), "peak_rss_kib": int(rss_kib),
                       "wall_s": time.perf_counter() - t0}}


def fleet_tasks(hosts: Union[int, Sequence[str]], generator: Optional[Generator] = None,
                sessions: Optional[int] = None, policy: str = "cfs", gpu_policy: str = "none",
                seed: int = 1, config: ConfigLike = None) -> List[Dict[str, Any]]:
    """The picklable per-host tasks: `hosts` is a host count (with a
    generator) or a list of trace files (one host each)."""
    cpath, ctext, csource = config_yaml(config, None)
    if ctext:
        _core.load_config_string(ctext, csource)  # fail here, not on every worker
    base = {"policy": policy, "gpu_policy": gpu_policy, "config_path": cpath,
            "config_yaml": ctext, "config_source": csource}
    tasks: List[Dict[str, Any]] = []
    if isinstance(hosts, int):
        if generator is None:
            raise AgentcgError("fleet: a host count needs a generator (or give one trace file per host)")
        if hosts < 1:
            raise AgentcgError(f"fleet: hosts must be >= 1, got {hosts}")
        if sessions is not None and sessions < hosts:
            raise AgentcgError(f"fleet: {sessions} sessions cannot fill {hosts} hosts (one at least each)")
        width = len(str(hosts - 1))
        for i in range(hosts):
            opts = dict(generator.options)
            if sessions is not None:
                opts["sessions"] = sessions // hosts + (1 if i < sessions % hosts else 0)
            tasks.append({**base, "index": i, "host": f"host-{i:0{width}d}", "seed": int(seed) + i,
                          "generator": (generator.kind, opts)})
        # Fail early, in this process, on an unknown kind or option.
        Generator(generator.kind, tasks[0]["generator"][1]).make(int(seed))
    else:
        if generator is not None or sessions is not None:
            raise AgentcgError("fleet: give either trace files or a generator, not both")
        if not hosts:
            raise AgentcgError("fleet: no hosts")
        for i, path in enumerate(hosts):
            if not os.path.isfile(path):
                raise AgentcgError(f"fleet: trace file '{path}' does not exist")
            tasks.append({**base, "index": i, "host": os.path.basename(path), "seed": int(seed),
                          "trace_path": os.path.abspath(path)})
    return tasks


def _merge(hists: List[str]) -> Dict[str, Any]:
    merged = json.loads(_core.merge_histograms(hists))
    return merged


def _spread(values: List[int]) -> Dict[str, int]:
    """min / median (lower) / max of a per-host figure."""
    v = sorted(values)
    return {"min": v[0], "median": v[(len(v) - 1) // 2], "max": v[-1]} if v else {}


@dataclass
class FleetResult:
    """fleet: the deterministic summary; run: timings and worker memory."""

    fleet: Dict[str, Any]
    run: Dict[str, Any]

    def fleet_json(self) -> str:
        return json.dumps(self.fleet, indent=2, sort_keys=True) + "\n"

    def write(self, out: str) -> None:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "fleet.json"), "w", encoding="utf-8") as f:
            f.write(self.fleet_json())
        with open(os.path.join(out, "run.json"), "w", encoding="utf-8") as f:
            json.dump(self.run, f, indent=2, sort_keys=True)
            f.write("\n")

    def text(self) -> str:
        fl, rn = self.fleet, self.run

        def ms(ns: Any) -> str:
            return f"{int(ns) / 1e6:.3f}"

        lines = [f"fleet: {fl['hosts']} hosts x {fl['cpus_per_host']} CPUs, policy {fl['policy']}, "
                 f"{fl['tasks']} tasks, {fl['events']} events, "
                 f"{fl['duration_ns'] / 1e9:.1f} s simulated per host"]
        for k, name in (("wakeup_latency_ns", "wakeup"), ("tool_call_latency_ns", "tool call")):
            s = fl[k]
            sp = fl["per_host_spread"][k.replace("_latency_ns", "_p99_ns")]
            lines.append(f"  {name:<10} fleet p50 {ms(s['p50'])} ms  p90 {ms(s['p90'])}  p99 {ms(s['p99'])}  "
                         f"p99.9 {ms(s['p999'])}  max {ms(s['max'])}  ({s['count']} samples);  per-host p99 "
                         f"min {ms(sp['min'])} median {ms(sp['median'])} max {ms(sp['max'])} ms")
        lines.append(f"  cpu utilisation: fleet {fl['cpu_utilization'] * 100:.1f} %")
        lines.append(f"  ran in {rn['wall_s']:.1f} s on {rn['backend']} ({rn['workers']} workers); peak RSS per "
                     f"worker {max(w['peak_rss_kib'] for w in rn['per_worker']) / 1024:.0f} MiB")
        return "\n".join(lines)


def run_fleet(hosts: Union[int, Sequence[str]], generator: Optional[Generator] = None,
              sessions: Optional[int] = None, policy: str = "cfs", gpu_policy: str = "none",
              seed: int = 1, config: ConfigLike = None, workers: Optional[int] = None,
              scheduler: Any = None, dask_local: Optional[int] = None,
              progress: bool = False) -> FleetResult:
    """Runs every host (see the module text) and merges them."""
    tasks = fleet_tasks(hosts, generator, sessions, policy, gpu_policy, seed, config)
    t0 = time.perf_counter()
    if dask_local is not None:
        import distributed

        backend = f"dask LocalCluster({dask_local} processes)"
        # dashboard_address=":0": a free port (None means :8787, which
        # another cluster on this machine may hold).
        with distributed.LocalCluster(n_workers=dask_local, threads_per_worker=1, processes=True,
                                      dashboard_address=":0", silence_logs=50) as cluster:
            with distributed.Client(cluster) as client:
                rows = _run_dask(tasks, client, progress, fn=_run_host, desc="fleet")
        nworkers = dask_local
    elif scheduler is not None:
        backend = f"dask {scheduler if isinstance(scheduler, str) else 'client'}"
        rows = _run_dask(tasks, scheduler, progress, fn=_run_host, desc="fleet")
        nworkers = len({r["worker"]["pid"] for r in rows})
    else:
        nworkers = workers if workers is not None else (os.cpu_count() or 1)
        backend = "process pool" if nworkers > 1 else "this process"
        rows = _run_local(tasks, nworkers, progress, fn=_run_host, desc="fleet")
    wall = time.perf_counter() - t0
    rows = sorted(rows, key=lambda r: r["index"])
    return FleetResult(_summary(tasks, rows), _run_stats(rows, backend, nworkers, wall))


def _summary(tasks: List[Dict[str, Any]], rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    per_host = [r["host"] for r in rows]
    merged = {k: _merge([r["histograms"][k] for r in rows]) for k in _LATENCIES}
    cpus = sorted({h["cpus"] for h in per_host})
    util_num = sum(float(h["cpu_utilization"]) * int(h["cpus"]) * int(h["duration_ns"]) for h in per_host)
    util_den = sum(int(h["cpus"]) * int(h["duration_ns"]) for h in per_host)
    t0 = tasks[0]
    fl: Dict[str, Any] = {
        "format": "agentcg-fleet", "version": 1, "hosts": len(per_host), "policy": t0["policy"],
        "gpu_policy": t0["gpu_policy"],
        "generator": ({"kind": t0["generator"][0],
                       "options": {k: v for k, v in t0["generator"][1].items() if k != "sessions"}}
                      if "generator" in t0 else None),
        "cpus_per_host": cpus[0] if len(cpus) == 1 else cpus,
        "duration_ns": max(int(h["duration_ns"]) for h in per_host),
        "tasks": sum(int(h["tasks"]) for h in per_host),
        "events": sum(int(h["events"]) for h in per_host),
        "context_switches": sum(int(h["context_switches"]) for h in per_host),
        # Busy CPU-time over all hosts' CPU-time (round to 6 decimals like results.json).
        "cpu_utilization": round(util_num / util_den, 6) if util_den else 0.0,
        "per_host": per_host,
        "per_host_spread": {
            f"{k.replace('_latency_ns', '')}_p99_ns": _spread([int(h[k]["p99"]) for h in per_host])
            for k in _LATENCIES},
        "histograms": {k: merged[k]["histogram"] for k in _LATENCIES},
    }
    for k in _LATENCIES:
        fl[k] = merged[k]["summary"]
    if "generator" in t0:
        fl["sessions"] = sum(int(t["generator"][1].get("sessions", 0)) for t in tasks)
    return fl


def _run_stats(rows: List[Dict[str, Any]], backend: str, nworkers: int, wall: float) -> Dict[str, Any]:
    by_pid: Dict[int, Dict[str, Any]] = {}
    for r in rows:
        w = r["worker"]
        cur = by_pid.setdefault(w["pid"], {"pid": w["pid"], "hosts": 0, "busy_s": 0.0, "peak_rss_kib": 0})
        cur["hosts"] += 1
        cur["busy_s"] = round(cur["busy_s"] + w["wall_s"], 3)
        cur["peak_rss_kib"] = max(cur["peak_rss_kib"], w["peak_rss_kib"])
    return {"backend": backend, "workers": nworkers, "wall_s": round(wall, 3),
            "host_wall_ms": _spread([round(r["worker"]["wall_s"] * 1000) for r in rows]),
            "per_worker": sorted(by_pid.values(), key=lambda w: w["pid"])}
