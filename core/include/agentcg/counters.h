/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The CPU policy's counters: ONE X-macro list with explicit numbers, from
 * which the BPF per-CPU stats array, the simulator's results.json
 * "counters" object, the Prometheus names (agentcg_<name>_total) and the
 * Python constants are all generated, so they cannot drift apart.
 *
 * Invariants: numbers are dense from 0, never reused or renumbered (append
 * only); there are at most 32 so that a core/ entry point can report the
 * counters it bumped as a u32 event mask (bit N = counter N), which the
 * caller turns into increments (BPF: its per-CPU stats map; simulator:
 * SchedContext::count()).
 *
 * Who uses it: core/include/agentcg/{flatcg,agentcg}.h return event masks;
 * sim/cpu/scx_class.cc, bpf/agentcg.bpf.c and live/ turn them into counts.
 *
 * C99, BPF-safe.
 */
#ifndef AGENTCG_COUNTERS_H
#define AGENTCG_COUNTERS_H

#include "agentcg/types.h"

/* X(number, name, help) */
#define AGENTCG_COUNTERS(X)                                                              \
	X(0, new_steps, "new agent steps detected (new cgroup, or re-activated after idling)") \
	X(1, boosts_granted, "startup boosts granted")                                   \
	X(2, boosts_denied, "new steps refused a boost (budget spent or fork storm)")   \
	X(3, wakeup_boosts, "wakeups of I/O-bound groups given a vtime credit")          \
	X(4, fork_storms, "fork storms detected")                                        \
	X(5, forks, "forks seen (init_task with fork)")                                  \
	X(6, penalties_applied, "memory penalty raised one step")                        \
	X(7, penalties_released, "memory penalty lowered one step")                      \
	X(8, throttles, "cpu.max quota ran out (group throttled)")                       \
	X(9, preemptions, "running tasks preempted by a boosted wakeup")                 \
	X(10, min_slice_deferrals, "boost preemptions deferred until min_slice ran")    \
	X(11, lag_clamps, "idle groups whose vtime lag was bounded on wakeup")           \
	X(12, io_bound_groups, "groups classified I/O-bound (transitions)")

enum agentcg_counter {
#define AGENTCG_X_ENUM(num, name, help) AGENTCG_C_##name = num,
	AGENTCG_COUNTERS(AGENTCG_X_ENUM)
#undef AGENTCG_X_ENUM
	AGENTCG_NR_COUNTERS = 13,
};

/* The event-mask bit of a counter. */
#define AGENTCG_EV(name) (1u << AGENTCG_C_##name)

#if !defined(__bpf__)
/* Name of counter `id` ("new_steps"), or "" when out of range (C++/user space only). */
static inline const char *agentcg_counter_name(u32 id)
{
	switch (id) {
#define AGENTCG_X_NAME(num, name, help) \
	case num:                       \
		return #name;
		AGENTCG_COUNTERS(AGENTCG_X_NAME)
#undef AGENTCG_X_NAME
	}
	return "";
}

static inline const char *agentcg_counter_help(u32 id)
{
	switch (id) {
#define AGENTCG_X_HELP(num, name, help) \
	case num:                       \
		return help;
		AGENTCG_COUNTERS(AGENTCG_X_HELP)
#undef AGENTCG_X_HELP
	}
	return "";
}
#endif

#endif /* AGENTCG_COUNTERS_H */
