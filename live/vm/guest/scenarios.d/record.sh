# SPDX-License-Identifier: GPL-2.0-only
# Scenario plug-in `record` (busybox sh, sourced by /scenarios.sh): records a
# live run with agentcg-record and imports it in the guest with
# agentcg-sim trace import --from agentcg-record. Two cgroups, rec-a (weight
# 100) and rec-b (weight 300), each run `agentcg-work spin 3`; a periodic
# sleeper (`agentcg-work wakelat 2000 3`) runs in rec-s. Checks: the imported
# trace validates, each spinner is in its cgroup, the spinners' CPU demand in
# the trace is within 15 % of the cgroups' cpu.stat usage_usec growth, the
# recording has wakeup latencies, and the recorder removed its tracing
# instance. About 10 s of guest time. The recording and the trace are
# copied to /out/record/. record_signal: a --duration recording stopped by
# SIGTERM after 1 s exits 143, completes meta.json and leaves no tracing
# instance behind.
# results: record record_signal

s_record() {
	command -v agentcg-record > /dev/null || { result record FAIL "agentcg-record not in the initramfs (build the agentcg-record target)"; result record_signal FAIL "no agentcg-record"; return; }
	command -v agentcg-sim > /dev/null || { result record FAIL "agentcg-sim not in the initramfs (build the agentcg-sim target)"; result record_signal FAIL "no agentcg-sim"; return; }
	R=/tmp/record
	rm -rf $R
	mkcg rec-a 100; mkcg rec-b 300; mkcg rec-s 100
	ua0=$(usage_us rec-a); ub0=$(usage_us rec-b)
	agentcg-record -o $R --interval-ms 100 -- sh -c "
		sh -c 'echo \$\$ > $CG/rec-a/cgroup.procs && exec agentcg-work spin 3' &
		sh -c 'echo \$\$ > $CG/rec-b/cgroup.procs && exec agentcg-work spin 3' &
		sh -c 'echo \$\$ > $CG/rec-s/cgroup.procs && exec agentcg-work wakelat 2000 3' > /tmp/rec-wl.out &
		wait" > /tmp/rec.log 2>&1
	rrc=$?
	ua1=$(usage_us rec-a); ub1=$(usage_us rec-b)
	cat /tmp/rec.log
	inst=$(ls -d /sys/kernel/tracing/instances/agentcg-record-* /sys/kernel/debug/tracing/instances/agentcg-record-* 2>/dev/null | wc -l)
	mkdir -p /out/record
	agentcg-sim trace import --from agentcg-record $R -o /tmp/record.json > /tmp/rec-import.log 2>&1
	irc=$?
	cat /tmp/rec-import.log
	agentcg-sim trace validate /tmp/record.json > /tmp/rec-validate.log 2>&1
	vrc=$?
	agentcg-sim trace stats --from agentcg-record $R --json > /tmp/rec-stats.json 2> /dev/null
	src=$?
	cp -r $R /out/record/recording
	cp /tmp/record.json /tmp/rec-stats.json /tmp/rec-import.log /out/record/ 2>/dev/null
	rmcg rec-a rec-b rec-s
	# Per cgroup: spinner processes (exec agentcg-work ... spin) and their run ns.
	cg_run() { # cgroup -> "processes run_ns"
		awk -v cg="\"cgroup\": \"$1\"" '
			/^ *\{?"pid": / { if (inp && w) { n++; s += r }; inp = 1; w = 0; r = 0; c = 0 }
			inp && index($0, cg) { c = 1 }
			inp && c && /"exec", "comm": "agentcg-work"/ { w = 1 }
			inp && c { line = $0; while (match(line, /"op": "run", "ns": [0-9]+/)) {
				v = substr(line, RSTART, RLENGTH); sub(/.*: /, "", v); r += v; line = substr(line, RSTART + RLENGTH) } }
			!c { w = 0 }
			END { if (inp && w) { n++; s += r }; printf "%d %.0f\n", n, s }' /tmp/record.json
	}
	set -- $(cg_run /rec-a); na=$1; ra=$2
	set -- $(cg_run /rec-b); nb=$1; rb=$2
	use=$(( (ua1 - ua0) + (ub1 - ub0) ))
	dem=$(echo "$ra $rb" | awk '{ printf "%.0f", ($1 + $2) / 1000 }')
	err=$(echo "$dem $use" | awk '{ d = $1 - $2; if (d < 0) d = -d; printf "%.4f", ($2 > 0) ? d / $2 : 1 }')
	wk=$(awk '/"wakeup_latency_ns"/ { f = 1 } f && /"count"/ { gsub(/[^0-9]/, ""); print; exit }' /tmp/rec-stats.json)
	lost=$(awk -F': ' '/"lost_events"/ { gsub(/[^0-9]/, "", $2); print $2 }' $R/meta.json)
	bad=$(sed -n 's/.* \([0-9]*\) malformed lines skipped.*/\1/p' /tmp/rec-import.log | head -1)
	sz=$(du -sk $R | cut -f1)
	data record rc=$rrc import_rc=$irc validate_rc=$vrc stats_rc=$src instances_left=$inst \
		spinners_a=$na spinners_b=$nb demand_us=$dem usage_us=$use rel_err=$err wakeups=${wk:-0} lost=$lost malformed=${bad:-0} size_kb=$sz
	ok=$(echo "$err" | awk '{ print ($1 != "" && $1 + 0 <= 0.15) ? 1 : 0 }')
	if [ $rrc -eq 0 ] && [ $irc -eq 0 ] && [ $vrc -eq 0 ] && [ "$inst" = 0 ] && [ "$na" = 1 ] && [ "$nb" = 1 ] &&
	   [ "$ok" = 1 ] && [ "${wk:-0}" -gt 0 ] && [ "${bad:-0}" = 0 ]; then
		result record PASS "recorded ${sz} KiB (lost $lost), imported + validated; spinners in /rec-a and /rec-b, demand ${dem}us vs cpu.stat ${use}us (error $err <= 0.15), $wk wakeups, no malformed line"
	else
		result record FAIL "rc=$rrc import=$irc validate=$vrc instances_left=$inst spinners a=$na b=$nb demand=${dem}us usage=${use}us err=$err wakeups=${wk:-0} malformed=${bad:-0}"
		cat /tmp/rec-validate.log
	fi
	# SIGTERM during a --duration recording: clean stop.
	rm -rf /tmp/record-sig
	agentcg-record -o /tmp/record-sig --duration 60s > /tmp/rec-sig.log 2>&1 &
	rp=$!
	sleep 1
	kill -TERM $rp
	wait $rp
	trc=$?
	left=$(ls -d /sys/kernel/tracing/instances/agentcg-record-* /sys/kernel/debug/tracing/instances/agentcg-record-* 2>/dev/null | wc -l)
	grep -q '"complete": true' /tmp/record-sig/meta.json 2>/dev/null && comp=1 || comp=0
	lines=$(wc -l < /tmp/record-sig/ftrace.txt 2>/dev/null)
	data record_signal rc=$trc instances_left=$left meta_complete=$comp ftrace_lines=${lines:-0}
	[ $trc -eq 143 ] && [ "$left" = 0 ] && [ $comp = 1 ] && [ "${lines:-0}" -gt 0 ] &&
		result record_signal PASS "SIGTERM after 1 s: exit 143, meta.json complete, ${lines} event lines, no tracing instance left" ||
		{ result record_signal FAIL "rc=$trc instances_left=$left meta_complete=$comp lines=${lines:-0}"; cat /tmp/rec-sig.log; }
}
DEFAULT_SCENARIOS="$DEFAULT_SCENARIOS,record"
