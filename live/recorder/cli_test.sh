#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# CTest case recorder_cli: agentcg-record's argument checking and its clear
# failures where it cannot record (no root, no cgroup v2 / tracefs). Needs
# neither root nor tracefs; recording itself is tested in the VM (record.sh).
# Usage: cli_test.sh PATH/TO/agentcg-record
rec=$1
fail() { echo "FAIL: $*"; exit 1; }
expect() { # want_rc description args...
	want=$1; what=$2; shift 2
	out=$("$rec" "$@" 2>&1); rc=$?
	[ $rc -eq $want ] || fail "$what: exit $rc, expected $want: $out"
	echo "ok: $what (exit $rc): $(echo "$out" | head -1)"
}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
expect 2 "no arguments"
expect 2 "unknown option" --bogus -o "$tmp/r" --duration 1s
expect 2 "bad duration" -o "$tmp/r" --duration 1x
expect 2 "duration without a unit" -o "$tmp/r" --duration 10
expect 2 "bad interval" -o "$tmp/r" --interval-ms 0 --duration 1s
expect 2 "duration and command" -o "$tmp/r" --duration 1s -- true
expect 2 "neither duration nor command" -o "$tmp/r"
expect 2 "empty command" -o "$tmp/r" --
expect 0 "help" --help
expect 0 "version" --version
# A usage error names the flag and what was expected.
out=$("$rec" -o "$tmp/r" --duration 10 2>&1)
echo "$out" | grep -q "error: --duration: expected a duration with a unit" || fail "--duration message: $out"
out=$("$rec" -o "$tmp/r" --interval-ms 5 --duration 1s 2>&1)
echo "$out" | grep -q -- "--interval-ms" || fail "--interval-ms message: $out"
"$rec" --version | grep -q "^agentcg-record [0-9]" || fail "--version output"
if [ "$(id -u)" != 0 ]; then
	expect 1 "not root" -o "$tmp/r" --duration 1s
else
	# Root without a cgroup v2 hierarchy at the given root: a clear error
	# that names --no-cgroups.
	expect 1 "no cgroup v2 mount" -o "$tmp/r" --cgroup-root "$tmp/nocg" --duration 1s
	"$rec" -o "$tmp/r" --cgroup-root "$tmp/nocg" --duration 1s 2>&1 | grep -q -- "--no-cgroups" ||
		fail "the no-cgroup error does not name --no-cgroups"
	# --no-cgroups there: the scheduler events alone, every task in "/"
	# (a capture for fidelity --capture); where tracefs cannot be used, SKIP.
	out=$("$rec" -o "$tmp/nc" --cgroup-root "$tmp/nocg" --no-cgroups -- sh -c 'sleep 0.05; /bin/true' 2>&1); rc=$?
	if [ $rc -ne 0 ] && echo "$out" | grep -q -i "tracefs\|tracing"; then
		echo "SKIP: --no-cgroups recording: tracefs not usable here: $(echo "$out" | tail -1)"
	else
		[ $rc -eq 0 ] || fail "--no-cgroups: exit $rc: $out"
		grep -q "sched_process_exec: filename=/bin/true" "$tmp/nc/ftrace.txt" || fail "--no-cgroups: no exec of /bin/true"
		grep -q '"cgroup_root": null' "$tmp/nc/meta.json" || fail "--no-cgroups: meta.json cgroup_root not null"
		awk -F'\t' 'NR > 1 && $5 != "/" { bad = 1 } END { exit bad }' "$tmp/nc/members.tsv" ||
			fail "--no-cgroups: a task outside /"
		[ "$(wc -l < "$tmp/nc/members.tsv")" -gt 1 ] || fail "--no-cgroups: no task recorded"
		echo "ok: --no-cgroups recorded $(grep -c sched_switch "$tmp/nc/ftrace.txt") switches"
	fi
fi
# Nothing recorded into a tracing instance may be left behind.
for d in /sys/kernel/tracing/instances /sys/kernel/debug/tracing/instances; do
	ls -d "$d"/agentcg-record-* 2>/dev/null | grep -q . && fail "a tracing instance was left in $d"
done
echo "PASS"
