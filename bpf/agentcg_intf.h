/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The interface between bpf/agentcg.bpf.c and its loader (agentcgroupd):
 * map value layouts, the mode numbers (the counters are core's one list,
 * agentcg/counters.h). C99 and BPF-safe (only core/ headers), included by
 * the BPF program and by the daemon.
 *
 * Invariants: every struct here has a fixed layout without implicit padding
 * (checked by static asserts in the daemon), because the same bytes are read
 * by the kernel program and by user space. Counter numbers are explicit and
 * never reused, so Prometheus names cannot drift from the BPF indices.
 */
#ifndef AGENTCG_BPF_INTF_H
#define AGENTCG_BPF_INTF_H

#include "agentcg/counters.h"
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
 * The counters (policy: per-CPU map `stats`; the glue's own fallback and race
 * paths: per-CPU map `bpf_stats`, enum agentcg_bpf_stat AGENTCG_BS_*) come
 * from core's one list, agentcg/counters.h.
 */

/* Written by the daemon (memory monitor), read by BPF: map `cgrp_ctl`. */
struct agentcg_cgrp_ctl {
	u32 mem_penalty; /* 0..tunables.mem_penalty_max */
	u32 pad;
};

/*
 * Read by the daemon, written by BPF under its lock: map `cgrp_stat`, an
 * array at the slot of the cgroup's state (the daemon finds the slot by
 * cgroup id in map `cgrp_slots` and checks `cgid`); separate from the
 * BPF-private state so user space never sees the lock.
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
	u64 cgid;         /* the cgroup whose state has this slot (0: none) */
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
