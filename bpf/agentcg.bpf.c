/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * agentcg: the sched_ext scheduler of the live backend. Loaded and attached
 * by live/agentcgroupd through a libbpf skeleton (agentcg.skel.h).
 *
 * Thin glue: the policy is core/'s (agentcg/flatcg.h for weights and
 * vtime, agentcg/agentcg.h for the agent features, agentcg/bandwidth.h for
 * cpu.max), the same code the simulator's agentcg/flatcg classes run. This
 * file gathers the inputs from the kernel, calls core/, applies the result
 * (DSQ inserts and moves, slices, kicks) and counts.
 *
 * - every cgroup gets a vtime-ordered DSQ (id = cgroup id), a slot in
 *   `cgrp_slots` (scanned by dispatch) and a `cgrp_states` entry holding
 *   core's struct agentcg_cgrp. Tasks are ordered inside their cgroup's DSQ
 *   by task vtime; dispatch picks the cgroup with the smallest
 *   agentcg_eff_vtime() that has queued tasks and is not throttled.
 * - runnable/quiescent keep core's active counts (agentcg_update_active)
 *   and fire the new-step / wakeup logic; stopping charges task and cgroup
 *   vtime at the cgroup's queue share (agentcg_refresh_hweight).
 * - cpu.max (ops.cgroup_set_bandwidth): runtime is charged in ops.stopping,
 *   a throttled cgroup is skipped by dispatch, a BPF timer refills pools at
 *   their period boundaries and kicks the CPUs.
 * - mem_penalty is written by agentcgroupd into `cgrp_ctl` (computed with
 *   core's agentcg_mem_penalty_update()); it is folded into the cgroup's
 *   effective weight in ops.stopping. Forks arrive in ops.init_task with
 *   args->fork (agentcg_on_fork()).
 * - mode flatcg is this code with tunables.features = 0 (the loader clears
 *   it); mode fifo is the trivial baseline of the overhead comparison (one
 *   global FIFO, nothing else).
 *
 * Worked example: cgroups a, b, c with cpu.weight 100, 200, 300 and one
 * CPU-bound task each on 2 CPUs. Their queue shares are 1/6, 2/6, 3/6, so per
 * 4 ms slice a's cvtime grows by 24 ms, b's by 12, c's by 8; the two CPUs
 * always take the two smallest, which gives c one CPU, b 2/3 and a 1/3:
 * 1/6, 2/6, 3/6 of the machine.
 *
 * Corrections to the seed (000 section 4): see core/include/agentcg/agentcg.h
 * for the policy; here, the seed's fork hook does not exist (forks are seen
 * in ops.init_task via args->fork) and its direct bpf_map_update from the
 * daemon into the scheduler's own state is replaced by a separate
 * daemon-owned map (`cgrp_ctl`) that the scheduler reads, so the daemon
 * never races with the scheduler's read-modify-write of cgroup state.
 *
 * Limitations: the hierarchy is flattened: every cgroup is treated as a
 * child of one virtual root (core's chain is [root, cgroup]), exact for
 * sibling cgroups (agent sessions), not composed for nested groups as in
 * scx_flatcg (walking ancestors with bpf_cgroup_ancestor() would need a
 * verifier-friendly fixed-depth unrolled chain: future work). Core's
 * active-set and weight updates run under one global bpf_spin_lock; the
 * cpu.max pool is updated without a lock (a race loses one charge of at
 * most one slice). A task enqueued into a cgroup holding a boost kicks
 * (SCX_KICK_PREEMPT) the CPU whose running task core's
 * agentcg_should_preempt() gives up "now" with the largest effective vtime;
 * a "not before T" verdict (min_slice) is not re-armed as in the simulator:
 * that victim keeps its CPU until its slice ends. At most AGENTCG_MAX_CGRPS cgroups
 * are scheduled fairly; more go to the fallback FIFO (counted).
 *
 * Invariants: every task has a task_ctx from init_task on; a cgroup has a
 * cgrp_state iff it has a slot and a DSQ; impossible states call
 * agentcg_error() (the kernel then ejects the scheduler and falls back).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "agentcg/tunables.h"
#include "agentcg/agentcg.h"
#include "agentcg/bandwidth.h"
#include "agentcg/counters.h"
#include "bpf/agentcg_intf.h"
#include "bpf/strategy_maps.bpf.h" /* seed 001 strategies: strategy_pid, strategy_cgrp */

char _license[] SEC("license") = "GPL";

/*
 * The scx kfuncs come from vmlinux.h. Kernel note: they need a kernel whose
 * BTF has the `<kfunc>_impl` twins of the implicit-argument kfuncs
 * (scx_bpf_create_dsq, scx_bpf_kick_cpu, scx_bpf_error_bstr, ...): sid's
 * 7.2.13 has them; trixie-backports' 7.2.12 build lacks them (its verifier
 * then rejects every call: "cannot find function scx_bpf_create_dsq_impl in
 * BTF"), which is why scripts/fetch-kernel.sh defaults to sid.
 */
#define create_dsq(id, node) scx_bpf_create_dsq(id, node)
#define destroy_dsq(id) scx_bpf_destroy_dsq(id)
#define kick_cpu(cpu, flags) scx_bpf_kick_cpu(cpu, flags)

/*
 * Own error macros: the kernel's scx_bpf_error() lives in tools/sched_ext,
 * which no Debian package ships. The format must be in writable memory
 * (the verifier rejects .rodata strings for scx_bpf_error_bstr), hence the
 * function-local static array, which clang places in .data.
 */
#define agentcg_error1(fmt, a)                                                 \
	({                                                                     \
		static char ___fmt[] = fmt;                                    \
		unsigned long long ___p[1] = { (unsigned long long)(a) };     \
		scx_bpf_error_bstr(___fmt, ___p, sizeof(___p));                \
	})

#define BPF_STRUCT_OPS(name, args...) SEC("struct_ops/" #name) BPF_PROG(name, ##args)
#define BPF_STRUCT_OPS_SLEEPABLE(name, args...) SEC("struct_ops.s/" #name) BPF_PROG(name, ##args)

#define NSEC_PER_MSEC 1000000ULL
#define NSEC_PER_USEC 1000ULL
#define NSEC_PER_SEC 1000000000ULL
#define BW_TIMER_NS (5 * NSEC_PER_MSEC)
#define BW_UNLIMITED_US (1ULL << 40) /* RUNTIME_INF and other huge quotas */
#define MAX_KICK_CPUS 64

/* Set by the loader before load. */
const volatile u32 agentcg_mode = AGENTCG_MODE_AGENTCG;
const volatile u32 nr_cpus = 1;
const volatile struct agentcg_tunables tun = AGENTCG_TUNABLES_DEFAULT_INIT;

/* Holds the global bpf_spin_lock and what it protects (scx's private()). */
#define private(name) SEC(".data." #name) __hidden __attribute__((aligned(8)))

/* Read by the daemon. */
struct agentcg_exit_info exit_info;
u64 cgrp_slots[AGENTCG_MAX_CGRPS];
/* One past the highest slot ever handed out: dispatch scans [0, slots_hw).
 * Slots are taken lowest-first, so on a machine with few cgroups dispatch
 * looks at few slots (it used to scan all AGENTCG_MAX_CGRPS). Written only
 * by cgroup_init, which the kernel serialises. */
u32 slots_hw;

/* core's global state and the virtual root, under `agentcg_lock`. */
private(AGENTCG) struct bpf_spin_lock agentcg_lock;
private(AGENTCG) struct agentcg_global glob;
private(AGENTCG) struct agentcg_cgrp root_cg;

struct task_ctx {
	struct agentcg_task at;
	u64 cgid;
	u64 runnable_at; /* for the per-cgroup wait time */
};

struct cgrp_state {
	struct agentcg_cgrp cg;
	struct agentcg_bw_pool bw;
	s64 bw_local_ns;
	u64 bw_period_start;
	u32 slot;
	u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctxs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, AGENTCG_MAX_CGRPS);
	__type(key, u64);
	__type(value, struct cgrp_state);
} cgrp_states SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, AGENTCG_MAX_CGRPS);
	__type(key, u64);
	__type(value, struct agentcg_cgrp_stat);
} cgrp_stat SEC(".maps");

/* Written by the daemon's memory monitor (live/agentcgroupd). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u64);
	__type(value, struct agentcg_cgrp_ctl);
} cgrp_ctl SEC(".maps");

/* core/'s counters (agentcg/counters.h), summed over CPUs by the daemon. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, AGENTCG_NR_COUNTERS);
	__type(key, u32);
	__type(value, u64);
} stats SEC(".maps");

/* The glue's own counters (agentcg_intf.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, AGENTCG_NR_BPF_STATS);
	__type(key, u32);
	__type(value, u64);
} bpf_stats SEC(".maps");

struct bw_timer {
	struct bpf_timer timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct bw_timer);
} bw_timers SEC(".maps");

/* What each CPU runs (ops.running sets, ops.stopping clears), read by the
 * wakeup-preemption check on other CPUs: a racy snapshot is fine there. */
struct cpu_curr {
	u64 cgid; /* 0: not one of ours */
	u64 started_at_ns;
	u32 boosted;
	u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct cpu_curr);
} cpu_currs SEC(".maps");

#define TUN ((const struct agentcg_tunables *)&tun)

static __always_inline void bstat_inc(u32 idx)
{
	u64 *v = bpf_map_lookup_elem(&bpf_stats, &idx);

	if (v)
		(*v)++;
}

/* Turns a core/ event mask (bit N = counter N) into increments. */
static __always_inline void count_events(u32 ev)
{
	u32 i;

	if (!ev)
		return;
	bpf_for(i, 0, AGENTCG_NR_COUNTERS) {
		if (ev & (1u << i)) {
			u64 *v = bpf_map_lookup_elem(&stats, &i);

			if (v)
				(*v)++;
		}
	}
}

static __always_inline u64 cgrp_id(struct cgroup *cgrp)
{
	return cgrp->kn->id;
}

static __always_inline struct task_ctx *task_ctx(struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, p, 0, 0);
}

static __always_inline u64 lag_ns(void)
{
	return agentcg_base_slice_ns(TUN);
}

static __always_inline u32 ctl_mem_penalty(u64 cgid)
{
	struct agentcg_cgrp_ctl *c = bpf_map_lookup_elem(&cgrp_ctl, &cgid);

	return c ? c->mem_penalty : 0;
}

s32 BPF_STRUCT_OPS(agentcg_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool is_idle = false;
	struct task_ctx *t;
	struct cgrp_state *cs;
	s32 cpu;

	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
	if (!is_idle)
		return cpu;
	if (agentcg_mode != AGENTCG_MODE_FIFO) {
		/* A throttled cgroup must not slip past cpu.max via an idle CPU. */
		t = task_ctx(p);
		if (!t)
			return cpu;
		cs = bpf_map_lookup_elem(&cgrp_states, &t->cgid);
		if (cs && cs->bw.throttled)
			return cpu;
	}
	bstat_inc(AGENTCG_BS_direct_dispatches);
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, agentcg_base_slice_ns(TUN), 0);
	return cpu;
}

/*
 * A task of a boosted cgroup was queued: find the CPU whose running task
 * core's agentcg_should_preempt() lets go now, the one ordered last (largest
 * effective vtime) if several, and kick it; its task goes back to its queue
 * and the CPU dispatches again (the simulator's ScxClass does the same).
 */
static __always_inline void maybe_preempt(u64 waker_cgid, struct cgrp_state *cs, u64 now)
{
	struct agentcg_task vt = {};
	u64 best_v = 0;
	s32 best_cpu = -1;
	u32 cpu, zero = 0;

	bpf_for(cpu, 0, nr_cpus) {
		struct cpu_curr *cc = bpf_map_lookup_percpu_elem(&cpu_currs, &zero, cpu);
		struct agentcg_preempt r;
		struct cgrp_state *vs;
		u64 cgid, v;

		if (!cc)
			continue;
		cgid = cc->cgid;
		if (!cgid || cgid == waker_cgid)
			continue;
		vs = bpf_map_lookup_elem(&cgrp_states, &cgid);
		if (!vs)
			continue;
		vt.boosted = cc->boosted;
		vt.started_at_ns = cc->started_at_ns;
		r = agentcg_should_preempt(&cs->cg, &vs->cg, &vt, now, TUN);
		if (r.verdict != AGENTCG_PREEMPT_NOW)
			continue;
		v = agentcg_eff_vtime(&vs->cg, now, TUN);
		if (best_cpu < 0 || agentcg_before(best_v, v)) {
			best_cpu = cpu;
			best_v = v;
		}
	}
	if (best_cpu >= 0) {
		scx_bpf_kick_cpu(best_cpu, SCX_KICK_PREEMPT);
		count_events(AGENTCG_EV(preemptions));
	}
}

void BPF_STRUCT_OPS(agentcg_enqueue, struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *t;
	struct cgrp_state *cs;
	u64 now;

	bstat_inc(AGENTCG_BS_enqueues);
	if (agentcg_mode == AGENTCG_MODE_FIFO) {
		/* ENQ_LAST: the CPU's last task goes back to it directly */
		scx_bpf_dsq_insert(p, (enq_flags & SCX_ENQ_LAST) ? SCX_DSQ_LOCAL : SCX_DSQ_GLOBAL,
				   agentcg_base_slice_ns(TUN), enq_flags);
		return;
	}
	t = task_ctx(p);
	if (!t) {
		bstat_inc(AGENTCG_BS_no_task_ctx);
		scx_bpf_dsq_insert(p, AGENTCG_FALLBACK_DSQ, agentcg_base_slice_ns(TUN), enq_flags);
		return;
	}
	cs = bpf_map_lookup_elem(&cgrp_states, &t->cgid);
	if (!cs) {
		bstat_inc(AGENTCG_BS_no_cgrp_state);
		scx_bpf_dsq_insert(p, AGENTCG_FALLBACK_DSQ, agentcg_base_slice_ns(TUN), enq_flags);
		return;
	}
	now = bpf_ktime_get_ns();
	agentcg_task_enqueue(&t->at, &cs->cg, lag_ns());
	{
		/* Strategy hook: slice and a one-enqueue vtime credit (the
		 * task's own vtime is not changed, so its charge stays exact). */
		const struct agentcg_strategy_action *sa = agentcg_strategy_of(p, t->cgid);
		u64 credit = agentcg_strategy_vtime_credit_ns(sa, agentcg_base_slice_ns(TUN));
		u64 vt = t->at.vtime > credit ? t->at.vtime - credit : 0;

		scx_bpf_dsq_insert_vtime(p, t->cgid,
					 agentcg_strategy_slice_ns(sa, agentcg_slice_ns(&cs->cg, now, TUN)),
					 vt, enq_flags);
	}
	if (agentcg_has_boost(&cs->cg, now, TUN))
		maybe_preempt(t->cgid, cs, now);
}

void BPF_STRUCT_OPS(agentcg_dispatch, s32 cpu, struct task_struct *prev)
{
	struct cgrp_state *best_cs = NULL;
	u64 best = 0, best_v = 0, now;
	u32 i, hw;

	if (agentcg_mode == AGENTCG_MODE_FIFO)
		return; /* SCX_DSQ_GLOBAL is consumed by the kernel */
	if (scx_bpf_dsq_move_to_local(AGENTCG_FALLBACK_DSQ)) {
		bstat_inc(AGENTCG_BS_fallback_dispatches);
		return;
	}
	now = bpf_ktime_get_ns();
	hw = slots_hw;
	if (hw > AGENTCG_MAX_CGRPS)
		hw = AGENTCG_MAX_CGRPS;
	bpf_for(i, 0, hw) {
		u64 cgid = cgrp_slots[i & (AGENTCG_MAX_CGRPS - 1)];
		struct cgrp_state *cs;
		u64 v;

		if (!cgid || scx_bpf_dsq_nr_queued(cgid) <= 0)
			continue;
		cs = bpf_map_lookup_elem(&cgrp_states, &cgid);
		if (!cs || cs->bw.throttled)
			continue;
		v = agentcg_eff_vtime(&cs->cg, now, TUN);
		if (!best || agentcg_before(v, best_v)) {
			best = cgid;
			best_v = v;
		}
	}
	if (!best)
		return;
	if (!scx_bpf_dsq_move_to_local(best)) {
		bstat_inc(AGENTCG_BS_dispatch_races);
		return;
	}
	bstat_inc(AGENTCG_BS_dispatches);
	best_cs = bpf_map_lookup_elem(&cgrp_states, &best);
	if (best_cs) {
		bpf_spin_lock(&agentcg_lock);
		agentcg_cgrp_picked(&glob, &best_cs->cg);
		bpf_spin_unlock(&agentcg_lock);
	}
}

void BPF_STRUCT_OPS(agentcg_runnable, struct task_struct *p, u64 enq_flags)
{
	struct agentcg_cgrp *chain[2];
	struct task_ctx *t;
	struct cgrp_state *cs;
	u32 ev = 0;
	u64 now;

	if (agentcg_mode == AGENTCG_MODE_FIFO)
		return;
	t = task_ctx(p);
	if (!t)
		return;
	now = bpf_ktime_get_ns();
	t->runnable_at = now;
	cs = bpf_map_lookup_elem(&cgrp_states, &t->cgid);
	if (!cs)
		return;
	chain[0] = &root_cg;
	chain[1] = &cs->cg;
	bpf_spin_lock(&agentcg_lock);
	if (!cs->cg.nr_runnable)
		ev |= agentcg_on_runnable(&cs->cg, &glob, now, TUN);
	if (enq_flags & SCX_ENQ_WAKEUP)
		ev |= agentcg_on_wakeup(&cs->cg, now, TUN);
	if (!cs->cg.nr_runnable)
		if (agentcg_cgrp_bound_lag(&cs->cg, &glob, lag_ns()))
			ev |= AGENTCG_EV(lag_clamps);
	agentcg_update_active(chain, 2, &glob, true);
	bpf_spin_unlock(&agentcg_lock);
	count_events(ev);
}

void BPF_STRUCT_OPS(agentcg_quiescent, struct task_struct *p, u64 deq_flags)
{
	struct agentcg_cgrp *chain[2];
	struct task_ctx *t;
	struct cgrp_state *cs;
	u64 now;

	if (agentcg_mode == AGENTCG_MODE_FIFO)
		return;
	t = task_ctx(p);
	if (!t)
		return;
	cs = bpf_map_lookup_elem(&cgrp_states, &t->cgid);
	if (!cs)
		return;
	now = bpf_ktime_get_ns();
	chain[0] = &root_cg;
	chain[1] = &cs->cg;
	bpf_spin_lock(&agentcg_lock);
	agentcg_update_active(chain, 2, &glob, false);
	if (!cs->cg.nr_runnable)
		agentcg_on_quiescent(&cs->cg, now);
	bpf_spin_unlock(&agentcg_lock);
}

void BPF_STRUCT_OPS(agentcg_running, struct task_struct *p)
{
	struct task_ctx *t;
	struct cgrp_state *cs;
	struct agentcg_cgrp_stat *st;
	struct cpu_curr *cc;
	u32 zero = 0;
	u64 now, left;

	if (agentcg_mode == AGENTCG_MODE_FIFO)
		return;
	t = task_ctx(p);
	if (!t)
		return;
	now = bpf_ktime_get_ns();
	t->at.started_at_ns = now;
	st = bpf_map_lookup_elem(&cgrp_stat, &t->cgid);
	if (st && t->runnable_at)
		__sync_fetch_and_add(&st->wait_ns, now - t->runnable_at);
	t->runnable_at = 0;
	cs = bpf_map_lookup_elem(&cgrp_states, &t->cgid);
	if (!cs)
		return;
	agentcg_task_picked(&cs->cg, &t->at);
	t->at.boosted = agentcg_has_boost(&cs->cg, now, TUN);
	cc = bpf_map_lookup_elem(&cpu_currs, &zero);
	if (cc) {
		cc->cgid = t->cgid;
		cc->started_at_ns = now;
		cc->boosted = t->at.boosted;
	}
	/* cpu.max: never run past what the pool and this CPU's share still hold. */
	if (agentcg_bw_limited(&cs->bw)) {
		bool ok = agentcg_bw_acquire(&cs->bw, &cs->bw_local_ns, AGENTCG_BW_DEFAULT_SLICE_NS, now);

		if (!ok)
			count_events(AGENTCG_EV(throttles));
		left = cs->bw_local_ns > 0 ? (u64)cs->bw_local_ns : 0;
		/* min_slice protects a task that still has quota, not an overrun */
		if (ok && agentcg_feat(TUN, AGENTCG_F_MIN_SLICE) &&
		    left < (u64)tun.min_slice_us * NSEC_PER_USEC)
			left = (u64)tun.min_slice_us * NSEC_PER_USEC;
		if (left < 100 * NSEC_PER_USEC)
			left = 100 * NSEC_PER_USEC;
		if (p->scx.slice > left)
			p->scx.slice = left;
	}
}

void BPF_STRUCT_OPS(agentcg_stopping, struct task_struct *p, bool runnable)
{
	struct agentcg_cgrp *chain[2];
	struct task_ctx *t;
	struct cgrp_state *cs;
	struct agentcg_cgrp_stat *st;
	u64 now, ran, charged;
	u32 pen, qshare, zero = 0;
	struct cpu_curr *cc;

	if (agentcg_mode == AGENTCG_MODE_FIFO)
		return;
	cc = bpf_map_lookup_elem(&cpu_currs, &zero);
	if (cc)
		cc->cgid = 0;
	t = task_ctx(p);
	if (!t || !t->at.started_at_ns)
		return;
	now = bpf_ktime_get_ns();
	ran = now - t->at.started_at_ns;
	t->at.started_at_ns = 0;
	if (runnable)
		t->runnable_at = now;
	t->at.weight = p->scx.weight;
	agentcg_task_charge(&t->at, ran);
	st = bpf_map_lookup_elem(&cgrp_stat, &t->cgid);
	if (st)
		__sync_fetch_and_add(&st->runtime_ns, ran);
	cs = bpf_map_lookup_elem(&cgrp_states, &t->cgid);
	if (!cs)
		return;
	pen = ctl_mem_penalty(t->cgid);
	/* Strategy hook: weight_pct scales what the cgroup is charged (the
	 * map lookup is a helper call: not allowed under the spin lock). */
	charged = agentcg_strategy_charge_ns(agentcg_strategy_of_cgrp(t->cgid), ran);
	chain[0] = &root_cg;
	chain[1] = &cs->cg;
	bpf_spin_lock(&agentcg_lock);
	if (cs->cg.mem_penalty != pen) {
		cs->cg.mem_penalty = pen;
		agentcg_sync_weight(&cs->cg, &root_cg, &glob, TUN);
	}
	if (agentcg_fork_tick(&cs->cg, now, TUN))
		agentcg_sync_weight(&cs->cg, &root_cg, &glob, TUN);
	qshare = agentcg_refresh_hweight(chain, 2, &glob);
	agentcg_cgrp_charge(&cs->cg, qshare, charged);
	bpf_spin_unlock(&agentcg_lock);
	if (st) {
		st->eff_weight = cs->cg.eff_weight;
		st->mem_penalty = cs->cg.mem_penalty;
		st->fork_storm = cs->cg.storm;
	}
	if (agentcg_bw_limited(&cs->bw)) {
		agentcg_bw_charge(&cs->bw, &cs->bw_local_ns, ran);
		if (cs->bw_local_ns <= 0 &&
		    !agentcg_bw_acquire(&cs->bw, &cs->bw_local_ns, AGENTCG_BW_DEFAULT_SLICE_NS, now))
			count_events(AGENTCG_EV(throttles));
		if (st) {
			st->nr_throttled = cs->bw.nr_throttled;
			st->throttled_ns = cs->bw.throttled_ns;
		}
	}
}

s32 BPF_STRUCT_OPS(agentcg_init_task, struct task_struct *p, struct scx_init_task_args *args)
{
	struct task_ctx *t;
	struct cgrp_state *cs;
	struct agentcg_cgrp_stat *st;
	u64 now = bpf_ktime_get_ns(), cgid;
	u32 ev;

	if (agentcg_mode == AGENTCG_MODE_FIFO)
		return 0;
	t = bpf_task_storage_get(&task_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return -12; /* -ENOMEM */
	cgid = cgrp_id(args->cgroup);
	t->cgid = cgid;
	t->runnable_at = 0;
	agentcg_task_init(&t->at, p->scx.weight);
	cs = bpf_map_lookup_elem(&cgrp_states, &cgid);
	if (!cs)
		return 0;
	t->at.vtime = cs->cg.tvtime_now;
	if (!args->fork)
		return 0;
	st = bpf_map_lookup_elem(&cgrp_stat, &cgid);
	if (st)
		__sync_fetch_and_add(&st->nr_forks, 1);
	bpf_spin_lock(&agentcg_lock);
	ev = agentcg_on_fork(&cs->cg, now, TUN);
	if (ev & AGENTCG_EV(fork_storms))
		agentcg_sync_weight(&cs->cg, &root_cg, &glob, TUN);
	bpf_spin_unlock(&agentcg_lock);
	count_events(ev);
	return 0;
}

void BPF_STRUCT_OPS(agentcg_exit_task, struct task_struct *p, struct scx_exit_task_args *args)
{
	/* task_ctxs is task-local storage: freed with the task. */
}

void BPF_STRUCT_OPS(agentcg_cgroup_move, struct task_struct *p, struct cgroup *from,
		    struct cgroup *to)
{
	struct task_ctx *t;
	struct cgrp_state *cs;
	u64 cgid;

	if (agentcg_mode == AGENTCG_MODE_FIFO)
		return;
	t = task_ctx(p);
	if (!t)
		return;
	cgid = cgrp_id(to);
	t->cgid = cgid;
	bstat_inc(AGENTCG_BS_cgroup_moves);
	cs = bpf_map_lookup_elem(&cgrp_states, &cgid);
	t->at.vtime = cs ? cs->cg.tvtime_now : 0;
}

static __always_inline void bw_set(struct cgrp_state *cs, u64 period_us, u64 quota_us)
{
	u64 quota_ns = quota_us >= BW_UNLIMITED_US ? 0 : quota_us * NSEC_PER_USEC;

	agentcg_bw_init(&cs->bw, quota_ns, period_us * NSEC_PER_USEC);
	cs->bw_local_ns = 0;
	cs->bw_period_start = bpf_ktime_get_ns();
}

s32 BPF_STRUCT_OPS_SLEEPABLE(agentcg_cgroup_init, struct cgroup *cgrp,
			     struct scx_cgroup_init_args *args)
{
	struct cgrp_state init = {};
	struct agentcg_cgrp_stat st0 = {};
	u64 cgid = cgrp_id(cgrp);
	u32 i, slot = AGENTCG_MAX_CGRPS;
	s32 ret;

	if (agentcg_mode == AGENTCG_MODE_FIFO)
		return 0;
	bpf_for(i, 0, AGENTCG_MAX_CGRPS) {
		if (__sync_val_compare_and_swap(&cgrp_slots[i & (AGENTCG_MAX_CGRPS - 1)], 0, cgid) == 0) {
			slot = i;
			break;
		}
	}
	if (slot == AGENTCG_MAX_CGRPS) {
		bstat_inc(AGENTCG_BS_cgrp_overflow);
		return 0; /* its tasks use the fallback queue */
	}
	if (slot + 1 > slots_hw)
		slots_hw = slot + 1;
	ret = create_dsq(cgid, -1);
	if (ret) {
		cgrp_slots[slot & (AGENTCG_MAX_CGRPS - 1)] = 0;
		return ret;
	}
	agentcg_cgrp_init(&init.cg, args->weight);
	init.slot = slot;
	bw_set(&init, args->bw_period_us, args->bw_quota_us);
	st0.weight = args->weight;
	st0.eff_weight = args->weight;
	bpf_map_update_elem(&cgrp_stat, &cgid, &st0, BPF_ANY);
	ret = bpf_map_update_elem(&cgrp_states, &cgid, &init, BPF_ANY);
	if (ret) {
		destroy_dsq(cgid);
		cgrp_slots[slot & (AGENTCG_MAX_CGRPS - 1)] = 0;
		bstat_inc(AGENTCG_BS_cgrp_overflow);
	}
	return 0;
}

void BPF_STRUCT_OPS(agentcg_cgroup_exit, struct cgroup *cgrp)
{
	u64 cgid = cgrp_id(cgrp);
	struct cgrp_state *cs;

	if (agentcg_mode == AGENTCG_MODE_FIFO)
		return;
	cs = bpf_map_lookup_elem(&cgrp_states, &cgid);
	if (!cs)
		return;
	cgrp_slots[cs->slot & (AGENTCG_MAX_CGRPS - 1)] = 0;
	bpf_map_delete_elem(&cgrp_states, &cgid);
	bpf_map_delete_elem(&cgrp_stat, &cgid);
	destroy_dsq(cgid);
}

void BPF_STRUCT_OPS(agentcg_cgroup_set_weight, struct cgroup *cgrp, u32 weight)
{
	u64 cgid = cgrp_id(cgrp);
	struct cgrp_state *cs = bpf_map_lookup_elem(&cgrp_states, &cgid);
	struct agentcg_cgrp_stat *st = bpf_map_lookup_elem(&cgrp_stat, &cgid);

	if (cs) {
		bpf_spin_lock(&agentcg_lock);
		cs->cg.weight = weight;
		agentcg_sync_weight(&cs->cg, &root_cg, &glob, TUN);
		bpf_spin_unlock(&agentcg_lock);
	}
	if (st)
		st->weight = weight;
}

void BPF_STRUCT_OPS(agentcg_cgroup_set_bandwidth, struct cgroup *cgrp, u64 period_us,
		    u64 quota_us, u64 burst_us)
{
	u64 cgid = cgrp_id(cgrp);
	struct cgrp_state *cs = bpf_map_lookup_elem(&cgrp_states, &cgid);

	if (cs)
		bw_set(cs, period_us, quota_us);
}

/* The cpu.max period timer: refill pools whose period ended, kick CPUs. */
static int bw_timer_fn(void *map, int *key, struct bpf_timer *timer)
{
	u64 now = bpf_ktime_get_ns();
	bool kick = false;
	u32 i;

	bpf_for(i, 0, AGENTCG_MAX_CGRPS) {
		u64 cgid = cgrp_slots[i & (AGENTCG_MAX_CGRPS - 1)];
		struct cgrp_state *cs;

		if (!cgid)
			continue;
		cs = bpf_map_lookup_elem(&cgrp_states, &cgid);
		if (!cs || !agentcg_bw_limited(&cs->bw))
			continue;
		if (now - cs->bw_period_start < cs->bw.period_ns)
			continue;
		/* Keep the period grid (no drift by the timer's granularity). */
		cs->bw_period_start += cs->bw.period_ns;
		if (now - cs->bw_period_start >= cs->bw.period_ns)
			cs->bw_period_start = now;
		/*
		 * Keep a debt (slices are enforced at tick granularity, so a CPU
		 * overruns its local runtime by up to a tick: paid from the new
		 * period's quota); expire a positive leftover as the pool is
		 * refilled in full.
		 */
		if (cs->bw_local_ns > 0)
			cs->bw_local_ns = 0;
		if (agentcg_bw_refill(&cs->bw, now)) {
			bstat_inc(AGENTCG_BS_refills);
			kick = true;
		}
	}
	if (kick) {
		bpf_for(i, 0, MAX_KICK_CPUS) {
			if (i >= nr_cpus)
				break;
			kick_cpu(i, SCX_KICK_IDLE);
		}
	}
	bpf_timer_start(timer, BW_TIMER_NS, 0);
	return 0;
}

s32 BPF_STRUCT_OPS_SLEEPABLE(agentcg_init)
{
	struct bpf_timer *timer;
	u32 key = 0;
	s32 ret;

	ret = create_dsq(AGENTCG_FALLBACK_DSQ, -1);
	if (ret)
		return ret;
	if (agentcg_mode == AGENTCG_MODE_FIFO)
		return 0;
	agentcg_cgrp_init(&root_cg, AGENTCG_WEIGHT_DFL);
	root_cg.hweight = AGENTCG_ONE;
	timer = bpf_map_lookup_elem(&bw_timers, &key);
	if (!timer) {
		agentcg_error1("agentcg: bw timer map has no element %u", key);
		return -2; /* -ENOENT */
	}
	bpf_timer_init(timer, &bw_timers, 1 /* CLOCK_MONOTONIC */);
	bpf_timer_set_callback(timer, bw_timer_fn);
	return bpf_timer_start(timer, BW_TIMER_NS, 0);
}

void BPF_STRUCT_OPS(agentcg_exit, struct scx_exit_info *ei)
{
	bpf_probe_read_kernel_str(exit_info.reason, sizeof(exit_info.reason), ei->reason);
	bpf_probe_read_kernel_str(exit_info.msg, sizeof(exit_info.msg), ei->msg);
	exit_info.exit_code = ei->exit_code;
	/* Written last: the daemon polls `kind` and then reads the rest. */
	__sync_val_compare_and_swap(&exit_info.kind, 0, ei->kind ? ei->kind : 1);
}

SEC(".struct_ops.link")
struct sched_ext_ops agentcg_ops = {
	.select_cpu = (void *)agentcg_select_cpu,
	.enqueue = (void *)agentcg_enqueue,
	.dispatch = (void *)agentcg_dispatch,
	.runnable = (void *)agentcg_runnable,
	.running = (void *)agentcg_running,
	.stopping = (void *)agentcg_stopping,
	.quiescent = (void *)agentcg_quiescent,
	.init_task = (void *)agentcg_init_task,
	.exit_task = (void *)agentcg_exit_task,
	.cgroup_init = (void *)agentcg_cgroup_init,
	.cgroup_exit = (void *)agentcg_cgroup_exit,
	.cgroup_move = (void *)agentcg_cgroup_move,
	.cgroup_set_weight = (void *)agentcg_cgroup_set_weight,
	.cgroup_set_bandwidth = (void *)agentcg_cgroup_set_bandwidth,
	.init = (void *)agentcg_init,
	.exit = (void *)agentcg_exit,
	/*
	 * ENQ_LAST: without it the kernel keeps running the last runnable task
	 * of a CPU past its slice without asking ops.enqueue, so a throttled
	 * cgroup alone on a CPU would ignore cpu.max.
	 */
	.flags = SCX_OPS_ENQ_LAST,
	.timeout_ms = 10000,
	.name = "agentcg",
};
