/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Every counter of agentcg: ONE X-macro list with explicit numbers, from
 * which the BPF per-CPU stats arrays, the simulator's and the player's
 * results.json "counters" object and the Prometheus names are all
 * generated, so they cannot drift apart (the lesson of
 * HAMi-core's hand-synced symbol lists). Counts are derived from the list,
 * never typed by hand.
 *
 * The list has three groups, each numbered densely from 0:
 *  - P: the policy's counters. core/ entry points report the ones they bumped
 *    as a u32 event mask (bit N = counter N), which the caller turns into
 *    increments (BPF: per-CPU map `stats`; simulator: SchedContext::count()).
 *    Exported as results.json "counters".<name> and agentcg_<name>_total.
 *  - G: what the BPF glue itself counts (fallback and race paths), per-CPU
 *    map `bpf_stats`, exported as agentcg_bpf_<name>_total. The simulator
 *    models no glue, so these are live-only.
 *  - W: workload counters only a replay of a trace sees (the simulator and
 *    the live player), exported as results.json "counters".<name>.
 *
 * Invariants: numbers are dense from 0 within a group, never reused or
 * renumbered (append only; checked below and by core/cpu/agentcg_features_test.cc);
 * at most 32 policy counters so the event mask fits a u32.
 *
 * Who uses it: core/include/agentcg/{flatcg,agentcg}.h return event masks;
 * bpf/agentcg.bpf.c (through bpf/agentcg_intf.h), sim/cpu/scx_class.cc,
 * sim/cpu/cpu_model.cc, live/player/player.cc and live/agentcgroupd count
 * and export them.
 *
 * C99, BPF-safe.
 */
#ifndef AGENTCG_COUNTERS_H
#define AGENTCG_COUNTERS_H

#include "agentcg/types.h"

/* P(number, name, help), G(number, name, help), W(number, name, help) */
#define AGENTCG_COUNTER_LIST(P, G, W)                                                            \
	P(0, new_steps, "new agent steps detected (new cgroup, or re-activated after idling)")   \
	P(1, boosts_granted, "startup boosts granted")                                           \
	P(2, boosts_denied, "new steps refused a boost (budget spent or fork storm)")            \
	P(3, wakeup_boosts, "wakeups of I/O-bound groups given a vtime credit")                  \
	P(4, fork_storms, "fork storms detected")                                                \
	P(5, forks, "forks seen (init_task with fork)")                                          \
	P(6, penalties_applied, "memory penalty raised one step")                                \
	P(7, penalties_released, "memory penalty lowered one step")                              \
	P(8, throttles, "cpu.max quota ran out (group throttled)")                               \
	P(9, preemptions, "running tasks preempted by a boosted wakeup")                         \
	P(10, min_slice_deferrals, "boost preemptions deferred until min_slice ran")             \
	P(11, lag_clamps, "idle groups whose vtime lag was bounded on wakeup")                   \
	P(12, io_bound_groups, "groups classified I/O-bound (transitions)")                      \
	P(13, storm_reserves, "picks that kept a CPU off a fork storm for other groups (storm_reserve)") \
	G(0, enqueues, "tasks enqueued by ops.enqueue")                                          \
	G(1, direct_dispatches, "requests placed directly in a CPU's local queue")               \
	G(2, dispatches, "tasks moved from a cgroup queue to a CPU")                             \
	G(3, parked, "tasks parked because their cgroup or an ancestor was throttled")           \
	G(4, no_cgrp_state, "tasks scheduled under an ancestor's state (their cgroup has none)") \
	G(5, cgrp_overflow, "cgroups without state (table full or too deep)")                    \
	G(6, dispatch_races, "a chosen cgroup queue was empty when moved from")                  \
	G(7, refills, "cpu.max period refills that unthrottled a cgroup")                        \
	G(8, cgroup_moves, "tasks moved between cgroups")                                        \
	G(9, no_task_ctx, "tasks without task_ctx (should not happen)")                          \
	G(10, wakeup_preempt_checks, "wakeups checked against the running task (base rule)")     \
	G(11, preempt_timer_fires, "min_slice re-checks run by the per-CPU BPF timer")           \
	G(12, unparked, "parked tasks put back in the queue at a cpu.max refill")                \
	G(13, idle_kicks, "idle CPUs woken for a task queued in the shared queue")               \
	G(14, stale_retags, "stale queue heads re-tagged at dispatch (retag_stale)")            \
	G(15, victim_preempts, "wakeups that preempted another CPU (place.h victim scan)")       \
	G(16, idle_claims, "wakeups the kernel queued without ops.select_cpu, placed on their idle CPU") \
	G(17, cgroup_resyncs, "tasks found in a cgroup other than the one ops.cgroup_move last told (re-resolved at ops.runnable or ops.running)") \
	W(0, agent_steps, "agent steps started (the trace's step annotations)")                  \
	W(1, oom_kills, "processes killed by the memory.max OOM killer")

/* The list's groups one at a time (X(number, name, help)). */
#define AGENTCG_X_NONE(num, name, help)
#define AGENTCG_COUNTERS(X) AGENTCG_COUNTER_LIST(X, AGENTCG_X_NONE, AGENTCG_X_NONE)
#define AGENTCG_BPF_STATS(X) AGENTCG_COUNTER_LIST(AGENTCG_X_NONE, X, AGENTCG_X_NONE)
#define AGENTCG_WORKLOAD_COUNTERS(X) AGENTCG_COUNTER_LIST(AGENTCG_X_NONE, AGENTCG_X_NONE, X)

/* Helpers for deriving the counts and the density check. */
#define AGENTCG_X_ONE(num, name, help) +1
#define AGENTCG_X_NUM(num, name, help) +(num)

enum agentcg_counter {
#define AGENTCG_X_ENUM(num, name, help) AGENTCG_C_##name = num,
	AGENTCG_COUNTERS(AGENTCG_X_ENUM)
#undef AGENTCG_X_ENUM
	AGENTCG_NR_COUNTERS = 0 AGENTCG_COUNTERS(AGENTCG_X_ONE),
};

enum agentcg_bpf_stat {
#define AGENTCG_X_ENUM(num, name, help) AGENTCG_BS_##name = num,
	AGENTCG_BPF_STATS(AGENTCG_X_ENUM)
#undef AGENTCG_X_ENUM
	AGENTCG_NR_BPF_STATS = 0 AGENTCG_BPF_STATS(AGENTCG_X_ONE),
};

enum agentcg_workload_counter {
#define AGENTCG_X_ENUM(num, name, help) AGENTCG_W_##name = num,
	AGENTCG_WORKLOAD_COUNTERS(AGENTCG_X_ENUM)
#undef AGENTCG_X_ENUM
	AGENTCG_NR_WORKLOAD_COUNTERS = 0 AGENTCG_WORKLOAD_COUNTERS(AGENTCG_X_ONE),
};

/*
 * Density, at compile time in C99 (no _Static_assert): the numbers of a group
 * are distinct (duplicate `case` labels in the name switches below fail to
 * compile) and sum to n(n-1)/2, which distinct non-negative numbers do only
 * when they are exactly 0..n-1. A negative array size fails the build.
 */
typedef char agentcg_counters_dense[(0 AGENTCG_COUNTERS(AGENTCG_X_NUM)) ==
						    AGENTCG_NR_COUNTERS * (AGENTCG_NR_COUNTERS - 1) / 2
					    ? 1
					    : -1];
typedef char agentcg_bpf_stats_dense[(0 AGENTCG_BPF_STATS(AGENTCG_X_NUM)) ==
						     AGENTCG_NR_BPF_STATS * (AGENTCG_NR_BPF_STATS - 1) / 2
					     ? 1
					     : -1];
typedef char agentcg_workload_counters_dense[(0 AGENTCG_WORKLOAD_COUNTERS(AGENTCG_X_NUM)) ==
							     AGENTCG_NR_WORKLOAD_COUNTERS *
								     (AGENTCG_NR_WORKLOAD_COUNTERS - 1) / 2
						     ? 1
						     : -1];
/* The event mask is a u32. */
typedef char agentcg_counters_fit_mask[AGENTCG_NR_COUNTERS <= 32 ? 1 : -1];

/* The event-mask bit of a counter. */
#define AGENTCG_EV(name) (1u << AGENTCG_C_##name)

#if !defined(__bpf__)
/* Name/help of counter `id` of one group ("new_steps"), or "" when out of
 * range (C++/user space only). */
#define AGENTCG_X_NAME(num, name, help) \
	case num:                       \
		return #name;
#define AGENTCG_X_HELP(num, name, help) \
	case num:                       \
		return help;
/* agentcg_<group>_name(id) and agentcg_<group>_help(id) of one group. */
#define AGENTCG_COUNTER_LOOKUPS(group, LIST)                 \
	static inline const char *agentcg_##group##_name(u32 id) \
	{                                                    \
		switch (id) {                                \
			LIST(AGENTCG_X_NAME)                 \
		}                                            \
		return "";                                   \
	}                                                    \
	static inline const char *agentcg_##group##_help(u32 id) \
	{                                                    \
		switch (id) {                                \
			LIST(AGENTCG_X_HELP)                 \
		}                                            \
		return "";                                   \
	}
AGENTCG_COUNTER_LOOKUPS(counter, AGENTCG_COUNTERS)
AGENTCG_COUNTER_LOOKUPS(bpf_stat, AGENTCG_BPF_STATS)
AGENTCG_COUNTER_LOOKUPS(workload_counter, AGENTCG_WORKLOAD_COUNTERS)
#undef AGENTCG_COUNTER_LOOKUPS
#undef AGENTCG_X_NAME
#undef AGENTCG_X_HELP
#endif

#endif /* AGENTCG_COUNTERS_H */
