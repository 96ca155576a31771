// SPDX-License-Identifier: GPL-2.0-only
// The scheduling-class interface of the CPU model. It mirrors sched_ext's
// struct sched_ext_ops so that a class written against it (cfs, fifo, and
// flatcg/agentcg through core/) maps one-to-one onto a BPF scheduler:
//
//   select_cpu(p, prev_cpu, wake_flags)  -> CPU for a waking task
//   enqueue(p, enq_flags)                -> task became runnable (or its slice ended)
//   dequeue(p)                           -> task leaves the class's queues unrun
//   dispatch(cpu, prev)                  -> CPU is free: give it a task + slice
//   running(p, cpu) / stopping(p, cpu, runnable)
//   init_task(p, fork) / exit_task(p)    -> forks are seen here, as in sched_ext
//   cgroup_init/exit/move/set_weight/set_bandwidth
//   on_timer(cookie)                     -> a timer the class armed (bpf_timer)
//
// The CPU model (sim/cpu/cpu_model.h) owns tasks and CPUs, charges context
// switches, and records metrics; a class only decides. Per-task and
// per-cgroup state of a class lives in the class, indexed by Task::id and
// CgroupId (like BPF task storage and cgroup maps).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "agentcg/strategy.h"
#include "sim/time.h"
#include "sim/trace/cgroup_info.h"

namespace agentcg::sim {

// The cgroup ids and knobs are the trace library's (sim/trace/cgroup_info.h).
using trace::CgroupId;
using trace::CgroupInfo;
using trace::kRootCgroup;

enum class TaskState { kNew, kRunnable, kRunning, kBlocked, kExited };

// Flags as in sched_ext (names kept close to SCX_ENQ_* / SCX_WAKE_*).
enum EnqFlags : std::uint64_t {
  kEnqWakeup = 1u << 0,     // the task just woke up (SCX_ENQ_WAKEUP)
  kEnqHead = 1u << 1,       // SCX_ENQ_HEAD
  kEnqPreempted = 1u << 2,  // re-enqueued after its slice ended or it was preempted
  kEnqNew = 1u << 3,        // first enqueue of a forked task (wake_up_new_task)
  kEnqFound = 1u << 4,      // with kEnqWakeup: a task a capture found running (CpuModel::set_present)
};
enum WakeFlags : std::uint64_t {
  kWakeTtwu = 1u << 0,  // SCX_WAKE_TTWU
  kWakeFork = 1u << 1,  // SCX_WAKE_FORK
  kWakeSync = 1u << 2,  // SCX_WAKE_SYNC
};

struct Task {
  std::uint32_t id = 0;      // dense index into the model's task table
  std::int64_t pid = 0;
  CgroupId cgroup = kRootCgroup;
  TaskState state = TaskState::kNew;
  int cpu = -1;              // CPU it runs on (kRunning) or last ran on
  std::uint32_t weight = 100;  // task weight on the cpu.weight scale (nice 0 = 100)
  Time runnable_since;       // when it last became runnable
  Time started_at;           // when it last started running
  Time sum_exec;             // total CPU time received
  std::uint64_t nr_switches = 0;
};

struct Dispatch {
  Task* task = nullptr;  // nullptr: nothing to run, the CPU goes idle
  Time slice;            // how long it may run before stopping(runnable=true)
};

// What a class may call on the CPU model (sched_ext kfuncs and helpers).
class SchedContext {
 public:
  virtual ~SchedContext() = default;
  virtual Time now() const = 0;
  virtual int nr_cpus() const = 0;
  virtual Task* cpu_curr(int cpu) const = 0;  // nullptr when idle
  virtual bool cpu_idle(int cpu) const = 0;
  // The lowest-numbered idle CPU, preferring `prefer` when it is idle; -1 if none.
  virtual int pick_idle_cpu(int prefer) const = 0;
  // Word w (CPUs 64w..64w+63) of the idle-CPU mask (bit set: no task on
  // it), the scx_bpf_get_idle_cpumask() a BPF select_cpu reads.
  virtual std::uint64_t idle_mask_word(std::size_t w) const {
    std::uint64_t m = 0;
    for (std::size_t b = 0; b < 64 && w * 64 + b < static_cast<std::size_t>(nr_cpus()); ++b)
      if (cpu_idle(static_cast<int>(w * 64 + b))) m |= std::uint64_t{1} << b;
    return m;
  }
  // machine.runqueues: true when classes that can should keep one run queue
  // per CPU (take a task on the CPU select_cpu chose, dispatch(cpu) from
  // that CPU's queue, balance); false: one machine-wide queue.
  virtual bool per_cpu_runqueues() const { return false; }
  // The kernel's placement for the fair class (select_task_rq_fair(),
  // simplified), for classes that model it (eevdf/cfs with per-CPU queues)
  // and as the reference for a BPF select_cpu:
  //  - fork (kWakeFork): find_idlest_cpu(): an idle CPU (prev_cpu, the
  //    parent's, first), else the CPU with the fewest tasks (running +
  //    SchedClass::nr_queued), prev_cpu on a tie, else the lowest;
  //  - wakeup: prev_cpu if idle; else select_idle_sibling(): an idle CPU
  //    (without a kick pending first); else prev_cpu, where the task waits
  //    for that CPU (or a balancer pulls it).
  virtual int select_cpu_fair(const Task& p, int prev_cpu, std::uint64_t wake_flags) const {
    (void)p;
    (void)wake_flags;
    const int idle = pick_idle_cpu(prev_cpu);
    return idle >= 0 ? idle : (prev_cpu >= 0 ? prev_cpu : 0);
  }
  // Whether the kernel's load balancer would move tasks now (periodic and
  // newidle balancing): machine.balance when_overutilized with
  // energy-aware placement keeps tasks where the wakeup placement put them
  // while no CPU is overutilized (config/config.h MachineConfig::Balance).
  virtual bool load_balance_allowed() const { return true; }
  // scx_bpf_kick_cpu: an idle CPU calls dispatch(); with preempt, a busy CPU
  // stops its current task (stopping(runnable=true), enqueue) and dispatches.
  virtual void kick_cpu(int cpu, bool preempt) = 0;
  // The fair class's resched_curr_lazy(): the CPU's running task should
  // yield. Under machine.preempt lazy it does so at its next return to
  // user space or the next tick; otherwise at once (kick_cpu with preempt).
  virtual void resched_curr_lazy(int cpu) { kick_cpu(cpu, true); }
  // A one-shot timer that calls on_timer(cookie) at `at`; returns a handle
  // for cancel_timer. Classes use it for bandwidth refills and boost windows.
  virtual std::uint64_t arm_timer(Time at, std::uint64_t cookie) = 0;
  virtual void cancel_timer(std::uint64_t handle) = 0;
  virtual const CgroupInfo& cgroup(CgroupId id) const = 0;
  virtual std::size_t nr_cgroups() const = 0;
  virtual const std::vector<CgroupId>& cgroup_children(CgroupId id) const = 0;
  virtual Task& task(std::uint32_t id) = 0;
  // Reports a bandwidth throttle transition of a cgroup (for cpu.stat-like
  // counters in results.json): throttled=true when its quota ran out.
  // Seed 001 strategies (sim/strategy_table.h): the action for a task (its
  // PID rule, else its cgroup's) or a cgroup; nullptr = none, the default.
  virtual const agentcg_strategy_action* strategy_of_task(const Task& p) const {
    (void)p;
    return nullptr;
  }
  virtual const agentcg_strategy_action* strategy_of_cgroup(CgroupId id) const {
    (void)id;
    return nullptr;
  }
  virtual void note_throttle(CgroupId id, bool throttled) = 0;
  virtual void note_period(CgroupId id) = 0;
  // The cgroup's memory.events "high" count (what agentcgroupd polls to
  // drive mem_penalty; the simulator's memory model produces it).
  virtual std::uint64_t memory_events_high(CgroupId id) const = 0;
  // Bumps a named policy counter (core/ counter list) for results.json.
  virtual void count(std::string_view counter, std::uint64_t n = 1) = 0;
  // The same by core/ counter id (agentcg/counters.h, < AGENTCG_NR_COUNTERS):
  // the per-event path, with no name look-up.
  virtual void count_id(std::uint32_t counter_id, std::uint64_t n = 1) = 0;
  // The policy's new-step detector fired for cgroup `id` now (agentcg's
  // new_steps): results.json scores these against the trace's annotated
  // steps (precision, recall). Classes without a detector never call it.
  virtual void note_new_step(CgroupId id) { (void)id; }
};

class SchedClass {
 public:
  virtual ~SchedClass() = default;
  virtual std::string_view name() const = 0;
  // Whether the live counterpart runs under sched_ext (a BPF program), so
  // the machine's sched_ext costs apply (config MachineConfig::ext_*).
  virtual bool sched_ext() const { return false; }
  // Called once, after the cgroup tree exists and before any task.
  virtual void init(SchedContext& ctx) = 0;

  // The CPU for a waking or new task (the model stores it in p.cpu before
  // enqueue). A class with one global queue may return any CPU (the model
  // kicks it when idle); a class with per-CPU queues queues p on it.
  virtual int select_cpu(Task& p, int prev_cpu, std::uint64_t wake_flags) = 0;
  // Tasks queued (runnable, not running) on a CPU's own run queue, for the
  // default placement's idlest-CPU search; 0 for classes with global queues.
  virtual std::uint32_t nr_queued(int cpu) const {
    (void)cpu;
    return 0;
  }
  virtual void enqueue(Task& p, std::uint64_t enq_flags) = 0;
  virtual void dequeue(Task& p) = 0;
  virtual Dispatch dispatch(int cpu, Task* prev) = 0;
  virtual void running(Task& p, int cpu) = 0;
  virtual void stopping(Task& p, int cpu, bool runnable) = 0;
  virtual void init_task(Task& p, bool fork) = 0;
  virtual void exit_task(Task& p) = 0;

  virtual void cgroup_init(const CgroupInfo& cg) = 0;
  virtual void cgroup_exit(const CgroupInfo& cg) { (void)cg; }
  virtual void cgroup_move(Task& p, CgroupId from, CgroupId to) = 0;
  virtual void cgroup_set_weight(CgroupId cg, std::uint32_t weight) = 0;
  virtual void cgroup_set_bandwidth(CgroupId cg, std::optional<std::uint64_t> quota_us,
                                    std::uint64_t period_us) = 0;
  virtual void on_timer(std::uint64_t cookie) { (void)cookie; }
  // What a task's next wakeup placement reads of its past, for a replay's
  // warm start (CpuModel::placement_history / set_present): CFS its
  // vruntime's distance from its run queue's min_vruntime, EEVDF its lag;
  // nullopt where the class keeps none. restore_placement() gives a task
  // just initialised (init_task) that past for its first enqueue.
  virtual std::optional<std::int64_t> placement_state(const Task& p) const {
    (void)p;
    return std::nullopt;
  }
  virtual void restore_placement(Task& p, std::int64_t state) {
    (void)p;
    (void)state;
  }
  // Whether the class runs a new-step detector (calls note_new_step()), so
  // that results.json scores it; false: precision and recall are null.
  virtual bool has_step_detector() const { return false; }
};

}  // namespace agentcg::sim
