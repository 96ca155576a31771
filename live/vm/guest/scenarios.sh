#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# The live scenarios, run inside the test VM by /init (busybox sh), all in
# ONE boot so that the slow software-emulated machine boots once. Each
# scenario prints
#   AGENTCG-DATA <scenario> <key> <values...>    measurements
#   AGENTCG-RESULT <scenario> PASS|FAIL <detail> the verdict
# which live/vm/check-result.sh reads on the host. Policies are compared by
# ratios measured inside this one run (absolute times under TCG are slow and
# noisy, see docs/sources.md, "Live VM"). The kernel's default scheduler (EEVDF)
# runs the same workloads in the same boot as the reference.
#
# Usage: scenarios.sh all | NAME[,NAME...]
#   attach weights cpumax mempen forkstorm robust overhead, plus the
#   plug-ins in /scenarios.d/*.sh (live/vm/guest/scenarios.d/): each defines
#   s_NAME and may append NAME to DEFAULT_SCENARIOS (the `all` set).
# Files a scenario leaves under /out/<scenario>/ come back to the host when
# run-vm.sh is given an output directory (virtio-serial port agentcg.out).
CG=/sys/fs/cgroup
SCX=/sys/kernel/sched_ext
CONF=/etc/agentcg/config.yaml
DLOG=/tmp/agentcgroupd.log
DPID=
DUR=${AGENTCG_DUR:-6}

result() { echo "AGENTCG-RESULT $*"; }
data() { echo "AGENTCG-DATA $*"; }
state() { cat $SCX/state 2>/dev/null || echo missing; }
ops() { cat $SCX/root/ops 2>/dev/null || echo none; }

write_config() { # mode [extra yaml]
	cat > $CONF <<EOC
daemon:
  log_level: info
  metrics_port: 9402
  mode: $1
monitor:
  poll_interval_ms: ${POLL_MS:-10}
$2
EOC
}

# start_daemon MODE [args]: writes the config for MODE (plus $DAEMON_YAML,
# e.g. a scheduler section) and runs the daemon (run_daemon).
start_daemon() {
	write_config "$1" "${DAEMON_YAML:-}"
	run_daemon "$@"
}

# run_daemon MODE [args]: starts agentcgroupd on the config already in $CONF,
# waits until it is ready (and, unless MODE is none, until its scheduler is
# attached); on failure prints its log and returns 1.
run_daemon() {
	mode=$1; shift
	: > $DLOG
	${DAEMON_BIN:-agentcgroupd} --config $CONF "$@" > $DLOG 2>&1 &
	DPID=$!
	i=0
	# 90 s: the verifier takes 10-12 s of guest time to load the agentcg
	# program under TCG (2026-11-29, `tsc` host); a host 2.5x slower made
	# the old 30 s a coin toss. A daemon that exits ends the wait at once.
	while [ $i -lt 900 ]; do
		# mode none: the daemon (monitor, metrics) over the kernel's EEVDF
		grep -q 'agentcgroupd: ready' $DLOG && { [ "$mode" = none ] || [ "$(state)" = enabled ]; } && return 0
		kill -0 $DPID 2>/dev/null || break
		sleep 0.1
		i=$((i + 1))
	done
	echo "agentcgroupd did not become ready (state $(state)):"; cat $DLOG
	return 1
}

# Sum of involuntary context switches of the given pids.
nvcsw() { s=0; for p in "$@"; do
	v=$(awk '$1 == "nonvoluntary_ctxt_switches:" { print $2 }' /proc/$p/status 2>/dev/null); s=$((s + ${v:-0})); done; echo $s; }
# A scheduler section with the given base slice (ms).
sched_yaml() { printf 'scheduler:\n  base_slice_ms: %s\n  boosted_slice_ms: 1\n' "$1"; }

# stop_daemon [signal]: stops it, returns its exit code.
stop_daemon() {
	[ -n "$DPID" ] || return 0
	kill -${1:-TERM} $DPID 2>/dev/null
	wait $DPID
	rc=$?
	DPID=
	i=0
	while [ "$(state)" != disabled ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	return $rc
}

metrics() { wget -q -O - http://127.0.0.1:9402/metrics 2>/dev/null; }
metric() { metrics | awk -v n="$1" '$1 == n { print $2; f = 1 } END { if (!f) print "" }'; }

mkcg() { # name [weight] [cpu.max]
	rmdir $CG/$1 2>/dev/null
	mkdir -p $CG/$1
	[ -n "$2" ] && echo $2 > $CG/$1/cpu.weight
	[ -n "$3" ] && echo "$3" > $CG/$1/cpu.max
	return 0
}
rmcg() { for c in "$@"; do rmdir $CG/$c 2>/dev/null; done; return 0; }
# inc NAME CMD...: runs CMD in cgroup NAME in the background.
inc() {
	c=$1; shift
	sh -c "echo \$\$ > $CG/$c/cgroup.procs && exec $*" > /dev/null &
}
usage_us() { awk '$1 == "usage_usec" { print $2 }' $CG/$1/cpu.stat; }
now_us() { awk '{ printf "%d\n", $1 * 1000000 }' /proc/uptime; }
# usage_now CG...: "UPTIME_US USAGE_US..." read by one process. Separate
# awk runs (usage_us, then now_us) start 10-100s of ms apart when the CPUs
# are busy, which moved a 6 s cpu.max figure by several points either way
# (the kernel's own 0.50 quota read 0.47-0.55).
usage_now() {
	f=""; for c in "$@"; do f="$f $CG/$c/cpu.stat"; done
	awk 'NR == 1 { printf "%.0f", $1 * 1000000; next } $1 == "usage_usec" { printf " %s", $2 }
		END { print "" }' /proc/uptime $f
}
# usage_rate BEFORE AFTER: usage_now's two readings of one cgroup -> CPUs used
usage_rate() { echo "$1 $2" | awk '{ printf "%.4f", ($4 - $2) / ($3 - $1) }'; }

# shares LABEL SECONDS CG...: CPU used by each cgroup over SECONDS (after a
# 1 s warm-up) as fractions of the total; prints and echoes them.
shares() {
	label=$1; secs=$2; shift 2
	sleep 1
	b=$(usage_now "$@"); b=${b#* }
	sleep $secs
	a=$(usage_now "$@"); a=${a#* }
	echo "$b" "|" "$a" | awk '{ n = (NF - 1) / 2; t = 0;
		for (i = 1; i <= n; i++) { d[i] = $(i + n + 1) - $i; t += d[i] }
		s = ""; for (i = 1; i <= n; i++) s = s sprintf(" %.4f", t ? d[i] / t : 0); print substr(s, 2) }'
}

# ---- attach ----------------------------------------------------------
s_attach() {
	[ -d $SCX ] || { result attach FAIL "no $SCX: kernel without sched_ext"; return; }
	before=$(state)
	start_daemon agentcg || { result attach FAIL "daemon did not attach"; return; }
	st=$(state); op=$(ops)
	# what a daemon start costs this boot (the verifier, mostly)
	data attach load $(grep -o 'loaded in .*' $DLOG | head -1)
	m=$(metrics)
	echo "$m" | grep -q '^agentcg_new_steps_total ' && mok=1 || mok=0
	echo "$m" | grep -q '^# TYPE agentcg_mem_penalty gauge' || mok=0
	echo "$m" | grep -q '^agentcg_fork_storms_total ' || mok=0
	echo "$m" | grep -q '^agentcg_cgroup_runtime_ns_total{cgroup=' || mok=0
	stop_daemon TERM; rc=$?
	after=$(state)
	data attach states "$before" "$st" "$op" "$after" rc=$rc metrics=$mok
	if [ "$before" = disabled ] && [ "$st" = enabled ] && [ "$op" = agentcg ] &&
	   [ "$after" = disabled ] && [ $rc -eq 0 ]; then
		result attach PASS "enabled with ops agentcg, detached cleanly (rc 0) -> disabled"
	else
		result attach FAIL "before=$before during=$st ops=$op after=$after rc=$rc"
	fi
	[ $mok -eq 1 ] && result metrics PASS "agentcg_new_steps_total, agentcg_fork_storms_total, agentcg_mem_penalty, per-cgroup runtime exported" ||
		{ result metrics FAIL "missing metric families"; echo "$m" | head -50; }
}

# ---- weights 100:200:300 ----------------------------------------------
weights_run() { # label -> prints shares of w1 w2 w3
	mkcg w1 100; mkcg w2 200; mkcg w3 300
	for c in w1 w2 w3; do inc $c agentcg-work spin $((DUR + 2)); inc $c agentcg-work spin $((DUR + 2)); done
	sh_=$(shares "$1" $DUR w1 w2 w3)
	wait
	rmcg w1 w2 w3
	echo "$sh_"
}
s_weights() {
	cfs=$(weights_run eevdf)
	data weights eevdf $cfs
	start_daemon agentcg || { result weights FAIL "daemon"; return; }
	agc=$(weights_run agentcg)
	stop_daemon
	data weights agentcg $agc
	start_daemon flatcg || { result weights FAIL "daemon"; return; }
	flc=$(weights_run flatcg)
	stop_daemon
	data weights flatcg $flc
	v=$(echo $agc | awk '{ e1 = $1 - 1/6; e2 = $2 - 2/6; e3 = $3 - 3/6;
		m = 0; for (i = 1; i <= 3; i++) { e = (i == 1 ? e1 : (i == 2 ? e2 : e3)); if (e < 0) e = -e; if (e > m) m = e }
		printf "%.4f", m }')
	ok=$(echo $v | awk '{ print ($1 <= 0.05) ? 1 : 0 }')
	[ "$ok" = 1 ] && result weights PASS "agentcg shares $agc (max abs error $v <= 0.05; eevdf $cfs, flatcg $flc)" ||
		result weights FAIL "agentcg shares $agc (max abs error $v > 0.05; eevdf $cfs, flatcg $flc)"
}

# bw_window CG: usage_now of CG, /proc/stat's CPU times and the
# scheduler's metrics, at the start (bw_window CG 0) and the end
# (bw_window CG 1) of a cpu.max measurement
bw_window() {
	usage_now $1 > /tmp/bw_u$2
	awk '$1 == "cpu" { print }' /proc/stat > /tmp/bw_s$2
	metrics > /tmp/bw_m$2 2>/dev/null
}
# bw_diag SCENARIO CG: what says why a cpu.max verdict came out as it did:
# the CPUs CG's tasks ran in the window as the scheduler charged them
# (beside the kernel's usage_usec figure; the daemon samples its metrics
# once a second, so a coarse check), the CPUs busy by /proc/stat (ticks
# and idle time, not the scheduler clock usage_usec is counted in), its
# park/refill/resync counters, CG's cpu.stat as the scheduler keeps it,
# and the kernel's sched_ext events (bypass, ...)
bw_diag() {
	data $1 sched_cpus $(awk -v cg="$2" 'FILENAME ~ /u0$/ { t0 = $1 } FILENAME ~ /u1$/ { t1 = $1 }
		index($1, "agentcg_cgroup_runtime_ns_total{cgroup=\"/" cg) == 1 { r[FILENAME ~ /m1$/] += $2 }
		END { if (t1 > t0 && r[1] > 0) printf "%.4f", (r[1] - r[0]) / 1000 / (t1 - t0) }' \
		/tmp/bw_u0 /tmp/bw_u1 /tmp/bw_m0 /tmp/bw_m1 2>/dev/null)
	data $1 busy_cpus $(cat /tmp/bw_u0 /tmp/bw_u1 /tmp/bw_s0 /tmp/bw_s1 2>/dev/null | awk 'NR == 1 { t0 = $1 } NR == 2 { t1 = $1 }
		NR >= 3 { b = 0; for (i = 2; i <= NF; i++) if (i != 5 && i != 6) b += $i; busy[NR - 3] = b }
		END { if (t1 > t0) printf "%.4f", (busy[1] - busy[0]) / 100 / ((t1 - t0) / 1e6) }')
	data $1 diag $(awk '/^agentcg_cgroup_(nr_periods|nr_throttled|throttled_ns)_total/ && !/cgroup="\/"/ {
		printf "%s=%s ", $1, $2 }' /tmp/bw_m1 2>/dev/null) \
		$(metrics | awk '/^agentcg_bpf_(parked|unparked|refills|no_cgrp_state|no_task_ctx|cgroup_moves|cgroup_resyncs|cgrp_overflow)_total / ||
			/^agentcg_throttles_total / { printf "%s=%s ", $1, $2 }')
	[ -r $SCX/root/events ] && data $1 scx_events $(awk '$2 != 0 { printf "%s=%s ", $1, $2 }' $SCX/root/events)
	return 0
}

# ---- cpu.max 50000 100000 ----------------------------------------------
cpumax_run() {
	mkcg q 100 "50000 100000"
	inc q agentcg-work spin $((DUR + 2)); inc q agentcg-work spin $((DUR + 2))
	sleep 1
	u0=$(usage_now q); bw_window q 0
	sleep $DUR
	u1=$(usage_now q); bw_window q 1
	wait
	rmcg q
	usage_rate "$u0" "$u1"
}
s_cpumax() {
	cfs=$(cpumax_run)
	data cpumax eevdf $cfs
	start_daemon agentcg || { result cpumax FAIL "daemon"; return; }
	# a limited cgroup created and removed first (its cgroup_exit comes
	# after the rmdir, asynchronously): q then takes its state's slot
	# (bpf/agentcg.bpf.c free_slots), whose period timer was armed
	( mkcg churn 100 "50000 100000"; inc churn agentcg-work spin 1; sleep 1.5; wait; rmcg churn; sleep 1 )
	agc=$(cpumax_run)
	thr=$(metric agentcg_throttles_total)
	bw_diag cpumax q
	stop_daemon
	data cpumax agentcg $agc throttles=$thr
	ok=$(echo $agc | awk '{ print ($1 >= 0.45 && $1 <= 0.55) ? 1 : 0 }')
	[ "$ok" = 1 ] && result cpumax PASS "agentcg: $agc of one CPU under cpu.max 50000 100000 (eevdf $cfs)" ||
		result cpumax FAIL "agentcg: $agc of one CPU, expected 0.50 +- 0.05 (eevdf $cfs)"
}

# ---- memory penalty -----------------------------------------------------
mempen_run() { # label
	mkcg m 100; mkcg n 100
	echo $((16 * 1024 * 1024)) > $CG/m/memory.high
	h0=$(awk '$1 == "high" { print $2 }' $CG/m/memory.events)
	inc m agentcg-work mem 48 $((DUR + 2)); inc m agentcg-work mem 48 $((DUR + 2))
	inc n agentcg-work spin $((DUR + 2)); inc n agentcg-work spin $((DUR + 2))
	sh_=$(shares "$1" $DUR m n)
	pen=$(metrics | awk '$1 == "agentcg_mem_penalty{cgroup=\"/m\"}" { print $2 }')
	h1=$(awk '$1 == "high" { print $2 }' $CG/m/memory.events)
	wait
	rmcg m n
	echo "$sh_ $((h1 - h0)) ${pen:-0}"
}
s_mempen() {
	cfs=$(mempen_run eevdf)
	data mempen eevdf $cfs
	# mem_penalty is off by default (core/include/agentcg/tunables.h): on here
	DAEMON_YAML='scheduler: {features: {mem_penalty: true}}'
	start_daemon agentcg || { DAEMON_YAML=; result mempen FAIL "daemon"; return; }
	DAEMON_YAML=
	agc=$(mempen_run agentcg)
	applied=$(metric agentcg_penalties_applied_total)
	stop_daemon
	data mempen agentcg $agc applied=$applied
	set -- $agc
	ok=$(echo "$1 $2 $3 $4" | awk '{ print ($3 > 0 && $4 > 0 && $1 < $2) ? 1 : 0 }')
	[ "$ok" = 1 ] && result mempen PASS "m over memory.high: share $1 vs sibling $2, memory.events high +$3, mem_penalty $4 (eevdf: $cfs)" ||
		result mempen FAIL "share m=$1 n=$2 high+=$3 penalty=$4 (eevdf: $cfs)"
}

# ---- fork storm ---------------------------------------------------------
forkstorm_run() { # with_storm -> "p50 p90 p99 max"
	mkcg s 100; mkcg i 100; mkcg b 100
	inc b agentcg-work spin $((DUR + 1)); inc b agentcg-work spin $((DUR + 1))
	[ "$1" = 1 ] && inc s agentcg-work forkstorm 4000 32
	sh -c "echo \$\$ > $CG/i/cgroup.procs && exec agentcg-work wakelat 5000 $DUR" > /tmp/wl.out
	wait
	rmcg s i b
	awk '{ print $2, $3, $4, $5 }' /tmp/wl.out
}
s_forkstorm() {
	cfs_q=$(forkstorm_run 0); cfs_s=$(forkstorm_run 1)
	data forkstorm eevdf quiet $cfs_q storm $cfs_s
	start_daemon agentcg || { result forkstorm FAIL "daemon"; return; }
	agc_q=$(forkstorm_run 0); agc_s=$(forkstorm_run 1)
	storms=$(metric agentcg_fork_storms_total); forks=$(metric agentcg_forks_total)
	# storm_reserve (on by default): the waker in /i keeps one CPU off the storm
	reserves=$(metric agentcg_storm_reserves_total)
	stop_daemon
	data forkstorm agentcg quiet $agc_q storm $agc_s fork_storms=$storms forks=$forks storm_reserves=$reserves
	q99=$(echo $agc_q | awk '{ print $3 }'); s99=$(echo $agc_s | awk '{ print $3 }')
	ok=$(echo "${storms:-0} ${reserves:-0} $q99 $s99" | awk '{ print ($1 > 0 && $2 > 0 && $4 <= 3 * $3 + 5000) ? 1 : 0 }')
	[ "$ok" = 1 ] && result forkstorm PASS "fork_storms_total=$storms storm_reserves_total=$reserves; interactive sibling p99 wakeup ${s99}us during the storm vs ${q99}us without (eevdf: $cfs_s vs $cfs_q)" ||
		result forkstorm FAIL "fork_storms_total=$storms storm_reserves_total=$reserves; sibling p99 ${s99}us vs ${q99}us quiet"
}

# ---- robustness ---------------------------------------------------------
s_robust() {
	# kill -9: the kernel drops the scheduler when the link's last fd closes.
	mkcg r 100
	start_daemon agentcg || { result robust_kill FAIL "daemon"; return; }
	inc r agentcg-work spin 3; wpid=$!
	sleep 1
	kill -9 $DPID; wait $DPID 2>/dev/null; DPID=
	i=0; while [ "$(state)" != disabled ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	st=$(state)
	wait $wpid; wrc=$?
	[ "$st" = disabled ] && [ $wrc -eq 0 ] && result robust_kill PASS "kill -9: state $st, workload completed (rc $wrc)" ||
		result robust_kill FAIL "kill -9: state $st, workload rc $wrc"
	rmcg r

	# 10,000 processes forked in a storm: no stall watchdog ejection.
	mkcg s 100
	start_daemon agentcg || { result robust_storm FAIL "daemon"; return; }
	out=$(sh -c "echo \$\$ > $CG/s/cgroup.procs && exec agentcg-work forkstorm 10000 64")
	frc=$?
	st=$(state); kill -0 $DPID 2>/dev/null && alive=1 || alive=0
	data robust storm "$out" state=$st daemon_alive=$alive
	grep -q 'ejected' $DLOG && ej=1 || ej=0
	[ $frc -eq 0 ] && [ "$st" = enabled ] && [ $alive = 1 ] && [ $ej = 0 ] &&
		result robust_storm PASS "10000 forks ($out), scheduler still enabled, no ejection" ||
		{ result robust_storm FAIL "rc=$frc state=$st alive=$alive ejected=$ej ($out)"; cat $DLOG; }
	rmcg s

	# A bad config on SIGHUP is rejected; the scheduler stays attached.
	printf 'daemon:\n  metrics_port: 99999\n' > $CONF
	kill -HUP $DPID; sleep 1
	st=$(state); errs=$(metric agentcg_config_reload_errors_total)
	grep -q 'config rejected' $DLOG && rej=1 || rej=0
	agentcgroupd --check-config --config $CONF > /tmp/chk.out 2>&1; crc=$?
	data robust badconfig state=$st reload_errors=$errs check_rc=$crc "$(cat /tmp/chk.out)"
	[ "$st" = enabled ] && [ "$errs" = 1 ] && [ $rej = 1 ] && [ $crc -eq 2 ] &&
		result robust_badconfig PASS "bad reload rejected ($(grep 'config rejected' $DLOG | head -1 | cut -c1-120)), still enabled" ||
		result robust_badconfig FAIL "state=$st reload_errors=$errs rejected=$rej check_rc=$crc"
	# A good reload works without detaching.
	write_config agentcg "  cgroup_root: /sys/fs/cgroup"
	kill -HUP $DPID; sleep 1
	ok=$(metric agentcg_config_reloads_total)
	[ "$(state)" = enabled ] && [ "$ok" = 1 ] && result robust_reload PASS "good SIGHUP reload applied without detaching" ||
		result robust_reload FAIL "state=$(state) reloads=$ok"
	stop_daemon

	# Ejection by the kernel: the daemon must log the reason from the exit
	# info and exit 1. sysrq-S (sched_ext's "disable the BPF scheduler" key)
	# goes through the same scx exit path as the watchdog and scx errors.
	start_daemon agentcg || { result robust_eject FAIL "daemon"; return; }
	echo S > /proc/sysrq-trigger 2>/dev/null
	i=0; while kill -0 $DPID 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	wait $DPID; rc=$?; DPID=
	reason=$(grep 'ejected' $DLOG | head -1 | cut -c1-160)
	[ $rc -eq 1 ] && [ -n "$reason" ] && result robust_eject PASS "ejection logged ($reason), exit 1" ||
		{ result robust_eject FAIL "rc=$rc reason='$reason'"; cat $DLOG; }
}

# ---- overhead: BPF run time per callback next to the FIFO baseline ------
# progstat_dump: has the daemon print its callbacks' figures so far
# (SIGUSR1) and waits until they are in $DLOG (one write: stdout is a file).
progstat_dump() {
	n0=$(grep -c AGENTCG-PROGSTAT $DLOG); i=0
	kill -USR1 $DPID
	while [ "$(grep -c AGENTCG-PROGSTAT $DLOG)" -le "$n0" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
}
# (The mixed load runs in a subshell: a bare `wait` in the daemon's own
# shell would wait for the daemon too, which is how this scenario once hung.)
# Prints PROGSTAT lines with the phase in place of the mode: "idle" for a
# periodic 1 ms sleeper pinned to one CPU alone on the idle machine
# (cyclictest's path: its threads are pinned, so the kernel skips
# select_cpu; one runnable, enqueue, running, stopping and quiescent per
# wakeup, and a dispatch as the CPU goes idle again; the difference of two
# dumps), then "all" for the mixed load
# (spinners, a fork storm and the sleeper) with the idle phase taken out,
# i.e. the figures this scenario printed before it had phases. A daemon
# that does not say it answers SIGUSR1 (a baseline build from before it)
# runs the mixed load only, and a run whose dumps did not all arrive prints
# its exit dump as "all".
overhead_run() { # mode (fifo is a --mode override only: the config accepts agentcg|flatcg;
	# agentcg-base: the agentcg mode of the baseline build's daemon, live compare --baseline-build)
	mkcg o 100
	export AGENTCG_PROG_STATS=1
	[ "$1" = agentcg-base ] && DAEMON_BIN=agentcgroupd-base
	start_daemon agentcg --mode ${1%-base}
	rc=$?
	DAEMON_BIN=
	unset AGENTCG_PROG_STATS
	[ $rc -eq 0 ] || return
	if grep -q 'SIGUSR1 prints' $DLOG; then
		progstat_dump
		sh -c "echo \$\$ > $CG/o/cgroup.procs && exec taskset -c 1 agentcg-work wakelat 1000 2" > /dev/null
		progstat_dump
	fi
	(
		inc o agentcg-work spin 4; inc o agentcg-work spin 4
		inc o agentcg-work forkstorm 1000 16
		sh -c "echo \$\$ > $CG/o/cgroup.procs && exec agentcg-work wakelat 1000 4" > /dev/null
		wait
	)
	stop_daemon
	awk '$1 == "AGENTCG-PROGSTAT" && NF == 5 { n++; p[n] = $3; c[n] = $4; t[n] = $5; if (!($3 in s)) { s[$3] = 1; k++ } }
	END {
		if (!k) exit
		if (n != 3 * k) { for (i = n - k + 1; i <= n; i++) print "AGENTCG-PROGSTAT all", p[i], c[i], t[i]; exit }
		for (i = 1; i <= k; i++) {
			ic = c[k + i] - c[i]; it = t[k + i] - t[i]
			print "AGENTCG-PROGSTAT idle", p[i], ic, it
			print "AGENTCG-PROGSTAT all", p[i], c[2 * k + i] - ic, t[2 * k + i] - it
		}
	}' $DLOG
	rmcg o
}
# OVERHEAD_REPS (1 in the test boot, whose verdict only needs figures:
# each repetition costs two daemon starts and a workload; live compare
# sets its --repeat through compare.env;
# one run per mode read 0.80x-2.85x over all callbacks in three boots of
# one program, the FIFO mode's own figures moving up to 6x):
# that many runs of each mode, interleaved fifo agentcg, agentcg fifo, ...
# so that drift cancels; each line of /out/overhead/progstats.txt carries
# its repetition (AGENTCG-PROGSTAT mode prog cnt ns rep), the idle phase's
# as mode MODE-idle (overhead_run). With the
# baseline build's daemon in the initramfs (agentcgroupd-base), its agentcg
# mode runs too (mode agentcg-base): a change's cost against the program
# before it, in one boot, where two boots' FIFO figures differ by up to 2x.
s_overhead() {
	[ "$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null)" = 1 ] || { result overhead FAIL "kernel.bpf_stats_enabled unavailable"; return; }
	[ -f /etc/agentcg/compare.env ] && . /etc/agentcg/compare.env
	n=${OVERHEAD_REPS:-1} r=1
	ps=/out/overhead/progstats.txt
	mkdir -p /out/overhead && : > $ps
	while [ $r -le $n ]; do
		[ $((r % 2)) = 1 ] && order="fifo agentcg" || order="agentcg fifo"
		command -v agentcgroupd-base > /dev/null &&
			{ [ $((r % 2)) = 1 ] && order="$order agentcg-base" || order="agentcg-base $order"; }
		for m in $order; do
			overhead_run $m | awk -v r=$r -v m=$m '$1 == "AGENTCG-PROGSTAT" && NF == 5 {
				$2 = ($2 == "idle" ? m "-idle" : m); print $0, r }' >> $ps
		done
		r=$((r + 1))
	done
	# the data lines and the verdict: every repetition summed
	awk '$1 == "AGENTCG-PROGSTAT" { c[$2 " " $3] += $4; t[$2 " " $3] += $5 } END { for (k in c) print k, c[k], t[k] }' \
		$ps | sort | while read -r mode prog cnt ns; do
		data overhead $mode $prog cnt=$cnt ns=$ns avg_ns=$([ "$cnt" -gt 0 ] && echo $((ns / cnt)) || echo 0)
	done
	avg() { awk -v m=$1 '$1 == "AGENTCG-PROGSTAT" && $2 == m && $4 > 0 { c += $4; n += $5 } END { printf "%d", c ? n / c : 0 }' $ps; }
	f=$(avg fifo) a=$(avg agentcg) fi=$(avg fifo-idle) ai=$(avg agentcg-idle)
	ratio() { awk -v a=$1 -v f=$2 'BEGIN { printf "%.2f", a / f }'; }
	[ "$a" -gt 0 ] && [ "$f" -gt 0 ] && [ "$ai" -gt 0 ] && [ "$fi" -gt 0 ] &&
		result overhead PASS "average BPF run time per callback: agentcg ${a} ns, fifo ${f} ns (ratio $(ratio $a $f)); a 1 ms sleeper alone: agentcg ${ai} ns, fifo ${fi} ns (ratio $(ratio $ai $fi))" ||
		{ result overhead FAIL "no program statistics (fifo $f, agentcg $a; idle phase: fifo $fi, agentcg $ai)"; cat $ps; }
}

# ---- main ------------------------------------------------------------------
DEFAULT_SCENARIOS="attach,weights,cpumax,mempen,forkstorm,robust,overhead"
mkdir -p /out
for f in /scenarios.d/*.sh; do [ -f "$f" ] && . "$f"; done
want=${1:-all}
[ "$want" = all ] && want=$DEFAULT_SCENARIOS
for s in $(echo "$want" | tr ',' ' '); do
	# the guest's uptime: what each scenario costs the boot (CI time)
	echo "AGENTCG-SCENARIO $s begin $(cut -d' ' -f1 /proc/uptime)"
	case $s in
	attach) s_attach ;;
	weights) s_weights ;;
	cpumax) s_cpumax ;;
	mempen) s_mempen ;;
	forkstorm) s_forkstorm ;;
	robust) s_robust ;;
	overhead) s_overhead ;;
	*) if type "s_$s" > /dev/null 2>&1; then "s_$s"; else result "$s" FAIL "unknown scenario"; fi ;;
	esac
	[ -n "$DPID" ] && stop_daemon
	echo "AGENTCG-SCENARIO $s end $(cut -d' ' -f1 /proc/uptime)"
done
exit 0
