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

Absolute times under software emulation (TCG) are slow and noisy, so one
run is one sample: with `repeat` N (default 3) each scheduler runs N times
in one boot, interleaved (A B C, C B A, ...) so that drift of the host falls
on all alike, and the table (agentcg.table) shows per metric the median, a
95 % bootstrap interval and a verdict against EEVDF. Every repetition is
kept (DIR/<trace>/<scheduler>/rep-N/results.json, DIR/live-compare.json).
The host's load average is sampled during the boot (the VM's emulation is
one host thread: when the host's runnable threads exceed its CPUs the
guest's clock stretches) and a warning is printed when it was that busy.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ._errors import AgentcgError

SCHEDULERS = ("eevdf", "flatcg", "agentcg")
# also accepted by --schedulers: the daemon's scx_simple-style FIFO mode,
# the cost of sched_ext itself next to the kernel's EEVDF
KNOWN_SCHEDULERS = SCHEDULERS + ("fifo", "eevdf-nohrtick", "agentcg-base")
# agentcg-base: the agentcg mode of another build's daemon (--baseline-build),
# carried into the VM as /usr/bin/agentcgroupd-base: a change against the
# program before it, in one boot
BASE_SCHEDULER = "agentcg-base"
BASE_DAEMON_GUEST = "/usr/bin/agentcgroupd-base"
DEFAULT_TRACES = ("agent", "fork-storm")
# the player's --duration per bundled trace: the agent trace is 60 s of
# mostly-idle sessions; 30 s keeps three schedulers in a few minutes
DEFAULT_DURATIONS = {"agent": "30s"}


class LiveSkip(AgentcgError):
    """The VM cannot run here (no qemu, kernel or live binaries): says why."""


# Where things are, without assuming the package sits in a checkout: the
# build directory comes from the argument (--build), else $AGENTCG_BUILD_DIR
# (the ./agentcg launcher exports it), else ./build/default; the source tree
# (live/vm/run-vm.sh, traces/) from $AGENTCG_SOURCE_DIR, else the build
# directory's CMakeCache.txt (CMAKE_HOME_DIRECTORY: the tree it was
# configured from). Each miss is a LiveSkip that names what to set.


def build_dir(build: Optional[str] = None) -> Path:
    """The build directory holding the live binaries (see above)."""
    b = Path(build or os.environ.get("AGENTCG_BUILD_DIR") or Path("build") / "default")
    if not b.is_dir():
        raise LiveSkip(f"{b}: no build directory here (give --build DIR or set AGENTCG_BUILD_DIR to a "
                       "build directory of agentcg, e.g. build/default after './agentcg setup')")
    for need in ("live/agentcgroupd/agentcgroupd", "live/player/agentcg-player"):
        if not (b / need).is_file():
            raise LiveSkip(f"{b / need} is not built: run './agentcg setup' on a machine with the live "
                           "tools (cmake prints '-- agentcg live backend: ...' with the reason when off)")
    return b


def source_dir(build: Path) -> Path:
    """The source tree of BUILD: $AGENTCG_SOURCE_DIR, else CMakeCache.txt's
    CMAKE_HOME_DIRECTORY. Must hold live/vm/run-vm.sh."""
    env = os.environ.get("AGENTCG_SOURCE_DIR")
    if env:
        src, how = Path(env), "AGENTCG_SOURCE_DIR"
    else:
        cache = Path(build) / "CMakeCache.txt"
        src, how = None, f"{cache}"
        try:
            for line in cache.read_text(encoding="utf-8", errors="replace").splitlines():
                if line.startswith("CMAKE_HOME_DIRECTORY:"):
                    src = Path(line.split("=", 1)[1])
                    break
        except OSError:
            pass
        if src is None:
            raise LiveSkip(f"{cache}: no CMAKE_HOME_DIRECTORY to find the source tree from; set "
                           "AGENTCG_SOURCE_DIR to the agentcg source tree (the folder holding live/vm/run-vm.sh)")
    if not (src / "live" / "vm" / "run-vm.sh").is_file():
        raise LiveSkip(f"{src}: not an agentcg source tree (no live/vm/run-vm.sh; from {how}); set "
                       "AGENTCG_SOURCE_DIR to the folder holding live/vm/run-vm.sh")
    return src


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
        cmd = [str(source_dir(build) / "live" / "vm" / "run-vm.sh"), str(build), str(log), scenarios,
               str(timeout_s), str(out)]
        if not quiet:
            print(f"live: booting the VM ({scenarios}); serial log {log}", flush=True)
        with HostLoad() as load, _LogFollower(log, quiet):
            rc = subprocess.run(cmd, env=vm_env, stdout=subprocess.DEVNULL if quiet else None).returncode
        last_host_load.clear()
        last_host_load.update(load.summary())
    if rc == 77:
        reason = log.read_text(errors="replace").strip().splitlines()[-1] if log.exists() else "skipped"
        raise LiveSkip(reason)
    if rc != 0:
        raise AgentcgError(f"the VM run failed (exit {rc}); see {log}")


last_host_load: Dict[str, Any] = {}  # HostLoad.summary() of the latest run_vm()


class HostLoad:
    """Samples the host's 1-minute load average every few seconds while the
    VM runs. The guest is emulated by one host thread (qemu TCG,
    thread=single): when more threads are runnable than the host has CPUs,
    that thread waits and the guest's measurements stretch."""

    def __init__(self, interval_s: float = 5.0) -> None:
        self.interval_s = interval_s
        self.samples: List[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while True:
            self.samples.append(os.getloadavg()[0])
            if self._stop.wait(self.interval_s):
                return

    def __enter__(self) -> "HostLoad":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> Dict[str, Any]:
        return host_load_summary(self.samples, os.cpu_count() or 1)


def host_load_summary(samples: Sequence[float], host_cpus: int) -> Dict[str, Any]:
    """{samples, mean, max, host_cpus, busy, warning}: busy when the mean
    load average exceeded the host's CPUs less half a CPU (the emulating
    thread then competes for a CPU)."""
    xs = [float(x) for x in samples]
    mean = sum(xs) / len(xs) if xs else 0.0
    busy = bool(xs) and mean > host_cpus - 0.5
    out: Dict[str, Any] = {"samples": [round(x, 2) for x in xs], "mean": round(mean, 2),
                           "max": round(max(xs), 2) if xs else 0.0, "host_cpus": host_cpus, "busy": busy}
    if busy:
        out["warning"] = (f"the host was busy during the live run: load average {mean:.1f} (max "
                          f"{max(xs):.1f}) on {host_cpus} CPUs; the VM's emulation thread had to wait, which "
                          "stretches latencies and adds spread. Rerun on a quieter host to trust the tails.")
    return out


class _LogFollower:
    """Prints the guest's progress lines (AGENTCG-DATA compare ...) from the
    serial log as they appear, so a run of many minutes is not silent."""

    def __init__(self, log: Path, quiet: bool) -> None:
        self.log = log
        self.quiet = quiet
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._t0 = time.monotonic()

    def _run(self) -> None:
        pos = 0
        while not self._stop.wait(2.0):
            try:
                with open(self.log, "rb") as f:
                    f.seek(pos)
                    chunk = f.read()
            except OSError:
                continue
            cut = chunk.rfind(b"\n")
            if cut < 0:
                continue
            pos += cut + 1
            for line in chunk[:cut].decode("utf-8", "replace").splitlines():
                msg = progress_line(line)
                if msg:
                    print(f"live [{time.monotonic() - self._t0:5.0f} s] {msg}", file=sys.stderr, flush=True)

    def __enter__(self) -> "_LogFollower":
        if not self.quiet:
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


def progress_line(line: str) -> Optional[str]:
    """'AGENTCG-DATA compare agentcg@2 player agent rc=0 wall_ms=31200' ->
    'agentcg (repetition 2): agent played (rc=0, 31.2 s)'; None for other lines."""
    p = line.strip().split()
    if len(p) < 4 or p[0] != "AGENTCG-DATA" or p[1] != "compare":
        return None
    who = p[2].replace("@", " (repetition ") + (")" if "@" in p[2] else "")
    if p[3] == "player" and len(p) >= 5:
        kv = dict(x.split("=", 1) for x in p[5:] if "=" in x)
        wall = kv.get("wall_ms")
        secs = f", {int(wall) / 1000:.1f} s" if wall and wall.isdigit() else ""
        return f"{who}: {p[4]} played (rc={kv.get('rc', '?')}{secs})"
    if p[3] == "bench":
        return f"{who}: benchmarks done"
    return f"{who}: {' '.join(p[3:])}"


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


# compare.sh's player_sleeper passes, by label: cyclictest's pattern (two
# processes, {run 20 us, sleep 1 ms}) played by agentcg-player on the idle
# machine and under CPU load, beside cyclictest's passes of the same names,
# and on the idle machine with 10 and 100 ms sleeps.
PLAYER_BENCHES = ("idle", "idle10", "idle100", "load")


def player_bench(src: Path, keep: Path, missing: List[str]) -> Dict[str, Any]:
    """The wakeup percentiles of the player_sleeper passes (SRC/player-LABEL.json,
    agentcg-player's results.json) as bench keys player_LABEL_{p50,p99}_us,
    in us; each file is kept under KEEP. One that is not a results.json with
    wakeups is named in MISSING and gives no keys."""
    out: Dict[str, Any] = {}
    for label in PLAYER_BENCHES:
        p = src / f"player-{label}.json"
        if not p.exists():
            continue
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, keep / p.name)
        try:
            lat = json.loads(p.read_text(encoding="utf-8")).get("wakeup_latency_ns") or {}
            n, p50, p99 = int(lat["count"]), float(lat["p50"]), float(lat["p99"])
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            missing.append(f"{keep / p.name} (no wakeup_latency_ns count/p50/p99: {e})")
            continue
        if n > 0:
            out[f"player_{label}_p50_us"] = round(p50 / 1000, 1)
            out[f"player_{label}_p99_us"] = round(p99 / 1000, 1)
    return out


def _number(s: str) -> Any:
    try:
        return int(s)
    except ValueError:
        try:
            return float(s)
        except ValueError:
            return None if s in ("", "-1") else s


def read_progstats(path: Path) -> Dict[str, Any]:
    """AGENTCG-PROGSTAT mode prog cnt ns [rep] lines -> {mode: {callback:
    {cnt, ns}}} summed over the repetitions, and "repetitions": the same
    per repetition (a line without one is repetition 1), in order."""
    out: Dict[str, Any] = {}
    reps: Dict[int, Dict[str, Dict[str, Dict[str, int]]]] = {}
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        p = line.split()
        if len(p) in (5, 6) and p[0] == "AGENTCG-PROGSTAT" and all(x.isdigit() for x in p[3:]):
            cb = p[2].split("_", 1)[1] if "_" in p[2] else p[2]
            cnt, ns = int(p[3]), int(p[4])
            tot = out.setdefault(p[1], {}).setdefault(cb, {"cnt": 0, "ns": 0})
            tot["cnt"] += cnt
            tot["ns"] += ns
            reps.setdefault(int(p[5]) if len(p) == 6 else 1, {}).setdefault(p[1], {})[cb] = {"cnt": cnt, "ns": ns}
    if reps:
        out["repetitions"] = [reps[r] for r in sorted(reps)]
    return out


# The benchmarks live compare records once more under EEVDF after its passes
# (compare_record in live/vm/guest/scenarios.d/compare.sh), so that
# `agentcg fidelity` can replay them in the simulator: scenario -> (the
# subtree the import keeps: not the recorder, the daemon or init; the
# measured task's cgroup; benchmarks.json's key prefix). The recording is
# DEST/recordings/<scenario>/recording.
RECORDED_BENCHES = {"cyclictest-load": ("/rb", "/rb/victim", "cyclictest_load"),
                    "cyclictest-storm": ("/rb", "/rb/victim", "cyclictest_storm")}
# ... and the bundled fork storm played by agentcg-player under EEVDF
# (DEST/recordings/fork-storm/recording): what a fork costs the forker and
# its child (fidelity.fork_costs_from_recording).
STORM_RECORDING = "fork-storm"
# ... and the bundled agent trace, played the same way under EEVDF
# (DEST/recordings/agent/recording) and then under agentcg
# (DEST/recordings/agent-agentcg/recording): what its wakeups wait for.
AGENT_RECORDINGS = ("agent", "agent-agentcg")


def collect_compare(vm_out: Path, dest: Path, traces: Sequence[str],
                    schedulers: Sequence[str], repeat: int = 0) -> Dict[str, Any]:
    """Moves the guest's files into DEST's layout and returns the summary.

    repeat 0 (one run, COMPARE_SCHEDULERS): DEST/<trace>/<scheduler>/
    results.json; repeat N (COMPARE_RUNS): DEST/<trace>/<scheduler>/rep-<n>/
    results.json for each repetition, and the first repetition also as
    DEST/<trace>/<scheduler>/results.json (what plots and `compare` read).
    summary["results"][trace][scheduler] and summary["benchmarks"][scheduler]
    are lists, one entry per repetition (a failed one is left out and named
    in summary["missing"])."""
    summary: Dict[str, Any] = {"results": {}, "benchmarks": {}, "overhead": {}, "missing": []}
    reps = list(range(1, repeat + 1)) if repeat else [0]
    for s in schedulers:
        for rep in reps:
            src = vm_out / "compare" / s / (f"rep-{rep}" if rep else "")
            for t in traces:
                r = src / f"{t}.json"
                d = dest / t / s / (f"rep-{rep}" if rep else "")
                d.mkdir(parents=True, exist_ok=True)
                if (src / f"{t}.log").exists():
                    shutil.copyfile(src / f"{t}.log", d / "player.log")
                if (src / f"{t}.metrics.txt").exists():  # agentcgroupd's /metrics after the trace
                    shutil.copyfile(src / f"{t}.metrics.txt", d / "metrics.txt")
                if not r.exists():
                    summary["missing"].append(f"{t}/{s}" + (f"/rep-{rep}" if rep else ""))
                    continue
                shutil.copyfile(r, d / "results.json")
                if rep == 1:
                    shutil.copyfile(r, dest / t / s / "results.json")
                with open(r, encoding="utf-8") as f:
                    summary["results"].setdefault(t, {}).setdefault(s, []).append(json.load(f))
            bench = read_bench(src / "bench.txt")
            bench.update(player_bench(src, dest / "benchmarks" / s / (f"rep-{rep}" if rep else ""),
                                      summary["missing"]))
            summary["benchmarks"].setdefault(s, []).append(bench)
            if (src / "agentcgroupd.log").exists():
                (dest / "logs").mkdir(exist_ok=True)
                shutil.copyfile(src / "agentcgroupd.log",
                                dest / "logs" / (f"agentcgroupd-{s}" + (f"-rep-{rep}" if rep else "") + ".log"))
    for sc in (*RECORDED_BENCHES, STORM_RECORDING, *AGENT_RECORDINGS):  # compare_record's recordings (COMPARE_RECORD)
        rec = vm_out / "compare" / "recordings" / sc
        if (rec / "recording" / "meta.json").exists():
            shutil.rmtree(dest / "recordings" / sc, ignore_errors=True)
            shutil.copytree(rec, dest / "recordings" / sc)
        elif rec.exists():
            summary["missing"].append(f"recordings/{sc}")
    summary["overhead"] = read_progstats(vm_out / "overhead" / "progstats.txt")
    if (vm_out / "kernel.json").exists():  # run-vm.sh: the booted kernel's release and CONFIG_HZ
        shutil.copyfile(vm_out / "kernel.json", dest / "kernel.json")
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


BENCH_ROWS = (("cyclictest_idle_p50_us", "cyclictest on the idle machine p50", True),
              ("cyclictest_idle_p99_us", "cyclictest on the idle machine p99", True),
              ("cyclictest_load_p50_us", "cyclictest under CPU load p50", True),
              ("cyclictest_load_p99_us", "cyclictest under CPU load p99", True),
              ("cyclictest_storm_p50_us", "cyclictest next to a fork storm p50", True),
              ("cyclictest_storm_p99_us", "cyclictest next to a fork storm p99", True),
              ("storm_forks_per_s", "stress-ng fork storm throughput", False),
              ("storm_alone_forks_per_s", "stress-ng fork storm throughput, alone", False),
              ("player_idle_p50_us", "agentcg-player sleeping 1 ms, idle machine p50", True),
              ("player_idle_p99_us", "agentcg-player sleeping 1 ms, idle machine p99", True),
              ("player_idle10_p50_us", "agentcg-player sleeping 10 ms, idle machine p50", True),
              ("player_idle100_p50_us", "agentcg-player sleeping 100 ms, idle machine p50", True),
              ("player_load_p50_us", "agentcg-player sleeping 1 ms, under CPU load p50", True),
              ("player_load_p99_us", "agentcg-player sleeping 1 ms, under CPU load p99", True),
              ("hackbench_s", "hackbench run time (4 groups)", True),
              ("fork_parent_us", "CPU of one fork (the forker's)", True),
              ("fork_child_us", "CPU of one exit (the child's)", True),
              ("fork_mem_parent_us", "CPU of one fork from a forker holding 32 MiB", True),
              ("mem_fault_us_per_mib", "CPU of the page faults of 1 MiB of new memory", True))


def compare_sections(summary: Mapping[str, Any], schedulers: Sequence[str]) -> List[Tuple[str, List[Any]]]:
    """(title, [table.Row]) per trace, then the benchmarks: the same rows and
    cells as the simulator's compare table (agentcg.table)."""
    from . import table

    out: List[Tuple[str, List[Any]]] = []
    res = summary.get("results", {})
    for t in res:
        runs = {s: list(res[t].get(s) or []) for s in schedulers}
        if any(runs.values()):
            out.append((f"{t} (agentcg-player)", table.build_rows(runs)))
    b = summary.get("benchmarks", {})
    rows = []
    for key, label, lower in BENCH_ROWS:
        vals = {s: [_bench_value(x, key) for x in (b.get(s) or [])] for s in schedulers}
        if any(v == v for vs in vals.values() for v in vs):  # some non-NaN
            unit = "forks/s" if key.endswith("forks_per_s") else ("s" if key == "hackbench_s" else "us")
            rows.append(table.Row(label, unit, vals, lower, "bench"))
    if rows:
        out.append(("benchmarks (cyclictest, stress-ng, hackbench, serial forks)", rows))
    return out


def _bench_value(d: Mapping[str, Any], key: str) -> float:
    v = d.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 else float("nan")


def format_sections(sections: Sequence[Tuple[str, List[Any]]], schedulers: Sequence[str]) -> str:
    from . import table

    return "\n".join(table.render_text(rows, list(schedulers), title=title) for title, rows in sections)


def format_cell(v: Any, unit: str) -> str:
    """A fidelity table cell: ns shown as ms, shares with 3 decimals, '-' for none."""
    if v is None or (isinstance(v, float) and v != v):
        return "-"
    if unit == "ms":
        return f"{v / 1e6:.3f}"
    if unit == "share":
        return f"{v:.3f}"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def _mean_ns(ov: Mapping[str, Any], mode: str, cb: Optional[str]) -> Optional[float]:
    """Mode MODE's mean ns per call of callback CB (None: every callback) in
    the statistics OV of one run or of their sum; None without calls."""
    xs = [x for c, x in (ov.get(mode) or {}).items() if cb is None or c == cb]
    n = sum(x["cnt"] for x in xs)
    return sum(x["ns"] for x in xs) / n if n else None


def _callback_ratio(ov: Mapping[str, Any], cb: Optional[str], num: str = "agentcg",
                    den: str = "fifo") -> Optional[float]:
    """Mode NUM's mean ns per call of callback CB over mode DEN's (agentcg
    over the FIFO mode by default)."""
    a, f = _mean_ns(ov, num, cb), _mean_ns(ov, den, cb)
    return a / f if a and f else None


# The overhead pass's phases (live/vm/guest/scenarios.sh overhead_run): the
# mixed load's modes are fifo, agentcg and agentcg-base; a 1 ms sleeper
# pinned to one CPU alone on the idle machine, cyclictest's path, is mode
# MODE-idle.
IDLE_PHASE = "-idle"


def overhead_rows(ov: Mapping[str, Any], phase: str = "") -> str:
    """Average BPF run time per callback, agentcg next to the FIFO baseline,
    over every run of both (the sum); with two or more repetitions also the
    ratio of each repetition's runs: median (min-max). With the baseline
    build's runs (mode agentcg-base, --baseline-build), agentcg against them
    too, the same way. PHASE "" is the mixed load, IDLE_PHASE the idle
    sleeper's (its modes are suffixed with it)."""
    ag, ff = "agentcg" + phase, "fifo" + phase
    if ag not in ov or ff not in ov:
        return "overhead: no BPF program statistics (kernel.bpf_stats_enabled?)\n"
    base = BASE_SCHEDULER + phase if BASE_SCHEDULER + phase in ov else None
    reps = [r for r in ov.get("repetitions") or [] if ag in r and ff in r]
    per_run = len(reps) >= 2

    def spread(cb: Optional[str], den: str = ff) -> str:
        import statistics

        xs = sorted(x for x in (_callback_ratio(r, cb, ag, den) for r in reps) if x is not None)
        if not per_run or not xs:
            return ""
        return f"  {statistics.median(xs):.2f} ({xs[0]:.2f}-{xs[-1]:.2f})"

    def fmt(v: Optional[float], spec: str) -> str:
        return format(v, spec) if v else "-"

    head = f"{'callback':<22}{'fifo ns':>10}{'agentcg ns':>12}{'ratio':>8}{'agentcg calls':>15}"
    if per_run:
        head += f"  ratio per repetition, median (min-max) of {len(reps)}"
    if base:
        head += f"  | {'base ns':>9}{'/ base':>8}" + ("  per repetition" if per_run else "")
    lines = [head]
    for cb in sorted(ov[ag]) + [None]:
        if cb is not None and not ov[ag][cb]["cnt"]:
            continue
        aa, fa = _mean_ns(ov, ag, cb), _mean_ns(ov, ff, cb)
        n = sum(x["cnt"] for c, x in ov[ag].items() if cb is None or c == cb)
        line = (f"{cb or 'all callbacks':<22}{fmt(fa, '.0f'):>10}{fmt(aa, '.0f'):>12}"
                f"{fmt(aa / fa if aa and fa else None, '.2f'):>8}{n:>15}")
        if per_run and fa:
            line += spread(cb)
        if base:
            ba = _mean_ns(ov, base, cb)
            line = line.ljust(len(head.split("|")[0]))  # the base columns under their heading
            line += f"  | {fmt(ba, '.0f'):>9}{fmt(aa / ba if aa and ba else None, '.2f'):>8}"
            line += spread(cb, base) if ba else ""
        lines.append(line.rstrip())
    return "\n".join(lines) + "\n"


def default_timeout_s(repeat: int) -> int:
    """About 8 minutes per scheduler pass under TCG, plus the boot."""
    return 600 + 900 * max(1, repeat)


# Top-level keys the guest writes itself in every pass (live/vm/guest/scenarios.sh write_config).
HARNESS_CONFIG_KEYS = ("daemon", "monitor")


def check_daemon_config(path: str, build: Path) -> str:
    """The text of `live compare --config FILE`, checked before the boot.

    The file is added to agentcgroupd's config in every pass (EEVDF's too:
    the daemon runs in each, in mode none there), so it must not set the
    keys the harness writes (daemon:, monitor:); the rest is checked by the
    build's own `agentcgroupd --check-config`, whose message (file, line,
    key) is raised as it is. A bad file therefore fails in a second, not
    after a 20-minute boot."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise AgentcgError(f"--config {path}: cannot read it ({e})") from e
    for n, line in enumerate(text.splitlines(), 1):
        m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)\s*:", line)
        if m and m.group(1) in HARNESS_CONFIG_KEYS:
            raise AgentcgError(f"{path}:{n}: '{m.group(1)}': live compare writes this section in every pass; "
                               "expected only scheduler:, gpu: or other sections")
    r = subprocess.run([str(build / "live" / "agentcgroupd" / "agentcgroupd"), "--config", path, "--check-config"],
                       capture_output=True, text=True, check=False)
    if r.returncode != 0:
        msg = (r.stderr.strip() or r.stdout.strip()).removeprefix("agentcgroupd: ")
        raise AgentcgError(msg or f"{path}: rejected by agentcgroupd --check-config (exit {r.returncode})")
    return text


def live_compare(out: str, build: Optional[str] = None, traces: Sequence[str] = DEFAULT_TRACES,
                 schedulers: Sequence[str] = SCHEDULERS, durations: Optional[Mapping[str, str]] = None,
                 mem_scale: float = 0.25, bench_s: int = 8, overhead: bool = True,
                 timeout_s: Optional[int] = None, quiet: bool = False, repeat: int = 3,
                 config: Optional[str] = None, record: bool = True,
                 baseline_build: Optional[str] = None) -> Dict[str, Any]:
    """`agentcg live compare`: one boot, every scheduler `repeat` times, the table.

    `record` (with benchmarks): after the passes, the cyclictest benchmarks
    once more and the bundled fork storm and agent traces under EEVDF
    (the agent trace under agentcg too), recorded by agentcg-record
    (RECORDED_BENCHES, STORM_RECORDING, AGENT_RECORDINGS), for `agentcg
    fidelity`.

    `config`: a YAML file added to agentcgroupd's config in every pass (a
    `scheduler:` section tunes the flatcg/agentcg passes); see
    check_daemon_config().

    `baseline_build`: another build directory whose daemon runs as the
    scheduler agentcg-base (added to `schedulers` if missing) and in the
    overhead pass beside agentcg: a change against the program before it,
    interleaved in one boot. Its daemon must run with this build's shared
    libraries (two builds of the same project on this machine do)."""
    from . import stats, table

    if repeat < 1:
        raise AgentcgError(f"--repeat {repeat}: expected at least 1 (3 or more for verdicts)")
    for s in schedulers:
        if s not in KNOWN_SCHEDULERS:
            raise AgentcgError(f"--schedulers: unknown scheduler '{s}' (expected {', '.join(KNOWN_SCHEDULERS)})")
    if schedulers[0] != "eevdf":
        raise AgentcgError("--schedulers: the first one is the reference and must be eevdf")
    b = build_dir(build)
    src = source_dir(b)
    files: List[Tuple[str, str]] = []
    if baseline_build is not None:
        base_daemon = Path(baseline_build) / "live" / "agentcgroupd" / "agentcgroupd"
        if not base_daemon.is_file():
            raise AgentcgError(f"--baseline-build {baseline_build}: {base_daemon} does not exist "
                               "(expected a build directory with the live backend built)")
        files.append((str(base_daemon.resolve()), BASE_DAEMON_GUEST))
        if BASE_SCHEDULER not in schedulers:
            schedulers = list(schedulers) + [BASE_SCHEDULER]
    elif BASE_SCHEDULER in schedulers:
        raise AgentcgError(f"--schedulers: {BASE_SCHEDULER} needs --baseline-build DIR (the build whose daemon it runs)")
    for t in traces:
        p = src / "traces" / f"{t}.json"
        if not p.exists():
            raise AgentcgError(f"--traces: {p} does not exist (bundled traces: traces/*.json)")
    config_text = check_daemon_config(config, b) if config else ""
    dest = Path(out)
    dest.mkdir(parents=True, exist_ok=True)
    durs = dict(DEFAULT_DURATIONS)
    durs.update(durations or {})
    order = stats.interleaved_order(schedulers, repeat)
    env = {"COMPARE_SCHEDULERS": ",".join(schedulers), "COMPARE_TRACES": ",".join(traces),
           "COMPARE_MEM_SCALE": str(mem_scale), "COMPARE_BENCH_S": str(bench_s),
           "COMPARE_RUNS": ",".join(f"{s}:{r}" for s, r in order), "COMPARE_DAEMON_YAML": config_text,
           "COMPARE_RECORD": "1" if record and bench_s > 0 else "0", "OVERHEAD_REPS": str(repeat)}
    for t, d in durs.items():
        env["COMPARE_DURATION_" + "".join(c if c.isalnum() else "_" for c in t)] = d
    vm_out = dest / ".vm-out"
    shutil.rmtree(vm_out, ignore_errors=True)
    if not quiet:
        print(f"live: {len(order)} scheduler passes in one boot ({' '.join(f'{s}#{r}' for s, r in order)}); "
              f"progress below, about {len(order) * 3} min under emulation", file=sys.stderr)
    run_vm(b, "compare,overhead" if overhead else "compare", vm_out, dest / "vm-serial.log", env, files,
           timeout_s or default_timeout_s(repeat), quiet)
    load = dict(last_host_load)
    summary = collect_compare(vm_out, dest, traces, schedulers, repeat)
    shutil.rmtree(vm_out, ignore_errors=True)
    summary["host_load"] = load
    sections = compare_sections(summary, schedulers)
    text = format_sections(sections, schedulers)
    if config:
        text = f"agentcgroupd config added in every pass: {config}\n" + text
    ov = overhead_rows(summary["overhead"]) if overhead else ""
    text += ("\nBPF cost per callback (kernel.bpf_stats_enabled), same boot, agentcg and the FIFO mode "
             + (f"(and {BASE_SCHEDULER}: {baseline_build}) " if baseline_build else "")
             + f"run {repeat} time(s) each, interleaved:\n" + ov if ov else "")
    if overhead and "agentcg" + IDLE_PHASE in summary["overhead"]:
        text += ("\nthe same on the idle wakeup path (a 1 ms sleeper pinned to one CPU alone on the idle machine "
                 "for 2 s, cyclictest's callbacks; before the load above in each run):\n"
                 + overhead_rows(summary["overhead"], IDLE_PHASE))
    if summary["missing"]:
        text += "missing (player failed, see player.log): " + ", ".join(summary["missing"]) + "\n"
    if load.get("warning"):
        text += "WARNING: " + load["warning"] + "\n"
    (dest / "table.txt").write_text(text, encoding="utf-8")
    doc = {"format": "agentcg-live-compare", "version": 1, "schedulers": list(schedulers), "traces": list(traces),
           "repeat": repeat, "order": [f"{s}:{r}" for s, r in order], "host_load": load,
           "repetitions": summary["results"], "benchmarks": summary["benchmarks"],
           "sections": {title: table.rows_json(rows, list(schedulers)) for title, rows in sections},
           "missing": summary["missing"], "config": {"path": config, "text": config_text} if config else None,
           "baseline_build": str(baseline_build) if baseline_build else None}
    (dest / "live-compare.json").write_text(table.dumps(doc), encoding="utf-8")
    if not quiet:
        print(text, end="")
        print(f"live: every repetition in {dest}/<trace>/<scheduler>/rep-N/results.json and "
              f"{dest}/live-compare.json, table in {dest}/table.txt")
    elif load.get("warning"):
        print("agentcg: warning: " + load["warning"], file=sys.stderr)
    return summary


# --- two invocations: do their verdicts agree? --------------------------------

def _compare_doc(d: Path) -> Dict[str, Any]:
    """DIR/live-compare.json of a `live compare` run, checked."""
    p = Path(d) / "live-compare.json"
    if not p.is_file():
        raise AgentcgError(f"{p}: not found (expected the output directory of a `live compare` run)")
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise AgentcgError(f"{p}: cannot read it as JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != "agentcg-live-compare" or not isinstance(
            doc.get("sections"), dict):
        raise AgentcgError(f"{p}: field 'format': expected agentcg-live-compare with a 'sections' object")
    return doc


def verdict_agreement(a: Path, b: Path) -> Tuple[List[Dict[str, Any]], str]:
    """The verdicts against EEVDF of two `live compare` runs side by side:
    every (section, metric, scheduler) that both have a verdict for (a
    metric without a direction, '-', and 'n/a' are left out). Returns the
    rows (section, metric, scheduler, a, b, agree, medians) and the printed
    table with its count: whether a second invocation tells the same story."""
    da, db = _compare_doc(a), _compare_doc(b)
    rows: List[Dict[str, Any]] = []
    for title, ra in da["sections"].items():
        by_metric = {r.get("metric"): r for r in db["sections"].get(title) or []}
        for row in ra:
            other = by_metric.get(row.get("metric"))
            if other is None:
                continue
            for sch, pa in sorted((row.get("policies") or {}).items()):
                pb = (other.get("policies") or {}).get(sch) or {}
                va, vb = pa.get("verdict"), pb.get("verdict")
                if va in (None, "-", "n/a") or vb in (None, "-", "n/a"):
                    continue
                rows.append({"section": title, "metric": row["metric"], "scheduler": sch, "a": va, "b": vb,
                             "agree": va == vb, "median_a": pa.get("median"), "median_b": pb.get("median")})
    if not rows:
        raise AgentcgError(f"{a} and {b}: no verdict in common (the same traces and schedulers, with "
                           "--repeat 3 or more on both, are needed)")
    w = max(len(f"{r['section']}: {r['metric']}") for r in rows)
    lines = [f"{'metric':<{w}}  {'scheduler':<16}{'A: ' + str(a):<24}{'B: ' + str(b):<24}"]
    for r in rows:
        lines.append(f"{r['section'] + ': ' + r['metric']:<{w}}  {r['scheduler']:<16}{r['a']:<24}{r['b']:<24}"
                     + ("" if r["agree"] else "differ"))
    n, k = len(rows), sum(r["agree"] for r in rows)
    called = [r for r in rows if r["a"] != "indistinguishable" or r["b"] != "indistinguishable"]
    opposite = [r for r in rows if not r["agree"] and "indistinguishable" not in (r["a"], r["b"])]
    lines.append(f"verdicts against eevdf that agree: {k} of {n} ({100 * k / n:.0f} %); where either run calls a "
                 f"difference: {sum(r['agree'] for r in called)} of {len(called)}; opposite (better against "
                 f"worse, higher against lower): {len(opposite)}")
    return rows, "\n".join(lines) + "\n"
