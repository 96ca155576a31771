/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CFS bandwidth control (cpu.max) as pure, BPF-safe policy code: used by the
 * simulator's CFS baseline, by the flatcg/agentcg classes, and by the live
 * sched_ext scheduler, so that Docker/Kubernetes CPU limits keep working
 * under agentcg.
 *
 * Model (kernel/sched/fair.c, "CPU bandwidth control for CFS", Turner et
 * al. 2010; bandwidth design): each limited cgroup has a global pool (struct
 * cfs_bandwidth) refilled to `quota` every `period`. CPUs do not charge the
 * pool directly: a CPU running the group's tasks holds a local runtime
 * (cfs_rq->runtime_remaining) drawn from the pool in slices of
 * sched_cfs_bandwidth_slice (5 ms). When the local runtime is spent and the
 * pool is empty the group is throttled on that CPU until the next refill.
 *
 * Worked example: quota 50 ms, period 100 ms, one CPU-bound task. At t=0 the
 * CPU takes 5 ms from the pool (45 left), runs, takes 5 more, ... after
 * 50 ms the pool is empty and the local runtime reaches 0: throttled
 * (nr_throttled=1) until t=100 ms (throttled 50 ms), where the pool refills
 * (nr_periods=1) and the group runs again: 50 % of one CPU.
 *
 * cpu.max.burst (kernel 5.14): unused quota carries over into the next
 * period up to `burst` (runtime = min(runtime + quota, quota + burst) at
 * each refill); a period that consumed more than quota counts in nr_bursts
 * and its excess in burst_ns.
 *
 * cpu.stat consistency: nr_periods, nr_throttled, throttled_ns and the
 * burst counters are all updated at the refill (the kernel's period timer
 * does the same), so nr_throttled <= nr_periods holds at every instant.
 *
 * Hierarchy: the caller keeps one pool per limited cgroup and charges every
 * limited level of a task's ancestor chain; a throttled level stops its
 * whole subtree (the callers: bpf/agentcg.bpf.c, sim/cpu/scx_class.cc).
 *
 * Limitations: expiry of local runtime (removed from the kernel in 5.4) is
 * not modelled; on going idle a CPU returns all of its
 * local runtime to the pool (the kernel keeps 1 ms, min_cfs_rq_runtime, and
 * returns the rest through its slack timer), so quotas are enforced a little
 * more tightly than in the kernel when tasks migrate.
 */
#ifndef AGENTCG_BANDWIDTH_H
#define AGENTCG_BANDWIDTH_H

#include "agentcg/types.h"

#define AGENTCG_BW_DEFAULT_SLICE_NS 5000000ULL /* sched_cfs_bandwidth_slice_us = 5000 */

/* The global pool of one cgroup (struct cfs_bandwidth). */
struct agentcg_bw_pool {
	u64 quota_ns;  /* 0 = unlimited ("max") */
	u64 period_ns;
	u64 runtime_ns; /* left in the current period */
	/* cpu.stat-like counters */
	u64 nr_periods;
	u64 nr_throttled;
	u64 throttled_ns;
	u64 throttled_since_ns; /* valid while throttled */
	u32 throttled;          /* 1 while the pool is empty and a CPU wanted more */
	u32 active;             /* runtime was drawn in the current period */
	u64 burst_ns;           /* cpu.max.burst */
	u64 used_ns;            /* drawn in the current period, net of returns */
	u64 nr_bursts;
	u64 burst_time_ns;
};

static inline void agentcg_bw_init(struct agentcg_bw_pool *p, u64 quota_ns, u64 period_ns)
{
	p->quota_ns = quota_ns;
	p->period_ns = period_ns ? period_ns : 100000000ULL;
	p->runtime_ns = quota_ns;
	p->nr_periods = 0;
	p->nr_throttled = 0;
	p->throttled_ns = 0;
	p->throttled_since_ns = 0;
	p->throttled = 0;
	p->active = 0;
	p->burst_ns = 0;
	p->used_ns = 0;
	p->nr_bursts = 0;
	p->burst_time_ns = 0;
}

/* cpu.max.burst: how much unused quota may carry into the next period. */
static inline void agentcg_bw_set_burst(struct agentcg_bw_pool *p, u64 burst_ns)
{
	p->burst_ns = burst_ns;
}

static inline bool agentcg_bw_limited(const struct agentcg_bw_pool *p)
{
	return p->quota_ns != 0;
}

/*
 * Tops a CPU's local runtime up to at least one slice from the pool
 * (assign_cfs_rq_runtime). Returns true when the local runtime is positive
 * afterwards; false means the group must be throttled on this CPU, and the
 * pool is marked throttled (counted in nr_throttled at the next refill).
 */
static inline bool agentcg_bw_acquire(struct agentcg_bw_pool *p, s64 *local_ns, u64 slice_ns,
				      u64 now_ns)
{
	u64 want, amount;

	if (!agentcg_bw_limited(p))
		return true;
	if (*local_ns > 0 && (u64)*local_ns >= slice_ns)
		return true;
	want = (u64)((s64)slice_ns - *local_ns);
	amount = want < p->runtime_ns ? want : p->runtime_ns;
	p->runtime_ns -= amount;
	p->used_ns += amount;
	if (amount)
		p->active = 1;
	*local_ns += (s64)amount;
	if (*local_ns > 0)
		return true;
	if (!p->throttled) {
		p->throttled = 1;
		p->throttled_since_ns = now_ns;
	}
	return false;
}

/* Charges `ran_ns` of execution to a CPU's local runtime (account_cfs_rq_runtime). */
static inline void agentcg_bw_charge(struct agentcg_bw_pool *p, s64 *local_ns, u64 ran_ns)
{
	if (agentcg_bw_limited(p))
		*local_ns -= (s64)ran_ns;
}

/* A CPU stops running the group: hand its unused local runtime back. */
static inline void agentcg_bw_return(struct agentcg_bw_pool *p, s64 *local_ns)
{
	if (!agentcg_bw_limited(p))
		return;
	if (*local_ns > 0) {
		p->runtime_ns += (u64)*local_ns;
		p->used_ns = p->used_ns > (u64)*local_ns ? p->used_ns - (u64)*local_ns : 0;
	} else if (*local_ns < 0) {
		/* an overrun (the last slice ran past the local runtime) is
		 * paid from the pool, never forgiven */
		u64 debt = (u64)(-*local_ns);
		p->runtime_ns = debt < p->runtime_ns ? p->runtime_ns - debt : 0;
		p->used_ns += debt;
	}
	if (p->runtime_ns > p->quota_ns + p->burst_ns)
		p->runtime_ns = p->quota_ns + p->burst_ns;
	*local_ns = 0;
}

/*
 * The period timer (do_sched_cfs_period_timer): refill the pool and
 * unthrottle. Returns true if the group was throttled (callers then kick
 * CPUs so that its tasks run again). A period counts in nr_periods when the
 * group drew runtime in it or was throttled through it, as the kernel's
 * timer only runs while the group is active; a throttled period counts in
 * nr_throttled at the same moment, so nr_throttled <= nr_periods.
 */
static inline bool agentcg_bw_refill(struct agentcg_bw_pool *p, u64 now_ns)
{
	bool was_throttled = p->throttled != 0;

	if (!agentcg_bw_limited(p))
		return false;
	if (p->active || p->throttled)
		p->nr_periods++;
	if (p->throttled) {
		p->nr_throttled++;
		p->throttled_ns += agentcg_elapsed(now_ns, p->throttled_since_ns);
		p->throttled = 0;
	}
	if (p->used_ns > p->quota_ns) {
		p->nr_bursts++;
		p->burst_time_ns += p->used_ns - p->quota_ns;
	}
	/* burst: unused quota carries over, up to quota + burst */
	p->runtime_ns += p->quota_ns;
	if (p->runtime_ns > p->quota_ns + p->burst_ns)
		p->runtime_ns = p->quota_ns + p->burst_ns;
	p->used_ns = 0;
	p->active = 0;
	return was_throttled;
}

#endif /* AGENTCG_BANDWIDTH_H */
