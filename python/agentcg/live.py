# SPDX-License-Identifier: GPL-2.0-only
"""The live backend driven from the host: one qemu boot of the sched_ext
kernel (live/vm/run-vm.sh) runs workloads under the kernel's default
scheduler (EEVDF), flatcg and agentcg; this module prepares the boot, brings
the guest's files back and turns them into results and tables.

``live_compare()`` is ``agentcg live compare``: the bundled traces replayed by
``agentcg-player`` (real processes in real cgroups; results.json with the
simulator's keys), cyclictest/hackbench/stress-ng, and the BPF per-callback
cost next to a trivial FIFO scheduler. ``fidelity.py`` uses ``run_vm()`` for
the simulated-vs-live comparison.

Absolute times under software emulation (TCG) are slow and noisy; the tables
are ratios to the default scheduler measured in the same boot.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ._errors import AgentcgError

ROOT = Path(__file__).resolve().parents[2]
SCHEDULERS = ("eevdf", "flatcg", "agentcg")
DEFAULT_TRACES = ("agent", "fork-storm")
# the player's --duration per bundled trace: the agent trace is 60 s of
# mostly-idle sessions; 30 s keeps three schedulers in a few minutes
DEFAULT_DURATIONS = {"agent": "30s"}


class LiveSkip(AgentcgError):
    """The VM cannot run here (no qemu, kernel or live binaries): says why."""


def build_dir(build: Optional[str] = None) -> Path:
    b = Path(build or os.environ.get("AGENTCG_BUILD_DIR") or ROOT / "build" / "default")
    for need in ("live/agentcgroupd/agentcgroupd", "live/player/agentcg-player"):
        if not (b / need).is_file():
            raise LiveSkip(f"{b / need} is not built: run './agentcg setup' on a machine with the live "
                           "tools (cmake prints '-- agentcg live backend: ...' with the reason when off)")
    return b


def run_vm(build: Path, scenarios: str, out: Path, log: Path, env: Mapping[str, str],
           files: Sequence[Tuple[str, str]] = (), timeout_s: int = 1800, quiet: bool = False) -> None:
    """Boots the VM once with SCENARIOS; the guest's /out lands in OUT.

    ENV is written to /etc/agentcg/compare.env in the guest (shell syntax);
    FILES are extra (host path, guest path) pairs. Raises LiveSkip when the
    harness skips (exit 77) and AgentcgError on failure, naming the log.
    """
    with tempfile.TemporaryDirectory(prefix="agentcg-live-") as tmp:
        envfile = Path(tmp) / "compare.env"
        envfile.write_text("".join(f"{k}={_sh_quote(v)}\n" for k, v in env.items()), encoding="utf-8")
        pairs = [f"{envfile}=/etc/agentcg/compare.env"] + [f"{h}={g}" for h, g in files]
        for h, _ in files:
            if " " in h or "=" in h:
                raise AgentcgError(f"{h}: paths with spaces or '=' cannot be carried into the VM")
        vm_env = dict(os.environ)
        vm_env["AGENTCG_VM_FILES"] = " ".join(pairs)
        vm_env.setdefault("AGENTCG_VM_MEM", "3G")
        cmd = [str(ROOT / "live" / "vm" / "run-vm.sh"), str(build), str(log), scenarios,
               str(timeout_s), str(out)]
        if not quiet:
            print(f"live: booting the VM ({scenarios}); serial log {log}", flush=True)
        rc = subprocess.run(cmd, env=vm_env, stdout=subprocess.DEVNULL if quiet else None).returncode
    if rc == 77:
        reason = log.read_text(errors="replace").strip().splitlines()[-1] if log.exists() else "skipped"
        raise LiveSkip(reason)
    if rc != 0:
        raise AgentcgError(f"the VM run failed (exit {rc}); see {log}")


def _sh_quote(v: str) -> str:
    return "'" + str(v).replace("'", "'\\''") + "'"


# --- parsing what the guest wrote -----------------------------------------------

def read_bench(path: Path) -> Dict[str, Any]:
    """bench.txt: `key value` lines -> dict (numbers converted)."""
    out: Dict[str, Any] = {}
    if not path.exists():
        return out
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "scheduler":
            out["scheduler"] = " ".join(parts[1:])
            continue
        if len(parts) != 2:
            raise AgentcgError(f"{path}:{n}: expected 'key value', got {line!r}")
        out[parts[0]] = _number(parts[1])
    return out


def _number(s: str) -> Any:
    try:
        return int(s)
    except ValueError:
        try:
            return float(s)
        except ValueError:
            return None if s in ("", "-1") else s


def read_progstats(path: Path) -> Dict[str, Dict[str, Dict[str, int]]]:
    """AGENTCG-PROGSTAT mode prog cnt ns lines -> {mode: {callback: {cnt, ns}}}."""
    out: Dict[str, Dict[str, Dict[str, int]]] = {}
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        p = line.split()
        if len(p) == 5 and p[0] == "AGENTCG-PROGSTAT":
            cb = p[2].split("_", 1)[1] if "_" in p[2] else p[2]
            out.setdefault(p[1], {})[cb] = {"cnt": int(p[3]), "ns": int(p[4])}
    return out


def collect_compare(vm_out: Path, dest: Path, traces: Sequence[str],
                    schedulers: Sequence[str]) -> Dict[str, Any]:
    """Moves the guest's files into DEST's layout and returns the summary:
    DEST/<trace>/<scheduler>/results.json (the player's results, simulator
    keys: compare them with `agentcg compare TRACE` output), DEST/<trace>/
    <scheduler>/player.log, DEST/benchmarks.json, DEST/overhead.json."""
    summary: Dict[str, Any] = {"results": {}, "benchmarks": {}, "overhead": {}, "missing": []}
    for s in schedulers:
        src = vm_out / "compare" / s
        for t in traces:
            r = src / f"{t}.json"
            d = dest / t / s
            d.mkdir(parents=True, exist_ok=True)
            if (src / f"{t}.log").exists():
                shutil.copyfile(src / f"{t}.log", d / "player.log")
            if not r.exists():
                summary["missing"].append(f"{t}/{s}")
                continue
            shutil.copyfile(r, d / "results.json")
            with open(r, encoding="utf-8") as f:
                summary["results"].setdefault(t, {})[s] = json.load(f)
        summary["benchmarks"][s] = read_bench(src / "bench.txt")
        if (src / "agentcgroupd.log").exists():
            (dest / "logs").mkdir(exist_ok=True)
            shutil.copyfile(src / "agentcgroupd.log", dest / "logs" / f"agentcgroupd-{s}.log")
    summary["overhead"] = read_progstats(vm_out / "overhead" / "progstats.txt")
    (dest / "benchmarks.json").write_text(json.dumps(summary["benchmarks"], indent=1, sort_keys=True) + "\n")
    (dest / "overhead.json").write_text(json.dumps(summary["overhead"], indent=1, sort_keys=True) + "\n")
    return summary


# --- the table ------------------------------------------------------------------

def _get(d: Any, *path: str) -> Any:
    for k in path:
        if not isinstance(d, Mapping) or k not in d:
            return None
        d = d[k]
    return d


def _victim(r: Mapping[str, Any]) -> Optional[str]:
    cg = r.get("cgroups", {})
    return "/victim" if "/victim" in cg else None


def compare_rows(summary: Mapping[str, Any], schedulers: Sequence[str]) -> List[Tuple[str, str, List[Any]]]:
    """(metric, unit, value per scheduler) rows; the caller shows ratios to
    the first scheduler (the default one)."""
    rows: List[Tuple[str, str, List[Any]]] = []
    res = summary.get("results", {})

    def trace_row(t: str, label: str, unit: str, *path: str) -> None:
        if t in res:
            rows.append((f"{t}: {label}", unit, [_get(res[t].get(s), *path) for s in schedulers]))

    for t in res:
        trace_row(t, "wakeup latency p50", "ms", "wakeup_latency_ns", "p50")
        trace_row(t, "wakeup latency p99", "ms", "wakeup_latency_ns", "p99")
        if any(_get(res[t].get(s), "tool_call_latency_ns", "count") for s in schedulers):
            trace_row(t, "tool-call latency p50", "ms", "tool_call_latency_ns", "p50")
            trace_row(t, "tool-call latency p99", "ms", "tool_call_latency_ns", "p99")
        if any(_victim(res[t].get(s) or {}) for s in schedulers):
            trace_row(t, "/victim CPU share", "share", "cgroups", "/victim", "cpu_share")
            trace_row(t, "/storm CPU share", "share", "cgroups", "/storm", "cpu_share")
        trace_row(t, "context switches", "count", "context_switches")
        trace_row(t, "CPU utilisation", "share", "cpu_utilization")
    b = summary.get("benchmarks", {})
    for key, label, unit in (("cyclictest_load_p50_us", "cyclictest under CPU load p50", "us"),
                             ("cyclictest_load_p99_us", "cyclictest under CPU load p99", "us"),
                             ("cyclictest_storm_p50_us", "cyclictest next to a fork storm p50", "us"),
                             ("cyclictest_storm_p99_us", "cyclictest next to a fork storm p99", "us"),
                             ("storm_forks_per_s", "stress-ng fork storm throughput", "forks/s"),
                             ("hackbench_s", "hackbench run time (4 groups)", "s")):
        if any(key in b.get(s, {}) for s in schedulers):
            rows.append((label, unit, [b.get(s, {}).get(key) for s in schedulers]))
    return rows


def format_cell(v: Any, unit: str) -> str:
    """A table cell: ns shown as ms, shares with 3 decimals, '-' for none."""
    if v is None:
        return "-"
    if unit == "ms":
        return f"{v / 1e6:.3f}"
    if unit == "share":
        return f"{v:.3f}"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def format_rows(rows: Sequence[Tuple[str, str, List[Any]]], schedulers: Sequence[str]) -> str:
    head = ["metric", "unit"] + [schedulers[0]] + [f"{s} (x {schedulers[0]})" for s in schedulers[1:]]
    body = []
    for name, unit, vals in rows:
        base = vals[0]
        cells = [name, unit, format_cell(base, unit)]
        for v in vals[1:]:
            ratio = (f" ({v / base:.2f})" if isinstance(v, (int, float)) and isinstance(base, (int, float))
                     and base else "")
            cells.append(format_cell(v, unit) + ratio)
        body.append(cells)
    w = [max(len(r[i]) for r in [head] + body) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w[i]) if i < 2 else c.rjust(w[i]) for i, c in enumerate(r)) for r in [head] + body]
    lines.insert(1, "  ".join("-" * x for x in w))
    return "\n".join(lines) + "\n"


def overhead_rows(ov: Mapping[str, Mapping[str, Mapping[str, int]]]) -> str:
    """Average BPF run time per callback, agentcg next to the FIFO baseline."""
    if "agentcg" not in ov or "fifo" not in ov:
        return "overhead: no BPF program statistics (kernel.bpf_stats_enabled?)\n"
    lines = [f"{'callback':<22}{'fifo ns':>10}{'agentcg ns':>12}{'ratio':>8}{'agentcg calls':>15}"]
    tot = {m: [0, 0] for m in ("fifo", "agentcg")}
    for cb in sorted(ov["agentcg"]):
        a = ov["agentcg"][cb]
        f = ov["fifo"].get(cb, {"cnt": 0, "ns": 0})
        for m, x in (("fifo", f), ("agentcg", a)):
            tot[m][0] += x["cnt"]
            tot[m][1] += x["ns"]
        if not a["cnt"]:
            continue
        fa = f["ns"] / f["cnt"] if f["cnt"] else None
        aa = a["ns"] / a["cnt"]
        lines.append(f"{cb:<22}{(f'{fa:.0f}' if fa else '-'):>10}{aa:>12.0f}"
                     f"{(f'{aa / fa:.2f}' if fa else '-'):>8}{a['cnt']:>15}")
    fa = tot["fifo"][1] / tot["fifo"][0] if tot["fifo"][0] else 0
    aa = tot["agentcg"][1] / tot["agentcg"][0] if tot["agentcg"][0] else 0
    lines.append(f"{'all callbacks':<22}{fa:>10.0f}{aa:>12.0f}{(aa / fa if fa else 0):>8.2f}{tot['agentcg'][0]:>15}")
    return "\n".join(lines) + "\n"


def live_compare(out: str, build: Optional[str] = None, traces: Sequence[str] = DEFAULT_TRACES,
                 schedulers: Sequence[str] = SCHEDULERS, durations: Optional[Mapping[str, str]] = None,
                 mem_scale: float = 0.25, bench_s: int = 8, overhead: bool = True,
                 timeout_s: int = 2400, quiet: bool = False) -> Dict[str, Any]:
    """`agentcg live compare`: one boot, every scheduler, the table."""
    b = build_dir(build)
    for s in schedulers:
        if s not in SCHEDULERS:
            raise AgentcgError(f"--schedulers: unknown scheduler '{s}' (expected {', '.join(SCHEDULERS)})")
    if schedulers[0] != "eevdf":
        raise AgentcgError("--schedulers: the first one is the reference and must be eevdf")
    for t in traces:
        p = ROOT / "traces" / f"{t}.json"
        if not p.exists():
            raise AgentcgError(f"--traces: {p} does not exist (bundled traces: traces/*.json)")
    dest = Path(out)
    dest.mkdir(parents=True, exist_ok=True)
    durs = dict(DEFAULT_DURATIONS)
    durs.update(durations or {})
    env = {"COMPARE_SCHEDULERS": ",".join(schedulers), "COMPARE_TRACES": ",".join(traces),
           "COMPARE_MEM_SCALE": str(mem_scale), "COMPARE_BENCH_S": str(bench_s)}
    for t, d in durs.items():
        env["COMPARE_DURATION_" + "".join(c if c.isalnum() else "_" for c in t)] = d
    vm_out = dest / ".vm-out"
    shutil.rmtree(vm_out, ignore_errors=True)
    run_vm(b, "compare,overhead" if overhead else "compare", vm_out, dest / "vm-serial.log", env, (),
           timeout_s, quiet)
    summary = collect_compare(vm_out, dest, traces, schedulers)
    shutil.rmtree(vm_out, ignore_errors=True)
    table = format_rows(compare_rows(summary, schedulers), schedulers)
    ov = overhead_rows(summary["overhead"]) if overhead else ""
    text = table + ("\nBPF cost per callback (kernel.bpf_stats_enabled), same boot:\n" + ov if ov else "")
    if summary["missing"]:
        text += "missing (player failed, see player.log): " + ", ".join(summary["missing"]) + "\n"
    (dest / "table.txt").write_text(text, encoding="utf-8")
    if not quiet:
        print(text, end="")
        print(f"live: results in {dest}/<trace>/<scheduler>/results.json, table in {dest}/table.txt")
    return summary
