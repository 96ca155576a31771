#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# Host test of agentcg-player (live/player/player.cc), registered in CTest as
# live_player_host by live/player/CMakeLists.txt. Runs with --no-cgroups (the
# host running the unit tests has no cgroup v2): plays a small trace with
# run/sleep/io/fork/wait/mem/tool_begin/tool_end/step, runs agentcg-sim on the
# same trace, and checks that results.json has the simulator's key set
# (recursively; `live` and `gpu` aside, and `config`, whose content is
# live-specific: the machine actually used), plus the counts the trace fixes.
# Also: a real-time policy (rt_priority) is set as the trace says;
# --duration stops and kills everything; bad trace -> exit 1 with
# FILE:LINE; bad options -> exit 2.
# Usage: player_test.py PATH/TO/agentcg-player PATH/TO/agentcg-sim
import json
import os
import subprocess
import sys
import tempfile
import time

MS = 1_000_000
TRACE = {
    "format": "agentcg-trace", "version": 1, "name": "player-test",
    "machine": {"cpus": 2},
    "cgroups": [{"path": "/a", "cpu_weight": 200}, {"path": "/a/x"},
                {"path": "/b", "memory_high": 64 << 20}],
    "processes": [
        {"pid": 1, "cgroup": "/a/x", "start_ns": 0, "comm": "agcgpt-agent", "agent": {"session": "s1"}, "ops": [
            {"op": "step", "step": 1},
            {"op": "mem", "bytes": 4 << 20},
            {"op": "tool_begin", "tool": "Bash"},
            {"op": "fork", "pid": 2},
            {"op": "fork", "child": {"comm": "agcgpt-cc1", "ops": [{"op": "run", "ns": 20 * MS}]}},
            {"op": "wait"},
            {"op": "tool_end"},
            {"op": "step", "step": 2},
            {"op": "sleep", "ns": 30 * MS},
            {"op": "tool_begin", "tool": "Read"},
            {"op": "run", "ns": {"dist": "uniform", "min": 5 * MS, "max": 10 * MS}},
            {"op": "mem", "bytes": {"dist": "uniform", "min": 1 << 20, "max": 2 << 20}},
            {"op": "tool_end"}]},
        {"pid": 2, "parent": 1, "cgroup": "/b", "comm": "agcgpt-bash", "ops": [
            {"op": "run", "ns": 30 * MS}, {"op": "io", "ns": 10 * MS}, {"op": "run", "ns": 10 * MS}]},
        {"pid": 3, "cgroup": "/b", "start_ns": 5 * MS, "comm": "agcgpt-loop", "ops": [
            {"op": "repeat", "count": 3, "body": [{"op": "run", "ns": 5 * MS}, {"op": "sleep", "ns": 5 * MS}]},
            {"op": "exec", "comm": "agcgpt-done"}]},
    ],
}
RUN_NS = 20 * MS + 30 * MS + 10 * MS + 5 * MS + 3 * 5 * MS  # the fixed run ops + the uniform's minimum
SLEEP_NS = 30 * MS + 10 * MS + 3 * 5 * MS  # every sleep and io op of the trace
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


# The simulator's alone: cpu.weight's shortfall where busy needs each
# cgroup's number of runnable tasks at every instant, which a live host does
# not expose (cgroup v2 has no per-group nr_running; /proc schedstat gives
# only sums over time).
SIM_ONLY = "cpu_weight_shortfall_pts"


def keys(j, prefix=""):
    out = set()
    if isinstance(j, dict):
        for k, v in j.items():
            if prefix == "" and k in ("live", "gpu"):
                continue
            p = prefix + "/" + k
            if k == SIM_ONLY:
                continue
            out.add(p)
            if p != "/config":
                out |= keys(v, p)
    return out


# The player's processes are forks (never exec'd), so they keep the
# environment it was started with: a tag unique to this run tells ours from
# those of another run of this test on the same machine (two test runs side
# by side saw each other's "agcgpt-" processes and failed "processes left").
TAG_KEY, TAG_VALUE = "AGENTCG_PLAYER_TEST", f"{os.getpid()}-{os.urandom(6).hex()}"
TAG = f"{TAG_KEY}={TAG_VALUE}"


def run(cmd):
    env = dict(os.environ, **{TAG_KEY: TAG_VALUE})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)


def our_procs():
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/comm") as f:
                    if not f.read().startswith("agcgpt-"):
                        continue
                with open(f"/proc/{d}/environ", "rb") as f:
                    if TAG.encode() in f.read().split(b"\0"):
                        found.append(d)
            except OSError:
                pass
    return found


def sched_policy(pid):
    """The scheduling policy of /proc/PID/stat (field 41: 0 SCHED_OTHER, 1 FIFO, 2 RR)."""
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[38])


# A real-time process (SCHED_FIFO 1) and its child that the trace puts back
# in the fair class (rt_priority 0): while they sleep, /proc says what the
# player set. Without the right to (not root, no CAP_SYS_NICE) the player
# says so and runs on.
RT_TRACE = {
    "format": "agentcg-trace", "version": 1, "name": "player-rt", "machine": {"cpus": 2},
    "processes": [{"pid": 1, "start_ns": 0, "comm": "agcgpt-rt", "rt_priority": 1, "ops": [
        {"op": "fork", "child": {"comm": "agcgpt-fair", "rt_priority": 0, "ops": [{"op": "sleep", "ns": 1500 * MS}]}},
        {"op": "sleep", "ns": 1500 * MS}, {"op": "run", "ns": 1 * MS}, {"op": "wait"}]}],
}


def check_real_time(player, tmp):
    tpath = os.path.join(tmp, "rt.json")
    with open(tpath, "w") as f:
        json.dump(RT_TRACE, f)
    env = dict(os.environ, **{TAG_KEY: TAG_VALUE})
    proc = subprocess.Popen([player, tpath, "-o", os.path.join(tmp, "rt-live.json"), "--no-cgroups"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    policies = {}
    deadline = time.monotonic() + 1.2
    while time.monotonic() < deadline and len(policies) < 2:
        for pid in our_procs():
            try:
                with open(f"/proc/{pid}/comm") as f:
                    comm = f.read().strip()
                if comm in ("agcgpt-rt", "agcgpt-fair"):
                    policies[comm] = sched_policy(pid)
            except OSError:
                pass
        time.sleep(0.05)
    out, err = proc.communicate(timeout=60)
    check(proc.returncode == 0, f"real-time trace: player exit {proc.returncode}: {err}")
    if "cannot set real-time priority 1 (SCHED_FIFO)" in err:
        check(os.geteuid() != 0, f"root could not set SCHED_FIFO: {err}")
        print("SKIP: real-time policy not permitted here (the player said so):", err.strip().splitlines()[0])
        return
    check(policies.get("agcgpt-rt") == 1, f"the real-time process's policy {policies} (want SCHED_FIFO, 1)")
    check(policies.get("agcgpt-fair") == 0, f"the child put back in the fair class: {policies} (want 0)")


def main():
    player, sim = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        tpath = os.path.join(tmp, "t.json")
        with open(tpath, "w") as f:
            json.dump(TRACE, f, indent=1)
        r = run([player, tpath, "-o", os.path.join(tmp, "live.json"), "--no-cgroups", "--label", "hosttest",
                 "--seed", "7"])
        check(r.returncode == 0, f"player exit {r.returncode}: {r.stderr}")
        if r.returncode != 0:
            return
        live = json.load(open(os.path.join(tmp, "live.json")))
        r = run([sim, "run", tpath, "--policy", "cfs", "--seed", "7", "--out", os.path.join(tmp, "sim")])
        check(r.returncode == 0, f"agentcg-sim exit {r.returncode}: {r.stderr}")
        simr = json.load(open(os.path.join(tmp, "sim", "results.json")))
        diff = keys(live) ^ keys(simr)
        check(not diff, f"key sets differ from the simulator's: {sorted(diff)}")
        check(set(live["cgroups"]) == set(simr["cgroups"]), "cgroup path sets differ")
        check(live["policy"] == "hosttest" and live["seed"] == 7, "label/seed not recorded")
        check(live["tool_call_latency_ns"]["count"] == 2, f"tool calls {live['tool_call_latency_ns']['count']} != 2")
        check(live["tasks"] == simr["tasks"] == 4, f"tasks live {live['tasks']} sim {simr['tasks']} != 4")
        for path in live["cgroups"]:
            lc, sc = live["cgroups"][path], simr["cgroups"][path]
            check(lc["tasks"] == sc["tasks"], f"{path}: tasks live {lc['tasks']} sim {sc['tasks']}")
            check(lc["forks"] == sc["forks"], f"{path}: forks live {lc['forks']} sim {sc['forks']}")
        check(live["cgroups"]["/b"]["forks"] == 1 and live["cgroups"]["/a/x"]["forks"] == 1, "forks per cgroup")
        check(live["counters"].get("agent_steps") == 2, f"agent_steps {live['counters']}")
        cpu = live["cgroups"]["/"]["cpu_time_ns"]
        check(cpu >= RUN_NS, f"cpu_time_ns {cpu} < sum of run ops {RUN_NS}")
        check(live["cgroups"]["/b"]["cpu_time_ns"] >= 55 * MS, "/b got less CPU than its run ops")
        # The sum of all sleeps (55 ms) is below pid 1's own chain (wait for
        # pid 2's 30 + 10 + 10 ms, sleep 30 ms, run >= 5 ms = 85 ms).
        check(live["duration_ns"] >= SLEEP_NS, f"duration_ns {live['duration_ns']} < sum of sleeps {SLEEP_NS}")
        check(live["duration_ns"] >= 85 * MS, f"duration_ns {live['duration_ns']} < pid 1's chain (85 ms)")
        # Wakeups: 4 new tasks, 2 sleeps (pid 1) + 3 sleeps (pid 3) + 1 io, and 1 wait.
        check(live["wakeup_latency_ns"]["count"] >= 4 + 6, f"wakeup samples {live['wakeup_latency_ns']['count']}")
        check(live["cgroups"]["/"]["memory"]["peak_bytes"] >= 4 << 20, "memory peak below the mem op")
        check(live["live"]["samples_dropped"] == 0 and live["live"]["mem_scale"] == 1.0, "live section")
        check(any("--no-cgroups" in n for n in live["live"]["notes"]), "notes do not say --no-cgroups")
        check(live["series"]["interval_ns"] % 100_000_000 == 0 and len(live["series"]["cgroups"]["/"]) <= 200,
              "series interval")
        check(not our_procs(), "processes left after the run")

        # --duration stops a long trace and kills what is still running.
        long = {"format": "agentcg-trace", "version": 1, "name": "long", "machine": {"cpus": 1},
                "processes": [{"pid": 1, "start_ns": 0, "comm": "agcgpt-hog", "ops": [
                    {"op": "fork", "child": {"comm": "agcgpt-kid", "ops": [{"op": "sleep", "ns": 60_000 * MS}]}},
                    {"op": "run", "ns": 60_000 * MS}]}]}
        lpath = os.path.join(tmp, "long.json")
        with open(lpath, "w") as f:
            json.dump(long, f)
        r = run([player, lpath, "-o", os.path.join(tmp, "long-out.json"), "--no-cgroups", "--duration", "300ms"])
        check(r.returncode == 0, f"--duration run exit {r.returncode}: {r.stderr}")
        if r.returncode == 0:
            lr = json.load(open(os.path.join(tmp, "long-out.json")))
            check(300 * MS <= lr["duration_ns"] < 1300 * MS, f"duration_ns {lr['duration_ns']} not about 300 ms")
            check(lr["tasks"] == 2, f"tasks {lr['tasks']} != 2")
            check(lr["cgroups"]["/"]["cpu_time_ns"] > 0, "killed hog's CPU time not counted")
        check(not our_procs(), "processes left after --duration")

        # Bad trace: exit 1 with FILE:LINE: /pointer.
        bad = os.path.join(tmp, "bad.json")
        with open(bad, "w") as f:
            f.write('{\n "format": "agentcg-trace",\n "version": 1,\n "machine": {"cpus": 1},\n'
                    ' "processes": [\n  {"pid": 1, "start_ns": 0, "ops": [{"op": "run", "ns": -5}]}\n ]\n}\n')
        r = run([player, bad, "-o", os.path.join(tmp, "x.json"), "--no-cgroups"])
        check(r.returncode == 1, f"bad trace exit {r.returncode} != 1")
        check(f"{bad}:6: /processes/0/ops/0/ns" in r.stderr, f"bad trace message lacks FILE:LINE: /pointer: {r.stderr}")
        check(not os.path.exists(os.path.join(tmp, "x.json")), "results written for a bad trace")
        r = run([player, os.path.join(tmp, "missing.json"), "-o", os.path.join(tmp, "x.json"), "--no-cgroups"])
        check(r.returncode == 1 and "missing.json" in r.stderr, f"missing trace: exit {r.returncode} {r.stderr}")
        # Usage errors: exit 2, the message names the flag (or TRACE) and
        # points at --help.
        for args, names in ((["--bogus"], "--bogus"), (["--seed", "x"], "--seed"), (["--mem-scale", "0"], "--mem-scale"),
                            (["--duration", "soon"], "--duration"), (["--duration", "10"], "--duration"),
                            (["--no-cgroups", "--cgroup-root", "/sys/fs/cgroup/x"], "--cgroup-root"), ([], "TRACE")):
            cmd = [player, tpath, "-o", os.path.join(tmp, "x.json")] + args
            if args == []:
                cmd = [player, "-o", os.path.join(tmp, "x.json")]
            r = run(cmd)
            check(r.returncode == 2 and "agentcg-player: error:" in r.stderr and names in r.stderr
                  and "--help" in r.stderr, f"{args}: exit {r.returncode} (want 2, naming {names}) {r.stderr}")
        # the closest option, as every agentcg C++ binary offers it (config/cli.h)
        r = run([player, tpath, "-o", os.path.join(tmp, "x.json"), "--no-cgroup"])
        check(r.returncode == 2 and "unknown option --no-cgroup (did you mean --no-cgroups?)" in r.stderr,
              f"typo: exit {r.returncode} {r.stderr}")
        check_real_time(player, tmp)
        r = run([player, "--version"])
        check(r.returncode == 0 and r.stdout.startswith("agentcg-player "), f"--version: {r.returncode} {r.stdout}")
        # Without --no-cgroups on a host without writable cgroup v2: a clear failure.
        r = run([player, tpath, "-o", os.path.join(tmp, "x.json"), "--cgroup-root", "/nonexistent/agentcg-player"])
        check(r.returncode == 1 and "--no-cgroups" in r.stderr, f"unwritable cgroup root: {r.returncode} {r.stderr}")
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print("PASS: player host test")


if __name__ == "__main__":
    main()
