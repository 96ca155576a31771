#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# Host test of live compare's benchmark parsing (live/vm/guest/scenarios.d/
# compare.sh), registered in CTest as live_work_bench_host by
# live/player/CMakeLists.txt. The guest runs agentcg-work and turns its one
# line into bench.txt rows with awk; a wrong field number there loses the
# figure silently in a 30-minute VM run (it happened: the touch pass's
# first awk divided the word "fault_us" by "mb"). This runs the same awk
# programs, taken from compare.sh itself, on agentcg-work's real output on
# the host and checks the rows and their values.
# Usage: work_bench_test.py PATH/TO/agentcg-work PATH/TO/compare.sh
import re
import subprocess
import sys

work, script = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def awk_of(pattern, nth=0):
    """The awk program of compare.sh's NTH line whose pattern starts with PATTERN."""
    src = open(script, encoding="utf-8").read()
    found = re.findall(r"awk '(/\^" + re.escape(pattern) + r"[^']*)'", src)
    if len(found) <= nth:
        sys.exit(f"{script}: no awk line {nth} for /^{pattern}/")
    return found[nth]


def rows(cmd, pattern, nth=0):
    out = subprocess.run([work] + cmd, check=True, capture_output=True, text=True, timeout=60).stdout
    parsed = subprocess.run(["awk", awk_of(pattern, nth)], input=out, check=True, capture_output=True, text=True,
                            timeout=10).stdout
    return out.split(), dict(line.split() for line in parsed.splitlines())


words, got = rows(["touch", "8"], "touch")
check(words[:2] == ["touch", "mb"] and words[2] == "8", f"touch's line: {words}")
fault_us, free_us = int(words[words.index("fault_us") + 1]), int(words[words.index("free_us") + 1])
check(set(got) == {"mem_fault_us_per_mib", "mem_free_us_per_mib"}, f"touch rows: {got}")
check(abs(float(got.get("mem_fault_us_per_mib", -1)) - fault_us / 8) < 0.1,
      f"mem_fault_us_per_mib {got.get('mem_fault_us_per_mib')} != {fault_us} us / 8 MiB")
check(abs(float(got.get("mem_free_us_per_mib", -1)) - free_us / 8) < 0.1,
      f"mem_free_us_per_mib {got.get('mem_free_us_per_mib')} != {free_us} us / 8 MiB")
check(fault_us > 0, "writing 8 MiB of new memory took no CPU time")

# the plain serial cycles (fork_*), then the same from a forker holding
# memory (fork_mem_*: the awk line after it, with the MiB)
for nth, cmd, prefix in ((0, ["forkstorm", "20", "1"], "fork_"), (1, ["forkstorm", "20", "1", "8"], "fork_mem_")):
    words, got = rows(cmd, "forks", nth)
    n = int(words[1])
    check(n == 20 and words[-2:] == ["mb", cmd[3] if len(cmd) > 3 else "0"], f"forkstorm's line: {words}")
    parent_us, child_us = int(words[words.index("parent_us") + 1]), int(words[words.index("children_us") + 1])
    want = {prefix + "parent_us", prefix + "child_us"} | ({"fork_mem_mb"} if nth else set())
    check(set(got) == want, f"forkstorm rows: {got}")
    check(abs(float(got.get(prefix + "parent_us", -1)) - parent_us / n) < 0.1, f"{got} vs {parent_us}/{n}")
    check(abs(float(got.get(prefix + "child_us", -1)) - child_us / n) < 0.1, f"{got} vs {child_us}/{n}")
    if nth:
        check(got.get("fork_mem_mb") == "8", f"fork_mem_mb {got.get('fork_mem_mb')} != 8")

print("FAIL" if failures else "PASS", f"({len(failures)} failure(s))")
sys.exit(1 if failures else 0)
