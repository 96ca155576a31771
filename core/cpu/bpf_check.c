// SPDX-License-Identifier: GPL-2.0-only
/*
 * BPF-safety check of the CPU policy headers: compiled by the CTest test
 * core_cpu_bpf_check (core/cpu.cmake, core/cpu/bpf_check.cmake) with
 * `clang -target bpf -O2 -c` and no system headers. It calls every entry
 * point so that their bodies are code-generated (an unused static inline is
 * only type-checked): a libc call, a floating-point operation, a signed
 * division or an unbounded loop would fail here, as it would when
 * bpf/agentcg.bpf.c includes the headers.
 *
 * Not linked anywhere; the functions below have external linkage only so
 * that the compiler keeps them.
 */
#include "agentcg/agentcg.h"
#include "agentcg/bandwidth.h"
#include "agentcg/counters.h"
#include "agentcg/eevdf.h"
#include "agentcg/flatcg.h"
#include "agentcg/place.h"
#include "agentcg/tunables.h"
#include "agentcg/types.h"

u32 check_enqueue(struct agentcg_cgrp *root, struct agentcg_cgrp *cg, struct agentcg_task *p,
		  struct agentcg_global *g, u64 now);
u32 check_enqueue(struct agentcg_cgrp *root, struct agentcg_cgrp *cg, struct agentcg_task *p,
		  struct agentcg_global *g, u64 now)
{
	struct agentcg_tunables t = agentcg_tunables_default();
	struct agentcg_cgrp *chain[2] = {root, cg};
	u32 ev = 0;

	if (!cg->nr_runnable) {
		ev |= agentcg_on_runnable(cg, g, now, &t);
		if (agentcg_cgrp_bound_lag(cg, g, agentcg_base_slice_ns(&t)))
			ev |= AGENTCG_EV(lag_clamps);
	}
	agentcg_update_active(chain, 2, g, true);
	if (now & 1)
		ev |= agentcg_on_wakeup(cg, now, &t);
	agentcg_sync_weight(cg, root, g, &t);
	agentcg_task_enqueue(p, cg, agentcg_base_slice_ns(&t));
	return ev;
}

u64 check_dispatch(struct agentcg_cgrp *root, struct agentcg_cgrp *cg, struct agentcg_task *p,
		   struct agentcg_global *g, u64 now);
u64 check_dispatch(struct agentcg_cgrp *root, struct agentcg_cgrp *cg, struct agentcg_task *p,
		   struct agentcg_global *g, u64 now)
{
	struct agentcg_tunables t = agentcg_tunables_default();
	struct agentcg_cgrp *chain[2] = {root, cg};
	u64 v = agentcg_eff_vtime(cg, now, &t);

	agentcg_refresh_hweight(chain, 2, g);
	agentcg_cgrp_picked(g, cg);
	agentcg_task_picked(cg, p);
	p->boosted = agentcg_has_boost(cg, now, &t);
	return v + agentcg_slice_ns(cg, now, &t);
}

void check_stopping(struct agentcg_cgrp *root, struct agentcg_cgrp *cg, struct agentcg_task *p,
		    struct agentcg_global *g, u64 now);
void check_stopping(struct agentcg_cgrp *root, struct agentcg_cgrp *cg, struct agentcg_task *p,
		    struct agentcg_global *g, u64 now)
{
	struct agentcg_cgrp *chain[2] = {root, cg};
	u64 ran = now - p->started_at_ns;
	u32 share = agentcg_refresh_hweight(chain, 2, g);

	agentcg_cgrp_charge(cg, share, ran);
	agentcg_task_charge(p, ran);
	if (!(now & 1)) {
		agentcg_update_active(chain, 2, g, false);
		if (!cg->nr_runnable)
			agentcg_on_quiescent(cg, now);
	}
}

u32 check_fork(struct agentcg_cgrp *root, struct agentcg_cgrp *cg, struct agentcg_global *g,
	       u64 now);
u32 check_fork(struct agentcg_cgrp *root, struct agentcg_cgrp *cg, struct agentcg_global *g,
	       u64 now)
{
	struct agentcg_tunables t = agentcg_tunables_default();
	u32 ev = agentcg_on_fork(cg, g, now, &t);

	agentcg_task_joined(cg);
	if (ev & AGENTCG_EV(new_steps))
		agentcg_task_left(cg);
	if (agentcg_fork_tick(cg, now, &t) || (ev & AGENTCG_EV(fork_storms)))
		agentcg_sync_weight(cg, root, g, &t);
	agentcg_cgrp_init(root, 100);
	return ev;
}

u32 check_mem(struct agentcg_mem_state *s, struct agentcg_cgrp *cg, u64 high, u64 now);
u32 check_mem(struct agentcg_mem_state *s, struct agentcg_cgrp *cg, u64 high, u64 now)
{
	struct agentcg_tunables t = agentcg_tunables_default();
	u32 ev = agentcg_mem_penalty_update(s, high, now, &t);

	cg->mem_penalty = s->penalty;
	return ev + agentcg_eff_weight(cg, &t);
}

u64 check_preempt(struct agentcg_cgrp *a, struct agentcg_cgrp *b, struct agentcg_task *p, u64 now);
u64 check_preempt(struct agentcg_cgrp *a, struct agentcg_cgrp *b, struct agentcg_task *p, u64 now)
{
	struct agentcg_tunables t = agentcg_tunables_default();
	struct agentcg_preempt r = agentcg_should_preempt(a, b, p, now, &t);

	agentcg_task_init(p, 100);
	return r.verdict == AGENTCG_PREEMPT_AT ? r.at_ns : r.verdict;
}

u64 check_bw(struct agentcg_bw_pool *pool, s64 *local, u64 now);
u64 check_bw(struct agentcg_bw_pool *pool, s64 *local, u64 now)
{
	if (!pool->period_ns)
		agentcg_bw_init(pool, 50000000ULL, 100000000ULL);
	if (agentcg_bw_acquire(pool, local, AGENTCG_BW_DEFAULT_SLICE_NS, now))
		agentcg_bw_charge(pool, local, 1000);
	agentcg_bw_return(pool, local);
	return agentcg_bw_refill(pool, now) + pool->runtime_ns;
}

/* The base rule (eevdf.h): request, lag save/place, pick, preemption verdict. */
u64 check_eevdf(struct agentcg_cgrp *cg, struct agentcg_global *g, u64 now, u64 curr_deadline);
u64 check_eevdf(struct agentcg_cgrp *cg, struct agentcg_global *g, u64 now, u64 curr_deadline)
{
	struct agentcg_tunables t = agentcg_tunables_default();
	u32 ev = 0;
	struct agentcg_req r;
	struct agentcg_preempt p;

	if (now & 2) {
		agentcg_eevdf_save_lag(cg, g, &t);
		agentcg_eevdf_place(cg, g);
	}
	r = agentcg_eevdf_request(cg, g, cg->qshare, 100, cg->nr_queued, now, &t, &ev);
	if (agentcg_eevdf_eligible(&r, g))
		agentcg_eevdf_picked(g, &r);
	agentcg_eevdf_advance(g, 1000);
	p = agentcg_eevdf_preempt(r.deadline, agentcg_eevdf_eff_deadline(&r, cg, g, &t) + curr_deadline,
				  now - 1000, 4000000, now, &t);
	return p.at_ns + ev;
}

/* The placement (place.h): local / local+preempt / shared (+kick, +timer). */
u64 check_place(u64 key, u64 head, u64 curr, u64 now, u32 flags);
u64 check_place(u64 key, u64 head, u64 curr, u64 now, u32 flags)
{
	struct agentcg_tunables t = agentcg_tunables_default();
	struct agentcg_place_in in = {0};
	struct agentcg_place r;

	in.key = key;
	in.head_key = head;
	in.has_head = flags & 1;
	in.cpu_idle = (flags >> 1) & 1;
	in.curr_ours = (flags >> 2) & 1;
	in.wakeup = (flags >> 3) & 1;
	in.last = (flags >> 4) & 1;
	in.curr_deadline = curr;
	in.curr_started_ns = now - 1000;
	in.curr_slice_ns = 4000000;
	in.now_ns = now;
	r = agentcg_place_task(&in, &t);
	if (agentcg_place_retarget(&in, r, &t)) {
		struct agentcg_victim_scan vs = agentcg_victim_scan_start();

		agentcg_victim_consider(&vs, &in, 1, curr + 1, now - 1000000, 4000000, &t);
		agentcg_victim_consider(&vs, &in, 2, curr + 2, now - 1000, 4000000, &t);
		if (vs.now_cpu >= 0)
			return 99;
		if (agentcg_victim_defer(&vs, r))
			return 98 + vs.at_ns;
	}
	return r.kind + r.at_ns;
}
