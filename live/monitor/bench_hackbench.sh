#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# The scheduler monitor's overhead: hackbench (rt-tests) with and without
# bpf/monitor.bpf.c attached, on this machine's own kernel (root). Runs
# alternate (off, on, off, on, ...) so drift hits both sides; prints each
# side's median "Time:" with its min..max and the overhead of the medians,
# and the monitor's own BPF run time (kernel.bpf_stats_enabled=1 while the
# runs go, restored after) per event and as a share of the machine's CPU
# time during the "with" runs (wall time x CPUs): on a shared, noisy
# machine the wall-time ratio has a spread of several %, the BPF run time
# does not.
# A benchmark that prints figures, not a test (nothing is asserted).
#   live/monitor/bench_hackbench.sh BUILD_DIR [REPS] [hackbench args...]
# e.g. live/monitor/bench_hackbench.sh build/ci 11 -p -g 4 -l 1000
set -eu
build=${1:?usage: bench_hackbench.sh BUILD_DIR [REPS] [hackbench args]}
reps=${2:-11}
shift; [ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- -p -g 4 -l 1000
mon="$build/live/monitor/agentcg-monitor"
command -v hackbench >/dev/null || { echo "SKIP: hackbench (rt-tests) not installed"; exit 0; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to load the monitor"; exit 0; }
[ -x "$mon" ] || { echo "SKIP: $mon not built (live tools missing)"; exit 0; }
tmp=$(mktemp -d)
stats_was=$(cat /proc/sys/kernel/bpf_stats_enabled)
echo 1 >/proc/sys/kernel/bpf_stats_enabled
trap 'kill "$mpid" 2>/dev/null || true; echo "$stats_was" >/proc/sys/kernel/bpf_stats_enabled; rm -rf "$tmp"' EXIT INT TERM
mpid=
run() { hackbench "$@" | awk '/^Time:/ {print $2}'; }
i=0
while [ $i -lt "$reps" ]; do
  run "$@" >>"$tmp/off"
  "$mon" --prog-stats >"$tmp/mon.out" 2>&1 &
  mpid=$!
  n=0; until grep -q ready "$tmp/mon.out" 2>/dev/null; do
    n=$((n + 1)); [ $n -lt 100 ] || { cat "$tmp/mon.out"; exit 1; }; sleep 0.1
  done
  run "$@" >>"$tmp/on"
  kill "$mpid"; wait "$mpid" 2>/dev/null || true; mpid=
  awk '/progstat/ {print $3, $4}' "$tmp/mon.out" >>"$tmp/prog"
  i=$((i + 1))
done
python3 - "$tmp/off" "$tmp/on" "$*" "$tmp/prog" "$(nproc)" <<'PY'
import statistics, sys
off = [float(x) for x in open(sys.argv[1])]
on = [float(x) for x in open(sys.argv[2])]
prog = [tuple(int(v) for v in l.split()) for l in open(sys.argv[4])]
ncpu = int(sys.argv[5])
mo, mn = statistics.median(off), statistics.median(on)
print(f"hackbench {sys.argv[3]}, {len(off)} runs each side (alternating)")
print(f"  without monitor: median {mo:.3f} s  (min {min(off):.3f} .. max {max(off):.3f})")
print(f"  with monitor:    median {mn:.3f} s  (min {min(on):.3f} .. max {max(on):.3f})")
print(f"  overhead of the medians: {100.0 * (mn - mo) / mo:+.2f} %")
cnt, ns = sum(p[0] for p in prog), sum(p[1] for p in prog)
if cnt:
    share = [100.0 * p[1] / (t * 1e9 * ncpu) for p, t in zip(prog, on)]
    print(f"  monitor BPF: {cnt} events, {ns / cnt:.0f} ns per event; "
          f"{statistics.median(share):.2f} % of the CPU time of a run (median; {min(share):.2f} .. {max(share):.2f})")
PY
