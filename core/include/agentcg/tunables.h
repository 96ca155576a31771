/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * agentcg tunables: one definition, with the defaults of the design (seed
 * 000 section 6), used by the simulator, agentcgroupd (which sets them as
 * the BPF program's read-only data before load) and the YAML config
 * (`scheduler:` section, config/scheduler_yaml.cc).
 *
 * C99, BPF-safe: fixed-width integers only, no libc.
 */
#ifndef AGENTCG_TUNABLES_H
#define AGENTCG_TUNABLES_H

#include "agentcg/types.h"

/* Feature flags: all off = flatcg. */
enum agentcg_feature {
	AGENTCG_F_MEM_PENALTY = 1u << 0,
	AGENTCG_F_AUTO_BOOST = 1u << 1,
	AGENTCG_F_WAKEUP_BOOST = 1u << 2,
	AGENTCG_F_FORK_AWARE = 1u << 3,
	AGENTCG_F_MIN_SLICE = 1u << 4,
	AGENTCG_F_LATENCY = 1u << 5, /* short requests after a quiet spell (agentcg.h) */
	/*
	 * Re-tag at dispatch a queued request whose group ran past its share
	 * since it was queued (eevdf.h agentcg_eevdf_stale; ops.dispatch in
	 * BPF, the class's dispatch in the simulator). A fix of the one-queue
	 * mechanism more than an agent feature, but a flag like them, so flatcg
	 * (every flag off) stays what it was and the ablation can measure it.
	 */
	AGENTCG_F_RETAG_STALE = 1u << 6,
	/*
	 * A wakeup or fork that the CPU select_cpu chose does not take (its
	 * running request is protected or ordered first: often the waker
	 * itself) preempts another CPU whose running request it is ordered
	 * before (place.h agentcg_place_retarget / agentcg_victim_consider),
	 * or, when every such CPU's request is still protected, re-checks the
	 * first of them once its protection ends (agentcg_victim_defer): the
	 * fork and wake balancing fair.c does by spreading a forking task's
	 * children over the CPUs.
	 */
	AGENTCG_F_VICTIM_PREEMPT = 1u << 7,
	/*
	 * While other groups are waking (within AGENTCG_RESERVE_WINDOW_NS), a
	 * group in a fork storm (fork_aware) may not take the last CPU that
	 * runs none of its requests: that CPU stays free for their wakeups,
	 * which then start on an idle CPU instead of preempting a storm task
	 * (agentcg.h agentcg_storm_may_take).
	 */
	AGENTCG_F_STORM_RESERVE = 1u << 8,
	AGENTCG_F_ALL = (1u << 9) - 1,
	/*
	 * The default set: all but mem_penalty. Measured on the crowded
	 * machine (README, "Crowded machine", ablation): dividing a session's
	 * weight while its test run bursts over memory.high costs tool-call
	 * p99 15 % (1.15x eevdf with it, 1.01x without) and changes no other
	 * scenario; the kernel already throttles a group above memory.high.
	 * It stays available (`scheduler.features.mem_penalty: true`).
	 */
	AGENTCG_F_DEFAULT = AGENTCG_F_ALL & ~AGENTCG_F_MEM_PENALTY,
};

struct agentcg_tunables {
	u32 features; /* AGENTCG_F_* */
	u32 startup_boost_window_ms;
	u32 startup_boost_vtime_ms;
	u32 wakeup_boost_vtime_ms;
	u32 base_slice_ms;
	u32 boosted_slice_ms;
	u32 min_slice_us;
	u32 fork_window_sec;
	u32 fork_storm_threshold;
	u32 io_bound_wakeup_rate;
	u32 mem_penalty_max;
	u32 mem_penalty_decay_sec;
};

/*
 * The defaults as an initializer, so that a constant (the BPF program's
 * read-only data) and the function below share one definition.
 */
#define AGENTCG_TUNABLES_DEFAULT_INIT                                        \
	{                                                                    \
		.features = AGENTCG_F_DEFAULT, .startup_boost_window_ms = 100,   \
		.startup_boost_vtime_ms = 20, .wakeup_boost_vtime_ms = 5,    \
		.base_slice_ms = 4, .boosted_slice_ms = 2,                   \
		.min_slice_us = 500, .fork_window_sec = 1,                   \
		.fork_storm_threshold = 32, .io_bound_wakeup_rate = 10,      \
		.mem_penalty_max = 4, .mem_penalty_decay_sec = 5,            \
	}

static inline struct agentcg_tunables agentcg_tunables_default(void)
{
	struct agentcg_tunables t = AGENTCG_TUNABLES_DEFAULT_INIT;
	return t;
}

#endif /* AGENTCG_TUNABLES_H */
