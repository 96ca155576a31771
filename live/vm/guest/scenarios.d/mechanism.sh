# SPDX-License-Identifier: GPL-2.0-only
# Scenarios of the scheduler mechanism (bpf/agentcg.bpf.c v2), sourced by
# scenarios.sh in the test VM:
#   nested    /a (100) with /a/x (100) and /a/y (300) next to /b (200), all
#             busy: shares 1/12, 3/12, 8/12 within 2 points; /p with
#             cpu.max 50000 100000 over two busy children: their sum 0.50
#             within 2 points. EEVDF in the same boot as the reference.
#   tunables  scheduler.base_slice_ms 40 -> 1 by SIGHUP: the scheduler stays
#             enabled throughout (state sampled every 0.2 s) and the
#             involuntary switch rate of CPU hogs rises (fails if the new
#             slice does not reach the BPF program).
#   scale     16,384 cgroups created under the attached scheduler, hogs in
#             1,000 of them: no ejection, every cgroup got state, dispatch
#             cost per call next to the 10-cgroup figure of the same boot;
#             then a 10,000-process fork storm next to a cgroup at cpu.max
#             1000 100000 for 60 s: no ejection.
# `scale` is opt-in by name (about 8 minutes of guest time under TCG:
# run-vm.sh build/ci LOG scale); its verdicts scale_cgroups and
# scale_tight_quota are read from that log, not from the default boot.
#   hogshare  where the machine goes under sched_ext (below): the trace's
#             cgroups' share next to EEVDF's, the daemon's own CPU.
#   pinned    a 1 ms sleeper pinned to one CPU (cyclictest's threads are
#             pinned) alone on the idle guest under agentcg: the kernel
#             skips ops.select_cpu for it, so ops.enqueue must claim its
#             idle CPU itself. Fails if most wakeups are not placed there
#             (idle_claims) or if they kick a CPU (idle_kicks: the old path,
#             a self-IPI and a dispatch per wakeup).
# results: nested_weights nested_cpumax tunables_live hogs_share pinned_idle
DEFAULT_SCENARIOS="$DEFAULT_SCENARIOS,nested,tunables,hogshare,pinned"

s_pinned() {
	start_daemon agentcg || { result pinned_idle FAIL "daemon did not start"; return; }
	mkcg pin 100
	sleep 1  # the metrics are sampled once a second
	c0=$(metric agentcg_bpf_idle_claims_total) k0=$(metric agentcg_bpf_idle_kicks_total)
	w=$(sh -c "echo \$\$ > $CG/pin/cgroup.procs && exec taskset -c 1 agentcg-work wakelat 1000 2")
	sleep 1
	c1=$(metric agentcg_bpf_idle_claims_total) k1=$(metric agentcg_bpf_idle_kicks_total)
	stop_daemon
	rmcg pin
	set -- $w; n=${6:-0} p50=${2:-?}
	claims=$((${c1:-0} - ${c0:-0})) kicks=$((${k1:-0} - ${k0:-0}))
	data pinned wakeups=$n p50_us=$p50 idle_claims=$claims idle_kicks=$kicks
	if [ "$n" -gt 0 ] && [ $((claims * 10)) -ge $((n * 8)) ] && [ $((kicks * 10)) -le $n ]; then
		result pinned_idle PASS "$claims of $n wakeups of a pinned sleeper claimed its idle CPU, $kicks idle kicks (p50 ${p50} us)"
	else
		result pinned_idle FAIL "pinned sleeper: $n wakeups, $claims idle claims (want >= 80 %), $kicks idle kicks (want <= 10 %)"
	fi
}

sub_cpu() { echo "+cpu" > $CG/$1/cgroup.subtree_control; }

nested_weights_run() { # label -> shares of a/x a/y b
	mkcg a 100; sub_cpu a; mkcg a/x 100; mkcg a/y 300; mkcg b 200
	for c in a/x a/y b; do inc $c agentcg-work spin $((DUR + 2)); inc $c agentcg-work spin $((DUR + 2)); done
	sh_=$(shares "$1" $DUR a/x a/y b)
	wait
	rmcg a/x a/y a b
	echo "$sh_"
}
# over 2 x DUR: the target is 2 points, and a 6 s window of a 0.50 quota
# read 0.48 once in 18 under agentcg (its scheduler's own charges agreed),
# the kernel's 0.47-0.55
nested_cpumax_run() { # -> CPUs used by /p
	mkcg p 100 "50000 100000"; sub_cpu p; mkcg p/c1 100; mkcg p/c2 100
	for c in p/c1 p/c2; do inc $c agentcg-work spin $((2 * DUR + 2)); inc $c agentcg-work spin $((2 * DUR + 2)); done
	sleep 1
	u0=$(usage_now p); bw_window p 0
	sleep $((2 * DUR))
	u1=$(usage_now p); bw_window p 1
	wait
	rmcg p/c1 p/c2 p
	usage_rate "$u0" "$u1"
}
nested_err() { echo $1 | awk '{ e1 = $1 - 1/12; e2 = $2 - 3/12; e3 = $3 - 8/12; m = 0
	for (i = 1; i <= 3; i++) { e = (i == 1 ? e1 : (i == 2 ? e2 : e3)); if (e < 0) e = -e; if (e > m) m = e }
	printf "%.4f", m }'; }
s_nested() {
	ew=$(nested_weights_run eevdf); data nested weights eevdf $ew
	ec=$(nested_cpumax_run); data nested cpumax eevdf $ec
	start_daemon agentcg || { result nested_weights FAIL "daemon"; return; }
	aw=$(nested_weights_run agentcg)
	ac=$(nested_cpumax_run)
	bw_diag nested_cpumax p
	stop_daemon
	data nested weights agentcg $aw
	data nested cpumax agentcg $ac
	start_daemon flatcg || { result nested_weights FAIL "daemon"; return; }
	fw=$(nested_weights_run flatcg)
	stop_daemon
	data nested weights flatcg $fw
	v=$(nested_err "$aw")
	[ "$(echo $v | awk '{ print ($1 <= 0.02) ? 1 : 0 }')" = 1 ] &&
		result nested_weights PASS "agentcg a/x a/y b = $aw (ideal .0833 .2500 .6667, max error $v <= 0.02; eevdf $ew err $(nested_err "$ew"), flatcg $fw err $(nested_err "$fw"))" ||
		result nested_weights FAIL "agentcg a/x a/y b = $aw (max error $v > 0.02; eevdf $ew, flatcg $fw)"
	[ "$(echo $ac | awk '{ print ($1 >= 0.48 && $1 <= 0.52) ? 1 : 0 }')" = 1 ] &&
		result nested_cpumax PASS "agentcg: /p (cpu.max 50000 100000, two busy children) used $ac CPUs (eevdf $ec)" ||
		result nested_cpumax FAIL "agentcg: /p used $ac CPUs, expected 0.50 +- 0.02 (eevdf $ec)"
}

s_tunables() {
	write_config agentcg "$(sched_yaml 40)"
	run_daemon agentcg || { result tunables_live FAIL "daemon did not attach"; stop_daemon; return; }
	mkcg tl 100
	pids=""
	for i in 1 2 3 4; do inc tl agentcg-work spin $((4 * DUR + 8)); pids="$pids $!"; done
	touch /tmp/tl.watch
	( while [ -f /tmp/tl.watch ]; do state; sleep 0.2; done ) > /tmp/tl.states &
	sleep 1
	a0=$(nvcsw $pids); t0=$(now_us); sleep $DUR; a1=$(nvcsw $pids); t1=$(now_us)
	write_config agentcg "$(sched_yaml 1)"
	kill -HUP $DPID
	sleep 1
	b0=$(nvcsw $pids); u0=$(now_us); sleep $DUR; b1=$(nvcsw $pids); u1=$(now_us)
	rm -f /tmp/tl.watch
	for p in $pids; do kill $p 2>/dev/null; done
	wait_pids=$pids; for p in $wait_pids; do wait $p 2>/dev/null; done
	sleep 0.5
	dis=$(grep -vc '^enabled$' /tmp/tl.states)
	n=$(wc -l < /tmp/tl.states)
	rel=$(metric agentcg_config_reloads_total)
	live=$(grep -c 'scheduler config 1 live' $DLOG)
	stop_daemon
	rmcg tl
	ra=$(echo "$a0 $a1 $t0 $t1" | awk '{ printf "%.1f", ($2 - $1) * 1e6 / ($4 - $3) }')
	rb=$(echo "$b0 $b1 $u0 $u1" | awk '{ printf "%.1f", ($2 - $1) * 1e6 / ($4 - $3) }')
	ratio=$(echo "$ra $rb" | awk '{ printf "%.2f", ($1 > 0 ? $2 / $1 : 0) }')
	data tunables switches_per_s slice20=$ra slice2=$rb ratio=$ratio state_samples=$n not_enabled=$dis reloads=$rel
	if [ "$dis" = 0 ] && [ "$n" -gt 5 ] && [ "$rel" = 1 ] && [ "$live" = 1 ] &&
	   [ "$(echo $ratio | awk '{ print ($1 >= 1.5) ? 1 : 0 }')" = 1 ]; then
		result tunables_live PASS "SIGHUP base_slice_ms 40 -> 1 without detaching ($n state samples, all enabled): hog switches/s $ra -> $rb (x$ratio >= 1.5)"
	else
		result tunables_live FAIL "switches/s $ra -> $rb (x$ratio, need >= 1.5), not-enabled samples $dis of $n, reloads $rel, live $live"
	fi
}

# dispatch ns per call from a PROGSTAT dump
progstat_avg() { awk -v p=$2 '$1 == "AGENTCG-PROGSTAT" && $3 == p && $4 > 0 { printf "%d", $5 / $4; f = 1 } END { if (!f) print 0 }' $1; }
scale_busy() { # N: hogs in cgroups s/1..N for DUR s, prog stats to /tmp/scale.N
	# the daemon's first scan of 16,384 cgroups takes longer than
	# start_daemon's 30 s under TCG: wait up to 3 minutes here
	write_config agentcg
	: > $DLOG
	AGENTCG_PROG_STATS=1 agentcgroupd --config $CONF > $DLOG 2>&1 &
	DPID=$!
	i=0; while [ $i -lt 1800 ] && ! grep -q 'agentcgroupd: ready' $DLOG; do sleep 0.1; i=$((i + 1)); done
	grep -q 'agentcgroupd: ready' $DLOG || { stop_daemon; echo "not-ready ? ?"; return 1; }
	i=1; while [ $i -le $1 ]; do inc s/$i agentcg-work spin $((DUR + 4)); i=$((i + 1)); done
	sleep $((DUR + 5))
	st=$(state)
	ovf=$(metric agentcg_bpf_cgrp_overflow_total); nst=$(metric agentcg_bpf_no_cgrp_state_total)
	stop_daemon
	grep AGENTCG-PROGSTAT $DLOG > /tmp/scale.$1
	# an ejection's reason (the daemon logs the scx exit info) into the serial log
	grep -m1 ejected $DLOG | sed 's/^/AGENTCG-DATA scale ejection /' >&2
	echo "$st ${ovf:-?} ${nst:-?}"
}
s_scale() {
	[ "$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null)" = 1 ] || echo 1 > /proc/sys/kernel/bpf_stats_enabled
	mkcg s 100; sub_cpu s
	t0=$(now_us)
	i=1; while [ $i -le 16384 ]; do mkdir $CG/s/$i; i=$((i + 1)); done
	t1=$(now_us)
	r10=$(scale_busy 10); d10=$(progstat_avg /tmp/scale.10 agentcg_dispatch)
	r1k=$(scale_busy 1000); d1k=$(progstat_avg /tmp/scale.1000 agentcg_dispatch)
	data scale mkdir_16384_s=$(( (t1 - t0) / 1000000 )) busy10="$r10" dispatch_ns_10=$d10 busy1000="$r1k" dispatch_ns_1000=$d1k
	set -- $r1k
	ratio=$(echo "$d1k $d10" | awk '{ printf "%.2f", ($2 > 0 ? $1 / $2 : 99) }')
	if [ "$1" = enabled ] && [ "$2" = 0 ] && [ "$(echo $ratio | awk '{ print ($1 <= 1.5) ? 1 : 0 }')" = 1 ]; then
		result scale_cgroups PASS "16,384 cgroups, hogs in 1,000: attached throughout, cgrp_overflow 0, dispatch $d1k ns vs $d10 ns with 10 (x$ratio <= 1.5)"
	else
		result scale_cgroups FAIL "state $1 overflow $2 no_state $3, dispatch $d1k ns vs $d10 ns with 10 (x$ratio)"
	fi
	i=1; while [ $i -le 16384 ]; do rmdir $CG/s/$i; i=$((i + 1)); done
	# fork storm + a tight quota for 60 s
	start_daemon agentcg || { result scale_tight_quota FAIL "daemon"; return; }
	mkcg tq 100 "1000 100000"; mkcg fs 100
	inc tq agentcg-work spin 62; inc tq agentcg-work spin 62
	inc fs agentcg-work forkstorm 10000 32
	k=0; bad=0; while [ $k -lt 60 ]; do [ "$(state)" = enabled ] || bad=$((bad + 1)); sleep 1; k=$((k + 1)); done
	ej=$(grep -c ejected $DLOG)
	u=$(usage_us tq)
	stop_daemon; rc=$?
	wait
	rmcg tq fs s
	data scale tight_quota not_enabled_s=$bad ejected=$ej tq_usage_us=$u rc=$rc
	[ $bad = 0 ] && [ $ej = 0 ] && [ $rc = 0 ] &&
		result scale_tight_quota PASS "60 s of a 10,000-fork storm next to cpu.max 1000 100000: attached throughout, no ejection (tq used ${u} us)" ||
		result scale_tight_quota FAIL "not enabled for $bad s, ejections $ej, daemon rc $rc"
}

# ---- hogs_share: where the machine goes under sched_ext ---------------------
# hogs.json (three cgroups of CPU hogs, 2 CPUs: the machine is saturated)
# played for HS_DUR s under EEVDF, the FIFO mode of the same program and
# agentcg; around each play: the player's cgroups' summed cpu_share (the
# fraction of the machine they got), the daemon's own CPU (the run time in
# /proc/PID/task/*/schedstat: over the whole play and over its steady
# middle), and /proc/stat's user/system/softirq/idle deltas. Issue
# 14's diagnosis: the trace's cgroups got 78 % under agentcg and flatcg
# against 93 % under EEVDF: the daemon's polling (fixed). What is left
# (0.83 vs 0.90 in a boot at host load ~4) the FIFO mode of the same
# program loses too: sched_ext's own cost under TCG. Verdict: agentcg's
# sum within 0.04 of the FIFO mode's; the daemon (the mean of its two
# runs) under 2 % of one CPU in the steady middle, under 5 % over the whole
# play (see s_hogshare).
HS_DUR=${HS_DUR:-5}
proc_cpu() { awk '$1 == "cpu" { print $2 + $3, $4, $7 + $8, $5 + $6 }' /proc/stat; }
# the daemon's run time (ns) and times run, summed over its threads
daemon_sched() { [ -n "$1" ] && cat /proc/$1/task/*/schedstat 2>/dev/null | awk '{ r += $1; n += $3 } END { printf "%.0f %.0f\n", r, n }' || echo "0 0"; }
hogshare_run() { # label mode(eevdf|fifo|agentcg|flatcg) -> "sum daemon_frac user sys irq idle steady_frac steady_runs_per_s edge_ms"
	lbl=$1 m=$2
	if [ "$m" != eevdf ]; then
		export AGENTCG_PROG_STATS=1
		# fifo is a --mode override only (the config accepts agentcg|flatcg)
		if [ "$m" = fifo ]; then start_daemon agentcg --mode fifo; else start_daemon $m; fi ||
			{ unset AGENTCG_PROG_STATS; echo "bad"; return 1; }
		unset AGENTCG_PROG_STATS
	else
		DPID=
	fi
	# the whole play (t0..t1), and its steady middle (m0..m1): one second
	# in from either end, past the daemon's rescans of the trace's cgroups
	# being made and removed
	c0=$(proc_cpu); d0=$(daemon_sched $DPID); t0=$(now_us)
	agentcg-player /traces/hogs.json -o /tmp/hs-$lbl.json --label $lbl --duration ${HS_DUR}s > /tmp/hs-$lbl.log 2>&1 &
	ppid=$!
	sleep 1
	dm0=$(daemon_sched $DPID); m0=$(now_us)
	sleep $((HS_DUR > 3 ? HS_DUR - 2 : 1))
	dm1=$(daemon_sched $DPID); m1=$(now_us)
	wait $ppid
	c1=$(proc_cpu); d1=$(daemon_sched $DPID); t1=$(now_us)
	[ "$m" != eevdf ] && { stop_daemon; grep AGENTCG-PROGSTAT $DLOG > /tmp/hs-$lbl.prog; }
	sum=$(player_shares /tmp/hs-$lbl.json /hog-0 /hog-1 /hog-2 | awk '{ printf "%.4f", $1 + $2 + $3 }')
	echo "$sum $d0 $d1 $t0 $t1 $c0 $c1 $dm0 $dm1 $m0 $m1" | awk '{ w = ($7 - $6) / 1e6; if (w <= 0) w = 1
		t = ($12 + $13 + $14 + $15) - ($8 + $9 + $10 + $11); if (t <= 0) t = 1
		mw = ($21 - $20) / 1e6; if (mw <= 0) mw = 1
		printf "%s %.4f %.3f %.3f %.3f %.3f %.4f %.1f %.1f", $1, ($4 - $2) / 1e9 / w, ($12 - $8) / t, ($13 - $9) / t, ($14 - $10) / t, ($15 - $11) / t,
			($18 - $16) / 1e9 / mw, ($19 - $17) / mw, (($4 - $2) - ($18 - $16)) / 1e6 }'
}
s_hogshare() {
	command -v agentcg-player > /dev/null || { result hogs_share FAIL "agentcg-player not in the initramfs"; return; }
	[ "$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null)" = 1 ] || echo 1 > /proc/sys/kernel/bpf_stats_enabled
	for r in ${HS_RUNS:-eevdf:eevdf fifo:fifo agentcg:agentcg eevdf2:eevdf agentcg2:agentcg}; do
		# label:mode[:poll_interval_ms]
		l=${r%%:*} rest=${r#*:}; m=${rest%%:*} pm=${rest#*:}; [ "$pm" = "$rest" ] && pm=10
		v=$(POLL_MS=$pm hogshare_run $l $m)
		eval hs_$l=\"\$v\"
		data hogs_share $l sum_daemon_user_sys_irq_idle_steady_runs_edgems $v
		[ -f /tmp/hs-$l.prog ] && awk -v l=$l '$4 > 0 { c += $4; n += $5; printf "AGENTCG-DATA hogs_share %s prog %s cnt=%d avg_ns=%d\n", l, $3, $4, $5 / $4 }
			END { printf "AGENTCG-DATA hogs_share %s bpf_total_ms=%d\n", l, n / 1e6 }' /tmp/hs-$l.prog
	done
	e=$(echo "$hs_eevdf $hs_eevdf2" | awk '{ print ($1 > $10) ? $1 : $10 }')
	a=$(echo "$hs_agentcg $hs_agentcg2" | awk '{ print ($1 > $10) ? $1 : $10 }')
	f=$(echo "$hs_fifo" | awk '{ print $1 + 0 }')
	# The daemon's CPU, the mean of its two agentcg runs, in two parts. Its
	# steady cost (the play's middle: 4 wakeups a second when nothing
	# changes, ~1 ms each under TCG) is what it takes from the workload for
	# as long as it runs: 0.0028-0.0093 CPUs over ten plays in two boots
	# (2026-12-02; the mean of two 0.0033-0.0062), the FIFO mode's
	# 0.0021-0.0043. Budget 0.02. The rest is the play's first and last
	# second: its rescans as the play makes and removes its cgroups, 44-74 ms (FIFO mode 42-59), more on a slower
	# host. Over a 5 s play the whole window read 0.011-0.020 there, and
	# 0.022 / 0.028 on the CI host, which failed the old whole-window
	# budget (0.02, or the FIFO mode's + 0.01) with the steady cost unseen.
	# Budget over the whole play: 0.05.
	dmean=$(echo "$hs_agentcg $hs_agentcg2" | awk '{ printf "%.4f", ($2 + $11) / 2 }')
	dsteady=$(echo "$hs_agentcg $hs_agentcg2" | awk '{ printf "%.4f", ($7 + $16) / 2 }')
	dedge=$(echo "$hs_agentcg $hs_agentcg2" | awk '{ printf "%.0f", ($9 + $18) / 2 }')
	fd=$(echo "$hs_fifo" | awk '{ print $2 + 0 }')
	fsteady=$(echo "$hs_fifo" | awk '{ print $7 + 0 }')
	ok=$(echo "$a $f $dmean $dsteady" | awk '{ print ($1 >= $2 - 0.04 && $4 < 0.02 && $3 < 0.05) ? 1 : 0 }')
	[ "$ok" = 1 ] &&
		result hogs_share PASS "hogs.json ${HS_DUR} s: the trace's cgroups got $a of the machine under agentcg vs $f under the FIFO mode (within 0.04) and $e under EEVDF; daemon $dsteady CPUs in the steady middle (under 0.02), $dmean over the whole play, ${dedge} ms of it in the first and last second (under 0.05; FIFO mode's $fsteady / $fd)" ||
		result hogs_share FAIL "hogs.json ${HS_DUR} s: the trace's cgroups got $a of the machine under agentcg vs $f under the FIFO mode (want within 0.04) and $e under EEVDF; daemon $dsteady CPUs in the steady middle (want under 0.02), $dmean over the whole play, ${dedge} ms of it in the first and last second (want under 0.05; FIFO mode's $fsteady / $fd)"
}
