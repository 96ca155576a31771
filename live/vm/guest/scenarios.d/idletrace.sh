# SPDX-License-Identifier: GPL-2.0-only
# Scenario plug-in `idletrace` (opt-in diagnostic): cyclictest alone on the
# idle guest under EEVDF, the FIFO mode and agentcg (interleaved, twice),
# with the kernel's scheduler, timer, IRQ and IPI events traced on
# CLOCK_MONOTONIC -> /out/idletrace/<mode>-<n>.{trace,hist}, and the
# daemon's BPF counters before and after (<mode>-<n>.m0, .m1). On the host,
# `./agentcg live idletrace OUT/idletrace/*.trace` splits each wakeup
# into its parts (python/agentcg/idletrace.py). IDLETRACE_RUNS in
# /etc/agentcg/idletrace.env (AGENTCG_VM_FILES) picks other runs, e.g.
# "eevdf:1 agentcg:1", and IDLETRACE_LOAD a load beside cyclictest.
# Opt-in by name (run-vm.sh build/ci LOG idletrace); it prints no CTest verdict.

idletrace_one() { # label mode [daemon args]
	lbl=$1; shift
	start_daemon "$@" || { data idletrace $lbl error daemon; return 1; }
	T=/sys/kernel/tracing; [ -d $T/instances ] || T=/sys/kernel/debug/tracing
	I=$T/instances/idletrace
	rmdir $I 2>/dev/null; mkdir $I || { data idletrace $lbl error "no tracing instance"; stop_daemon; return 1; }
	echo mono > $I/trace_clock
	echo 8192 > $I/buffer_size_kb
	for e in sched/sched_waking sched/sched_wakeup sched/sched_switch timer/hrtimer_start \
		timer/hrtimer_expire_entry timer/hrtimer_expire_exit irq_vectors/local_timer_entry \
		irq_vectors/local_timer_exit irq_vectors/reschedule_entry irq_vectors/call_function_single_entry \
		power/cpu_idle ipi/ipi_send_cpu ipi/ipi_send_cpumask; do
		[ -e $I/events/$e/enable ] && echo 1 > $I/events/$e/enable
	done
	mkcg it 100
	# IDLETRACE_LOAD (a command, e.g. "stress-ng --fork 4 --timeout 6s"):
	# run in the sibling cgroup itl from 1 s before cyclictest, so the
	# trace shows the wakeups next to it (the name stays idletrace)
	if [ -n "${IDLETRACE_LOAD:-}" ]; then
		mkcg itl 100
		sh -c "echo \$\$ > $CG/itl/cgroup.procs && exec $IDLETRACE_LOAD" > /dev/null 2>&1 &
		LP=$!
		sleep 1
	fi
	mkdir -p /out/idletrace
	sleep 1; metrics | grep '^agentcg_bpf_' > /out/idletrace/$lbl.m0
	echo 1 > $I/tracing_on
	sh -c "echo \$\$ > $CG/it/cgroup.procs && exec cyclictest -q -m -t 2 -i 1000 -D 3 -h 20000 --histfile=/tmp/it.hist" > /dev/null 2>&1
	echo 0 > $I/tracing_on
	sleep 1; metrics | grep '^agentcg_bpf_' > /out/idletrace/$lbl.m1
	cat $I/trace > /out/idletrace/$lbl.trace
	cp /tmp/it.hist /out/idletrace/$lbl.hist
	rmdir $I
	[ -n "${IDLETRACE_LOAD:-}" ] && { wait $LP; rmcg itl; }
	rmcg it
	stop_daemon
	data idletrace $lbl p50 $(hist_pct /tmp/it.hist 50) lines $(wc -l < /out/idletrace/$lbl.trace)
}

s_idletrace() {
	[ -f /etc/agentcg/idletrace.env ] && . /etc/agentcg/idletrace.env
	command -v cyclictest > /dev/null || { result idletrace FAIL "no cyclictest"; return; }
	for r in ${IDLETRACE_RUNS:-eevdf:1 fifo:1 agentcg:1 agentcg:2 fifo:2 eevdf:2}; do
		m=${r%%:*}
		case $m in
		eevdf) idletrace_one $m-${r##*:} none ;;
		fifo) idletrace_one $m-${r##*:} agentcg --mode fifo ;;
		agentcg) idletrace_one $m-${r##*:} agentcg ;;
		esac
	done
	data idletrace done
}
