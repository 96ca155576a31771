# SPDX-License-Identifier: GPL-2.0-only
# Scenario plug-in `sighup_bad` (busybox sh, sourced by /scenarios.sh), issue
# 17: agentcgroupd runs with a valid config (scheduler.base_slice_ms 40), then
# gets SIGHUP once for each bad config fixture of tests/data/bad-configs/
# (carried to /bad-configs/ by run-vm.sh, with expected.json), then for a
# config path that is missing and one that is a directory. After each:
#   - the daemon is alive and /sys/kernel/sched_ext/state is "enabled" (also
#     sampled every 0.2 s throughout: no sample may be anything else);
#   - agentcg_config_reload_errors_total went up by one and the log has one
#     more "config rejected, keeping the old one: /etc/agentcg/config.yaml:L:"
#     line naming the fixture's line L and key (from expected.json);
# and at the end:
#   - the old values stayed in force: no "scheduler config N live" line was
#     logged (apply_live_cfg() numbers each write of scheduler values into
#     the attached program), agentcg_config_reloads_total is 0, the involuntary
#     switch rate of four CPU hogs after the bad reloads is within x1.5 of the
#     rate before (base-slice-below-boosted.yaml asks for base_slice_ms 1;
#     scenario `tunables` shows 40 -> 1 raises it >= x1.5), and a good
#     reload afterwards is "scheduler config 1 live" (the first write).
# About 25 s of guest time.
# results: sighup_bad_configs
DEFAULT_SCENARIOS="$DEFAULT_SCENARIOS,sighup_bad"

# Own helpers (other plug-ins may change theirs).
sighup_good() { write_config agentcg "$(sched_yaml 40)"; }
# sighup_expect FILE -> "LINE KEY" from expected.json (one fixture per line there)
sighup_expect() {
	sed -n "s/.*\"$1\": {\"line\": \([0-9]*\), \"key\": \"\([^\"]*\)\".*/\1 \2/p" /bad-configs/expected.json
}
# sighup_send LABEL LINE KEY: SIGHUP, wait for the next rejection, check it.
sighup_send() {
	label=$1 line=$2 key=$3
	want=$((SH_ERRS + 1))
	kill -HUP $DPID
	i=0; e=
	while [ $i -lt 100 ]; do
		e=$(metric agentcg_config_reload_errors_total)
		[ "${e:-0}" -ge $want ] && break
		sleep 0.1; i=$((i + 1))
	done
	SH_ERRS=${e:-0}
	msg=$(grep 'config rejected, keeping the old one' $DLOG | sed -n "${want}p")
	kill -0 $DPID 2>/dev/null && alive=1 || alive=0
	st=$(state)
	ok=1
	[ "$alive" = 1 ] && [ "$st" = enabled ] && [ "$SH_ERRS" = $want ] || ok=0
	if [ -n "$line" ]; then
		case "$msg" in *"one: $CONF:$line: "*) ;; *) ok=0 ;; esac
		[ -z "$key" ] || case "$msg" in *"$key"*) ;; *) ok=0 ;; esac
	else
		case "$msg" in *"$CONF"*) ;; *) ok=0 ;; esac
	fi
	data sighup_bad "$label" ok=$ok alive=$alive state=$st reload_errors=$SH_ERRS "msg=$(echo "$msg" | sed 's/.*keeping the old one: //' | cut -c1-140)"
	[ $ok = 1 ] || SH_FAILED="$SH_FAILED $label"
	SH_N=$((SH_N + 1))
}

s_sighup_bad() {
	[ -f /bad-configs/expected.json ] || { result sighup_bad_configs FAIL "no /bad-configs in the initramfs (run-vm.sh carries tests/data/bad-configs)"; return; }
	sighup_good
	run_daemon agentcg || { result sighup_bad_configs FAIL "daemon did not attach"; stop_daemon; return; }
	mkcg sh 100
	pids=""
	# 600 s: longer than the scenario under any load; killed at its end
	for i in 1 2 3 4; do inc sh agentcg-work spin 600; pids="$pids $!"; done
	touch /tmp/sh.watch
	( while [ -f /tmp/sh.watch ]; do state; sleep 0.2; done ) > /tmp/sh.states &
	sleep 1
	a0=$(nvcsw $pids); t0=$(now_us); sleep $DUR; a1=$(nvcsw $pids); t1=$(now_us)
	SH_ERRS=0 SH_N=0 SH_FAILED=
	for f in /bad-configs/*.yaml; do
		b=$(basename $f)
		set -- $(sighup_expect $b)
		cp $f $CONF
		sighup_send $b "${1:-?}" "${2:-}"
	done
	rm -f $CONF
	sighup_send missing-file "" ""
	mkdir $CONF
	sighup_send directory "" ""
	rmdir $CONF
	sleep 1
	b0=$(nvcsw $pids); u0=$(now_us); sleep $DUR; b1=$(nvcsw $pids); u1=$(now_us)
	live=$(grep -c 'scheduler config [0-9]* live' $DLOG)
	rel=$(metric agentcg_config_reloads_total)
	# A good reload afterwards: the first write of scheduler values.
	sighup_good
	kill -HUP $DPID
	i=0; while [ $i -lt 50 ] && [ "$(metric agentcg_config_reloads_total)" != 1 ]; do sleep 0.1; i=$((i + 1)); done
	first=$(grep -c 'scheduler config 1 live: mode agentcg, features 0x[0-9a-f]*, base_slice_ms 40' $DLOG)
	rm -f /tmp/sh.watch
	for p in $pids; do kill $p 2>/dev/null; done
	for p in $pids; do wait $p 2>/dev/null; done
	sleep 0.5
	dis=$(grep -vc '^enabled$' /tmp/sh.states)
	n=$(wc -l < /tmp/sh.states)
	kill -0 $DPID 2>/dev/null && alive=1 || alive=0
	stop_daemon
	rmcg sh
	ra=$(echo "$a0 $a1 $t0 $t1" | awk '{ printf "%.1f", ($2 - $1) * 1e6 / ($4 - $3) }')
	rb=$(echo "$b0 $b1 $u0 $u1" | awk '{ printf "%.1f", ($2 - $1) * 1e6 / ($4 - $3) }')
	ratio=$(echo "$ra $rb" | awk '{ printf "%.2f", ($1 > 0 ? $2 / $1 : 0) }')
	same=$(echo $ratio | awk '{ print ($1 > 0 && $1 < 1.5) ? 1 : 0 }')
	data sighup_bad summary sighups=$SH_N rejected=$SH_ERRS failed="${SH_FAILED# }" live_writes=$live reloads=$rel \
		first_good=$first switches_per_s=$ra/$rb ratio=$ratio state_samples=$n not_enabled=$dis alive=$alive
	if [ -z "$SH_FAILED" ] && [ "$SH_ERRS" = "$SH_N" ] && [ "$live" = 0 ] && [ "$rel" = 0 ] && [ "$first" = 1 ] &&
	   [ "$dis" = 0 ] && [ "$n" -gt 5 ] && [ "$alive" = 1 ] && [ "$same" = 1 ]; then
		result sighup_bad_configs PASS "$SH_N bad SIGHUPs rejected naming $CONF:line: key, scheduler enabled in all $n samples, old slice kept (hog switches/s $ra -> $rb, x$ratio < 1.5; no live write until the good reload, which was write 1)"
	else
		result sighup_bad_configs FAIL "failed:${SH_FAILED:- none} rejected=$SH_ERRS/$SH_N live_writes=$live reloads=$rel first_good=$first not_enabled=$dis/$n alive=$alive switches/s $ra -> $rb (x$ratio)"
		cat $DLOG
	fi
}
