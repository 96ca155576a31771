// SPDX-License-Identifier: GPL-2.0-only
// The kernel-default baseline: CFS with group scheduling and CFS bandwidth
// control, and a simple FIFO class (scx_simple's FIFO mode).
//
// CFS as modelled (kernel/sched/fair.c, pre-EEVDF semantics):
//  - Hierarchical fair queues: every cgroup is a run queue holding its
//    tasks' entities and its child groups' entities; an entity's vruntime
//    advances by ran x 1024 / weight (cpu.weight 100 = nice 0 = 1024); pick
//    descends from the root taking the smallest vruntime at each level.
//  - Placement: a waking entity gets vruntime = max(own, min_vruntime -
//    latency/2) (GENTLE_FAIR_SLEEPERS); a new task starts one vslice after
//    min_vruntime (START_DEBIT).
//  - Wakeup preemption (check_preempt_wakeup): at the level where the woken
//    task and the target CPU's current task meet, preempt when curr's
//    vruntime leads by more than wakeup_granularity scaled by the woken
//    entity's weight.
//  - Slices: period = latency, or nr x min_granularity beyond nr_latency
//    tasks per CPU, divided among the runnable tasks of a CPU.
//  - Bandwidth control through core/include/agentcg/bandwidth.h (cpu.max).
// EEVDF (policy `eevdf`, kernels >= 6.6): the same queues, vruntime,
// group scheduling and bandwidth, with EEVDF's pick, placement and
// preemption instead: at each level the eligible entity (vruntime <= the
// load-weighted average V of the entities on the run queue) with the
// earliest virtual deadline runs; deadline = vruntime + base_slice x 1024 /
// weight (base_slice = the min_granularity value, 0.75 ms x factor), renewed
// when reached; a task runs one base slice per dispatch; an entity that
// leaves the run queue (a task that sleeps, a group whose last runnable task
// sleeps) keeps its lag V - v, clamped like update_entity_lag(); a waking
// entity is placed at V minus that lag (inflated by (W + w) / W as
// place_entity() does), a new task at V with half a slice to its first
// deadline (PLACE_DEADLINE_INITIAL); a wakeup preempts when pick_eevdf()
// over the queued entities and curr (its run so far counted in V) takes the
// woken entity, and not while an eligible curr is before the deadline it
// was picked with (RUN_TO_PARITY, cfs.run_to_parity); the preemption is the
// machine's resched_curr_lazy() (machine.preempt). As in the kernel, V
// counts the running entities (curr) as well as the queued ones, and a
// running entity stays on the run queue: a task whose slice ended is
// re-queued with its vruntime, and so is its group's entity.
// Cost: V is kept as the kernel's running sums (avg_vruntime, avg_load:
// O(1) per change) and each queue is a treap ordered by vruntime whose nodes
// carry their subtree's earliest deadline, so a pick is one O(log n)
// descent (the kernel's rbtree augmented with min_vruntime, mirrored).
// No DELAY_DEQUEUE, no PREEMPT_SHORT (every slice is the base slice).
// Fixed here (found with 36 recorded sessions packed on 2 CPUs): the model
// used to take a group's entity off its parent's queue whenever the group
// had nothing queued, even while its tasks ran, and to re-place it at V when
// a preempted task came back: a CPU-bound group was reset to V at every
// slice end, V crept forward slowly, and a group that had run ahead waited
// until V reached it (29.8 s runnable). Group entities now keep their
// vruntime and lag like task entities.
// Run queues (machine.runqueues): `global` is one machine-wide queue
// hierarchy (ideal balancing, the model before per-CPU queues); `per_cpu`
// keeps one hierarchy per CPU as the kernel does (a task group has a cfs_rq
// and a group entity on every CPU):
//  - placement by SchedContext::select_cpu_fair() (select_task_rq_fair,
//    simplified): a waking task takes its previous CPU if idle, else an
//    idle CPU, else queues on its previous CPU; a new task the idlest CPU;
//  - a group entity's weight on a CPU is cpu.weight x (the group's runnable
//    load there) / (its load on all CPUs), at least 2 (calc_group_shares()
//    on runnable weights instead of PELT averages);
//  - a CPU about to go idle pulls the next task of the CPU with the most
//    queued tasks among those running or queuing two or more (newidle
//    balance: the one task queued on an idle CPU, kicked for it, stays);
//    every cfs.balance_interval_ns (4 ms)
//    while tasks are queued, tasks move from the CPU with the most tasks to
//    the one with the fewest until they differ by less than two (one flat
//    domain; a moved task may preempt); cfs moves vruntime relative to the
//    queues' min_vruntime, eevdf keeps the lag;
//  - cpu.max: one pool per cgroup, local runtime and throttling per CPU.
// Left out: PELT load tracking, SMT/NUMA domains and the LLC boundary (one
// domain), cache-hot task selection in balancing, wake_affine (the waker's
// CPU), autogroup, nice levels.
#pragma once

#include <memory>

#include "config/config.h"
#include "sim/cpu/sched_class.h"

namespace agentcg::sim {

std::unique_ptr<SchedClass> make_cfs_class(const config::CfsConfig& cfg);
std::unique_ptr<SchedClass> make_eevdf_class(const config::CfsConfig& cfg);
// FIFO across the machine with 20 ms slices (SCX_SLICE_DFL), ignoring cgroups.
std::unique_ptr<SchedClass> make_fifo_class();

}  // namespace agentcg::sim
