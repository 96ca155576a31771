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
traces have tool calls) are fitted by Gauss-Newton to the live wakeup
latency p50/p99 of every leaf cgroup and the tool-call p50 (log-ratios, so
every target weighs alike); each step solves a linear least-squares problem
in Eigen (sim/calibrate least_squares) with a Jacobian from finite
differences of simulations. context_switch_ns stays at its default: every
wakeup ends in one switch, so latencies only show the sum of the two costs.
The machine profile (YAML `machine:` section with the VM's cpus) is written
and the simulations rerun with it: the report shows the error before and
after.

Limits: the player measures wakeups from user space (timer expiry or child
exit -> the process runs again; see live/player), the simulator from
runnable -> running; forks, exits and page faults cost CPU live and nothing
in the model, which the calibration can only absorb as a slower machine.
"""
from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ._errors import AgentcgError
from . import live, units

SIM_POLICY = {"eevdf": "eevdf", "flatcg": "flatcg", "agentcg": "agentcg"}
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
        with open(src, encoding="utf-8") as f:
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


def side_by_side(sim: Mapping[str, Any], real: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """Rows {metric, sim, live, error_pct | error_abs} for one (trace, scheduler)."""
    rows: List[Dict[str, Any]] = []

    def lat(key: str, label: str) -> None:
        for p in ("p50", "p99"):
            s = sim.get(key, {}).get(p)
            r = real.get(key, {}).get(p)
            if (sim.get(key, {}).get("count") or 0) and (real.get(key, {}).get("count") or 0):
                rows.append({"metric": f"{label} {p}", "unit": "ms", "sim": s, "live": r,
                             "error_pct": _pct_err(s, r)})

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
    return {"wakeup_p50_max_err_pct": max(p50) if p50 else None,
            "wakeup_p99_max_err_pct": max(p99) if p99 else None,
            "share_max_err_abs": max(sh) if sh else None,
            "split_max_err_abs": max(sp) if sp else None}


def residual_targets(sim: Mapping[str, Any], real: Mapping[str, Any], name: str) -> List[Tuple[str, float, float]]:
    """(name, simulated, live) pairs the calibration fits: per leaf cgroup
    with wakeups on both sides its wakeup latency p50 and p99, and per run
    the tool-call latency p50 when the trace has tool calls."""
    out: List[Tuple[str, float, float]] = []
    for cg in leaf_cgroups(real):
        s = sim.get("cgroups", {}).get(cg, {}).get("wakeup_latency_ns", {})
        r = real["cgroups"][cg].get("wakeup_latency_ns", {})
        if s.get("count") and r.get("count"):
            for p in ("p50", "p99"):
                out.append((f"{name}:{cg}:wakeup_{p}", float(s[p]), float(r[p])))
    s, r = sim.get("tool_call_latency_ns", {}), real.get("tool_call_latency_ns", {})
    if s.get("count") and r.get("count"):
        out.append((f"{name}:tool_call_p50", float(s["p50"]), float(r["p50"])))
    return out


def _err(r: Mapping[str, Any]) -> str:
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
              rounds: int = CALIBRATION_ROUNDS) -> Tuple[Dict[str, int], List[Dict[str, Any]]]:
    """Gauss-Newton on the log-ratios live/sim of residual_targets() over the
    logarithms of the parameters, the Jacobian by finite differences (one
    extra simulation per parameter and key), each step a linear
    least-squares solve in Eigen (_core.least_squares); a step that does not
    lower the squared error is halved (at most 4 times), and no step
    moves a parameter by more than a factor e. The objective is not convex
    (latency percentiles jump as queues form), so the search starts from
    the best of SCAN_POINTS wakeup costs.
    SIMULATE(key, machine) -> results dict. Returns the machine and the
    per-round history."""
    # the simulator's defaults first (the "before"), then a coarse scan of
    # the wakeup cost picks the basin the Gauss-Newton steps refine
    m0, hist = _gauss_newton(simulate, keys, real, cpus, 0, float(DEFAULT_WAKEUP_OVERHEAD_NS))
    scan = []
    for i in range(SCAN_POINTS):
        w = 100.0 * (1e6 / 100.0) ** (i / (SCAN_POINTS - 1))  # 100 ns .. 1 ms, log-spaced
        scan.append((_gauss_newton(simulate, keys, real, cpus, 0, w)[1][0]["sq_log_error"], w))
    start = min(scan)[1]
    m, refined = _gauss_newton(simulate, keys, real, cpus, rounds, start)
    if refined[-1]["sq_log_error"] >= hist[0]["sq_log_error"]:
        return m0, hist  # nothing beats the defaults
    return m, hist + refined


def _gauss_newton(simulate: Any, keys: Sequence[str], real: Mapping[str, Mapping[str, Any]], cpus: int,
                  rounds: int, start_wakeup_ns: float) -> Tuple[Dict[str, int], List[Dict[str, Any]]]:
    from . import _core

    u = {"wakeup_overhead_ns": math.log(start_wakeup_ns), "speed_pct": math.log(100.0)}

    def machine(t: Mapping[str, float]) -> Dict[str, int]:
        return {"cpus": cpus, "context_switch_ns": DEFAULT_CONTEXT_SWITCH_NS,
                "wakeup_overhead_ns": int(round(math.exp(t["wakeup_overhead_ns"]))),
                "speed_pct": int(round(math.exp(t["speed_pct"])))}

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
    free = [p for p in PARAMS if p[0] != "speed_pct" or has_tools]
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


def write_profile(path: Path, m: Mapping[str, int], history: Sequence[Mapping[str, Any]], n_targets: int) -> None:
    lines = [f"# agentcg machine profile, fitted by `agentcg fidelity` (Gauss-Newton on {n_targets} live",
             "# measurements: wakeup latency p50/p99 per cgroup, tool-call latency p50).",
             f"# squared log error: {history[0]['sq_log_error']:.4f} before, {history[-1]['sq_log_error']:.4f} after.",
             "# context_switch_ns is not fitted (latencies only show its sum with wakeup_overhead_ns).",
             "machine:"] + [f"  {k}: {m[k]}" for k in ("context_switch_ns", "wakeup_overhead_ns", "speed_pct", "cpus")]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


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


def fidelity(traces: Sequence[str], out: str, build: Optional[str] = None,
             schedulers: Sequence[str] = ("eevdf", "agentcg"), duration: str = "20s",
             mem_scale: float = 0.25, seed: int = 1, profile: Optional[str] = None,
             live_dir: Optional[str] = None, timeout_s: Optional[int] = None, quiet: bool = False,
             repeat: int = 3) -> Dict[str, Any]:
    """The live side runs every scheduler `repeat` times in one boot
    (interleaved, as live compare); errors are against the median of the
    repetitions, and the live verdicts against EEVDF are printed beside."""
    from . import stats, table as ctable

    if repeat < 1:
        raise AgentcgError(f"--repeat {repeat}: expected at least 1")
    for s in schedulers:
        if s not in SIM_POLICY:
            raise AgentcgError(f"--schedulers: unknown scheduler '{s}' (expected {', '.join(SIM_POLICY)})")
    dest = Path(out)
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
            docs = _live_reps(live_root / n / s)
            if not docs:
                raise AgentcgError(f"{live_root / n / s}/results.json: no live results (run without --live-dir "
                                   "first)")
            live_reps.setdefault(n, {})[s] = docs
            real[f"{n}/{s}"] = median_doc(docs)
    cpus = int(next(iter(real.values()))["cpus"])

    # one simulation per (trace/scheduler, machine): the calibration asks
    # for the same machines again (the defaults, the fitted one)
    cache: Dict[str, Dict[str, Any]] = {}

    def simulate(key: str, m: Mapping[str, int]) -> Dict[str, Any]:
        ck = key + json.dumps(m, sort_keys=True)
        if ck not in cache:
            n, s = key.split("/")
            cache[ck] = _simulate(prepared[n], SIM_POLICY[s], seed, m)
        return cache[ck]

    # simulated with the default machine (on the VM's CPU count), then
    # calibrated (Gauss-Newton, see calibrate()) and simulated again
    keys = list(real)
    default_machine = {"cpus": cpus, "context_switch_ns": DEFAULT_CONTEXT_SWITCH_NS,
                       "wakeup_overhead_ns": DEFAULT_WAKEUP_OVERHEAD_NS, "speed_pct": 100}
    before: Dict[str, List[Dict[str, Any]]] = {}
    after: Dict[str, List[Dict[str, Any]]] = {}
    n_targets = sum(len(residual_targets(simulate(k, default_machine), real[k], k)) for k in keys)
    if n_targets == 0:  # e.g. every task in the root cgroup: a fit would silently keep the defaults
        raise AgentcgError("fidelity: nothing to fit the machine profile on: no leaf cgroup has wakeups both "
                           "live and simulated, and no tool calls (traces: " + ", ".join(traces) + "); put the "
                           "tasks in cgroups of their own")
    m, rounds = calibrate(simulate, keys, real, cpus)
    for k in keys:
        n, s = k.split("/")
        for label, machine, table in (("sim", default_machine, before), ("sim-calibrated", m, after)):
            r = simulate(k, machine)
            _save(dest / label / n / SIM_POLICY[s] / "results.json", r)
            table[k] = side_by_side(r, real[k])
    prof = Path(profile) if profile else dest / "machine.yaml"
    write_profile(prof, m, rounds, n_targets)
    all_before = [r for v in before.values() for r in v]
    all_after = [r for v in after.values() for r in v]
    report = {"traces": names, "schedulers": list(schedulers), "cpus": cpus, "duration_ns": dur,
              "mem_scale": mem_scale, "profile": str(prof), "before": before, "after": after,
              "error_before": error_summary(all_before), "error_after": error_summary(all_after),
              "calibration_rounds": rounds, "machine": m}
    table = format_table(before, after)
    nrep = max(len(d) for v in live_reps.values() for d in v.values())
    if nrep > 1:
        table += (f"\nLive, {nrep} repetitions per scheduler (the errors above are against their medians); "
                  "verdicts against eevdf:\n\n")
        for n in names:
            table += ctable.render_text(ctable.build_rows(live_reps[n]), list(schedulers), title=n) + "\n"
    report["live_repetitions"] = nrep
    report["host_load"] = dict(live.last_host_load) if not live_dir else None
    if report["host_load"] and report["host_load"].get("warning"):
        table += "WARNING: " + report["host_load"]["warning"] + "\n"
    _save(dest / "fidelity.json", report)
    (dest / "fidelity.md").write_text(table, encoding="utf-8")
    if not quiet:
        print(table, end="")
        for label, e in (("before calibration", report["error_before"]),
                         ("after calibration ", report["error_after"])):
            print(f"worst error {label}: wakeup p50 {_fmt(e['wakeup_p50_max_err_pct'])} %, p99 "
                  f"{_fmt(e['wakeup_p99_max_err_pct'])} %; CPU share {_fmt(e['share_max_err_abs'], 100)} "
                  f"points, split {_fmt(e['split_max_err_abs'], 100)} points")
        print(f"machine profile: {prof}")
        print(f"fidelity: {dest}/fidelity.md, fidelity.json, sim/, sim-calibrated/, live/")
    return report


def _fmt(v: Optional[float], mult: float = 1.0) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v * mult:.1f}"


def _save(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
