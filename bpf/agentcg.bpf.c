/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * agentcg: the sched_ext scheduler of the live backend. Loaded and attached
 * by live/agentcgroupd through a libbpf skeleton (agentcg.skel.h).
 *
 * Thin glue: the policy is core/'s (agentcg/eevdf.h: the base rule;
 * agentcg/flatcg.h: hierarchical shares and cgroup vtime; agentcg/agentcg.h:
 * the agent features; agentcg/bandwidth.h: cpu.max), the same code the
 * simulator's flatcg/agentcg classes (sim/cpu/scx_class.cc) run. This file
 * gathers the inputs from the kernel, calls core/, applies the result (DSQ
 * inserts and moves, slices, kicks, timers) and counts.
 *
 * Design (v2, placement v3), and why:
 * - ONE vtime-ordered DSQ (AGENTCG_SHARED_DSQ) holds every waiting task,
 *   keyed by the virtual deadline of its request (eevdf.h): the start tag
 *   chains a group's requests after each other (so a group with k queued
 *   tasks does not get k turns at once) and the length is scaled by the
 *   group's hierarchical queue share, so ordering requests by deadline
 *   gives every cgroup its compounded share. The pick is the kernel's DSQ
 *   rbtree: O(log n) in queued tasks, independent of the number of
 *   cgroups (no scan of cgroups, no per-cgroup DSQ to choose between).
 *   Per-LLC DSQs would cut the DSQ lock's contention on machines with
 *   several LLCs (scx_lavd: +39 % on 176 cores); on the 2-CPU VM there is
 *   one LLC, so one queue; the key function does not change.
 * - cgroup state in an array of AGENTCG_MAX_CGRPS (32,768) slots, found
 *   by cgroup id through a hash of slots; a task, a CPU and a state keep
 *   the slot beside the id they point to (the parent's too), so the
 *   wakeup path's lookups are the array's, inlined (cgrp_at): a walk up
 *   the tree is a bounded loop of them (AGENTCG_MAX_DEPTH), no pointer
 *   chain on the stack.
 *   A cgroup that cannot get state (table full, deeper than
 *   AGENTCG_MAX_DEPTH) is scheduled as part of its nearest ancestor with
 *   state (cgrp_alias, resolved once at cgroup_init from its parent): its tasks queue in the same shared DSQ under that ancestor's
 *   tag chain (counted: cgrp_overflow, no_cgrp_state). There is no
 *   fallback queue: nothing can be served ahead of the fair order (the
 *   old design's fallback DSQ, served first, was such a hole).
 * - No global lock: activation counts and active weight sums are atomics
 *   (flatcg.h agentcg_active_step/agentcg_active_sum), cvtime is charged
 *   with an atomic add, the share generation is an atomic counter, V only
 *   moves forwards with a plain store (eevdf.h "Concurrency"). The agent
 *   features' windows (fork, wakeup, boost budget) of one cgroup are
 *   updated without a lock: two CPUs counting the same group's fork at the
 *   same instant may lose one count, never corrupt a share.
 * - Per-CPU placement (v3, core/include/agentcg/place.h, the same
 *   function the simulator calls): ops.enqueue makes the request (tag
 *   chain, cpu.max) and then inserts it straight into the local DSQ of
 *   the CPU select_cpu chose when that CPU was idle (select_cpu records
 *   it in the task ctx; with no idle CPU the kernel's choice stands,
 *   normally the task's previous CPU, as in fair.c), or into that
 *   CPU's local DSQ with SCX_ENQ_PREEMPT
 *   when the base rule says NOW (earlier deadline, the running request
 *   past its protected time or the waking one's slice shorter; against
 *   another group's request the time counts from when the CPU took the
 *   running group, cpu_currs' group_since_ns, eevdf.h
 *   agentcg_group_run_since); only a
 *   request that must wait goes into the shared DSQ, with an idle CPU
 *   kicked if there is one, a preemption kick (an earlier request already
 *   waits there) or the CPU's BPF timer re-checking at T (still
 *   protected; the simulator's kTimerPreempt). A local insert never
 *   overtakes an earlier request of the shared DSQ (its head is peeked).
 *   Why: v2 sent every wakeup through the shared DSQ, a kick and
 *   ops.dispatch, ~0.5 ms each under TCG, and lost cyclictest p99 to
 *   EEVDF by 3-4x; the kernel's own run queues are per CPU.
 * - Stale heads (retag_stale, eevdf.h agentcg_eevdf_stale): a request's
 *   key is fixed at insert, so a group with a backlog (a fork storm's
 *   hundreds of queued children) that runs past its share keeps old keys
 *   that V later passes; ops.dispatch re-tags such a head from its group's
 *   current service and moves it back (scx_bpf_dsq_move_vtime), at most
 *   AGENTCG_RETAG_MAX per dispatch. Measured: the storm victim's wakeup p99
 *   0.61x EEVDF live with it, 1.03x without (README, "Live").
 * - cpu.max at every level: a pool (bandwidth.h) and a BPF timer per
 *   limited cgroup (no scan of cgroups per period); running/stopping charge
 *   every limited ancestor. A task whose chain has a throttled level is
 *   parked in that level's FIFO DSQ (created per cgroup at cgroup_init,
 *   which is sleepable) and moved back into the shared DSQ, at its old
 *   deadline, by the refill timer. Dispatch only looks for throttled
 *   tasks when some cgroup is throttled (nr_throttled_now).
 * - Tunables and mode: `cfgs[cfg_idx]` in .data, rewritten by the daemon on
 *   SIGHUP without detaching (agentcg_intf.h struct agentcg_live_cfg).
 *
 * Refusing to load: ops.init fails (the kernel keeps its scheduler and the
 * daemon logs the message) when the machine has more CPUs than the
 * preemption timers cover; the daemon refuses before loading when the
 * cgroup tree already has more cgroups than AGENTCG_MAX_CGRPS.
 *
 * Invariants: every task has a task_ctx from init_task on; a task is
 * counted in the activation counts of exactly one cgroup (t->counted_cgid)
 * between runnable and quiescent; a parked task's cgroup (or an ancestor)
 * is throttled or about to be refilled; impossible states call
 * agentcg_error1() (the kernel then ejects the scheduler and falls back).
 *
 * mode fifo is the trivial baseline of the overhead comparison, fixed at
 * load (rodata agentcg_mode): scx_simple's FIFO mode (tools/sched_ext), one
 * FIFO DSQ of our own that ops.dispatch moves to the CPU, nothing else.
 * (Until v5 it used SCX_DSQ_GLOBAL, which the kernel consumes without
 * calling ops.dispatch, so its dispatch figure was an empty callback and
 * the queue move it does cost nowhere in the comparison.)
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "agentcg/tunables.h"
#include "agentcg/agentcg.h"
#include "agentcg/eevdf.h"
#include "agentcg/place.h"
#include "agentcg/bandwidth.h"
#include "agentcg/counters.h"
#include "bpf/agentcg_intf.h"
#include "bpf/strategy_maps.bpf.h" /* seed 001 strategies: strategy_pid, strategy_cgrp */

char _license[] SEC("license") = "GPL";

/*
 * Kernel note: the scx kfuncs need a kernel whose BTF has the `<kfunc>_impl`
 * twins of the implicit-argument kfuncs (scx_bpf_create_dsq, ...): sid's
 * 7.2.13 has them; trixie-backports' 7.2.12 lacks them, which is why
 * scripts/fetch-kernel.sh defaults to sid.
 */
/*
 * A bounded loop's guard without a kfunc call per iteration: `may_goto`
 * (BPF_JMP | BPF_JCOND, kernel 6.9+), which the verifier treats as an
 * open-coded iterator (it widens the loop's state, so a loop with branches
 * in its body converges) and the JIT as a decrement of a hidden stack
 * counter. bpf_for() costs bpf_iter_num_new/next/destroy calls: ~0.4 us
 * per iteration under TCG, measured (FIFO mode's empty callbacks with four
 * iterations added), against ~0.4 us for a whole hash lookup. A plain
 * `for` without the guard is explored iteration by iteration, branches
 * multiplying: the verifier had not finished after the daemon's 30 s
 * wait (with the guard it takes 12 s under TCG, 10-11 s with bpf_for).
 * Clang 14 has no
 * `may_goto` mnemonic: the instruction is spelled out (opcode 0xe5, the
 * jump offset in instructions after it, little endian).
 */
#define agentcg_can_loop                                                       \
	({                                                                     \
		__label__ l_out, l_on;                                         \
		bool ___on = true;                                             \
		asm volatile goto("1: .byte 0xe5; .byte 0;"                    \
				  " .long ((%l[l_out] - 1b - 8) / 8) & 0xffff;" \
				  " .short 0" :::: l_out);                     \
		goto l_on;                                                     \
	l_out:                                                                 \
		___on = false;                                                 \
	l_on:                                                                  \
		___on;                                                         \
	})

#define create_dsq(id, node) scx_bpf_create_dsq(id, node)
#define destroy_dsq(id) scx_bpf_destroy_dsq(id)

/*
 * Own error macro: the kernel's scx_bpf_error() lives in tools/sched_ext,
 * which no Debian package ships. The format must be in writable memory.
 */
#define agentcg_error1(fmt, a)                                                 \
	({                                                                     \
		static char ___fmt[] = fmt;                                    \
		unsigned long long ___p[1] = { (unsigned long long)(a) };     \
		scx_bpf_error_bstr(___fmt, ___p, sizeof(___p));                \
	})

#define BPF_STRUCT_OPS(name, args...) SEC("struct_ops/" #name) BPF_PROG(name, ##args)
#define BPF_STRUCT_OPS_SLEEPABLE(name, args...) SEC("struct_ops.s/" #name) BPF_PROG(name, ##args)
/* The iterator of libbpf's bpf_for_each() (scx's common.bpf.h name). */
#define BPF_FOR_EACH_ITER (&___it)

#define NSEC_PER_USEC 1000ULL
#define BW_UNLIMITED_US (1ULL << 40) /* RUNTIME_INF and other huge quotas */
#define MAX_KICK_CPUS 64
#define ROOT_CGID 1ULL   /* the root cgroup's kernfs id */

/* Set by the loader before load. */
const volatile u32 agentcg_mode = AGENTCG_MODE_AGENTCG;
const volatile u32 nr_cpus = 1;

/* Rewritten at run time by the daemon (SIGHUP): slot cfg_idx is live. */
struct agentcg_live_cfg cfgs[2] = {
	{ .mode = AGENTCG_MODE_AGENTCG, .tun = AGENTCG_TUNABLES_DEFAULT_INIT },
	{ .mode = AGENTCG_MODE_AGENTCG, .tun = AGENTCG_TUNABLES_DEFAULT_INIT },
};
u32 cfg_idx; /* in .bss: skel->bss->cfg_idx */

/* Read by the daemon. */
struct agentcg_exit_info exit_info;

/* core's global state: V (cvtime_now) and the share generation. */
struct agentcg_global glob;
/* cgroups throttled right now (dispatch checks for parked work only then).
 * Read as "!= 0": were a transition ever uncounted twice, parking would
 * cost a chain walk per enqueue instead of stopping (bw_unthrottle). */
s32 nr_throttled_now;
/* cgroups with a cpu.max quota: running/stopping walk the chain only then */
s32 nr_bw_limited;
/* Bumped by the daemon after it writes cgrp_ctl (skel->bss->ctl_gen):
 * stopping re-reads a cgroup's mem_penalty only when it moved. */
u32 ctl_gen;

struct task_ctx {
	struct agentcg_task at;
	struct agentcg_req req; /* the request it is queued / runs with */
	u64 cgid;               /* cgroup whose state it uses (nearest with state) */
	u64 kcgid;              /* the task group's cgroup cgid was resolved from */
	u64 counted_cgid;       /* cgroup it is counted runnable in (0: none) */
	u32 slot;               /* where cgid's state is (cgrp_at) */
	u32 counted_slot;       /* and counted_cgid's */
	u64 runnable_at;        /* for the per-cgroup wait time */
	u64 wait_ns;            /* waited before this run; added to cgrp_stat at stopping */
	u32 queued;             /* in the shared DSQ (or a local one), counted in nr_queued */
	u8 idle_cpu;            /* select_cpu found (and claimed) an idle CPU for it */
	u8 fresh;               /* forked, not yet run: its first enqueue may preempt */
	u16 pad;
};

struct cgrp_state {
	struct agentcg_cgrp cg;
	/*
	 * cpu.max: the pool and the local runtime are read-modify-written by
	 * every CPU's running/stopping and by the period timer; bw_lock makes
	 * each of those updates whole. Unlocked, a CPU switched out between
	 * its load and store (the test VM interleaves both vCPUs on one host
	 * thread) could overwrite the other CPU's charges; CI's sanitized
	 * boot saw /p at cpu.max 0.50 use 0.56 CPUs with this race open.
	 */
	struct bpf_spin_lock bw_lock;
	struct agentcg_bw_pool bw;
	s64 bw_local_ns;
	u64 parent; /* cgroup id of the nearest ancestor with state; 0: root */
	u64 cgid;   /* 0: a free slot */
	u32 slot;   /* its index in cgrp_states */
	u32 parent_slot; /* where `parent`'s state was at creation (cgrp_at) */
	u32 depth;  /* levels of stateful ancestors above it */
	u32 bw_armed;
	u32 bw_counted; /* counted in nr_bw_limited */
	u32 ctl_gen;    /* the ctl_gen its mem_penalty was read at */
	struct bpf_timer bw_timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctxs SEC(".maps");

/*
 * The cgroups' state, in an array indexed by slot, and each cgroup's slot
 * by its id. Every callback on the wakeup path looks a state up, and
 * activate_walk and refresh_qshare_slow one per level: a hash lookup costs
 * ~0.4 us under TCG, an array lookup is inlined by the verifier (a bounds
 * check and a multiply). So a task, a CPU and a state keep the slot of the
 * state they point to beside its id (cgrp_at: the array element, checked
 * against the id), and only a stale slot, or an id with no slot at hand,
 * goes through the hash (cgrp_lookup). Slots are reused after
 * cgroup_exit (free_slots); a freed state has cgid 0, and a reused one
 * another id, so a stale slot is never taken for its old cgroup.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, AGENTCG_MAX_CGRPS);
	__type(key, u32);
	__type(value, struct cgrp_state);
} cgrp_states SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, AGENTCG_MAX_CGRPS);
	__type(key, u64);
	__type(value, u32);
} cgrp_slots SEC(".maps");

/* Slots given back by cgroup_exit; next_slot: the first never used. */
struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, AGENTCG_MAX_CGRPS);
	__type(value, u32);
} free_slots SEC(".maps");
u32 next_slot;

/* What the daemon reads of each state, at the state's slot (it finds the
 * slot in cgrp_slots and checks the id: agentcgroupd's metrics). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, AGENTCG_MAX_CGRPS);
	__type(key, u32);
	__type(value, struct agentcg_cgrp_stat);
} cgrp_stat SEC(".maps");

/* Cgroups without state -> their nearest ancestor with state. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, AGENTCG_MAX_CGRPS);
	__type(key, u64);
	__type(value, u64);
} cgrp_alias SEC(".maps");

/* One all-zero cgroup state, the template of new elements (never written);
 * plain bytes: an update's source may not hold a bpf_timer. */
struct cgrp_zero_bytes {
	u8 b[sizeof(struct cgrp_state)];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct cgrp_zero_bytes);
} cgrp_zero SEC(".maps");

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

/* What each CPU runs (ops.running sets, ops.stopping clears), read by the
 * wakeup-preemption check of other CPUs: a racy snapshot is fine there. */
struct cpu_curr {
	u64 deadline;      /* the running request's virtual deadline */
	u64 start;         /* its start tag, slice and group: curr_deadline() */
	u64 req_slice_ns;
	u64 cgid;
	u32 slot;          /* where cgid's state is (cgrp_at) */
	u32 pad;
	u64 started_at_ns;
	u64 slice_ns;
	u64 group_since_ns; /* since when this CPU runs cgid (eevdf.h agentcg_group_run_since) */
	u64 stopped_ns;     /* when its last run of ours ended, and that run's group */
	u64 last_cgid;
	u32 ours;          /* 1 while a fair task of ours runs */
	u32 timer_armed;
	u32 kicked;        /* a preempting kick is on its way (cleared by running/stopping) */
	u32 storm;         /* it runs a storm's request, counted in glob.storm_cpus (storm_reserve) */
	struct bpf_timer timer; /* the min_slice re-check ("not before T") */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, AGENTCG_MAX_CPUS);
	__type(key, u32);
	__type(value, struct cpu_curr);
} cpu_currs SEC(".maps");

static __always_inline const struct agentcg_tunables *tun(void)
{
	return &cfgs[cfg_idx & 1].tun;
}

static __always_inline void bstat_inc(u32 idx)
{
	u64 *v = bpf_map_lookup_elem(&bpf_stats, &idx);

	if (v)
		(*v)++;
}

/*
 * Turns a core/ event mask (bit N = counter N) into increments. A plain
 * bounded loop that stops at the highest set bit: bpf_for() costs a kfunc
 * call per counter, on every callback that counts one event.
 */
static __always_inline void count_events(u32 ev)
{
	u32 i;

	for (i = 0; i < AGENTCG_NR_COUNTERS && ev; i++, ev >>= 1) {
		if (ev & 1) {
			u32 k = i;
			u64 *v = bpf_map_lookup_elem(&stats, &k);

			if (v)
				(*v)++;
		}
	}
}

static __always_inline u64 cgrp_id(struct cgroup *cgrp)
{
	return cgrp->kn->id;
}

/* The cgroup of p's task group: the one sched_ext's cgroup callbacks name
 * (init_task's args->cgroup, cgroup_move's `to`); 0 for a group that is no
 * cgroup's (an autogroup). Four loads, no lookup. */
static __always_inline u64 task_tg_cgid(struct task_struct *p)
{
	struct task_group *tg = p->sched_task_group;
	struct cgroup *cgrp = tg ? tg->css.cgroup : NULL;

	return cgrp && cgrp->kn ? cgrp->kn->id : 0;
}

static __always_inline struct task_ctx *task_ctx(struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, p, 0, 0);
}

/* The state of cgroup `cgid` by its id (a hash lookup, then the array). */
static __always_inline struct cgrp_state *cgrp_lookup(u64 cgid)
{
	u32 *slot = bpf_map_lookup_elem(&cgrp_slots, &cgid);
	struct cgrp_state *cs;

	if (!slot)
		return NULL;
	cs = bpf_map_lookup_elem(&cgrp_states, slot);
	return cs && cgid && cs->cgid == cgid ? cs : NULL;
}

/* The state of cgroup `cgid`, at `slot` when it is still there (one inlined
 * array lookup), else by its id. */
static __always_inline struct cgrp_state *cgrp_at(u32 slot, u64 cgid)
{
	struct cgrp_state *cs = bpf_map_lookup_elem(&cgrp_states, &slot);

	if (cs && cgid && cs->cgid == cgid)
		return cs;
	return cgrp_lookup(cgid);
}

/* The parent of a state: its nearest ancestor with state. */
static __always_inline struct cgrp_state *cgrp_parent(const struct cgrp_state *cs)
{
	return cs->parent ? cgrp_at(cs->parent_slot, cs->parent) : NULL;
}

/* A task's state (t->cgid's), through its slot. */
static __always_inline struct cgrp_state *task_cgrp(const struct task_ctx *t)
{
	return cgrp_at(t->slot, t->cgid);
}

/* The daemon's view of a state (cgrp_stat, at the same slot). */
static __always_inline struct agentcg_cgrp_stat *cgrp_stat_of(const struct cgrp_state *cs)
{
	u32 slot = cs->slot;

	return bpf_map_lookup_elem(&cgrp_stat, &slot);
}

static __always_inline u32 ctl_mem_penalty(u64 cgid)
{
	struct agentcg_cgrp_ctl *c = bpf_map_lookup_elem(&cgrp_ctl, &cgid);

	return c ? c->mem_penalty : 0;
}

/*
 * The nearest cgroup at or above `cgrp` that has state (the cgroup itself
 * in the normal case). Counts a miss. 0 when none (cannot happen once the
 * root has state).
 */
static __always_inline u64 ancestor_id(struct cgroup *cgrp, int lvl)
{
	/*
	 * cgrp->ancestors[lvl]->kn->id by probe reads: init_task's
	 * args->cgroup is not an RCU pointer, so bpf_cgroup_ancestor() is
	 * refused there, and a variable index into a BTF pointer is too.
	 */
	struct cgroup *a = NULL;
	struct kernfs_node *kn = NULL;
	u64 id = 0;

	if (lvl < 0 || lvl > 255)
		return 0;
	bpf_probe_read_kernel(&a, sizeof(a),
			      (void *)((u64)cgrp + __builtin_offsetof(struct cgroup, ancestors) +
				       (u64)lvl * sizeof(a)));
	if (!a)
		return 0;
	bpf_probe_read_kernel(&kn, sizeof(kn), &a->kn);
	if (!kn)
		return 0;
	bpf_probe_read_kernel(&id, sizeof(id), &kn->id);
	return id;
}

/*
 * The nearest cgroup at or above `cgrp` that has state: itself, or the
 * ancestor recorded in cgrp_alias when it got none (cgroup_init). No
 * walk: an alias is resolved when the cgroup is created, from its parent's
 * state or alias. Counts a miss.
 */
static __always_inline u64 resolve_cgid(u64 id)
{
	u64 *alias;

	if (cgrp_lookup(id))
		return id;
	bstat_inc(AGENTCG_BS_no_cgrp_state);
	alias = bpf_map_lookup_elem(&cgrp_alias, &id);
	if (alias && cgrp_lookup(*alias))
		return *alias;
	return cgrp_lookup(ROOT_CGID) ? ROOT_CGID : 0;
}

/* Points t at the state of kernel cgroup `kcgid` (or of its nearest
 * ancestor with state); counted_cgid keeps the old cgroup until quiescent. */
static __always_inline void set_task_cgrp(struct task_ctx *t, u64 kcgid)
{
	struct cgrp_state *cs;

	t->kcgid = kcgid;
	t->cgid = resolve_cgid(kcgid);
	cs = cgrp_lookup(t->cgid);
	t->slot = cs ? cs->slot : 0;
	t->at.vtime = cs ? cs->cg.tvtime_now : 0;
}

/*
 * Follows the kernel when p's task group is not the one the callbacks last
 * named: a move ops.cgroup_move did not report would leave the task under
 * another cgroup's weight and outside its cpu.max (CI once saw a cgroup at
 * cpu.max 0.50 use 1.55 CPUs, unexplained). Counted (cgroup_resyncs).
 * Called at ops.runnable, before the task is counted in its group's
 * activation (a move dequeues and re-enqueues a queued task, so its
 * runnable comes after the move), and at ops.running (cpu.max charges).
 */
static __always_inline void follow_task_group(struct task_struct *p, struct task_ctx *t)
{
	u64 kcgid = task_tg_cgid(p);

	if (kcgid && kcgid != t->kcgid) {
		set_task_cgrp(t, kcgid);
		bstat_inc(AGENTCG_BS_cgroup_resyncs);
	}
}

/* Whether the group of `cs` or one of its ancestors is throttled; returns
 * that level's id. */
static __always_inline u64 throttled_level(struct cgrp_state *cs)
{
	u32 i;

	bpf_for(i, 0, AGENTCG_MAX_DEPTH) {
		if (!cs)
			return 0;
		if (cs->bw.throttled)
			return cs->cgid;
		cs = cgrp_parent(cs);
	}
	return 0;
}

/*
 * The queue share of `cgid`'s own tasks, recomputing the shares root ->
 * leaf when the generation moved (flatcg.h agentcg_hweight_step per
 * level; the ids are gathered leaf -> root first: scalars on the stack).
 * 2n - 1 state lookups for a chain of n, by slot (a level's parent is the
 * level done just before it; it runs on every wakeup of a group whose
 * activation moved the generation). A global function, so the verifier
 * checks it once, not at each of its call sites (dispatch's re-tag loop
 * has eight): its loops use agentcg_can_loop, not bpf_for's kfunc calls
 * per level.
 */
__noinline u32 refresh_qshare_slow(u32 slot, u64 cgid)
{
	u64 ids[AGENTCG_MAX_DEPTH];
	u32 slots[AGENTCG_MAX_DEPTH];
	struct cgrp_state *leaf = cgrp_at(slot, cgid), *cs, *ps = NULL;
	u64 gen = glob.hweight_gen;
	u32 n = 1, i;
	bool stale = false;

	if (!leaf)
		return AGENTCG_ONE;
	ids[0] = cgid;
	slots[0] = leaf->slot;
	cs = leaf;
	for (i = 1; i < AGENTCG_MAX_DEPTH && agentcg_can_loop; i++) {
		u64 parent = cs->parent;

		if (!parent)
			break;
		cs = cgrp_at(cs->parent_slot, parent);
		if (!cs)
			break;
		ids[i] = parent;
		slots[i] = cs->slot;
		n = i + 1;
	}
	/* root (ids[n-1]) -> leaf (ids[0]); the leaf is not looked up again */
	for (i = 0; i < AGENTCG_MAX_DEPTH && agentcg_can_loop; i++) {
		u32 lvl;

		if (i >= n)
			break;
		lvl = n - 1 - i;
		if (lvl >= AGENTCG_MAX_DEPTH)
			break;
		cs = lvl ? cgrp_at(slots[lvl], ids[lvl]) : leaf;
		if (!cs)
			break;
		if (stale || cs->cg.hweight_gen != gen || !cs->cg.hweight) {
			agentcg_hweight_step(&cs->cg, ps ? &ps->cg : NULL, &glob);
			stale = true;
		}
		ps = cs;
	}
	return leaf->cg.qshare ? leaf->cg.qshare : AGENTCG_ONE;
}

/* The common case (no share generation change since the last refresh)
 * costs no map lookup: the caller already holds the leaf's state. */
static __always_inline u32 refresh_qshare(struct cgrp_state *leaf)
{
	if (leaf->cg.hweight_gen == glob.hweight_gen && leaf->cg.qshare)
		return leaf->cg.qshare;
	return refresh_qshare_slow(leaf->slot, leaf->cgid);
}

/*
 * A task became runnable (activate) or quiescent in the group `cs`: the
 * activation walk of flatcg.h, level by level up the parents' ids, without
 * a lock; one state lookup per level (the parent, which is the next level's
 * node), none for the leaf, which the caller has.
 */
static __always_inline void activate_walk(struct cgrp_state *cs, bool activate)
{
	struct cgrp_state *ps;
	u32 i;

	for (i = 0; i < AGENTCG_MAX_DEPTH && agentcg_can_loop; i++) {
		/* own-task weight changes when the own count goes 0 <-> 1 */
		if (i == 0 && (activate ? cs->cg.nr_runnable == 0 : cs->cg.nr_runnable == 1))
			agentcg_bump_gen(&glob);
		if (!agentcg_active_step(&cs->cg, i == 0, activate))
			break;
		if (!cs->parent)
			break;
		ps = cgrp_at(cs->parent_slot, cs->parent);
		if (!ps)
			break;
		agentcg_active_sum(&ps->cg, cs->cg.eff_weight, activate);
		cs = ps;
	}
}

static __always_inline void sync_weight(struct cgrp_state *cs, const struct agentcg_tunables *tn)
{
	struct cgrp_state *ps = cgrp_parent(cs);

	agentcg_sync_weight(&cs->cg, ps ? &ps->cg : NULL, &glob, tn);
}

s32 BPF_STRUCT_OPS(agentcg_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool is_idle = false;
	struct task_ctx *t;
	s32 cpu;

	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
	if (agentcg_mode == AGENTCG_MODE_FIFO) {
		if (is_idle) {
			bstat_inc(AGENTCG_BS_direct_dispatches);
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, agentcg_base_slice_ns(tun()), 0);
		}
		return cpu;
	}
	/*
	 * Remember whether the CPU is idle (and now claimed for this task):
	 * ops.enqueue, which makes the request (tag chain, cpu.max), then
	 * inserts it straight into that CPU's local DSQ (place.h). Inserting
	 * here would skip the tag chain and cpu.max.
	 */
	t = task_ctx(p);
	if (t) {
		t->at.boosted = 0;
		t->idle_cpu = is_idle;
	}
	/*
	 * No idle CPU: the kernel's choice (the previous CPU, normally the
	 * one whose timer or waker woke it) is where the base rule is asked.
	 * v5 sent the wakee to the CPU running the latest deadline instead
	 * (the simulator's victim_cpu(), since removed from both): every
	 * such move is a remote wakeup (an IPI, ~1 ms under TCG), and the io
	 * trace's wakeup p50 went from 1.65 to 3.42 ms (EEVDF 1.24) and
	 * /io's share from 24 % to 18 % (one boot, 2026-11-27; README Live).
	 */
	return cpu;
}

/*
 * What the request running on a CPU competes at (eevdf.h
 * agentcg_eevdf_eff_deadline: a stale one as if re-tagged now), and a
 * queued task's key likewise; sim/cpu/scx_class.cc's curr_deadline() and
 * queued_key().
 */
static __always_inline u64 curr_deadline(const struct cpu_curr *cc, const struct agentcg_tunables *tn)
{
	struct agentcg_req r = {};
	struct cgrp_state *cs = cgrp_at(cc->slot, cc->cgid);

	r.start = cc->start;
	r.deadline = cc->deadline;
	r.slice_ns = cc->req_slice_ns;
	return agentcg_eevdf_eff_deadline(&r, cs ? &cs->cg : NULL, &glob, tn);
}

static __always_inline u64 queued_key(struct task_struct *p, const struct agentcg_tunables *tn)
{
	struct task_ctx *t = task_ctx(p);
	struct cgrp_state *cs;
	u64 d;

	if (!t)
		return p->scx.dsq_vtime;
	cs = task_cgrp(t);
	if (!cs)
		return p->scx.dsq_vtime;
	d = agentcg_eevdf_eff_deadline(&t->req, &cs->cg, &glob, tn);
	return d == t->req.deadline ? p->scx.dsq_vtime : d;
}

/* Where cc's protection counts from against a request of group `cgid`. */
static __always_inline u64 protect_since(const struct cpu_curr *cc, u64 cgid)
{
	return agentcg_protect_since(cc->started_at_ns, cc->group_since_ns, cc->cgid == cgid);
}

static __always_inline void preempt_kick(s32 cpu, struct cpu_curr *cc)
{
	if (cc)
		cc->kicked = 1;
	scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	count_events(AGENTCG_EV(preemptions));
}

/*
 * place.h's victim scan over the other CPUs (at most AGENTCG_VICTIM_SCAN
 * after `cpu`, in order) against the request of `in` of group `cgid`
 * (agentcg_victim_consider: the CPU to preempt at once, else the one to
 * re-check first). A racy snapshot of cpu_currs, as the chosen CPU's check.
 * A global function, as first_may_take_key() and dispatch's queue walks
 * (the comment above dispatch_skipping_throttled() says why): `p` is the
 * enqueued task (trusted), the result goes to `out`.
 */
__noinline int find_victim(struct task_struct *p __arg_trusted, u32 cpu, u64 cgid,
			   const struct agentcg_place_in *in __arg_nonnull,
			   struct agentcg_victim_scan *out __arg_nonnull)
{
	const struct agentcg_tunables *tn = tun();
	struct agentcg_victim_scan s = agentcg_victim_scan_start();
	u32 i, n = nr_cpus;

	bpf_for(i, 1, AGENTCG_VICTIM_SCAN + 1) {
		struct cpu_curr *cc;
		u32 c;

		if (i >= n)
			break;
		c = (cpu + i) % n;
		if (!bpf_cpumask_test_cpu(c, p->cpus_ptr))
			continue;
		cc = bpf_map_lookup_elem(&cpu_currs, &c);
		if (!cc || !cc->ours || cc->kicked)
			continue;
		agentcg_victim_consider(&s, in, c, curr_deadline(cc, tn), protect_since(cc, cgid),
					cc->slice_ns, tn);
	}
	*out = s;
	return 0;
}

/* A "not before at_ns" re-check of the CPU of `cc` (preempt_timer_fn),
 * unless one is armed there already. */
static __always_inline void arm_recheck(struct cpu_curr *cc, u64 at_ns, u64 now)
{
	if (!cc || cc->timer_armed)
		return;
	cc->timer_armed = 1;
	bpf_timer_start(&cc->timer, at_ns > now ? at_ns - now : 0, 0);
	count_events(AGENTCG_EV(min_slice_deferrals));
}

/*
 * storm_reserve (agentcg.h agentcg_storm_may_take): whether queued task `p`
 * may take a CPU while `others` other CPUs run storms. A task without
 * state is not a storm's.
 */
static __always_inline bool task_may_take(struct task_struct *p, u32 others, u64 now,
					  const struct agentcg_tunables *tn)
{
	struct task_ctx *t = task_ctx(p);
	struct cgrp_state *cs = t ? task_cgrp(t) : NULL;

	return !cs || agentcg_storm_may_take(&cs->cg, &glob, others, now, tn);
}

/* The storm CPUs other than the one of `cc` (agentcg_storm_others). */
static __always_inline u32 storm_others(const struct cpu_curr *cc)
{
	return agentcg_storm_others(&glob, cc && cc->storm ? 1 : 0);
}

/*
 * While the reserve holds: the key of the shared DSQ's first task (at
 * most AGENTCG_RESERVE_SCAN looked at) that may take the CPU, the head a
 * request placed there is compared with (a storm's task that may not take
 * it is not ahead of it there); sim/cpu/scx_class.cc's first_may_take.
 * A global function; the key goes to `key`.
 */
__noinline u32 first_may_take_key(u32 others, u64 now, u64 *key __arg_nonnull)
{
	const struct agentcg_tunables *tn = tun();
	struct task_struct *q;
	u32 n = 0;

	bpf_for_each(scx_dsq, q, AGENTCG_SHARED_DSQ, 0) {
		if (n++ >= AGENTCG_RESERVE_SCAN)
			break;
		if (!task_may_take(q, others, now, tn))
			continue;
		*key = queued_key(q, tn);
		return true;
	}
	return false;
}

/*
 * Places a request made by ops.enqueue (place.h): straight into the local
 * DSQ of the CPU select_cpu chose (idle, or preempting what runs there by
 * the base rule), or into the shared DSQ (with a kick or a re-check timer
 * for that CPU). SCX_DSQ_LOCAL is the local DSQ of the CPU the task is
 * being enqueued on, the one select_cpu returned.
 */
static __always_inline void place(struct task_struct *p, struct task_ctx *t, const struct agentcg_cgrp *cg,
				  u64 key, u64 slice, u64 enq_flags, u64 now,
				  const struct agentcg_tunables *tn)
{
	struct agentcg_place_in in = {};
	struct agentcg_place r;
	struct task_struct *head;
	struct cpu_curr *cc = NULL;
	u32 cpu = scx_bpf_task_cpu(p);
	u32 others;

	in.key = key;
	in.slice_ns = slice;
	in.now_ns = now;
	in.cpu_idle = t->idle_cpu;
	in.wakeup = (enq_flags & SCX_ENQ_WAKEUP) || t->fresh;
	/*
	 * The kernel calls ops.select_cpu only for a task that may run on
	 * more than one CPU (SCX_ENQ_CPU_SELECTED); a pinned task's wakeup
	 * comes here with nothing claimed. If its CPU is idle, claim it and
	 * run the task there, as select_cpu would have: queued in the shared
	 * DSQ instead, the idle kick below went to that very CPU (a
	 * self-IPI) and its dispatch then pulled the task back: cyclictest
	 * on the idle guest 13-17 us later per wakeup than under EEVDF, in
	 * TCG (README, Live v22).
	 */
	if (!in.cpu_idle && in.wakeup && !(enq_flags & SCX_ENQ_CPU_SELECTED) && cpu < AGENTCG_MAX_CPUS &&
	    scx_bpf_test_and_clear_cpu_idle(cpu)) {
		in.cpu_idle = 1;
		bstat_inc(AGENTCG_BS_idle_claims);
	}
	in.last = (enq_flags & SCX_ENQ_LAST) ? 1 : 0;
	t->idle_cpu = 0;
	t->fresh = 0;
	if (cpu < AGENTCG_MAX_CPUS)
		cc = bpf_map_lookup_elem(&cpu_currs, &cpu);
	if (cc && cc->ours) {
		in.curr_ours = 1;
		in.curr_deadline = curr_deadline(cc, tn);
		in.curr_started_ns = protect_since(cc, t->cgid);
		in.curr_slice_ns = cc->slice_ns;
		in.curr_kicked = cc->kicked;
	}
	/*
	 * storm_reserve: a storm's request does not take the last CPU free of
	 * storms (idle, or preempting another group there), nor preempt or
	 * wake another CPU: it waits in the shared DSQ for a CPU that runs
	 * the storm (scx_class.cc's place alike).
	 */
	others = storm_others(cc);
	if (!agentcg_storm_may_take(cg, &glob, others, now, tn)) {
		count_events(AGENTCG_EV(storm_reserves));
		scx_bpf_dsq_insert_vtime(p, AGENTCG_SHARED_DSQ, slice, key, enq_flags);
		return;
	}
	if ((in.cpu_idle || in.last || in.curr_ours || in.wakeup) && agentcg_reserve_on(&glob, others, now, tn)) {
		u64 head_key = 0;

		in.has_head = first_may_take_key(others, now, &head_key);
		in.head_key = head_key;
	} else if (in.cpu_idle || in.last || in.curr_ours || in.wakeup) {
		head = scx_bpf_dsq_peek(AGENTCG_SHARED_DSQ);
		if (head) {
			in.has_head = 1;
			/*
			 * The head's effective key is never earlier than its
			 * queue key, and place.h only asks whether the head is
			 * ordered first: look it up (two map lookups) only when
			 * its queue key says so.
			 */
			in.head_key = head->scx.dsq_vtime;
			if (agentcg_before(in.head_key, key))
				in.head_key = queued_key(head, tn);
		}
	}
	r = agentcg_place_task(&in, tn);
	/*
	 * Queued in the shared DSQ while another CPU idles: wake that one (the
	 * kernel does not for a custom DSQ; it would stay idle until its next
	 * wakeup, which cost stress-ng's fork storm ~25 % of its throughput).
	 * Picking clears its idle bit, so two enqueues do not wake one CPU.
	 * With no CPU idle, a wakeup the chosen CPU does not take may preempt
	 * another one (place.h, victim_preempt).
	 */
	if (r.kind <= AGENTCG_PLACE_SHARED_AT && !in.cpu_idle) {
		s32 idle = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);

		if (idle >= 0) {
			bstat_inc(AGENTCG_BS_idle_kicks);
			scx_bpf_kick_cpu(idle, SCX_KICK_IDLE);
		} else if (agentcg_place_retarget(&in, r, tn)) {
			struct agentcg_victim_scan vs;

			find_victim(p, cpu, t->cgid, &in, &vs);

			if (vs.now_cpu >= 0) {
				u32 v = vs.now_cpu;

				bstat_inc(AGENTCG_BS_victim_preempts);
				scx_bpf_dsq_insert_vtime(p, AGENTCG_SHARED_DSQ, slice, key, enq_flags);
				preempt_kick(vs.now_cpu, bpf_map_lookup_elem(&cpu_currs, &v));
				return;
			}
			if (agentcg_victim_defer(&vs, r)) {
				u32 v = vs.at_cpu;

				arm_recheck(bpf_map_lookup_elem(&cpu_currs, &v), vs.at_ns, now);
			}
		}
	}
	switch (r.kind) {
	case AGENTCG_PLACE_LOCAL:
		bstat_inc(AGENTCG_BS_direct_dispatches);
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice, enq_flags);
		return;
	case AGENTCG_PLACE_LOCAL_PREEMPT:
		bstat_inc(AGENTCG_BS_wakeup_preempt_checks);
		if (cc)
			cc->kicked = 1;
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice, enq_flags | SCX_ENQ_PREEMPT);
		count_events(AGENTCG_EV(preemptions));
		return;
	case AGENTCG_PLACE_SHARED_PREEMPT:
		bstat_inc(AGENTCG_BS_wakeup_preempt_checks);
		scx_bpf_dsq_insert_vtime(p, AGENTCG_SHARED_DSQ, slice, key, enq_flags);
		preempt_kick(cpu, cc);
		return;
	case AGENTCG_PLACE_SHARED_AT:
		bstat_inc(AGENTCG_BS_wakeup_preempt_checks);
		scx_bpf_dsq_insert_vtime(p, AGENTCG_SHARED_DSQ, slice, key, enq_flags);
		arm_recheck(cc, r.at_ns, now);
		return;
	case AGENTCG_PLACE_SHARED:
		scx_bpf_dsq_insert_vtime(p, AGENTCG_SHARED_DSQ, slice, key, enq_flags);
		return;
	}
	scx_bpf_dsq_insert_vtime(p, AGENTCG_SHARED_DSQ, slice, key, enq_flags);
}

/*
 * Strategy hook (sim/cpu/scx_class.cc's queue_task and dispatch alike): the
 * task's strategy (its process's, else its cgroup's `sa_cg`) gives its
 * slice and an earlier queue key for this enqueue only (the request itself
 * is unchanged, so charging and the preemption verdict stay the base rule's).
 */
static __always_inline const struct agentcg_strategy_action *
task_strategy(struct task_struct *p, const struct agentcg_strategy_action *sa_cg)
{
	u32 tgid = p->tgid;
	const struct agentcg_strategy_action *sa =
		agentcg_strategies_set() ? bpf_map_lookup_elem(&strategy_pid, &tgid) : NULL;

	return sa ? sa : sa_cg; /* agentcg_strategy_of(), without a second cgroup lookup */
}

static __always_inline u64 queue_key(const struct task_ctx *t, const struct agentcg_strategy_action *sa,
				     const struct agentcg_tunables *tn)
{
	u64 credit = agentcg_strategy_vtime_credit_ns(sa, agentcg_base_slice_ns(tn));

	return t->req.deadline > credit ? t->req.deadline - credit : 0;
}

void BPF_STRUCT_OPS(agentcg_enqueue, struct task_struct *p, u64 enq_flags)
{
	const struct agentcg_tunables *tn = tun();
	const struct agentcg_strategy_action *sa_cg;
	struct task_ctx *t;
	struct cgrp_state *cs;
	u64 now, thr;
	u32 ev = 0, qshare, before;

	bstat_inc(AGENTCG_BS_enqueues);
	if (agentcg_mode == AGENTCG_MODE_FIFO) {
		/* ENQ_LAST: the CPU's last task goes back to it directly */
		scx_bpf_dsq_insert(p, (enq_flags & SCX_ENQ_LAST) ? SCX_DSQ_LOCAL : AGENTCG_SHARED_DSQ,
				   agentcg_base_slice_ns(tn), enq_flags);
		return;
	}
	now = bpf_ktime_get_ns();
	t = task_ctx(p);
	if (!t) {
		/* not ours yet (cannot happen after init_task): a new request at V */
		bstat_inc(AGENTCG_BS_no_task_ctx);
		scx_bpf_dsq_insert_vtime(p, AGENTCG_SHARED_DSQ, agentcg_base_slice_ns(tn),
					 glob.cvtime_now + agentcg_base_slice_ns(tn), enq_flags);
		return;
	}
	cs = task_cgrp(t);
	if (!cs) {
		bstat_inc(AGENTCG_BS_no_cgrp_state);
		t->req.start = glob.cvtime_now;
		t->req.deadline = glob.cvtime_now + agentcg_base_slice_ns(tn);
		t->req.slice_ns = agentcg_base_slice_ns(tn);
		scx_bpf_dsq_insert_vtime(p, AGENTCG_SHARED_DSQ, t->req.slice_ns, t->req.deadline,
					 enq_flags);
		return;
	}
	/* Strategy hook: weight_pct scales the share (scx_class.cc alike) */
	sa_cg = agentcg_strategy_of_cgrp(t->cgid);
	qshare = agentcg_strategy_qshare(sa_cg, refresh_qshare(cs));
	t->at.weight = p->scx.weight;
	before = AGENTCG_ATOMIC_ADD(&cs->cg.nr_queued, 1u);
	t->queued = 1;
	/* a wakee goes at its group's virtual time, ahead of its queued
	 * siblings; new and requeued tasks behind them (scx_class.cc too) */
	t->req = agentcg_eevdf_request(&cs->cg, &glob, qshare, t->at.weight,
				       (enq_flags & SCX_ENQ_WAKEUP) ? 0 : before, now, tn, &ev);
	count_events(ev);
	/* storm_reserve: another group's wakeup or fork keeps a CPU free of storms */
	if (((enq_flags & SCX_ENQ_WAKEUP) || t->fresh) && t->cgid != ROOT_CGID &&
	    agentcg_reserve_note(&cs->cg, &glob, now, tn))
		glob.calm_wake_ns = now;
	thr = nr_throttled_now != 0 ? throttled_level(cs) : 0;
	if (thr) {
		/* cpu.max: wait in the throttled level's park queue until its refill */
		AGENTCG_ATOMIC_ADD(&cs->cg.nr_queued, (u32)-1);
		t->queued = 0;
		t->idle_cpu = 0;
		bstat_inc(AGENTCG_BS_parked);
		scx_bpf_dsq_insert(p, thr, t->req.slice_ns, enq_flags);
		return;
	}
	{
		const struct agentcg_strategy_action *sa = task_strategy(p, sa_cg);

		place(p, t, &cs->cg, queue_key(t, sa, tn), agentcg_strategy_slice_ns(sa, t->req.slice_ns),
		      enq_flags, now, tn);
	}
}

void BPF_STRUCT_OPS(agentcg_dequeue, struct task_struct *p, u64 deq_flags)
{
	struct task_ctx *t;
	struct cgrp_state *cs;

	if (agentcg_mode == AGENTCG_MODE_FIFO)
		return;
	t = task_ctx(p);
	if (!t || !t->queued)
		return;
	t->queued = 0;
	cs = task_cgrp(t);
	if (cs && cs->cg.nr_queued)
		AGENTCG_ATOMIC_ADD(&cs->cg.nr_queued, (u32)-1);
}

/*
 * dispatch's three queue walks are global functions (as enqueue's
 * find_victim() and first_may_take_key()): the verifier checks each once
 * with its arguments unknown, instead of once per path of the callback
 * that reaches it (the re-tag walk sat inlined in a loop of
 * AGENTCG_RETAG_MAX). Inlined, dispatch alone cost the verifier 833,739
 * instructions, 83 % of its limit per program, and the whole program
 * 1,105,128 and an 18.7-18.9 s load in a TCG guest; now 93,889, 316,220
 * and 3.7-4.7 s (README, Tests, "CI time"). A global function takes scalars
 * (or a trusted task, a non-null pointer to the caller's stack) and
 * returns a scalar; the tunables are read again inside (tun()).
 */

/* Some cgroup is throttled: move the throttled tasks at the head of the
 * queue to their park queues, then the first runnable one to this CPU. */
__noinline u32 dispatch_skipping_throttled(s32 cpu, u32 reserve, u32 others, u64 now)
{
	const struct agentcg_tunables *tn = tun();
	struct task_struct *p;

	/* bounded by the iterator; every throttled task seen leaves the queue */
	bpf_for_each(scx_dsq, p, AGENTCG_SHARED_DSQ, 0) {
		struct task_ctx *t = task_ctx(p);
		u64 thr = t ? throttled_level(task_cgrp(t)) : 0;

		if (!thr) {
			/* move_to_local skips tasks pinned elsewhere; so must we */
			if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
				continue;
			if (reserve && !task_may_take(p, others, now, tn))
				continue;
			if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0))
				return true;
			continue;
		}
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, thr, 0)) {
			struct cgrp_state *cs = task_cgrp(t);

			bstat_inc(AGENTCG_BS_parked);
			if (t->queued && cs && cs->cg.nr_queued)
				AGENTCG_ATOMIC_ADD(&cs->cg.nr_queued, (u32)-1);
			t->queued = 0;
		}
	}
	return false;
}

/*
 * retag_stale (eevdf.h agentcg_eevdf_stale; sim/cpu/scx_class.cc's dispatch
 * alike): when the shared queue's head belongs to a group that ran past its
 * share since the head was queued, the head gets a new request from its
 * group's current service (as a wakeup: ahead of its siblings) and goes back
 * into the queue under its new key. Returns true when it did (the caller
 * looks at the new head). A throttled head is left to
 * dispatch_skipping_throttled(), as the model parks it before this check.
 */
__noinline u32 retag_stale_head(u64 now)
{
	const struct agentcg_tunables *tn = tun();
	struct task_struct *p;

	bpf_for_each(scx_dsq, p, AGENTCG_SHARED_DSQ, 0) {
		struct task_ctx *t = task_ctx(p);
		const struct agentcg_strategy_action *sa_cg, *sa;
		struct cgrp_state *cs;
		u32 ev = 0;

		if (!t)
			return false;
		cs = task_cgrp(t);
		if (!cs || !agentcg_eevdf_stale(&t->req, &cs->cg, &glob))
			return false;
		if (nr_throttled_now != 0 && throttled_level(cs))
			return false;
		sa_cg = agentcg_strategy_of_cgrp(t->cgid);
		t->req = agentcg_eevdf_request(&cs->cg, &glob,
					       agentcg_strategy_qshare(sa_cg, refresh_qshare(cs)),
					       t->at.weight, 0, now, tn, &ev);
		count_events(ev);
		sa = task_strategy(p, sa_cg);
		scx_bpf_dsq_move_set_vtime(BPF_FOR_EACH_ITER, queue_key(t, sa, tn));
		scx_bpf_dsq_move_set_slice(BPF_FOR_EACH_ITER, agentcg_strategy_slice_ns(sa, t->req.slice_ns));
		if (!scx_bpf_dsq_move_vtime(BPF_FOR_EACH_ITER, p, AGENTCG_SHARED_DSQ, 0))
			return false;
		bstat_inc(AGENTCG_BS_stale_retags);
		return true;
	}
	return false;
}

/*
 * storm_reserve (agentcg.h agentcg_storm_may_take): the shared DSQ's first
 * task (at most AGENTCG_RESERVE_SCAN looked at) that may take this CPU
 * while `others` other CPUs run storms, moved to it; none: the CPU idles
 * (sim/cpu/scx_class.cc's dispatch and first_may_take alike).
 */
__noinline u32 dispatch_reserving(s32 cpu, u32 others, u64 now)
{
	const struct agentcg_tunables *tn = tun();
	struct task_struct *p;
	u32 n = 0;

	bpf_for_each(scx_dsq, p, AGENTCG_SHARED_DSQ, 0) {
		if (n++ >= AGENTCG_RESERVE_SCAN)
			break;
		if (!task_may_take(p, others, now, tn)) {
			if (n == 1)
				count_events(AGENTCG_EV(storm_reserves));
			continue;
		}
		if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
			continue;
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0))
			return true;
	}
	return false;
}

void BPF_STRUCT_OPS(agentcg_dispatch, s32 cpu, struct task_struct *prev)
{
	const struct agentcg_tunables *tn = tun();
	bool reserve = false;
	u32 others = 0;
	u64 now = 0;

	if (agentcg_mode != AGENTCG_MODE_FIFO && agentcg_feat(tn, AGENTCG_F_STORM_RESERVE) && glob.storm_cpus) {
		u32 c = cpu;

		now = bpf_ktime_get_ns();
		others = storm_others(bpf_map_lookup_elem(&cpu_currs, &c));
		reserve = agentcg_reserve_on(&glob, others, now, tn);
	}
	/*
	 * An empty queue has no head to re-tag: one lockless peek instead of
	 * the iterator's three kfunc calls and a clock read, on every CPU that
	 * goes idle after its last task slept (cyclictest's path: dispatch
	 * cost 3.5 us there against the FIFO mode's 2.0 us under TCG).
	 */
	if (agentcg_mode != AGENTCG_MODE_FIFO && agentcg_feat(tn, AGENTCG_F_RETAG_STALE) &&
	    scx_bpf_dsq_peek(AGENTCG_SHARED_DSQ)) {
		u32 i;

		if (!now)
			now = bpf_ktime_get_ns();
		for (i = 0; i < AGENTCG_RETAG_MAX; i++)
			if (!retag_stale_head(now))
				break;
	}
	if (agentcg_mode != AGENTCG_MODE_FIFO && nr_throttled_now != 0) {
		if (dispatch_skipping_throttled(cpu, reserve, others, now))
			bstat_inc(AGENTCG_BS_dispatches);
		return;
	}
	if (reserve) {
		if (dispatch_reserving(cpu, others, now))
			bstat_inc(AGENTCG_BS_dispatches);
		return;
	}
	if (scx_bpf_dsq_move_to_local(AGENTCG_SHARED_DSQ))
		bstat_inc(AGENTCG_BS_dispatches);
}

void BPF_STRUCT_OPS(agentcg_runnable, struct task_struct *p, u64 enq_flags)
{
	const struct agentcg_tunables *tn = tun();
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
	follow_task_group(p, t);
	cs = task_cgrp(t);
	if (!cs || t->counted_cgid)
		return;
	if (!cs->cg.nr_runnable) {
		ev |= agentcg_on_runnable(&cs->cg, &glob, now, tn);
		if (cs->cg.seen)
			agentcg_eevdf_place(&cs->cg, &glob);
	}
	if (enq_flags & SCX_ENQ_WAKEUP)
		ev |= agentcg_on_wakeup(&cs->cg, now, tn);
	t->counted_cgid = t->cgid;
	t->counted_slot = t->slot;
	activate_walk(cs, true);
	count_events(ev);
}

void BPF_STRUCT_OPS(agentcg_quiescent, struct task_struct *p, u64 deq_flags)
{
	struct task_ctx *t;
	struct cgrp_state *cs;
	u64 cgid;

	if (agentcg_mode == AGENTCG_MODE_FIFO)
		return;
	t = task_ctx(p);
	if (!t || !t->counted_cgid)
		return;
	cgid = t->counted_cgid;
	t->counted_cgid = 0;
	cs = cgrp_at(t->counted_slot, cgid);
	if (!cs)
		return;
	activate_walk(cs, false);
	if (!cs->cg.nr_runnable) {
		agentcg_on_quiescent(&cs->cg, bpf_ktime_get_ns());
		if (agentcg_eevdf_save_lag(&cs->cg, &glob, tun()))
			count_events(AGENTCG_EV(lag_clamps));
	}
}

/*
 * cpu.max of every limited level: draw runtime, return the slice the
 * tightest level allows (0: some level is empty).
 */
static __always_inline u64 bw_acquire_chain(struct cgrp_state *cs, u64 slice, u64 now, bool *throttled)
{
	u32 i;

	bpf_for(i, 0, AGENTCG_MAX_DEPTH) {
		if (!cs)
			break;
		if (agentcg_bw_limited(&cs->bw)) {
			bool was, ok;
			s64 local;

			bpf_spin_lock(&cs->bw_lock);
			was = cs->bw.throttled;
			ok = agentcg_bw_acquire(&cs->bw, &cs->bw_local_ns, AGENTCG_BW_DEFAULT_SLICE_NS,
						now);
			local = cs->bw_local_ns;
			bpf_spin_unlock(&cs->bw_lock);
			if (!ok) {
				if (!was) {
					__sync_fetch_and_add(&nr_throttled_now, 1);
					count_events(AGENTCG_EV(throttles));
				}
				*throttled = true;
			}
			if (local <= 0)
				slice = 0;
			else if ((u64)local < slice)
				slice = local;
		}
		cs = cgrp_parent(cs);
	}
	return slice;
}

void BPF_STRUCT_OPS(agentcg_running, struct task_struct *p)
{
	const struct agentcg_tunables *tn = tun();
	struct task_ctx *t;
	struct cgrp_state *cs;
	struct cpu_curr *cc;
	bool throttled = false;
	u32 cpu;
	u64 now, left;

	if (agentcg_mode == AGENTCG_MODE_FIFO)
		return;
	t = task_ctx(p);
	if (!t)
		return;
	follow_task_group(p, t);
	now = bpf_ktime_get_ns();
	t->at.started_at_ns = now;
	/* added to cgrp_stat by stopping: one map lookup per run, not two */
	if (t->runnable_at)
		t->wait_ns += agentcg_elapsed(now, t->runnable_at);
	t->runnable_at = 0;
	cs = task_cgrp(t);
	if (t->queued) {
		t->queued = 0;
		if (cs && cs->cg.nr_queued)
			AGENTCG_ATOMIC_ADD(&cs->cg.nr_queued, (u32)-1);
	}
	agentcg_eevdf_picked(&glob, &t->req);
	if (!cs)
		return;
	agentcg_task_picked(&cs->cg, &t->at);
	t->at.boosted = agentcg_has_boost(&cs->cg, now, tn);
	cpu = bpf_get_smp_processor_id();
	cc = bpf_map_lookup_elem(&cpu_currs, &cpu);
	if (cc) {
		cc->deadline = t->req.deadline;
		cc->start = t->req.start;
		cc->req_slice_ns = t->req.slice_ns;
		cc->group_since_ns = agentcg_group_run_since(cc->group_since_ns, cc->stopped_ns,
							     cc->last_cgid == t->cgid, now, tn);
		cc->cgid = t->cgid;
		cc->slot = t->slot;
		cc->started_at_ns = now;
		cc->slice_ns = p->scx.slice;
		cc->ours = 1;
		cc->kicked = 0;
		/* storm_reserve: stopping takes it off again (cc->storm) */
		if (!cc->storm && agentcg_storm_counts(&cs->cg, tn)) {
			cc->storm = 1;
			__sync_fetch_and_add(&glob.storm_cpus, 1);
		}
	}
	/* cpu.max at every level: never run past what the pools still hold */
	if (nr_bw_limited <= 0)
		return;
	left = bw_acquire_chain(cs, p->scx.slice, now, &throttled);
	if (left < p->scx.slice) {
		/* min_slice protects a task that still has quota, not an overrun */
		if (!throttled && agentcg_feat(tn, AGENTCG_F_MIN_SLICE) &&
		    left < (u64)tn->min_slice_us * NSEC_PER_USEC)
			left = (u64)tn->min_slice_us * NSEC_PER_USEC;
		if (left < 100 * NSEC_PER_USEC)
			left = 100 * NSEC_PER_USEC;
		if (p->scx.slice > left)
			p->scx.slice = left;
	}
}

void BPF_STRUCT_OPS(agentcg_stopping, struct task_struct *p, bool runnable)
{
	const struct agentcg_tunables *tn = tun();
	struct task_ctx *t;
	struct cgrp_state *cs, *ls;
	const struct agentcg_strategy_action *sa;
	struct agentcg_cgrp_stat *st;
	struct cpu_curr *cc;
	u64 now, ran;
	u32 pen, qshare, cpu, i;

	if (agentcg_mode == AGENTCG_MODE_FIFO)
		return;
	cpu = bpf_get_smp_processor_id();
	cc = bpf_map_lookup_elem(&cpu_currs, &cpu);
	if (cc) {
		cc->ours = 0;
		cc->kicked = 0;
		if (cc->storm) {
			cc->storm = 0;
			__sync_fetch_and_add(&glob.storm_cpus, (u32)-1);
		}
	}
	t = task_ctx(p);
	if (!t || !t->at.started_at_ns)
		return;
	now = bpf_ktime_get_ns();
	if (cc) {
		cc->stopped_ns = now;
		cc->last_cgid = t->cgid;
	}
	ran = agentcg_elapsed(now, t->at.started_at_ns);
	t->at.started_at_ns = 0;
	if (runnable)
		t->runnable_at = now;
	t->at.weight = p->scx.weight;
	agentcg_task_charge(&t->at, ran);
	cs = task_cgrp(t);
	st = cs ? cgrp_stat_of(cs) : NULL;
	if (st) {
		__sync_fetch_and_add(&st->runtime_ns, ran);
		if (t->wait_ns)
			__sync_fetch_and_add(&st->wait_ns, t->wait_ns);
	}
	t->wait_ns = 0;
	if (!cs)
		return;
	/* the daemon bumps ctl_gen after writing cgrp_ctl: no lookup otherwise */
	if (cs->ctl_gen != ctl_gen) {
		cs->ctl_gen = ctl_gen;
		pen = ctl_mem_penalty(t->cgid);
		if (cs->cg.mem_penalty != pen) {
			cs->cg.mem_penalty = pen;
			sync_weight(cs, tn);
		}
	}
	if (agentcg_fork_tick(&cs->cg, now, tn))
		sync_weight(cs, tn);
	/*
	 * Strategy hook: weight_pct scales the share (scx_class.cc alike), and
	 * V advances by the same scaled charge: V must move as fast as the
	 * groups' cvtime at their shares, and a group at weight_pct 300 moves
	 * its cvtime at a third of its service. Advancing V by the full run
	 * time left every group behind V while a strategy was set; after it
	 * was deleted, a woken task placed at V waited until the hogs caught
	 * up (the strategy_push scenario's stall and watchdog ejection).
	 */
	sa = agentcg_strategy_of_cgrp(t->cgid);
	qshare = agentcg_strategy_qshare(sa, refresh_qshare(cs));
	agentcg_cgrp_charge(&cs->cg, qshare, ran);
	agentcg_eevdf_advance(&glob, agentcg_strategy_charge_ns(sa, ran));
	if (st) {
		st->eff_weight = cs->cg.eff_weight;
		st->mem_penalty = cs->cg.mem_penalty;
		st->fork_storm = cs->cg.storm;
	}
	/* cpu.max: charge every limited level (none: nothing to walk) */
	if (nr_bw_limited <= 0)
		return;
	ls = cs;
	bpf_for(i, 0, AGENTCG_MAX_DEPTH) {
		if (!ls)
			break;
		if (agentcg_bw_limited(&ls->bw)) {
			bool was, ok = true;

			bpf_spin_lock(&ls->bw_lock);
			was = ls->bw.throttled;
			agentcg_bw_charge(&ls->bw, &ls->bw_local_ns, ran);
			if (ls->bw_local_ns <= 0)
				ok = agentcg_bw_acquire(&ls->bw, &ls->bw_local_ns,
							AGENTCG_BW_DEFAULT_SLICE_NS, now);
			bpf_spin_unlock(&ls->bw_lock);
			if (!ok && !was) {
				__sync_fetch_and_add(&nr_throttled_now, 1);
				count_events(AGENTCG_EV(throttles));
			}
		}
		ls = cgrp_parent(ls);
	}
}

s32 BPF_STRUCT_OPS(agentcg_init_task, struct task_struct *p, struct scx_init_task_args *args)
{
	const struct agentcg_tunables *tn = tun();
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
	/* the cgroup's own state in the common case: one lookup */
	cgid = cgrp_id(args->cgroup);
	t->kcgid = cgid;
	cs = cgrp_lookup(cgid);
	if (!cs) {
		cgid = resolve_cgid(cgid);
		cs = cgrp_lookup(cgid);
	}
	t->cgid = cgid;
	t->slot = cs ? cs->slot : 0;
	t->counted_cgid = 0;
	t->counted_slot = 0;
	t->runnable_at = 0;
	t->wait_ns = 0;
	t->queued = 0;
	t->idle_cpu = 0;
	t->fresh = args->fork ? 1 : 0;
	agentcg_task_init(&t->at, p->scx.weight);
	if (!cs)
		return 0;
	t->at.vtime = cs->cg.tvtime_now;
	if (!args->fork)
		return 0;
	st = cgrp_stat_of(cs);
	if (st)
		__sync_fetch_and_add(&st->nr_forks, 1);
	ev = agentcg_on_fork(&cs->cg, &glob, now, tn);
	if (ev & AGENTCG_EV(fork_storms))
		sync_weight(cs, tn);
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

	if (agentcg_mode == AGENTCG_MODE_FIFO)
		return;
	t = task_ctx(p);
	if (!t)
		return;
	bstat_inc(AGENTCG_BS_cgroup_moves);
	set_task_cgrp(t, cgrp_id(to));
}

/* Moves the tasks parked under `cgid` back into the shared queue. */
static __always_inline void unpark(u64 cgid)
{
	struct task_struct *p;

	bpf_for_each(scx_dsq, p, cgid, 0) {
		struct task_ctx *t = task_ctx(p);

		if (t) {
			struct cgrp_state *cs = task_cgrp(t);

			scx_bpf_dsq_move_set_vtime(BPF_FOR_EACH_ITER, t->req.deadline);
			if (cs && !t->queued) {
				AGENTCG_ATOMIC_ADD(&cs->cg.nr_queued, 1u);
				t->queued = 1;
			}
		}
		if (scx_bpf_dsq_move_vtime(BPF_FOR_EACH_ITER, p, AGENTCG_SHARED_DSQ, 0))
			bstat_inc(AGENTCG_BS_unparked);
	}
}

/*
 * Clears a level's throttled flag under its lock; true if it was set. Every
 * 1 -> 0 transition that uncounts nr_throttled_now is decided under the
 * lock (as acquire's 0 -> 1 is): cgroup_exit read the flag unlocked (and
 * left it set) while the period timer could refill the same level on the
 * other CPU, and both uncounted it.
 */
static __always_inline bool bw_unthrottle(struct cgrp_state *cs)
{
	bool was;

	bpf_spin_lock(&cs->bw_lock);
	was = cs->bw.throttled;
	cs->bw.throttled = 0;
	bpf_spin_unlock(&cs->bw_lock);
	return was;
}

/* The cpu.max period timer of one limited cgroup. */
static int bw_timer_fn(void *map, u32 *key, struct cgrp_state *cs)
{
	u64 now = bpf_ktime_get_ns();
	struct agentcg_cgrp_stat *st;
	bool was;
	u32 i;

	if (!cs->cgid)
		return 0; /* its cgroup is gone (cgroup_exit) */
	if (!agentcg_bw_limited(&cs->bw)) {
		cs->bw_armed = 0;
		if (bw_unthrottle(cs))
			__sync_fetch_and_add(&nr_throttled_now, -1);
		unpark(cs->cgid);
		return 0;
	}
	/*
	 * Keep a debt (slices are enforced at tick granularity, so a CPU
	 * overruns its local runtime by up to a tick: the negative local
	 * runtime is paid from the new period's quota by the next acquire); a
	 * positive leftover goes back to the pool, where cpu.max.burst
	 * decides how much of it carries over.
	 */
	bpf_spin_lock(&cs->bw_lock);
	if (cs->bw_local_ns > 0)
		agentcg_bw_return(&cs->bw, &cs->bw_local_ns);
	was = agentcg_bw_refill(&cs->bw, now);
	/* a debt larger than the new quota keeps the level throttled */
	if (was && cs->bw_local_ns <= 0 &&
	    !agentcg_bw_acquire(&cs->bw, &cs->bw_local_ns, AGENTCG_BW_DEFAULT_SLICE_NS, now))
		was = false;
	bpf_spin_unlock(&cs->bw_lock);
	if (was) {
		__sync_fetch_and_add(&nr_throttled_now, -1);
		bstat_inc(AGENTCG_BS_refills);
		unpark(cs->cgid);
		/*
		 * Every CPU, not only the idle ones: SCX_KICK_IDLE skips a CPU
		 * that is on its way into idle (its dispatch already found the
		 * queue empty), which then sleeps with the unparked tasks queued
		 * until some other event; the daemon's 100 Hz wakeups used to
		 * hide that (cpu.max 0.45-0.47 of 0.50 once they stopped). A
		 * plain kick reschedules a busy CPU without preempting it.
		 */
		bpf_for(i, 0, MAX_KICK_CPUS) {
			if (i >= nr_cpus)
				break;
			scx_bpf_kick_cpu(i, 0);
		}
	}
	st = cgrp_stat_of(cs);
	if (st) {
		st->nr_periods = cs->bw.nr_periods;
		st->nr_throttled = cs->bw.nr_throttled;
		st->throttled_ns = cs->bw.throttled_ns;
		st->nr_bursts = cs->bw.nr_bursts;
		st->burst_ns = cs->bw.burst_time_ns;
	}
	bpf_timer_start(&cs->bw_timer, cs->bw.period_ns, 0);
	return 0;
}

static __always_inline void bw_set(struct cgrp_state *cs, u64 period_us, u64 quota_us,
				   u64 burst_us)
{
	u64 quota_ns = quota_us >= BW_UNLIMITED_US ? 0 : quota_us * NSEC_PER_USEC;
	u64 burst_ns = burst_us >= BW_UNLIMITED_US ? 0 : burst_us * NSEC_PER_USEC;
	bool was;

	bpf_spin_lock(&cs->bw_lock);
	was = cs->bw.throttled;
	agentcg_bw_init(&cs->bw, quota_ns, period_us * NSEC_PER_USEC);
	agentcg_bw_set_burst(&cs->bw, burst_ns);
	cs->bw_local_ns = 0;
	bpf_spin_unlock(&cs->bw_lock);
	if (was)
		__sync_fetch_and_add(&nr_throttled_now, -1);
	if (quota_ns && !cs->bw_counted) {
		cs->bw_counted = 1;
		__sync_fetch_and_add(&nr_bw_limited, 1);
	} else if (!quota_ns && cs->bw_counted) {
		cs->bw_counted = 0;
		__sync_fetch_and_add(&nr_bw_limited, -1);
	}
	if (quota_ns && !cs->bw_armed) {
		cs->bw_armed = 1;
		bpf_timer_start(&cs->bw_timer, cs->bw.period_ns, 0);
	}
}

s32 BPF_STRUCT_OPS_SLEEPABLE(agentcg_cgroup_init, struct cgroup *cgrp,
			     struct scx_cgroup_init_args *args)
{
	struct cgrp_state *cs;
	struct cgrp_zero_bytes *zero;
	struct agentcg_cgrp_stat st0 = {};
	u32 key0 = 0, slot = AGENTCG_MAX_CGRPS, parent_slot = 0;
	u64 cgid = cgrp_id(cgrp), parent = 0;
	u32 depth = 0;
	s32 ret;

	if (agentcg_mode == AGENTCG_MODE_FIFO)
		return 0;
	if (cgrp->level > 0) {
		struct cgrp_state *ps;
		u64 pid = ancestor_id(cgrp, cgrp->level - 1);

		/* the nearest ancestor with state: the parent or its alias */
		parent = pid ? resolve_cgid(pid) : 0;
		ps = parent ? cgrp_lookup(parent) : NULL;
		if (!ps)
			parent = ROOT_CGID;
		else
			parent_slot = ps->slot;
		depth = ps ? ps->depth + 1 : 1;
		if (depth + 1 >= AGENTCG_MAX_DEPTH) {
			/* scheduled as part of its nearest ancestor with state */
			bstat_inc(AGENTCG_BS_cgrp_overflow);
			bpf_map_update_elem(&cgrp_alias, &cgid, &parent, BPF_ANY);
			return 0;
		}
	}
	ret = create_dsq(cgid, -1); /* its park queue (cpu.max) */
	if (ret)
		return ret;
	st0.weight = args->weight;
	st0.eff_weight = args->weight;
	/* a zeroed element (the state is ~400 bytes: not on the 512-byte stack) */
	zero = bpf_map_lookup_elem(&cgrp_zero, &key0);
	if (!zero)
		return -2; /* -ENOENT */
	/* a slot: one given back by cgroup_exit, else the next never used */
	cs = NULL;
	if (bpf_map_pop_elem(&free_slots, &slot)) {
		slot = __sync_fetch_and_add(&next_slot, 1);
		if (slot >= AGENTCG_MAX_CGRPS)
			__sync_fetch_and_add(&next_slot, -1);
	}
	/* zeroed, its id last: a stale slot of the cgroup that had it before
	 * never matches this one (cgrp_at) */
	if (slot < AGENTCG_MAX_CGRPS) {
		if (!bpf_map_update_elem(&cgrp_states, &slot, zero, BPF_ANY))
			cs = bpf_map_lookup_elem(&cgrp_states, &slot);
		/* a slot taken and not used goes back, whatever failed */
		if (!cs || bpf_map_update_elem(&cgrp_slots, &cgid, &slot, BPF_NOEXIST)) {
			bpf_map_push_elem(&free_slots, &slot, 0);
			cs = NULL;
		}
	}
	if (!cs) {
		destroy_dsq(cgid);
		bstat_inc(AGENTCG_BS_cgrp_overflow);
		/* table full: its tasks use the nearest ancestor's state */
		if (parent)
			bpf_map_update_elem(&cgrp_alias, &cgid, &parent, BPF_ANY);
		return 0;
	}
	agentcg_cgrp_init(&cs->cg, args->weight);
	cs->parent = parent;
	cs->parent_slot = parent_slot;
	cs->slot = slot;
	cs->depth = depth;
	cs->cgid = cgid;
	st0.cgid = cgid;
	bpf_map_update_elem(&cgrp_stat, &slot, &st0, BPF_ANY);
	/* -EBUSY on a reused slot whose timer the update left: it is reused */
	bpf_timer_init(&cs->bw_timer, &cgrp_states, 1 /* CLOCK_MONOTONIC */);
	bpf_timer_set_callback(&cs->bw_timer, bw_timer_fn);
	bw_set(cs, args->bw_period_us, args->bw_quota_us, args->bw_burst_us);
	return 0;
}

void BPF_STRUCT_OPS(agentcg_cgroup_exit, struct cgroup *cgrp)
{
	struct agentcg_cgrp_stat st0 = {};
	u64 cgid = cgrp_id(cgrp);
	struct cgrp_state *cs;
	u32 slot;

	if (agentcg_mode == AGENTCG_MODE_FIFO)
		return;
	cs = cgrp_lookup(cgid);
	bpf_map_delete_elem(&cgrp_alias, &cgid);
	if (!cs)
		return;
	if (bw_unthrottle(cs))
		__sync_fetch_and_add(&nr_throttled_now, -1);
	if (cs->bw_counted) {
		cs->bw_counted = 0;
		__sync_fetch_and_add(&nr_bw_limited, -1);
	}
	/* the slot is free once its id is gone (the timer callback then stops
	 * re-arming) and its timer cancelled */
	bpf_map_delete_elem(&cgrp_slots, &cgid);
	cs->cgid = 0;
	bpf_timer_cancel(&cs->bw_timer);
	slot = cs->slot;
	bpf_map_update_elem(&cgrp_stat, &slot, &st0, BPF_ANY);
	bpf_map_push_elem(&free_slots, &slot, 0);
	destroy_dsq(cgid);
}

void BPF_STRUCT_OPS(agentcg_cgroup_set_weight, struct cgroup *cgrp, u32 weight)
{
	u64 cgid = cgrp_id(cgrp);
	struct cgrp_state *cs = cgrp_lookup(cgid);
	struct agentcg_cgrp_stat *st = cs ? cgrp_stat_of(cs) : NULL;

	if (cs) {
		cs->cg.weight = weight;
		sync_weight(cs, tun());
	}
	if (st)
		st->weight = weight;
}

void BPF_STRUCT_OPS(agentcg_cgroup_set_bandwidth, struct cgroup *cgrp, u64 period_us,
		    u64 quota_us, u64 burst_us)
{
	struct cgrp_state *cs = cgrp_lookup(cgrp_id(cgrp));

	if (cs)
		bw_set(cs, period_us, quota_us, burst_us);
}

/* A CPU's min_slice re-check ("not before T"): preempt if a queued request
 * is now ordered before the running one. */
static int preempt_timer_fn(void *map, u32 *key, struct cpu_curr *cc)
{
	struct task_struct *head;
	struct task_ctx *ht;
	u64 now = bpf_ktime_get_ns();
	struct agentcg_preempt r;
	u64 head_deadline;

	cc->timer_armed = 0;
	bstat_inc(AGENTCG_BS_preempt_timer_fires);
	if (!cc->ours)
		return 0;
	head = scx_bpf_dsq_peek(AGENTCG_SHARED_DSQ);
	if (!head)
		return 0;
	head_deadline = queued_key(head, tun());
	ht = task_ctx(head);
	r = agentcg_eevdf_preempt(head_deadline, curr_deadline(cc, tun()),
				  protect_since(cc, ht ? ht->cgid : 0), cc->slice_ns, now, tun());
	if (r.verdict == AGENTCG_PREEMPT_NOW)
		preempt_kick(*key, cc);
	else if (r.verdict == AGENTCG_PREEMPT_AT)
		arm_recheck(cc, r.at_ns, now);
	return 0;
}

s32 BPF_STRUCT_OPS_SLEEPABLE(agentcg_init)
{
	u32 i;
	s32 ret;

	if (agentcg_mode == AGENTCG_MODE_FIFO)
		return create_dsq(AGENTCG_SHARED_DSQ, -1);
	if (nr_cpus > AGENTCG_MAX_CPUS) {
		agentcg_error1("agentcg: %u CPUs, more than AGENTCG_MAX_CPUS: refusing to load",
			       nr_cpus);
		return -7; /* -E2BIG */
	}
	ret = create_dsq(AGENTCG_SHARED_DSQ, -1);
	if (ret)
		return ret;
	glob.nr_cpus = nr_cpus; /* the epochs' cap (agentcg.h agentcg_epoch_start) */
	bpf_for(i, 0, AGENTCG_MAX_CPUS) {
		struct cpu_curr *cc;

		if (i >= nr_cpus)
			break;
		cc = bpf_map_lookup_elem(&cpu_currs, &i);
		if (!cc)
			break;
		bpf_timer_init(&cc->timer, &cpu_currs, 1 /* CLOCK_MONOTONIC */);
		bpf_timer_set_callback(&cc->timer, preempt_timer_fn);
	}
	return 0;
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
	.dequeue = (void *)agentcg_dequeue,
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
