# SPDX-License-Identifier: GPL-2.0-only
# Plug-in scenario `player` (sourced by /scenarios.sh, busybox sh): plays
# /traces/hogs.json (2 CPUs, three cgroups of weight 100/200/300, two hogs
# each) with agentcg-player for 5 s under agentcgroupd in agentcg mode, and
# checks that the three hog cgroups' cpu_share (from the player's
# results.json, i.e. cpu.stat usage_usec deltas) divide the CPU used within
# 0.05 (absolute) of 1/6, 2/6, 3/6. Leaves /out/player/results.json.
# Guest time: ~10 s (daemon start, 5 s of play, stop).
# results: player
DEFAULT_SCENARIOS="$DEFAULT_SCENARIOS,player"

# player_shares FILE CG...: each cgroup's cpu_share in FILE (results.json as
# written by agentcg-player: 2-space indent, cgroups.<path>.cpu_share).
player_shares() {
	f=$1; shift
	for c in "$@"; do
		awk -v want="    \"$c\": {" '
			$0 == want { inside = 1; next }
			inside && /^      "cpu_share": / { v = $2; sub(",", "", v); print v; exit }
			inside && /^    }/ { exit }' "$f"
	done | tr '\n' ' '
}

s_player() {
	command -v agentcg-player > /dev/null || { result player FAIL "agentcg-player not in the initramfs (not built?)"; return; }
	mkdir -p /out/player
	start_daemon agentcg || { result player FAIL "daemon did not attach"; return; }
	agentcg-player /traces/hogs.json -o /out/player/results.json --label agentcg --duration 5s \
		> /tmp/player.log 2>&1
	rc=$?
	sched=$(ops)
	stop_daemon
	if [ $rc -ne 0 ] || [ ! -s /out/player/results.json ]; then
		cat /tmp/player.log
		result player FAIL "agentcg-player exited $rc: $(tail -n 1 /tmp/player.log)"
		return
	fi
	raw=$(player_shares /out/player/results.json /hog-0 /hog-1 /hog-2)
	left=$(ls /sys/fs/cgroup/agentcg-player 2>/dev/null | wc -l)
	fr=$(echo $raw | awk '{ t = $1 + $2 + $3; if (NF != 3 || t <= 0) { print "bad"; exit }
		printf "%.4f %.4f %.4f", $1 / t, $2 / t, $3 / t }')
	data player shares raw $raw fractions $fr scheduler $sched
	err=$(echo $fr | awk '{ if (NF != 3) { print 1; exit } m = 0
		for (i = 1; i <= 3; i++) { e = $i - i / 6; if (e < 0) e = -e; if (e > m) m = e }
		printf "%.4f", m }')
	ok=$(echo $err | awk '{ print ($1 <= 0.05) ? 1 : 0 }')
	if [ "$ok" = 1 ] && [ "$left" = 0 ]; then
		result player PASS "hogs.json 5 s under $sched: shares $fr of the CPU used (raw $raw; max abs error $err <= 0.05), cgroups removed"
	else
		result player FAIL "hogs.json 5 s under $sched: shares $fr (raw $raw; max abs error $err, want <= 0.05); leftover cgroups: $left"
	fi
}
