/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where a queued request goes: the per-CPU placement of flatcg/agentcg.
 * One pure function, agentcg_place_task(), decides for a task being queued
 * (wakeup, fork, slice end) whether it
 *   - goes straight into the local queue of the CPU select_cpu chose
 *     (that CPU was idle and was claimed for it: no shared-queue round
 *     trip, no dispatch call);
 *   - goes into that CPU's local queue AND preempts what runs there
 *     (the base rule of eevdf.h says NOW: earlier deadline, the running
 *     request past its protected time or the waking one's slice shorter,
 *     agentcg_eevdf_preempt_short);
 *   - or goes into the shared, deadline-ordered queue, possibly with a
 *     preemption kick (the rule says NOW but an earlier request already
 *     waits there: the CPU re-picks from the shared queue) or a re-check
 *     timer at T (the rule says "not before T").
 *
 * When the chosen CPU does not take a waking or forked request (the rule
 * says NO or "not before T" there: typically the CPU of its parent, which
 * runs the parent itself), no CPU idles and the request would head the
 * shared queue, the caller looks for another CPU to preempt
 * (AGENTCG_F_VICTIM_PREEMPT): agentcg_place_retarget() says whether one is
 * worth scanning for, agentcg_victim_consider() keeps the best CPU of the
 * scan (the same base rule against what runs there), and the caller kicks
 * the CPU that the rule says NOW for whose request has the latest deadline
 * (at most AGENTCG_VICTIM_SCAN CPUs looked at, none kicked twice before it
 * re-picks); failing any, it arms a re-check at the CPU whose "not before
 * T" comes first (agentcg_victim_defer()). It is what fair.c's fork and
 * wake balancing give a task: an agent forking 4 tool workers has them
 * spread over the CPUs and each checked against what runs there, where
 * the chosen-CPU-only rule queued
 * all 4 behind the parent's CPU while the other CPUs ran a fork storm's
 * children to the end of their slices (the storm victim's new-task
 * latency; README "Crowded machine": simulated on 4 CPUs, victim wakeup
 * p99 0.53x -> 0.38x eevdf; live on the VM's 2 vCPUs no difference the
 * spread can see).
 *
 * Why: under the shared-queue-only design of v2 every wakeup, even onto an
 * idle CPU, was queued, the CPU kicked, ops.dispatch called and the task
 * moved to the local queue: three extra steps per wakeup that the kernel's
 * EEVDF does not have (its run queues are per CPU) and that cost ~0.5 ms
 * each in a TCG guest. A task placed locally never overtakes a request
 * ordered before it: the local insert is taken only when the shared queue
 * has no earlier head (`has_head`), so the deadline order of the shared
 * queue is kept; idle CPUs are only claimed by the kernel's
 * scx_bpf_select_cpu_dfl()/the model's pick_idle_cpu().
 *
 * Who calls it: bpf/agentcg.bpf.c (ops.enqueue, after the request was made
 * by agentcg_eevdf_request() and cpu.max let it run), sim/cpu/scx_class.cc
 * (enqueue, the same inputs from its per-CPU state).
 *
 * Inputs a caller does not have stay 0 (zero-initialise the struct):
 * slice_ns 0 keeps the min_slice protection for every waking request.
 *
 * C99, BPF-safe: no libc, no floating point, no allocation, no loops.
 */
#ifndef AGENTCG_PLACE_H
#define AGENTCG_PLACE_H

#include "agentcg/eevdf.h"
#include "agentcg/tunables.h"
#include "agentcg/types.h"

enum agentcg_place_kind {
	AGENTCG_PLACE_SHARED = 0,         /* shared queue, nothing else */
	AGENTCG_PLACE_SHARED_PREEMPT = 1, /* shared queue + preempt the CPU (it re-picks) */
	AGENTCG_PLACE_SHARED_AT = 2,      /* shared queue + re-check the CPU at at_ns */
	AGENTCG_PLACE_LOCAL = 3,          /* the chosen CPU's local queue (it is idle) */
	AGENTCG_PLACE_LOCAL_PREEMPT = 4,  /* the chosen CPU's local queue, preempting it */
};

/* What the caller knows when it queues a request (all plain values). */
struct agentcg_place_in {
	u64 key;             /* the request's queue key (virtual deadline less credit) */
	u64 head_key;        /* the shared queue's first key (when has_head) */
	u64 curr_deadline;   /* the request running on the chosen CPU (when curr_ours) */
	u64 curr_started_ns;
	u64 curr_slice_ns;
	u64 now_ns;
	u64 slice_ns;        /* the request's slice (0: unknown; a shorter one skips protection) */
	u32 cpu_idle;  /* select_cpu found the chosen CPU idle and claimed it */
	u32 has_head;  /* the shared queue holds a request */
	u32 curr_ours; /* the chosen CPU runs a task of this scheduler */
	u32 wakeup;    /* a wakeup or a fork: may preempt */
	u32 last;      /* slice end of the CPU's only runnable task (SCX_ENQ_LAST) */
	u32 curr_kicked; /* the chosen CPU was kicked to preempt for another request and has not re-picked */
};

struct agentcg_place {
	u32 kind; /* enum agentcg_place_kind */
	u32 pad;
	u64 at_ns; /* AGENTCG_PLACE_SHARED_AT: the re-check time */
};

/* Whether the shared queue holds a request ordered before `key`. */
static inline bool agentcg_place_head_first(const struct agentcg_place_in *in, u64 key)
{
	return in->has_head && agentcg_before(in->head_key, key);
}

static inline struct agentcg_place agentcg_place_task(const struct agentcg_place_in *in,
						      const struct agentcg_tunables *t)
{
	struct agentcg_place r = {AGENTCG_PLACE_SHARED, 0, 0};
	struct agentcg_preempt v;

	/* an idle CPU was claimed for it: run it there unless an earlier
	 * request waits (the woken CPU then takes that one from the queue) */
	if (in->cpu_idle || in->last) {
		if (!agentcg_place_head_first(in, in->key))
			r.kind = AGENTCG_PLACE_LOCAL;
		return r;
	}
	/*
	 * A preemption already on its way to the chosen CPU serves the
	 * request that asked for it; this one cannot take that CPU too. An
	 * agent that forks 4 tool workers at once, each ordered before the
	 * agent, put all 4 on its own CPU, one behind the other, while
	 * the other CPUs ran a fork storm's children (traced in the
	 * simulator: the 3rd and 4th waited 257 and 502 us where a scan of
	 * the other CPUs starts them at once).
	 */
	if (!in->wakeup || !in->curr_ours || in->curr_kicked)
		return r;
	v = agentcg_eevdf_preempt_short(in->key, in->slice_ns, in->curr_deadline,
					in->curr_started_ns, in->curr_slice_ns, in->now_ns, t);
	switch (v.verdict) {
	case AGENTCG_PREEMPT_NOW:
		r.kind = agentcg_place_head_first(in, in->key) ? AGENTCG_PLACE_SHARED_PREEMPT
								: AGENTCG_PLACE_LOCAL_PREEMPT;
		return r;
	case AGENTCG_PREEMPT_AT:
		r.kind = AGENTCG_PLACE_SHARED_AT;
		r.at_ns = v.at_ns;
		return r;
	case AGENTCG_PREEMPT_NO:
		return r;
	}
	return r;
}

/* At most this many other CPUs are looked at for a victim per request. */
#define AGENTCG_VICTIM_SCAN 16

/*
 * Whether a request placed as `r` is worth a scan of the other CPUs: a
 * wakeup or fork the chosen CPU did not take at once, that would head the
 * shared queue (else the CPU that takes the earlier head is the one to
 * kick, and a scan would only let this one overtake it).
 */
static inline bool agentcg_place_retarget(const struct agentcg_place_in *in, struct agentcg_place r,
					  const struct agentcg_tunables *t)
{
	/* with the chosen CPU already kicked, the earlier head is (as a rule)
	 * the request it was kicked for, which has its CPU: scan anyway */
	return agentcg_feat(t, AGENTCG_F_VICTIM_PREEMPT) && in->wakeup && !in->cpu_idle && !in->last &&
	       (r.kind == AGENTCG_PLACE_SHARED || r.kind == AGENTCG_PLACE_SHARED_AT) &&
	       (in->curr_kicked || !agentcg_place_head_first(in, in->key));
}

/*
 * The victim scan's running choice (from agentcg_victim_scan_start()):
 * `now_cpu`, the CPU preempted at once, is the one running the latest
 * deadline; failing any, `at_cpu` is the CPU whose running request
 * the base rule lets this one preempt soonest ("not before at_ns": it is
 * still in its protected time). The caller kicks now_cpu; else it arms
 * at_cpu's re-check timer, which compares the shared queue's head there
 * at at_ns, as for a SHARED_AT verdict on the chosen CPU.
 *
 * Why the deferred victim: a wakeup whose chosen CPU runs an earlier
 * request (NO there), while the other CPUs run later ones that started
 * less than min_slice ago, used to wait until one of them ended its slice
 * (under the 4 ms tick of the VM, up to a whole tick past it). A periodic
 * waker beside a fork storm on 2 CPUs (cyclictest's case in `live
 * compare`; simulated on the VM's fitted profile) waited up to 4.1 ms
 * where eevdf's waited 3.0.
 */
struct agentcg_victim_scan {
	s32 now_cpu;
	s32 at_cpu;
	u64 now_deadline;
	u64 at_ns;
};

/* A scan that has found no CPU yet. */
static inline struct agentcg_victim_scan agentcg_victim_scan_start(void)
{
	struct agentcg_victim_scan s = {-1, -1, 0, 0};

	return s;
}

static inline void agentcg_victim_consider(struct agentcg_victim_scan *s,
					   const struct agentcg_place_in *in, s32 cpu,
					   u64 curr_deadline, u64 curr_started_ns,
					   u64 curr_slice_ns, const struct agentcg_tunables *t)
{
	struct agentcg_preempt v = agentcg_eevdf_preempt_short(in->key, in->slice_ns, curr_deadline,
							       curr_started_ns, curr_slice_ns,
							       in->now_ns, t);

	if (v.verdict == AGENTCG_PREEMPT_NOW) {
		if (s->now_cpu < 0 || agentcg_before(s->now_deadline, curr_deadline)) {
			s->now_cpu = cpu;
			s->now_deadline = curr_deadline;
		}
	} else if (v.verdict == AGENTCG_PREEMPT_AT) {
		if (s->at_cpu < 0 || agentcg_before(v.at_ns, s->at_ns)) {
			s->at_cpu = cpu;
			s->at_ns = v.at_ns;
		}
	}
}

/*
 * Whether the scan's deferred victim is worth a re-check timer: there is
 * one and the chosen CPU's own verdict (`r`) is not an earlier or equal
 * "not before T" already.
 */
static inline bool agentcg_victim_defer(const struct agentcg_victim_scan *s, struct agentcg_place r)
{
	return s->now_cpu < 0 && s->at_cpu >= 0 &&
	       (r.kind != AGENTCG_PLACE_SHARED_AT || agentcg_before(s->at_ns, r.at_ns));
}

#endif /* AGENTCG_PLACE_H */
