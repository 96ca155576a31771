// SPDX-License-Identifier: GPL-2.0-only
// flatcg / agentcg as a SchedClass: each callback gathers inputs, calls
// core/ (agentcg/eevdf.h, flatcg.h, agentcg.h, bandwidth.h) and applies the
// decision, like bpf/agentcg.bpf.c, with the same queues:
//  - ONE ordered queue of requests (an indexed binary min-heap keyed by
//    (virtual deadline, task id), each task holding its heap position: the
//    BPF program's shared vtime DSQ); dispatch takes its first element:
//    O(log n) in queued tasks, no scan of groups. The heap's array and the
//    park lists (intrusive, threaded through the tasks' contexts) reuse
//    their storage, so the event path allocates nothing once the arrays
//    reached the run's peak.
//  - each request gets its start tag and deadline from
//    agentcg_eevdf_request() at enqueue (the group's tag chain, lag bound,
//    the features' credit and slice); V follows the start of the picked
//    request (agentcg_eevdf_picked); a group going idle saves its lag and
//    is placed at V - lag when it comes back.
//  - retag_stale: dispatch re-tags a head whose group ran past its share
//    since it was queued (eevdf.h agentcg_eevdf_stale), at most
//    AGENTCG_RETAG_MAX per dispatch, after parking throttled heads (BPF:
//    ops.dispatch, with scx_bpf_dsq_move_vtime).
//  - every request is placed by agentcg_place_task() (place.h), as in BPF:
//    a wakeup (and fork) is checked (the base rule of eevdf.h) against the
//    task running on the CPU select_cpu chose (an idle one, else the
//    task's previous CPU, as the kernel's scx_bpf_select_cpu_dfl() and
//    fair.c do): NOW kicks it, AT arms that CPU's re-check timer (the BPF
//    per-CPU timer). (Until 2026-11-27 both sides sent a contended wakeup
//    to the CPU running the latest deadline: neutral here, a remote wakeup
//    per move live, where it doubled the io trace's wakeup p50.) BPF inserts LOCAL
//    verdicts into that CPU's local DSQ; this model has one queue, where
//    such a request is the head (see place()).
//  - cpu.max at every level: one pool and one local runtime per limited
//    cgroup (as in BPF), charged on every stop, acquired at dispatch, a
//    period timer per cgroup that returns unused local runtime, refills
//    (cpu.max.burst via bandwidth.h) and puts parked tasks back. A request
//    whose chain has a throttled level waits in that level's park queue;
//    dispatch looks for throttled requests only while some cgroup is
//    throttled (nr_throttled_now_).
//  - the ancestor chain is built on the stack from cached parent ids (no
//    heap vector, no virtual call per level).
//  - the memory monitor: every kScxPollInterval the class reads each
//    cgroup's memory.events "high" count and calls
//    agentcg_mem_penalty_update(), the function agentcgroupd calls. The
//    model's counts are hierarchical (like memory.events); the class uses
//    the local part (own count minus the children's, memory.events.local).
//
// Invariants: a task is counted runnable in its cgroup (nr_runnable) from
// enqueue until stopping(runnable=false), dequeue or exit; it is in the
// queue or a park queue only between enqueue and dispatch. The queue's
// order is total ((deadline, id), ids unique), so the heap pops exactly what
// an ordered set would: runs are deterministic.
//
// Limitations: no per-CPU queues; select_cpu only prefers an idle CPU;
// cpu.max.burst is not in the SchedClass interface (bandwidth.h has it and
// its unit tests cover it).
#include "sim/cpu/scx_class.h"

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

#include "agentcg/agentcg.h"
#include "agentcg/bandwidth.h"
#include "agentcg/counters.h"
#include "agentcg/eevdf.h"
#include "agentcg/flatcg.h"
#include "agentcg/place.h"

namespace agentcg::sim {

namespace {

// Timer cookies: kind in the high 32 bits, argument (cgroup or CPU) below.
enum TimerKind : std::uint64_t { kTimerPoll = 1, kTimerBandwidth = 2, kTimerPreempt = 3 };
constexpr std::uint64_t cookie(TimerKind k, std::uint64_t arg) { return (static_cast<std::uint64_t>(k) << 32) | arg; }
constexpr std::uint64_t kMinRunSliceNs = 100000;  // BPF: the shortest slice it grants

class ScxClass final : public SchedClass {
 public:
  ScxClass(const agentcg_tunables& t, bool agentcg) : t_(t), agentcg_(agentcg) {
    if (!agentcg_) t_.features = 0;
  }

  std::string_view name() const override { return agentcg_ ? "agentcg" : "flatcg"; }
  bool sched_ext() const override { return true; }
  bool has_step_detector() const override { return true; }

  void init(SchedContext& ctx) override {
    ctx_ = &ctx;
    g_ = agentcg_global{};
    g_.nr_cpus = static_cast<std::uint32_t>(ctx.nr_cpus());
    curr_.assign(static_cast<std::size_t>(ctx.nr_cpus()), CpuCurr{});
    if (t_.features & AGENTCG_F_MEM_PENALTY)
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
    // storm_reserve: another group's wakeup or fork keeps a CPU free of storms
    if ((enq_flags & (kEnqWakeup | kEnqNew)) && p.cgroup != kRootCgroup && agentcg_reserve_note(&gr.cg, &g_, now, &t_))
      g_.calm_wake_ns = now;
    tc.t.weight = p.weight ? p.weight : AGENTCG_WEIGHT_DFL;
    tc.cg = p.cgroup;
    // Strategy hook: weight_pct scales the share (as bpf/agentcg.bpf.c)
    const u32 qshare = agentcg_strategy_qshare(ctx_->strategy_of_cgroup(p.cgroup), qshare_of(p.cgroup));
    // a woken task goes at its group's virtual time, ahead of its queued
    // siblings (fair.c places a wakee by its own lag); new and requeued
    // tasks go behind them
    const u32 before = gr.cg.nr_queued++;
    tc.req = agentcg_eevdf_request(&gr.cg, &g_, qshare, tc.t.weight, (enq_flags & kEnqWakeup) ? 0 : before,
                                   now, &t_, &ev);
    bump(ev);
    const CgroupId thr = nr_throttled_now_ ? throttled_level(p.cgroup) : kNoGroup;
    if (thr != kNoGroup) {
      gr.cg.nr_queued--;
      park(thr, p.id, tc);
      return;
    }
    place(p, tc, (enq_flags & (kEnqWakeup | kEnqNew)) != 0, now);
  }

  void dequeue(Task& p) override {
    TaskCtx& tc = task_ctx(p);
    unqueue_task(p.id, tc);
    if (tc.counted) make_quiescent(tc.cg, tc, ctx_->now().ns());
  }

  Dispatch dispatch(int cpu, Task*) override {
    const std::uint64_t now = ctx_->now().ns();
    int retags = 0;
    // a task placed in this CPU's local queue (place(): LOCAL, LOCAL_PREEMPT)
    // runs first, as from BPF's local DSQ, unless another CPU took it
    std::uint32_t local = curr_.at(static_cast<std::size_t>(cpu)).local;
    curr_.at(static_cast<std::size_t>(cpu)).local = kNoTask;
    if (local != kNoTask && !tasks_[local].queued) local = kNoTask;
    // storm_reserve: the CPUs other than this one that run a storm's request
    const u32 others = agentcg_storm_others(&g_, curr_.at(static_cast<std::size_t>(cpu)).storm ? 1 : 0);
    bool reserved = false;
    while (!heap_.empty()) {
      std::uint32_t id = local != kNoTask ? local : heap_.front().id;
      bool placed = local != kNoTask;
      if (!agentcg_storm_may_take(&groups_[tasks_[id].cg].cg, &g_, others, now, &t_)) {
        // a storm's request may not take the last CPU free of storms: the
        // first other group's request in queue order, else idle (BPF:
        // dispatch_reserving)
        if (!reserved) bump(AGENTCG_EV(storm_reserves));
        reserved = true;
        placed = false;
        local = kNoTask;
        const QEntry* e = first_may_take(others, now);
        if (e == nullptr) return {};
        id = e->id;
      }
      TaskCtx& tc = tasks_[id];
      if (placed) {
        local = kNoTask;  // placed after enqueue's throttle check, with its final tags
      } else if (nr_throttled_now_) {
        const CgroupId thr = throttled_level(tc.cg);
        if (thr != kNoGroup) {
          unqueue_task(id, tc);
          park(thr, id, tc);
          continue;
        }
      }
      if (id == heap_.front().id && retags < AGENTCG_RETAG_MAX && agentcg_feat(&t_, AGENTCG_F_RETAG_STALE) &&
          agentcg_eevdf_stale(&tc.req, &groups_[tc.cg].cg, &g_)) {
        ++retags;  // a stale head: tag it again from its group's service, and look again
        heap_erase(tc);
        std::uint32_t ev = 0;
        const u32 qshare = agentcg_strategy_qshare(ctx_->strategy_of_cgroup(tc.cg), qshare_of(tc.cg));
        tc.req = agentcg_eevdf_request(&groups_[tc.cg].cg, &g_, qshare, tc.t.weight, 0, now, &t_, &ev);
        bump(ev);
        queue_task(id, tc);
        continue;
      }
      unqueue_task(id, tc);
      Group& gr = groups_[tc.cg];
      Task& t = ctx_->task(id);
      agentcg_eevdf_picked(&g_, &tc.req);
      agentcg_task_picked(&gr.cg, &tc.t);
      tc.t.boosted = agentcg_has_boost(&gr.cg, now, &t_) ? 1 : 0;
      // cpu.max of every limited level (BPF: ops.running)
      // Strategy hook: the task's slice (as bpf/agentcg.bpf.c's dispatch)
      std::uint64_t slice = agentcg_strategy_slice_ns(ctx_->strategy_of_task(t), tc.req.slice_ns);
      bool throttled = false;
      const std::uint64_t left = nr_bw_limited_ ? bw_acquire_chain(tc.cg, slice, now, &throttled) : slice;
      if (left < slice) {
        slice = left;
        if (!throttled && agentcg_feat(&t_, AGENTCG_F_MIN_SLICE))
          slice = std::max<std::uint64_t>(slice, std::uint64_t{t_.min_slice_us} * 1000);
        slice = std::max<std::uint64_t>(slice, kMinRunSliceNs);
      }
      CpuCurr& cc = curr_.at(static_cast<std::size_t>(cpu));
      cc.deadline = tc.req.deadline;
      cc.req = tc.req;
      cc.cg = tc.cg;
      cc.started_ns = now;
      cc.slice_ns = slice;
      cc.ours = true;
      cc.storm = agentcg_storm_counts(&gr.cg, &t_);
      if (cc.storm) ++g_.storm_cpus;
      return {&t, Time::from_ns(slice)};
    }
    return {};
  }

  void running(Task& p, int cpu) override {
    const std::uint64_t started = p.started_at.ns();
    task_ctx(p).t.started_at_ns = started;
    // protection counts from when it runs, after the context switch (BPF: ops.running)
    CpuCurr& cc = curr_.at(static_cast<std::size_t>(cpu));
    cc.started_ns = started;
    cc.group_since_ns = agentcg_group_run_since(cc.group_since_ns, cc.stopped_ns,
                                                cc.last_cg == cc.cg, started, &t_);
    cc.kicked = false;
  }

  void stopping(Task& p, int cpu, bool runnable) override {
    const std::uint64_t now = ctx_->now().ns();
    TaskCtx& tc = task_ctx(p);
    CpuCurr& cc = curr_.at(static_cast<std::size_t>(cpu));
    cc.ours = false;
    cc.kicked = false;
    if (cc.storm) --g_.storm_cpus;
    cc.storm = false;
    cc.stopped_ns = now;
    cc.last_cg = tc.cg;
    const std::uint64_t ran = (ctx_->now() - p.started_at).ns();
    Group& gr = groups_[tc.cg];
    if (agentcg_fork_tick(&gr.cg, now, &t_)) sync_weight(tc.cg);
    // Strategy hook: weight_pct scales the share, and V advances by the
    // same scaled charge so that it keeps pace with the groups' cvtime
    // (as bpf/agentcg.bpf.c, which says why)
    const agentcg_strategy_action* sa = ctx_->strategy_of_cgroup(tc.cg);
    agentcg_cgrp_charge(&gr.cg, agentcg_strategy_qshare(sa, qshare_of(tc.cg)), ran);
    agentcg_eevdf_advance(&g_, agentcg_strategy_charge_ns(sa, ran));
    agentcg_task_charge(&tc.t, ran);
    tc.t.boosted = 0;
    // cpu.max: charge every limited level (none: nothing to walk, as BPF)
    for (CgroupId a = tc.cg; nr_bw_limited_ != 0; a = groups_[a].parent) {
      Group& ga = groups_[a];
      if (agentcg_bw_limited(&ga.bw)) {
        agentcg_bw_charge(&ga.bw, &ga.local, ran);
        if (ga.local <= 0 && !agentcg_bw_acquire(&ga.bw, &ga.local, AGENTCG_BW_DEFAULT_SLICE_NS, now))
          throttle(a);
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
      const std::uint32_t ev = agentcg_on_fork(&gr.cg, &g_, ctx_->now().ns(), &t_);
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
    gr.parent = cg.id == kRootCgroup ? kRootCgroup : cg.parent;
    gr.local = 0;
    agentcg_bw_init(&gr.bw, 0, 0);
    cgroup_set_bandwidth(cg.id, cg.quota_us, cg.period_us);
  }

  void cgroup_move(Task& p, CgroupId from, CgroupId to) override {
    TaskCtx& tc = task_ctx(p);
    const bool was_queued = tc.queued || tc.parked;
    const bool was_counted = tc.counted;
    const std::uint64_t now = ctx_->now().ns();
    unqueue_task(p.id, tc);
    if (was_counted) make_quiescent(from, tc, now);
    agentcg_task_left(&groups_.at(from).cg);
    agentcg_task_joined(&groups_.at(to).cg);
    tc.cg = to;
    if (was_counted) bump(make_runnable(to, tc, now));
    if (was_queued) queue_task(p.id, tc);
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
    nr_bw_limited_ -= agentcg_bw_limited(&gr.bw) ? 1 : 0;
    agentcg_bw_init(&gr.bw, quota_us ? *quota_us * 1000 : 0, period_us * 1000);
    nr_bw_limited_ += agentcg_bw_limited(&gr.bw) ? 1 : 0;
    gr.local = 0;
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
        // unused local runtime goes back (burst may carry it); a debt stays
        if (gr.local > 0) agentcg_bw_return(&gr.bw, &gr.local);
        const std::uint64_t now = ctx_->now().ns();
        const bool was = agentcg_bw_refill(&gr.bw, now);
        for (std::uint64_t i = periods; i < gr.bw.nr_periods; i++) ctx_->note_period(arg);
        // a debt larger than the new quota keeps the level throttled (BPF too)
        const bool still = gr.local <= 0 && !agentcg_bw_acquire(&gr.bw, &gr.local, AGENTCG_BW_DEFAULT_SLICE_NS, now);
        if ((was || gr.throttled) && !still) unthrottle(arg);
        gr.bw_timer = ctx_->arm_timer(ctx_->now() + Time::from_ns(gr.bw.period_ns),
                                      cookie(kTimerBandwidth, arg));
        return;
      }
      case kTimerPreempt:
        recheck_preempt(static_cast<int>(arg));
        return;
    }
    throw std::logic_error("scx class: unknown timer cookie " + std::to_string(c));
  }

 private:
  static constexpr CgroupId kNoGroup = ~CgroupId{0};
  static constexpr std::uint32_t kNoTask = ~std::uint32_t{0};
  struct Group {
    agentcg_cgrp cg{};
    agentcg_mem_state mem{};
    std::uint64_t last_local_high = 0;
    CgroupId parent = kRootCgroup;
    agentcg_bw_pool bw{};
    s64 local = 0;  // cpu.max runtime held (one per cgroup, as in BPF)
    std::uint64_t bw_timer = 0;
    bool throttled = false;
    // requests waiting for this level's refill: a FIFO list threaded
    // through TaskCtx::park_prev/park_next (no allocation)
    std::uint32_t park_head = kNoTask, park_tail = kNoTask;
  };
  struct TaskCtx {
    agentcg_task t{};
    agentcg_req req{};
    CgroupId cg = kRootCgroup;
    std::uint64_t qkey = 0;  // deadline it is queued under
    std::uint32_t qpos = 0;  // index in heap_ while queued
    std::uint32_t park_prev = kNoTask, park_next = kNoTask;  // park list links
    bool queued = false;     // in heap_
    bool parked = false;     // in some group's park queue
    CgroupId park_cg = kRootCgroup;
    bool counted = false;    // counted in groups_[cg].cg.nr_runnable
  };
  struct CpuCurr {
    std::uint64_t deadline = 0, started_ns = 0, slice_ns = 0;
    // since when this CPU runs cg (agentcg_group_run_since), from the last
    // stop and its group (none yet: no cgroup has that id)
    std::uint64_t group_since_ns = 0, stopped_ns = 0;
    CgroupId last_cg = ~CgroupId{0};
    agentcg_req req{};   // the running request (its deadline is `deadline`)
    CgroupId cg = 0;     // and its group: for curr_deadline()
    std::uint64_t timer = 0;  // armed re-check
    bool ours = false;
    bool kicked = false;  // a preempting kick is on its way (cleared when it stops or runs)
    bool storm = false;   // it runs a storm's request, counted in agentcg_global::storm_cpus
    std::uint32_t local = kNoTask;  // a task placed in its local queue (BPF: SCX_DSQ_LOCAL)
  };

  TaskCtx& task_ctx(const Task& p) {
    if (tasks_.size() <= p.id) tasks_.resize(p.id + 1);
    return tasks_[p.id];
  }

  // root .. cg on the stack, for the hierarchy walks of core/; returns the length.
  u32 chain(CgroupId cg, agentcg_cgrp* (&out)[AGENTCG_MAX_DEPTH]) {
    agentcg_cgrp* rev[AGENTCG_MAX_DEPTH];
    u32 n = 0;
    for (CgroupId a = cg; n < AGENTCG_MAX_DEPTH; a = groups_[a].parent) {
      rev[n++] = &groups_[a].cg;
      if (a == kRootCgroup) break;
    }
    for (u32 i = 0; i < n; i++) out[i] = rev[n - 1 - i];
    return n;
  }

  u32 qshare_of(CgroupId cg) {
    // the BPF program's fast path (refresh_qshare): a leaf computed at the
    // current generation had its whole chain computed at it, so the walk
    // would return its cached qshare; no ancestor chain to build
    const agentcg_cgrp& leaf = groups_[cg].cg;
    if (leaf.hweight_gen == g_.hweight_gen && leaf.qshare && leaf.hweight) return leaf.qshare;
    agentcg_cgrp* ch[AGENTCG_MAX_DEPTH];
    const u32 n = chain(cg, ch);
    return agentcg_refresh_hweight(ch, n, &g_);
  }

  // Counts each core/ event bit set in ev, by id (only the set bits are
  // visited: most calls have none).
  void bump(std::uint32_t ev) {
    ev &= (AGENTCG_NR_COUNTERS >= 32 ? ~0u : (1u << AGENTCG_NR_COUNTERS) - 1);
    while (ev) {
      ctx_->count_id(static_cast<std::uint32_t>(__builtin_ctz(ev)));
      ev &= ev - 1;
    }
  }

  void sync_weight(CgroupId cg) {
    agentcg_cgrp* parent = cg == kRootCgroup ? nullptr : &groups_[groups_[cg].parent].cg;
    agentcg_sync_weight(&groups_[cg].cg, parent, &g_, &t_);
  }

  // The task becomes runnable in cg (ops.runnable): new-step detection +
  // boost, lag placement, and the active-set update.
  std::uint32_t make_runnable(CgroupId cg, TaskCtx& tc, std::uint64_t now) {
    Group& gr = groups_[cg];
    std::uint32_t ev = 0;
    if (gr.cg.nr_runnable == 0) {
      ev |= agentcg_on_runnable(&gr.cg, &g_, now, &t_);
      agentcg_eevdf_place(&gr.cg, &g_);
    }
    agentcg_cgrp* ch[AGENTCG_MAX_DEPTH];
    const u32 n = chain(cg, ch);
    agentcg_update_active(ch, n, &g_, true);
    tc.counted = true;
    tc.cg = cg;
    return ev;
  }

  void make_quiescent(CgroupId cg, TaskCtx& tc, std::uint64_t now) {
    agentcg_cgrp* ch[AGENTCG_MAX_DEPTH];
    const u32 n = chain(cg, ch);
    agentcg_update_active(ch, n, &g_, false);
    if (groups_[cg].cg.nr_runnable == 0) {
      agentcg_on_quiescent(&groups_[cg].cg, now);
      if (agentcg_eevdf_save_lag(&groups_[cg].cg, &g_, &t_)) bump(AGENTCG_EV(lag_clamps));
    }
    tc.counted = false;
  }

  void queue_task(std::uint32_t id, TaskCtx& tc) {
    // Strategy hook (as bpf/agentcg.bpf.c's enqueue): an earlier deadline
    // for this enqueue only.
    const std::uint64_t credit =
        agentcg_strategy_vtime_credit_ns(ctx_->strategy_of_task(ctx_->task(id)), agentcg_base_slice_ns(&t_));
    tc.qkey = tc.req.deadline > credit ? tc.req.deadline - credit : 0;
    tc.queued = true;
    heap_push(id, tc);
  }

  void park(CgroupId level, std::uint32_t id, TaskCtx& tc) {
    tc.parked = true;
    tc.park_cg = level;
    Group& gl = groups_[level];
    tc.park_prev = gl.park_tail;
    tc.park_next = kNoTask;
    if (gl.park_tail != kNoTask) tasks_[gl.park_tail].park_next = id;
    else gl.park_head = id;
    gl.park_tail = id;
    ctx_->count("parked");
  }

  void unqueue_task(std::uint32_t /*id*/, TaskCtx& tc) {
    if (tc.queued) {
      heap_erase(tc);
      tc.queued = false;
      Group& gr = groups_[tc.cg];
      if (gr.cg.nr_queued) gr.cg.nr_queued--;
    }
    if (tc.parked) {
      Group& gl = groups_[tc.park_cg];
      if (tc.park_prev != kNoTask) tasks_[tc.park_prev].park_next = tc.park_next;
      else gl.park_head = tc.park_next;
      if (tc.park_next != kNoTask) tasks_[tc.park_next].park_prev = tc.park_prev;
      else gl.park_tail = tc.park_prev;
      tc.park_prev = tc.park_next = kNoTask;
      tc.parked = false;
    }
  }

  // The highest throttled level of cg's chain, or kNoGroup.
  CgroupId throttled_level(CgroupId cg) const {
    CgroupId found = kNoGroup;
    for (CgroupId a = cg;; a = groups_[a].parent) {
      if (groups_[a].throttled) found = a;
      if (a == kRootCgroup) return found;
    }
  }

  std::uint64_t bw_acquire_chain(CgroupId cg, std::uint64_t slice, std::uint64_t now, bool* throttled) {
    for (CgroupId a = cg;; a = groups_[a].parent) {
      Group& ga = groups_[a];
      if (agentcg_bw_limited(&ga.bw)) {
        if (!agentcg_bw_acquire(&ga.bw, &ga.local, AGENTCG_BW_DEFAULT_SLICE_NS, now)) {
          throttle(a);
          *throttled = true;
        }
        slice = ga.local <= 0 ? 0 : std::min<std::uint64_t>(slice, static_cast<std::uint64_t>(ga.local));
      }
      if (a == kRootCgroup) return slice;
    }
  }

  void throttle(CgroupId cg) {
    Group& gr = groups_[cg];
    if (gr.throttled) return;
    gr.throttled = true;
    nr_throttled_now_++;
    ctx_->note_throttle(cg, true);
    bump(AGENTCG_EV(throttles));
  }

  void unthrottle(CgroupId cg) {
    Group& gr = groups_[cg];
    if (!gr.throttled) return;
    gr.throttled = false;
    nr_throttled_now_--;
    ctx_->note_throttle(cg, false);
    // the parked requests go back at their deadlines (BPF: unpark)
    while (gr.park_head != kNoTask) {
      const std::uint32_t id = gr.park_head;
      TaskCtx& tc = tasks_[id];
      gr.park_head = tc.park_next;
      if (gr.park_head != kNoTask) tasks_[gr.park_head].park_prev = kNoTask;
      else gr.park_tail = kNoTask;
      tc.park_prev = tc.park_next = kNoTask;
      tc.parked = false;
      groups_[tc.cg].cg.nr_queued++;
      queue_task(id, tc);
    }
    kick_idle();
  }

  // Wakes idle CPUs, one per queued task at most (deterministic: lowest first).
  void kick_idle() {
    std::size_t waiting = heap_.size();
    for (int cpu = 0; cpu < ctx_->nr_cpus() && waiting > 0; cpu++) {
      if (ctx_->cpu_idle(cpu)) {
        ctx_->kick_cpu(cpu, false);
        waiting--;
      }
    }
  }

  // The placement of place.h with the inputs bpf/agentcg.bpf.c's place()
  // gathers. A LOCAL verdict puts the task in the chosen CPU's local slot
  // (CpuCurr::local; it stays in the shared heap too, so another CPU may
  // take it first), which that CPU's next dispatch takes before the heap,
  // as BPF's local DSQ; LOCAL_PREEMPT also kicks the CPU. Since the heads
  // are compared at their effective keys (queued_key: a stale head as if
  // re-tagged), the local task need not be the heap's head.
  void place(Task& p, TaskCtx& tc, bool wakeup, std::uint64_t now) {
    agentcg_place_in in{};
    const int cpu = p.cpu;  // select_cpu's choice: an idle CPU, else the previous one
    queue_task(p.id, tc);
    in.key = tc.qkey;
    in.slice_ns = agentcg_strategy_slice_ns(ctx_->strategy_of_task(p), tc.req.slice_ns);
    in.now_ns = now;
    in.wakeup = wakeup ? 1 : 0;
    if (cpu < 0) return;
    in.cpu_idle = ctx_->cpu_idle(cpu) ? 1 : 0;
    const CpuCurr& cc = curr_.at(static_cast<std::size_t>(cpu));
    if (cc.ours && !in.cpu_idle) {
      in.curr_ours = 1;
      in.curr_deadline = curr_deadline(cc);
      in.curr_started_ns = protect_since(cc, tc.cg);
      in.curr_slice_ns = cc.slice_ns;
      in.curr_kicked = cc.kicked ? 1 : 0;
    }
    // the head before this request (it is queued already: skip it; if it
    // is the heap's root, the head is the smaller of the root's children)
    // (under the storm reserve, the first that may take this CPU: a storm's
    // request that may not is not ahead of this one here)
    const u32 others = agentcg_storm_others(&g_, cc.storm ? 1 : 0);
    if (const QEntry* h = agentcg_reserve_on(&g_, others, now, &t_) ? first_may_take(others, now, p.id)
                                                                     : head_except(p.id)) {
      in.has_head = 1;
      in.head_key = queued_key(*h);
    }
    // storm_reserve: a storm's request does not take the last CPU free of
    // storms (idle, or preempting another group there), nor preempt another
    // CPU: it waits in the shared queue for a CPU that runs the storm
    if (!agentcg_storm_may_take(&groups_[tc.cg].cg, &g_, others, now, &t_)) {
      bump(AGENTCG_EV(storm_reserves));
      return;
    }
    const agentcg_place r = agentcg_place_task(&in, &t_);
    // the chosen CPU does not take it: another CPU may, at once or once
    // its running request's protection ends (place.h)
    if (agentcg_place_retarget(&in, r, &t_)) {
      const agentcg_victim_scan v = scan_victims(cpu, tc.cg, in);
      if (v.now_cpu >= 0) {
        preempt_kick(v.now_cpu);
        return;
      }
      if (agentcg_victim_defer(&v, r)) arm_recheck(v.at_cpu, v.at_ns);
    }
    switch (static_cast<agentcg_place_kind>(r.kind)) {
      case AGENTCG_PLACE_SHARED:
        return;
      case AGENTCG_PLACE_LOCAL:
        curr_.at(static_cast<std::size_t>(cpu)).local = p.id;
        return;
      case AGENTCG_PLACE_LOCAL_PREEMPT:
        curr_.at(static_cast<std::size_t>(cpu)).local = p.id;
        preempt_kick(cpu);
        return;
      case AGENTCG_PLACE_SHARED_PREEMPT:
        preempt_kick(cpu);
        return;
      case AGENTCG_PLACE_SHARED_AT:
        arm_recheck(cpu, r.at_ns);
        return;
    }
  }

  // The other CPUs (at most AGENTCG_VICTIM_SCAN after `cpu`, in order)
  // against the request of `in` (place.h's agentcg_victim_consider;
  // bpf/agentcg.bpf.c's find_victim alike).
  agentcg_victim_scan scan_victims(int cpu, CgroupId cg, const agentcg_place_in& in) const {
    const int n = ctx_->nr_cpus();
    const int scan = std::min(n - 1, AGENTCG_VICTIM_SCAN);
    agentcg_victim_scan s = agentcg_victim_scan_start();
    for (int i = 1; i <= scan; ++i) {
      const int c = (cpu + i) % n;
      const CpuCurr& cc = curr_[static_cast<std::size_t>(c)];
      if (!cc.ours || cc.kicked || ctx_->cpu_idle(c)) continue;
      agentcg_victim_consider(&s, &in, c, curr_deadline(cc), protect_since(cc, cg), cc.slice_ns, &t_);
    }
    return s;
  }

  // A "not before at_ns" re-check of `cpu` (recheck_preempt), unless one
  // is armed there already.
  void arm_recheck(int cpu, std::uint64_t at_ns) {
    CpuCurr& c = curr_.at(static_cast<std::size_t>(cpu));
    if (c.timer) return;
    c.timer = ctx_->arm_timer(Time::from_ns(at_ns), cookie(kTimerPreempt, static_cast<std::uint64_t>(cpu)));
    bump(AGENTCG_EV(min_slice_deferrals));
  }

  // What a running or queued request competes at (eevdf.h
  // agentcg_eevdf_eff_deadline: a stale one as if re-tagged now).
  std::uint64_t curr_deadline(const CpuCurr& cc) const {
    return agentcg_eevdf_eff_deadline(&cc.req, &groups_[cc.cg].cg, &g_, &t_);
  }

  void preempt_kick(int cpu) {
    curr_.at(static_cast<std::size_t>(cpu)).kicked = true;
    ctx_->kick_cpu(cpu, true);
    bump(AGENTCG_EV(preemptions));
  }

  // Where cc's protection counts from against a request of group cg.
  static std::uint64_t protect_since(const CpuCurr& cc, CgroupId cg) {
    return agentcg_protect_since(cc.started_ns, cc.group_since_ns, cc.cg == cg);
  }

  // The base rule on `cpu` for a request with `deadline` of group `cg` (eevdf.h).
  void wakeup_preempt(int cpu, std::uint64_t deadline, CgroupId cg, std::uint64_t now) {
    CpuCurr& cc = curr_.at(static_cast<std::size_t>(cpu));
    if (!cc.ours) return;
    const agentcg_preempt r =
        agentcg_eevdf_preempt(deadline, curr_deadline(cc), protect_since(cc, cg), cc.slice_ns, now, &t_);
    if (r.verdict == AGENTCG_PREEMPT_NOW) {
      preempt_kick(cpu);
    } else if (r.verdict == AGENTCG_PREEMPT_AT) {
      arm_recheck(cpu, r.at_ns);
    }
  }

  // A CPU's "not before T" passed: compare the first queued request again.
  void recheck_preempt(int cpu) {
    CpuCurr& cc = curr_.at(static_cast<std::size_t>(cpu));
    cc.timer = 0;
    if (!cc.ours || heap_.empty()) return;
    wakeup_preempt(cpu, queued_key(heap_.front()), tasks_[heap_.front().id].cg, ctx_->now().ns());
  }

  // The memory monitor (agentcgroupd's poll loop).
  void poll() {
    const std::uint64_t now = ctx_->now().ns();
    const std::size_t n = std::min(groups_.size(), ctx_->nr_cgroups());
    for (std::size_t i = 0; i < n; i++) {
      const auto cg = static_cast<CgroupId>(i);
      Group& gr = groups_[i];
      // memory.events.local: own count minus the children's (see header)
      std::uint64_t high = ctx_->memory_events_high(cg);
      for (const CgroupId ch : ctx_->cgroup_children(cg)) {
        const std::uint64_t h = ctx_->memory_events_high(ch);
        high = high >= h ? high - h : 0;
      }
      const std::uint32_t ev = agentcg_mem_penalty_update(&gr.mem, high, now, &t_);
      if (gr.cg.mem_penalty != gr.mem.penalty) {
        gr.cg.mem_penalty = gr.mem.penalty;
        sync_weight(cg);
      }
      bump(ev);
    }
  }

  agentcg_tunables t_;
  bool agentcg_;
  SchedContext* ctx_ = nullptr;
  agentcg_global g_{};
  std::vector<Group> groups_;
  std::vector<TaskCtx> tasks_;
  // (deadline, task id): the shared DSQ, ordered wrap-safe like the
  // kernel's vtime DSQ (a boost credit may take a key below 0). A binary
  // min-heap; each queued task's TaskCtx::qpos is its index, so any request
  // is removed in O(log n) (dequeue, exit, cgroup move).
  struct QEntry {
    std::uint64_t key;
    std::uint32_t id;
  };
  static bool less(const QEntry& a, const QEntry& b) {
    if (a.key != b.key) return agentcg_before(a.key, b.key);
    return a.id < b.id;
  }
  void heap_set(std::size_t i, const QEntry& e) {
    heap_[i] = e;
    tasks_[e.id].qpos = static_cast<std::uint32_t>(i);
  }
  void sift_up(std::size_t i) {
    const QEntry e = heap_[i];
    while (i > 0) {
      const std::size_t parent = (i - 1) / 2;
      if (!less(e, heap_[parent])) break;
      heap_set(i, heap_[parent]);
      i = parent;
    }
    heap_set(i, e);
  }
  void sift_down(std::size_t i) {
    const QEntry e = heap_[i];
    const std::size_t n = heap_.size();
    for (;;) {
      std::size_t c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && less(heap_[c + 1], heap_[c])) c++;
      if (!less(heap_[c], e)) break;
      heap_set(i, heap_[c]);
      i = c;
    }
    heap_set(i, e);
  }
  void heap_push(std::uint32_t id, TaskCtx& tc) {
    heap_.push_back({tc.qkey, id});
    sift_up(heap_.size() - 1);
  }
  void heap_erase(const TaskCtx& tc) {
    const std::size_t i = tc.qpos;
    const QEntry last = heap_.back();
    heap_.pop_back();
    if (i == heap_.size()) return;  // it was the last slot
    heap_set(i, last);
    // the moved entry may belong above or below slot i
    if (i > 0 && less(last, heap_[(i - 1) / 2])) sift_up(i);
    else sift_down(i);
  }
  // A queued request's key, or its re-tag deadline when stale (eevdf.h
  // agentcg_eevdf_eff_deadline; bpf/agentcg.bpf.c's queued_key alike).
  std::uint64_t queued_key(const QEntry& e) const {
    const TaskCtx& tc = tasks_[e.id];
    const std::uint64_t d = agentcg_eevdf_eff_deadline(&tc.req, &groups_[tc.cg].cg, &g_, &t_);
    return d == tc.req.deadline ? e.key : d;
  }
  // The first request in queue order other than `id`'s, or null.
  const QEntry* head_except(std::uint32_t id) const {
    if (heap_.empty()) return nullptr;
    if (heap_[0].id != id) return &heap_[0];
    const QEntry* best = nullptr;
    for (std::size_t c = 1; c <= 2 && c < heap_.size(); c++)
      if (!best || less(heap_[c], *best)) best = &heap_[c];
    return best;
  }
  // storm_reserve: the first request in queue order other than `except`'s,
  // at most AGENTCG_RESERVE_SCAN looked at, that may take a CPU when
  // `others` CPUs run storms (agentcg_storm_may_take), or null
  // (bpf/agentcg.bpf.c's first_may_take walks its DSQ alike). The heap in
  // order: the least of a frontier that starts at the root and gains each
  // visited entry's children (at most one more entry per visit).
  const QEntry* first_may_take(u32 others, std::uint64_t now, std::uint32_t except = kNoTask) const {
    // at most SCAN + 1 visits (SCAN others and `except`), each adding one
    // entry net: the frontier never holds more than SCAN + 2
    std::size_t frontier[AGENTCG_RESERVE_SCAN + 2];
    std::size_t nf = 0;
    if (!heap_.empty()) frontier[nf++] = 0;
    int looked = 0;
    while (nf > 0 && looked < AGENTCG_RESERVE_SCAN) {
      std::size_t best = 0;
      for (std::size_t k = 1; k < nf; ++k)
        if (less(heap_[frontier[k]], heap_[frontier[best]])) best = k;
      const std::size_t i = frontier[best];
      frontier[best] = frontier[--nf];
      for (std::size_t c = 2 * i + 1; c <= 2 * i + 2 && c < heap_.size(); ++c) frontier[nf++] = c;
      const std::uint32_t id = heap_[i].id;
      if (id == except) continue;  // not counted: BPF places before inserting, so its walk never sees it
      ++looked;
      if (agentcg_storm_may_take(&groups_[tasks_[id].cg].cg, &g_, others, now, &t_)) return &heap_[i];
    }
    return nullptr;
  }
  std::vector<QEntry> heap_;
  std::uint32_t nr_throttled_now_ = 0;
  std::uint32_t nr_bw_limited_ = 0;  // groups with a cpu.max (BPF: nr_bw_limited)
  std::vector<CpuCurr> curr_;  // per CPU: what runs (BPF cpu_currs)
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
