/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * agentcg monitor: per-cgroup scheduling metrics from the scheduler
 * tracepoints, with no sched_ext needed (the strategies design's sched_monitor.bpf.o).
 * Loaded by live/agentcgroupd in every daemon.mode (none/monitor, agentcg,
 * flatcg, scx) through live/monitor/ (skeleton monitor.skel.h); one
 * exporter, whichever scheduler runs.
 *
 * BTF tracepoints (tp_btf, attach by name, no tracefs needed):
 *   sched_switch(preempt, prev, next, prev_state): prev's run ends
 *     (runtime: the growth of the kernel's own se.sum_exec_runtime over
 *     the run, already updated by put_prev/dequeue when the tracepoint
 *     fires, for every class incl. sched_ext; tracepoint timestamps
 *     instead were measured 30-50 % short for a 1 ms sleeper on this
 *     development VM, because the kernel's run window starts at the pick in
 *     __schedule() on rq_clock_task), voluntary iff !preempt && prev_state != TASK_RUNNING (the
 *     kernel's own nvcsw/nivcsw choice in __schedule()); a prev that stays
 *     runnable starts waiting; next's wait ends (wait, run_count, and the
 *     wakeup-latency histogram when the wait began with a wakeup).
 *   sched_wakeup / sched_wakeup_new(p): p starts waiting (fires after p is
 *     on a run queue, ttwu_do_wakeup / wake_up_new_task).
 *   sched_migrate_task(p, dest_cpu): a migration of p.
 *   sched_process_fork(parent, child) / sched_process_exit(p): counts.
 * These are the same points the kernel's schedstat uses, so runtime,
 * run_delay and pcount in /proc/<pid>/schedstat and the ctxt_switches in
 * /proc/<pid>/status are the reference (tests/monitor_native_test.sh).
 *
 * Invariants: a task's cgroup is its cgroup v2 (default hierarchy) cgroup at
 * the time of the event (task->cgroups->dfl_cgrp->kn->id,
 * the id user space sees as the directory's inode number); per-task state
 * lives in task storage (freed with the task); stats are per-CPU, so no
 * atomics on the hot path. The idle tasks (pid 0) are not accounted.
 *
 * Limitations: a task's running time is charged to the cgroup it is in when
 * it is switched out (a move while running charges the whole run to the new
 * cgroup); the runtime of a task that is still running is counted at its
 * next switch.
 * Wait after a cgroup move is charged to the new cgroup.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/monitor_intf.h"

char _license[] SEC("license") = "GPL";

#define TASK_RUNNING 0

struct mon_task {
	u64 exec_in;  /* se.sum_exec_runtime when switched in */
	u32 running;  /* switched in and not yet out (as far as we saw) */
	u32 pad0;
	u64 wait_ns;  /* became runnable at; 0 = not waiting */
	u32 woken;    /* the wait began with a wakeup (histogram) */
	u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct mon_task);
} mon_tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, AGENTCG_MON_MAX_CGRPS);
	__type(key, u64);
	__type(value, struct agentcg_mon_cgrp_stat);
} mon_cgrp SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, AGENTCG_MON_NR_GLOBAL);
	__type(key, u32);
	__type(value, u64);
} mon_global SEC(".maps");

static __always_inline void count_global(u32 idx)
{
	u64 *v = bpf_map_lookup_elem(&mon_global, &idx);

	if (v)
		(*v)++;
}

/* Direct BTF pointer loads (the verifier turns them into exception-
 * handled PROBE_MEM loads, CO-RE-relocated through vmlinux.h's
 * preserve_access_index): no helper call per hop, unlike BPF_CORE_READ. */
static __always_inline u64 cgid_of(struct task_struct *p)
{
	return p->cgroups->dfl_cgrp->kn->id;
}

static struct agentcg_mon_cgrp_stat *cgrp_stat(struct task_struct *p)
{
	static const struct agentcg_mon_cgrp_stat zero;
	struct agentcg_mon_cgrp_stat *s;
	u64 id = cgid_of(p);

	s = bpf_map_lookup_elem(&mon_cgrp, &id);
	if (s)
		return s;
	/* BPF_NOEXIST: a racing insert on another CPU is fine (per-CPU values). */
	bpf_map_update_elem(&mon_cgrp, &id, &zero, BPF_NOEXIST);
	s = bpf_map_lookup_elem(&mon_cgrp, &id);
	if (!s)
		count_global(AGENTCG_MON_G_cgrp_full);
	return s;
}

static __always_inline struct mon_task *task_of(struct task_struct *p)
{
	struct mon_task *t = bpf_task_storage_get(&mon_tasks, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (!t)
		count_global(AGENTCG_MON_G_no_task_storage);
	return t;
}

static __always_inline u32 lat_bucket(u64 lat_ns)
{
	u64 us = lat_ns / 1000;
	u32 b = 0;

	/* bounded: at most AGENTCG_MON_LAT_BUCKETS - 1 steps */
	for (int i = 0; i < AGENTCG_MON_LAT_BUCKETS - 1; i++) {
		if (us < (1ULL << i))
			break;
		b++;
	}
	return b;
}

static __always_inline void start_wait(struct task_struct *p, u64 now, u32 woken)
{
	struct mon_task *t;

	if (!p->pid)
		return;
	t = task_of(p);
	if (!t)
		return;
	t->wait_ns = now;
	t->woken = woken;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(mon_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	u64 now = bpf_ktime_get_ns();
	struct agentcg_mon_cgrp_stat *s;
	struct mon_task *t;

	count_global(AGENTCG_MON_G_events);
	if (prev->pid) {
		t = task_of(prev);
		s = cgrp_stat(prev);
		if (t && s) {
			u64 exec = prev->se.sum_exec_runtime;

			if (t->running && exec > t->exec_in)
				s->runtime_ns += exec - t->exec_in;
			t->running = 0;
			if (!preempt && prev_state != TASK_RUNNING) {
				s->nvcsw++;
				t->wait_ns = 0;
			} else {
				s->nivcsw++;
				t->wait_ns = now; /* still runnable: waits again */
				t->woken = 0;
			}
		}
	}
	if (next->pid) {
		t = task_of(next);
		s = cgrp_stat(next);
		if (t && s) {
			s->run_count++;
			if (t->wait_ns && now > t->wait_ns) {
				u64 w = now - t->wait_ns;

				s->wait_ns += w;
				if (t->woken) {
					u32 b = lat_bucket(w);

					if (b < AGENTCG_MON_LAT_BUCKETS)
						s->lat_hist[b]++;
					s->lat_sum_ns += w;
				}
			}
			t->wait_ns = 0;
			t->woken = 0;
			t->exec_in = next->se.sum_exec_runtime;
			t->running = 1;
		}
	}
	return 0;
}

/* sched_wakeup and sched_wakeup_new count alike: the task starts waiting. */
static __always_inline int on_wakeup(struct task_struct *p)
{
	struct agentcg_mon_cgrp_stat *s;

	count_global(AGENTCG_MON_G_events);
	if (!p->pid)
		return 0;
	start_wait(p, bpf_ktime_get_ns(), 1);
	s = cgrp_stat(p);
	if (s)
		s->wakeups++;
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(mon_sched_wakeup, struct task_struct *p)
{
	return on_wakeup(p);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(mon_sched_wakeup_new, struct task_struct *p)
{
	return on_wakeup(p);
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(mon_sched_migrate_task, struct task_struct *p, int dest_cpu)
{
	struct agentcg_mon_cgrp_stat *s;

	count_global(AGENTCG_MON_G_events);
	if (!p->pid)
		return 0;
	s = cgrp_stat(p);
	if (s)
		s->migrations++;
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(mon_sched_process_fork, struct task_struct *parent, struct task_struct *child)
{
	struct agentcg_mon_cgrp_stat *s;

	count_global(AGENTCG_MON_G_events);
	s = cgrp_stat(parent);
	if (s)
		s->forks++;
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(mon_sched_process_exit, struct task_struct *p)
{
	struct agentcg_mon_cgrp_stat *s;

	count_global(AGENTCG_MON_G_events);
	if (!p->pid)
		return 0;
	s = cgrp_stat(p);
	if (s)
		s->exits++;
	return 0;
}
