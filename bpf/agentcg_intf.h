/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The interface between bpf/agentcg.bpf.c and its loader (agentcgroupd):
 * map value layouts, the counter list, the mode numbers. C99 and BPF-safe
 * (only agentcg/types.h), included by the BPF program and by the daemon.
 *
 * Invariants: every struct here has a fixed layout without implicit padding
 * (checked by static asserts in the daemon), because the same bytes are read
 * by the kernel program and by user space. Counter numbers are explicit and
 * never reused, so Prometheus names cannot drift from the BPF indices.
 */
#ifndef AGENTCG_BPF_INTF_H
#define AGENTCG_BPF_INTF_H

#include "agentcg/tunables.h"
#include "agentcg/types.h"

/* Scheduler modes (rodata `agentcg_mode`). FIFO is the trivial baseline used
 * for the overhead comparison: one global FIFO queue, nothing else. */
enum agentcg_mode {
	AGENTCG_MODE_FIFO = 0,
	AGENTCG_MODE_FLATCG = 1,
	AGENTCG_MODE_AGENTCG = 2,
};

/* Cgroups with scheduler state (map sizes). A cgroup past it is scheduled
 * under its nearest ancestor with state (counted: cgrp_overflow); the
 * daemon refuses to load on a tree that already has more. */
#define AGENTCG_MAX_CGRPS 32768
/* The one vtime-ordered queue every fair task waits in (key: its virtual
 * deadline, core/include/agentcg/eevdf.h). Cgroup ids name the per-cgroup
 * park queues of throttled tasks; they are far below this id. */
#define AGENTCG_SHARED_DSQ (1ULL << 62)
/* Most CPUs the per-CPU preemption timers cover. */
#define AGENTCG_MAX_CPUS 1024

/*
 * The run-time configuration, written by the daemon into the program's
 * .data (`cfgs`, two slots) without detaching: it fills the slot not in
 * use and then flips `cfg_idx`, so the scheduler never reads a half-written
 * set of tunables. mode: AGENTCG_MODE_FLATCG or AGENTCG_MODE_AGENTCG
 * (FIFO is fixed at load: it is another program shape).
 */
struct agentcg_live_cfg {
	u32 mode;
	u32 gen; /* bumped by every reload (exported as agentcg_bpf_cfg_gen) */
	struct agentcg_tunables tun;
};

/*
 * The policy's counters come from core's one list (agentcg/counters.h,
 * per-CPU map `stats`, exported as agentcg_<name>_total). This second list
 * holds only what the BPF glue itself counts (fallback and race paths),
 * per-CPU map `bpf_stats`, exported as agentcg_bpf_<name>_total.
 * X(number, name, help); append only.
 */
#define AGENTCG_BPF_STATS(X)                                                           \
	X(0, enqueues, "tasks enqueued by ops.enqueue")                                \
	X(1, direct_dispatches, "requests placed directly in a CPU's local queue")           \
	X(2, dispatches, "tasks moved from a cgroup queue to a CPU")                   \
	X(3, parked, "tasks parked because their cgroup or an ancestor was throttled") \
	X(4, no_cgrp_state, "tasks scheduled under an ancestor's state (their cgroup has none)") \
	X(5, cgrp_overflow, "cgroups without state (table full or too deep)")         \
	X(6, dispatch_races, "a chosen cgroup queue was empty when moved from")        \
	X(7, refills, "cpu.max period refills that unthrottled a cgroup")              \
	X(8, cgroup_moves, "tasks moved between cgroups")                              \
	X(9, no_task_ctx, "tasks without task_ctx (should not happen)")                \
	X(10, wakeup_preempt_checks, "wakeups checked against the running task (base rule)") \
	X(11, preempt_timer_fires, "min_slice re-checks run by the per-CPU BPF timer")  \
	X(12, unparked, "parked tasks put back in the queue at a cpu.max refill")      \
	X(13, idle_kicks, "idle CPUs woken for a task queued in the shared queue")

enum agentcg_bpf_stat {
#define AGENTCG_BPF_STAT_ENUM(num, name, help) AGENTCG_BS_##name = num,
	AGENTCG_BPF_STATS(AGENTCG_BPF_STAT_ENUM)
#undef AGENTCG_BPF_STAT_ENUM
	AGENTCG_NR_BPF_STATS = 14,
};

/* Written by the daemon (memory monitor), read by BPF: map `cgrp_ctl`. */
struct agentcg_cgrp_ctl {
	u32 mem_penalty; /* 0..tunables.mem_penalty_max */
	u32 pad;
};

/*
 * Read by the daemon, written by BPF under its lock: map `cgrp_stat`
 * (separate from the BPF-private state so user space never sees the lock).
 */
struct agentcg_cgrp_stat {
	u64 runtime_ns;   /* CPU time of the cgroup's tasks */
	u64 wait_ns;      /* runnable-but-not-running time */
	u64 nr_forks;
	u64 nr_throttled; /* cpu.max: periods that ended throttled */
	u64 throttled_ns;
	u64 nr_periods;   /* cpu.stat nr_periods (nr_throttled <= nr_periods) */
	u64 nr_bursts;    /* cpu.stat nr_bursts */
	u64 burst_ns;     /* cpu.stat burst_usec x 1000 */
	u32 weight;       /* cpu.weight as the kernel told us */
	u32 eff_weight;   /* after mem_penalty and fork-storm down-weighting */
	u32 fork_storm;   /* 1 while the cgroup is in a fork storm */
	u32 mem_penalty;  /* as applied by the scheduler */
};

/* Exit information copied in ops.exit for the daemon (scx's UEI idea). */
#define AGENTCG_EXIT_MSG_LEN 256
struct agentcg_exit_info {
	s32 kind; /* enum scx_exit_kind; 0 while attached */
	s32 pad;
	s64 exit_code;
	char reason[128];
	char msg[AGENTCG_EXIT_MSG_LEN];
};

#endif /* AGENTCG_BPF_INTF_H */
