#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""The crowded-machine benchmark of the README (issue 15): agentcg against
eevdf (the baseline), cfs and flatcg on five scenarios, 20 seeds each by default,
with the median and the min-max spread of every figure.

  tests/bench/crowded_bench.py [--sim build/ci/sim/agentcg-sim] [--duration 300s]
                               [--seeds 1-20] [--out DIR] [--recordings DIR]

Scenarios (one command each, printed as it runs):
  crowded  trace generate crowded --sessions 100 --cpus 8 --duration D --seed S
  mix      trace mix <recordings> --sessions 40 --cpus 8 --stagger 2s --duration D --seed S
  mix2     the same 40 recorded sessions on 2 CPUs (contended)
  builds   trace generate builds --cpus 4 --duration D --seed S
  storm    the bundled traces/fork-storm.json
Seed S makes the trace (generated and mixed scenarios) and seeds the run.
Figures per policy: tool-call p50/p99, interactive wakeup p99 (the
/victim cgroup's wakeups in the fork storm, which has no shell), completed
tool calls, the share gap where busy (agentcg.table.weight_shortfall: over
2 points = cpu.weight not honoured), cpu.max overruns (CPU
time above quota x periods, where a cgroup has cpu.max), new-step
precision/recall.
  --ablation  also runs agentcg with each feature off in turn (one
              `--config` with scheduler.features.<f>: false; a feature that
              is off by default, mem_penalty, is switched on) and prints
              agentcg / eevdf for each: which feature helps, which hurts.
  --floor     also runs eevdf uncontended (the CPUs x 16): the best any
              scheduler could do on that trace.
Ratios to eevdf are paired (one trace, one run seed, two policies): a
ratio cell is the median of the per-seed ratios, its 95 % bootstrap
interval (agentcg.stats.summarize) and a verdict: "better" / "worse" when
the whole interval lies below / above 1 and the median is more than 1 %
from it (stats.REL_MARGIN), else "no difference". Three seeds cannot
call a difference whatever they read; the README's figures use 20.
Deterministic: same inputs, same table.
Who runs it: a person, to refresh the README table; not a test.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from agentcg.stats import MIN_VERDICT_SAMPLES, REL_MARGIN, summarize  # noqa: E402
from agentcg.table import weight_shortfall  # noqa: E402
from agentcg.units import SEEDS_FORMS, try_parse_seeds  # noqa: E402

POLICIES = ["eevdf", "cfs", "flatcg", "agentcg"]


def sh(cmd):
    print("+ " + " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


FEATURES = ["mem_penalty", "auto_boost", "wakeup_boost", "fork_aware", "min_slice", "latency", "retag_stale", "victim_preempt", "storm_reserve"]
# Features off by default (core/include/agentcg/tunables.h AGENTCG_F_DEFAULT):
# their ablation variant switches them ON instead.
OFF_BY_DEFAULT = {"mem_penalty"}


def run_json(cmd_out):
    with open(os.path.join(cmd_out, "results.json")) as f:
        return json.load(f)


def scaled_trace(src, dst, factor):
    """The same trace on `factor` x the CPUs (uncontended)."""
    with open(src) as f:
        t = json.load(f)
    t["machine"]["cpus"] = t["machine"]["cpus"] * factor
    with open(dst, "w") as f:
        json.dump(t, f)
    return dst


def quota_overrun(r, trace):
    """CPU time above quota x periods, summed over cgroups with cpu.max (ms)."""
    over = 0.0
    for c in trace.get("cgroups", []):
        m = c.get("cpu_max")
        if not m:
            continue
        rc = r["cgroups"].get(c["path"])
        if not rc:
            continue
        allowed = (rc["nr_periods"] + 1) * m["quota_us"] * 1000
        over += max(0, rc["cpu_time_ns"] - allowed) / 1e6
    return over


def figures(r, trace=None):
    if "interactive_wakeup_latency_ns" in r:
        inter = r["interactive_wakeup_latency_ns"]
    elif "/victim" in r["cgroups"]:
        inter = r["cgroups"]["/victim"]["wakeup_latency_ns"]  # the storm's interactive agent
    else:
        inter = r["wakeup_latency_ns"]
    return {
        "share_gap": weight_shortfall(r) if trace is not None else None,
        "quota_over": quota_overrun(r, trace) if trace is not None else None,
        "tool_p50": r["tool_call_latency_ns"]["p50"] / 1e6,
        "tool_p99": r["tool_call_latency_ns"]["p99"] / 1e6,
        "inter_p99": inter["p99"] / 1e6,
        "tools": r.get("tool_calls_completed", r["tool_call_latency_ns"]["count"]),
        "precision": r["new_step_detection"]["precision"],
        "recall": r["new_step_detection"]["recall"],
        "max_wait": r["max_runnable_wait_ns"] / 1e6,
    }


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    ap.add_argument("--sim", default=os.path.join(root, "build/ci/sim/agentcg-sim"))
    ap.add_argument("--duration", default="300s")
    ap.add_argument("--seeds", default="1-20", help=f"{SEEDS_FORMS} (default 1-20)")
    ap.add_argument("--out", default="/tmp/crowded-bench")
    ap.add_argument("--recordings", default=os.path.join(os.path.dirname(root), "shared/traces/agentcgroup"),
                    help="AgentCgroup recordings (default: ../shared/traces/agentcgroup beside the checkout)")
    ap.add_argument("--scenarios", default="crowded,mix,mix2,builds,storm")
    ap.add_argument("--ablation", action="store_true")
    ap.add_argument("--floor", action="store_true")
    ap.add_argument("--tables-only", action="store_true",
                    help="print the tables of an earlier run's OUT/summary.json without running anything")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    variants = []
    if a.ablation:
        for f in FEATURES:
            on = f in OFF_BY_DEFAULT
            cfg = os.path.join(a.out, f"{'with' if on else 'no'}-{f}.yaml")
            with open(cfg, "w") as fh:
                fh.write(f"scheduler:\n  features: {{{f}: {'true' if on else 'false'}}}\n")
            variants.append((f"agentcg-{'with' if on else 'no'}-{f}", cfg))
    seeds = try_parse_seeds(a.seeds)
    if not seeds:
        ap.error(f"--seeds {a.seeds}: expected {SEEDS_FORMS}")
    os.makedirs(a.out, exist_ok=True)
    recs = []
    if os.path.isdir(a.recordings):
        tasks = os.path.join(a.recordings, "tasks")
        ebpf = os.path.join(a.recordings, "ebpf")
        recs = [os.path.join(tasks, d) for d in sorted(os.listdir(tasks))] if os.path.isdir(tasks) else []
        recs += [os.path.join(ebpf, f) for f in sorted(os.listdir(ebpf)) if f.endswith(".jsonl")] if os.path.isdir(ebpf) else []
    res = {}
    for sc in ([] if a.tables_only else a.scenarios.split(",")):
        for s in seeds:
            tr = os.path.join(a.out, f"{sc}-{s}.json")
            run_seed = s
            if sc == "crowded":
                sh([a.sim, "trace", "generate", "crowded", "--sessions", "100", "--cpus", "8", "--duration", a.duration, "--seed", str(s), "-o", tr])
            elif sc in ("mix", "mix2"):
                if not recs:
                    print(sc + ": no recordings found, skipped", file=sys.stderr)
                    break
                cpus = "8" if sc == "mix" else "2"
                sh([a.sim, "trace", "mix", *recs, "--sessions", "40", "--cpus", cpus, "--stagger", "2s", "--duration", a.duration, "--seed", str(s), "-o", tr])
            elif sc == "builds":
                sh([a.sim, "trace", "generate", "builds", "--cpus", "4", "--duration", a.duration, "--seed", str(s), "-o", tr])
            elif sc == "storm":
                tr = os.path.join(root, "traces/fork-storm.json")
            od = os.path.join(a.out, f"{sc}-{s}")
            with open(tr) as f:
                trace = json.load(f)
            sh([a.sim, "compare", tr, "--policies", ",".join(POLICIES), "--seed", str(run_seed), "--out", od, "--quiet"])
            for p in POLICIES:
                res.setdefault(sc, {}).setdefault(p, []).append(figures(run_json(os.path.join(od, p)), trace))
            for name, cfg in variants:
                sh([a.sim, "run", tr, "--policy", "agentcg", "--config", cfg, "--seed", str(run_seed), "--out", od + "-" + name])
                res[sc].setdefault(name, []).append(figures(run_json(od + "-" + name), trace))
            if a.floor:
                fl = scaled_trace(tr, os.path.join(a.out, f"{sc}-{s}-x16.json"), 16)
                sh([a.sim, "run", fl, "--policy", "eevdf", "--seed", str(run_seed), "--out", od + "-x16"])
                res[sc].setdefault("floor", []).append(figures(run_json(od + "-x16")))
    summary = os.path.join(a.out, "summary.json")
    if a.tables_only:
        with open(summary) as f:
            saved = json.load(f)
        order = a.scenarios.split(",")
        res = {sc: saved[sc] for sc in sorted(saved, key=lambda k: order.index(k) if k in order else len(order))}
        seeds = next(iter(next(iter(res.values())).values()), []) if res else []  # only its length is used
    else:
        with open(summary, "w") as f:
            json.dump(res, f, indent=1)

    rows = [("tool-call p50 (ms)", "tool_p50", "{:.0f}"), ("tool-call p99 (ms)", "tool_p99", "{:.0f}"),
            ("interactive wakeup p99 (ms)", "inter_p99", "{:.3f}"), ("completed tool calls", "tools", "{:.0f}"),
            ("share gap where busy (points)", "share_gap", "{:.2f}"), ("cpu.max overrun (ms)", "quota_over", "{:.1f}"),
            ("max runnable wait (ms)", "max_wait", "{:.0f}"), ("new-step precision", "precision", "{:.3f}"),
            ("new-step recall", "recall", "{:.3f}")]

    print_targets(res, len(seeds))
    if variants or any("floor" in pol for pol in res.values()):
        print_ablation(res)
    for sc, pol in res.items():
        print(f"\n{sc} ({len(seeds)} seeds: median (min-max); agentcg / eevdf: median [95 % interval] verdict)")
        print("| metric | " + " | ".join(POLICIES) + " | agentcg / eevdf |")
        print("|---" * (len(POLICIES) + 2) + "|")
        for name, key, fmt in rows:
            cells = [cell([x[key] for x in pol[p]], fmt) for p in POLICIES]
            rc = ratio(pol, "agentcg", key) if key not in ("precision", "recall", "share_gap", "quota_over") else "-"
            print(f"| {name} | " + " | ".join(cells) + f" | {rc} |")
        extra = [p for p in pol if p not in POLICIES]
        if extra:
            print(f"\n{sc}: x / eevdf (median [95 % interval] of the per-seed ratios, verdict)")
            keys = [("tool p50", "tool_p50"), ("tool p99", "tool_p99"), ("interactive p99", "inter_p99"),
                    ("tool calls", "tools")]
            print("| variant | " + " | ".join(k for k, _ in keys) + " |")
            print("|---" * (len(keys) + 1) + "|")
            for p in ["agentcg"] + extra:
                print(f"| {p} | " + " | ".join(ratio(pol, p, k) for _, k in keys) + " |")


def cell(vals, fmt):
    """median (min-max) of the values that are there."""
    vals = [v for v in vals if v is not None]
    if not vals:
        return "-"
    m = statistics.median(vals)
    return f"{fmt.format(m)} ({fmt.format(min(vals))}-{fmt.format(max(vals))})"


def paired_ratios(pol, p, key):
    """Per seed, policy p's figure over eevdf's on the same trace and run seed."""
    return [x[key] / y[key] for x, y in zip(pol[p], pol["eevdf"])
            if x[key] is not None and y[key] not in (None, 0)]


def ratio(pol, p, key, verdict=True):
    """Paired ratios to eevdf: median [95 % interval] and, lower being
    better for every ratio but completed tool calls, a verdict."""
    rs = paired_ratios(pol, p, key)
    if not rs:
        return "-"
    m = summarize(rs)
    if len(rs) < MIN_VERDICT_SAMPLES:
        return f"{m.median:.2f}"
    if not verdict:
        return f"{m.median:.2f} [{m.lo:.2f}, {m.hi:.2f}]"
    if abs(m.median - 1) <= REL_MARGIN or m.lo <= 1 <= m.hi:
        v = "no difference"
    elif (m.hi < 1) == (key != "tools"):
        v = "better"
    else:
        v = "worse"
    return f"{m.median:.2f} [{m.lo:.2f}, {m.hi:.2f}] {v}"


# The targets (issue 15), agentcg / eevdf unless a bound is absolute.
TARGETS = [("tool-call p50 (ms)", "tool_p50", "<=", 0.7), ("tool-call p99 (ms)", "tool_p99", "<=", 0.9),
           ("interactive wakeup p99 (ms)", "inter_p99", "<=", 0.5), ("completed tool calls", "tools", ">=", 0.98)]


def print_targets(res, n):
    """The README's table: per scenario and target, eevdf and agentcg
    (median (min-max)), the paired ratio with its interval and verdict, the
    floor (eevdf uncontended, where run), and whether the median meets the
    target. Absolute bounds (share gap, cpu.max, the new-step detector)
    are met when every seed meets them; else the count that does not."""
    print(f"\nTargets ({n} seeds; agentcg / eevdf: median [95 % interval] of the per-seed ratios, verdict)")
    print("| scenario | metric | eevdf | agentcg | agentcg / eevdf | floor / eevdf | target | met? |")
    print("|---" * 8 + "|")
    for sc, pol in res.items():
        first = True
        for name, key, op, bound in TARGETS:
            rs = paired_ratios(pol, "agentcg", key)
            med = statistics.median(rs) if rs else float("nan")
            ok = med <= bound if op == "<=" else med >= bound
            fr = paired_ratios(pol, "floor", key) if "floor" in pol else []
            fl = f"{statistics.median(fr):.2f}" if fr else "-"
            fmt = "{:.0f}" if key in ("tool_p50", "tool_p99", "tools") else "{:.3f}"
            print(f"| {sc if first else ''} | {name} | {cell([x[key] for x in pol['eevdf']], fmt)} | "
                  f"{cell([x[key] for x in pol['agentcg']], fmt)} | {ratio(pol, 'agentcg', key)} | {fl} | "
                  f"{op} {bound} | {'yes' if ok else 'no'} |")
            first = False
        for name, key, bound, fmt in [("share gap where busy (points)", "share_gap", 2.0, "{:.2f}"),
                                      ("cpu.max overrun (ms)", "quota_over", 0.0, "{:.1f}")]:
            vals = [x[key] for x in pol["agentcg"] if x[key] is not None]
            over = sum(v > bound for v in vals)
            print(f"| | {name} | {cell([x[key] for x in pol['eevdf']], fmt)} | {cell(vals, fmt)} | - | - | "
                  f"<= {bound:g} | {'yes' if not over else f'no in {over} of {len(vals)} seeds'} |")
        for name, key in [("new-step precision", "precision"), ("new-step recall", "recall")]:
            vals = [x[key] for x in pol["agentcg"] if x[key] is not None]
            low = sum(v < 0.8 for v in vals)
            print(f"| | {name} | - | {cell(vals, '{:.3f}')} | - | - | >= 0.8 | "
                  f"{'yes' if not low else f'no in {low} of {len(vals)} seeds'} |")


# The README's ablation table: crowded, builds and storm side by side.
ABLATION_SCENARIOS = ["crowded", "builds", "storm"]
ABLATION_KEYS = ["tool_p50", "tool_p99", "inter_p99"]


def print_ablation(res):
    """agentcg and each variant (a feature off, or on where it is off by
    default) and the floor, x / eevdf: median [95 % interval] of the paired
    per-seed ratios, tool-call p50 / p99 / interactive p99 per scenario."""
    scs = [sc for sc in ABLATION_SCENARIOS if sc in res]
    if not scs:
        return
    names = ["agentcg"] + [p for p in res[scs[0]] if p not in POLICIES and p != "floor"]
    names += ["floor"] if "floor" in res[scs[0]] else []
    print("\nWhich feature does what: x / eevdf, median [95 % interval] of the per-seed ratios")
    print("| variant | " + " | ".join(f"{sc} p50 / p99 / {'victim wakeup' if sc == 'storm' else 'shell'} p99"
                                    for sc in scs) + " |")
    print("|---" * (len(scs) + 1) + "|")
    for p in names:
        print(f"| {p} | " + " | ".join(" / ".join(ratio(res[sc], p, k, verdict=False) for k in ABLATION_KEYS)
                                        for sc in scs) + " |")


if __name__ == "__main__":
    main()
