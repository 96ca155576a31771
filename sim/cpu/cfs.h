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
// load-weighted average V of the queued entities) with the earliest virtual
// deadline runs; deadline = vruntime + base_slice x 1024 / weight (base_slice
// = the min_granularity value, 0.75 ms x factor), renewed when reached; a
// task runs one base slice per dispatch; a waking task is placed at V minus
// the lag it kept when it slept (clamped like update_entity_lag()), a new
// one at V with half a slice to its first deadline (PLACE_DEADLINE_INITIAL);
// a wakeup preempts when the woken entity is eligible with an earlier
// deadline than curr's. V leaves out the group's running entities (the
// kernel counts its one curr); no RUN_TO_PARITY, no DELAY_DEQUEUE. V is
// recomputed by a scan of the queue (O(queued) per pick and wakeup, where the
// kernel keeps running sums): fine for tests and traces, slower than `cfs`
// on very long queues.
// Left out: per-CPU run queues and load balancing (one global queue stands
// for ideal balancing), PELT load tracking and its effect on group shares,
// SMT/NUMA domains, autogroup, nice levels.
#pragma once

#include <memory>

#include "core/config/config.h"
#include "sim/cpu/sched_class.h"

namespace agentcg::sim {

std::unique_ptr<SchedClass> make_cfs_class(const config::CfsConfig& cfg);
std::unique_ptr<SchedClass> make_eevdf_class(const config::CfsConfig& cfg);
// FIFO across the machine with 20 ms slices (SCX_SLICE_DFL), ignoring cgroups.
std::unique_ptr<SchedClass> make_fifo_class();

}  // namespace agentcg::sim
