/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * flatcg: hierarchical CPU weights flattened into one level of cgroup
 * virtual time, after the kernel's tools/sched_ext/scx_flatcg.bpf.c.
 *
 * Every cgroup has a hierarchical share (hweight, fixed point, AGENTCG_ONE
 * = 100 % of the machine):
 *
 *     share(root) = ONE
 *     share(c)    = share(parent) x eff_weight(c) / (sum of eff_weight of
 *                   the parent's ACTIVE children + own-task weight of parent)
 *
 * A cgroup is active while it or a descendant has runnable (queued or
 * running) tasks. Shares are recomputed lazily: every change of the active
 * set or of an active cgroup's effective weight bumps a global generation
 * (agentcg_global.hweight_gen) and a cgroup recomputes its share when its
 * copy of the generation is stale (scx_flatcg's cgrp_refresh_hweight()).
 *
 * Only cgroups with queued tasks are scheduled, all in one ordering by
 * cgroup vtime (cvtime), which advances by runtime x ONE / share: a group
 * with 1/3 of the machine ages three times faster than one with all of it,
 * so picking the smallest cvtime gives each group its share. Inside a
 * cgroup, tasks are ordered by task vtime advancing by runtime x 100 /
 * task weight.
 *
 * Lag bound: a group that idled must not come back with a vtime far in the
 * past (it would monopolise the CPUs until it caught up), so on activation
 * its cvtime is raised to at least cvtime_now - base slice, where cvtime_now
 * follows the cvtime of the groups being picked (scx_flatcg's
 * cgrp_enqueued(): "Limit the amount of budget that an idling cgroup can
 * accumulate to one slice"). Tasks inside a group get the same bound against
 * the group's tvtime_now.
 *
 * Worked example: /a (weight 100) and /b (weight 200) under the root, both
 * busy: child_weight_sum(root) = 300, share(a) = ONE x 100/300 = 349525,
 * share(b) = 699050. Running 3 ms advances a by 3 ms x ONE/349525 = 9 ms of
 * cvtime and b by 4.5 ms, so at equal cvtime b ran twice as long: 1/3 : 2/3.
 * When /b goes idle, root's sum drops to 100, the generation is bumped and
 * /a's share becomes ONE.
 *
 * Tasks in a cgroup that also has active child cgroups (cgroup v2 allows
 * this only in the root) compete with those children as one child of
 * weight AGENTCG_OWN_TASKS_WEIGHT (like a nice-0 task in CFS).
 *
 * State ownership (BPF-safe): the caller owns one struct agentcg_global
 * (BPF: a one-entry array map), one struct agentcg_cgrp per cgroup (BPF:
 * cgroup storage or a hash map keyed by cgroup id) and one struct
 * agentcg_task per task (BPF: task storage), and passes pointers in. Walks
 * over the hierarchy take the chain of ancestors root..cgroup gathered by
 * the caller (BPF: bpf_cgroup_ancestor() per level), at most
 * AGENTCG_MAX_DEPTH long, so every loop is bounded.
 *
 * Who calls it: core/include/agentcg/agentcg.h (the features), the
 * simulator's class sim/cpu/scx_class.cc, and bpf/agentcg.bpf.c.
 *
 * The order in which groups run is the base rule's (eevdf.h: start tags
 * and virtual deadlines over one queue); this file provides the shares and
 * the cgroup vtime it orders by.
 *
 * Concurrency: the counters several CPUs change at once (activation
 * counts, active weight sums, cvtime, the generation) are updated with
 * atomic adds (AGENTCG_ATOMIC_ADD), so the BPF program needs no lock
 * (scx_flatcg serialises its tree with a spin lock). hweight/qshare are
 * recomputed with plain stores: two CPUs refreshing at once write the same
 * values. An eff_weight change racing with an activation of the same group
 * can leave its parent's sum off by the difference until the next flip.
 *
 * C99, BPF-safe: no libc, no floating point, no allocation, bounded loops.
 */
#ifndef AGENTCG_FLATCG_H
#define AGENTCG_FLATCG_H

#include "agentcg/tunables.h"
#include "agentcg/types.h"

#define AGENTCG_ONE (1u << 20)            /* share fixed point: 100 % */
#define AGENTCG_MAX_DEPTH 16              /* longest ancestor chain walked */
#define AGENTCG_OWN_TASKS_WEIGHT 100      /* tasks beside child cgroups */
#define AGENTCG_WEIGHT_DFL 100            /* cpu.weight default */
#define AGENTCG_FORK_RING 64              /* fork times kept per cgroup (agentcg.h, power of 2) */
#define AGENTCG_NSEC_PER_USEC 1000ULL
#define AGENTCG_NSEC_PER_MSEC 1000000ULL
#define AGENTCG_NSEC_PER_SEC 1000000000ULL

/* One per scheduler instance. */
struct agentcg_global {
	u64 hweight_gen; /* bumped when shares must be recomputed */
	u64 cvtime_now;  /* cvtime of the most recently picked group (monotonic) */
	u32 nr_cpus; /* set by the caller at start (agentcg.h's epoch cap; 0: no cap) */
	/* storm_reserve (agentcg.h agentcg_storm_may_take), caller-maintained:
	 * CPUs running a storming group's request (atomic in BPF), and the last
	 * wakeup of a task of any other group but the root (a plain store, at
	 * most once per AGENTCG_RESERVE_NOTE_NS) */
	u32 storm_cpus;
	u64 calm_wake_ns;
};

/* One per cgroup (flatcg part + the agentcg feature state, see agentcg.h). */
struct agentcg_cgrp {
	/* configuration */
	u32 weight;     /* cpu.weight, 1..10000 */
	u32 eff_weight; /* weight after penalties; what the parent's sum holds */

	/* hierarchy bookkeeping */
	u32 nr_runnable;      /* own tasks queued or running */
	u32 nr_active_children;
	u64 child_weight_sum; /* sum of eff_weight of active children */
	u64 hweight_gen;      /* generation hweight/qshare were computed at */
	u32 hweight;          /* share of this cgroup's subtree, AGENTCG_ONE = 100 % */
	u32 qshare;           /* share of this cgroup's own tasks */

	/* vtime */
	u64 cvtime;     /* cgroup vtime */
	u64 tvtime_now; /* vtime of the most recently picked own task */

	/* the base rule (eevdf.h) */
	u64 vq_tail;      /* virtual deadline of the last request queued (tag chain) */
	s64 vlag;         /* V - cvtime when the group went idle (clamped), restored on wakeup */
	u32 active_refs;  /* nr_runnable + nr_active_children, updated atomically (BPF) */
	u32 nr_queued;    /* requests in the shared queue (caller-maintained) */

	/* agentcg features (agentcg.h); zero = nothing happened yet */
	u64 first_seen_ns;    /* when its tasks first became runnable (0 = never) */
	u64 last_idle_ns;     /* when nr_runnable last dropped to 0 */
	u32 seen;             /* has ever been active */
	u32 mem_penalty;      /* 0..mem_penalty_max, written by the memory monitor */
	u64 boost_until_ns;   /* the service epoch (LAS credit) lasts while now < this */
	u64 boost_credit_ns;  /* the epoch's credit: ns of service served first */
	u64 las_cv0;          /* cvtime when the epoch started (attained = cvtime - las_cv0) */
	u64 las_vcap;         /* the epoch's quantum cap, virtual (0: none; agentcg_epoch_start) */
	u64 armed_at_ns;      /* activation after a quiet spell: a fork soon after is a new step */
	u32 armed;            /* the new-step detector is armed (agentcg.h) */
	u32 nr_tasks;         /* live tasks in the cgroup (agentcg_task_joined/left) */
	u32 step_floor;       /* nr_tasks when the current step began (resident tasks) */
	u32 fk_head;          /* next slot of fk_ring */
	u32 fk_n;             /* forks recorded in fk_ring (saturates at AGENTCG_FORK_RING) */
	u32 fk_ring[AGENTCG_FORK_RING]; /* times of the latest forks, ns >> 10 (wraps in 73 min) */
	u64 boost_budget_ns;  /* credit left to grant (token bucket) */
	u64 boost_budget_at_ns; /* when the bucket was last refilled */
	u64 wk_win_start_ns;  /* start of the current wakeup window */
	u32 wk_cur;           /* wakeups in the current window */
	u32 wk_prev;          /* wakeups in the previous window */
	u32 io_bound;
	u32 storm;            /* fork storm in progress */
	u64 wake_credit_until_ns; /* wakeup credit active while now < this */
	u64 storm_last_ns;    /* last time the fork rate was above the threshold */
	u64 lat_cv0;          /* cvtime at the latest activation after a quiet spell (latency) */
};

/* One per task. */
struct agentcg_task {
	u64 vtime;         /* task vtime inside its cgroup */
	u64 started_at_ns; /* when it last started running */
	u32 weight;        /* task weight on the cpu.weight scale (nice 0 = 100) */
	u32 boosted;       /* was dispatched from a boosted group */
};

/* Wrap-safe "a is before b" for vtimes and ns timestamps. */
static inline bool agentcg_before(u64 a, u64 b)
{
	return (s64)(a - b) < 0;
}

static inline void agentcg_cgrp_init(struct agentcg_cgrp *cg, u32 weight)
{
	/* Zero every field without memset (no libc under BPF). */
	struct agentcg_cgrp zero = {0};

	*cg = zero;
	cg->weight = weight ? weight : AGENTCG_WEIGHT_DFL;
	cg->eff_weight = cg->weight;
}

static inline void agentcg_task_init(struct agentcg_task *t, u32 weight)
{
	t->vtime = 0;
	t->started_at_ns = 0;
	t->weight = weight ? weight : AGENTCG_WEIGHT_DFL;
	t->boosted = 0;
}

static inline u32 agentcg_own_weight(const struct agentcg_cgrp *cg)
{
	return cg->nr_runnable ? AGENTCG_OWN_TASKS_WEIGHT : 0;
}

static inline bool agentcg_cgrp_active(const struct agentcg_cgrp *cg)
{
	return cg->nr_runnable > 0 || cg->nr_active_children > 0;
}

/* share x num / den, never 0 for an active node (a zero share would make vtime infinite). */
static inline u32 agentcg_scale_share(u32 share, u64 num, u64 den)
{
	u64 s;

	if (!den)
		return share;
	s = (u64)share * num / den;
	if (s > AGENTCG_ONE)
		s = AGENTCG_ONE;
	return s ? (u32)s : 1;
}

/*
 * Recomputes `child`'s share from its parent's (parent == NULL: child is the
 * root). The parent must be up to date (callers walk root -> leaf).
 */
static inline void agentcg_hweight_step(struct agentcg_cgrp *child,
					const struct agentcg_cgrp *parent,
					const struct agentcg_global *g)
{
	if (!parent) {
		child->hweight = AGENTCG_ONE;
	} else {
		u64 den = parent->child_weight_sum + agentcg_own_weight(parent);

		child->hweight = agentcg_scale_share(parent->hweight, child->eff_weight, den);
	}
	if (child->child_weight_sum)
		child->qshare = agentcg_scale_share(child->hweight, agentcg_own_weight(child),
						    child->child_weight_sum +
							    agentcg_own_weight(child));
	else
		child->qshare = child->hweight;
	child->hweight_gen = g->hweight_gen;
}

/*
 * Brings the shares of chain[0] (root) .. chain[n-1] up to date and returns
 * the queue share of chain[n-1]: the fraction of the machine its own tasks
 * are entitled to now.
 */
static inline u32 agentcg_refresh_hweight(struct agentcg_cgrp *const *chain, u32 n,
					  const struct agentcg_global *g)
{
	u32 i;
	bool stale = false;

	if (!n)
		return AGENTCG_ONE;
	for (i = 0; i < AGENTCG_MAX_DEPTH && i < n; i++) {
		/* once a level is recomputed its children must be too */
		if (stale || chain[i]->hweight_gen != g->hweight_gen || !chain[i]->hweight) {
			agentcg_hweight_step(chain[i], i ? chain[i - 1] : 0, g);
			stale = true;
		}
	}
	return chain[(n < AGENTCG_MAX_DEPTH ? n : AGENTCG_MAX_DEPTH) - 1]->qshare;
}

/*
 * Atomic add that works in C, C++ and BPF (-mcpu=v3 fetch atomics); returns
 * the old value. Used only on counters several CPUs change at once in the
 * live scheduler. The simulator is single-threaded (each run owns its
 * groups) and is built with AGENTCG_SINGLE_THREADED: there it is a plain
 * add, because a locked add costs ~20 cycles on x86 even uncontended, and a
 * wakeup and a sleep make eight or more (issue 14: the flatcg/agentcg
 * classes' time per event against cfs).
 */
#if defined(__cplusplus) && defined(AGENTCG_SINGLE_THREADED) && !defined(__bpf__)
template <typename T, typename V>
static inline T agentcg_fetch_add(T *p, V v)
{
	const T old = *p;
	*p = static_cast<T>(old + static_cast<T>(v));
	return old;
}
#define AGENTCG_ATOMIC_ADD(p, v) agentcg_fetch_add((p), (v))
#else
#define AGENTCG_ATOMIC_ADD(p, v) __sync_fetch_and_add((p), (v))
#endif

/*
 * One level of an activation walk, without a lock: `node`'s own-task count
 * (own = true, the leaf of the walk) or its active-children count (own =
 * false, a level above a child that flipped) changes by one. Returns true
 * when the node itself flipped between active and idle; the caller then
 * calls agentcg_active_sum() on its parent and continues one level up.
 * active_refs = nr_runnable + nr_active_children is changed with one
 * atomic add, so exactly one CPU sees each 0 <-> 1 flip even when the
 * node's own tasks and its children change at once on several CPUs
 * (scx_flatcg serialises this with a lock instead).
 */
static inline bool agentcg_active_step(struct agentcg_cgrp *node, bool own, bool activate)
{
	u32 *cnt = own ? &node->nr_runnable : &node->nr_active_children;

	if (activate) {
		AGENTCG_ATOMIC_ADD(cnt, 1u);
		return AGENTCG_ATOMIC_ADD(&node->active_refs, 1u) == 0;
	}
	if (!*cnt || !node->active_refs)
		return false; /* unbalanced deactivate: ignore (never underflow) */
	AGENTCG_ATOMIC_ADD(cnt, (u32)-1);
	return AGENTCG_ATOMIC_ADD(&node->active_refs, (u32)-1) == 1;
}

/* `node` (weight `eff_weight`) flipped active/idle: fix its parent's active sum. */
static inline void agentcg_active_sum(struct agentcg_cgrp *parent, u32 eff_weight, bool activate)
{
	AGENTCG_ATOMIC_ADD(&parent->child_weight_sum, activate ? (u64)eff_weight : (u64)0 - eff_weight);
}

/* Shares must be recomputed (a generation bump, atomic for BPF). */
static inline void agentcg_bump_gen(struct agentcg_global *g)
{
	AGENTCG_ATOMIC_ADD(&g->hweight_gen, 1ull);
}

/*
 * A task of chain[n-1] became runnable (activate=true) or quiescent (false):
 * counts it in nr_runnable and, when a node flips 0 <-> 1, propagates the
 * active state up and bumps the generation (scx_flatcg's
 * update_active_weight_sums()). Call it for every task transition. The BPF
 * program runs the same steps level by level (agentcg_active_step /
 * agentcg_active_sum) over cgroup ids instead of a pointer chain.
 */
static inline void agentcg_update_active(struct agentcg_cgrp *const *chain, u32 n,
					 struct agentcg_global *g, bool activate)
{
	u32 i, lvl;

	if (!n)
		return;
	if (activate ? chain[n - 1]->nr_runnable == 0 : chain[n - 1]->nr_runnable == 1)
		agentcg_bump_gen(g); /* own-task weight (and maybe the active set) changes */
	/* walk leaf -> root while the node's active state flips */
	for (i = 0; i < AGENTCG_MAX_DEPTH && i < n; i++) {
		lvl = n - 1 - i;
		if (!agentcg_active_step(chain[lvl], i == 0, activate) || lvl == 0)
			break;
		agentcg_active_sum(chain[lvl - 1], chain[lvl]->eff_weight, activate);
	}
}

/*
 * Changes `cg`'s effective weight (cpu.weight write, penalty or storm),
 * keeping its parent's active sum right. parent == NULL for the root.
 * Returns true if anything changed.
 */
static inline bool agentcg_set_eff_weight(struct agentcg_cgrp *cg, struct agentcg_cgrp *parent,
					  u32 eff_weight, struct agentcg_global *g)
{
	if (!eff_weight)
		eff_weight = 1;
	if (cg->eff_weight == eff_weight)
		return false;
	if (parent && agentcg_cgrp_active(cg))
		AGENTCG_ATOMIC_ADD(&parent->child_weight_sum, (u64)eff_weight - cg->eff_weight);
	cg->eff_weight = eff_weight;
	agentcg_bump_gen(g);
	return true;
}

/*
 * Lag bound on activation: returns true if cvtime was raised. `lag_ns` is
 * the vtime an idle group may keep (one base slice).
 */
static inline bool agentcg_cgrp_bound_lag(struct agentcg_cgrp *cg, const struct agentcg_global *g,
					  u64 lag_ns)
{
	u64 floor = g->cvtime_now - lag_ns;

	if (agentcg_before(cg->cvtime, floor)) {
		cg->cvtime = floor;
		return true;
	}
	return false;
}

/* Charges `ran_ns` of execution to the group at queue share `qshare`. */
static inline void agentcg_cgrp_charge(struct agentcg_cgrp *cg, u32 qshare, u64 ran_ns)
{
	/* atomic: CPUs running tasks of one group charge it at once (BPF) */
	AGENTCG_ATOMIC_ADD(&cg->cvtime, ran_ns * AGENTCG_ONE / (qshare ? qshare : 1));
}

/* The group was picked for dispatch: cvtime_now follows it (never backwards). */
static inline void agentcg_cgrp_picked(struct agentcg_global *g, const struct agentcg_cgrp *cg)
{
	if (agentcg_before(g->cvtime_now, cg->cvtime))
		g->cvtime_now = cg->cvtime;
}

/* A task becomes runnable in `cg`: bound its lag inside the group. */
static inline void agentcg_task_enqueue(struct agentcg_task *t, const struct agentcg_cgrp *cg,
					u64 lag_ns)
{
	u64 floor = cg->tvtime_now - lag_ns;

	if (agentcg_before(t->vtime, floor))
		t->vtime = floor;
}

/* The task was picked: the group's tvtime_now follows it. */
static inline void agentcg_task_picked(struct agentcg_cgrp *cg, const struct agentcg_task *t)
{
	if (agentcg_before(cg->tvtime_now, t->vtime))
		cg->tvtime_now = t->vtime;
}

static inline void agentcg_task_charge(struct agentcg_task *t, u64 ran_ns)
{
	t->vtime += ran_ns * AGENTCG_WEIGHT_DFL / (t->weight ? t->weight : 1);
}

#endif /* AGENTCG_FLATCG_H */
