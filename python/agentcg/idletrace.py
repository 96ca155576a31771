# SPDX-License-Identifier: GPL-2.0-only
"""Where an idle wakeup's time goes: the guest's `idletrace` scenario
(live/vm/guest/scenarios.d/idletrace.sh) traces cyclictest alone on the idle
guest under each scheduler with ftrace on CLOCK_MONOTONIC; this reads those
traces and splits each of cyclictest's wakeups into:

- ``timer``: the timer interrupt (``local_timer_entry``) late against the
  sleep's expiry (``hrtimer_start``'s ``expires``, the thread arming it);
- ``expire``: that interrupt to the ``hrtimer_wakeup`` expiry;
- ``waking``: the expiry to ``sched_waking`` of the thread;
- ``wake``: ``sched_waking`` to ``sched_wakeup`` (the scheduler's enqueue:
  under sched_ext ops.select_cpu, ops.runnable, ops.enqueue);
- ``switch``: ``sched_wakeup`` to the ``sched_switch`` that runs it (the
  idle exit and the pick: ops.dispatch, ops.running);
- ``resched``: ``sched_waking`` to the first event on the thread's CPU that
  shows a reschedule asked for (ftrace's need-resched flag N, n, B or b:
  not the lazy one), or to the switch if none shows: the scheduler's
  decision to preempt (its protected time and re-check timer included);
- ``preempt``: that event to the switch: the kernel honouring it (a
  non-preemptible section of what runs there, or an idle CPU's exit);
- ``user``: that switch to the thread's next ``hrtimer_start`` (cyclictest
  reading the clock and sleeping again);
- ``total``: the expiry to that next ``hrtimer_start``.

Per trace it prints the median and mean of each (us), the wakeups counted,
how many ran on the CPU whose interrupt woke them, how many sent an IPI
while being enqueued, and how many IPIs the trace holds (``ipi_send_cpu``:
a kick of a CPU, which under TCG costs a second interrupt). Found with
it (README, Live v22): agentcg sent one self-IPI per wakeup of a pinned
thread.

Then, for the slowest ``--slowest`` percent of the wakeups by ``total``
(default 2: the p98 tail that a p99 comes from), the mean of each part
and what held the CPU the thread was woken on from ``sched_waking`` to
the switch that ran it: the time each task name ran there (``(idle)``
for the idle task: a woken CPU still idle; under single-threaded TCG a
vCPU the emulator has not run yet), mean us per wakeup. Found with it
(README, Live v23): next to a fork storm, agentcg's slowest wakeups wait
for a storm child a third to half as long as EEVDF's, and, which EEVDF's
almost never do, for the idle task of the CPU the storm reserve keeps
free.

    ./agentcg live idletrace [--slowest PCT] out/idletrace/*.trace
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from agentcg._errors import AgentcgError

_LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+(\S+)\s+(\d+)\.(\d{6}):\s+(\w+):\s*(.*)$")
_FIELD = re.compile(r"(\w+)=(\S+)")
_SWITCH = re.compile(r"prev_comm=(.*) prev_pid=.*==> next_comm=.* next_pid=(\d+)")
PARTS = ("timer", "expire", "waking", "wake", "switch", "resched", "preempt", "user", "total")
# ftrace's need-resched flag (the second one) when TIF_NEED_RESCHED is set;
# L and l are the lazy request (the fair class's tick), p PREEMPT_NEED_RESCHED alone
_RESCHED = frozenset("NnBb")
IDLE = "(idle)"


def _who(comm: str) -> str:
    """A task name without its CPU or worker number (``kworker/1:8`` ->
    ``kworker``), the idle task as IDLE."""
    return IDLE if comm.startswith("swapper") else comm.split("/", 1)[0]


def _pid(fields: dict, n: int, event: str) -> int:
    try:
        return int(fields["pid"])
    except (KeyError, ValueError):
        raise AgentcgError(f"line {n}: {event} without a pid= field (expected ftrace's {event} format)") from None


def breakdown(lines, comm: str = "cyclictest") -> dict:
    """The wakeups of the threads named `comm` in ftrace text `lines`:
    {"comm", "parts": {part: [us, ...]}, "held": [{task: us}, ...], "wakeups",
    "same_cpu", "ipis", "kicked"} (kicked: wakeups whose enqueue sent an IPI
    from the waking CPU; held: per wakeup, in the order of `parts`, the time
    each task ran on the CPU it was woken on before it ran there or
    elsewhere)."""
    last_irq: dict[int, int] = {}
    last_expiry: dict[int, int] = {}
    armed: dict[int, float] = {}   # pid -> its sleep's expiry (us)
    open_: dict[int, dict] = {}    # pid -> the wakeup in progress
    parts: dict[str, list[float]] = defaultdict(list)
    held: list[dict[str, int]] = []
    wakeups = same = ipis = kicked = 0
    for n, line in enumerate(lines, 1):
        m = _LINE.match(line)
        if not m:
            continue
        task, pid_s, cpu_s, flags, sec, usec, event, rest = m.groups()
        t = int(sec) * 1_000_000 + int(usec)
        pid, cpu = int(pid_s), int(cpu_s)
        if len(flags) > 1 and flags[1] in _RESCHED:
            # a reschedule asked for on a woken thread's CPU (after its waking line)
            for o in open_.values():
                if o["target"] == cpu and "asked" not in o and "switch" not in o:
                    o["asked"] = t
        if event == "local_timer_entry":
            last_irq[cpu] = t
        elif event == "ipi_send_cpu":
            ipis += 1
            for w in open_.values():  # sent during a wakeup's enqueue, from its CPU
                if w["cpu"] == cpu and "wakeup" not in w:
                    w["ipi"] = True
        elif event == "hrtimer_expire_entry":
            if dict(_FIELD.findall(rest)).get("function") == "hrtimer_wakeup":
                last_expiry[cpu] = t
        elif event == "sched_waking":
            f = dict(_FIELD.findall(rest))
            wakee = _pid(f, n, event)
            if f.get("comm") == comm and wakee in armed and cpu in last_expiry and cpu in last_irq:
                try:
                    target = int(f.get("target_cpu", cpu))
                except ValueError:
                    raise AgentcgError(f"line {n}: sched_waking with target_cpu={f['target_cpu']} "
                                       "(expected a CPU number)") from None
                open_[wakee] = {"exp": armed.pop(wakee), "irq": last_irq[cpu], "expiry": last_expiry.pop(cpu),
                                "waking": t, "cpu": cpu, "target": target, "mark": t, "held": defaultdict(int)}
        elif event == "sched_wakeup":
            w = open_.get(_pid(dict(_FIELD.findall(rest)), n, event))
            if w is not None and "wakeup" not in w:
                w["wakeup"] = t
        elif event == "sched_switch":
            s = _SWITCH.search(rest)
            if s:
                # what ran on a woken thread's CPU until now
                who = _who(s.group(1))
                for o in open_.values():
                    if o["target"] == cpu and "switch" not in o:
                        o["held"][who] += t - o["mark"]
                        o["mark"] = t
            w = open_.get(int(s.group(2))) if s else None
            if w is not None and "wakeup" in w and "switch" not in w:
                w["switch"], w["on"] = t, cpu
        if event == "hrtimer_start" and task == comm:
            f = dict(_FIELD.findall(rest))
            if f.get("function") != "hrtimer_wakeup":
                continue
            w = open_.pop(pid, None)
            if w is not None and "switch" in w:
                wakeups += 1
                same += w["on"] == w["cpu"]
                kicked += w.get("ipi", False)
                asked = w.get("asked", w["switch"])
                for part, a, b in (("timer", w["exp"], w["irq"]), ("expire", w["irq"], w["expiry"]),
                                   ("waking", w["expiry"], w["waking"]), ("wake", w["waking"], w["wakeup"]),
                                   ("switch", w["wakeup"], w["switch"]), ("resched", w["waking"], asked),
                                   ("preempt", asked, w["switch"]), ("user", w["switch"], t),
                                   ("total", w["exp"], t)):
                    parts[part].append(b - a)
                held.append(dict(w["held"]))
            try:
                armed[pid] = int(f["expires"]) / 1000.0
            except (KeyError, ValueError):
                raise AgentcgError(f"line {n}: hrtimer_start without an expires= field (expected ftrace's hrtimer_start format)")
    return {"comm": comm, "parts": dict(parts), "held": held, "wakeups": wakeups, "same_cpu": same, "ipis": ipis,
            "kicked": kicked}


def slowest(b: dict, pct: float = 2.0) -> dict:
    """The slowest `pct` percent of breakdown() `b`'s wakeups by total (at
    least one): {"n", "parts": {part: mean us}, "held": {task: mean us per
    wakeup}} (held: most first; a task that ran in none of them is absent)."""
    totals = b["parts"].get("total", [])
    if not totals:
        return {"n": 0, "parts": {}, "held": {}}
    n = max(1, int(len(totals) * pct / 100))
    # slowest first; ties in wakeup order, so the result is the same on every run
    idx = sorted(range(len(totals)), key=lambda i: (-totals[i], i))[:n]
    held: dict[str, int] = defaultdict(int)
    for i in idx:
        for who, us in b["held"][i].items():
            held[who] += us
    return {"n": n, "parts": {p: sum(b["parts"][p][i] for i in idx) / n for p in PARTS},
            "held": {who: us / n for who, us in sorted(held.items(), key=lambda kv: (-kv[1], kv[0]))}}


def render(name: str, b: dict, pct: float = 2.0) -> str:
    if not b["wakeups"]:
        return (f"{name}: no wakeup of {b['comm']} found "
                "(was the trace taken on CLOCK_MONOTONIC with the timer events?)")
    cells = "  ".join(f"{p} {statistics.median(b['parts'][p]):.0f}/{statistics.mean(b['parts'][p]):.0f}" for p in PARTS)
    s = slowest(b, pct)
    tail = "  ".join(f"{p} {s['parts'][p]:.0f}" for p in PARTS)
    by = ", ".join(f"{who} {us:.0f}" for who, us in list(s["held"].items())[:6]) or "nothing"
    return (f"{name}: {b['wakeups']} wakeups, {b['same_cpu']} on the woken CPU, {b['kicked']} sent an IPI "
            f"while enqueued, {b['ipis']} IPIs in all; "
            f"us median/mean: {cells}\n"
            f"  slowest {pct:g} % ({s['n']}), us mean: {tail}; its CPU held by (us per wakeup): {by}")


def analyse(paths, pct: float = 2.0) -> str:
    """render() of every trace file in `paths`, one after the other; an
    unreadable or malformed file is an AgentcgError that names it."""
    if not 0 < pct <= 100:
        raise AgentcgError(f"--slowest {pct:g}: expected a percentage in (0, 100]")
    out = []
    for a in paths:
        p = Path(a)
        try:
            with p.open(errors="replace") as f:
                out.append(render(p.name, breakdown(f), pct))
        except OSError as e:
            raise AgentcgError(f"{a}: {e.strerror}") from None
        except AgentcgError as e:
            raise AgentcgError(f"{a}: {e}") from None
    return "\n".join(out) + "\n"


def _percent(text: str) -> float:
    try:
        pct = float(text)
    except ValueError:
        pct = -1.0
    if not 0 < pct <= 100:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a percentage in (0, 100]")
    return pct


def main(argv: list[str] | None = None, prog: str = "python3 -m agentcg.idletrace") -> int:
    ap = argparse.ArgumentParser(prog=prog,
                                 description="Where each of cyclictest's wakeups spends its time, "
                                             "from the guest's idletrace scenario's ftrace text.")
    ap.add_argument("--slowest", type=_percent, default=2.0, metavar="PCT",
                    help="the tail summarised: the slowest PCT %% of the wakeups by total (default 2)")
    ap.add_argument("traces", nargs="+", metavar="TRACE", help="ftrace text (OUT/idletrace/*.trace)")
    args = ap.parse_args(argv)
    try:
        sys.stdout.write(analyse(args.traces, args.slowest))
    except AgentcgError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
