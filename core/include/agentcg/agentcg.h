/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * agentcg: the agent-aware features on top of flatcg (flatcg.h), after the
 * design in seed 000. Each feature has a flag in agentcg_tunables.features;
 * with all flags off every function here is a no-op and the policy is
 * flatcg.
 *
 * - mem_penalty: memory.events "high" rising -> penalty +1 (up to
 *   mem_penalty_max); no rise for mem_penalty_decay_sec -> -1. The group's
 *   effective weight is weight / (1 + penalty).
 * - auto_boost: a new step (a cgroup's first activation, or one after it
 *   idled > 2 x startup_boost_window_ms) gets a startup boost: for
 *   startup_boost_window_ms its effective vtime is cvtime - credit
 *   (credit <= startup_boost_vtime_ms), its tasks get boosted_slice_ms
 *   slices, and its wakeups may preempt (after min_slice). Credit comes from
 *   a per-cgroup token bucket (one full credit, refilled over
 *   AGENTCG_BOOST_REFILL_WINDOWS windows), so a group that keeps
 *   re-triggering cannot take the CPU.
 * - wakeup_boost: a group waking more than io_bound_wakeup_rate times per
 *   second, measured over a sliding 1 s window (two tumbling buckets,
 *   the older one weighted by its overlap), is I/O-bound; each of its
 *   wakeups gives it a vtime credit of wakeup_boost_vtime_ms for
 *   2 x wakeup_boost_vtime_ms.
 * - fork_aware: more than fork_storm_threshold forks within fork_window_sec
 *   (same sliding window) is a fork storm: effective weight / 4 until a
 *   whole window passes without the rate above the threshold, and no
 *   startup boost for the group while it storms.
 * - min_slice: a boosted wakeup does not preempt a task before it ran
 *   min_slice_us (it is deferred until then), unless that task blocks first.
 *
 * Corrections to the seed's pseudo-code (its intent is kept):
 * 1. effective_vtime() added the memory penalty to the ABSOLUTE vtime
 *    (vtime += vtime x penalty / 4): the offset grows with the age of the
 *    system, so a penalised group is starved ever longer. Here the penalty
 *    acts only through the weight (weight / (1 + penalty)), i.e. on the
 *    RATE at which vtime advances, which gives a bounded, stationary share.
 *    The seed also applied it twice (vtime and weight); once is the intent.
 * 2. The I/O window arithmetic `now - (last_wakeup_at - WINDOW)` is
 *    meaningless (it is always ~WINDOW and it was computed after
 *    last_wakeup_at = now), and the counter was reset only in stopping().
 *    Here: a sliding window of two tumbling buckets.
 * 3. sched_ext has no fork callback; forks arrive in ops.init_task() with
 *    args->fork, so agentcg_on_fork() is called from there.
 * 4. The seed's startup boost could re-trigger without limit (every idle
 *    gap > 2 windows), and forked tasks of a storm would have been boosted:
 *    the boost is now bounded by a per-cgroup budget and refused (and an
 *    active one cancelled) while the group storms.
 * 5. The seed's fork counter reset only when no fork happened for a whole
 *    window and then compared a running count, so a steady 33 forks/s was a
 *    storm forever and 32-per-window bursts straddling a reset were never
 *    one; the sliding window measures the rate.
 * 6. The seed's is_new_step() measured idle time from the last time the
 *    group RAN, so a group waiting long for the CPU was taken for a new
 *    step; idle time is measured from when it last had no runnable task.
 * 7. The memory monitor in the seed treated the first reading of
 *    memory.events as a rise (a daemon started on a busy machine penalised
 *    every group once) and a counter reset (cgroup re-created) as no rise;
 *    the first reading and a decrease now only set the baseline.
 *
 * Worked example (defaults, both groups weight 100): group S forks 40
 * tasks in 200 ms: the 33rd fork within a second marks a storm, S's
 * effective weight drops to 25, so a busy victim group V gets
 * 100 / (100 + 25) = 4/5 of the CPU instead of 1/2; one second after S's
 * fork rate drops to <= 32/s, S gets weight 100 back.
 *
 * Limitations: the boost and wakeup credits change the ORDER of groups,
 * never their cvtime, so a boosted group pays the credit back later (a
 * boost moves CPU time earlier, it does not add any); a BPF implementation
 * that keeps groups in an rbtree keyed by cvtime must insert them at
 * agentcg_eff_vtime() and re-insert when a boost ends.
 *
 * Who calls it: sim/cpu/scx_class.cc (simulator), bpf/agentcg.bpf.c (live),
 * live/ agentcgroupd (agentcg_mem_penalty_update()).
 *
 * C99, BPF-safe: no libc, no floating point, no allocation, no globals,
 * bounded loops; every entry point takes state pointers, the tunables and
 * now_ns, and returns a decision or an event mask (counters.h).
 */
#ifndef AGENTCG_AGENTCG_H
#define AGENTCG_AGENTCG_H

#include "agentcg/counters.h"
#include "agentcg/flatcg.h"
#include "agentcg/tunables.h"
#include "agentcg/types.h"

/* A full startup-boost credit refills over this many boost windows (1 s by default). */
#define AGENTCG_BOOST_REFILL_WINDOWS 10
/* The I/O-bound rate is measured over this window (rate is per second). */
#define AGENTCG_IO_WINDOW_NS AGENTCG_NSEC_PER_SEC
/* A storming group's weight is divided by this. */
#define AGENTCG_STORM_WEIGHT_DIV 4

static inline bool agentcg_feat(const struct agentcg_tunables *t, u32 f)
{
	return (t->features & f) != 0;
}

static inline u64 agentcg_base_slice_ns(const struct agentcg_tunables *t)
{
	return (u64)t->base_slice_ms * AGENTCG_NSEC_PER_MSEC;
}

/* ---- memory penalty (the daemon's logic; the simulator runs the same) ---- */

/* Per monitored cgroup, owned by the memory monitor (agentcgroupd or the sim). */
struct agentcg_mem_state {
	u64 last_high;      /* memory.events high count at the last poll */
	u64 last_change_ns; /* last rise or decay step */
	u32 penalty;        /* 0..mem_penalty_max */
	u32 primed;         /* a baseline reading exists */
};

/*
 * One poll of memory.events: `high_events` is the current "high" count.
 * Returns an event mask (penalties_applied / penalties_released); the new
 * penalty is s->penalty, which the caller writes to agentcg_cgrp.mem_penalty.
 * With the feature off the penalty stays 0.
 */
static inline u32 agentcg_mem_penalty_update(struct agentcg_mem_state *s, u64 high_events,
					     u64 now_ns, const struct agentcg_tunables *t)
{
	u32 ev = 0;
	u64 decay_ns = (u64)t->mem_penalty_decay_sec * AGENTCG_NSEC_PER_SEC;

	if (!agentcg_feat(t, AGENTCG_F_MEM_PENALTY)) {
		s->penalty = 0;
		s->last_high = high_events;
		s->primed = 1;
		s->last_change_ns = now_ns;
		return 0;
	}
	if (!s->primed || high_events < s->last_high) {
		/* correction 7: first reading / counter reset = baseline, not a rise */
		s->primed = 1;
		s->last_high = high_events;
		s->last_change_ns = now_ns;
		return 0;
	}
	if (high_events > s->last_high) {
		if (s->penalty < t->mem_penalty_max) {
			s->penalty++;
			ev |= AGENTCG_EV(penalties_applied);
		}
		s->last_change_ns = now_ns;
	} else if (s->penalty > 0 && now_ns - s->last_change_ns >= decay_ns) {
		s->penalty--;
		s->last_change_ns = now_ns;
		ev |= AGENTCG_EV(penalties_released);
	}
	if (s->penalty > t->mem_penalty_max)
		s->penalty = t->mem_penalty_max;
	s->last_high = high_events;
	return ev;
}

/* ---- effective weight ---- */

/* cpu.weight after the memory penalty and the fork-storm divisor (>= 1). */
static inline u32 agentcg_eff_weight(const struct agentcg_cgrp *cg, const struct agentcg_tunables *t)
{
	u32 w = cg->weight ? cg->weight : AGENTCG_WEIGHT_DFL;

	if (agentcg_feat(t, AGENTCG_F_MEM_PENALTY) && cg->mem_penalty) {
		u32 p = cg->mem_penalty < t->mem_penalty_max ? cg->mem_penalty : t->mem_penalty_max;

		w /= 1 + p;
	}
	if (agentcg_feat(t, AGENTCG_F_FORK_AWARE) && cg->storm)
		w /= AGENTCG_STORM_WEIGHT_DIV;
	return w ? w : 1;
}

/*
 * Recomputes cg's effective weight and applies it (parent == NULL for the
 * root). Call after mem_penalty, storm or weight changed; returns true if the
 * shares changed.
 */
static inline bool agentcg_sync_weight(struct agentcg_cgrp *cg, struct agentcg_cgrp *parent,
				       struct agentcg_global *g, const struct agentcg_tunables *t)
{
	return agentcg_set_eff_weight(cg, parent, agentcg_eff_weight(cg, t), g);
}

/* ---- sliding-window rate (two tumbling buckets) ---- */

/*
 * Advances the window [*start, *start + win) to contain now_ns, shifting
 * counts into *prev. Returns nothing; afterwards *cur counts events in the
 * current bucket.
 */
static inline void agentcg_win_roll(u64 *start, u32 *cur, u32 *prev, u64 win_ns, u64 now_ns)
{
	if (now_ns - *start < win_ns)
		return;
	if (now_ns - *start < 2 * win_ns) {
		*prev = *cur;
		*start += win_ns;
	} else {
		/* a whole window without events */
		*prev = 0;
		*start = now_ns;
	}
	*cur = 0;
}

/* Events in the last win_ns: cur + prev x (part of the previous bucket still inside). */
static inline u64 agentcg_win_count(u64 start, u32 cur, u32 prev, u64 win_ns, u64 now_ns)
{
	u64 into = now_ns - start; /* < win_ns after a roll */

	if (into >= win_ns)
		return cur;
	return cur + (u64)prev * (win_ns - into) / win_ns;
}

/* ---- fork storms (fork_aware) ---- */

static inline u64 agentcg_fork_window_ns(const struct agentcg_tunables *t)
{
	return (u64)t->fork_window_sec * AGENTCG_NSEC_PER_SEC;
}

/*
 * Ages the fork-storm state without a fork (call from a timer or any hook).
 * Returns true if the storm ended (the caller re-syncs the weight).
 */
static inline bool agentcg_fork_tick(struct agentcg_cgrp *cg, u64 now_ns,
				     const struct agentcg_tunables *t)
{
	u64 win = agentcg_fork_window_ns(t);

	if (cg->seen)
		agentcg_win_roll(&cg->fk_win_start_ns, &cg->fk_cur, &cg->fk_prev, win, now_ns);
	if (cg->storm && now_ns - cg->storm_last_ns >= win) {
		cg->storm = 0;
		return true;
	}
	return false;
}

/*
 * A task of cg was forked (ops.init_task with args->fork; correction 3).
 * Returns an event mask (forks, fork_storms); the caller re-syncs the
 * weight when fork_storms is set.
 */
static inline u32 agentcg_on_fork(struct agentcg_cgrp *cg, u64 now_ns,
				  const struct agentcg_tunables *t)
{
	u32 ev = AGENTCG_EV(forks);
	u64 win = agentcg_fork_window_ns(t);

	if (!agentcg_feat(t, AGENTCG_F_FORK_AWARE))
		return ev;
	if (!cg->fk_win_start_ns && !cg->fk_cur && !cg->fk_prev)
		cg->fk_win_start_ns = now_ns;
	agentcg_win_roll(&cg->fk_win_start_ns, &cg->fk_cur, &cg->fk_prev, win, now_ns);
	cg->fk_cur++;
	if (agentcg_win_count(cg->fk_win_start_ns, cg->fk_cur, cg->fk_prev, win, now_ns) >
	    t->fork_storm_threshold) {
		cg->storm_last_ns = now_ns;
		if (!cg->storm) {
			cg->storm = 1;
			ev |= AGENTCG_EV(fork_storms);
			/* correction 4: a storming group loses its startup boost */
			cg->boost_until_ns = now_ns;
		}
	}
	return ev;
}

/* ---- startup boost (auto_boost) ---- */

static inline u64 agentcg_boost_window_ns(const struct agentcg_tunables *t)
{
	return (u64)t->startup_boost_window_ms * AGENTCG_NSEC_PER_MSEC;
}

static inline bool agentcg_boosted(const struct agentcg_cgrp *cg, u64 now_ns,
				   const struct agentcg_tunables *t)
{
	return agentcg_feat(t, AGENTCG_F_AUTO_BOOST) && cg->boost_credit_ns &&
	       agentcg_before(now_ns, cg->boost_until_ns);
}

static inline bool agentcg_wake_credited(const struct agentcg_cgrp *cg, u64 now_ns,
					 const struct agentcg_tunables *t)
{
	return agentcg_feat(t, AGENTCG_F_WAKEUP_BOOST) && cg->io_bound &&
	       agentcg_before(now_ns, cg->wake_credit_until_ns);
}

/* Refills the boost budget: one full credit per AGENTCG_BOOST_REFILL_WINDOWS windows. */
static inline void agentcg_boost_refill(struct agentcg_cgrp *cg, u64 now_ns,
					const struct agentcg_tunables *t)
{
	u64 full = (u64)t->startup_boost_vtime_ms * AGENTCG_NSEC_PER_MSEC;
	u64 period = agentcg_boost_window_ns(t) * AGENTCG_BOOST_REFILL_WINDOWS;
	u64 add;

	add = period ? (now_ns - cg->boost_budget_at_ns) * full / period : full;
	cg->boost_budget_ns = full - cg->boost_budget_ns <= add ? full : cg->boost_budget_ns + add;
	cg->boost_budget_at_ns = now_ns;
}

/*
 * cg's own tasks went from none runnable to one runnable (call BEFORE the
 * flatcg activation so the lag bound sees the new step). Detects a new step
 * and grants the startup boost. Returns an event mask.
 */
static inline u32 agentcg_on_runnable(struct agentcg_cgrp *cg, const struct agentcg_global *g,
				      u64 now_ns, const struct agentcg_tunables *t)
{
	u32 ev = 0;
	bool new_step;
	u64 window = agentcg_boost_window_ns(t);

	if (!cg->seen) {
		cg->seen = 1;
		cg->first_seen_ns = now_ns;
		/* a new group starts with a full boost budget */
		cg->boost_budget_ns = (u64)t->startup_boost_vtime_ms * AGENTCG_NSEC_PER_MSEC;
		cg->boost_budget_at_ns = now_ns;
		cg->cvtime = g->cvtime_now;
		cg->fk_win_start_ns = now_ns;
		cg->wk_win_start_ns = now_ns;
		new_step = true;
	} else {
		/* correction 6: idle = no runnable task, not "did not run" */
		new_step = now_ns - cg->last_idle_ns > 2 * window;
	}
	if (!new_step)
		return 0;
	ev |= AGENTCG_EV(new_steps);
	if (!agentcg_feat(t, AGENTCG_F_AUTO_BOOST))
		return ev;
	agentcg_fork_tick(cg, now_ns, t);
	if (cg->storm && agentcg_feat(t, AGENTCG_F_FORK_AWARE))
		return ev | AGENTCG_EV(boosts_denied);
	agentcg_boost_refill(cg, now_ns, t);
	cg->boost_credit_ns = cg->boost_budget_ns;
	if (!cg->boost_credit_ns)
		return ev | AGENTCG_EV(boosts_denied);
	cg->boost_budget_ns = 0;
	cg->boost_until_ns = now_ns + window;
	return ev | AGENTCG_EV(boosts_granted);
}

/* cg's own tasks went from one runnable to none. */
static inline void agentcg_on_quiescent(struct agentcg_cgrp *cg, u64 now_ns)
{
	cg->last_idle_ns = now_ns;
}

/* ---- wakeup boost (wakeup_boost) ---- */

/*
 * A task of cg woke up (SCX_ENQ_WAKEUP). Updates the I/O-bound
 * classification and grants the wakeup credit. Returns an event mask.
 */
static inline u32 agentcg_on_wakeup(struct agentcg_cgrp *cg, u64 now_ns,
				    const struct agentcg_tunables *t)
{
	u32 ev = 0;
	u64 rate;
	u32 was = cg->io_bound;

	if (!agentcg_feat(t, AGENTCG_F_WAKEUP_BOOST))
		return 0;
	agentcg_win_roll(&cg->wk_win_start_ns, &cg->wk_cur, &cg->wk_prev, AGENTCG_IO_WINDOW_NS,
			 now_ns);
	cg->wk_cur++;
	rate = agentcg_win_count(cg->wk_win_start_ns, cg->wk_cur, cg->wk_prev,
				 AGENTCG_IO_WINDOW_NS, now_ns);
	cg->io_bound = rate > t->io_bound_wakeup_rate;
	if (cg->io_bound && !was)
		ev |= AGENTCG_EV(io_bound_groups);
	if (cg->io_bound) {
		/* seed: the credit lasts 2 x wakeup_boost_vtime after the wakeup */
		cg->wake_credit_until_ns =
			now_ns + 2 * (u64)t->wakeup_boost_vtime_ms * AGENTCG_NSEC_PER_MSEC;
		ev |= AGENTCG_EV(wakeup_boosts);
	}
	return ev;
}

/* ---- ordering, slices, preemption ---- */

/*
 * The vtime the group is ordered by: cvtime minus the active credits. The
 * credits are bounded (startup_boost_vtime_ms + wakeup_boost_vtime_ms) and
 * never change cvtime itself (correction 1 and Limitations).
 */
static inline u64 agentcg_eff_vtime(const struct agentcg_cgrp *cg, u64 now_ns,
				    const struct agentcg_tunables *t)
{
	u64 v = cg->cvtime;

	if (agentcg_boosted(cg, now_ns, t))
		v -= cg->boost_credit_ns;
	if (agentcg_wake_credited(cg, now_ns, t))
		v -= (u64)t->wakeup_boost_vtime_ms * AGENTCG_NSEC_PER_MSEC;
	return v;
}

/* Whether a task of cg dispatched now runs with boost privileges. */
static inline bool agentcg_has_boost(const struct agentcg_cgrp *cg, u64 now_ns,
				     const struct agentcg_tunables *t)
{
	return agentcg_boosted(cg, now_ns, t) || agentcg_wake_credited(cg, now_ns, t);
}

/* The slice of a task dispatched from cg now. */
static inline u64 agentcg_slice_ns(const struct agentcg_cgrp *cg, u64 now_ns,
				   const struct agentcg_tunables *t)
{
	if (agentcg_has_boost(cg, now_ns, t))
		return (u64)t->boosted_slice_ms * AGENTCG_NSEC_PER_MSEC;
	return agentcg_base_slice_ns(t);
}

enum agentcg_preempt_verdict {
	AGENTCG_PREEMPT_NO = 0,
	AGENTCG_PREEMPT_NOW = 1,
	AGENTCG_PREEMPT_AT = 2, /* not before at_ns (min_slice) */
};

struct agentcg_preempt {
	u32 verdict; /* enum agentcg_preempt_verdict */
	u64 at_ns;
};

/*
 * A task of `waker` became runnable and no CPU is idle: may it preempt
 * `victim_task`, which runs a task of `victim`? Only a group holding a
 * boost may preempt, only a task of another group that holds none, and only
 * if the waker is ordered first (so a group that overran its share cannot
 * preempt even while boosted). min_slice defers it until the victim ran
 * min_slice_us.
 */
static inline struct agentcg_preempt agentcg_should_preempt(const struct agentcg_cgrp *waker,
							    const struct agentcg_cgrp *victim,
							    const struct agentcg_task *victim_task,
							    u64 now_ns,
							    const struct agentcg_tunables *t)
{
	struct agentcg_preempt r = {AGENTCG_PREEMPT_NO, 0};
	u64 ran;
	u64 min_ns = (u64)t->min_slice_us * AGENTCG_NSEC_PER_USEC;

	if (waker == victim || victim_task->boosted || !agentcg_has_boost(waker, now_ns, t))
		return r;
	if (!agentcg_before(agentcg_eff_vtime(waker, now_ns, t), agentcg_eff_vtime(victim, now_ns, t)))
		return r;
	/* a victim still in its context switch (started_at in the future) ran 0 */
	ran = agentcg_before(now_ns, victim_task->started_at_ns) ? 0 :
								      now_ns - victim_task->started_at_ns;
	if (agentcg_feat(t, AGENTCG_F_MIN_SLICE) && ran < min_ns) {
		r.verdict = AGENTCG_PREEMPT_AT;
		r.at_ns = victim_task->started_at_ns + min_ns;
		return r;
	}
	r.verdict = AGENTCG_PREEMPT_NOW;
	r.at_ns = now_ns;
	return r;
}

#endif /* AGENTCG_AGENTCG_H */
