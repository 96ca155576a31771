/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Strategies (strategies design): per-workload rules pushed at run time, the seed's
 * PID-level {priority, execution_time, pid} generalised. A strategy is a
 * selector (resolved in user space: live/strategy/, sim/strategy/) and this
 * action, which the scheduler reads from two maps on its hot path:
 * per PID (a PID rule) and per cgroup id; a PID rule wins over its
 * cgroup's rule. Removing the map entry restores the default behaviour,
 * because every function here is the identity for a zero action.
 *
 * C99, BPF-safe: no I/O, no allocation, no globals, no floating point,
 * bounded; called by bpf/agentcg.bpf.c (enqueue: slice and vtime credit;
 * stopping: charge) and by the simulator's scx class through the same
 * functions, so a strategy tried in the simulator means the same live.
 *
 * Worked example: cgroups a and b, weight 100 each, one CPU-bound task each
 * on one CPU. A strategy {weight_pct: 300} on a charges a's cgroup vtime
 * 100/300 of what it ran, so a gets 3/4 of the CPU and b 1/4, as if a's
 * weight were 300. A strategy {priority_boost: 2} on a PID puts that task
 * 2 base slices ahead of its cgroup's other tasks at each enqueue (within
 * the cgroup: the cgroup's share is unchanged, as the seed's priority that
 * orders tasks, not groups). {slice_ns: 1000000} gives 1 ms slices (the
 * seed's execution_time); latency_class LOW also halves the slice and
 * grants one base slice of wakeup credit, BATCH doubles the slice.
 *
 * Limitations: weight_pct scales what a cgroup is charged, so it composes
 * multiplicatively with cpu.weight and mem_penalty but is not visible in
 * cpu.weight; the vtime credit is bounded by the caller's lag bound.
 */
#ifndef AGENTCG_STRATEGY_H
#define AGENTCG_STRATEGY_H

#include "agentcg/types.h"

enum agentcg_latency_class {
	AGENTCG_LAT_NORMAL = 0,
	AGENTCG_LAT_LOW = 1,   /* latency-sensitive: shorter slice, wakeup credit */
	AGENTCG_LAT_BATCH = 2, /* throughput: longer slice, no credit */
};

#define AGENTCG_STRATEGY_MAX_BOOST 16
#define AGENTCG_STRATEGY_MIN_WEIGHT_PCT 1
#define AGENTCG_STRATEGY_MAX_WEIGHT_PCT 10000
#define AGENTCG_STRATEGY_MIN_SLICE_NS 100000ULL     /* 100 us */
#define AGENTCG_STRATEGY_MAX_SLICE_NS 1000000000ULL /* 1 s */

/* Map value (both maps); fixed layout, no padding (shared with BPF). */
struct agentcg_strategy_action {
	u32 priority_boost; /* 0 = none; else base slices of vtime credit per enqueue */
	u32 weight_pct;     /* 100 = unchanged; 0 is read as 100 */
	u64 slice_ns;       /* 0 = the scheduler's own slice */
	u32 latency_class;  /* enum agentcg_latency_class */
	u32 strategy_id;    /* which strategy (for stats and the resolved list) */
};

static inline u32 agentcg_strategy_weight_pct(const struct agentcg_strategy_action *a)
{
	u32 w;

	if (!a || !a->weight_pct)
		return 100;
	w = a->weight_pct;
	if (w < AGENTCG_STRATEGY_MIN_WEIGHT_PCT)
		w = AGENTCG_STRATEGY_MIN_WEIGHT_PCT;
	if (w > AGENTCG_STRATEGY_MAX_WEIGHT_PCT)
		w = AGENTCG_STRATEGY_MAX_WEIGHT_PCT;
	return w;
}

/* The slice to use instead of `dflt_ns`. */
static inline u64 agentcg_strategy_slice_ns(const struct agentcg_strategy_action *a, u64 dflt_ns)
{
	u64 s;

	if (!a)
		return dflt_ns;
	s = a->slice_ns ? a->slice_ns : dflt_ns;
	if (a->latency_class == AGENTCG_LAT_LOW)
		s /= 2;
	else if (a->latency_class == AGENTCG_LAT_BATCH)
		s *= 2;
	if (s < AGENTCG_STRATEGY_MIN_SLICE_NS)
		s = AGENTCG_STRATEGY_MIN_SLICE_NS;
	if (s > AGENTCG_STRATEGY_MAX_SLICE_NS)
		s = AGENTCG_STRATEGY_MAX_SLICE_NS;
	return s;
}

/* Task vtime credit at enqueue (subtract from the task's vtime, bounded by
 * the caller's lag bound). */
static inline u64 agentcg_strategy_vtime_credit_ns(const struct agentcg_strategy_action *a,
						   u64 base_slice_ns)
{
	u64 boost;

	if (!a)
		return 0;
	boost = a->priority_boost;
	if (boost > AGENTCG_STRATEGY_MAX_BOOST)
		boost = AGENTCG_STRATEGY_MAX_BOOST;
	if (a->latency_class == AGENTCG_LAT_LOW)
		boost += 1;
	return boost * base_slice_ns;
}

/* The queue share a cgroup's requests and charges use under its strategy:
 * qshare x weight_pct / 100. Scaling the share (not only the charge) keeps
 * the base rule consistent: the virtual length of a request
 * (agentcg_vlen()) and the cgroup's virtual time advance at the same
 * scaled rate (scaling only the charge left the deadlines at the
 * unscaled share). Measured, weight_pct 300 beside an equal sibling:
 * 0.75 of the machine in the simulator, 0.69 in the TCG VM with either
 * form (live_vm_strategy_push; the live gap is not explained yet). */
static inline u32 agentcg_strategy_qshare(const struct agentcg_strategy_action *a, u32 qshare)
{
	u32 w = agentcg_strategy_weight_pct(a);
	u64 q;

	if (w == 100)
		return qshare;
	q = (u64)qshare * w / 100;
	if (q > 0xffffffffULL)
		q = 0xffffffffULL;
	return q ? (u32)q : 1;
}

/* What a cgroup is charged for `ran_ns` of CPU under its strategy: less
 * for weight_pct > 100 (a larger share), more below. (The schedulers use
 * agentcg_strategy_qshare(), which has the same effect on the charge.) */
static inline u64 agentcg_strategy_charge_ns(const struct agentcg_strategy_action *a, u64 ran_ns)
{
	u32 w = agentcg_strategy_weight_pct(a);

	if (w == 100)
		return ran_ns;
	/* ran_ns < 2^44 (hours) keeps ran_ns * 100 far below 2^64 */
	return ran_ns * 100 / w;
}

#endif /* AGENTCG_STRATEGY_H */
