# SPDX-License-Identifier: GPL-2.0-only
"""`agentcg fidelity TRACE...`: how close the simulator comes to the kernel.

Each trace is prepared once (run length and memory scale fixed in a copy,
so both sides play exactly the same workload), run live by agentcg-player in
one VM boot under the kernel's default scheduler and agentcg
(live.run_vm), and simulated under the matching policy (the eevdf model for
the kernel's EEVDF) on a
machine with the VM's CPU count. The report puts side by side, per trace and
scheduler: wakeup latency p50 and p99, each leaf cgroup's CPU share,
tool-call latency and context switches, with the error in %.

Calibration: the simulator's wakeup_overhead_ns (and speed_pct when the
traces have tool calls; a key given with --model is held fixed instead)
are fitted by Gauss-Newton to the live wakeup
latency p50/p99 of every leaf cgroup and the tool-call p50 (log-ratios, so
every target weighs alike); each step solves a linear least-squares problem
in Eigen (sim/calibrate least_squares) with a Jacobian from finite
differences of simulations. context_switch_ns stays at its default: every
wakeup ends in one switch, so latencies only show the sum of the two costs.
The machine profile (YAML `machine:` section with the VM's cpus) is written
and the simulations rerun with it: the report shows the error before and
after. A fork's costs are not fitted but measured: live compare's serial
fork + exit cycles (benchmarks.json in the live results) give the forker's
and the child's CPU per cycle on the live machine (fork_cost_ns,
exit_cost_ns), and the rest of its stress-ng fork loop's cycle is the
forker's copy-on-write work (fork_after_ns); older results have only the
stress-ng rate, the whole cycle as fork_cost_ns (fork_cost_from_benchmarks).
With --measured-wakeup the wakeup costs are not fitted either: live compare's
player_sleeper passes (agentcg-player sleeping 1, 10 and 100 ms on the idle
guest and 1 ms beside CPU hogs) give wakeup_overhead_ns, timer_busy_ns,
ext_timer_busy_ns and idle_exit_ns (wakeup_costs_from_player), held fixed.
Where the live results hold live compare's recording of the fork storm,
the forker's copy-on-write, the child's own start (fork_child_ns) and the
exit are measured in it instead (fork_costs_from_recording).
Nor is
sched_ext's own cost (ext_busy_pct, ext_wakeup_ns, ext_fork_ns: what the
BPF schedulers' runs pay over EEVDF's), measured from the fitted scenarios'
live shares, live compare's cyclictest (ext_cost_from_live) and its serial
fork + exit cycles under the BPF schedulers (ext_fork_from_benchmarks).
The guest's tick (machine tick_ns) comes from the booted kernel's
CONFIG_HZ, and its preemption model (machine preempt: lazy for Debian's
7.2) from /sys/kernel/debug/sched/preempt, which run-vm.sh records beside
the live results (kernel.json);
--model gives it (or any machine key) by hand and holds it fixed through
the fit. The CPU spent outside the trace's cgroups (background_cpu_pct)
and a task's own CPU per sleep or I/O cycle (sleep_cost_ns) are fitted
together to the fitted scenarios' CPU shares (fit_share_costs).

Recorded benchmarks: live compare also records its cyclictest benchmarks
(cyclictest next to a CPU load and next to a fork storm) once under EEVDF
with agentcg-record (live.RECORDED_BENCHES); where the live results hold
those recordings, each is imported as a trace, replayed under every policy
over the seeds with the profile, and the cyclictest task's wakeup p50/p99
put beside the live cyclictest figures of every scheduler's passes: more
held-out scenarios of the agreement table, never fitted on.

Limits: the player measures wakeups from user space (timer expiry or child
exit -> the process runs again; see live/player), the simulator from
runnable -> running; exits and page faults cost CPU live and nothing in the
model beyond fork_cost_ns, which the calibration can only absorb as a
slower machine.
"""
from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from ._errors import AgentcgError
from . import live, units

SIM_POLICY = {"eevdf": "eevdf", "flatcg": "flatcg", "agentcg": "agentcg"}
REPO_TRACES = Path(__file__).resolve().parents[2] / "traces"  # the bundled traces (live compare plays them)
DEFAULT_CONTEXT_SWITCH_NS = 2000
DEFAULT_WAKEUP_OVERHEAD_NS = 1000
CALIBRATION_ROUNDS = 15


def parse_duration(text: str) -> int:
    """The one duration grammar (agentcg.units), errors naming --duration."""
    return units.parse_duration_ns(text, "--duration")


# --- preparing the trace ------------------------------------------------------

def _scale_value(v: Any, f: float) -> Any:
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return int(v * f)
    if isinstance(v, dict):
        return {k: (_scale_value(x, f) if k in ("min", "max", "mean", "median") else x) for k, x in v.items()}
    return v


def _scale_ops(ops: List[Any], f: float) -> None:
    for op in ops:
        if op.get("op") == "mem" and "bytes" in op:
            op["bytes"] = _scale_value(op["bytes"], f)
        if "body" in op:
            _scale_ops(op["body"], f)
        if isinstance(op.get("child"), dict):
            _scale_ops(op["child"].get("ops", []), f)


def prepare_trace(src: Path, dst: Path, duration_ns: int, mem_scale: float) -> Dict[str, Any]:
    """A copy of SRC that stops at DURATION_NS (or earlier, if the trace
    does) with every memory size scaled by MEM_SCALE."""
    try:
        with open(src, "rb") as fb:
            binary = fb.read(1) == b"\x89"  # the binary form's magic (trace convert)
        if binary:  # its canonical JSON (keys in the documented order), written where the copy goes
            from . import _core

            dst.parent.mkdir(parents=True, exist_ok=True)
            _core.Trace.from_file(str(src)).write(str(dst))
        with open(dst if binary else src, encoding="utf-8") as f:
            t = json.load(f)
    except OSError as e:
        raise AgentcgError(f"{src}: cannot read: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise AgentcgError(f"{src}:{e.lineno}: not JSON: {e.msg}") from None
    if not isinstance(t, dict) or t.get("format") != "agentcg-trace":
        raise AgentcgError(f"{src}: not an agentcg trace (expected \"format\": \"agentcg-trace\")")
    own = t.get("duration_ns")
    t["duration_ns"] = min(own, duration_ns) if isinstance(own, int) else duration_ns
    if mem_scale != 1.0:
        for cg in t.get("cgroups", []):
            for k in ("memory_high", "memory_max"):
                if isinstance(cg.get(k), int):
                    cg[k] = max(1, int(cg[k] * mem_scale))
        for p in t.get("processes", []):
            _scale_ops(p.get("ops", []), mem_scale)
    t["description"] = (t.get("description") or "") + \
        f" [fidelity copy: duration {t['duration_ns']} ns, memory x {mem_scale}]"
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(json.dumps(t, indent=1) + "\n", encoding="utf-8")
    from .traces import as_trace

    as_trace(str(dst))  # validates: a bad scale or duration is reported here
    return t


# --- comparing ------------------------------------------------------------------

def _pct_err(sim: Optional[float], real: Optional[float]) -> Optional[float]:
    if sim is None or real is None or real == 0:
        return None
    return 100.0 * (sim - real) / real


def leaf_cgroups(r: Mapping[str, Any]) -> List[str]:
    cgs = [c for c in r.get("cgroups", {}) if c != "/"]
    return sorted(c for c in cgs if not any(o.startswith(c + "/") for o in cgs))


# A percentile measured on fewer live samples than this is shown but neither
# fitted nor scored. A p50 needs 9: from 9 samples on, its 95 % interval
# (order statistics) lies inside the sample's range; from fewer, it is
# anything between their minimum and maximum (the hogs trace's six
# processes wake twice each, at their start; the io trace's /batch hogs
# four times). A p99 needs 100: below that it is their maximum. live
# compare's cyclictest passes and the io trace's I/O cgroup have thousands
# of wakeups, a session of the agent trace 8-59, the agent trace 9-11 tool
# calls and the fork storm's victim 13-18.
MIN_SAMPLES = {"p50": 9, "p99": 100}


def scored(p: str, live_count: Any) -> bool:
    """Whether percentile P of LIVE_COUNT live samples is fitted and scored."""
    return (live_count or 0) >= MIN_SAMPLES[p]


def side_by_side(sim: Mapping[str, Any], real: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """Rows {metric, sim, live, error_pct | error_abs} for one (trace,
    scheduler); a latency row of too few live samples (MIN_SAMPLES) has its
    error_pct None and `samples`, the live count, instead."""
    rows: List[Dict[str, Any]] = []

    def lat(key: str, label: str) -> None:
        n = real.get(key, {}).get("count") or 0
        for p in ("p50", "p99"):
            s = sim.get(key, {}).get(p)
            r = real.get(key, {}).get(p)
            if (sim.get(key, {}).get("count") or 0) and n:
                row = {"metric": f"{label} {p}", "unit": "ms", "sim": s, "live": r, "error_pct": _pct_err(s, r)}
                if not scored(p, n):
                    row.update(error_pct=None, samples=n)
                rows.append(row)

    lat("wakeup_latency_ns", "wakeup latency")
    for cg in leaf_cgroups(real):
        s = sim.get("cgroups", {}).get(cg, {}).get("cpu_share")
        r = real["cgroups"][cg].get("cpu_share")
        if s is None or r is None:
            continue
        rows.append({"metric": f"CPU share {cg}", "unit": "share", "sim": s, "live": r,
                     "error_abs": s - r})
    # the split of the CPU the trace's cgroups got (each leaf's part of their
    # sum): how the scheduler divided it, apart from what the live machine
    # spent outside them (the player's supervisor, daemons, emulation)
    leaves = [cg for cg in leaf_cgroups(real) if cg in sim.get("cgroups", {})]
    tot_s = sum(sim["cgroups"][cg].get("cpu_share") or 0 for cg in leaves)
    tot_r = sum(real["cgroups"][cg].get("cpu_share") or 0 for cg in leaves)
    if len(leaves) > 1 and tot_s > 0 and tot_r > 0:
        for cg in leaves:
            s = (sim["cgroups"][cg].get("cpu_share") or 0) / tot_s
            r = (real["cgroups"][cg].get("cpu_share") or 0) / tot_r
            rows.append({"metric": f"CPU split {cg}", "unit": "share", "sim": s, "live": r, "error_abs": s - r})
    lat("tool_call_latency_ns", "tool-call latency")
    s, r = sim.get("context_switches"), real.get("context_switches")
    rows.append({"metric": "context switches", "unit": "count", "sim": s, "live": r, "error_pct": _pct_err(s, r)})
    return rows


def error_summary(rows: Sequence[Dict[str, Any]]) -> Dict[str, Optional[float]]:
    """The goal's figures: worst |error| of the wakeup p50/p99 (%), of the
    CPU shares of the machine and of the split among the trace's cgroups
    (fractions)."""
    p99 = [abs(r["error_pct"]) for r in rows if r["metric"] == "wakeup latency p99" and r.get("error_pct") is not None]
    p50 = [abs(r["error_pct"]) for r in rows if r["metric"] == "wakeup latency p50" and r.get("error_pct") is not None]
    sh = [abs(r["error_abs"]) for r in rows if r["metric"].startswith("CPU share") and r.get("error_abs") is not None]
    sp = [abs(r["error_abs"]) for r in rows if r["metric"].startswith("CPU split") and r.get("error_abs") is not None]
    tc = [abs(r["error_pct"]) for r in rows if r["metric"] == "tool-call latency p50" and r.get("error_pct") is not None]
    return {"wakeup_p50_max_err_pct": max(p50) if p50 else None,
            "wakeup_p99_max_err_pct": max(p99) if p99 else None,
            "share_max_err_abs": max(sh) if sh else None,
            "split_max_err_abs": max(sp) if sp else None,
            "tool_p50_max_err_pct": max(tc) if tc else None}


def residual_targets(sim: Mapping[str, Any], real: Mapping[str, Any], name: str) -> List[Tuple[str, float, float]]:
    """(name, simulated, live) pairs the calibration fits: per leaf cgroup
    with wakeups on both sides its wakeup latency p50 and p99, and per run
    the tool-call latency p50 when the trace has tool calls; each from
    enough live samples (MIN_SAMPLES)."""
    out: List[Tuple[str, float, float]] = []
    for cg in leaf_cgroups(real):
        s = sim.get("cgroups", {}).get(cg, {}).get("wakeup_latency_ns", {})
        r = real["cgroups"][cg].get("wakeup_latency_ns", {})
        if s.get("count"):
            for p in ("p50", "p99"):
                if scored(p, r.get("count")):
                    out.append((f"{name}:{cg}:wakeup_{p}", float(s[p]), float(r[p])))
    s, r = sim.get("tool_call_latency_ns", {}), real.get("tool_call_latency_ns", {})
    if s.get("count") and scored("p50", r.get("count")):
        out.append((f"{name}:tool_call_p50", float(s["p50"]), float(r["p50"])))
    return out


def _err(r: Mapping[str, Any]) -> str:
    if r.get("samples") is not None:
        return f"n={r['samples']}, not scored"
    if r.get("error_pct") is not None:
        return f"{r['error_pct']:+.1f} %"
    if r.get("error_abs") is not None:
        return f"{100 * r['error_abs']:+.1f} pts"
    return "-"


def format_table(before: Mapping[str, List[Dict[str, Any]]], after: Mapping[str, List[Dict[str, Any]]]) -> str:
    lines = ["| trace / scheduler | metric | live | sim | error | sim (calibrated) | error |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for key, rows in before.items():
        arows = {r["metric"]: r for r in after.get(key, [])}
        for r in rows:
            a = arows.get(r["metric"], {})
            cell = live.format_cell
            lines.append(f"| {key} | {r['metric']} ({r['unit']}) | {cell(r['live'], r['unit'])} | "
                         f"{cell(r['sim'], r['unit'])} | {_err(r)} | {cell(a.get('sim'), r['unit'])} | "
                         f"{_err(a) if a else '-'} |")
    return "\n".join(lines) + "\n"


# --- the command ----------------------------------------------------------------

def _simulate(trace: Path, policy: str, seed: int, machine: Mapping[str, int]) -> Dict[str, Any]:
    from .api import run

    return dict(json.loads(run(str(trace), policy=policy, seed=seed, config={"machine": dict(machine)}).text))


# The fitted parameters: (config key, lower bound, upper bound), searched in
# log space: latencies span microseconds to milliseconds and the residuals
# are log-ratios, so equal relative steps are the natural scale.
PARAMS = (("wakeup_overhead_ns", 100.0, 1e6), ("speed_pct", 5.0, 1000.0))
MAX_LOG_STEP = 1.0
SCAN_POINTS = 25  # wakeup costs tried before the refinement, log-spaced over 100 ns .. 1 ms
FD_STEP = 0.1  # finite-difference step in log space (10 %): latencies are step functions of the costs


def _log_residuals(pairs: Sequence[Tuple[str, float, float]]) -> List[float]:
    return [math.log(max(live_v, 1.0)) - math.log(max(sim_v, 1.0)) for _, sim_v, live_v in pairs]


def calibrate(simulate: Any, keys: Sequence[str], real: Mapping[str, Mapping[str, Any]], cpus: int,
              rounds: int = CALIBRATION_ROUNDS, base: Optional[Mapping[str, Any]] = None
              ) -> Tuple[Dict[str, int], List[Dict[str, Any]]]:
    """Gauss-Newton on the log-ratios live/sim of residual_targets() over the
    logarithms of the parameters, the Jacobian by finite differences (one
    extra simulation per parameter and key), each step a linear
    least-squares solve in Eigen (_core.least_squares); a step that does not
    lower the squared error is halved (at most 4 times), and no step
    moves a parameter by more than a factor e. The objective is not convex
    (latency percentiles jump as queues form), so the search starts from
    the best of SCAN_POINTS wakeup costs.
    SIMULATE(key, machine) -> results dict. Returns the machine and the
    per-round history. BASE: machine keys the fit keeps as they are (e.g.
    the model's per-CPU costs from a profile); the fitted ones override it."""
    # the simulator's defaults first (the "before"), then a coarse scan of
    # the wakeup cost picks the basin the Gauss-Newton steps refine
    m0, hist = _gauss_newton(simulate, keys, real, cpus, 0, float(DEFAULT_WAKEUP_OVERHEAD_NS), base)
    if "wakeup_overhead_ns" in (base or {}):  # held fixed: nothing to scan
        m, refined = _gauss_newton(simulate, keys, real, cpus, rounds, float(DEFAULT_WAKEUP_OVERHEAD_NS), base)
        return m, hist + refined[1:]
    scan = []
    for i in range(SCAN_POINTS):
        w = 100.0 * (1e6 / 100.0) ** (i / (SCAN_POINTS - 1))  # 100 ns .. 1 ms, log-spaced
        scan.append((_gauss_newton(simulate, keys, real, cpus, 0, w, base)[1][0]["sq_log_error"], w))
    start = min(scan)[1]
    m, refined = _gauss_newton(simulate, keys, real, cpus, rounds, start, base)
    if refined[-1]["sq_log_error"] >= hist[0]["sq_log_error"]:
        return m0, hist  # nothing beats the defaults
    return m, hist + refined


BACKGROUND_PCTS = (0, 5, 10, 20, 30, 40, 60, 80, 100, 120, 150, 180)  # background CPU tried, % of one CPU
# CPU per sleep or I/O cycle tried (ns): the blocking call and its return
SLEEP_COSTS = (0, 25000, 50000, 100000, 150000, 200000, 250000, 300000, 400000)


def share_error(simulate: Any, keys: Sequence[str], real: Mapping[str, Mapping[str, Any]],
                m: Mapping[str, Any]) -> float:
    """Sum of squared errors of every leaf cgroup's CPU share (of the whole machine)."""
    err = 0.0
    for k in keys:
        r = simulate(k, m)
        for row in side_by_side(r, real[k]):
            if row["metric"].startswith("CPU share") and row.get("error_abs") is not None:
                err += row["error_abs"] ** 2
    return err


def fit_share_costs(simulate: Any, keys: Sequence[str], real: Mapping[str, Mapping[str, Any]],
                   m: Mapping[str, Any]) -> Dict[str, Any]:
    """M with the background_cpu_pct (CPU used outside the trace's cgroups:
    daemons, the player's supervisor, the emulation) of BACKGROUND_PCTS and
    the sleep_cost_ns (a task's own CPU per sleep or I/O cycle: the
    blocking call, schedule() out and back, the player's sample) of
    SLEEP_COSTS that together minimise the CPU-share error over KEYS (the
    two pull the shares opposite ways: background work takes from every
    cgroup, a sleep's cost adds to the cgroups that sleep); M unchanged
    where the model has no such key or nothing beats M's own values."""
    if not model_knows({"background_cpu_pct": 0}):
        return dict(m)
    costs = SLEEP_COSTS if model_knows({"sleep_cost_ns": 0}) else (0,)
    own = (m.get("background_cpu_pct", 0), m.get("sleep_cost_ns", 0))
    best = (share_error(simulate, keys, real, m), own)
    for cost in costs:
        for pct in BACKGROUND_PCTS:
            trial = {**m, "background_cpu_pct": pct}
            if cost:
                trial["sleep_cost_ns"] = cost
            else:
                trial.pop("sleep_cost_ns", None)
            e = share_error(simulate, keys, real, trial)
            if e < best[0] - 1e-12:
                best = (e, (pct, cost))
    out = dict(m)
    out.pop("background_cpu_pct", None)
    out.pop("sleep_cost_ns", None)
    if best[1][0]:
        out["background_cpu_pct"] = best[1][0]
    if best[1][1]:
        out["sleep_cost_ns"] = best[1][1]
    return out


def _live_json(path: Path, what: str) -> Any:
    """The JSON document of an optional file of the live results (None when
    absent); an unreadable one is an error naming the file and WHAT it holds."""
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise AgentcgError(f"{path}: cannot read {what}: {e}") from None


FORK_BENCH_KEY = "storm_forks_per_s"  # live compare's stress-ng --fork 4 throughput (benchmarks.json)
# live compare's serial fork + exit cycles (agentcg-work forkstorm 100 1):
# CPU per cycle of the forker and of the child, from getrusage
FORK_PARENT_KEY, FORK_CHILD_KEY = "fork_parent_us", "fork_child_us"


def _trace_command(sub: str, args: Sequence[str], what: str) -> str:
    """`agentcg trace SUB ARGS...` in-process: its stdout; a failure is an
    AgentcgError starting with WHAT and carrying the command's message."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from . import _core

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = _core.trace_command(sub, list(args))
    if rc != 0:
        raise AgentcgError(f"{what}: " + (err.getvalue().strip() or f"trace {sub} failed (exit {rc})"))
    return out.getvalue()


def fork_cost_from_benchmarks(path: Path, cpus: int, background_pct: int
                              ) -> Optional[Tuple[Dict[str, int], str]]:
    """({fork_cost_ns[, exit_cost_ns, fork_after_ns]}, how) measured on the
    live machine by live compare's fork benchmarks in PATH (benchmarks.json:
    scheduler -> repetitions) under the kernel's own scheduler (eevdf; the
    BPF schedulers' runs add their own work: ext_fork_from_benchmarks), or
    None without them. A measurement of the machine apart from the traces'
    scenarios, so a held-out fork storm stays held out.

    The whole cycle: stress-ng --fork 4's workers, next to a sleeping
    cyclictest at equal weight, have the machine less the background CPU,
    so a fork + exit cycle of a concurrent fork loop costs (cpus -
    background) / forks per second of CPU. Its parts: the serial cycles
    (FORK_PARENT_KEY, FORK_CHILD_KEY: the forker's and the child's CPU per
    cycle of a child that exits at once) give the fork path, before the
    child exists (fork_cost_ns), and the exit (exit_cost_ns); the rest of
    the concurrent cycle is the forker's copy-on-write work while its
    children live (fork_after_ns; under TCG 10.7 ms per stress-ng cycle
    against 2.1 ms per serial one). Without the serial cycles (an older
    live compare) the whole cycle is fork_cost_ns, as before they existed;
    without stress-ng's rate, the serial fork and exit alone."""
    parent, child = _bench_values(path, "eevdf", FORK_PARENT_KEY), _bench_values(path, "eevdf", FORK_CHILD_KEY)
    rates = _bench_values(path, "eevdf", FORK_BENCH_KEY)
    avail = cpus - background_pct / 100.0
    cycle = avail * 1e9 / _median(rates) if rates and avail > 0 else None
    if parent and child:
        fork_ns, exit_ns = _median(parent) * 1000.0, _median(child) * 1000.0
        out = {"fork_cost_ns": _round_fork_ns(fork_ns), "exit_cost_ns": _round_fork_ns(exit_ns)}
        how = (f"fork_cost_ns {out['fork_cost_ns']} and exit_cost_ns {out['exit_cost_ns']} from {path.name}: serial "
               f"fork + exit cycles under eevdf, the forker's CPU {fork_ns / 1e6:.2f} ms and the child's "
               f"{exit_ns / 1e6:.2f} ms per cycle (medians of {len(parent)})")
        if cycle:
            out["fork_after_ns"] = _round_fork_ns(max(0.0, cycle - fork_ns - exit_ns))
            how += (f"; fork_after_ns {out['fork_after_ns']}: the rest of stress-ng's concurrent cycle "
                    f"({_median(rates):.0f} forks/s on {avail:g} CPUs: {cycle / 1e6:.1f} ms)")
        return (out, how) if out["fork_cost_ns"] > 0 else None
    if not cycle:
        return None
    ns = _round_fork_ns(cycle)
    how = (f"fork_cost_ns from {path.name}: stress-ng --fork, eevdf median {_median(rates):.0f} forks/s of "
           f"{len(rates)} on {avail:g} CPUs (the exit folded in)")
    return ({"fork_cost_ns": ns}, how) if ns > 0 else None


# --- a fork storm's costs, from a recording of it -----------------------------------

_SWITCH_RE = re.compile(r"\[(\d+)\][^:]*?\s(\d+\.\d+): sched_switch: .*?prev_pid=(\d+) .*?==> .*?next_pid=(\d+)")
_FORK_RE = re.compile(r"\s(\d+\.\d+): sched_process_fork: .*?\bpid=(\d+) child_comm=(.*?) child_pid=(\d+)")
_EXIT_RE = re.compile(r"\[(\d+)\][^:]*?\s(\d+\.\d+): sched_process_exit: comm=(.*?) pid=(\d+)")


def recorded_fork_cycle(ftrace: Path) -> Optional[Dict[str, Any]]:
    """What each fork of a recorded fork storm cost (an agentcg-record
    folder's ftrace.txt, trace clock mono): the task that forked most is the
    forker; its CPU per fork (`forker_ns`), and over its children that
    exited within the recording, the CPU each used before its
    sched_process_exit (`child_ns`: its own work and start) and after it
    (`exit_ns`: do_exit's teardown, which the task runs until its last
    switch-out), with the forker's comm and the counts; None without a
    forker of at least 10 children that exited."""
    curr: Dict[str, Tuple[str, float]] = {}  # cpu -> (pid, since)
    cpu_ns: Dict[str, float] = {}
    exit_at: Dict[str, float] = {}
    before_exit: Dict[str, float] = {}
    parent: Dict[str, str] = {}
    forks: Dict[str, int] = {}
    comm: Dict[str, str] = {}

    def charge(pid: str, t0: float, t1: float) -> None:
        if pid != "0":
            cpu_ns[pid] = cpu_ns.get(pid, 0.0) + (t1 - t0) * 1e9

    with open(ftrace, encoding="utf-8", errors="replace") as f:
        for line in f:
            if "sched_switch:" in line:
                m = _SWITCH_RE.search(line)
                if m:
                    cpu, t, prev, nxt = m.group(1), float(m.group(2)), m.group(3), m.group(4)
                    if cpu in curr and curr[cpu][0] == prev:
                        charge(prev, curr[cpu][1], t)
                    curr[cpu] = (nxt, t)
            elif "sched_process_fork:" in line:
                m = _FORK_RE.search(line)
                if m:
                    forks[m.group(2)] = forks.get(m.group(2), 0) + 1
                    parent[m.group(4)] = m.group(2)
            elif "sched_process_exit:" in line:
                m = _EXIT_RE.search(line)
                if m:
                    cpu, t, pid = m.group(1), float(m.group(2)), m.group(4)
                    if cpu in curr and curr[cpu][0] == pid:  # the exiting task emits it: bank its run so far
                        charge(pid, curr[cpu][1], t)
                        curr[cpu] = (pid, t)
                    exit_at[pid] = t
                    before_exit[pid] = cpu_ns.get(pid, 0.0)
                    comm[pid] = m.group(3)
    if not forks:
        return None
    forker = max(forks, key=lambda p: (forks[p], -int(p)))
    kids = [c for c, p in parent.items() if p == forker and c in exit_at]
    if len(kids) < 10:
        return None
    child = [before_exit[c] for c in kids]
    ex = [cpu_ns.get(c, 0.0) - before_exit[c] for c in kids]
    return {"forker_pid": int(forker), "forks": forks[forker], "children": len(kids),
            "forker_ns": cpu_ns.get(forker, 0.0) / forks[forker],
            "child_ns": sum(child) / len(child), "exit_ns": sum(ex) / len(ex),
            "child_comm": max(set(comm[c] for c in kids), key=lambda x: sum(1 for c in kids if comm[c] == x))}


def _without_forks(ops: Sequence[Mapping[str, Any]]) -> List[Mapping[str, Any]]:
    out: List[Mapping[str, Any]] = []
    for o in ops:
        if o.get("op") == "fork":
            continue
        if o.get("op") == "repeat":
            o = {**o, "body": _without_forks(o.get("body") or [])}
        out.append(o)
    return out


def expected_run_ns(ops: Sequence[Mapping[str, Any]]) -> float:
    """The mean CPU work of a process's OPS (trace JSON): its run ops, repeat
    bodies times their count, not the work of the children it forks. The
    simulator's own means (trace::Value::mean(), capped distributions
    included), through `trace stats`'s cpu_demand_ns on a one-process trace;
    a bad op is an AgentcgError with the parser's message."""
    import tempfile

    doc = {"format": "agentcg-trace", "version": 1, "machine": {"cpus": 1},
           "cgroups": [{"path": "/w", "cpu_weight": 100}],
           "processes": [{"pid": 1, "start_ns": 0, "cgroup": "/w", "ops": _without_forks(ops)}]}
    with tempfile.TemporaryDirectory(prefix="agentcg-work-") as d:
        path = Path(d) / "work.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        out = _trace_command("stats", [str(path), "--json"], "a child's ops")
    return float(json.loads(out)["cpu_demand_ns"])


def _fork_children(ops: Sequence[Mapping[str, Any]]) -> List[Mapping[str, Any]]:
    out: List[Mapping[str, Any]] = []
    for o in ops:
        if o.get("op") == "fork" and isinstance(o.get("child"), dict):
            out.append(o["child"])
        elif o.get("op") == "repeat":
            out += _fork_children(o.get("body") or [])
    return out


def fork_costs_from_recording(rec: Path, trace: Path, fork_cost_ns: int, speed_pct: int
                              ) -> Optional[Tuple[Dict[str, int], str]]:
    """({fork_after_ns, fork_child_ns, exit_cost_ns}, how) from a recording
    of TRACE's fork storm played live (REC: an agentcg-record folder; live
    compare's recordings/fork-storm), or None when it holds no storm whose
    children TRACE describes. Per fork, in the recording: the forker's CPU
    less the serial fork path (FORK_COST_NS) is its copy-on-write work once
    the child exists (fork_after_ns); a child's CPU before its exit less the
    work its trace op asks (at SPEED_PCT) is its own start (fork_child_ns);
    its CPU after sched_process_exit is the exit (exit_cost_ns: concurrent
    exits cost more than the serial cycle's). Not a fit, but not
    independent of the storm either: a held-out fork storm keeps its
    latencies, shares and the BPF policies' runs out of the profile, not
    the CPU its forks cost under EEVDF (the report says where each key
    came from)."""
    cyc = recorded_fork_cycle(rec / "ftrace.txt")
    if cyc is None:
        return None
    doc = json.loads(trace.read_text(encoding="utf-8"))
    specs = [c for p in doc.get("processes") or [] for c in _fork_children(p.get("ops") or [])
             if c.get("comm") == cyc["child_comm"]]
    if not specs:
        return None
    work = sum(expected_run_ns(c.get("ops") or []) for c in specs) / len(specs) * 100.0 / speed_pct
    out = {"fork_after_ns": _round_fork_ns(max(0.0, cyc["forker_ns"] - fork_cost_ns)),
           "fork_child_ns": _round_fork_ns(max(0.0, cyc["child_ns"] - work)),
           "exit_cost_ns": _round_fork_ns(cyc["exit_ns"])}
    how = (f"fork_after_ns {out['fork_after_ns']}, fork_child_ns {out['fork_child_ns']} and exit_cost_ns "
           f"{out['exit_cost_ns']} from a recording of the fork storm under eevdf ({rec}): the forker's CPU "
           f"{cyc['forker_ns'] / 1e6:.2f} ms per fork ({cyc['forks']} forks) less the serial fork path; its "
           f"{cyc['children']} {cyc['child_comm']} children's {cyc['child_ns'] / 1e6:.2f} ms before their exit "
           f"less their work ({work / 1e6:.2f} ms by {trace.name}) and {cyc['exit_ns'] / 1e6:.2f} ms after it "
           "(means)")
    return out, how


def ext_fork_from_benchmarks(path: Path, ext_busy_pct: int, fork_cost_ns: int) -> Optional[Tuple[int, str]]:
    """(ext_fork_ns, how): what a fork costs the forker under the BPF
    schedulers over the kernel's own (init_task with its task storage,
    enable), from live compare's serial fork + exit cycles (PATH:
    benchmarks.json), or None without them: the forker's CPU per cycle
    under the scheduler x (1 - ext_busy_pct/100) (the model runs a fork's
    fork_cost_ns + ext_fork_ns at (100 - ext_busy_pct) % speed under them),
    less fork_cost_ns (eevdf's); the median over the BPF schedulers, at
    0.1 ms, clamped at 0 (a cheaper fork is not a cost).
    stress-ng's fork rate is not used for it: under the BPF schedulers it
    falls (0.79-0.91x EEVDF's) while the serial cycles' CPU per fork stays
    EEVDF's (v9: +0.0 ms), so that loss is not per-fork work."""
    if fork_cost_ns <= 0 or not _bench_values(path, "eevdf", FORK_PARENT_KEY):
        return None
    parts: List[str] = []
    extra: List[float] = []
    for s in EXT_SCHEDULERS:
        vals = _bench_values(path, s, FORK_PARENT_KEY)
        if vals:
            v = _median(vals)
            extra.append(v * 1000.0 * (100 - ext_busy_pct) / 100.0 - fork_cost_ns)
            parts.append(f"{s} {v / 1000:.2f} ms ({extra[-1] / 1e6:+.1f} ms)")
    if not extra:
        return None
    ns = _round_fork_ns(max(0.0, _median(extra)))
    how = (f"ext_fork_ns {ns} from {path.name}: the forker's CPU per serial fork under the BPF schedulers, medians "
           "of the repetitions (" + ", ".join(parts) + ") at ext_busy_pct " + str(ext_busy_pct))
    return ns, how


def _bench_values(path: Path, scheduler: str, key: str) -> List[float]:
    """SCHEDULER's positive values of KEY (one per repetition) in PATH
    (benchmarks.json: scheduler -> repetitions); [] without any."""
    doc = _live_json(path, "the live benchmarks")
    reps = doc.get(scheduler) if isinstance(doc, dict) else None
    if not isinstance(reps, list):
        return []
    return [r[key] for r in reps if isinstance(r, dict) and isinstance(r.get(key), (int, float))
            and not isinstance(r.get(key), bool) and r[key] > 0]


def _median(xs: Sequence[float]) -> float:
    import statistics

    return statistics.median(xs)


def _round_fork_ns(ns: float) -> int:
    """A fork cost rounded to 0.1 ms: the benchmarks' own spread is far wider."""
    return int(round(ns / 1e5)) * 100000


KICK_BUSY_MAX_NS = 10000000  # machine.kick_busy_ns's range in the config loader (config/config.cc)
IDLE_CYCLICTEST_KEY = "cyclictest_idle_p50_us"  # live compare's cyclictest alone (benchmarks.json)


def kick_busy_from_benchmarks(path: Path) -> Optional[Tuple[int, str]]:
    """(kick_busy_ns, how) from live compare's cyclictest passes under EEVDF
    (PATH: benchmarks.json): the p50 next to CPU hogs less the p50 on the
    idle machine, medians of the repetitions, rounded to 10 us. Alone, each
    timer wakeup finds an idle CPU; beside two hogs per CPU it preempts one,
    at once at the p50 (EEVDF places a task that slept 1 ms ahead of the
    hogs), so the difference is what waking onto a busy CPU costs: the
    model's kick_busy_ns (a busy CPU notices a preempting kick that much
    later). None for results without the idle pass (before it existed)."""
    idle = _bench_values(path, "eevdf", IDLE_CYCLICTEST_KEY)
    load = _bench_values(path, "eevdf", CYCLICTEST_KEY)
    if not idle or not load:
        return None
    d_us = _median(load) - _median(idle)
    ns = min(KICK_BUSY_MAX_NS, max(0, int(round(d_us * 1000.0 / 10000.0)) * 10000))
    return ns, (f"kick_busy_ns {ns} from {path.name}: cyclictest p50 under CPU load less on the idle machine, "
                f"eevdf, medians of {len(load)} and {len(idle)} repetition(s) ({_median(load):.0f} - "
                f"{_median(idle):.0f} us)")


MEM_FAULT_KEY = "mem_fault_us_per_mib"  # live compare's `agentcg-work touch 64` (benchmarks.json)
PER_MIB_MAX_NS = 1000000000  # mem_fault_ns_per_mib's and fork_ns_per_mib's range in the config loader


def mem_fault_from_benchmarks(path: Path) -> Optional[Tuple[int, str]]:
    """(mem_fault_ns_per_mib, how) from live compare's page-fault pass under
    EEVDF (PATH: benchmarks.json): the CPU time of writing one byte of every
    page of 64 MiB of new memory, per MiB, median of the repetitions,
    rounded to 1 us. agentcg-player's mem op does exactly that with what
    the fidelity copy of a trace asks (its bytes already x the live run's
    memory scale: prepare_trace), so the model charges a process that
    much CPU per MiB it adds. A measurement of the machine, not a fit.
    None for results without the pass (before 2026-12-03)."""
    us = _bench_values(path, "eevdf", MEM_FAULT_KEY)
    if not us:
        return None
    ns = min(PER_MIB_MAX_NS, int(round(_median(us))) * 1000)
    return ns, (f"mem_fault_ns_per_mib {ns} from {path.name}: the CPU of writing 64 MiB of new memory once "
                f"(agentcg-work touch, page faults) under eevdf, per MiB, median of {len(us)} repetition(s) "
                "(a benchmark, not a fit)")


FORK_MEM_KEYS = ("fork_mem_parent_us", "fork_mem_child_us", "fork_mem_mb", "fork_parent_us", "fork_child_us")


def fork_mem_from_benchmarks(path: Path) -> Optional[Tuple[int, str]]:
    """(fork_ns_per_mib, how) from live compare's serial fork + exit cycles
    under EEVDF, from a forker holding fork_mem_mb MiB against the plain
    ones (PATH: benchmarks.json): per repetition, the forker's and the
    child's CPU per cycle, that much more per MiB (its page tables copied
    and torn down), median of the repetitions, rounded to 1 us per MiB,
    never below 0. None for results without the pass (before 2026-12-03)."""
    doc = _live_json(path, "the live benchmarks")
    reps = doc.get("eevdf") if isinstance(doc, dict) else None
    per_mib = [(r["fork_mem_parent_us"] + r["fork_mem_child_us"] - r["fork_parent_us"] - r["fork_child_us"])
               / r["fork_mem_mb"] for r in (reps if isinstance(reps, list) else [])
               if isinstance(r, dict) and all(isinstance(r.get(k), (int, float)) and not isinstance(r.get(k), bool)
                                              for k in FORK_MEM_KEYS) and r["fork_mem_mb"] > 0]
    if not per_mib:
        return None
    ns = min(PER_MIB_MAX_NS, max(0, int(round(_median(per_mib))) * 1000))
    return ns, (f"fork_ns_per_mib {ns} from {path.name}: serial fork + exit cycles under eevdf from a forker "
                f"holding memory against a small one, the forker's and the child's CPU per cycle per MiB held, "
                f"median of {len(per_mib)} repetition(s) (a benchmark, not a fit)")


# machine keys measured by live compare's memory passes, each with its
# reader: held fixed in a fit when benchmarks.json has the pass
MEASURED_MEMORY_COSTS = (("mem_fault_ns_per_mib", mem_fault_from_benchmarks),
                         ("fork_ns_per_mib", fork_mem_from_benchmarks))

PLAYER_KEY = "player_{}_p50_us"  # live compare's player_sleeper passes (benchmarks.json, live.PLAYER_BENCHES)
IDLE_EXIT_MAX_NS = 10000000  # machine.idle_exit_ns's range in the config loader (config/config.cc)
TIMER_BUSY_MAX_NS = 10000000  # machine.timer_busy_ns's and ext_timer_busy_ns's range there


def wakeup_costs_from_player(path: Path, context_switch_ns: int) -> Optional[Tuple[Dict[str, int], str]]:
    """The machine's wakeup costs measured with agentcg-player itself, the
    process that plays every fidelity scenario: live compare's player_sleeper
    passes (PATH: benchmarks.json; two processes {run 20 us, sleep S}),
    medians of the repetitions, EEVDF's unless said.
    - wakeup_overhead_ns: the p50 sleeping 1 ms on the idle machine, less the
      context switch (the model's sample of a wakeup onto an idle CPU is the
      two);
    - timer_busy_ns: the p50 sleeping 1 ms beside two CPU hogs per CPU less
      that. Recorded (README, Fidelity), nearly all of it is the timer's
      late delivery on the busy vCPU (sleep -> sched_waking), not the run
      queue (sched_waking -> switch-in: 0.1 ms), so it is the model's
      timer_busy_ns and not kick_busy_ns (which stays 0: a remote kick of a
      busy vCPU is not measured);
    - ext_timer_busy_ns: the BPF schedulers' extra delay under load beyond
      their extra on the idle machine ((load - EEVDF's load) - (idle -
      EEVDF's idle), the median over flatcg and agentcg): sched_ext's part
      of the late timer (no HRTICK), apart from its own wakeup path
      (ext_wakeup_ns, measured with cyclictest);
    - idle_exit_ns, idle_exit_after_ns: what the p50 gains when the vCPUs
      idle longer between wakeups (sleeps of 10 and 100 ms): idle_exit_ns
      the 100 ms pass's excess over the 1 ms pass, paid by a CPU idle for at
      least twice the longest sleep whose excess is under half of it.
    Rounded to 1 us (10 us for the differences), never negative. None for
    results without the idle pass (before it existed)."""
    def med_of(sched: str) -> Dict[str, float]:
        out = {}
        for label in live.PLAYER_BENCHES:
            vals = _bench_values(path, sched, PLAYER_KEY.format(label))
            if vals:
                out[label] = _median(vals)
        return out

    med = med_of("eevdf")
    if "idle" not in med:
        return None
    out = {"wakeup_overhead_ns": max(0, int(round(med["idle"])) * 1000 - context_switch_ns)}
    parts = [f"{med['idle']:.0f} us idle, sleeping 1 ms"]

    def step10(us: float, hi: int) -> int:
        return min(hi, max(0, int(round(us / 10.0)) * 10000))

    if "load" in med:
        out["timer_busy_ns"] = step10(med["load"] - med["idle"], TIMER_BUSY_MAX_NS)
        parts.append(f"{med['load']:.0f} us under CPU load")
        ext = {s: m["load"] - med["load"] - (m["idle"] - med["idle"])
               for s, m in ((s, med_of(s)) for s in EXT_SCHEDULERS) if "load" in m and "idle" in m}
        if ext:
            out["ext_timer_busy_ns"] = step10(_median(list(ext.values())), TIMER_BUSY_MAX_NS)
            parts.append("BPF schedulers' extra under load beyond idle " +
                         ", ".join(f"{s} {d:+.0f} us" for s, d in ext.items()))
    if "idle100" in med:
        excess = {1: 0.0, **{ms: med[lb] - med["idle"] for lb, ms in (("idle10", 10), ("idle100", 100))
                             if lb in med}}
        exit_ns = step10(excess[100], IDLE_EXIT_MAX_NS)
        parts.append(", ".join(f"{med[lb]:.0f} us idle, sleeping {ms} ms" for lb, ms in (("idle10", 10), ("idle100", 100))
                               if lb in med))
        if exit_ns > 0:
            short = max(ms for ms, e in excess.items() if e * 1000.0 < exit_ns / 2)
            out["idle_exit_ns"] = exit_ns
            out["idle_exit_after_ns"] = 2 * short * 1000000
    keys = ", ".join(f"{k} {v}" for k, v in out.items())
    n = len(_bench_values(path, "eevdf", PLAYER_KEY.format("idle")))
    return out, (f"{keys} from {path.name}: agentcg-player's wakeup p50, eevdf, medians of {n} repetition(s): "
                 + "; ".join(parts))


def tick_from_kernel(path: Path) -> Optional[Tuple[int, str]]:
    """(tick_ns, how) from the live kernel's CONFIG_HZ in PATH (kernel.json,
    written by live/vm/run-vm.sh beside the results of the boot it ran), or
    None without one (results of a run before it existed)."""
    doc = _live_json(path, "the live kernel's facts")
    hz = doc.get("config_hz") if isinstance(doc, dict) else None
    if hz is None:
        return None
    if not isinstance(hz, int) or isinstance(hz, bool) or not 0 < hz <= 10000:
        raise AgentcgError(f"{path}: field 'config_hz': expected an integer in 1..10000, got {hz!r}")
    return 1_000_000_000 // hz, f"tick_ns from {path.name}: CONFIG_HZ={hz} of {doc.get('release', 'the live kernel')}"


def preempt_from_kernel(path: Path) -> Optional[Tuple[str, str]]:
    """(machine preempt, how) from the preemption model the live kernel
    booted with (kernel.json's "preempt", from /sys/kernel/debug/sched/preempt),
    or None without one. none, voluntary and full preempt a user-space task
    alike (the IPI's return to user reschedules): the model's "full"."""
    doc = _live_json(path, "the live kernel's facts")
    mode = doc.get("preempt") if isinstance(doc, dict) else None
    if mode is None:
        return None
    if mode not in ("none", "voluntary", "full", "lazy"):
        raise AgentcgError(f"{path}: field 'preempt': expected none, voluntary, full or lazy, got {mode!r}")
    return ("lazy" if mode == "lazy" else "full"), f"preempt {mode} as {path.name} says the kernel booted"


EXT_SCHEDULERS = ("flatcg", "agentcg")  # live: BPF programs under sched_ext (SchedClass::sched_ext() in the model)
SATURATED_UTILISATION = 0.95  # a trace whose live eevdf run keeps the CPUs this busy shows its shares as the CPU gives them
CYCLICTEST_KEY = "cyclictest_load_p50_us"  # live compare's cyclictest next to CPU hogs (benchmarks.json)


EXT_WAKEUP_MAX_NS = 1000000  # machine.ext_wakeup_ns's range in the config loader (config/config.cc)


def ext_cost_from_live(real: Mapping[str, Mapping[str, Any]], keys: Sequence[str], bench: Path
                       ) -> Tuple[Dict[str, int], str]:
    """({ext_busy_pct, ext_wakeup_ns}, how): sched_ext's own kernel cost on
    the live machine, measured from live results the fit may use (KEYS: the
    fitted scenarios' trace/scheduler pairs; REAL: their live medians) and
    live compare's benchmarks, never from held-out scenarios.

    ext_busy_pct: on a fitted trace that saturates the machine (live eevdf
    utilisation >= SATURATED_UTILISATION) the leaf cgroups' summed share is
    what the CPUs give the workload; under a BPF scheduler it is lower by
    the part of the busy time sched_ext's own work took, so that part is
    1 - sum_ext / sum_eevdf; the median over (trace, BPF scheduler) pairs,
    whole percent, 0 when none is measurable. ext_wakeup_ns: cyclictest's
    p50 next to CPU load (one timer wakeup each 1 ms) under each BPF
    scheduler less under eevdf, medians of the repetitions; the median over
    the BPF schedulers, clamped at 0 (a faster wakeup is the policy's,
    not a cost)."""
    import statistics

    def leaf_sum(r: Mapping[str, Any]) -> float:
        return sum(r["cgroups"][c].get("cpu_share") or 0.0 for c in leaf_cgroups(r))

    parts: List[float] = []
    used: List[str] = []
    for k in keys:
        n, s = k.split("/")
        base = real.get(f"{n}/eevdf")
        if s not in EXT_SCHEDULERS or base is None or (base.get("cpu_utilization") or 0.0) < SATURATED_UTILISATION:
            continue
        tot_b, tot_x = leaf_sum(base), leaf_sum(real[k])
        if tot_b > 0:
            parts.append(max(0.0, 1.0 - tot_x / tot_b))
            used.append(f"{scenario_of(n)} {s} {100.0 * parts[-1]:.1f} %")
    out: Dict[str, int] = {"ext_busy_pct": int(round(100.0 * statistics.median(parts))) if parts else 0}
    how = ("ext_busy_pct " + str(out["ext_busy_pct"]) + " from the fitted scenarios' live shares (1 - sum of the leaf "
           "shares under the BPF scheduler / under eevdf, median of " + (", ".join(used) or "none: no saturated "
                                                                           "fitted scenario") + ")")
    doc = _live_json(bench, "the live benchmarks")

    def p50(sched: str) -> Optional[float]:
        reps = doc.get(sched) if isinstance(doc, dict) else None
        vals = [r[CYCLICTEST_KEY] for r in reps or [] if isinstance(r, dict)
                and isinstance(r.get(CYCLICTEST_KEY), (int, float)) and not isinstance(r.get(CYCLICTEST_KEY), bool)]
        return statistics.median(vals) if vals else None

    base_us = p50("eevdf")
    deltas = [p - base_us for p in (p50(s) for s in EXT_SCHEDULERS) if p is not None and base_us is not None]
    if deltas:
        ns = int(round(max(0.0, statistics.median(deltas)) * 1000.0))
        out["ext_wakeup_ns"] = min(ns, EXT_WAKEUP_MAX_NS)
        how += (f"; ext_wakeup_ns {out['ext_wakeup_ns']} from {bench.name}: cyclictest p50 under load, BPF "
                "schedulers less eevdf (" + ", ".join(f"{d:+.0f} us" for d in deltas) + ")"
                + (f", capped at the model's {EXT_WAKEUP_MAX_NS // 1000} us" if ns > EXT_WAKEUP_MAX_NS else ""))
    return out, how


def _gauss_newton(simulate: Any, keys: Sequence[str], real: Mapping[str, Mapping[str, Any]], cpus: int,
                  rounds: int, start_wakeup_ns: float, base: Optional[Mapping[str, Any]] = None
                  ) -> Tuple[Dict[str, int], List[Dict[str, Any]]]:
    from . import _core

    u = {"wakeup_overhead_ns": math.log(start_wakeup_ns), "speed_pct": math.log(100.0)}
    held = set(base or {})  # a parameter BASE gives (--model, or measured) is held fixed, not fitted

    def machine(t: Mapping[str, float]) -> Dict[str, int]:
        return {"cpus": cpus, "context_switch_ns": DEFAULT_CONTEXT_SWITCH_NS,
                **{n: int(round(math.exp(t[n]))) for n, *_ in PARAMS}, **(base or {})}

    def evaluate(t: Mapping[str, float]) -> List[float]:
        m = machine(t)
        return _log_residuals([x for k in keys for x in residual_targets(simulate(k, m), real[k], k)])

    history: List[Dict[str, Any]] = []
    pairs = [x for k in keys for x in residual_targets(simulate(k, machine(u)), real[k], k)]
    res = _log_residuals(pairs)
    err = sum(x * x for x in res)
    history.append({"machine": machine(u), "sq_log_error": err})
    # the speed only moves tool-call latency (CPU work), so it is fitted only with tool calls
    has_tools = any(n.endswith(":tool_call_p50") for n, _, _ in pairs)
    free = [p for p in PARAMS if (p[0] != "speed_pct" or has_tools) and p[0] not in held]
    if not free:
        return machine(u), history
    for _ in range(rounds):
        cols = []
        for name, lo, hi in free:
            t2 = dict(u)
            step = FD_STEP if u[name] + FD_STEP <= math.log(hi) else -FD_STEP
            t2[name] = u[name] + step
            r2 = evaluate(t2)
            # d(log sim)/du = -(d residual)/du
            cols.append([-(b2 - b1) / step for b1, b2 in zip(res, r2)])
        jac = [[cols[j][i] for j in range(len(free))] for i in range(len(res))]
        try:
            delta = _core.least_squares(jac, res)
        except ValueError:
            break  # a parameter the measurements do not move: stop where we are
        # trust region: at most a factor e per parameter and round (the
        # objective is not smooth, and a long step lands in another basin)
        scale = min(1.0, MAX_LOG_STEP / max(abs(d) for d in delta)) if any(delta) else 1.0
        for _ in range(5):
            t_new = dict(u)
            for (name, lo, hi), d in zip(free, delta):
                t_new[name] = min(math.log(hi), max(math.log(lo), u[name] + scale * d))
            new_res = evaluate(t_new)
            new_err = sum(x * x for x in new_res)
            if new_err < err:
                break
            scale /= 2
        else:
            break  # no descent: converged as far as these measurements allow
        settled = all(abs(t_new[n] - u[n]) <= 0.01 for n, *_ in free)
        u, res, err = t_new, new_res, new_err
        history.append({"machine": machine(u), "sq_log_error": err})
        if settled:
            break
    return machine(u), history


def median_doc(docs: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """One results document whose every number is the median over the
    repetitions (keys missing from some take the median of those that have
    them): the live side of the error table when the live runs repeat."""
    import statistics

    if len(docs) == 1:
        return dict(docs[0])

    def merge(vals: List[Any]) -> Any:
        if all(isinstance(v, Mapping) for v in vals):
            keys = sorted({k for v in vals for k in v})
            return {k: merge([v[k] for v in vals if k in v]) for k in keys}
        nums = [v for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if nums and len(nums) == len(vals):
            m = statistics.median(nums)
            return int(round(m)) if all(isinstance(v, int) for v in nums) else m
        return vals[0]

    return merge(list(docs))


def _live_reps(d: Path) -> List[Dict[str, Any]]:
    reps = sorted(d.glob("rep-*/results.json"), key=lambda p: int(p.parent.name[4:]))
    paths = reps or ([d / "results.json"] if (d / "results.json").exists() else [])
    return [json.loads(p.read_text(encoding="utf-8")) for p in paths]


# --- fitted vs held out -----------------------------------------------------------

def scenario_of(name: str) -> str:
    """'fid-fork-storm' -> 'fork-storm' (the trace's stem, how users name it)."""
    return name[4:] if name.startswith("fid-") else name


def split_scenarios(names: Sequence[str], fit: Optional[Sequence[str]], holdout: Optional[Sequence[str]]
                    ) -> Tuple[List[str], List[str]]:
    """(fitted, held out) among NAMES (scenario names; 'fid-' prefixes
    accepted). Without either list every scenario is fitted; with one, the
    other is the rest. A name that is not a scenario, a scenario in both, or
    an empty fitted set is an error."""
    known = {scenario_of(n) for n in names}

    def norm(xs: Optional[Sequence[str]], flag: str) -> Optional[List[str]]:
        if xs is None:
            return None
        out = []
        for x in xs:
            sx = scenario_of(x.strip())
            if sx not in known:
                raise AgentcgError(f"{flag} {x}: not one of the scenarios ({', '.join(sorted(known))})")
            out.append(sx)
        return out

    f, h = norm(fit, "--fit"), norm(holdout, "--holdout")
    order = [scenario_of(n) for n in names]
    if f is None:
        f = [n for n in order if n not in (h or [])]
    if h is None:
        h = [n for n in order if n not in f]
    both = sorted(set(f) & set(h))
    if both:
        raise AgentcgError(f"--fit/--holdout: {', '.join(both)} both fitted and held out")
    if not f:
        raise AgentcgError("--fit: nothing left to fit the machine profile on (every scenario is held out)")
    return [n for n in order if n in f], [n for n in order if n in h]


# --- ranking agreement ------------------------------------------------------------

def _lat(r: Mapping[str, Any], key: str, p: str) -> float:
    d = r.get(key) or {}
    return float(d[p]) if d.get("count") and d.get(p) is not None else float("nan")


def headline_metrics(docs: Sequence[Mapping[str, Any]]) -> List[Tuple[str, Any, Optional[bool]]]:
    """(metric, getter, lower_is_better) of the agreement table: wakeup
    p50/p99, tool-call p50/p99 and tool calls completed (throughput) when the
    trace makes tool calls, and each leaf cgroup's CPU share (no better or
    worse: its verdict reads higher / lower)."""
    out: List[Tuple[str, Any, Optional[bool]]] = [
        ("wakeup p50", lambda r: _lat(r, "wakeup_latency_ns", "p50"), True),
        ("wakeup p99", lambda r: _lat(r, "wakeup_latency_ns", "p99"), True)]
    if any((d.get("tool_call_latency_ns") or {}).get("count") for d in docs):
        out += [("tool-call p50", lambda r: _lat(r, "tool_call_latency_ns", "p50"), True),
                ("tool-call p99", lambda r: _lat(r, "tool_call_latency_ns", "p99"), True),
                ("tool calls completed", lambda r: float(r.get("tool_calls_completed", float("nan"))), False)]
    leaves = sorted({c for d in docs for c in leaf_cgroups(d)})
    for cg in leaves:
        out.append((f"CPU share {cg}", lambda r, cg=cg: float(((r.get("cgroups") or {}).get(cg) or {})
                                                              .get("cpu_share", float("nan"))), None))
    return out


def _verdict(cand: Sequence[float], base: Sequence[float], lower: Optional[bool]) -> str:
    from . import stats

    if lower is None:  # a share: which way it moved, not better or worse
        v = stats.verdict(cand, base, False)
        return {"better": "higher", "worse": "lower"}.get(v, v)
    return stats.verdict(cand, base, lower)


def agreement(sim: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]],
              live_: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]],
              baseline: str = "eevdf") -> List[Dict[str, Any]]:
    """Rows {scenario, metric, scheduler, sim, live, agree} for every
    scenario in both, headline metric and scheduler other than BASELINE:
    the simulator's verdict against the baseline over its seeds beside the
    live verdict over the VM repetitions (stats.verdict: better / worse /
    indistinguishable; shares higher / lower). agree is None when either
    side has too few repetitions for a verdict ('n/a')."""
    rows: List[Dict[str, Any]] = []
    for sc in sim:
        if sc not in live_ or baseline not in sim[sc] or baseline not in live_[sc]:
            continue
        docs = [d for s in sim[sc].values() for d in s] + [d for s in live_[sc].values() for d in s]
        for metric, get, lower in headline_metrics(docs):
            for sched in sim[sc]:
                if sched == baseline or sched not in live_[sc]:
                    continue
                vs = _verdict([get(d) for d in sim[sc][sched]], [get(d) for d in sim[sc][baseline]], lower)
                vl = _verdict([get(d) for d in live_[sc][sched]], [get(d) for d in live_[sc][baseline]], lower)
                ok = None if "n/a" in (vs, vl) or "-" in (vs, vl) else vs == vl
                rows.append({"scenario": sc, "metric": metric, "scheduler": sched, "sim": vs, "live": vl,
                             "agree": ok})
    return rows


def pairwise_agreement(sim: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]],
                       live_: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]]) -> List[Dict[str, Any]]:
    """agreement() rows for every pair of schedulers, not only against
    eevdf: each scheduler against each one listed before it (eevdf, flatcg,
    agentcg: flatcg and agentcg against eevdf, agentcg against flatcg), a
    'baseline' key naming the other side. The three pairs are the whole
    ranking of the three policies on a metric."""
    rows: List[Dict[str, Any]] = []
    order = list(dict.fromkeys(s for sc in sim.values() for s in sc))
    for i, b in enumerate(order):
        later = set(order[i + 1:])
        rows += [{**r, "baseline": b} for r in agreement(sim, live_, b) if r["scheduler"] in later]
    return rows


def ranking_rate(rows: Sequence[Mapping[str, Any]]) -> Tuple[int, int]:
    """(agreeing, compared) over (scenario, metric): the simulator ranks the
    policies as live does when every pair's verdicts agree (a pair without a
    verdict on a side leaves the metric out)."""
    by: Dict[Tuple[str, str], List[Optional[bool]]] = {}
    for r in rows:
        by.setdefault((r["scenario"], r["metric"]), []).append(r["agree"])
    cmp = [v for v in by.values() if None not in v]
    return sum(1 for v in cmp if all(v)), len(cmp)


def format_pairwise(rows: Sequence[Mapping[str, Any]], held_out: Sequence[str],
                    benches: Sequence[str] = ()) -> str:
    """One line: pairwise and whole-ranking agreement, overall and held out
    (and over the traces alone when recorded benchmarks `benches` are among
    the scenarios)."""
    held = [r for r in rows if r["scenario"] in held_out]
    pairs = sorted({f"{r['scheduler']} vs {r['baseline']}" for r in rows})
    flat = [r for r in rows if r["baseline"] != "eevdf"]
    traces_held = [r for r in held if r["scenario"] not in benches]
    return (f"Pairwise ranking ({', '.join(pairs)}): every pair's verdicts agree {_rate_text(*agreement_rate(rows))}, "
            f"held out {_rate_text(*agreement_rate(held))}"
            + (f" (over the held-out traces, the recorded benchmarks apart: "
               f"{_rate_text(*agreement_rate(traces_held))})" if len(traces_held) < len(held) else "")
            + (f"; of them {', '.join(sorted({r['scheduler'] + ' vs ' + r['baseline'] for r in flat}))} "
               f"{_rate_text(*agreement_rate(flat))}" if flat else "")
            + f". The whole ranking of the policies (every pair agrees) on a scenario's metric: "
            f"{_rate_text(*ranking_rate(rows))}, held out {_rate_text(*ranking_rate(held))}.\n")


def agreement_rate(rows: Sequence[Mapping[str, Any]]) -> Tuple[int, int]:
    """(agreeing, compared): rows whose two verdicts both exist."""
    cmp = [r for r in rows if r["agree"] is not None]
    return sum(1 for r in cmp if r["agree"]), len(cmp)


DECISIVE = ("better", "worse", "higher", "lower")


def decisive_rate(rows: Sequence[Mapping[str, Any]]) -> Tuple[int, int]:
    """(agreeing, compared) over the rows whose live verdict calls a
    difference: whether the simulator sees what the live runs could tell."""
    return agreement_rate([r for r in rows if r["live"] in DECISIVE])


def _rate_text(a: int, n: int) -> str:
    return f"{a} of {n} ({100.0 * a / n:.0f} %)" if n else "none compared"


def format_agreement(rows: Sequence[Mapping[str, Any]], held_out: Sequence[str],
                     benches: Sequence[str] = ()) -> str:
    """The agreement table against eevdf and its rates; with recorded
    benchmarks among the scenarios (`benches`), the rates over the traces
    alone as well (the issue's headline: the live scenarios' verdicts)."""
    scheds = sorted({r["scheduler"] for r in rows})
    lines = ["| scenario | metric | " + " | ".join(f"{s}: sim / live" for s in scheds) + " |",
             "|---|---|" + "---|" * len(scheds)]
    keyed: Dict[Tuple[str, str], Dict[str, Mapping[str, Any]]] = {}
    for r in rows:
        keyed.setdefault((r["scenario"], r["metric"]), {})[r["scheduler"]] = r
    for (sc, metric), by in keyed.items():
        cells = []
        for s in scheds:
            r = by.get(s)
            if r is None:
                cells.append("-")
                continue
            mark = {True: "", False: " **x**", None: " (n/a)"}[r["agree"]]
            cells.append(f"{r['sim']} / {r['live']}{mark}")
        role = "held out" if sc in held_out else "fitted"
        lines.append(f"| {sc} ({role}) | {metric} | " + " | ".join(cells) + " |")
    a, n = agreement_rate(rows)
    ha, hn = agreement_rate([r for r in rows if r["scenario"] in held_out])
    lines.append("")
    da, dn = decisive_rate(rows)
    hda, hdn = decisive_rate([r for r in rows if r["scenario"] in held_out])
    traces = [r for r in rows if r["scenario"] not in benches]
    over_traces = (f" Over the traces, the recorded benchmarks apart: {_rate_text(*agreement_rate(traces))}; "
                   f"held out: {_rate_text(*agreement_rate([r for r in traces if r['scenario'] in held_out]))}."
                   if len(traces) < len(rows) else "")
    lines.append(f"Agreement of simulated and live verdicts against eevdf: {_rate_text(a, n)}; on held-out "
                 f"scenarios: {_rate_text(ha, hn)}.{over_traces} Where the live verdict calls a difference: "
                 f"{_rate_text(da, dn)}; held out: {_rate_text(hda, hdn)} (**x**: they disagree; n/a: fewer than "
                 "3 repetitions on a side).")
    return "\n".join(lines) + "\n"


# --- ablation -------------------------------------------------------------------

# (label, machine keys set on top of the fitted profile): each switches one
# modelled effect off. Only the keys this build's model knows are used (a
# model without per-CPU queues has no such switch: the row is left out).
ABLATIONS: Tuple[Tuple[str, Dict[str, Any]], ...] = (
    ("no wakeup cost (wakeup_overhead_ns 0)", {"wakeup_overhead_ns": 0}),
    ("default wakeup cost (1 us)", {"wakeup_overhead_ns": DEFAULT_WAKEUP_OVERHEAD_NS}),
    ("no speed fit (speed_pct 100)", {"speed_pct": 100}),
    ("no switch cost (context_switch_ns 0)", {"context_switch_ns": 0}),
    ("one shared run queue (runqueues global)", {"runqueues": "global"}),
    ("per-CPU run queues (runqueues per_cpu)", {"runqueues": "per_cpu"}),
    ("no idle-exit cost (idle_exit_ns 0)", {"idle_exit_ns": 0}),
    ("no migration cost (migration_cost_ns 0)", {"migration_cost_ns": 0}),
    ("no background CPU (background_cpu_pct 0)", {"background_cpu_pct": 0}),
    ("no sleep cost (sleep_cost_ns 0)", {"sleep_cost_ns": 0}),
    ("no fork cost (fork_cost_ns 0)", {"fork_cost_ns": 0}),
    ("no exit cost (exit_cost_ns 0)", {"exit_cost_ns": 0}),
    ("no copy-on-write after a fork (fork_after_ns 0)", {"fork_after_ns": 0}),
    ("no child start work (fork_child_ns 0)", {"fork_child_ns": 0}),
    # measured by live compare's page-fault pass (mem_fault_from_benchmarks)
    ("memory grows without page-fault CPU (mem_fault_ns_per_mib 0)", {"mem_fault_ns_per_mib": 0}),
    # measured by live compare's fork cycles from a forker holding memory (fork_mem_from_benchmarks)
    ("a fork costs the same whatever the forker holds (fork_ns_per_mib 0)", {"fork_ns_per_mib": 0}),
    ("no sched_ext cost (ext_busy_pct 0, ext_wakeup_ns 0, ext_fork_ns 0)",
     {"ext_busy_pct": 0, "ext_wakeup_ns": 0, "ext_fork_ns": 0}),
    ("slices end exactly, no tick (tick_ns 0)", {"tick_ns": 0, "preempt": "full"}),
    ("wakeups preempt at once (preempt full)", {"preempt": "full"}),
    # not measured, so not in the profile: what charging each timer wakeup's
    # work to the task it interrupts would do, at a TCG-sized cost
    ("timer wakeup work charged on the CPU (wakeup_work_ns 50000)", {"wakeup_work_ns": 50000}),
    # measured by live compare's idle cyclictest pass (kick_busy_from_benchmarks)
    ("a busy CPU notices a preempting kick at once (kick_busy_ns 0)", {"kick_busy_ns": 0}),
    # measured by live compare's player_sleeper passes (--measured-wakeup)
    ("a busy CPU takes its timer interrupt at once (timer_busy_ns 0, ext_timer_busy_ns 0)",
     {"timer_busy_ns": 0, "ext_timer_busy_ns": 0}),
)


def model_knows(keys: Mapping[str, Any]) -> bool:
    """Whether this build's config loader accepts these machine keys."""
    from . import _core
    from .api import _to_yaml  # noqa: PLC2701 - the one deterministic YAML emitter

    try:
        _core.load_config_string(_to_yaml({"machine": dict(keys)}), "<ablation>")
    except Exception:  # noqa: BLE001 - ConfigError: an unknown key means the model lacks the effect
        return False
    return True


def ablations(current: Mapping[str, Any]) -> List[Tuple[str, Dict[str, Any]]]:
    """The ABLATIONS this model has that change CURRENT (the fitted machine;
    a key it leaves out has the config loader's default)."""
    from . import _core

    defaults = _core.load_config_string("", "<defaults>")["machine"]
    return [(lbl, kv) for lbl, kv in ABLATIONS
            if model_knows(kv) and any(current.get(k, defaults.get(k)) != v for k, v in kv.items())]


def _summary_cells(e: Mapping[str, Optional[float]]) -> str:
    return (f"{_fmt(e['wakeup_p50_max_err_pct'])} | {_fmt(e['wakeup_p99_max_err_pct'])} | "
            f"{_fmt(e['share_max_err_abs'], 100)} | {_fmt(e['split_max_err_abs'], 100)} | "
            f"{_fmt(e['tool_p50_max_err_pct'])}")


_SUMMARY_HEAD = ("| wakeup p50 err % | wakeup p99 err % | share err pts | split err pts | tool-call p50 err % |",
                 "|---:|---:|---:|---:|---:|")


def format_summary(before: Mapping[str, List[Dict[str, Any]]], after: Mapping[str, List[Dict[str, Any]]],
                   real: Mapping[str, Mapping[str, Any]], fitted: Sequence[str], held_out: Sequence[str]) -> str:
    """The README table: one row per scenario and scheduler, fitted scenarios
    first, then the held-out ones; live / simulated (fitted profile)
    wakeup latency and the errors with the defaults -> with the profile."""
    def cell(rows: Sequence[Mapping[str, Any]], metric: str, field: str = "sim") -> Optional[float]:
        for r in rows:
            if r["metric"] == metric:
                return r.get(field)
        return None

    lines = ["| scenario | role | scheduler | wakeup p50 ms live / sim | err % default -> fitted | "
             "wakeup p99 ms live / sim | err % default -> fitted | worst share err pts | tool-call p50 err % | "
             "ctx switches err % |", "|---|---|---|---|---|---|---|---|---|---|"]
    for group, role in ((fitted, "fitted"), (held_out, "held out")):
        for key in after:
            n, s = key.split("/")
            if scenario_of(n) not in group:
                continue
            b, a = before[key], after[key]
            row = [scenario_of(n), role, s]
            for p in ("p50", "p99"):
                m = f"wakeup latency {p}"
                row.append(f"{live.format_cell(cell(a, m, 'live'), 'ms')} / {live.format_cell(cell(a, m), 'ms')}")
                n = cell(a, m, "samples")
                row.append(f"n={n}, not scored" if n is not None else
                           f"{_fmt(cell(b, m, 'error_pct'), sign=True)} -> {_fmt(cell(a, m, 'error_pct'), sign=True)}")
            row.append(_fmt(error_summary(a)["share_max_err_abs"], 100))
            row.append(_fmt(cell(a, "tool-call latency p50", "error_pct"), sign=True))
            row.append(_fmt(cell(a, "context switches", "error_pct"), sign=True))
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def _fmt_ablation_agreement(abl: Mapping[str, Mapping[str, Any]]) -> str:
    """The verdict agreement with each ablation's machine (every scenario /
    held out; against eevdf and every pair of schedulers)."""
    rows = [(lbl, v["agreement"]) for lbl, v in abl.items() if "agreement" in v]
    if not rows:
        return ""
    lines = ["", "Verdict agreement with each machine (against eevdf, and every pair of schedulers):", "",
             "| machine | vs eevdf | vs eevdf, held out | pairwise | pairwise, held out |", "|---|---:|---:|---:|---:|"]
    for lbl, a in rows:
        lines.append(f"| {lbl} | " + " | ".join(_rate_text(*a[k]) for k in ("vs_eevdf", "vs_eevdf_held_out", "pairwise",
                                                                             "pairwise_held_out")) + " |")
    return "\n".join(lines) + "\n"


def _fmt_errors(groups: Mapping[str, Mapping[str, Optional[float]]], head: str = "scenarios | machine") -> str:
    lines = [f"| {head} " + _SUMMARY_HEAD[0], "|---|---" + _SUMMARY_HEAD[1]]
    for label, e in groups.items():
        lines.append(f"| {label} | " + _summary_cells(e) + " |")
    return "\n".join(lines) + "\n"


# --- the command ------------------------------------------------------------------

README_BEGIN = "<!-- fidelity-table:begin (regenerated by ./agentcg fidelity ... --update-readme README.md) -->"
README_END = "<!-- fidelity-table:end -->"


def _live_dir_of(root: Path, name: str) -> Path:
    """DIR/fid-<trace>/ (fidelity's own runs) or DIR/<trace>/ (live compare's)."""
    for cand in (root / name, root / scenario_of(name)):
        if cand.is_dir():
            return cand
    return root / name


def _seed_list(seeds: Any) -> List[int]:
    if isinstance(seeds, str):
        parsed = units.try_parse_seeds(seeds)
        if parsed is None:
            raise AgentcgError(f"--seeds {seeds}: expected {units.SEEDS_FORMS}")
        seeds = parsed
    seeds = list(seeds)
    if not seeds:
        raise AgentcgError("--seeds: no seeds")
    return seeds


# --- recorded benchmarks (live compare's cyclictest, recorded under EEVDF) ------

# Machine costs a recording's run phases hold already (the CPU its tasks used
# for forks, copy-on-write and their exits' teardown: the import runs a task
# to its last switch-out, past its sched_process_exit): 0 when a recording
# is replayed.
RECORDED_CPU_KEYS = ("fork_cost_ns", "fork_after_ns", "fork_child_ns", "exit_cost_ns")


def _bench_latency(p50: float, p99: float, count: int) -> Dict[str, Any]:
    """A results-shaped doc holding one latency (the agreement's headline
    metrics read wakeup p50/p99 from it; no shares, no tool calls)."""
    return {"wakeup_latency_ns": {"count": count, "p50": p50, "p99": p99}}


def recorded_bench_live(bench: Mapping[str, Sequence[Mapping[str, Any]]], prefix: str,
                        schedulers: Sequence[str]) -> Optional[Dict[str, List[Dict[str, Any]]]]:
    """Live compare's figures of one benchmark (benchmarks.json, KEY PREFIX_p50_us
    and _p99_us, one entry per repetition) as latency docs per scheduler, in
    ns; None when a scheduler has none (older results, no benchmarks)."""
    out: Dict[str, List[Dict[str, Any]]] = {}
    p50, p99 = f"{prefix}_p50_us", f"{prefix}_p99_us"
    for s in schedulers:
        reps = bench.get(s) if isinstance(bench, dict) else None
        docs = [_bench_latency(1000.0 * float(r[p50]), 1000.0 * float(r[p99]), 1)
                for r in (reps if isinstance(reps, list) else [])
                if isinstance(r, dict) and all(isinstance(r.get(k), (int, float)) and not isinstance(r.get(k), bool)
                                               and r[k] >= 0 for k in (p50, p99))]
        if not docs:
            return None
        out[s] = docs
    return out


def recorded_bench_sim(r: Mapping[str, Any], cgroup: str) -> Dict[str, Any]:
    """The measured task's wakeups in a replay of a recorded benchmark: its
    cgroup's wakeup latency (a doc for the agreement's headline metrics)."""
    lat = ((r.get("cgroups") or {}).get(cgroup) or {}).get("wakeup_latency_ns") or {}
    if not lat.get("count"):
        return _bench_latency(float("nan"), float("nan"), 0)
    return _bench_latency(float(lat["p50"]), float(lat["p99"]), int(lat["count"]))


def import_recording(rec: Path, dest: Path, only_cgroup: str) -> None:
    """`trace import --from agentcg-record REC -o DEST --only-cgroup ONLY_CGROUP`
    in-process; its errors come back as AgentcgError naming REC."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    _trace_command("import", ["--from", "agentcg-record", str(rec), "-o", str(dest), "--only-cgroup", only_cgroup],
                   str(rec))


def recorded_benches(live_root: Path, dest: Path, schedulers: Sequence[str]
                     ) -> Dict[str, Tuple[Path, str, Dict[str, List[Dict[str, Any]]]]]:
    """The recorded benchmarks the live results hold (live.RECORDED_BENCHES
    under LIVE_ROOT/recordings, with their figures in benchmarks.json):
    scenario -> (the imported trace under DEST/traces, the measured task's
    cgroup, the live latency docs per scheduler)."""
    bench_path = live_root / "benchmarks.json"
    if not bench_path.exists():
        return {}
    bench = _live_json(bench_path, "benchmarks")
    out: Dict[str, Tuple[Path, str, Dict[str, List[Dict[str, Any]]]]] = {}
    for sc, (subtree, cgroup, prefix) in live.RECORDED_BENCHES.items():
        rec = live_root / "recordings" / sc / "recording"
        if not (rec / "meta.json").exists():
            continue
        docs = recorded_bench_live(bench, prefix, schedulers)
        if docs is None:
            continue
        trace = dest / "traces" / f"bench-{sc}.json"
        import_recording(rec, trace, subtree)
        out[sc] = (trace, cgroup, docs)
    return out


def format_recorded_benches(sim: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]],
                            live_: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]]) -> str:
    """Live (median of the repetitions) beside simulated (median of the
    seeds) cyclictest wakeup p50 / p99 per recorded benchmark and scheduler."""
    def med(docs: Sequence[Mapping[str, Any]], p: str) -> float:
        xs = [_lat(d, "wakeup_latency_ns", p) for d in docs]
        xs = [x for x in xs if math.isfinite(x)]
        return _median(xs) if xs else float("nan")

    lines = ["| recorded benchmark | scheduler | live p50 (us) | sim p50 (us) | live p99 (us) | sim p99 (us) |",
             "|---|---|---|---|---|---|"]
    for sc in sim:
        for s in sim[sc]:
            cells = [f"{med(side[sc][s], p) / 1000:.0f}" for p in ("p50", "p99") for side in (live_, sim)]
            lines.append(f"| {sc} | {s} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def fidelity(traces: Sequence[str], out: str, build: Optional[str] = None,
             schedulers: Sequence[str] = ("eevdf", "agentcg"), duration: str = "20s",
             mem_scale: float = 0.25, seed: int = 1, profile: Optional[str] = None,
             live_dir: Optional[str] = None, timeout_s: Optional[int] = None, quiet: bool = False,
             repeat: int = 3, fit: Optional[Sequence[str]] = None, holdout: Optional[Sequence[str]] = None,
             machine: Optional[str] = None, seeds: Any = "1-5", update_readme: Optional[str] = None,
             ablate: bool = True, model: Optional[Mapping[str, Any]] = None,
             captures: Sequence[str] = (), capture_from: str = "ftrace", capture_policy: str = "eevdf",
             capture_unflagged_wakeups: str = "interrupt",
             capture_machine: Optional[str] = None, measured_wakeup: bool = False,
             capture_fit: Optional[Sequence[str]] = None, capture_cv: bool = False) -> Dict[str, Any]:
    """The live side runs every scheduler `repeat` times in one boot
    (interleaved, as live compare); errors are against the median of the
    repetitions. The machine profile is fitted on the FIT scenarios only
    (default: all but HOLDOUT) and the errors are reported for fitted and
    held-out scenarios apart; with MACHINE (a saved profile) nothing is
    fitted and the profile's own fit.fitted names the fitted scenarios.
    Then the ranking agreement: the simulator's verdicts against eevdf over
    SEEDS beside the live verdicts over the repetitions; and an ablation of
    the modelled effects. CAPTURES (scheduler captures of other machines,
    CAPTURE_FROM ftrace or perf) are replayed with CAPTURE_MACHINE (a
    machine profile or config of that machine; default the simulator's
    machine with the capture's CPUs, not the VM's profile) and their
    measured figures put beside the simulated ones (capture_check); with
    CAPTURE_FIT (some of CAPTURES) CAPTURE_MACHINE's wakeup and switch costs
    are fitted on those first and the others are held out
    (capture_section); with CAPTURE_CV each capture is held out in turn,
    the machine fitted on all the others (capture_cross_validation).
    Without TRACES only the captures are done (no VM).
    MEASURED_WAKEUP: the wakeup costs from live compare's player_sleeper
    passes (wakeup_costs_from_player), held fixed, instead of the fitted
    wakeup_overhead_ns and cyclictest's kick_busy_ns (0 then)."""
    from . import machine as mprof, stats, table as ctable

    if repeat < 1:
        raise AgentcgError(f"--repeat {repeat}: expected at least 1")
    for s in schedulers:
        if s not in SIM_POLICY:
            raise AgentcgError(f"--schedulers: unknown scheduler '{s}' (expected {', '.join(SIM_POLICY)})")
    seed_list = _seed_list(seeds)
    model = dict(model or {})
    if model and not model_knows(model):
        raise AgentcgError("--model " + ", ".join(f"{k}={v}" for k, v in model.items()) + ": not machine keys of this "
                           "build's model (see config/config.h: machine)")
    fork_cost_how: Optional[str] = None
    ext_how: Optional[str] = None
    tick_how: Optional[str] = None
    kick_how: Optional[str] = None
    memory_hows: List[str] = []  # MEASURED_MEMORY_COSTS read from the live benchmarks
    given = mprof.load_profile(machine) if machine else None  # a bad profile fails before the VM boots
    if capture_from not in CAPTURE_FORMATS:
        raise AgentcgError(f"--capture-from {capture_from}: expected one of {', '.join(CAPTURE_FORMATS)}")
    if capture_policy not in CAPTURE_POLICIES:
        raise AgentcgError(f"--capture-policy {capture_policy}: expected one of {', '.join(CAPTURE_POLICIES)}")
    if capture_unflagged_wakeups not in ("interrupt", "task"):
        raise AgentcgError(f"--capture-unflagged-wakeups {capture_unflagged_wakeups}: expected interrupt or task")
    side = CaptureSide(capture_from, capture_policy, capture_unflagged_wakeups)
    for c in captures:
        if not Path(c).is_file():
            raise AgentcgError(f"--capture {c}: no such file")
    if capture_cv:  # before a VM boots for nothing
        _check_cv_captures(captures)
    dest = Path(out)
    if not traces:
        if not captures:
            raise AgentcgError("fidelity: give TRACE... (scenarios replayed live) or --capture CAPTURE (or both)")
        dest.mkdir(parents=True, exist_ok=True)
        return captures_only(captures, side, capture_machine, capture_fit, dest, quiet, capture_cv)
    dest.mkdir(parents=True, exist_ok=True)
    dur = parse_duration(duration)
    names: List[str] = []
    prepared: Dict[str, Path] = {}
    for t in traces:
        src = Path(t)
        name = "fid-" + re.sub(r"[^A-Za-z0-9_-]", "_", src.stem)
        if name in prepared:
            raise AgentcgError(f"{t}: two traces named {src.stem}")
        prepared[name] = dest / "traces" / f"{name}.json"
        prepare_trace(src, prepared[name], dur, mem_scale)
        names.append(name)
    if given is not None:
        if model:
            raise AgentcgError("--model: with --machine the profile's keys are used as they are")
        if fit is not None:
            raise AgentcgError("--fit: with --machine nothing is fitted (the profile is used as it is)")
        pf = set(given["fit"].get("fitted") or [])
        fitted = [scenario_of(n) for n in names if scenario_of(n) in pf]
        held = [scenario_of(n) for n in names if scenario_of(n) not in pf]
    else:
        fitted, held = split_scenarios(names, fit, holdout)

    # live: one boot, or the results of an earlier run
    live_root = Path(live_dir) if live_dir else dest / "live"
    if not live_dir:
        b = live.build_dir(build)
        vm_out = dest / ".vm-out"
        shutil.rmtree(vm_out, ignore_errors=True)
        env = {"COMPARE_SCHEDULERS": ",".join(schedulers), "COMPARE_TRACES": ",".join(names),
               "COMPARE_MEM_SCALE": "1", "COMPARE_BENCH_S": "0",
               "COMPARE_RUNS": ",".join(f"{s}:{r}" for s, r in stats.interleaved_order(schedulers, repeat))}
        live.run_vm(b, "compare", vm_out, dest / "vm-serial.log", env,
                    [(str(p.resolve()), f"/traces/{n}.json") for n, p in prepared.items()],
                    timeout_s or live.default_timeout_s(repeat), quiet)
        summary = live.collect_compare(vm_out, live_root, names, schedulers, repeat)
        shutil.rmtree(vm_out, ignore_errors=True)
        if summary["missing"]:
            raise AgentcgError("live runs missing (player failed; see " + str(live_root) + "/<trace>/<scheduler>/"
                               "player.log): " + ", ".join(summary["missing"]))
    real: Dict[str, Dict[str, Any]] = {}
    live_reps: Dict[str, Dict[str, List[Dict[str, Any]]]] = {}
    for n in names:
        for s in schedulers:
            d = _live_dir_of(live_root, n) / s
            docs = _live_reps(d)
            if not docs:
                raise AgentcgError(f"{d}/results.json: no live results (run without --live-dir first)")
            live_reps.setdefault(n, {})[s] = docs
            real[f"{n}/{s}"] = median_doc(docs)
    cpus = int(next(iter(real.values()))["cpus"])
    benches = recorded_benches(live_root, dest, schedulers)
    held = held + [sc for sc in benches if sc not in held]  # replayed, never fitted on

    # one simulation per (trace/scheduler, machine, seed): the calibration
    # asks for the same machines again (the defaults, the fitted one)
    cache: Dict[str, Dict[str, Any]] = {}

    def simulate(key: str, m: Mapping[str, Any], sd: int = seed) -> Dict[str, Any]:
        ck = f"{key}#{sd}" + json.dumps(m, sort_keys=True)
        if ck not in cache:
            n, s = key.split("/")
            cache[ck] = _simulate(benches[n][0] if n in benches else prepared[n], SIM_POLICY[s], sd, m)
        return cache[ck]

    def reps_with(mach: Mapping[str, Any]) -> Dict[str, Dict[str, List[Dict[str, Any]]]]:
        """Every scenario's simulated runs over the seeds with MACHINE: the
        traces' results, and the recorded benchmarks' measured task."""
        reps = {scenario_of(n): {s: [simulate(f"{n}/{s}", mach, sd) for sd in seed_list] for s in schedulers}
                for n in names}
        rec_mach = {**mach, **{k: 0 for k in RECORDED_CPU_KEYS if k in mach}}
        for sc, (_, cg, _) in benches.items():
            reps[sc] = {s: [recorded_bench_sim(simulate(f"{sc}/{s}", rec_mach, sd), cg) for sd in seed_list]
                        for s in schedulers}
        return reps

    keys = list(real)
    fit_keys = [k for k in keys if scenario_of(k.split("/")[0]) in fitted]
    default_machine = {"cpus": cpus, "context_switch_ns": DEFAULT_CONTEXT_SWITCH_NS,
                       "wakeup_overhead_ns": DEFAULT_WAKEUP_OVERHEAD_NS, "speed_pct": 100}
    n_targets = sum(len(residual_targets(simulate(k, default_machine), real[k], k)) for k in fit_keys)
    if given is not None:
        m: Dict[str, Any] = {**default_machine, **given["machine"]}
        rounds: List[Dict[str, Any]] = []
    else:
        if n_targets == 0:  # e.g. every task in the root cgroup: a fit would silently keep the defaults
            raise AgentcgError("fidelity: nothing to fit the machine profile on: no leaf cgroup has wakeups both "
                               f"live (at least {MIN_SAMPLES['p50']}) and simulated, and no tool calls (fitted "
                               "scenarios: " + ", ".join(fitted) + "); put the tasks in cgroups of their own, or fit "
                               "on a scenario that wakes more (--fit)")
        if "tick_ns" not in model and model_knows({"tick_ns": 0}):
            tk = tick_from_kernel(live_root / "kernel.json")
            if tk:
                model["tick_ns"], tick_how = tk
        if "preempt" not in model and model.get("tick_ns") and model_knows({"preempt": "full"}):
            pm = preempt_from_kernel(live_root / "kernel.json")
            if pm:
                model["preempt"] = pm[0]
                tick_how = (tick_how + "; " if tick_how else "") + pm[1]
        if measured_wakeup and "wakeup_overhead_ns" not in model and model_knows({"idle_exit_ns": 0,
                                                                                   "timer_busy_ns": 0}):
            pw = wakeup_costs_from_player(live_root / "benchmarks.json", DEFAULT_CONTEXT_SWITCH_NS)
            if not pw:
                raise AgentcgError(f"--measured-wakeup: {live_root / 'benchmarks.json'} has no agentcg-player "
                                   "sleeper passes under eevdf (player_idle_p50_us: a live compare since "
                                   "2026-11-29)")
            model.update({k: v for k, v in pw[0].items() if k not in model})  # measured: held fixed
            kick_how = pw[1]
        if not measured_wakeup and "kick_busy_ns" not in model and model_knows({"kick_busy_ns": 0}):
            kb = kick_busy_from_benchmarks(live_root / "benchmarks.json")
            if kb:  # measured, so held fixed in the fit as the kernel's tick is
                if kb[0]:
                    model["kick_busy_ns"] = kb[0]
                kick_how = kb[1]
        for key, from_benchmarks in MEASURED_MEMORY_COSTS:
            if key not in model and model_knows({key: 0}):
                got = from_benchmarks(live_root / "benchmarks.json")
                if got:  # measured, so held fixed in the fit
                    if got[0]:
                        model[key] = got[0]
                    memory_hows.append(got[1])
        m, rounds = calibrate(simulate, fit_keys, real, cpus, base=model or None)
        if model_knows({"ext_busy_pct": 0, "ext_wakeup_ns": 0}) and not {"ext_busy_pct", "ext_wakeup_ns"} & set(model):
            ext, ext_how = ext_cost_from_live(real, fit_keys, live_root / "benchmarks.json")
            m.update({k: v for k, v in ext.items() if v})
        m = fit_share_costs(simulate, fit_keys, real, m)
        if "fork_cost_ns" not in model and model_knows({"fork_cost_ns": 0}):
            fc = fork_cost_from_benchmarks(live_root / "benchmarks.json", cpus, int(m.get("background_cpu_pct", 0)))
            if fc and model_knows({k: 0 for k in fc[0]}):
                m.update(fc[0])
                fork_cost_how = fc[1]
        storm_rec = live_root / "recordings" / live.STORM_RECORDING / "recording"
        if (m.get("fork_cost_ns") and "fork_child_ns" not in model and model_knows({"fork_child_ns": 0})
                and (storm_rec / "ftrace.txt").is_file()):
            st = prepared.get("fid-" + live.STORM_RECORDING) or REPO_TRACES / f"{live.STORM_RECORDING}.json"
            rc = (fork_costs_from_recording(storm_rec, st, int(m["fork_cost_ns"]), int(m.get("speed_pct", 100)))
                  if st.is_file() else None)
            if rc:
                m.update({k: v for k, v in rc[0].items() if k not in model})
                fork_cost_how = (fork_cost_how + "; " if fork_cost_how else "") + rc[1]
        if "ext_fork_ns" not in model and m.get("fork_cost_ns") and model_knows({"ext_fork_ns": 0}):
            ef = ext_fork_from_benchmarks(live_root / "benchmarks.json", int(m.get("ext_busy_pct", 0)),
                                          int(m["fork_cost_ns"]))
            if ef:
                if ef[0]:
                    m["ext_fork_ns"] = ef[0]
                ext_how = (ext_how + "; " if ext_how else "") + ef[1]
    before: Dict[str, List[Dict[str, Any]]] = {}
    after: Dict[str, List[Dict[str, Any]]] = {}
    for k in keys:
        n, s = k.split("/")
        for label, mach, tab in (("sim", default_machine, before), ("sim-calibrated", m, after)):
            r = simulate(k, mach)
            _save(dest / label / n / SIM_POLICY[s] / "results.json", r)
            tab[k] = side_by_side(r, real[k])

    def group_err(tab: Mapping[str, List[Dict[str, Any]]], group: Sequence[str]) -> Dict[str, Optional[float]]:
        return error_summary([r for k, v in tab.items() if scenario_of(k.split("/")[0]) in group for r in v])

    errors = {"fitted": {"before": group_err(before, fitted), "after": group_err(after, fitted)},
              "held_out": {"before": group_err(before, held), "after": group_err(after, held)}}
    prof = Path(profile) if profile else dest / "machine.yaml"
    if given is None:
        mprof.write_profile(prof, m, {"tool": "agentcg fidelity", "fitted": fitted, "held_out": held,
                                      "targets": n_targets, "sq_log_error_before": rounds[0]["sq_log_error"],
                                      "sq_log_error_after": rounds[-1]["sq_log_error"]},
                            comment=["agentcg machine profile, fitted by `agentcg fidelity` (Gauss-Newton on the "
                                     "live wakeup latency",
                                     "p50/p99 per cgroup and tool-call latency p50 of the fitted scenarios); "
                                     "load with --machine.",
                                     "context_switch_ns is not fitted (latencies only show its sum with "
                                     "wakeup_overhead_ns)."] + ([tick_how + "."] if tick_how else [])
                            + ([kick_how + "."] if kick_how else [])
                            + ([fork_cost_how + "."] if fork_cost_how else [])
                            + [how + "." for how in memory_hows]
                            + ([ext_how + "."] if ext_how else []))

    # ranking agreement: the simulator over seeds with the profile, the VM over repetitions
    sim_reps = reps_with(m)
    live_by_sc = {scenario_of(n): live_reps[n] for n in names}
    live_by_sc.update({sc: docs for sc, (_, _, docs) in benches.items()})
    agree = agreement(sim_reps, live_by_sc) if "eevdf" in schedulers else []
    pairs = pairwise_agreement(sim_reps, live_by_sc)

    # ablation: the fitted profile with one modelled effect switched off at a time
    abl: Dict[str, Dict[str, Dict[str, Optional[float]]]] = {}
    if ablate:
        variants = [("fitted profile (every effect)", m)] + [(lbl, {**m, **kv}) for lbl, kv in ablations(m)]
        variants.append(("simulator defaults (no calibration)", default_machine))
        ref = None
        for lbl, mach in variants:
            tab = {k: side_by_side(simulate(k, mach), real[k]) for k in keys}
            if ref is None:
                ref = tab
            elif tab == ref and lbl != "simulator defaults (no calibration)":
                continue  # the effect was off already in the profile: nothing to ablate
            abl[lbl] = {"fitted": group_err(tab, fitted), "held_out": group_err(tab, held)}
            if "eevdf" in schedulers:  # the verdicts with this machine, over the same seeds
                reps = reps_with(mach)
                ag, pw = agreement(reps, live_by_sc), pairwise_agreement(reps, live_by_sc)
                abl[lbl]["agreement"] = {
                    "vs_eevdf": agreement_rate(ag), "vs_eevdf_held_out": agreement_rate([r for r in ag if r["scenario"] in held]),
                    "pairwise": agreement_rate(pw), "pairwise_held_out": agreement_rate([r for r in pw if r["scenario"] in held])}

    report = {"traces": names, "schedulers": list(schedulers), "cpus": cpus, "duration_ns": dur,
              "mem_scale": mem_scale, "profile": str(machine or prof), "before": before, "after": after,
              "fitted": fitted, "held_out": held, "errors": errors,
              "error_before": error_summary([r for v in before.values() for r in v]),
              "error_after": error_summary([r for v in after.values() for r in v]),
              "calibration_rounds": rounds, "machine": m, "seeds": seed_list, "agreement": agree,
              "agreement_rate": agreement_rate(agree),
              "agreement_rate_held_out": agreement_rate([r for r in agree if r["scenario"] in held]),
              "agreement_rate_live_decisive": decisive_rate(agree),
              "pairwise_agreement": pairs, "pairwise_rate": agreement_rate(pairs),
              "pairwise_rate_held_out": agreement_rate([r for r in pairs if r["scenario"] in held]),
              "agreement_rate_traces_held_out": agreement_rate([r for r in agree if r["scenario"] in held
                                                                and r["scenario"] not in benches]),
              "pairwise_rate_traces_held_out": agreement_rate([r for r in pairs if r["scenario"] in held
                                                               and r["scenario"] not in benches]),
              "ranking_rate": ranking_rate(pairs),
              "ranking_rate_held_out": ranking_rate([r for r in pairs if r["scenario"] in held]),
              "ablation": abl,
              "recorded_benches": {sc: {"trace": str(t), "cgroup": cg,
                                        "live": live_by_sc[sc], "sim": sim_reps[sc]}
                                   for sc, (t, cg, _) in benches.items()}}
    caps, capfit = capture_section(captures, side, capture_machine, capture_fit, dest)
    report["captures"] = caps
    report["capture_fit"] = capfit
    if capture_cv:
        report["capture_cv"] = capture_cross_validation(captures, side, capture_machine, dest)
    nrep = max(len(d) for v in live_reps.values() for d in v.values())
    head = (f"Machine profile {'(given) ' + machine if machine else prof}: "
            + ", ".join(f"{k} {v}" for k, v in m.items()) + f". Fitted on: {', '.join(fitted) or '-'}; "
            f"held out: {', '.join(held) or '-'}. Live: {nrep} repetition(s) per scheduler (medians); "
            f"simulated verdicts over seeds {seed_list[0]}-{seed_list[-1]}."
            + (f" {tick_how} (the kernel's configuration, not a fit)." if tick_how else "")
            + (f" {kick_how} (a benchmark, not a fit)." if kick_how else "")
            + (f" {fork_cost_how} (a benchmark, not a fit)." if fork_cost_how else "")
            + "".join(f" {how}." for how in memory_hows)
            + (f" sched_ext's own cost: {ext_how} (measured, not fitted)." if ext_how else "")
            + f" A latency percentile of fewer live samples than {MIN_SAMPLES['p50']} (p50) or "
            f"{MIN_SAMPLES['p99']} (p99) is shown but neither fitted nor scored (n=...)."
            + "\n\n")
    summary_md = (head + format_summary(before, after, real, fitted, held) + "\n"
                  + "Worst errors per group (% or share points), with the simulator's defaults and the fitted "
                  "profile:\n\n"
                  + _fmt_errors({f"fitted ({', '.join(fitted) or '-'}) | defaults": errors["fitted"]["before"],
                                 "fitted | profile": errors["fitted"]["after"],
                                 f"held out ({', '.join(held) or '-'}) | defaults": errors["held_out"]["before"],
                                 "held out | profile": errors["held_out"]["after"]}) + "\n"
                  + (format_agreement(agree, held, list(benches)) if agree else "No agreement table (eevdf "
                     "not among the schedulers).\n")
                  + ("\n" + format_pairwise(pairs, held, list(benches)) if pairs else "")
                  + ("\nRecorded benchmarks (held out): live compare's cyclictest, recorded once under EEVDF "
                     "and replayed; live is the median of every scheduler's unrecorded passes, simulated the "
                     "median of the seeds (the measured task's runnable -> running; cyclictest's own figure "
                     "adds the timer's delivery):\n\n"
                     + format_recorded_benches({sc: sim_reps[sc] for sc in benches},
                                               {sc: live_by_sc[sc] for sc in benches}) if benches else ""))
    if abl:
        summary_md += ("\nAblation (worst errors over the held-out scenarios, and over the fitted ones), one modelled "
                       "effect off at a time:\n\n"
                       + _fmt_errors({f"{lbl} | held out": v["held_out"] for lbl, v in abl.items()}, "machine | scenarios") + "\n"
                       + _fmt_errors({f"{lbl} | fitted": v["fitted"] for lbl, v in abl.items()}, "machine | scenarios")
                       + _fmt_ablation_agreement(abl))
    if caps:
        summary_md += "\n" + format_captures(caps, capfit)
    if report.get("capture_cv"):
        summary_md += format_cross_validation(report["capture_cv"])
    text = summary_md + "\nEvery metric (live / simulated with the defaults / simulated with the profile):\n\n" + \
        format_table(before, after)
    if nrep > 1:
        text += (f"\nLive, {nrep} repetitions per scheduler (the errors above are against their medians); "
                 "verdicts against eevdf:\n\n")
        for n in names:
            text += ctable.render_text(ctable.build_rows(live_reps[n]), list(schedulers), title=n) + "\n"
    report["live_repetitions"] = nrep
    report["host_load"] = dict(live.last_host_load) if not live_dir else None
    if report["host_load"] and report["host_load"].get("warning"):
        text += "WARNING: " + report["host_load"]["warning"] + "\n"
    _save(dest / "fidelity.json", report)
    (dest / "fidelity.md").write_text(text, encoding="utf-8")
    if update_readme:
        replace_readme_table(Path(update_readme), summary_md)
    if not quiet:
        print(text, end="")
        for label, grp in (("fitted", "fitted"), ("held out", "held_out")):
            for when in ("before", "after"):
                e = errors[grp][when]
                print(f"worst error, {label}, {'defaults' if when == 'before' else 'profile '}: wakeup p50 "
                      f"{_fmt(e['wakeup_p50_max_err_pct'])} %, p99 {_fmt(e['wakeup_p99_max_err_pct'])} %; CPU share "
                      f"{_fmt(e['share_max_err_abs'], 100)} points; tool-call p50 {_fmt(e['tool_p50_max_err_pct'])} %")
        a, n = report["agreement_rate"]
        ha, hn = report["agreement_rate_held_out"]
        print(f"ranking agreement (sim vs live verdicts against eevdf): {_rate_text(a, n)}; held out: "
              f"{_rate_text(ha, hn)}")
        if given is None:
            print(f"machine profile: {prof} (reuse with --machine {prof})")
        print(f"fidelity: {dest}/fidelity.md, fidelity.json, sim/, sim-calibrated/, live/")
    return report


# --- recorded captures as the measured side ---------------------------------------

CAPTURE_FORMATS = ("ftrace", "perf")  # `trace stats --from` formats that carry a scheduler capture
CAPTURE_POLICIES = ("eevdf", "cfs")  # the kernel schedulers a capture can have been recorded under


class CaptureSide(NamedTuple):
    """How the captures are read and replayed: their text format, the
    scheduler their kernel ran (eevdf since Linux 6.6, cfs before: a 4.x
    board's capture replays under cfs), and whose a wakeup printed on a line
    without latency flags is ("interrupt": nobody's, the default; "task":
    the line's task, `trace import --unflagged-wakeups task`)."""
    fmt: str = "ftrace"
    policy: str = "eevdf"
    unflagged_wakeups: str = "interrupt"


def _side(fmt: Union[str, CaptureSide]) -> CaptureSide:
    """A CaptureSide from a format name (the defaults) or a CaptureSide."""
    return fmt if isinstance(fmt, CaptureSide) else CaptureSide(fmt)


CAPTURE_GOALS = {"p50": 15.0, "p90": 15.0, "p99": 25.0, "switches": 15.0}  # issue 16's, in %


def capture_check(capture: Path, fmt: Union[str, CaptureSide], machine: Optional[Path]) -> Dict[str, Any]:
    """A scheduler capture of a real machine (CAPTURE, ftrace or perf sched
    text) as the measured side: its task behaviour (run and sleep phases,
    forks, exits, nice) replayed in the simulator under the scheduler its
    kernel ran (FMT: a format name, replayed under eevdf, or a CaptureSide
    naming the policy) with MACHINE (a machine profile
    written by fidelity, or a config with a `machine:` section; None: the
    simulator's defaults with the capture's CPU count), and the capture's
    own wakeup latency p50/p90/p99, task switches and CPU time beside the
    simulated ones, errors in % (the same replay as `trace stats CAPTURE
    --from FMT --replay --json`, whose errors, a capture without a measured
    wakeup among them, come back as AgentcgError naming the capture)."""
    side = _side(fmt)
    args = [str(capture), "--from", side.fmt, "--replay", "--policy", side.policy, "--json"]
    if side.unflagged_wakeups != "interrupt":
        args += ["--unflagged-wakeups", side.unflagged_wakeups]
    if machine is not None:  # a fitted profile goes with --machine, a config with --config
        args += ["--machine" if _is_machine_profile(machine) else "--config", str(machine)]
    doc = json.loads(_trace_command("stats", args, f"--capture {capture}"))
    meas, sim = doc["wakeup_latency_ns"]["measured"], doc["wakeup_latency_ns"]["simulated"]

    def err_pct(m: Optional[float], x: Optional[float]) -> Optional[float]:
        return None if not m or x is None else 100.0 * (x - m) / m

    rows = {q: {"measured_ns": meas.get(q), "simulated_ns": sim.get(q), "err_pct": err_pct(meas.get(q), sim.get(q))}
            for q in ("p50", "p90", "p99")}
    sw = doc["context_switches"]
    rows["switches"] = {"measured": sw["measured"], "simulated": sw["simulated"],
                        "err_pct": err_pct(sw["measured"], sw["simulated"])}
    def split(key: str) -> Dict[str, Any]:
        return {k: {q: {"measured_ns": v["measured"].get(q), "simulated_ns": v["simulated"].get(q),
                        "err_pct": err_pct(v["measured"].get(q), v["simulated"].get(q))} for q in ("p50", "p90")}
                | {"count": {"measured": v["measured"]["count"], "simulated": v["simulated"]["count"]}}
                for k, v in doc.get(key, {}).items()}

    kinds, wakers = split("wakeup_latency_by_kind_ns"), split("wakeup_latency_by_waker_ns")
    return {"capture": str(capture), "from": side.fmt, "machine": str(machine) if machine else None, "policy": side.policy,
            "cpus": doc["cpus"], "tasks": doc["tasks"], "wakeups": meas["count"],
            "task_cpu_time_err_pct": 100.0 * doc["task_cpu_time_error"], **rows, "kinds": kinds, "wakers": wakers,
            "idle_state_entries": doc.get("idle_state_entries", 0),
            "goals_met": all(rows[k]["err_pct"] is not None and abs(rows[k]["err_pct"]) <= g
                             for k, g in CAPTURE_GOALS.items())}


# The machine keys a capture fit sets (the costs every wakeup and switch pays
# on that machine, and where the kernel puts a new task) and the values it
# tries: a grid, not a gradient (the replay's percentiles are steps of the
# capture's own samples).
_COST_GRID = (0, 250, 500, 1000, 1500, 2000, 3000, 4000, 5000, 6000, 8000, 10000, 12000, 16000, 20000, 30000, 50000)
# A deep idle state's exit (machine.idle_exit_ns), paid by a CPU that has
# been idle at least idle_exit_after_ns (the cpuidle governor picks a deep
# state for a long idle period): a phone's CPUs take hundreds of us.
_IDLE_EXIT_GRID = (0, 5000, 10000, 20000, 50000, 100000, 200000, 300000, 500000, 1000000)
_IDLE_AFTER_GRID = (0, 500000, 1000000, 2000000, 5000000, 10000000, 20000000, 50000000)
CAPTURE_FIT_GRID: Dict[str, Tuple[Any, ...]] = {"wakeup_overhead_ns": _COST_GRID, "context_switch_ns": _COST_GRID,
                                                 "ipi_idle_ns": _COST_GRID, "task_wakeup_ns": _COST_GRID,
                                                 "fork_placement": ("idlest", "local"),
                                                 "balance": ("always", "when_overutilized"),
                                                 "idle_exit_ns": _IDLE_EXIT_GRID,
                                                 "idle_exit_after_ns": _IDLE_AFTER_GRID}
# machine.balance acts only with energy-aware placement (EAS's gate on the
# load balancer): fitted where the machine has it, left out of every other
# fit (it would double the first pass for nothing).
CAPTURE_FIT_EAS_ONLY = ("balance",)
# The keys the fit's first pass does not combine (coordinate descent moves
# them, together, from none): in the first pass they would multiply its
# replays by the grid's 80 pairs.
CAPTURE_FIT_DESCENT_ONLY = ("idle_exit_ns", "idle_exit_after_ns")
CAPTURE_FIT_KEYS = tuple(CAPTURE_FIT_GRID)
CAPTURE_FIT_METRICS = ("p50", "p90", "switches")


def _base_machine(path: Optional[Path]) -> Dict[str, Any]:
    """The `machine:` keys of a capture machine (a profile or a config; the
    C++ loaders have checked it by the time a replay ran with it)."""
    if path is None:
        return {}
    import yaml  # python3-yaml

    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise AgentcgError(f"--capture-machine {path}: {e}") from None
    m = doc.get("machine") if isinstance(doc, dict) else None
    if not isinstance(m, dict):
        raise AgentcgError(f"--capture-machine {path}: no machine: section")
    return dict(m)


# A kind of wakeup (local, remote, new: the replay's by-kind split) counts in
# the fit where the capture has at least this many of it.
CAPTURE_FIT_KIND_MIN = 20


def capture_sq_log_error(caps: Sequence[Mapping[str, Any]]) -> float:
    """The fit's objective: the mean over CAPS of ln(simulated / measured)^2
    (a factor of 2 either way weighs the same) over CAPTURE_FIT_METRICS and
    the p50 of each kind of wakeup the capture has at least
    CAPTURE_FIT_KIND_MIN of (a wakeup on the CPU it then runs on, one sent
    to another CPU and a new task's start cost the machine different
    things: the kinds tell them apart; their p90s, a few slow wakeups of a
    short capture, pulled the fit's costs to their grid's end), and the p50
    of the sleeps ended by a task and of those ended by an interrupt, where
    it has as many (the wakeup_overhead_ns / task_wakeup_ns split: on the
    Juno board's capture both are local wakeups, and without this split
    the fit paid for the task wakeups' 3 us with the interrupts' 9). A kind
    the replay does not produce at all has no p50 (it was read as 0, and
    ln(1 ns / 179 us)^2 = 146 made the phone's wakeups sent to another
    CPU, a placement the replay lacks, outweigh every cost the fit sets):
    no term."""
    terms = []

    def add(m: Optional[float], x: Optional[float]) -> None:
        if m and x is not None:
            terms.append(math.log(max(x, 1.0) / m) ** 2)

    for c in caps:
        for q in CAPTURE_FIT_METRICS:
            r = c[q]
            add(*((r["measured_ns"], r["simulated_ns"]) if "measured_ns" in r else (r["measured"], r["simulated"])))
        for k in [*c.get("kinds", {}).values(), *c.get("wakers", {}).values()]:
            if k["count"]["measured"] >= CAPTURE_FIT_KIND_MIN and k["count"]["simulated"] > 0:
                add(k["p50"]["measured_ns"], k["p50"]["simulated_ns"])
    if not terms:
        raise AgentcgError("capture fit: the fitted captures have nothing measured to fit on")
    return sum(terms) / len(terms)


# The fit's first pass: every combination of these costs (a subset of
# _COST_GRID) and both placements; coordinate descent then starts from the
# CAPTURE_FIT_STARTS best of them. Descent alone, from the defaults, stopped
# where no single key could move (on the five kvm2cpu captures: a 16 us
# context switch standing in for the IPI to an idle CPU, objective 0.546,
# where 2 us and 14 us give 0.286): the keys trade against each other.
CAPTURE_FIT_COARSE = (0, 2000, 6000, 16000)
CAPTURE_FIT_STARTS = 3


def fit_capture_machine(captures: Sequence[Path], fmt: Union[str, CaptureSide], machine: Optional[Path], work: Path,
                        replays: Optional[Dict[Tuple[Any, ...], Dict[str, Any]]] = None
                        ) -> Tuple[Dict[str, Any], float, float, Dict[str, List[Any]]]:
    """Fits CAPTURE_FIT_KEYS on CAPTURES (their replays under FMT's policy) over
    MACHINE's other keys: every combination of CAPTURE_FIT_COARSE (the
    placements too), then coordinate descent on CAPTURE_FIT_GRID from the
    CAPTURE_FIT_STARTS best of them and from MACHINE's own values (each key
    swept with the others held, until a sweep changes nothing; ties go to
    the value first in the grid: the smaller cost, fork balancing), the
    best end kept; a key the captures say nothing of (every grid value
    fits within 1 % as well) keeps MACHINE's value. Returns (the machine:
    MACHINE's keys with the fitted ones, the objective with MACHINE as
    given, the objective fitted, and per fitted key the grid values that
    fit within 1 % as well: the whole grid when the captures say nothing
    of it). WORK holds the trial profiles; REPLAYS, when given, keeps each
    capture's replay by machine across calls with the same MACHINE (the
    folds of capture_cross_validation share them). The idle-state keys
    (CAPTURE_FIT_DESCENT_ONLY) are fitted only where a fitted capture
    records idle states (cpu_idle entries): on a machine whose captures
    show none (a KVM guest halts its vCPUs in the host) they would stand
    in for whatever else makes its tails (leave-one-out over the five
    kvm2cpu captures, fitting them: held-out p90 60 % at the median
    against 40 % without)."""
    import itertools

    from . import _core, machine as mprof

    base = _base_machine(machine)
    trial = work / "capture-trial.yaml"
    cache: Dict[Tuple[Any, ...], float] = {}
    runs = replays if replays is not None else {}

    def key_of(vals: Mapping[str, Any]) -> Tuple[Any, ...]:
        return tuple(vals.get(k) for k in CAPTURE_FIT_KEYS)  # None: left to MACHINE

    def replay(c: Path, vals: Mapping[str, Any]) -> Dict[str, Any]:
        rk = (str(c), fmt) + key_of(vals)
        if rk not in runs:
            mprof.write_profile(trial, {**base, **vals})
            runs[rk] = capture_check(c, fmt, trial)
        return runs[rk]

    def cost(vals: Mapping[str, Any]) -> float:
        key = key_of(vals)
        if key not in cache:
            cache[key] = capture_sq_log_error([replay(c, vals) for c in captures])
        return cache[key]

    def rank(vals: Mapping[str, Any]) -> Tuple[Any, ...]:
        # the objective, then the grid order (smaller costs first)
        return (cost(vals),) + tuple(CAPTURE_FIT_GRID[k].index(vals[k]) if vals[k] in CAPTURE_FIT_GRID[k]
                                     else len(CAPTURE_FIT_GRID[k]) for k in keys)

    # MACHINE as given (the objective before the fit), whose replays say
    # whether the captures record idle states
    given_vals = {k: base[k] for k in CAPTURE_FIT_KEYS if k in base}
    before = cost(given_vals)
    idle_states = any(replay(c, given_vals).get("idle_state_entries", 0) > 0 for c in captures)
    eas = base.get("wake_placement") == "energy_aware"
    keys = tuple(k for k in CAPTURE_FIT_KEYS
                 if (idle_states or k not in CAPTURE_FIT_DESCENT_ONLY) and (eas or k not in CAPTURE_FIT_EAS_ONLY))

    # the descent's steps: each key alone, and the idle exit's cost and its
    # threshold together too (from none, one without the other changes
    # nothing, or every wakeup: alone, neither moves from 0)
    units = [(k,) for k in keys] + ([CAPTURE_FIT_DESCENT_ONLY] if idle_states else [])

    def descend(cur: Dict[str, Any]) -> Dict[str, Any]:
        for _ in range(8):
            moved = False
            for ks in units:
                combos = list(itertools.product(*(CAPTURE_FIT_GRID[k] for k in ks)))
                best = min(combos, key=lambda vs: (cost({**cur, **dict(zip(ks, vs))}), combos.index(vs)))
                if best != tuple(cur[k] for k in ks) and cost({**cur, **dict(zip(ks, best))}) < cost(cur):
                    cur.update(zip(ks, best))
                    moved = True
            if not moved:
                break
        return cur

    defaults = _core.default_config()["machine"]
    given = {k: base.get(k, defaults[k]) for k in keys}
    axes = [(0,) if k in CAPTURE_FIT_DESCENT_ONLY else
            CAPTURE_FIT_COARSE if all(isinstance(v, int) for v in CAPTURE_FIT_GRID[k]) else CAPTURE_FIT_GRID[k]
            for k in keys]
    coarse = sorted((dict(zip(keys, combo)) for combo in itertools.product(*axes)), key=rank)
    starts = [dict(given)] + [dict(c) for c in coarse[:CAPTURE_FIT_STARTS]]
    cur = min((descend(s) for s in starts), key=rank)
    # what the captures tell apart: per key, the grid values that fit as
    # well as the one chosen (within 1 % of its objective, the others held);
    # all of them: the captures say nothing of that key (a timer sleeper's
    # capture of task_wakeup_ns)
    best = cost(cur)
    as_good = {k: [v for v in CAPTURE_FIT_GRID[k] if cost({**cur, k: v}) <= best * 1.01 + 1e-12]
               for k in keys}
    # a key they say nothing of is left as MACHINE has it, unset there (the
    # search would leave it wherever its start was: 50 us of task_wakeup_ns
    # from two timer sleepers; unset, it is the timer's cost)
    pinned = {k for k in keys if len(as_good[k]) < len(CAPTURE_FIT_GRID[k])}
    fitted = {k: cur[k] if k in pinned else base[k] for k in keys if k in pinned or k in base}
    best = cost(fitted)
    trial.unlink(missing_ok=True)
    return {**base, **fitted}, before, best, as_good


def _is_machine_profile(path: Path) -> bool:
    """Whether PATH is a machine profile (format: agentcg-machine-profile)
    rather than a config; an unreadable file is the loaders' to report."""
    import yaml  # python3-yaml

    from . import machine as mprof

    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    return isinstance(doc, dict) and doc.get("format") == mprof.FORMAT


def _as_good_note(as_good: Mapping[str, Sequence[Any]]) -> str:
    """The fit's keys that the captures do not pin down (other grid values
    fit within 1 % as well), for the fit's summary line."""
    loose = []
    for k in CAPTURE_FIT_KEYS:
        vals, grid = list(as_good.get(k, ())), CAPTURE_FIT_GRID[k]
        if len(vals) <= 1:
            continue
        if len(vals) == len(grid):
            loose.append(f"{k} any (the fitted captures say nothing of it)")
        elif all(isinstance(v, int) for v in vals):
            loose.append(f"{k} {min(vals)}-{max(vals)}")
        else:
            loose.append(f"{k} " + " or ".join(str(v) for v in vals))
    return (" Fit as well (within 1 %): " + "; ".join(loose) + ".") if loose else ""


def format_captures(caps: Sequence[Mapping[str, Any]], fit: Optional[Mapping[str, Any]] = None) -> str:
    """The captures' measured / simulated table (capture_check's rows, with
    their role when FIT, capture_section's fit, says what was fitted)."""
    def cell(r: Mapping[str, Any], scale: float = 1000.0) -> str:
        m, x = (r.get("measured_ns"), r.get("simulated_ns")) if "measured_ns" in r else (r["measured"], r["simulated"])
        e = r["err_pct"]
        return (f"{m / scale:g} / {x / scale:g}" if "measured_ns" in r else f"{m} / {x}") + \
            (f" ({e:+.0f} %)" if e is not None else "")

    lines = []
    if fit:
        lines += ["Capture machine fitted on " + ", ".join(fit["fitted"]) + " (held out: "
                  + (", ".join(fit["held_out"]) or "none") + "): " + ", ".join(f"{k} {fit['machine'].get(k, 'unset')}"
                                                                      for k in CAPTURE_FIT_KEYS)
                  + f" over {fit['base'] or 'the defaults'}; mean squared log error of "
                  + "/".join(CAPTURE_FIT_METRICS) + " and each kind's and waker's p50 on the fitted captures "
                  f"{fit['sq_log_error_before']:.3f} -> "
                  f"{fit['sq_log_error_after']:.3f}; saved as {fit['profile']} (reuse with --machine)."
                  + _as_good_note(fit.get("as_good", {}))
                  + (" Not fitted: idle_exit_ns, idle_exit_after_ns (the fitted captures record no idle states)."
                     if "as_good" in fit and "idle_exit_ns" not in fit["as_good"] else ""),
                  ""]
    lines += ["Recorded captures as the measured side (replayed under " + caps[0]["policy"] + "; goals: p50 and p90 "
              "within 15 %, p99 within 25 %, task switches within 15 %):", "",
              "| capture | role | machine | wakeups | wakeup p50 us measured / sim | p90 us | p99 us | task switches | "
              "task CPU time err | goals |",
              "|---|---|---|---:|---|---|---|---|---:|---|"]
    for c in caps:
        lines.append(f"| {Path(c['capture']).name} ({c['cpus']} CPUs, {c['tasks']} tasks) | {c.get('role', '-')} | "
                     f"{Path(c['machine']).name if c['machine'] else 'defaults'} | {c['wakeups']} | {cell(c['p50'])} | "
                     f"{cell(c['p90'])} | {cell(c['p99'])} | {cell(c['switches'])} | "
                     f"{c['task_cpu_time_err_pct']:.1f} % | {'met' if c['goals_met'] else 'missed'} |")
    shown = [c for c in caps if c.get("kinds") and (not fit or c["machine"] == fit["profile"])]
    if shown:
        def kind(c: Mapping[str, Any], k: str, split: str = "kinds") -> str:
            v = c.get(split, {}).get(k)
            if not v:
                return "-"
            n = v["count"]
            return f"{cell(v['p50'])}, n {n['measured']} / {n['simulated']}"

        lines += ["", "The same wakeups by kind, p50 us measured / simulated (on the CPU the task then ran on; sent "
                  "to another CPU; a new task's start), and the ends of sleeps by what ended them (a task's system "
                  "call; an interrupt)" + (", with the fitted machine" if fit else "") + ":", "",
                  "| capture | role | local | remote | new | by a task | by an interrupt |",
                  "|---|---|---|---|---|---|---|"]
        lines += [f"| {Path(c['capture']).name} | {c.get('role', '-')} | {kind(c, 'local')} | {kind(c, 'remote')} | "
                  f"{kind(c, 'new')} | {kind(c, 'task', 'wakers')} | {kind(c, 'interrupt', 'wakers')} |"
                  for c in shown]
    return "\n".join(lines) + "\n"


def capture_section(captures: Sequence[str], fmt: Union[str, CaptureSide], machine: Optional[str],
                    fit: Optional[Sequence[str]],
                    dest: Path) -> Tuple[List[Dict[str, Any]], Optional[Dict[str, Any]]]:
    """The captures' rows (capture_check with MACHINE) and, with FIT (some
    of CAPTURES, by path or file name), the capture machine fitted on those
    (fit_capture_machine), saved as DEST/capture-machine.yaml, and every
    capture's row again with it, role "fitted" or "held out". Returns
    (rows, the fit or None)."""
    base = Path(machine) if machine else None
    rows = [capture_check(Path(c), fmt, base) for c in captures]
    if fit is None:
        return rows, None
    if not fit:
        raise AgentcgError("--capture-fit: name at least one of the --capture files to fit on")
    fitted: List[str] = []
    for f in fit:
        hits = [c for c in captures if c == f or Path(c).name == f]
        if len(hits) != 1:
            raise AgentcgError(f"--capture-fit {f}: " + ("not one of the --capture files" if not hits else
                                                         "names more than one --capture file"))
        fitted.append(hits[0])
    held = [c for c in captures if c not in fitted]
    m, before, after, as_good = fit_capture_machine([Path(c) for c in fitted], fmt, base, dest)
    from . import machine as mprof

    prof = dest / "capture-machine.yaml"
    names = {c: Path(c).name for c in captures}
    mprof.write_profile(prof, m, {"tool": "agentcg fidelity --capture-fit", "fitted": [names[c] for c in fitted],
                                  "held_out": [names[c] for c in held],
                                  "sq_log_error_before": before, "sq_log_error_after": after},
                        comment=["The machine of the captures, fitted on their replays (agentcg fidelity "
                                 "--capture-fit)."])
    for r in rows:
        r["role"] = "fitted" if r["capture"] in fitted else "held out"
    after_rows = [dict(capture_check(Path(c), fmt, prof), role="fitted" if c in fitted else "held out")
                  for c in captures]
    return rows + after_rows, {"machine": m, "base": str(base) if base else None, "profile": str(prof),
                               "fitted": [names[c] for c in fitted], "held_out": [names[c] for c in held],
                               "sq_log_error_before": before, "sq_log_error_after": after, "as_good": as_good}


def _check_cv_captures(captures: Sequence[str]) -> None:
    """Leave-one-out needs a capture to hold out and one to fit on."""
    if len(captures) < 2:
        raise AgentcgError("--capture-cv: give at least two --capture files (each is held out in turn, the machine "
                           "fitted on the others)")


def capture_cross_validation(captures: Sequence[str], fmt: Union[str, CaptureSide], machine: Optional[str], dest: Path
                             ) -> List[Dict[str, Any]]:
    """Leave-one-out: each of CAPTURES held out in turn, MACHINE fitted on
    all the others (fit_capture_machine; profiles in DEST/cv-N/), and the
    held-out capture replayed with that fit (capture_check). The held-out
    errors of every capture, each against a fit that never saw it."""
    from . import machine as mprof

    _check_cv_captures(captures)
    base = Path(machine) if machine else None
    rows = []
    replays: Dict[Tuple[Any, ...], Dict[str, Any]] = {}  # each capture replayed once per machine, for every fold
    for i, c in enumerate(captures):
        others = [x for j, x in enumerate(captures) if j != i]
        work = dest / f"cv-{i + 1}"
        work.mkdir(parents=True, exist_ok=True)
        m, before, after, as_good = fit_capture_machine([Path(x) for x in others], fmt, base, work, replays)
        prof = work / "capture-machine.yaml"
        mprof.write_profile(prof, m, {"tool": "agentcg fidelity --capture-cv", "fitted": [Path(x).name for x in others],
                                      "held_out": [Path(c).name], "sq_log_error_before": before,
                                      "sq_log_error_after": after},
                            comment=["A leave-one-out fit of agentcg fidelity --capture-cv."])
        rows.append(dict(capture_check(Path(c), fmt, prof), role="held out",
                         fit={k: m.get(k, "unset") for k in CAPTURE_FIT_KEYS}, as_good=as_good))
    return rows


def format_cross_validation(rows: Sequence[Mapping[str, Any]]) -> str:
    """The leave-one-out table (capture_cross_validation) and the median
    absolute held-out error of each figure."""
    def err(r: Mapping[str, Any]) -> str:
        e = r["err_pct"]
        return "-" if e is None else f"{e:+.0f} %"

    lines = ["", "Leave-one-out (--capture-cv): each capture held out, the machine fitted on all the others; "
             "held-out errors:", "",
             "| held out | fitted on the others (" + ", ".join(CAPTURE_FIT_KEYS) + ") | p50 | p90 | p99 | "
             "task switches |", "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {Path(r['capture']).name} | " + " / ".join(str(r["fit"][k]) for k in CAPTURE_FIT_KEYS)
                     + f" | {err(r['p50'])} | {err(r['p90'])} | {err(r['p99'])} | {err(r['switches'])} |")
    med = []
    for q in ("p50", "p90", "p99", "switches"):
        es = sorted(abs(r[q]["err_pct"]) for r in rows if r[q]["err_pct"] is not None)
        if es:
            mid = len(es) // 2
            m = es[mid] if len(es) % 2 else (es[mid - 1] + es[mid]) / 2
            within = sum(1 for e in es if e <= CAPTURE_GOALS[q])
            med.append(f"{q} {m:.0f} % ({within} of {len(es)} within {CAPTURE_GOALS[q]:g} %)")
    lines += ["", "Median absolute held-out error: " + "; ".join(med) + "."]
    return "\n".join(lines) + "\n"


def captures_only(captures: Sequence[str], fmt: Union[str, CaptureSide], machine: Optional[str],
                  fit: Optional[Sequence[str]],
                  dest: Path, quiet: bool, cv: bool = False) -> Dict[str, Any]:
    """`agentcg fidelity --capture ...` without traces: the captures'
    section alone (capture_section; with CV the leave-one-out fits too,
    capture_cross_validation), written to DEST/fidelity.md and
    fidelity.json; no VM."""
    caps, capfit = capture_section(captures, fmt, machine, fit, dest)
    report: Dict[str, Any] = {"captures": caps, "capture_fit": capfit}
    text = format_captures(caps, capfit)
    if cv:
        report["capture_cv"] = capture_cross_validation(captures, fmt, machine, dest)
        text += format_cross_validation(report["capture_cv"])
    _save(dest / "fidelity.json", report)
    (dest / "fidelity.md").write_text(text, encoding="utf-8")
    if not quiet:
        print(text, end="")
        if capfit:
            print(f"machine profile: {capfit['profile']} (reuse with --machine {capfit['profile']})")
        print(f"fidelity: {dest}/fidelity.md, fidelity.json")
    return report


def replace_readme_table(readme: Path, table_md: str) -> None:
    """Puts TABLE_MD between the README's fidelity-table markers."""
    doc = readme.read_text(encoding="utf-8")
    if README_BEGIN not in doc or README_END not in doc:
        raise AgentcgError(f"{readme}: no fidelity table markers ({README_BEGIN} ... {README_END})")
    head, rest = doc.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    readme.write_text(head + README_BEGIN + "\n" + table_md.rstrip("\n") + "\n" + README_END + tail, encoding="utf-8")


def _fmt(v: Optional[float], mult: float = 1.0, sign: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v * mult:+.0f}" if sign else f"{v * mult:.1f}"


def _save(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
