# SPDX-License-Identifier: GPL-2.0-only
# The live comparison (`agentcg live compare`, python/agentcg/live.py): in
# ONE boot, the same workloads under the kernel's default scheduler (EEVDF),
# flatcg and agentcg:
#   - the bundled traces replayed by agentcg-player (results.json with the
#     simulator's keys) -> /out/compare/<scheduler>/<trace>.json
#   - cyclictest (SCHED_OTHER threads, so the scheduler under test wakes
#     them) alone, under a CPU load (stress-ng --cpu) and under a fork storm
#     (stress-ng --fork) in a sibling cgroup, hackbench's run time, and
#     the CPU of one fork and of one exit (agentcg-work forkstorm, serial,
#     on the quiet machine: getrusage of the forker and of its children),
#     the same cycles from a forker holding 32 MiB, and the CPU of
#     agentcg-player's mem op per MiB (agentcg-work touch)
#     -> /out/compare/<scheduler>/bench.txt, one `key value` per line
# Parameters come from /etc/agentcg/compare.env (written by the host):
#   COMPARE_SCHEDULERS (eevdf,flatcg,agentcg)  COMPARE_TRACES (agent,fork-storm)
#   COMPARE_DURATION_<trace> (player --duration, `-` = the trace's own)
#   COMPARE_MEM_SCALE (0.25)  COMPARE_BENCH_S (8; 0 = no benchmarks)
#   COMPARE_DAEMON_YAML (optional: YAML added to agentcgroupd's config in
#     every pass, `live compare --config`; checked on the host first)
#   COMPARE_RECORD (1: after the passes, record the cyclictest benchmarks,
#     the fork storm and the agent trace under EEVDF, and the agent trace
#     under agentcg, with agentcg-record: compare_record)
#   COMPARE_RUNS (optional: scheduler:repetition,... in the order to run,
#     e.g. eevdf:1,agentcg:1,agentcg:2,eevdf:2 -> /out/compare/<scheduler>/
#     rep-<n>/; the player's --seed is the repetition; without it each of
#     COMPARE_SCHEDULERS runs once into /out/compare/<scheduler>/, seed 1)
# eevdf-nohrtick: the kernel's EEVDF with the HRTICK scheduler feature off
# (debugfs sched/features; restored after the pass). A diagnostic, not a
# baseline: under TCG, HRTICK's slice-end timer interrupts serve every
# other expired timer sooner, and a sched_ext scheduler cannot arm one
# (README, "Where the time goes").
# Not in the default set (a few minutes of guest time): opt-in by name.
# It prints no CTest verdict lines of its own; the host command reads /out/compare.

# hist_pct FILE P: the P-th percentile (nearest rank) of a cyclictest
# histogram file (lines "latency_us count_thread0 count_thread1 ...").
# (busybox awk reads "000058" as octal-ish: leading zeros are stripped first)
hist_pct() {
	awk -v p="$2" 'function num(s) { sub(/^0+/, "", s); return s + 0 }
		/^[0-9]/ { n = 0; for (i = 2; i <= NF; i++) n += num($i); l = num($1); c[l] = n; t += n; if (l > m) m = l }
		END { if (!t) { print -1; exit } r = int((p * t + 99) / 100); if (r < 1) r = 1; s = 0
		      for (l = 0; l <= m; l++) { s += c[l]; if (s >= r) { print l; exit } } print m }' "$1"
}
# hist_overflow FILE: samples above the histogram's range
hist_overflow() { awk 'function num(s) { sub(/^0+/, "", s); return s + 0 }
	/^# Histogram Overflows:/ { for (i = 4; i <= NF; i++) n += num($i) } END { print n + 0 }' "$1"; }

# cyclictest_next_to OUT LABEL SECONDS LOAD_CG LOAD_CMD...: cyclictest in
# cgroup victim for SECONDS while LOAD_CMD runs in the sibling cgroup LOAD_CG
# (started 1 s before); appends cyclictest_LABEL_{p50_us,p99_us,overflows}.
# CTP (optional): a parent for both cgroups, with its trailing / (rb/).
cyclictest_next_to() {
	o=$1 label=$2 secs=$3 lcg=$4; shift 4
	(
		sh -c "echo \$\$ > $CG/${CTP:-}$lcg/cgroup.procs && exec $*" > /dev/null 2>&1 &
		sleep 1
		sh -c "echo \$\$ > $CG/${CTP:-}victim/cgroup.procs && exec cyclictest -q -m -t 2 -i 1000 -D $secs -h 20000 --histfile=/tmp/ct-$label.hist" > /dev/null 2>&1
		wait
	)
	echo "cyclictest_${label}_p50_us $(hist_pct /tmp/ct-$label.hist 50)" >> $o/bench.txt
	echo "cyclictest_${label}_p99_us $(hist_pct /tmp/ct-$label.hist 99)" >> $o/bench.txt
	echo "cyclictest_${label}_overflows $(hist_overflow /tmp/ct-$label.hist)" >> $o/bench.txt
}

# player_sleeper OUT LABEL SECONDS SLEEP_MS LOAD_CG LOAD_CMD...: cyclictest's
# pattern played by agentcg-player (two processes in /victim, each
# {run 20 us, sleep SLEEP_MS}) for SECONDS while LOAD_CMD runs in the
# cgroup LOAD_CG (started 1 s before) -> OUT/player-LABEL.json, whose
# wakeup percentiles the host reads (live.py player_bench:
# player_LABEL_p50_us, ...). What the player's own wakeup costs: on an
# idle vCPU after a short and after longer idle periods, and onto a busy
# one (`agentcg fidelity` reads them as the machine's wakeup costs).
player_sleeper() {
	o=$1 label=$2 secs=$3 ms=$4 lcg=$5; shift 5
	n=$((secs * 1000 / ms)) tr=/tmp/sleeper.json
	printf '{"format": "agentcg-trace", "version": 1, "name": "sleeper", "duration_ns": %s000000000,\n' $secs > $tr
	printf ' "machine": {"cpus": 2}, "cgroups": [{"path": "/victim", "cpu_weight": 100}], "processes": [\n' >> $tr
	for i in 1 2; do
		[ $i = 2 ] && printf ',\n' >> $tr
		printf '  {"pid": %s, "start_ns": 0, "cgroup": "/victim", "comm": "sleeper-%s", "ops": [{"op": "repeat", "count": %s,\n' $i $i $n >> $tr
		printf '   "body": [{"op": "run", "ns": 20000}, {"op": "sleep", "ns": %s000000}]}]}' $ms >> $tr
	done
	printf ']}\n' >> $tr
	(
		sh -c "echo \$\$ > $CG/$lcg/cgroup.procs && exec $*" > /dev/null 2>&1 &
		sleep 1
		agentcg-player $tr -o $o/player-$label.json --label sleeper --seed 1 --cgroup-root $CG/agentcg-player > /tmp/sleeper.log 2>&1 ||
			tail -n 3 /tmp/sleeper.log
		wait
	)
}

compare_bench() { # out_dir
	o=$1 b=${COMPARE_BENCH_S:-8}
	mkcg bench 100; mkcg batch 100; mkcg storm 100; mkcg victim 100
	# on the idle machine (nothing beside it): every wakeup finds an idle
	# CPU; against the pass under load, what waking onto a busy CPU costs
	# (`agentcg fidelity`'s machine.kick_busy_ns)
	cyclictest_next_to $o idle $b batch true
	# under CPU load: 2 CPU hogs per CPU
	cyclictest_next_to $o load $b batch stress-ng --cpu 4 --timeout $((b + 2))s
	# next to a fork storm; the storm's fork rate is its throughput
	cyclictest_next_to $o storm $b storm stress-ng --fork 4 --timeout $((b + 2))s --metrics-brief --yaml /tmp/storm.yaml
	echo "storm_forks_per_s $(awk '/bogo-ops-per-second-real-time:/ { print $2; exit }' /tmp/storm.yaml 2>/dev/null)" >> $o/bench.txt
	# the same storm alone on the machine: its fork rate with nothing to yield to
	sh -c "echo \$\$ > $CG/storm/cgroup.procs && exec stress-ng --fork 4 --timeout ${b}s --metrics-brief --yaml /tmp/storm-alone.yaml" > /dev/null 2>&1
	echo "storm_alone_forks_per_s $(awk '/bogo-ops-per-second-real-time:/ { print $2; exit }' /tmp/storm-alone.yaml 2>/dev/null)" >> $o/bench.txt
	# cyclictest's pattern played by agentcg-player, idle and under the same load
	player_sleeper $o idle $b 1 batch true
	player_sleeper $o idle10 $b 10 batch true
	player_sleeper $o idle100 $((b * 2)) 100 batch true
	player_sleeper $o load $b 1 batch stress-ng --cpu 4 --timeout $((b + 2))s
	# hackbench: messaging throughput (run time of a fixed amount of work)
	t0=$(now_us)
	sh -c "echo \$\$ > $CG/bench/cgroup.procs && exec hackbench -P -g 4 -f 10 -l 200" > /tmp/hb.txt 2>&1
	t1=$(now_us)
	echo "hackbench_s $(awk '/^Time:/ { print $2 }' /tmp/hb.txt)" >> $o/bench.txt
	echo "hackbench_wall_ms $(((t1 - t0) / 1000))" >> $o/bench.txt
	# the fork path and the exit path apart: 100 serial fork + exit + reap
	# cycles of a small static binary (the player's kind of forker)
	sh -c "echo \$\$ > $CG/bench/cgroup.procs && exec agentcg-work forkstorm 100 1" > /tmp/fx.txt 2>&1
	awk '/^forks / && $2 > 0 { printf "fork_parent_us %.1f\nfork_child_us %.1f\n", $8 / $2, $10 / $2 }' /tmp/fx.txt >> $o/bench.txt
	# the same from a forker holding 32 MiB (page tables copied per fork:
	# an agent process forks its tools from hundreds of MiB)
	sh -c "echo \$\$ > $CG/bench/cgroup.procs && exec agentcg-work forkstorm 20 1 32" > /tmp/fxm.txt 2>&1
	awk '/^forks / && $2 > 0 { printf "fork_mem_parent_us %.1f\nfork_mem_child_us %.1f\nfork_mem_mb %d\n", $8 / $2, $10 / $2, $12 }' /tmp/fxm.txt >> $o/bench.txt
	# what agentcg-player's mem op costs: 64 MiB of new memory written once
	# (page faults, each page allocated and zeroed), then released
	sh -c "echo \$\$ > $CG/bench/cgroup.procs && exec agentcg-work touch 64" > /tmp/touch.txt 2>&1
	awk '/^touch mb / && $3 > 0 { printf "mem_fault_us_per_mib %.1f\nmem_free_us_per_mib %.1f\n", $7 / $3, $9 / $3 }' /tmp/touch.txt >> $o/bench.txt
	rmcg bench batch storm victim
}

# record_played TRACE NAME LABEL: /traces/TRACE.json played by
# agentcg-player under agentcg-record with whatever scheduler runs now ->
# /out/compare/recordings/NAME/{recording,results.json,record.log}; 0 when
# it recorded (or the trace is not in the initramfs: nothing to record).
record_played() {
	[ -f /traces/$1.json ] || return 0
	d=/out/compare/recordings/$2
	mkdir -p $d
	eval "dur=\${COMPARE_DURATION_$(echo $1 | tr - _):-10s}"
	[ "$dur" = - ] && dur=10s
	agentcg-record -o $d/recording --interval-ms 100 --buffer-kb 16384 -- agentcg-player /traces/$1.json \
		-o $d/results.json --label $3 --seed 1 --mem-scale ${COMPARE_MEM_SCALE:-0.25} --duration $dur \
		--cgroup-root $CG/agentcg-player > $d/record.log 2>&1
	rc=$?
	lost=$(awk -F': ' '/"lost_events"/ { gsub(/[^0-9]/, "", $2); print $2 }' $d/recording/meta.json 2>/dev/null)
	data compare record $2 rc=$rc lost_events=${lost:-?}
	return $rc
}

# compare_record: the two cyclictest benchmarks once more under the
# kernel's EEVDF (agentcgroupd in mode none, as in the eevdf pass), recorded
# by agentcg-record, so that `agentcg fidelity` replays what ran in the
# simulator (the agreement table's cyclictest rows; RECORDED_BENCHES in
# python/agentcg/live.py names the layout). Their cgroups sit under
# $CG/rb: the import keeps that subtree, not the recorder, the daemon or
# init. -> /out/compare/recordings/cyclictest-{load,storm}/recording, and
# the recorded run's own figures in bench.txt beside it (the recorder's
# CPU disturbs them: fidelity reads the unrecorded passes' figures); then
# the bundled fork storm and agent traces played by agentcg-player under
# agentcg-record (record_played: recordings/fork-storm, what one fork
# costs the forker and its child; recordings/agent), and the agent trace
# again under agentcg (recordings/agent-agentcg).
compare_record() {
	command -v agentcg-record > /dev/null || { data compare record error "agentcg-record not in the initramfs"; return 1; }
	b=${COMPARE_BENCH_S:-8} r=/out/compare/recordings
	start_daemon none || { data compare record error "daemon did not start"; return 1; }
	mkcg rb 100
	echo +cpu > $CG/rb/cgroup.subtree_control
	mkcg rb/batch 100; mkcg rb/storm 100; mkcg rb/victim 100
	ok=0
	for l in load storm; do
		d=$r/cyclictest-$l
		mkdir -p $d
		rm -f /tmp/rec-on
		# the workload starts once tracing is on (the recorder starts its command then)
		agentcg-record -o $d/recording --interval-ms 100 --buffer-kb 16384 -- \
			sh -c "touch /tmp/rec-on; exec sleep $((b + 3))" > $d/record.log 2>&1 &
		rp=$!
		i=0
		while [ ! -e /tmp/rec-on ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
		CTP=rb/
		if [ $l = load ]; then
			cyclictest_next_to $d load $b batch stress-ng --cpu 4 --timeout $((b + 2))s
		else
			cyclictest_next_to $d storm $b storm stress-ng --fork 4 --timeout $((b + 2))s
		fi
		CTP=
		wait $rp
		rc=$?
		lost=$(awk -F': ' '/"lost_events"/ { gsub(/[^0-9]/, "", $2); print $2 }' $d/recording/meta.json 2>/dev/null)
		data compare record cyclictest-$l rc=$rc lost_events=${lost:-?} $(tr '\n' ' ' < $d/bench.txt)
		[ $rc -eq 0 ] && ok=$((ok + 1))
	done
	rmcg rb/batch rb/storm rb/victim rb
	# the bundled fork storm and agent traces, played as the eevdf pass
	# plays them, for 10 s (or live compare's --duration for them):
	# fidelity reads the forker's and its children's CPU per fork from the
	# storm (machine fork_after_ns, fork_child_ns, exit_cost_ns); the agent
	# recording shows what its wakeups wait for under EEVDF, and once more
	# under agentcg (recordings/agent-agentcg) beside it, in the same boot
	for t in fork-storm agent; do
		record_played $t $t eevdf && ok=$((ok + 1))
	done
	stop_daemon
	if [ ! -f /traces/agent.json ]; then
		ok=$((ok + 1))
	elif start_daemon agentcg; then
		record_played agent agent-agentcg agentcg && ok=$((ok + 1))
		stop_daemon
	else
		data compare record agent-agentcg rc=1 lost_events=?
	fi
	[ $ok -eq 5 ]
}

compare_one() { # scheduler [repetition]
	sch=$1 rep=${2:-} o=/out/compare/$1 seed=1
	[ -n "$rep" ] && { o=$o/rep-$rep; seed=$rep; }
	lbl=$sch${rep:+@$rep}  # in the serial log: the host shows it as progress
	mkdir -p $o
	# Like for like: agentcgroupd runs in every pass, with the same monitor
	# (scheduler tracepoints, memory.events, /metrics); under EEVDF in mode
	# none (no sched_ext), so the passes differ by the scheduler alone.
	# fifo: the daemon's scx_simple-style FIFO mode (a --mode override; the
	# config accepts agentcg|flatcg): what sched_ext itself costs here
	dmode=$sch dargs=
	[ "$sch" = eevdf ] && dmode=none
	if [ "$sch" = eevdf-nohrtick ]; then
		dmode=none hr0=$(sched_feature_get HRTICK)
		sched_feature NO_HRTICK || { data compare $lbl error "cannot set NO_HRTICK (no debugfs sched/features)"; return 1; }
	fi
	[ "$sch" = fifo ] && { dmode=agentcg; dargs="--mode fifo"; }
	# agentcg-base: the agentcg mode of the baseline build's daemon
	# (live compare --baseline-build): a change against the program before it
	[ "$sch" = agentcg-base ] && { dmode=agentcg; DAEMON_BIN=agentcgroupd-base; }
	# `live compare --config FILE`: the same extra YAML in every pass
	DAEMON_YAML=${COMPARE_DAEMON_YAML:-}
	start_daemon $dmode $dargs || {
		DAEMON_YAML= DAEMON_BIN=
		[ "$sch" = eevdf-nohrtick ] && sched_feature $hr0
		data compare $lbl error "daemon did not start"
		return 1
	}
	DAEMON_YAML= DAEMON_BIN=
	echo "scheduler $(ops) state $(state)" > $o/bench.txt
	for t in $(echo "${COMPARE_TRACES:-agent,fork-storm}" | tr ',' ' '); do
		eval d=\${COMPARE_DURATION_$(echo $t | tr -c 'a-zA-Z0-9\n' '_'):--}
		set -- --label $sch --seed $seed --mem-scale ${COMPARE_MEM_SCALE:-0.25} --cgroup-root $CG/agentcg-player
		[ "$d" != - ] && set -- "$@" --duration $d
		t0=$(now_us)
		agentcg-player /traces/$t.json -o $o/$t.json "$@" > $o/$t.log 2>&1
		rc=$?
		data compare $lbl player $t rc=$rc wall_ms=$((($(now_us) - t0) / 1000))
		# the daemon's counters so far (cumulative over the pass): what the
		# scheduler did during this trace (preemptions, deferrals, ...)
		metrics > $o/$t.metrics.txt
		[ $rc -eq 0 ] || tail -n 5 $o/$t.log
	done
	[ "${COMPARE_BENCH_S:-8}" -gt 0 ] && compare_bench $o
	data compare $lbl bench $(tr '\n' ' ' < $o/bench.txt)
	grep -q 'ejected' $DLOG && { data compare $lbl ejected "$(grep ejected $DLOG | head -1)"; }
	stop_daemon
	[ "$sch" = eevdf-nohrtick ] && sched_feature $hr0  # as the kernel had it
	cp $DLOG $o/agentcgroupd.log
	return 0
}

# sched_feature NAME: sets one of fair.c's features (NO_NAME clears it);
# fails when debugfs or the feature is missing. sched_feature_get NAME:
# NAME or NO_NAME, as it is now.
sched_feature() {
	[ -w /sys/kernel/debug/sched/features ] && echo $1 > /sys/kernel/debug/sched/features 2>/dev/null &&
		[ "$(sched_feature_get ${1#NO_})" = $1 ]
}
sched_feature_get() { tr ' ' '\n' < /sys/kernel/debug/sched/features | grep -x "$1\|NO_$1"; }

s_compare() {
	[ -f /etc/agentcg/compare.env ] && . /etc/agentcg/compare.env
	command -v agentcg-player > /dev/null || { result compare FAIL "agentcg-player not in the initramfs (not built)"; return; }
	fails=
	if [ -n "${COMPARE_RUNS:-}" ]; then
		for sr in $(echo "$COMPARE_RUNS" | tr ',' ' '); do
			compare_one ${sr%%:*} ${sr##*:} || fails="$fails $sr"
		done
	else
		for s in $(echo "${COMPARE_SCHEDULERS:-eevdf,flatcg,agentcg}" | tr ',' ' '); do
			compare_one $s || fails="$fails $s"
		done
	fi
	if [ "${COMPARE_RECORD:-0}" = 1 ] && [ "${COMPARE_BENCH_S:-8}" -gt 0 ]; then
		compare_record || fails="$fails record"
	fi
	[ -z "$fails" ] && result compare PASS "schedulers ${COMPARE_SCHEDULERS:-eevdf,flatcg,agentcg} measured" ||
		result compare FAIL "failed:$fails"
}
