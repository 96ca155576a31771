// SPDX-License-Identifier: GPL-2.0-only
// The modelled machine: N CPUs, the cgroup tree, a minimal memory model, and
// the replay of a trace's processes, driven by one scheduling class
// (sim/cpu/sched_class.h) on a shared Simulator.
//
// What is modelled (and what is not) -- see README.md "The CPU model":
//  - Each process is one task. Its ops are interpreted in order: `run`
//    makes it runnable until it has received that much CPU time (scaled by
//    machine.speed_pct), `sleep`/`io` block it for a duration, `wait` blocks
//    until its children exit, `fork` starts a child (init_task with fork,
//    select_cpu with WAKE_FORK), `mem` sets its memory use, annotations
//    (step, tool_begin/tool_end) are recorded.
//  - A CPU that switches to a different task pays machine.context_switch_ns
//    before the task runs; a wakeup reaches the class
//    machine.wakeup_overhead_ns after the task became runnable (the ttwu
//    path from a timer or I/O interrupt); both count in the wakeup latency.
//    A child's exit wakes its waiting parent synchronously: the exiting
//    task runs the ttwu itself, so the parent is queued before that CPU
//    picks its next task, without the interrupt path's delay. A sleep with
//    a `waker` (recorded captures: a pipe write, a futex wake) is woken
//    from the waker's CPU (where it runs, else last ran)
//    machine.task_wakeup_ns after the sleep's end, without the timer
//    path's costs.
//  - Slices end by an event at the slice's end (on the tick grid with
//    machine.tick_ns); under machine.preempt lazy a fair-class wakeup
//    preemption of a CPU other than the one the wakeup runs on waits for
//    the running task's next system call return or the next tick
//    (resched_curr_lazy); kicks (IPIs) are
//    delivered as events at the current time, after the current event.
//  - Memory: per-cgroup usage (hierarchical) against memory.high/max from
//    the trace; every charge that leaves a cgroup above memory.high counts a
//    memory.events "high" in it and its ancestors; above memory.max counts
//    "max", "oom" and "oom_kill" and kills the charging process. Reclaim and
//    memory.high throttling delays are not modelled.
//  - Machine profile costs (config/config.h MachineConfig): a kick to a CPU idle
//    for at least idle_exit_after_ns dispatches idle_exit_ns later (IPI +
//    idle-state exit; the kick stays pending, so placement prefers other
//    idle CPUs meanwhile), and one from the CPU a wakeup runs on to another,
//    idle CPU (an IPI: a halted vCPU woken by its host) ipi_idle_ns later;
//    a preempting kick to a CPU running a task takes
//    effect kick_busy_ns later (a busy vCPU under TCG), and a timer wakeup
//    whose timer fires on a CPU running a task timer_busy_ns later (plus
//    ext_timer_busy_ns under sched_ext); a task dispatched
//    on a CPU other than the one it last ran on gets migration_cost_ns
//    more work (cache refill, charged to its cgroup); background_cpu_pct
//    adds tasks in the root cgroup that use
//    that much of a CPU (daemons), without latency samples; a fork costs
//    the forking task fork_cost_ns of CPU before the child starts (so a
//    fork storm's parent, competing with its own children, forks slower)
//    and fork_after_ns after the child exists (copy-on-write), the child
//    fork_child_ns before its first op (its own copy-on-write), and an exit
//    costs the exiting task exit_cost_ns before it is gone; a mem op that
//    grows a process's memory costs it mem_fault_ns_per_mib per MiB added
//    (the page faults) before its next op, and a fork fork_ns_per_mib per
//    MiB the forker holds more (its page tables copied, with fork_cost_ns);
//    under a sched_ext class (SchedClass::sched_ext()) ext_busy_pct of a
//    busy CPU's time is sched_ext's own (the task's work goes slower, its
//    cgroup is charged only the work), a wakeup costs ext_wakeup_ns more
//    and a fork ext_fork_ns more; a timer wakeup's wakeup_work_ns is CPU
//    work of the task running
//    on the sleeper's last CPU, charged to its cgroup; sleep_cost_ns is the
//    sleeper's own CPU per sleep or I/O op (the blocking call and its
//    return), run when it wakes, before its next op. Per-CPU queues
//    (runqueues: per_cpu) are the classes' (sim/cpu/cfs.h); the model offers
//    the kernel's placement as select_cpu_fair().
//  - The real-time class (trace rt_priority: SCHED_FIFO / SCHED_RR) sits
//    above the modelled class, as rt_sched_class sits above fair's and
//    ext's in the kernel: its tasks never reach the class (no init_task,
//    select_cpu, enqueue or dispatch; cpu_curr() is nullptr on a CPU that
//    runs one, so the class sees no task of its own to preempt there, and
//    the CPU is not idle). Each CPU has an RT queue by priority, FIFO
//    within one; dispatch() takes its highest task before asking the
//    class. Placement is select_task_rq_rt(): the task's CPU unless an RT
//    task of equal or higher priority runs there, else the CPU of the
//    lowest priority (idle, then running a fair task, then lower RT;
//    find_lowest_rq(): the task's CPU, the waker's, the lowest-numbered
//    among equals) if that is below the task's. A woken RT task preempts a
//    fair task or a lower RT one at once (resched_curr, not lazy); one
//    that must wait is pushed to a CPU of lower priority if there is one
//    (push_rt_tasks), and a CPU about to run lower work pulls the highest
//    RT task waiting behind another RT task (pull_rt_task). A preempted
//    FIFO task goes back to the head of its priority, an RR task whose
//    100 ms slice ended to the tail. Not modelled: RT throttling
//    (sched_rt_runtime_us) and the fair server that give fair tasks a
//    share of a CPU an RT task never leaves; deadline and stop classes
//    (the importer maps them to RT 99).
// Not modelled: SMT, caches, interrupts and softirqs, multi-threaded
// processes (a process is one task). Nice: a process's trace nice sets its
// task weight (the kernel's sched_prio_to_weight), inherited on fork.
//
// Invariants: a task is on at most one CPU; time only moves forward; every
// runnable task is either queued in the class or running; idle_ and
// idle_unkicked_ mirror cpus_ (sync_idle() after every change of curr or
// kick_pending).
// The per-event path does not allocate in steady state: latency samples go
// into LatencyHistograms (sim/metrics.h), timers live in a slot pool,
// counters are an array by id, the idle-CPU search is a bitmap scan, the
// memory walk uses no list (tests/bench/alloc_bench.cc counts).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "agentcg/counters.h"
#include "config/config.h"
#include "sim/strategy_table.h"
#include "sim/trace/cgroup_tree.h"
#include "sim/cpu/sched_class.h"
#include "sim/event_queue.h"
#include "sim/metrics.h"
#include "sim/random.h"
#include "sim/results.h"
#include "sim/schedule_log.h"
#include "sim/trace/trace.h"

namespace agentcg::sim {

using trace::CgroupTree;  // the trace library's (the player builds one too)

class CpuModel final : public SchedContext, public EventHandler {
 public:
  CpuModel(Simulator& sim, const trace::Trace& trace, SchedClass& cls,
           const config::MachineConfig& machine, std::uint64_t seed, ScheduleLog* log = nullptr);
  CpuModel(const CpuModel&) = delete;
  CpuModel& operator=(const CpuModel&) = delete;

  // Creates the cgroups in the class and schedules the process starts and
  // the stop at trace.duration_ns.
  void start();
  // Before start(): processes (trace pid -> CPU) that a recorded capture
  // found already there, not forked inside it (import::FtraceDetail::
  // present_cpu). Each starts on that CPU as a task that was already on the
  // machine: placed as a waking sleeper (CFS: at most half the latency
  // behind min_vruntime; EEVDF: at V), not as a fork (no START_DEBIT, which
  // put 28 such tasks of the Juno capture a slice right of their queues
  // and pushed min_vruntime ahead of every later sleeper's). A CPU the
  // machine does not have is ignored (placed as usual).
  // Those in `running` were running or runnable when the capture began
  // (import::FtraceDetail::present_running): they were not waking, so they
  // get no sleeper's credit (CFS: at min_vruntime; kEnqFound), where a task
  // first seen woken does (half the latency behind): a shell the Juno
  // capture found running was preempted by the kworker it woke every time,
  // as a CPU-bound task is by a sleeper in the kernel's steady state, and
  // both placed as sleepers it was not (268 switch-ins against 21).
  // `history` (a first pass's placement_history()) warm-starts them: each
  // takes the placement state it had at the end of that pass (CFS: its
  // distance from min_vruntime; EEVDF: its lag), the capture's own steady
  // state standing in for the history before it, which it does not record.
  void set_present(std::map<std::int64_t, std::int32_t> cpu_of_pid, std::set<std::int64_t> running = {},
                   std::map<std::int64_t, std::int64_t> history = {}) {
    present_cpu_ = std::move(cpu_of_pid);
    present_running_ = std::move(running);
    present_history_ = std::move(history);
  }
  // After finish(): each process's placement state (SchedClass::
  // placement_state) by trace pid, where the class keeps one.
  std::map<std::int64_t, std::int64_t> placement_history() const;
  // True once every process has exited (or the stop time was reached).
  bool finished() const { return finished_; }
  // Accounts running tasks up to now; called once after the run.
  void finish();
  // The CPU part of results.json (see README "results.json"): the inputs of the one results.json builder (sim/results.h), and the
  // CPU keys it builds from them.
  CpuResultsInput results_input() const;
  nlohmann::json results() const;
  // {"/path": {"wakeup_latency_ns": H, "tool_call_latency_ns": H}} with H
  // LatencyHistogram::to_json() over the cgroup's subtree (the samples
  // behind results()' per-cgroup percentiles); cgroups without samples are
  // left out. For histograms.json (sim/metrics.h, dump_histograms).
  nlohmann::json cgroup_histograms() const;
  const CgroupTree& cgroups() const { return tree_; }
  // The whole machine's latency distributions (mergeable across hosts).
  const LatencyHistogram& wakeup_histogram() const { return wakeup_all_; }
  const LatencyHistogram& tool_call_histogram() const { return tool_all_; }
  Time end_time() const { return end_time_; }

  // SchedContext
  Time now() const override { return sim_.now(); }
  int nr_cpus() const override { return static_cast<int>(cpus_.size()); }
  // the class's task running there: nullptr when the CPU is idle or runs a real-time task
  Task* cpu_curr(int cpu) const override {
    Task* t = cpus_.at(static_cast<std::size_t>(cpu)).curr;
    return t != nullptr && !is_rt(*t) ? t : nullptr;
  }
  bool cpu_idle(int cpu) const override { return cpus_.at(static_cast<std::size_t>(cpu)).curr == nullptr; }
  int pick_idle_cpu(int prefer) const override;
  std::uint64_t idle_mask_word(std::size_t w) const override { return w < idle_.size() ? idle_[w] : 0; }
  bool per_cpu_runqueues() const override {
    return machine_.runqueues == config::MachineConfig::Runqueues::kPerCpu && cpus_.size() > 1;
  }
  int select_cpu_fair(const Task& p, int prev_cpu, std::uint64_t wake_flags) const override;
  // machine.balance when_overutilized (with energy-aware placement): only while some CPU is
  bool load_balance_allowed() const override {
    return !energy_aware_ || machine_.balance != config::MachineConfig::Balance::kWhenOverutilized || overutilized();
  }
  void kick_cpu(int cpu, bool preempt) override;
  void resched_curr_lazy(int cpu) override;
  std::uint64_t arm_timer(Time at, std::uint64_t cookie) override;
  void cancel_timer(std::uint64_t handle) override;
  const CgroupInfo& cgroup(CgroupId id) const override { return tree_.info(id); }
  std::size_t nr_cgroups() const override { return tree_.size(); }
  const std::vector<CgroupId>& cgroup_children(CgroupId id) const override { return tree_.children(id); }
  Task& task(std::uint32_t id) override { return tasks_.at(id); }
  void note_throttle(CgroupId id, bool throttled) override;
  void note_period(CgroupId id) override;
  std::uint64_t memory_events_high(CgroupId id) const override { return mem_[id].events_high; }
  void count(std::string_view counter, std::uint64_t n = 1) override;
  void count_id(std::uint32_t counter_id, std::uint64_t n = 1) override { bump(counter_id, n); }
  // Seed 001 strategies: `table` outlives the run; nullptr = none.
  void set_strategies(const StrategyTable* table) { strategies_ = table; }
  const agentcg_strategy_action* strategy_of_task(const Task& p) const override {
    return strategies_ ? strategies_->of_task(p.pid, procs_.at(p.id).comm, tree_.path(p.cgroup)) : nullptr;
  }
  const agentcg_strategy_action* strategy_of_cgroup(CgroupId id) const override {
    return strategies_ ? strategies_->of_cgroup(tree_.path(id)) : nullptr;
  }
  void note_new_step(CgroupId id) override { cg_.at(id).detected.push_back(sim_.now().ns()); }

  // EventHandler
  void on_event(Simulator& sim, std::uint32_t kind, std::uint64_t arg) override;

 private:
  // Each cgroup's wakeup and tool-call histograms over its subtree, kept
  // only for the cgroups whose subtree has samples (a trace of 1e6 empty
  // cgroups copied 224 MB of empty histograms here).
  struct SubtreeHistograms {
    std::unordered_map<std::size_t, LatencyHistogram> wake, tool;
    static const LatencyHistogram& of(const std::unordered_map<std::size_t, LatencyHistogram>& m, std::size_t id);
  };
  SubtreeHistograms subtree_histograms() const;
  enum EventKind : std::uint32_t { kProcStart, kCpuEvent, kWake, kEnqueue, kKick, kTimer, kStop, kTick };
  enum class Next { kRun, kBlock, kExit };

  struct Frame {
    const std::vector<trace::Op>* ops;
    std::size_t idx;
    std::uint32_t left;  // iterations left of this frame (repeat bodies)
  };
  struct Proc {
    const trace::ProcessSpec* spec = nullptr;
    std::vector<Frame> stack;
    std::uint64_t run_left_ns = 0;  // CPU demand left of the current run op
    std::int64_t parent = -1;       // task id of the parent, -1 = none
    std::uint32_t live_children = 0;
    bool waiting = false;
    bool woken = false;             // became runnable by a wakeup or fork (latency sample pending)
    // the pending sample's start: when it became runnable, or for a parent
    // woken by its last child's exit, when that child's last op ended (the
    // player's reference: the child's timestamp just before _exit, so the
    // sample holds the exit's teardown, machine.exit_cost_ns)
    Time woken_at;
    std::uint64_t mem_bytes = 0;
    std::optional<Time> tool_start;
    RandomStream rng;
    std::string comm;
    bool background = false;        // machine.background_cpu_pct's task: no latency samples
    int last_cpu = -1;              // CPU it last ran on (migration cost)
    double util = 0;                // PELT utilization (machine.wake_placement energy_aware)
    Time util_at;
    std::uint64_t migr_debt_ns = 0;  // migration cost not yet added to a run op
    // machine.fork_cost_ns: the fork op at the top of the stack has had its
    // cost run since fork_began (it is interpreted again, then forks)
    bool fork_paid = false;
    // machine.exit_cost_ns: the exit's work has been run (advance() exits it next)
    bool exit_paid = false;
    Time exit_began;  // when its last op ended (its exit's work began)
    // machine.fork_child_ns: a forked child whose start work is still to run
    bool child_work = false;
    // machine.sleep_cost_ns: it slept or waited for I/O, and the cost of
    // that cycle is still to run (when it next runs, before its next op)
    bool sleep_work = false;
    // a recorded sleep's `waker` (machine.task_wakeup_ns): the task whose
    // system call ends the current sleep, -1 = a timer or interrupt; and the
    // CPU its delayed enqueue comes from (-1: the sleeper's own)
    std::int64_t waker_task = -1;
    int wake_src = -1;
    // the work it runs now is a system call's in the kernel (a fork's
    // copy_process, an exit's do_exit): under machine.preempt lazy not even
    // a wakeup on its own CPU preempts it before it returns to user space
    bool in_kernel = false;
    // the last advance() made a system call and returned to user space
    // (a fork, an exec, a memory change, a wait with nothing to wait for):
    // a lazy reschedule takes effect there
    bool syscall = false;
    Time fork_began;
    // the real-time class (trace rt_priority): 1..99, 0 = the modelled class
    std::int32_t rt = 0;
    bool rr = false;  // SCHED_RR (else SCHED_FIFO)
  };
  struct Cpu {
    Task* curr = nullptr;
    EventId ev;
    Time acct_from;   // start of the not-yet-accounted part of curr's run
    Time slice_end;
    std::uint32_t last_task = UINT32_MAX;
    Time idle_since;  // when it last went idle (idle-exit cost)
    double util = 0;  // PELT utilization at util_at (machine.wake_placement energy_aware)
    Time util_at;
    bool kick_pending = false;
    bool kick_preempt = false;
    // machine.preempt lazy: curr is flagged to yield (TIF_NEED_RESCHED_LAZY;
    // cleared when it stops), and a tick event is scheduled to honour it
    bool lazy_resched = false;
    bool tick_pending = false;
  };
  // An annotated agent step: its `step` op, and the first tool_begin after
  // it (the first moment its work is visible to a kernel).
  struct StepMark {
    std::uint64_t step_ns = 0;
    std::optional<std::uint64_t> tool_ns;
  };
  struct CgStats {
    std::uint64_t cpu_ns = 0;  // direct (own tasks); summed up at results()
    std::uint32_t tasks = 0;   // tasks that ever lived directly in it
    LatencyHistogram wakeup;  // wakeup latency samples, direct
    LatencyHistogram tool;    // tool-call latency samples, direct
    std::vector<std::uint64_t> series;  // CPU ns per series bin, direct
    std::uint64_t nr_throttled = 0, nr_periods = 0, throttled_ns = 0;
    std::optional<Time> throttled_since;
    // cpu.stat: a period counts in nr_throttled when the group was throttled
    // in it, at the period's end (as the kernel's period timer counts), so
    // nr_throttled <= nr_periods always.
    bool throttled_in_period = false;
    Time last_period;
    std::uint64_t forks = 0;
    std::vector<StepMark> steps;          // annotated steps, in time order
    bool step_ops = false;                // the trace marks steps here with `step` ops
    std::vector<std::uint64_t> detected;  // the policy's new-step detections, ns
    // per series bin, the CPU time cpu.weight owed it (Owed; not the root)
    std::vector<double> guaranteed;
  };
  // cpu.weight's guarantee where a group is busy (results.json
  // cpu_weight_shortfall_pts), per cgroup, apart from CgStats (32 bytes: a
  // wakeup or a sleep touches one line per level, not a CgStats with its
  // histograms): its runnable tasks, its descendants' included (running or
  // queued), counted since from_ns; CgStats::guaranteed adds min(nr, cpus)
  // x time.
  struct Owed {
    std::uint64_t from_ns = 0;
    std::uint64_t bin = 0;  // from_ns's series bin
    double cpus = 0;        // what its weight guarantees it, in CPUs, with every sibling busy (start())
    CgroupId parent = kRootCgroup;
    std::uint32_t nr = 0;
  };
  struct MemState {
    std::uint64_t usage = 0, peak = 0;
    std::uint64_t events_high = 0, events_max = 0, oom_kill = 0;
  };

  std::uint32_t new_task(const trace::ProcessSpec& spec, std::int64_t pid, CgroupId cg,
                         std::int64_t parent);
  // RUNNABLE_SINCE: when the new task's latency sample starts (a fork with
  // a cost: the start of the fork); nullopt = now.
  void start_task(std::uint32_t id, bool fork, int parent_cpu, std::optional<Time> runnable_since = std::nullopt);
  Next advance(Task& t);
  void wakeup_work(const Task& t);
  // sync_cpu >= 0: woken by a task (a child's exit) that runs the ttwu
  // itself on that CPU, queued now; waker_cpu >= 0: by a task's system call
  // there (a recorded sleep's waker), queued task_wakeup_ns later; else by
  // a timer on t's CPU, after wakeup_overhead_ns (+ timer_busy_ns)
  void do_wake(Task& t, int sync_cpu = kNoCpu, int waker_cpu = kNoCpu);
  // src_cpu: the CPU the ttwu runs on (resched_curr_lazy); by_task: a
  // task's (the waker's CPU, machine.wake_placement's sync hint)
  void do_enqueue(Task& t, int src_cpu, bool by_task = false);
  // machine.wake_placement energy_aware: PELT utilization of CPUs and tasks
  static double pelt_decay(Time dt);
  double capacity(int cpu) const;
  void update_util(int cpu, bool running);
  double cpu_util_now(int cpu) const;
  double task_util_now(const Task& t) const;
  int select_cpu_energy(const Task& p, int prev_cpu) const;
  // some CPU's utilization is over 80 % of its capacity (cpu_overutilized())
  bool overutilized() const;
  void dispatch(int cpu, Task* prev);
  // The real-time class (the header's comment): is_rt(t); a CPU's level
  // as cpupri sees it (-1 idle, 0 running the class's work or about to,
  // else the highest RT priority running or queued there); placement;
  // queueing (head: a preempted FIFO task) with the preemption or push it
  // calls for; the next RT task to run on `cpu` (pulled from a CPU where
  // it waits behind another RT task when it outranks this CPU's own).
  bool is_rt(const Task& t) const { return procs_[t.id].rt > 0; }
  int rt_level(int cpu) const;
  int select_cpu_rt(const Task& t, int prev_cpu, int waker_cpu) const;
  int lowest_rt_cpu(std::int32_t prio, int prefer, int waker_cpu, int except) const;
  void rt_enqueue(Task& t, int cpu, bool head);
  void rt_wakeup(Task& t, int cpu);
  void rt_push(int cpu);
  Task* rt_pick(int cpu);
  void charge(Cpu& c, int cpu);
  // The work done in `wall_ns` of a busy CPU, and the wall time that does
  // `work_ns` (rounded up): machine.ext_busy_pct of the CPU is sched_ext's.
  std::uint64_t work_in(std::uint64_t wall_ns) const {
    return machine_.ext_busy_pct ? wall_ns * (100 - machine_.ext_busy_pct) / 100 : wall_ns;
  }
  std::uint64_t wall_for(std::uint64_t work_ns) const {
    const std::uint64_t k = 100 - machine_.ext_busy_pct;
    return machine_.ext_busy_pct ? (work_ns * 100 + k - 1) / k : work_ns;
  }
  void stop_curr(int cpu, bool runnable);
  // Task t's cgroup and its ancestors have one runnable task more (delta
  // +1: a start or an enqueue after a wakeup) or fewer (-1: it blocked or
  // exited); CgStats::guaranteed is brought up to now first.
  void runnable_changed(const Task& t, int delta);
  void accrue_guarantee(std::size_t cg, std::uint64_t now);
  void rearm_cpu(int cpu);
  void on_cpu_event(int cpu);
  // slice_end: the running task's slice ran out (an RR task goes to the
  // tail of its priority; any other preempted RT task to the head)
  void preempt(int cpu, bool slice_end = false);
  void exit_task(Task& t);
  void set_mem(Task& t, std::uint64_t bytes);
  void maybe_finish();
  void sync_idle(std::size_t cpu);
  CgroupId cgroup_of_template(const trace::ProcessSpec& spec, CgroupId parent_cg) const;
  [[noreturn]] void fail(const trace::SourceLoc& loc, const std::string& what) const;

  Simulator& sim_;
  const trace::Trace& trace_;
  SchedClass& cls_;
  // machine.preempt lazy: the CPU the current wakeup's ttwu (or class
  // timer) runs on. A reschedule of that CPU's task takes effect at once
  // (the interrupt's or syscall's return to user space honours the lazy
  // flag); one of another busy CPU sharing its LLC only sets the flag (no
  // IPI: ttwu enqueues there directly and resched_curr_lazy sends none).
  static constexpr int kNoCpu = -1, kAnyCpu = -2;
  int wake_src_cpu_ = kNoCpu;
  // the waker's CPU while a wakeup by a task is placed (kNoCpu otherwise)
  int waker_cpu_hint_ = kNoCpu;
  std::map<std::int64_t, std::int32_t> present_cpu_;  // set_present()
  std::set<std::int64_t> present_running_;             // set_present()
  std::map<std::int64_t, std::int64_t> present_history_;  // set_present()
  // The real-time class: per CPU, the waiting RT tasks' ids by priority
  // (highest first), FIFO within one; how many wait in all (0: no pull scan).
  std::vector<std::vector<std::uint32_t>> rtq_;
  std::uint64_t rt_waiting_ = 0;
  bool energy_aware_ = false;  // machine.wake_placement energy_aware on per-CPU queues
  config::MachineConfig machine_;
  std::uint64_t seed_;
  ScheduleLog* log_;
  CgroupTree tree_;
  std::vector<Cpu> cpus_;
  // Deques: references to tasks and processes stay valid while new ones are
  // added (classes keep Task* in their queues; a fork happens mid-advance()).
  std::deque<Task> tasks_;  // by id; never shrinks (ids are stable)
  const StrategyTable* strategies_ = nullptr;
  std::vector<std::unique_ptr<trace::ProcessSpec>> background_specs_;  // machine.background_cpu_pct
  std::deque<Proc> procs_;  // parallel to tasks_
  std::map<std::int64_t, std::size_t> listed_by_pid_;  // listed pid -> processes index
  std::map<std::int64_t, std::uint32_t> task_by_pid_;  // pid -> newest task with it
  std::vector<CgStats> cg_;
  std::vector<Owed> owed_;  // by cgroup id
  std::vector<MemState> mem_;
  // Counters: the policy group of agentcg/counters.h, then its workload
  // group, by id (no string lookup or allocation per bump); any other name
  // in the map (none today).
  enum ModelCounter : std::uint32_t {
    kAgentSteps = std::uint32_t{AGENTCG_NR_COUNTERS} + AGENTCG_W_agent_steps,
    kOomKills = std::uint32_t{AGENTCG_NR_COUNTERS} + AGENTCG_W_oom_kills,
    kNrCounters = std::uint32_t{AGENTCG_NR_COUNTERS} + AGENTCG_NR_WORKLOAD_COUNTERS
  };
  std::uint64_t counter_[kNrCounters] = {};
  bool counter_seen_[kNrCounters] = {};
  std::map<std::string, std::uint64_t, std::less<>> other_counters_;
  void bump(std::uint32_t id, std::uint64_t n) {
    counter_[id] += n;
    counter_seen_[id] = true;
  }
  // Timers: a slot pool; a handle is (generation << 32 | slot + 1), never 0.
  struct TimerSlot {
    EventId ev;
    std::uint64_t cookie = 0;
    std::uint32_t gen = 0;
    bool live = false;
  };
  std::vector<TimerSlot> timers_;
  std::vector<std::uint32_t> free_timers_;
  // Idle CPUs (curr == nullptr), and those of them without a kick pending.
  std::vector<std::uint64_t> idle_, idle_unkicked_;
  std::int64_t next_pid_ = 1;
  std::int64_t last_listed_pid_ = 0;  // the trace's highest listed pid: children's pids follow
  std::int64_t nr_background_ = 0;    // background tasks (machine.background_cpu_pct), pids after it
  std::uint64_t live_ = 0;            // tasks not yet exited
  std::uint64_t pending_starts_ = 0;  // listed processes still to start
  std::uint64_t context_switches_ = 0;
  std::uint64_t max_runnable_wait_ns_ = 0;
  LatencyHistogram wakeup_all_, tool_all_;
  Time series_bin_ = Time::from_ms(100);
  Time end_time_;
  bool finished_ = false;
};

}  // namespace agentcg::sim
