# SPDX-License-Identifier: GPL-2.0-only
# Scenario plug-in `record_storm` (busybox sh, sourced by /scenarios.sh):
# the bundled fork storm (/traces/fork-storm.json)
# played by agentcg-player for 10 s under the kernel's own scheduler, as
# live compare's EEVDF pass plays it, and recorded by agentcg-record: the
# scheduler events of every task, so that which wakeups queue (the
# forker's timer wakeups, its children's first runs, the victim's workers)
# can be read per task, which the player's per-cgroup figures cannot say
# (the simulator's fidelity against the storm). Leaves the recording in
# /out/record_storm/recording and the player's results beside it. Passes
# when the recording is complete with no lost events (the recorder keeps up
# with ~1,000 switches/s of a storm under TCG) and the player finished.
# Guest time: ~15 s. Alone: live/vm/run-vm.sh BUILD LOG record_storm 900 OUT
# results: record_storm
DEFAULT_SCENARIOS="$DEFAULT_SCENARIOS,record_storm"

s_record_storm() {
	command -v agentcg-record > /dev/null || { result record_storm FAIL "agentcg-record not in the initramfs (build the agentcg-record target)"; return; }
	command -v agentcg-player > /dev/null || { result record_storm FAIL "agentcg-player not in the initramfs (not built?)"; return; }
	o=/out/record_storm
	rm -rf $o
	mkdir -p $o
	agentcg-record -o $o/recording --interval-ms 100 -- agentcg-player /traces/fork-storm.json \
		-o $o/results.json --label eevdf --seed 1 --mem-scale 0.25 --duration 10s \
		--cgroup-root $CG/agentcg-player > $o/record.log 2>&1
	rc=$?
	ev=$(grep -c 'sched_switch' $o/recording/ftrace.txt 2>/dev/null)
	lost=$(awk -F': ' '/"lost_events"/ { gsub(/[^0-9]/, "", $2); print $2 }' $o/recording/meta.json 2>/dev/null)
	complete=$(grep -c '"complete": true' $o/recording/meta.json 2>/dev/null)
	forks=$(grep -c 'sched_process_fork' $o/recording/ftrace.txt 2>/dev/null)
	if [ $rc -eq 0 ] && [ "${ev:-0}" -gt 0 ] && [ -s $o/results.json ] && [ "$lost" = 0 ] && [ "$complete" = 1 ]; then
		result record_storm PASS "fork storm recorded under the kernel's scheduler: ${ev} switches, ${forks} forks, 0 lost events"
	else
		tail -n 5 $o/record.log
		result record_storm FAIL "agentcg-record/agentcg-player exited $rc: ${ev:-0} switches, lost events '${lost}', complete '${complete}'"
	fi
}
