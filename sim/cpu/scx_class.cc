// SPDX-License-Identifier: GPL-2.0-only
// flatcg / agentcg as a SchedClass: each callback gathers inputs, calls
// core/ (agentcg/flatcg.h, agentcg/agentcg.h, agentcg/bandwidth.h) and
// applies the decision, like bpf/agentcg.bpf.c. State lives in structs the
// core defines (one agentcg_cgrp per cgroup, one agentcg_task per task, one
// agentcg_global), indexed like BPF cgroup/task storage.
//
// Invariants: a task is counted runnable in its cgroup (nr_runnable) from
// enqueue until stopping(runnable=false), dequeue or exit; it is in its
// group's queue only between enqueue and dispatch. Ordered containers only
// (std::set keyed by (vtime, id)), so runs are deterministic.
//
// What the glue adds around core/:
//  - preemption: a task enqueued by a wakeup or fork into a group holding a
//    boost looks for a CPU whose task core/ agrees to preempt
//    (agentcg_should_preempt); a verdict "not before T" (min_slice) arms a
//    timer that re-evaluates at T.
//  - the memory monitor: every kScxPollInterval the class reads each
//    cgroup's memory.events "high" count and calls
//    agentcg_mem_penalty_update(), the function agentcgroupd calls. The
//    model's counts are hierarchical (like memory.events); the class uses
//    the local part (own count minus the children's, memory.events.local),
//    so a parent is not penalised for its child's memory.high.
//  - cpu.max: a pool per limited cgroup, local runtime per (cgroup, CPU),
//    a period timer, throttled groups skipped at dispatch.
//
// Limitations: no per-CPU queues or cgroup slices (scx_flatcg keeps a CPU on
// one cgroup for a while); select_cpu only prefers an idle CPU.
#include "sim/cpu/scx_class.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "agentcg/agentcg.h"
#include "agentcg/bandwidth.h"
#include "agentcg/counters.h"
#include "agentcg/flatcg.h"

namespace agentcg::sim {

namespace {

// Timer cookies: kind in the high 32 bits, argument (cgroup or CPU) below.
enum TimerKind : std::uint64_t { kTimerPoll = 1, kTimerBandwidth = 2, kTimerPreempt = 3 };
constexpr std::uint64_t cookie(TimerKind k, std::uint64_t arg) { return (static_cast<std::uint64_t>(k) << 32) | arg; }

class ScxClass final : public SchedClass {
 public:
  ScxClass(const agentcg_tunables& t, bool agentcg) : t_(t), agentcg_(agentcg) {
    if (!agentcg_) t_.features = 0;
  }

  std::string_view name() const override { return agentcg_ ? "agentcg" : "flatcg"; }
  bool has_step_detector() const override { return true; }

  void init(SchedContext& ctx) override {
    ctx_ = &ctx;
    g_ = agentcg_global{};
    preempt_timer_.assign(static_cast<std::size_t>(ctx.nr_cpus()), 0);
    if (t_.features & (AGENTCG_F_MEM_PENALTY | AGENTCG_F_FORK_AWARE))
      ctx_->arm_timer(ctx_->now() + kScxPollInterval, cookie(kTimerPoll, 0));
  }

  int select_cpu(Task& p, int prev_cpu, std::uint64_t) override {
    const int idle = ctx_->pick_idle_cpu(prev_cpu);
    if (idle >= 0) return idle;
    (void)p;
    return prev_cpu >= 0 ? prev_cpu : 0;
  }

  void enqueue(Task& p, std::uint64_t enq_flags) override {
    const std::uint64_t now = ctx_->now().ns();
    TaskCtx& tc = task_ctx(p);
    Group& gr = groups_.at(p.cgroup);
    std::uint32_t ev = 0;
    if (!tc.counted) ev |= make_runnable(p.cgroup, tc, now);
    if (enq_flags & kEnqWakeup) ev |= agentcg_on_wakeup(&gr.cg, now, &t_);
    if (agentcg_fork_tick(&gr.cg, now, &t_)) sync_weight(p.cgroup);
    bump(ev);
    if (enq_flags & (kEnqWakeup | kEnqNew)) agentcg_task_enqueue(&tc.t, &gr.cg, agentcg_base_slice_ns(&t_));
    tc.t.weight = p.weight ? p.weight : AGENTCG_WEIGHT_DFL;
    queue_task(p.cgroup, p.id, tc);
    if ((enq_flags & (kEnqWakeup | kEnqNew)) && !(p.cpu >= 0 && ctx_->cpu_idle(p.cpu)))
      try_preempt(p.cgroup);
  }

  void dequeue(Task& p) override {
    TaskCtx& tc = task_ctx(p);
    unqueue_task(p.id, tc);
    if (tc.counted) make_quiescent(tc.cg, tc, ctx_->now().ns());
  }

  Dispatch dispatch(int cpu, Task*) override {
    const std::uint64_t now = ctx_->now().ns();
    for (;;) {
      // The queued group with the smallest effective vtime, skipping groups
      // under a throttled ancestor (ties: lower cgroup id).
      std::optional<CgroupId> best;
      std::uint64_t best_v = 0;
      for (const CgroupId c : queued_groups_) {
        if (throttled_path(c)) continue;
        const std::uint64_t v = agentcg_eff_vtime(&groups_[c].cg, now, &t_);
        if (!best || agentcg_before(v, best_v)) {
          best = c;
          best_v = v;
        }
      }
      if (!best) return {};
      const CgroupId c = *best;
      Group& gr = groups_[c];
      // Draw cpu.max runtime for every limited level; a level whose pool is
      // empty throttles its subtree and we pick again.
      std::uint64_t slice = agentcg_slice_ns(&gr.cg, now, &t_);
      bool throttled = false;
      for (CgroupId a = c;; a = ctx_->cgroup(a).parent) {
        Group& ga = groups_[a];
        if (agentcg_bw_limited(&ga.bw)) {
          s64& local = ga.local.at(static_cast<std::size_t>(cpu));
          if (!agentcg_bw_acquire(&ga.bw, &local, AGENTCG_BW_DEFAULT_SLICE_NS, now)) {
            throttle(a);
            throttled = true;
            break;
          }
          slice = std::min<std::uint64_t>(slice, static_cast<std::uint64_t>(local));
        }
        if (a == kRootCgroup) break;
      }
      if (throttled) continue;
      const std::uint32_t id = gr.queue.begin()->second;
      Task& t = ctx_->task(id);
      TaskCtx& tc = tasks_[id];
      unqueue_task(id, tc);
      agentcg_cgrp_picked(&g_, &gr.cg);
      agentcg_task_picked(&gr.cg, &tc.t);
      tc.t.boosted = agentcg_has_boost(&gr.cg, now, &t_) ? 1 : 0;
      return {&t, Time::from_ns(slice)};
    }
  }

  void running(Task& p, int) override { task_ctx(p).t.started_at_ns = p.started_at.ns(); }

  void stopping(Task& p, int cpu, bool runnable) override {
    const std::uint64_t now = ctx_->now().ns();
    TaskCtx& tc = task_ctx(p);
    const std::uint64_t ran = (ctx_->now() - p.started_at).ns();
    auto ch = chain(tc.cg);
    const u32 qshare = agentcg_refresh_hweight(ch.data(), static_cast<u32>(ch.size()), &g_);
    agentcg_cgrp_charge(&groups_[tc.cg].cg, qshare, ran);
    agentcg_task_charge(&tc.t, ran);
    tc.t.boosted = 0;
    for (CgroupId a = tc.cg;; a = ctx_->cgroup(a).parent) {
      Group& ga = groups_[a];
      if (agentcg_bw_limited(&ga.bw)) {
        s64& local = ga.local.at(static_cast<std::size_t>(cpu));
        agentcg_bw_charge(&ga.bw, &local, ran);
        agentcg_bw_return(&ga.bw, &local);
      }
      if (a == kRootCgroup) break;
    }
    if (!runnable) make_quiescent(tc.cg, tc, now);
  }

  void init_task(Task& p, bool fork) override {
    TaskCtx& tc = task_ctx(p);
    tc = TaskCtx{};
    agentcg_task_init(&tc.t, p.weight);
    tc.cg = p.cgroup;
    // correction 3 (agentcg.h): forks are seen here (args->fork), sched_ext
    // has no fork callback.
    if (fork) {
      Group& gr = groups_.at(p.cgroup);
      const std::uint32_t ev = agentcg_on_fork(&gr.cg, ctx_->now().ns(), &t_);
      if (ev & AGENTCG_EV(fork_storms)) sync_weight(p.cgroup);
      if (ev & AGENTCG_EV(new_steps)) ctx_->note_new_step(p.cgroup);
      bump(ev);
    }
    agentcg_task_joined(&groups_.at(p.cgroup).cg);
  }

  void exit_task(Task& p) override {
    TaskCtx& tc = task_ctx(p);
    agentcg_task_left(&groups_.at(tc.cg).cg);
    unqueue_task(p.id, tc);
    if (tc.counted) make_quiescent(tc.cg, tc, ctx_->now().ns());
  }

  void cgroup_init(const CgroupInfo& cg) override {
    if (cg.depth + 1 > AGENTCG_MAX_DEPTH)
      throw std::invalid_argument("cgroup " + std::to_string(cg.id) + " is " +
                                  std::to_string(cg.depth) + " levels deep; " + std::string(name()) +
                                  " supports at most " + std::to_string(AGENTCG_MAX_DEPTH - 1));
    if (groups_.size() <= cg.id) groups_.resize(cg.id + 1);
    Group& gr = groups_[cg.id];
    agentcg_cgrp_init(&gr.cg, cg.weight);
    gr.local.assign(static_cast<std::size_t>(ctx_->nr_cpus()), 0);
    agentcg_bw_init(&gr.bw, 0, 0);
    cgroup_set_bandwidth(cg.id, cg.quota_us, cg.period_us);
  }

  void cgroup_move(Task& p, CgroupId from, CgroupId to) override {
    TaskCtx& tc = task_ctx(p);
    const bool was_queued = tc.queued;
    const bool was_counted = tc.counted;
    const std::uint64_t now = ctx_->now().ns();
    unqueue_task(p.id, tc);
    if (was_counted) make_quiescent(from, tc, now);
    agentcg_task_left(&groups_.at(from).cg);
    agentcg_task_joined(&groups_.at(to).cg);
    tc.cg = to;
    if (was_counted) bump(make_runnable(to, tc, now));
    if (was_queued) queue_task(to, p.id, tc);
  }

  void cgroup_set_weight(CgroupId cg, std::uint32_t weight) override {
    groups_.at(cg).cg.weight = weight ? weight : AGENTCG_WEIGHT_DFL;
    sync_weight(cg);
  }

  void cgroup_set_bandwidth(CgroupId cg, std::optional<std::uint64_t> quota_us,
                            std::uint64_t period_us) override {
    Group& gr = groups_.at(cg);
    if (gr.bw_timer) ctx_->cancel_timer(gr.bw_timer);
    gr.bw_timer = 0;
    if (gr.throttled) unthrottle(cg);
    agentcg_bw_init(&gr.bw, quota_us ? *quota_us * 1000 : 0, period_us * 1000);
    if (quota_us)
      gr.bw_timer = ctx_->arm_timer(ctx_->now() + Time::from_ns(gr.bw.period_ns),
                                    cookie(kTimerBandwidth, cg));
  }

  void on_timer(std::uint64_t c) override {
    const auto kind = static_cast<TimerKind>(c >> 32);
    const auto arg = static_cast<std::uint32_t>(c & 0xffffffffu);
    switch (kind) {
      case kTimerPoll:
        poll();
        ctx_->arm_timer(ctx_->now() + kScxPollInterval, cookie(kTimerPoll, 0));
        return;
      case kTimerBandwidth: {
        Group& gr = groups_.at(arg);
        const std::uint64_t periods = gr.bw.nr_periods;
        const bool was = agentcg_bw_refill(&gr.bw, ctx_->now().ns());
        if (gr.bw.nr_periods != periods) ctx_->note_period(arg);
        if (was || gr.throttled) unthrottle(arg);
        gr.bw_timer = ctx_->arm_timer(ctx_->now() + Time::from_ns(gr.bw.period_ns),
                                      cookie(kTimerBandwidth, arg));
        return;
      }
      case kTimerPreempt:
        preempt_timer_.at(arg) = 0;
        if (!queued_groups_.empty()) try_preempt_waiting();
        return;
    }
    throw std::logic_error("scx class: unknown timer cookie " + std::to_string(c));
  }

 private:
  struct Group {
    agentcg_cgrp cg{};
    agentcg_mem_state mem{};
    std::uint64_t last_local_high = 0;
    std::set<std::pair<std::uint64_t, std::uint32_t>> queue;  // (task vtime, task id)
    agentcg_bw_pool bw{};
    std::vector<s64> local;  // cpu.max runtime held per CPU
    std::uint64_t bw_timer = 0;
    bool throttled = false;
  };
  struct TaskCtx {
    agentcg_task t{};
    CgroupId cg = kRootCgroup;
    std::uint64_t qkey = 0;  // vtime it is queued under
    bool queued = false;
    bool counted = false;  // counted in groups_[cg].cg.nr_runnable
  };

  TaskCtx& task_ctx(const Task& p) {
    if (tasks_.size() <= p.id) tasks_.resize(p.id + 1);
    return tasks_[p.id];
  }

  // root .. cg, for the hierarchy walks of core/.
  std::vector<agentcg_cgrp*> chain(CgroupId cg) {
    std::vector<agentcg_cgrp*> c;
    for (CgroupId a = cg;; a = ctx_->cgroup(a).parent) {
      c.push_back(&groups_[a].cg);
      if (a == kRootCgroup) break;
    }
    std::reverse(c.begin(), c.end());
    return c;
  }

  void bump(std::uint32_t ev) {
    for (std::uint32_t i = 0; i < AGENTCG_NR_COUNTERS; i++)
      if (ev & (1u << i)) ctx_->count(agentcg_counter_name(i));
  }

  void sync_weight(CgroupId cg) {
    agentcg_cgrp* parent = cg == kRootCgroup ? nullptr : &groups_[ctx_->cgroup(cg).parent].cg;
    agentcg_sync_weight(&groups_[cg].cg, parent, &g_, &t_);
  }

  // The task becomes runnable in cg: new-step detection + boost, the lag
  // bound, and the active-set update (ops.runnable in scx_flatcg).
  std::uint32_t make_runnable(CgroupId cg, TaskCtx& tc, std::uint64_t now) {
    Group& gr = groups_[cg];
    std::uint32_t ev = 0;
    if (gr.cg.nr_runnable == 0) {
      ev |= agentcg_on_runnable(&gr.cg, &g_, now, &t_);
      if (agentcg_cgrp_bound_lag(&gr.cg, &g_, agentcg_base_slice_ns(&t_))) ev |= AGENTCG_EV(lag_clamps);
    }
    auto ch = chain(cg);
    agentcg_update_active(ch.data(), static_cast<u32>(ch.size()), &g_, true);
    sync_weight(cg);
    tc.counted = true;
    tc.cg = cg;
    return ev;
  }

  void make_quiescent(CgroupId cg, TaskCtx& tc, std::uint64_t now) {
    auto ch = chain(cg);
    agentcg_update_active(ch.data(), static_cast<u32>(ch.size()), &g_, false);
    if (groups_[cg].cg.nr_runnable == 0) agentcg_on_quiescent(&groups_[cg].cg, now);
    tc.counted = false;
  }

  void queue_task(CgroupId cg, std::uint32_t id, TaskCtx& tc) {
    tc.qkey = tc.t.vtime;
    tc.queued = true;
    tc.cg = cg;
    groups_[cg].queue.insert({tc.qkey, id});
    queued_groups_.insert(cg);
  }

  void unqueue_task(std::uint32_t id, TaskCtx& tc) {
    if (!tc.queued) return;
    Group& gr = groups_[tc.cg];
    gr.queue.erase({tc.qkey, id});
    if (gr.queue.empty()) queued_groups_.erase(tc.cg);
    tc.queued = false;
  }

  bool throttled_path(CgroupId cg) const {
    for (CgroupId a = cg;; a = ctx_->cgroup(a).parent) {
      if (groups_[a].throttled) return true;
      if (a == kRootCgroup) return false;
    }
  }

  void throttle(CgroupId cg) {
    Group& gr = groups_[cg];
    if (gr.throttled) return;
    gr.throttled = true;
    ctx_->note_throttle(cg, true);
    bump(AGENTCG_EV(throttles));
  }

  void unthrottle(CgroupId cg) {
    Group& gr = groups_[cg];
    if (!gr.throttled) return;
    gr.throttled = false;
    ctx_->note_throttle(cg, false);
    kick_idle();
  }

  // Wakes idle CPUs, one per queued task at most (deterministic: lowest first).
  void kick_idle() {
    std::size_t waiting = 0;
    for (const CgroupId c : queued_groups_) waiting += groups_[c].queue.size();
    for (int cpu = 0; cpu < ctx_->nr_cpus() && waiting > 0; cpu++) {
      if (ctx_->cpu_idle(cpu)) {
        ctx_->kick_cpu(cpu, false);
        waiting--;
      }
    }
  }

  // A task of `waker` was enqueued and its CPU is busy: preempt a CPU now if
  // core/ agrees, else arm a re-check at the earliest min_slice expiry.
  void try_preempt(CgroupId waker) {
    if (!agentcg_ || t_.features == 0) return;
    const std::uint64_t now = ctx_->now().ns();
    const agentcg_cgrp& w = groups_[waker].cg;
    if (!agentcg_has_boost(&w, now, &t_) || throttled_path(waker)) return;
    if (ctx_->pick_idle_cpu(-1) >= 0) return;  // an idle CPU will take it
    int now_cpu = -1, at_cpu = -1;
    std::uint64_t now_v = 0, at_ns = 0;
    for (int cpu = 0; cpu < ctx_->nr_cpus(); cpu++) {
      Task* curr = ctx_->cpu_curr(cpu);
      if (!curr) continue;
      const TaskCtx& vc = tasks_.at(curr->id);
      const agentcg_cgrp& v = groups_[vc.cg].cg;
      const agentcg_preempt r = agentcg_should_preempt(&w, &v, &vc.t, now, &t_);
      if (r.verdict == AGENTCG_PREEMPT_NOW) {
        // the victim ordered last (largest effective vtime) loses its CPU
        const std::uint64_t vv = agentcg_eff_vtime(&v, now, &t_);
        if (now_cpu < 0 || agentcg_before(now_v, vv)) {
          now_cpu = cpu;
          now_v = vv;
        }
      } else if (r.verdict == AGENTCG_PREEMPT_AT) {
        if (at_cpu < 0 || r.at_ns < at_ns) {
          at_cpu = cpu;
          at_ns = r.at_ns;
        }
      }
    }
    if (now_cpu >= 0) {
      ctx_->kick_cpu(now_cpu, true);
      bump(AGENTCG_EV(preemptions));
      return;
    }
    if (at_cpu >= 0) {
      auto& h = preempt_timer_.at(static_cast<std::size_t>(at_cpu));
      if (h) return;  // a re-check of that CPU is already armed
      h = ctx_->arm_timer(Time::from_ns(at_ns), cookie(kTimerPreempt, static_cast<std::uint64_t>(at_cpu)));
      bump(AGENTCG_EV(min_slice_deferrals));
    }
  }

  // min_slice expired somewhere: let the first-ordered waiting boosted group try again.
  void try_preempt_waiting() {
    const std::uint64_t now = ctx_->now().ns();
    std::optional<CgroupId> best;
    std::uint64_t best_v = 0;
    for (const CgroupId c : queued_groups_) {
      if (throttled_path(c) || !agentcg_has_boost(&groups_[c].cg, now, &t_)) continue;
      const std::uint64_t v = agentcg_eff_vtime(&groups_[c].cg, now, &t_);
      if (!best || agentcg_before(v, best_v)) {
        best = c;
        best_v = v;
      }
    }
    if (best) try_preempt(*best);
  }

  // The memory monitor and the fork-storm clock (agentcgroupd's poll loop).
  void poll() {
    const std::uint64_t now = ctx_->now().ns();
    const std::size_t n = std::min(groups_.size(), ctx_->nr_cgroups());
    for (std::size_t i = 0; i < n; i++) {
      const auto cg = static_cast<CgroupId>(i);
      Group& gr = groups_[i];
      std::uint32_t ev = 0;
      if (t_.features & AGENTCG_F_MEM_PENALTY) {
        // memory.events.local: own count minus the children's (see header)
        std::uint64_t high = ctx_->memory_events_high(cg);
        for (const CgroupId ch : ctx_->cgroup_children(cg)) {
          const std::uint64_t h = ctx_->memory_events_high(ch);
          high = high >= h ? high - h : 0;
        }
        ev |= agentcg_mem_penalty_update(&gr.mem, high, now, &t_);
        gr.cg.mem_penalty = gr.mem.penalty;
      }
      agentcg_fork_tick(&gr.cg, now, &t_);
      sync_weight(cg);
      bump(ev);
    }
  }

  agentcg_tunables t_;
  bool agentcg_;
  SchedContext* ctx_ = nullptr;
  agentcg_global g_{};
  std::vector<Group> groups_;
  std::vector<TaskCtx> tasks_;
  std::set<CgroupId> queued_groups_;
  std::vector<std::uint64_t> preempt_timer_;  // per CPU: armed min_slice re-check
};

}  // namespace

std::unique_ptr<SchedClass> make_flatcg_class(const agentcg_tunables& tunables) {
  return std::make_unique<ScxClass>(tunables, false);
}

std::unique_ptr<SchedClass> make_agentcg_class(const agentcg_tunables& tunables) {
  return std::make_unique<ScxClass>(tunables, true);
}

std::unique_ptr<SchedClass> make_scx_class(const std::string& policy,
                                           const agentcg_tunables& tunables) {
  if (policy == "flatcg") return make_flatcg_class(tunables);
  if (policy == "agentcg") return make_agentcg_class(tunables);
  return nullptr;
}

}  // namespace agentcg::sim
