/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The interface between bpf/monitor.bpf.c (the scheduler-tracepoint monitor,
 * the strategies design's sched_monitor.bpf.o) and its loader live/monitor/: the per-cgroup
 * stats layout and the wakeup-latency histogram buckets. C99 and BPF-safe,
 * included by the BPF program and by the daemon.
 *
 * Invariants: fixed layout without implicit padding (static_assert in
 * live/monitor/monitor_logic.cc) because the kernel program and user space
 * read the same bytes; the map is per-CPU, so user space sums the CPUs.
 */
#ifndef AGENTCG_BPF_MONITOR_INTF_H
#define AGENTCG_BPF_MONITOR_INTF_H

#include "agentcg/types.h"

/* Cgroups tracked at once (cgroup v2 ids); more are counted in
 * agentcg_mon_global[AGENTCG_MON_G_cgrp_full] and not tracked. */
#define AGENTCG_MON_MAX_CGRPS 16384

/* Wakeup latency (sched_wakeup/_new -> sched_switch in) histogram: bucket b
 * holds latencies < 2^b us (b = 0 .. N-2), the last bucket everything above
 * 2^(N-2) us (~32 ms). */
#define AGENTCG_MON_LAT_BUCKETS 17

struct agentcg_mon_cgrp_stat {
	u64 runtime_ns;    /* sched_switch in -> out, summed */
	u64 wait_ns;       /* runnable (woken or preempted) -> switched in */
	u64 nvcsw;         /* switched out while blocking (voluntary) */
	u64 nivcsw;        /* switched out while runnable (preempted, yield) */
	u64 run_count;     /* times switched in (schedstat pcount) */
	u64 migrations;    /* sched_migrate_task */
	u64 wakeups;       /* sched_wakeup + sched_wakeup_new */
	u64 forks;         /* sched_process_fork, charged to the parent's cgroup */
	u64 exits;         /* sched_process_exit */
	u64 lat_sum_ns;    /* sum of the wakeup latencies in lat_hist */
	u64 lat_hist[AGENTCG_MON_LAT_BUCKETS];
};

/* Global counters (per-CPU array `mon_global`). X(number, name, help). */
#define AGENTCG_MON_GLOBAL(X)                                                        \
	X(0, events, "scheduler tracepoint events handled by the monitor")           \
	X(1, cgrp_full, "events dropped because the cgroup table was full")          \
	X(2, no_task_storage, "events without per-task storage (allocation failed)")

enum agentcg_mon_global_stat {
#define AGENTCG_MON_X_ENUM(num, name, help) AGENTCG_MON_G_##name = num,
	AGENTCG_MON_GLOBAL(AGENTCG_MON_X_ENUM)
#undef AGENTCG_MON_X_ENUM
	AGENTCG_MON_NR_GLOBAL = 3,
};

#endif /* AGENTCG_BPF_MONITOR_INTF_H */
