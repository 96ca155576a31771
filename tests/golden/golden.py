#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# Golden results: every CPU policy on two small bundled traces, run by
# agentcg-sim, compared BYTE FOR BYTE with the committed
# tests/golden/<trace>.<policy>.results.json. The simulator is
# deterministic (same trace, config and seed => identical bytes), so any
# difference is a change of behaviour or of the output format: intended
# ones are committed by regenerating the files, unintended ones fail here.
#
#   check:       python3 tests/golden/golden.py --sim build/ci/sim/agentcg-sim
#   regenerate:  python3 tests/golden/golden.py --sim build/ci/sim/agentcg-sim --update
#
# (CTest: golden_results.) Run from the source root. On a mismatch it
# prints the first differing line of each file and the command above.
# Each trace is also converted to its binary form (`trace convert`) and run
# from that: the results must be the same golden bytes.
import argparse
import difflib
import pathlib
import subprocess
import sys
import tempfile

TRACES = ["hogs", "io"]
POLICIES = ["cfs", "eevdf", "fifo", "flatcg", "agentcg"]
HERE = pathlib.Path("tests/golden")
UPDATE = "python3 tests/golden/golden.py --sim build/ci/sim/agentcg-sim --update"


def run(sim, trace_path, policy, out):
    cmd = [sim, "run", str(trace_path), "--policy", policy, "--seed", "1", "--out", str(out), "--quiet"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
    return (out / "results.json").read_bytes()


def main():
    ap = argparse.ArgumentParser(description="golden results.json files, byte for byte")
    ap.add_argument("--sim", required=True, help="the agentcg-sim binary")
    ap.add_argument("--update", action="store_true", help="rewrite the golden files from this build")
    a = ap.parse_args()
    if not (HERE / "golden.py").exists():
        raise SystemExit("run from the source root (tests/golden/golden.py not found)")
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        for trace in TRACES:
            binary = pathlib.Path(tmp) / f"{trace}.agtb"
            cmd = [a.sim, "trace", "convert", f"traces/{trace}.json", str(binary)]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            if p.returncode != 0:
                raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
            for policy in POLICIES:
                out = pathlib.Path(tmp) / f"{trace}.{policy}"
                got = run(a.sim, f"traces/{trace}.json", policy, out)
                golden = HERE / f"{trace}.{policy}.results.json"
                from_binary = run(a.sim, binary, policy, pathlib.Path(tmp) / f"{trace}.{policy}.binary")
                if from_binary != got:
                    bad.append(f"{golden}: the run from the binary form of traces/{trace}.json differs from the "
                               "run from the JSON")
                if a.update:
                    golden.write_bytes(got)
                    continue
                if not golden.exists():
                    bad.append(f"{golden}: missing")
                    continue
                want = golden.read_bytes()
                if got != want:
                    diff = difflib.unified_diff(want.decode().splitlines(), got.decode().splitlines(),
                                                str(golden), "this build", n=0, lineterm="")
                    first = [l for l in diff if l[:1] in "+-" and not l.startswith(("+++", "---"))][:2]
                    bad.append(f"{golden}: differs ({len(got)} vs {len(want)} bytes): " + " | ".join(first))
    for b in bad:
        print("golden:", b, file=sys.stderr)
    if bad:
        print(f"{len(bad)} golden file(s) differ. If the change is intended, regenerate with: {UPDATE}",
              file=sys.stderr)
        return 1
    print(f"{'updated' if a.update else 'matched'} {len(TRACES) * len(POLICIES)} golden results.json files "
          "(each also from the trace's binary form)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
