// SPDX-License-Identifier: GPL-2.0-only
#include "sim/cpu/cpu_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/random.h"

namespace agentcg::sim {

namespace {
// A process that executes this many zero-time ops in a row makes no progress
// (e.g. a repeat of annotations only): reject it instead of spinning.
constexpr std::uint64_t kMaxInstantOps = 1000000;
constexpr std::uint64_t kMinSliceNs = 1000;
// A new-step detection counts for a step up to this long after the step's
// first tool call started (one startup-boost window: a later boost would
// miss the call's start).
constexpr std::uint64_t kStepMatchTolNs = 100000000;
// The real-time class's slices: SCHED_RR's (sched_rr_timeslice, RR_TIMESLICE
// = 100 ms), and SCHED_FIFO's none (longer than any run).
constexpr std::uint64_t kRrSliceNs = 100000000;
constexpr std::uint64_t kFifoSliceNs = std::uint64_t{1} << 60;
}  // namespace

CpuModel::CpuModel(Simulator& sim, const trace::Trace& trace, SchedClass& cls,
                   const config::MachineConfig& machine, std::uint64_t seed, ScheduleLog* log)
    : sim_(sim),
      trace_(trace),
      cls_(cls),
      machine_(machine),
      seed_(seed),
      log_(log),
      tree_(trace),
      cpus_(machine.cpus != 0 ? machine.cpus : trace.machine.cpus),
      cg_(tree_.size()),
      mem_(tree_.size()) {
  if (trace.machine.context_switch_ns && !machine.context_switch_ns_set)
    machine_.context_switch_ns = *trace.machine.context_switch_ns;
  if (trace.machine.wakeup_overhead_ns && !machine.wakeup_overhead_ns_set)
    machine_.wakeup_overhead_ns = *trace.machine.wakeup_overhead_ns;
  if (!machine.task_wakeup_ns_set) machine_.task_wakeup_ns = machine_.wakeup_overhead_ns;
  // sched_ext's own costs (MachineConfig::ext_*) on top of the machine's:
  // the kernel's scheduler does not pay them.
  if (cls_.sched_ext()) {
    machine_.wakeup_overhead_ns += machine.ext_wakeup_ns;
    machine_.task_wakeup_ns += machine.ext_wakeup_ns;
    machine_.timer_busy_ns += machine.ext_timer_busy_ns;
    machine_.fork_cost_ns += machine.ext_fork_ns;
  } else {
    machine_.ext_busy_pct = 0;
  }
  for (std::size_t i = 0; i < trace.processes.size(); ++i) {
    listed_by_pid_[trace.processes[i].pid] = i;
    next_pid_ = std::max(next_pid_, trace.processes[i].pid + 1);
  }
  last_listed_pid_ = next_pid_ - 1;
  if (log_) {
    log_->nr_cpus = static_cast<std::uint32_t>(cpus_.size());
    log_->cgroup_paths.clear();
    for (std::size_t i = 0; i < tree_.size(); ++i) log_->cgroup_paths.push_back(tree_.path(static_cast<CgroupId>(i)));
  }
  rtq_.resize(cpus_.size());
  idle_.assign((cpus_.size() + 63) / 64, 0);
  idle_unkicked_.assign(idle_.size(), 0);
  for (std::size_t i = 0; i < cpus_.size(); ++i) sync_idle(i);
  if (!machine_.cpu_capacity.empty() && machine_.cpu_capacity.size() != cpus_.size())
    throw std::invalid_argument("machine.cpu_capacity: " + std::to_string(machine_.cpu_capacity.size()) +
                                " capacities for " + std::to_string(cpus_.size()) + " CPUs (expected one per CPU)");
  energy_aware_ = machine_.wake_placement == config::MachineConfig::WakePlacement::kEnergyAware &&
                  machine_.runqueues == config::MachineConfig::Runqueues::kPerCpu;
}

// PELT's geometric average (kernel/sched/pelt.c): a contribution halves
// every 32 ms. Exact per nanosecond instead of the kernel's 1 ms steps.
double CpuModel::pelt_decay(Time dt) {
  return std::exp2(-static_cast<double>(dt.ns()) / 32e6);
}

double CpuModel::capacity(int cpu) const {
  return machine_.cpu_capacity.empty() ? 1024.0 : machine_.cpu_capacity[static_cast<std::size_t>(cpu)];
}

// Brings a CPU's utilization (and, when it ran one, its task's) up to now:
// `running` says whether it ran curr since the last update. A running task
// adds at the CPU's capacity (the kernel's invariant utilization).
void CpuModel::update_util(int cpu, bool running) {
  if (!energy_aware_) return;
  Cpu& c = cpus_[static_cast<std::size_t>(cpu)];
  const Time now = sim_.now();
  const double d = pelt_decay(now - c.util_at);
  c.util = c.util * d + (running ? capacity(cpu) * (1.0 - d) : 0.0);
  c.util_at = now;
  if (running && c.curr != nullptr) {
    Proc& p = procs_[c.curr->id];
    const double pd = pelt_decay(now - p.util_at);
    p.util = p.util * pd + capacity(cpu) * (1.0 - pd);
    p.util_at = now;
  }
}

double CpuModel::cpu_util_now(int cpu) const {
  const Cpu& c = cpus_[static_cast<std::size_t>(cpu)];
  const double d = pelt_decay(sim_.now() - c.util_at);
  return c.util * d + (c.curr != nullptr ? capacity(cpu) * (1.0 - d) : 0.0);
}

double CpuModel::task_util_now(const Task& t) const {
  const Proc& p = procs_[t.id];
  return p.util * pelt_decay(sim_.now() - p.util_at);
}

bool CpuModel::overutilized() const {
  for (int c = 0; c < nr_cpus(); ++c)
    if (cpu_util_now(c) * 1280.0 > capacity(c) * 1024.0) return true;
  return false;
}

// find_energy_efficient_cpu(), simplified (MachineConfig::WakePlacement):
// -1 when the kernel would not place energy-aware (a CPU overutilized).
int CpuModel::select_cpu_energy(const Task& p, int prev_cpu) const {
  const int n = nr_cpus();
  if (overutilized()) return -1;
  const double tu = task_util_now(p);
  const int last = procs_[p.id].last_cpu;
  // util_fits_cpu(): the CPU's utilization without the task, plus the task's
  auto fits = [&](int c) {
    const double without = std::max(0.0, cpu_util_now(c) - (c == last ? tu : 0.0));
    return (without + tu) * 1280.0 < capacity(c) * 1024.0;
  };
  // the sync hint: the waker alone on its CPU takes the task it wakes.
  // The replayed waker may not be running there then (the replay wakes a
  // recorded sleep at its recorded end, not at the waker's system call):
  // whatever runs there alone is taken as the waker, and an idle CPU as
  // one whose waker has gone to sleep since (in the capture it ran there
  // at that moment). On the Juno board's capture every task wakeup ran on
  // the waker's CPU; taking an idle one too, the replay of its first half
  // keeps 559 of 597 there instead of 324 (README, Fidelity).
  const int w = waker_cpu_hint_;
  if (w >= 0 && w < n && cls_.nr_queued(w) == 0 && fits(w)) return w;
  if (fits(prev_cpu)) return prev_cpu;
  int best = -1;
  double best_cap = 0, best_room = 0;
  for (int c = 0; c < n; ++c) {
    if (!fits(c)) continue;
    const double room = capacity(c) - cpu_util_now(c);
    if (best < 0 || capacity(c) < best_cap || (capacity(c) == best_cap && room > best_room)) {
      best = c;
      best_cap = capacity(c);
      best_room = room;
    }
  }
  return best;
}

void CpuModel::sync_idle(std::size_t cpu) {
  const std::uint64_t bit = std::uint64_t{1} << (cpu % 64);
  const Cpu& c = cpus_[cpu];
  std::uint64_t& w = idle_[cpu / 64];
  std::uint64_t& u = idle_unkicked_[cpu / 64];
  w = c.curr == nullptr ? (w | bit) : (w & ~bit);
  u = c.curr == nullptr && !c.kick_pending ? (u | bit) : (u & ~bit);
}

void CpuModel::fail(const trace::SourceLoc& loc, const std::string& what) const {
  throw trace::TraceError(trace_.source, loc.line, loc.pointer, what);
}

void CpuModel::start() {
  // cpu.weight's guarantee: the weights and cpu.max caps down the tree with
  // every cgroup busy. A leaf could use every CPU; a cgroup with children
  // competes with them through the tasks listed in it (the root: with the
  // background tasks too), each one CPU at most.
  {
    const auto m = static_cast<std::uint32_t>(cpus_.size());
    std::vector<std::uint32_t> entities(tree_.size(), 0);
    for (std::size_t i = 0; i < tree_.size(); ++i)
      if (tree_.children(static_cast<CgroupId>(i)).empty() && i != kRootCgroup) entities[i] = m;
    for (const auto& p : trace_.processes) {
      const CgroupId cg = tree_.find(p.cgroup);
      if (!tree_.children(cg).empty() || cg == kRootCgroup) ++entities[cg];
    }
    entities[kRootCgroup] += (machine_.background_cpu_pct + 99) / 100;
    const std::vector<double> shares = tree_.entitled_shares(m, entities);
    owed_.assign(tree_.size(), Owed{});
    for (std::size_t i = 0; i < tree_.size(); ++i) {
      owed_[i].cpus = shares[i] * static_cast<double>(m);
      owed_[i].parent = tree_.info(static_cast<CgroupId>(i)).parent;
    }
  }
  cls_.init(*this);
  for (std::size_t i = 0; i < tree_.size(); ++i) cls_.cgroup_init(tree_.info(static_cast<CgroupId>(i)));
  for (std::size_t i = 0; i < trace_.processes.size(); ++i) {
    const auto& p = trace_.processes[i];
    if (p.start_ns) {
      sim_.schedule(Time::from_ns(*p.start_ns), this, kProcStart, i);
      ++pending_starts_;
    }
  }
  // Background CPU outside the trace's cgroups: one task per started 100 %
  // of a CPU in the root cgroup, each running its part of every 10 ms. They
  // are not live tasks (the run still ends when the trace's tasks exit).
  for (std::uint32_t left = machine_.background_cpu_pct; left > 0;) {
    const std::uint32_t pct = std::min<std::uint32_t>(left, 100);
    left -= pct;
    constexpr std::uint64_t kPeriodNs = 10000000;
    const std::uint64_t run_ns = kPeriodNs * pct / 100;
    auto spec = std::make_unique<trace::ProcessSpec>();
    spec->comm = "background";
    trace::Op run;
    run.kind = trace::OpKind::kRun;
    run.amount = trace::Value::fixed(run_ns);
    trace::Op body_sleep;
    body_sleep.kind = trace::OpKind::kSleep;
    body_sleep.amount = trace::Value::fixed(kPeriodNs - run_ns);
    trace::Op rep;
    rep.kind = trace::OpKind::kRepeat;
    rep.set_count(UINT32_MAX);
    std::vector<trace::Op> body{run};
    if (run_ns < kPeriodNs) body.push_back(body_sleep);
    rep.set_body(std::move(body));
    spec->ops = {rep};
    background_specs_.push_back(std::move(spec));
    const std::uint32_t id = new_task(*background_specs_.back(), next_pid_++, kRootCgroup, -1);
    ++nr_background_;
    procs_[id].background = true;
    --live_;
    start_task(id, true, -1);
  }
  if (trace_.duration_ns) sim_.schedule(Time::from_ns(*trace_.duration_ns), this, kStop);
  // No processes and no stop time (e.g. a GPU-only trace): the CPU side is
  // done at once; with a stop time it ends there.
  if (pending_starts_ == 0 && !trace_.duration_ns) sim_.schedule(sim_.now(), this, kStop);
}

namespace {

// The kernel's sched_prio_to_weight (kernel/sched/core.c), nice -20..19,
// converted to the cpu.weight scale Task::weight uses as the kernel does for
// cpu.weight.nice (sched_weight_to_cgroup: round(w * 100 / 1024), >= 1).
std::uint32_t nice_to_task_weight(std::int32_t nice) {
  static constexpr std::uint32_t kPrioToWeight[40] = {
      88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
      3906,  3121,  2501,  1991,  1586,  1277,  1024,  820,   655,   526,   423,   335,  272,  215,
      172,   137,   110,   87,    70,    56,    45,    36,    29,    23,    18,    15};
  const std::int32_t i = std::clamp(nice, -20, 19) + 20;
  return std::max<std::uint32_t>(1, (kPrioToWeight[i] * 100 + 512) / 1024);
}

}  // namespace

std::uint32_t CpuModel::new_task(const trace::ProcessSpec& spec, std::int64_t pid, CgroupId cg,
                                 std::int64_t parent) {
  const auto id = static_cast<std::uint32_t>(tasks_.size());
  Task t;
  t.id = id;
  t.pid = pid;
  t.cgroup = cg;
  // nice: the spec's, else the parent's (fork keeps static_prio), else 0
  if (spec.nice) t.weight = nice_to_task_weight(*spec.nice);
  else if (parent >= 0) t.weight = tasks_[static_cast<std::size_t>(parent)].weight;
  tasks_.push_back(t);
  // the real-time policy: the spec's, else the parent's (fork keeps it)
  std::int32_t rt = 0;
  bool rr = false;
  if (spec.rt_priority) {
    rt = *spec.rt_priority;
    rr = spec.rt_round_robin;
  } else if (parent >= 0) {
    rt = procs_[static_cast<std::size_t>(parent)].rt;
    rr = procs_[static_cast<std::size_t>(parent)].rr;
  }
  Proc p{.spec = &spec,
         .stack = {Frame{&spec.ops, 0, 1}},
         .parent = parent,
         // A forked child's stream is keyed by the pid it has without the
         // background tasks (whose pids come before the children's): the
         // player numbers children from the last listed pid + 1, and a
         // machine's background_cpu_pct must not change what work a trace's
         // children draw (it did: the agent trace's heaviest session went
         // from 0.115 to 0.150 of the machine at background_cpu_pct 1).
         .rng = RandomStream(seed_, static_cast<std::uint64_t>(pid > last_listed_pid_ ? pid - nr_background_ : pid)),
         .comm = spec.comm.empty() ? "pid" + std::to_string(pid) : spec.comm,
         .rt = rt,
         .rr = rr};
  procs_.push_back(std::move(p));
  if (parent >= 0) procs_[static_cast<std::size_t>(parent)].live_children++;
  cg_[cg].tasks++;
  task_by_pid_[pid] = id;
  ++live_;
  if (log_) log_->pid_comm.emplace_back(pid, procs_.back().comm);
  return id;
}

CgroupId CpuModel::cgroup_of_template(const trace::ProcessSpec& spec, CgroupId parent_cg) const {
  if (spec.cgroup.empty()) return parent_cg;
  try {
    return tree_.find(spec.cgroup);
  } catch (const std::out_of_range&) {
    fail(spec.loc, "unknown cgroup '" + spec.cgroup + "'");
  }
}

std::map<std::int64_t, std::int64_t> CpuModel::placement_history() const {
  std::map<std::int64_t, std::int64_t> out;
  for (const Task& t : tasks_)
    if (t.state != TaskState::kNew && !is_rt(t))
      if (const auto s = cls_.placement_state(t)) out[t.pid] = *s;
  return out;
}

// A new task becomes runnable: init_task, select_cpu(WAKE_FORK), enqueue.
void CpuModel::start_task(std::uint32_t id, bool fork, int parent_cpu, std::optional<Time> runnable_since) {
  // The task interprets its first ops once it first gets a CPU (run_left_ns
  // is 0), like a real child that must be scheduled before it does anything.
  Task& t = tasks_[id];
  // a task a capture found on the machine (set_present): on its CPU, as a sleeper
  int present = -1;
  if (parent_cpu < 0 && !present_cpu_.empty()) {
    const auto it = present_cpu_.find(t.pid);
    if (it != present_cpu_.end() && it->second >= 0 && it->second < nr_cpus()) present = it->second;
  }
  const bool rt = is_rt(t);
  if (!rt) cls_.init_task(t, fork && present < 0);
  if (!rt && present >= 0)
    if (const auto h = present_history_.find(t.pid); h != present_history_.end()) cls_.restore_placement(t, h->second);
  t.state = TaskState::kRunnable;
  t.runnable_since = runnable_since.value_or(sim_.now());
  runnable_changed(t, +1);
  procs_[id].woken = true;
  procs_[id].woken_at = t.runnable_since;
  if (log_) log_->wakeups.push_back({t.pid, 0, sim_.now().ns(), true, parent_cpu});
  const int prev = parent_cpu < 0 ? 0 : parent_cpu;
  const int cpu = present >= 0 ? present : rt ? select_cpu_rt(t, prev, parent_cpu) : cls_.select_cpu(t, prev, kWakeFork);
  t.cpu = cpu;
  // wake_up_new_task in the forker's fork(); a found task wakes where it is
  wake_src_cpu_ = present >= 0 ? present : parent_cpu;
  if (rt) {
    rt_wakeup(t, cpu);
    wake_src_cpu_ = kNoCpu;
    return;
  }
  cls_.enqueue(t, present < 0                  ? kEnqNew
                  : present_running_.count(t.pid) ? kEnqWakeup | kEnqFound
                                                  : kEnqWakeup);
  if (cpu >= 0 && cpu_idle(cpu)) kick_cpu(cpu, false);
  wake_src_cpu_ = kNoCpu;
}

// Runs zero-time ops until the task has CPU demand, blocks or exits.
CpuModel::Next CpuModel::advance(Task& t) {
  Proc& p = procs_[t.id];
  // The machine's own work for the process (a fork's, an exit's): CPU
  // demand charged to its cgroup, with any migration debt.
  const auto machine_work = [&p](std::uint64_t ns) {
    p.run_left_ns = ns + p.migr_debt_ns;
    p.migr_debt_ns = 0;
    return Next::kRun;
  };
  p.syscall = false;
  p.in_kernel = false;
  // a forked child's own start (copy-on-write), before its first op
  if (p.child_work) {
    p.child_work = false;
    return machine_work(machine_.fork_child_ns);
  }
  // the sleep's system call and its return, once it is woken
  if (p.sleep_work) {
    p.sleep_work = false;
    p.in_kernel = true;
    return machine_work(machine_.sleep_cost_ns);
  }
  for (std::uint64_t steps = 0;; ++steps) {
    if (steps > kMaxInstantOps) fail(p.spec->loc, "process " + std::to_string(t.pid) + " makes no progress (only zero-time ops)");
    if (p.stack.empty()) {
      // do_exit runs in the exiting task: CPU work charged to its cgroup
      // before it is gone and its waiting parent wakes.
      if (!p.exit_paid) p.exit_began = sim_.now();
      if (machine_.exit_cost_ns == 0 || p.exit_paid) return Next::kExit;
      p.exit_paid = true;
      p.in_kernel = true;
      return machine_work(machine_.exit_cost_ns);
    }
    Frame& f = p.stack.back();
    if (f.idx >= f.ops->size()) {
      if (--f.left > 0) {
        f.idx = 0;
      } else {
        p.stack.pop_back();
      }
      continue;
    }
    const trace::Op& op = (*f.ops)[f.idx++];
    switch (op.kind) {
      case trace::OpKind::kRun: {
        const std::uint64_t ns = op.amount.sample(p.rng);
        if (ns == 0) break;
        p.run_left_ns = ns * 100 / machine_.speed_pct + p.migr_debt_ns;
        p.migr_debt_ns = 0;
        if (p.run_left_ns == 0) p.run_left_ns = 1;
        return Next::kRun;
      }
      case trace::OpKind::kSleep:
      case trace::OpKind::kIo: {
        const std::uint64_t ns = op.amount.sample(p.rng);
        if (ns == 0) break;
        t.state = TaskState::kBlocked;
        p.sleep_work = machine_.sleep_cost_ns > 0 && !p.background;  // background_cpu_pct is what it says
        p.waker_task = -1;
        if (op.waker() != 0) {
          const auto w = task_by_pid_.find(op.waker());
          if (w != task_by_pid_.end()) p.waker_task = w->second;
        }
        sim_.schedule_in(Time::from_ns(ns), this, kWake, t.id);
        return Next::kBlock;
      }
      case trace::OpKind::kWait:
        p.syscall = true;
        if (p.live_children == 0) break;
        t.state = TaskState::kBlocked;
        p.waiting = true;
        return Next::kBlock;
      case trace::OpKind::kExit:
        p.stack.clear();  // the next step exits it (after its exit_cost_ns)
        break;
      case trace::OpKind::kFork: {
        // machine.fork_ns_per_mib: the forker's memory copied with it
        const auto copy_ns =
            static_cast<std::uint64_t>(static_cast<uint128_t>(p.mem_bytes) * machine_.fork_ns_per_mib >> 20);
        if (machine_.fork_cost_ns + copy_ns > 0 && !p.fork_paid) {
          // copy_process runs in the parent first: CPU work charged to the
          // parent's cgroup (the kernel charges the forker), and the child
          // exists only once it is done. The op is interpreted again then.
          --f.idx;
          p.fork_paid = true;
          p.fork_began = sim_.now();
          p.in_kernel = true;
          return machine_work(machine_.fork_cost_ns + copy_ns);
        }
        const bool paid = p.fork_paid;
        p.fork_paid = false;
        const trace::ProcessSpec* spec = nullptr;
        std::int64_t pid;
        if (op.child()) {
          spec = op.child().get();
          pid = next_pid_++;
        } else {
          const auto it = listed_by_pid_.find(op.pid());
          if (it == listed_by_pid_.end()) fail(op.loc, "fork of unknown pid " + std::to_string(op.pid()));
          spec = &trace_.processes[it->second];
          pid = op.pid();
        }
        const CgroupId cg = op.child() ? cgroup_of_template(*spec, t.cgroup) : tree_.find(spec->cgroup);
        cg_[cg].forks++;
        const std::uint32_t child = new_task(*spec, pid, cg, t.id);
        procs_[child].child_work = machine_.fork_child_ns > 0;
        start_task(child, true, t.cpu, paid ? std::optional<Time>(p.fork_began) : std::nullopt);
        p.syscall = true;
        // the forker's copy-on-write work, once the child exists
        if (machine_.fork_after_ns > 0) return machine_work(machine_.fork_after_ns);
        break;
      }
      case trace::OpKind::kExec:
        p.comm = op.name();
        p.syscall = true;
        break;
      case trace::OpKind::kMem: {
        p.syscall = true;
        const std::uint64_t had = p.mem_bytes;
        set_mem(t, op.amount.sample(p.rng));
        // OOM-killed: the stack is empty, the next step exits it
        if (p.stack.empty() || p.mem_bytes <= had || machine_.mem_fault_ns_per_mib == 0) break;
        // the faults of the pages added (machine.mem_fault_ns_per_mib);
        // in 128 bits, exact on every platform: bytes x ns per MiB may pass 2^64
        const auto ns = static_cast<std::uint64_t>(static_cast<uint128_t>(p.mem_bytes - had) *
                                                   machine_.mem_fault_ns_per_mib >> 20);
        if (ns > 0) return machine_work(ns);
        break;
      }
      case trace::OpKind::kRepeat:
        if (op.count() > 0 && !op.body().empty()) p.stack.push_back(Frame{&op.body(), 0, op.count()});
        break;
      case trace::OpKind::kToolBegin: {
        p.tool_start = sim_.now();
        // the step's first tool call; a trace without step ops makes each
        // tool call a step of its own
        CgStats& cs = cg_[t.cgroup];
        if (!cs.step_ops) cs.steps.push_back({sim_.now().ns(), sim_.now().ns()});
        else if (!cs.steps.empty() && !cs.steps.back().tool_ns) cs.steps.back().tool_ns = sim_.now().ns();
        break;
      }
      case trace::OpKind::kToolEnd:
        if (p.tool_start) {
          const std::uint64_t lat = (sim_.now() - *p.tool_start).ns();
          cg_[t.cgroup].tool.add(lat);
          tool_all_.add(lat);
          p.tool_start.reset();
        }
        break;
      case trace::OpKind::kStep:
        bump(kAgentSteps, 1);
        cg_[t.cgroup].step_ops = true;
        cg_[t.cgroup].steps.push_back({sim_.now().ns(), std::nullopt});
        break;
    }
  }
}

void CpuModel::set_mem(Task& t, std::uint64_t bytes) {
  Proc& p = procs_[t.id];
  const std::uint64_t old = p.mem_bytes;
  p.mem_bytes = bytes;
  // Walk from the task's cgroup to the root, charging or uncharging (by
  // following parent links: no list of the chain is built).
  const auto parent_of = [&](CgroupId c) { return c == kRootCgroup ? c : tree_.info(c).parent; };
  for (CgroupId c = t.cgroup;; c = parent_of(c)) {
    MemState& m = mem_[c];
    m.usage = m.usage + bytes - old;
    m.peak = std::max(m.peak, m.usage);
    if (c == kRootCgroup) break;
  }
  if (bytes <= old) return;
  bool oom = false;
  for (CgroupId c = t.cgroup;; c = parent_of(c)) {
    const auto& spec = tree_.spec(c);
    const MemState& m = mem_[c];
    const bool high = spec.memory_high && m.usage > *spec.memory_high;
    const bool max = spec.memory_max && m.usage > *spec.memory_max;
    // memory.events is hierarchical: the event counts in the breached
    // cgroup and in every ancestor.
    if (high || max) {
      for (CgroupId a = c;; a = parent_of(a)) {
        if (high) mem_[a].events_high++;
        if (max) {
          mem_[a].events_max++;
          mem_[a].oom_kill++;
        }
        if (a == kRootCgroup) break;
      }
    }
    oom = oom || max;
    if (c == kRootCgroup) break;
  }
  if (oom) {
    bump(kOomKills, 1);
    p.stack.clear();  // advance() sees the empty stack and exits the task
  }
}

// machine.wakeup_work_ns: a timer wakeup's try_to_wake_up runs in the
// timer interrupt on the CPU the sleeper armed it on (the CPU it last ran
// on); the kernel accounts interrupt work to the task it interrupted, so
// the task running there does that much more work, charged to its cgroup.
// On an idle CPU nobody's cgroup pays. A child's exit waking its parent is
// not charged here: the exit's teardown is machine.exit_cost_ns (or folded
// into fork_cost_ns).
void CpuModel::wakeup_work(const Task& t) {
  if (machine_.wakeup_work_ns == 0 || t.cpu < 0) return;
  Cpu& c = cpus_[static_cast<std::size_t>(t.cpu)];
  if (c.curr == nullptr || c.curr == &t) return;
  charge(c, t.cpu);
  procs_[c.curr->id].run_left_ns += machine_.wakeup_work_ns;
  rearm_cpu(t.cpu);
}

void CpuModel::do_wake(Task& t, int sync_cpu, int waker_cpu) {
  const bool sync = sync_cpu != kNoCpu;
  const bool by_task = !sync && waker_cpu != kNoCpu;
  const int src = sync ? sync_cpu : by_task ? waker_cpu : t.cpu;
  t.runnable_since = sim_.now();
  procs_[t.id].woken = true;
  procs_[t.id].woken_at = sim_.now();
  if (log_)
    log_->wakeups.push_back(
        {t.pid, static_cast<std::uint32_t>(t.cpu < 0 ? 0 : t.cpu), sim_.now().ns(), false, src, sync || by_task});
  // a timer wakeup: its interrupt on a busy CPU comes timer_busy_ns late
  // (the sample counts from the timer's expiry, as the player's does); a
  // waker's system call: task_wakeup_ns
  std::uint64_t delay = sync ? 0 : by_task ? machine_.task_wakeup_ns : machine_.wakeup_overhead_ns;
  if (!sync && !by_task && machine_.timer_busy_ns > 0 && t.cpu >= 0 &&
      cpus_[static_cast<std::size_t>(t.cpu)].curr != nullptr)
    delay += machine_.timer_busy_ns;
  if (delay > 0) {
    procs_[t.id].wake_src = by_task ? waker_cpu : -1;
    sim_.schedule_in(Time::from_ns(delay), this, kEnqueue, t.id);
  } else {
    do_enqueue(t, src, sync || by_task);
  }
}

void CpuModel::do_enqueue(Task& t, int src_cpu, bool by_task) {
  t.state = TaskState::kRunnable;
  runnable_changed(t, +1);
  if (is_rt(t)) {
    const int cpu = select_cpu_rt(t, t.cpu < 0 ? 0 : t.cpu, src_cpu);
    t.cpu = cpu;
    wake_src_cpu_ = src_cpu;
    rt_wakeup(t, cpu);
    wake_src_cpu_ = kNoCpu;
    return;
  }
  waker_cpu_hint_ = by_task ? src_cpu : kNoCpu;
  const int cpu = cls_.select_cpu(t, t.cpu < 0 ? 0 : t.cpu, kWakeTtwu);
  waker_cpu_hint_ = kNoCpu;
  t.cpu = cpu;
  wake_src_cpu_ = src_cpu;
  cls_.enqueue(t, kEnqWakeup);
  if (cpu >= 0 && cpu_idle(cpu)) kick_cpu(cpu, false);
  wake_src_cpu_ = kNoCpu;
}

int CpuModel::rt_level(int cpu) const {
  const Cpu& c = cpus_[static_cast<std::size_t>(cpu)];
  const auto& q = rtq_[static_cast<std::size_t>(cpu)];
  std::int32_t level = q.empty() ? 0 : procs_[q.front()].rt;
  if (c.curr != nullptr) level = std::max(level, procs_[c.curr->id].rt);
  if (level > 0) return level;
  return c.curr == nullptr && !c.kick_pending ? -1 : 0;
}

// find_lowest_rq() over cpupri: the CPUs of the lowest level, if it is
// below `prio`; of those `prefer` (the task's CPU), else the waker's, else
// the lowest-numbered. -1: none below `prio` (other than `except`).
int CpuModel::lowest_rt_cpu(std::int32_t prio, int prefer, int waker_cpu, int except) const {
  int best = -1, best_level = prio;
  for (int c = 0; c < nr_cpus(); ++c) {
    if (c == except) continue;
    const int l = rt_level(c);
    if (l < best_level) {
      best = c;
      best_level = l;
    }
  }
  if (best < 0) return -1;
  for (const int c : {prefer, waker_cpu})
    if (c >= 0 && c < nr_cpus() && c != except && rt_level(c) == best_level) return c;
  return best;
}

// select_task_rq_rt(): the task's CPU unless an RT task of its priority or
// higher runs there; then the lowest CPU if it is below the task.
int CpuModel::select_cpu_rt(const Task& t, int prev_cpu, int waker_cpu) const {
  if (prev_cpu < 0 || prev_cpu >= nr_cpus()) prev_cpu = 0;
  const std::int32_t prio = procs_[t.id].rt;
  const Task* curr = cpus_[static_cast<std::size_t>(prev_cpu)].curr;
  if (curr == nullptr || procs_[curr->id].rt < prio) return prev_cpu;
  const int c = lowest_rt_cpu(prio, prev_cpu, waker_cpu, -1);
  return c >= 0 ? c : prev_cpu;
}

void CpuModel::rt_enqueue(Task& t, int cpu, bool head) {
  auto& q = rtq_[static_cast<std::size_t>(cpu)];
  const std::int32_t prio = procs_[t.id].rt;
  // after every task of a higher priority (head) or of the same one too
  const auto at = std::find_if(q.begin(), q.end(), [&](std::uint32_t id) {
    return head ? procs_[id].rt <= prio : procs_[id].rt < prio;
  });
  q.insert(at, t.id);
  t.cpu = cpu;
  ++rt_waiting_;
}

// A real-time task became runnable on `cpu` (wakeup, fork, or pushed
// there): an idle CPU is kicked, a fair task or a lower RT task is
// preempted at once; otherwise it waits, and is pushed to a CPU of lower
// priority if there is one (task_woken_rt()).
void CpuModel::rt_wakeup(Task& t, int cpu) {
  rt_enqueue(t, cpu, false);
  Cpu& c = cpus_[static_cast<std::size_t>(cpu)];
  if (c.curr == nullptr) {
    kick_cpu(cpu, false);
  } else if (procs_[c.curr->id].rt < procs_[t.id].rt) {
    kick_cpu(cpu, true);
  } else {
    rt_push(cpu);
  }
}

// push_rt_tasks(): while `cpu`'s highest waiting RT task has a CPU of lower
// priority to go to, move it there (and preempt or kick that CPU).
void CpuModel::rt_push(int cpu) {
  auto& q = rtq_[static_cast<std::size_t>(cpu)];
  while (!q.empty()) {
    Task& t = tasks_[q.front()];
    const int to = lowest_rt_cpu(procs_[t.id].rt, -1, cpu, cpu);
    if (to < 0) return;
    q.erase(q.begin());
    --rt_waiting_;
    rt_wakeup(t, to);
  }
}

// The next RT task for `cpu`: its own queue's head, unless a CPU running
// an RT task has a higher one waiting behind it (pull_rt_task()); nullptr
// when none waits for this CPU.
Task* CpuModel::rt_pick(int cpu) {
  if (rt_waiting_ == 0) return nullptr;
  int from = cpu;
  std::int32_t best = rtq_[static_cast<std::size_t>(cpu)].empty() ? 0 : procs_[rtq_[static_cast<std::size_t>(cpu)].front()].rt;
  for (int c = 0; c < nr_cpus(); ++c) {
    const auto& q = rtq_[static_cast<std::size_t>(c)];
    const Task* curr = cpus_[static_cast<std::size_t>(c)].curr;
    if (c == cpu || q.empty() || curr == nullptr || !is_rt(*curr)) continue;
    if (procs_[q.front()].rt > best) {
      best = procs_[q.front()].rt;
      from = c;
    }
  }
  auto& q = rtq_[static_cast<std::size_t>(from)];
  if (q.empty()) return nullptr;
  Task& t = tasks_[q.front()];
  q.erase(q.begin());
  --rt_waiting_;
  t.cpu = cpu;
  return &t;
}

int CpuModel::pick_idle_cpu(int prefer) const {
  if (prefer >= 0 && prefer < nr_cpus() && cpus_[static_cast<std::size_t>(prefer)].curr == nullptr &&
      !cpus_[static_cast<std::size_t>(prefer)].kick_pending)
    return prefer;
  // The lowest idle CPU without a kick pending, else the lowest idle one
  // (the same order as a scan of cpus_, one word of 64 CPUs at a time).
  for (const std::vector<std::uint64_t>* set : {&idle_unkicked_, &idle_}) {
    for (std::size_t w = 0; w < set->size(); ++w)
      if ((*set)[w] != 0) return static_cast<int>(w * 64 + static_cast<std::size_t>(__builtin_ctzll((*set)[w])));
  }
  return -1;
}

int CpuModel::select_cpu_fair(const Task& p, int prev_cpu, std::uint64_t wake_flags) const {
  const int n = nr_cpus();
  if (prev_cpu < 0 || prev_cpu >= n) prev_cpu = 0;
  if (energy_aware_ && (wake_flags & kWakeTtwu) != 0) {
    const int cpu = select_cpu_energy(p, prev_cpu);
    if (cpu >= 0) return cpu;
  }
  // a kernel without fork balancing keeps a child on its forker's CPU
  if ((wake_flags & kWakeFork) != 0 && machine_.fork_placement == config::MachineConfig::ForkPlacement::kLocal)
    return prev_cpu;
  const int idle = pick_idle_cpu(prev_cpu);
  if (idle >= 0) return idle;
  if ((wake_flags & kWakeFork) == 0) return prev_cpu;
  // find_idlest_cpu(): the fewest tasks, the parent's CPU on a tie
  int best = prev_cpu;
  std::uint32_t best_nr = cls_.nr_queued(prev_cpu);
  for (int c = 0; c < n; ++c) {
    const std::uint32_t nr = cls_.nr_queued(c);
    if (nr < best_nr) {
      best = c;
      best_nr = nr;
    }
  }
  return best;
}

void CpuModel::kick_cpu(int cpu, bool preempt) {
  Cpu& c = cpus_.at(static_cast<std::size_t>(cpu));
  c.kick_preempt = c.kick_preempt || preempt;
  if (c.kick_pending) return;
  c.kick_pending = true;
  sync_idle(static_cast<std::size_t>(cpu));
  // An idle CPU in a deep idle state answers the IPI idle_exit_ns later;
  // the kick stays pending meanwhile, so placement prefers other idle CPUs.
  Time at = sim_.now();
  if (c.curr == nullptr) {
    if (machine_.idle_exit_ns > 0 && at - c.idle_since >= Time::from_ns(machine_.idle_exit_after_ns))
      at = at + Time::from_ns(machine_.idle_exit_ns);
    // An IPI from the CPU a wakeup runs on to another, idle one
    // (ipi_idle_ns; a kick outside a wakeup, wake_src_cpu_ unknown, is not
    // one).
    if (machine_.ipi_idle_ns > 0 && wake_src_cpu_ >= 0 && wake_src_cpu_ != cpu)
      at = at + Time::from_ns(machine_.ipi_idle_ns);
  } else if (preempt && machine_.kick_busy_ns > 0) {
    // A busy CPU notices a preempting kick kick_busy_ns later (the
    // emulator's busy vCPU; MachineConfig::kick_busy_ns).
    at = at + Time::from_ns(machine_.kick_busy_ns);
  }
  sim_.schedule(at, this, kKick, static_cast<std::uint64_t>(cpu));
}

// machine.preempt lazy: on the CPU the wakeup runs on, at once (the
// interrupt or system call that woke it returns to user space), unless curr
// is in a system call's kernel work itself (a fork's copy_process, an
// exit's do_exit: the interrupt returns to the kernel, which ignores the
// lazy flag); on another CPU, or then, flag curr: the flag takes effect at
// curr's next return to user space (on_cpu_event) or at the next tick
// (kTick), the first tick strictly after now on the tick grid slices end
// on. (sched_ext's kicks are a full resched: the BPF classes never come
// here.)
void CpuModel::resched_curr_lazy(int cpu) {
  Cpu& c = cpus_.at(static_cast<std::size_t>(cpu));
  if (c.curr != nullptr && is_rt(*c.curr)) return;  // the fair class cannot preempt a real-time task
  // (no tick to wait for: a later config layer set tick_ns 0 over a lazy profile)
  if (machine_.preempt != config::MachineConfig::Preempt::kLazy || machine_.tick_ns == 0 || c.curr == nullptr ||
      ((wake_src_cpu_ == cpu || wake_src_cpu_ == kAnyCpu) && !procs_[c.curr->id].in_kernel)) {
    kick_cpu(cpu, true);
    return;
  }
  c.lazy_resched = true;
  if (c.tick_pending) return;
  c.tick_pending = true;
  const std::uint64_t k = machine_.tick_ns;
  sim_.schedule(Time::from_ns((sim_.now().ns() / k + 1) * k), this, kTick, static_cast<std::uint64_t>(cpu));
}

std::uint64_t CpuModel::arm_timer(Time at, std::uint64_t cookie) {
  std::uint32_t slot;
  if (!free_timers_.empty()) {
    slot = free_timers_.back();
    free_timers_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(timers_.size());
    timers_.emplace_back();
  }
  TimerSlot& ts = timers_[slot];
  ts.gen = ts.gen + 1 == 0 ? 1 : ts.gen + 1;
  ts.live = true;
  ts.cookie = cookie;
  const std::uint64_t h = (std::uint64_t{ts.gen} << 32) | (std::uint64_t{slot} + 1);
  ts.ev = sim_.schedule(std::max(at, sim_.now()), this, kTimer, h);
  return h;
}

void CpuModel::cancel_timer(std::uint64_t handle) {
  const std::uint64_t slot = (handle & 0xffffffffu) - 1;
  if ((handle & 0xffffffffu) == 0 || slot >= timers_.size()) return;
  TimerSlot& ts = timers_[slot];
  if (!ts.live || ts.gen != handle >> 32) return;
  sim_.cancel(ts.ev);
  ts.live = false;
  free_timers_.push_back(static_cast<std::uint32_t>(slot));
}

void CpuModel::note_throttle(CgroupId id, bool throttled) {
  CgStats& s = cg_.at(id);
  if (throttled && !s.throttled_since) {
    s.throttled_in_period = true;
    s.throttled_since = sim_.now();
  } else if (!throttled && s.throttled_since) {
    s.throttled_ns += (sim_.now() - *s.throttled_since).ns();
    s.throttled_since.reset();
    // unthrottled by the refill that just ended a period: the new one is not throttled
    if (s.nr_periods && s.last_period == sim_.now()) s.throttled_in_period = false;
  }
}

void CpuModel::note_period(CgroupId id) {
  CgStats& s = cg_.at(id);
  s.nr_periods++;
  s.last_period = sim_.now();
  if (s.throttled_in_period) s.nr_throttled++;
  s.throttled_in_period = s.throttled_since.has_value();
}

void CpuModel::count(std::string_view counter, std::uint64_t n) {
  // Classes name core/ counters by agentcg_counter_name(): map back to the
  // id (13 short compares, no allocation).
  for (std::uint32_t i = 0; i < AGENTCG_NR_COUNTERS; ++i) {
    if (counter == agentcg_counter_name(i)) {
      bump(i, n);
      return;
    }
  }
  for (std::uint32_t i = 0; i < AGENTCG_NR_WORKLOAD_COUNTERS; ++i) {
    if (counter == agentcg_workload_counter_name(i)) {
      bump(AGENTCG_NR_COUNTERS + i, n);
      return;
    }
  }
  const auto it = other_counters_.find(counter);
  if (it != other_counters_.end()) it->second += n;
  else other_counters_.emplace(std::string(counter), n);
}

// Accounts the running task's CPU time since the last accounting point.
void CpuModel::charge(Cpu& c, int cpu) {
  Task& t = *c.curr;
  const Time now = sim_.now();
  if (now <= c.acct_from) {
    // It ran for no time (blocked at once, its first op a sleep) but it was
    // dispatched, and its wakeup latency counted: keep that switch in the
    // schedule as a zero-length slice, or the Perfetto/ftrace export would
    // show it waiting until its next run.
    if (log_ && !(!log_->slices.empty() && log_->slices.back().cpu == static_cast<std::uint32_t>(cpu) &&
                  log_->slices.back().pid == t.pid && log_->slices.back().end_ns == c.acct_from.ns()))
      log_->slices.push_back({static_cast<std::uint32_t>(cpu), t.pid, t.cgroup, c.acct_from.ns(), c.acct_from.ns()});
    return;
  }
  const std::uint64_t wall = (now - c.acct_from).ns();
  // sched_ext's own share of the busy CPU (machine.ext_busy_pct, 0 under
  // the kernel's scheduler) is nobody's work: the task gets the rest.
  const std::uint64_t ran = work_in(wall);
  Proc& p = procs_[t.id];
  p.run_left_ns -= std::min(p.run_left_ns, ran);
  t.sum_exec += Time::from_ns(ran);
  CgStats& s = cg_[t.cgroup];
  s.cpu_ns += ran;
  // Spread over the series bins.
  std::uint64_t from = c.acct_from.ns();
  const std::uint64_t bin = series_bin_.ns();
  while (from < now.ns()) {
    const std::uint64_t b = from / bin;
    const std::uint64_t to = std::min(now.ns(), (b + 1) * bin);
    if (s.series.size() <= b) s.series.resize(b + 1, 0);
    s.series[b] += work_in(to - from);
    from = to;
  }
  if (log_) {
    if (!log_->slices.empty() && log_->slices.back().cpu == static_cast<std::uint32_t>(cpu) &&
        log_->slices.back().pid == t.pid && log_->slices.back().end_ns == c.acct_from.ns()) {
      log_->slices.back().end_ns = now.ns();
    } else {
      log_->slices.push_back({static_cast<std::uint32_t>(cpu), t.pid, t.cgroup, c.acct_from.ns(), now.ns()});
    }
  }
  c.acct_from = now;
}

void CpuModel::stop_curr(int cpu, bool runnable) {
  Cpu& c = cpus_[static_cast<std::size_t>(cpu)];
  Task& t = *c.curr;
  charge(c, cpu);
  update_util(cpu, true);
  sim_.cancel(c.ev);
  c.curr = nullptr;
  c.lazy_resched = false;  // __schedule() clears the need-resched flags
  sync_idle(static_cast<std::size_t>(cpu));
  if (!runnable) runnable_changed(t, -1);
  if (!is_rt(t)) cls_.stopping(t, cpu, runnable);
}

void CpuModel::runnable_changed(const Task& t, int delta) {
  const std::uint64_t now = sim_.now().ns();
  for (CgroupId c = t.cgroup; c != kRootCgroup; c = owed_[c].parent) {
    accrue_guarantee(c, now);
    owed_[c].nr = static_cast<std::uint32_t>(static_cast<std::int64_t>(owed_[c].nr) + delta);
  }
}

void CpuModel::accrue_guarantee(std::size_t cg, std::uint64_t now) {
  Owed& o = owed_[cg];
  const std::uint64_t bin = series_bin_.ns();
  if (o.nr > 0 && now > o.from_ns) {
    const double cpus = std::min(static_cast<double>(o.nr), o.cpus);
    std::vector<double>& g = cg_[cg].guaranteed;
    // from_ns's bin is kept: a division only when a change crosses into a
    // later bin, not at every wakeup and sleep
    for (std::uint64_t b = o.bin, from = o.from_ns;; ++b) {
      if (g.size() <= b) g.resize(b + 1, 0.0);
      const std::uint64_t end = std::min(now, (b + 1) * bin);
      g[b] += cpus * static_cast<double>(end - from);
      if (end == now) break;
      from = end;
    }
  }
  o.from_ns = now;
  if (now >= (o.bin + 1) * bin) o.bin = now / bin;
}

void CpuModel::rearm_cpu(int cpu) {
  Cpu& c = cpus_[static_cast<std::size_t>(cpu)];
  sim_.cancel(c.ev);
  const Proc& p = procs_[c.curr->id];
  // the wall time that gives the task run_left_ns of work (ceil, so the
  // run ends at that event and not one tick later)
  const Time done = c.acct_from + Time::from_ns(wall_for(p.run_left_ns));
  c.ev = sim_.schedule(std::min(done, c.slice_end), this, kCpuEvent, static_cast<std::uint64_t>(cpu));
}

void CpuModel::dispatch(int cpu, Task* prev) {
  Cpu& c = cpus_[static_cast<std::size_t>(cpu)];
  if (c.curr) throw std::logic_error("dispatch on a busy CPU");
  // the real-time class first (rt_sched_class before fair's and ext's)
  Task* rt = rt_pick(cpu);
  const Dispatch d = rt != nullptr ? Dispatch{rt, Time::from_ns(procs_[rt->id].rr ? kRrSliceNs : kFifoSliceNs)}
                                   : cls_.dispatch(cpu, prev != nullptr && is_rt(*prev) ? nullptr : prev);
  if (!d.task) {  // idle
    c.idle_since = sim_.now();
    return;
  }
  Task& t = *d.task;
  if (t.state != TaskState::kRunnable) {
    throw std::logic_error(std::string(cls_.name()) + ": dispatched task " + std::to_string(t.pid) +
                           " that is not runnable");
  }
  const Time now = sim_.now();
  Time cs;
  if (c.last_task != t.id) {
    cs = Time::from_ns(machine_.context_switch_ns);
    ++context_switches_;
    t.nr_switches++;
  }
  const Time start = now + cs;
  const std::uint64_t waited = (start - t.runnable_since).ns();
  max_runnable_wait_ns_ = std::max(max_runnable_wait_ns_, waited);
  Proc& p = procs_[t.id];
  if (p.last_cpu >= 0 && p.last_cpu != cpu && machine_.migration_cost_ns > 0) {
    // cache refill after a migration: more work for the task (its cgroup
    // is charged), not a later start
    if (p.run_left_ns > 0) p.run_left_ns += machine_.migration_cost_ns;
    else p.migr_debt_ns += machine_.migration_cost_ns;
  }
  p.last_cpu = cpu;
  if (p.background) p.woken = false;
  if (p.woken) {
    const std::uint64_t sample = (start - p.woken_at).ns();
    cg_[t.cgroup].wakeup.add(sample);
    wakeup_all_.add(sample);
    p.woken = false;
  }
  t.state = TaskState::kRunning;
  t.cpu = cpu;
  t.started_at = start;
  if (energy_aware_) {
    update_util(cpu, false);  // idle until now
    p.util *= pelt_decay(now - p.util_at);  // and the task asleep or waiting
    p.util_at = now;
  }
  c.curr = &t;
  sync_idle(static_cast<std::size_t>(cpu));
  c.last_task = t.id;
  c.acct_from = start;
  c.slice_end = start + Time::from_ns(std::max<std::uint64_t>(d.slice.ns(), kMinSliceNs));
  // machine.tick_ns: the kernel notices a used-up slice at its next tick
  // (sched_tick(); task_tick_scx for sched_ext), not when it runs out
  if (machine_.tick_ns) {
    const std::uint64_t k = machine_.tick_ns;
    c.slice_end = Time::from_ns((c.slice_end.ns() + k - 1) / k * k);
  }
  if (rt == nullptr) cls_.running(t, cpu);
  rearm_cpu(cpu);
}

void CpuModel::preempt(int cpu, bool slice_end) {
  Cpu& c = cpus_[static_cast<std::size_t>(cpu)];
  Task* t = c.curr;
  stop_curr(cpu, true);
  t->state = TaskState::kRunnable;
  t->runnable_since = sim_.now();
  if (is_rt(*t)) rt_enqueue(*t, cpu, !(slice_end && procs_[t->id].rr));
  else cls_.enqueue(*t, kEnqPreempted);
  dispatch(cpu, t);
  // a real-time task left waiting goes where it can run (the balance
  // callback's push_rt_tasks() after __schedule())
  if (t->state == TaskState::kRunnable && is_rt(*t)) rt_push(cpu);
}

void CpuModel::on_cpu_event(int cpu) {
  Cpu& c = cpus_[static_cast<std::size_t>(cpu)];
  Task& t = *c.curr;
  charge(c, cpu);
  Proc& p = procs_[t.id];
  if (p.run_left_ns > 0) {  // slice used up
    preempt(cpu, true);
    return;
  }
  const Next n = advance(t);
  if (n == Next::kRun) {
    // a lazy reschedule takes effect at the return of a system call
    if (sim_.now() >= c.slice_end) preempt(cpu, true);
    else if (c.lazy_resched && p.syscall) preempt(cpu);
    else rearm_cpu(cpu);
    return;
  }
  stop_curr(cpu, false);
  if (n == Next::kExit) exit_task(t);
  dispatch(cpu, &t);
}

void CpuModel::exit_task(Task& t) {
  Proc& p = procs_[t.id];
  set_mem(t, 0);
  if (!is_rt(t)) cls_.exit_task(t);
  t.state = TaskState::kExited;
  if (!p.background) --live_;
  if (p.parent >= 0) {
    Proc& parent = procs_[static_cast<std::size_t>(p.parent)];
    Task& pt = tasks_[static_cast<std::size_t>(p.parent)];
    if (parent.live_children > 0) parent.live_children--;
    if (parent.live_children == 0 && parent.waiting && pt.state == TaskState::kBlocked) {
      parent.waiting = false;
      do_wake(pt, t.cpu < 0 ? 0 : t.cpu);
      // the player's sample: from the child's timestamp before _exit
      parent.woken_at = p.exit_began;
    }
  }
  // Orphans are not reparented to init: nobody waits for them.
  maybe_finish();
}

void CpuModel::maybe_finish() {
  if (live_ == 0 && pending_starts_ == 0 && !trace_.duration_ns) {
    sim_.schedule(sim_.now(), this, kStop);
  }
}

void CpuModel::on_event(Simulator& sim, std::uint32_t kind, std::uint64_t arg) {
  switch (static_cast<EventKind>(kind)) {
    case kProcStart: {
      const auto& spec = trace_.processes[arg];
      --pending_starts_;
      std::int64_t parent = -1;
      if (spec.parent) {
        const auto it = task_by_pid_.find(*spec.parent);
        if (it != task_by_pid_.end() && tasks_[it->second].state != TaskState::kExited)
          parent = static_cast<std::int64_t>(it->second);
      }
      const std::uint32_t id = new_task(spec, spec.pid, tree_.find(spec.cgroup), parent);
      start_task(id, true, parent >= 0 ? tasks_[static_cast<std::size_t>(parent)].cpu : -1);
      break;
    }
    case kCpuEvent:
      on_cpu_event(static_cast<int>(arg));
      break;
    case kWake: {
      Proc& p = procs_[arg];
      if (p.waker_task >= 0) {
        // the waker's system call: from its CPU (running, else its last)
        const int w = tasks_[static_cast<std::size_t>(p.waker_task)].cpu;
        p.waker_task = -1;
        do_wake(tasks_[arg], kNoCpu, w >= 0 ? w : tasks_[arg].cpu);
        break;
      }
      wakeup_work(tasks_[arg]);
      do_wake(tasks_[arg]);
      break;
    }
    case kEnqueue: {  // the timer or I/O interrupt on the sleeper's last CPU, or a waker's (wake_src)
      Proc& p = procs_[arg];
      const int src = p.wake_src >= 0 ? p.wake_src : tasks_[arg].cpu;
      const bool by_task = p.wake_src >= 0;
      p.wake_src = -1;
      do_enqueue(tasks_[arg], src, by_task);
      break;
    }
    case kKick: {
      const int cpu = static_cast<int>(arg);
      Cpu& c = cpus_[arg];
      const bool pre = c.kick_preempt;
      c.kick_pending = false;
      c.kick_preempt = false;
      sync_idle(arg);
      // a real-time task yields only to a higher one waiting for this CPU
      const auto& rq = rtq_[arg];
      if (!c.curr) dispatch(cpu, nullptr);
      else if (pre && (!is_rt(*c.curr) || (!rq.empty() && procs_[rq.front()].rt > procs_[c.curr->id].rt)))
        preempt(cpu);
      break;
    }
    case kTick: {  // machine.preempt lazy: the tick turns a lazy flag into a preemption
      Cpu& c = cpus_[arg];
      c.tick_pending = false;
      if (c.lazy_resched && c.curr) preempt(static_cast<int>(arg));
      break;
    }
    case kTimer: {
      // A cancelled timer's event was cancelled too, so this one is live;
      // check anyway so that a stale handle can never fire a reused slot.
      const std::uint64_t slot = (arg & 0xffffffffu) - 1;
      TimerSlot& ts = timers_[slot];
      if (!ts.live || ts.gen != arg >> 32) break;
      const std::uint64_t cookie = ts.cookie;
      ts.live = false;
      free_timers_.push_back(static_cast<std::uint32_t>(slot));
      wake_src_cpu_ = kAnyCpu;  // a class's timer (the balancer) acts on its own CPU
      cls_.on_timer(cookie);
      wake_src_cpu_ = kNoCpu;
      break;
    }
    case kStop:
      if (!finished_) {
        finished_ = true;
        sim.stop();
      }
      break;
  }
}

void CpuModel::finish() {
  for (std::size_t i = 0; i < cpus_.size(); ++i)
    if (cpus_[i].curr) charge(cpus_[i], static_cast<int>(i));
  // A task still waiting at the end counts too: a starved task is never
  // dispatched, so its wait would otherwise never be seen.
  for (const Task& t : tasks_)
    if (t.state == TaskState::kRunnable && sim_.now() > t.runnable_since)
      max_runnable_wait_ns_ = std::max(max_runnable_wait_ns_, (sim_.now() - t.runnable_since).ns());
  for (std::size_t i = 0; i < cg_.size(); ++i)
    if (cg_[i].throttled_since) note_throttle(static_cast<CgroupId>(i), false);
  for (std::size_t i = 1; i < cg_.size(); ++i) accrue_guarantee(i, sim_.now().ns());
  end_time_ = sim_.now();
  if (log_) log_->end_ns = end_time_.ns();
}

const LatencyHistogram& CpuModel::SubtreeHistograms::of(const std::unordered_map<std::size_t, LatencyHistogram>& m,
                                                        std::size_t id) {
  static const LatencyHistogram empty;
  const auto it = m.find(id);
  return it != m.end() ? it->second : empty;
}

CpuModel::SubtreeHistograms CpuModel::subtree_histograms() const {
  const std::size_t n = tree_.size();
  SubtreeHistograms h;
  // ids are in topological order (children after parents): one pass upward,
  // a child complete before it is merged into its parent
  auto up = [&](std::unordered_map<std::size_t, LatencyHistogram>& m, LatencyHistogram CgStats::*own) {
    for (std::size_t i = 0; i < n; ++i)
      if ((cg_[i].*own).count() != 0) m.emplace(i, cg_[i].*own);
    for (std::size_t i = n; i-- > 1;) {
      const auto it = m.find(i);
      if (it == m.end()) continue;
      const LatencyHistogram* child = &it->second;  // an element's address survives a rehash; `it` does not
      m[tree_.info(static_cast<CgroupId>(i)).parent].merge(*child);
    }
  };
  up(h.wake, &CgStats::wakeup);
  up(h.tool, &CgStats::tool);
  return h;
}

nlohmann::json CpuModel::cgroup_histograms() const {
  const SubtreeHistograms h = subtree_histograms();
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t i = 0; i < tree_.size(); ++i) {
    const LatencyHistogram& wake = SubtreeHistograms::of(h.wake, i);
    const LatencyHistogram& tool = SubtreeHistograms::of(h.tool, i);
    if (wake.count() == 0 && tool.count() == 0) continue;
    out[tree_.path(static_cast<CgroupId>(i))] = {{"wakeup_latency_ns", wake.to_json()},
                                                 {"tool_call_latency_ns", tool.to_json()}};
  }
  return out;
}

CpuResultsInput CpuModel::results_input() const {
  const std::size_t n = tree_.size();
  // Hierarchical sums (ids are in topological order: children after parents).
  std::vector<std::uint64_t> cpu_ns(n);
  const SubtreeHistograms hist = subtree_histograms();
  std::vector<std::vector<std::uint64_t>> series(n);
  std::vector<std::uint32_t> tasks(n);
  for (std::size_t i = 0; i < n; ++i) {
    cpu_ns[i] = cg_[i].cpu_ns;
    series[i] = cg_[i].series;
    tasks[i] = cg_[i].tasks;
  }
  for (std::size_t i = n; i-- > 1;) {
    const std::size_t p = tree_.info(static_cast<CgroupId>(i)).parent;
    cpu_ns[p] += cpu_ns[i];
    if (series[p].size() < series[i].size()) series[p].resize(series[i].size(), 0);
    for (std::size_t b = 0; b < series[i].size(); ++b) series[p][b] += series[i][b];
  }
  const std::vector<double> entitled = tree_.entitled_shares(static_cast<std::uint32_t>(cpus_.size()), tasks);

  CpuResultsInput in;
  in.cpus = cpus_.size();
  in.duration_ns = end_time_.ns();
  in.series_bin_ns = series_bin_.ns();
  // Children before parents, so that an idle cgroup (cgroup_had_activity)
  // is dropped before the next is built: a trace of 1e6 empty cgroups costs
  // one input at a time, not 1e6. A cgroup with a listed child is listed.
  std::vector<bool> child_listed(n);
  for (std::size_t i = n; i-- > 0;) {
    CgroupResultsInput c;
    c.path = tree_.path(static_cast<CgroupId>(i));
    c.cpu_time_ns = cpu_ns[i];
    c.entitled_share = entitled[i];
    c.tasks = cg_[i].tasks;
    c.forks = cg_[i].forks;
    c.wakeup_latency_ns = SubtreeHistograms::of(hist.wake, i).summary();
    c.tool_call_latency_ns = SubtreeHistograms::of(hist.tool, i).summary();
    c.throttled_ns = cg_[i].throttled_ns;
    c.nr_throttled = cg_[i].nr_throttled;
    c.nr_periods = cg_[i].nr_periods;
    c.mem_peak_bytes = mem_[i].peak;
    c.mem_events_high = mem_[i].events_high;
    c.mem_events_max = mem_[i].events_max;
    c.mem_oom_kill = mem_[i].oom_kill;
    c.series_ns = std::move(series[i]);
    if (i != kRootCgroup) c.guaranteed_ns = cg_[i].guaranteed;
    if (i != kRootCgroup && !child_listed[i] && !cgroup_had_activity(c)) {
      ++in.idle_cgroups;
      continue;
    }
    child_listed[tree_.info(static_cast<CgroupId>(i)).parent] = true;
    in.cgroups.push_back(std::move(c));
  }
  std::reverse(in.cgroups.begin(), in.cgroups.end());  // cgroup-id order, the root first
  // New-step detection against the annotations, per cgroup with annotated
  // steps: a detection matches the cgroup's next unmatched step when it
  // falls between the step's `step` op and kStepMatchTolNs after its first
  // tool call; one that matches nothing is a false positive. Detections in
  // cgroups without annotations are reported apart (`unannotated`).
  // Steps that never reached a tool call (the run ended while the agent
  // thought) are invisible to a kernel and are not counted.
  std::uint64_t annotated = 0, detected = 0, matched = 0, unannotated = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& st = cg_[i].steps;
    if (st.empty()) {
      // no annotations to score against (a recording without tool calls,
      // a fork storm): counted apart, not as false positives
      unannotated += cg_[i].detected.size();
      continue;
    }
    for (const StepMark& m : st) annotated += m.tool_ns ? 1 : 0;
    detected += cg_[i].detected.size();
    std::size_t k = 0;
    for (const std::uint64_t d : cg_[i].detected) {
      while (k < st.size() && (!st[k].tool_ns || *st[k].tool_ns + kStepMatchTolNs < d)) ++k;
      if (k < st.size() && st[k].step_ns <= d) {
        ++matched;
        ++k;
      }
    }
  }
  using nlohmann::json;
  json step_j;
  step_j["annotated"] = annotated;
  step_j["detected"] = detected;
  step_j["matched"] = matched;
  step_j["unannotated"] = unannotated;
  step_j["tolerance_ns"] = kStepMatchTolNs;
  const bool scored = cls_.has_step_detector();
  step_j["precision"] = scored && detected > 0
                            ? json(round6(static_cast<double>(matched) / static_cast<double>(detected)))
                            : json();
  step_j["recall"] = scored && annotated > 0
                         ? json(round6(static_cast<double>(matched) / static_cast<double>(annotated)))
                         : json();
  // The interactive task(s): cgroups /interactive and below (the crowded
  // and builds generators put a shell there).
  LatencyHistogram inter;
  bool have_inter = false;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string& path = tree_.path(static_cast<CgroupId>(i));
    if (path == "/interactive" || path.rfind("/interactive/", 0) == 0) {
      have_inter = true;
      inter.merge(cg_[i].wakeup);
    }
  }
  in.wakeup_latency_ns = wakeup_all_.summary();
  in.tool_call_latency_ns = tool_all_.summary();
  in.tool_calls_completed = tool_all_.count();
  in.new_step_detection = std::move(step_j);
  if (have_inter) in.interactive_wakeup_latency_ns = inter.summary();
  in.context_switches = context_switches_;
  in.max_runnable_wait_ns = max_runnable_wait_ns_;
  const double total = static_cast<double>(in.duration_ns) * static_cast<double>(in.cpus);
  in.cpu_utilization = total > 0 ? static_cast<double>(in.cgroups[kRootCgroup].cpu_time_ns) / total : 0.0;
  in.tasks = tasks_.size();
  for (std::uint32_t i = 0; i < kNrCounters; ++i) {
    if (!counter_seen_[i]) continue;
    const char* name =
        i < AGENTCG_NR_COUNTERS ? agentcg_counter_name(i) : agentcg_workload_counter_name(i - AGENTCG_NR_COUNTERS);
    in.counters.emplace_back(name, counter_[i]);
  }
  for (const auto& [k, v] : other_counters_) in.counters.emplace_back(k, v);
  return in;
}

nlohmann::json CpuModel::results() const { return cpu_results_json(results_input()); }

}  // namespace agentcg::sim
