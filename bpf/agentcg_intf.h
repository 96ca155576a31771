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

#include "agentcg/types.h"

/* Scheduler modes (rodata `agentcg_mode`). FIFO is the trivial baseline used
 * for the overhead comparison: one global FIFO queue, nothing else. */
enum agentcg_mode {
	AGENTCG_MODE_FIFO = 0,
	AGENTCG_MODE_FLATCG = 1,
	AGENTCG_MODE_AGENTCG = 2,
};

/* Max cgroups the dispatcher scans; more are served by the fallback queue
 * (counted by AGENTCG_STAT_CGRP_OVERFLOW). */
#define AGENTCG_MAX_CGRPS 128
/* Tasks whose cgroup has no state (not yet initialised, table full) go here. */
#define AGENTCG_FALLBACK_DSQ (1ULL << 62) /* cgroup ids (DSQ ids of cgroups) are small */

/*
 * The policy's counters come from core's one list (agentcg/counters.h,
 * per-CPU map `stats`, exported as agentcg_<name>_total). This second list
 * holds only what the BPF glue itself counts (fallback and race paths),
 * per-CPU map `bpf_stats`, exported as agentcg_bpf_<name>_total.
 * X(number, name, help); append only.
 */
#define AGENTCG_BPF_STATS(X)                                                           \
	X(0, enqueues, "tasks enqueued by ops.enqueue")                                \
	X(1, direct_dispatches, "wakeups placed directly on an idle CPU")              \
	X(2, dispatches, "tasks moved from a cgroup queue to a CPU")                   \
	X(3, fallback_dispatches, "tasks dispatched from the fallback queue")          \
	X(4, no_cgrp_state, "tasks whose cgroup had no state (fallback path)")         \
	X(5, cgrp_overflow, "cgroups beyond AGENTCG_MAX_CGRPS (fallback path)")        \
	X(6, dispatch_races, "a chosen cgroup queue was empty when moved from")        \
	X(7, refills, "cpu.max period refills that unthrottled a cgroup")              \
	X(8, cgroup_moves, "tasks moved between cgroups")                              \
	X(9, no_task_ctx, "tasks without task_ctx (should not happen)")

enum agentcg_bpf_stat {
#define AGENTCG_BPF_STAT_ENUM(num, name, help) AGENTCG_BS_##name = num,
	AGENTCG_BPF_STATS(AGENTCG_BPF_STAT_ENUM)
#undef AGENTCG_BPF_STAT_ENUM
	AGENTCG_NR_BPF_STATS = 10,
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
