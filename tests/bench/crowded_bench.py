#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The crowded-machine benchmark of the README (issue 15): agentcg against
eevdf (the baseline), cfs and flatcg on four scenarios, three seeds each,
with the median and the min-max spread of every figure.

  tests/bench/crowded_bench.py [--sim build/ci/sim/agentcg-sim] [--duration 300s]
                               [--seeds 1,2,3] [--out DIR] [--recordings DIR]

Scenarios (one command each, printed as it runs):
  crowded  trace generate crowded --sessions 100 --cpus 8 --duration D --seed S
  mix      trace mix <recordings> --sessions 40 --cpus 8 --stagger 2s --duration D --seed S
  mix2     the same 40 recorded sessions on 2 CPUs (contended)
  builds   trace generate builds --cpus 4 --duration D --seed S
  storm    the bundled traces/fork-storm.json, run seed S
Figures per policy: tool-call p50/p99, interactive wakeup p99 (all wakeups
where the trace has no interactive task), completed tool calls, the largest
gap between a busy cgroup's share and its entitlement, cpu.max overruns,
new-step precision/recall. Deterministic: same inputs, same table.
Who runs it: a person, to refresh the README table; not a test.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

POLICIES = ["eevdf", "cfs", "flatcg", "agentcg"]


def sh(cmd):
    print("+ " + " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def figures(r):
    inter = r.get("interactive_wakeup_latency_ns", r["wakeup_latency_ns"])
    # no interactive task (the fork storm): all wakeups stand in
    return {
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
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--out", default="/tmp/crowded-bench")
    ap.add_argument("--recordings", default=os.path.join(os.path.dirname(root), "shared/traces/agentcgroup"),
                    help="AgentCgroup recordings (default: ../shared/traces/agentcgroup beside the checkout)")
    ap.add_argument("--scenarios", default="crowded,mix,mix2,builds,storm")
    a = ap.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    os.makedirs(a.out, exist_ok=True)
    recs = []
    if os.path.isdir(a.recordings):
        tasks = os.path.join(a.recordings, "tasks")
        ebpf = os.path.join(a.recordings, "ebpf")
        recs = [os.path.join(tasks, d) for d in sorted(os.listdir(tasks))] if os.path.isdir(tasks) else []
        recs += [os.path.join(ebpf, f) for f in sorted(os.listdir(ebpf)) if f.endswith(".jsonl")] if os.path.isdir(ebpf) else []
    res = {}
    for sc in a.scenarios.split(","):
        for s in seeds:
            tr = os.path.join(a.out, f"{sc}-{s}.json")
            run_seed = 1
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
                run_seed = s
            od = os.path.join(a.out, f"{sc}-{s}")
            sh([a.sim, "compare", tr, "--policies", ",".join(POLICIES), "--seed", str(run_seed), "--out", od, "--quiet"])
            for p in POLICIES:
                with open(os.path.join(od, p, "results.json")) as f:
                    res.setdefault(sc, {}).setdefault(p, []).append(figures(json.load(f)))
    json.dump(res, open(os.path.join(a.out, "summary.json"), "w"), indent=1, sort_keys=True)

    def cell(vals, fmt):
        vals = [v for v in vals if v is not None]
        if not vals:
            return "-"
        m = statistics.median(vals)
        return f"{fmt.format(m)} ({fmt.format(min(vals))}-{fmt.format(max(vals))})"

    rows = [("tool-call p50 (ms)", "tool_p50", "{:.0f}"), ("tool-call p99 (ms)", "tool_p99", "{:.0f}"),
            ("interactive wakeup p99 (ms)", "inter_p99", "{:.3f}"), ("completed tool calls", "tools", "{:.0f}"),
            ("max runnable wait (ms)", "max_wait", "{:.0f}"), ("new-step precision", "precision", "{:.3f}"),
            ("new-step recall", "recall", "{:.3f}")]
    for sc, pol in res.items():
        print(f"\n{sc} ({len(seeds)} seeds: median (min-max))")
        print("| metric | " + " | ".join(POLICIES) + " | agentcg / eevdf |")
        print("|---" * (len(POLICIES) + 2) + "|")
        for name, key, fmt in rows:
            cells = [cell([x[key] for x in pol[p]], fmt) for p in POLICIES]
            ratios = [x[key] / y[key] for x, y in zip(pol["agentcg"], pol["eevdf"])
                      if x[key] is not None and y[key] not in (None, 0)]
            rc = cell(ratios, "{:.2f}") if key not in ("precision", "recall") else "-"
            print(f"| {name} | " + " | ".join(cells) + f" | {rc} |")


if __name__ == "__main__":
    main()
