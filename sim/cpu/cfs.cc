// SPDX-License-Identifier: GPL-2.0-only
// CFS and FIFO scheduling classes of the simulator (see cfs.h).
#include "sim/cpu/cfs.h"

#include <algorithm>
#include <deque>
#include <set>
#include <stdexcept>
#include <vector>

#include "agentcg/bandwidth.h"

namespace agentcg::sim {

namespace {

constexpr std::uint64_t kNice0Load = 1024;

std::uint64_t ilog2(std::uint64_t v) {
  std::uint64_t r = 0;
  while (v >>= 1) ++r;
  return r;
}

class CfsClass final : public SchedClass {
 public:
  CfsClass(const config::CfsConfig& cfg, bool eevdf) : cfg_(cfg), eevdf_(eevdf) {}
  std::string_view name() const override { return eevdf_ ? "eevdf" : "cfs"; }

  void init(SchedContext& ctx) override {
    ctx_ = &ctx;
    // sched_tunable_scaling = log: factor 1 + ilog2(min(cpus, 8)).
    const std::uint64_t factor =
        1 + ilog2(std::min<std::uint64_t>(static_cast<std::uint64_t>(ctx.nr_cpus()), 8));
    latency_ns_ = cfg_.latency_ns ? cfg_.latency_ns : 6000000 * factor;
    min_gran_ns_ = cfg_.min_granularity_ns ? cfg_.min_granularity_ns : 750000 * factor;
    wakeup_gran_ns_ = cfg_.wakeup_granularity_ns ? cfg_.wakeup_granularity_ns : 1000000 * factor;
    // EEVDF's sysctl_sched_base_slice (0.75 ms, scaled like the others); the
    // min_granularity knob sets it, as the kernel renamed that sysctl.
    base_slice_ns_ = min_gran_ns_;
    const std::size_t n = ctx.nr_cgroups();
    groups_.resize(n);
    local_.assign(n * static_cast<std::size_t>(ctx.nr_cpus()), 0);
  }

  int select_cpu(Task& p, int prev_cpu, std::uint64_t) override {
    (void)p;
    const int idle = ctx_->pick_idle_cpu(prev_cpu);
    return idle >= 0 ? idle : prev_cpu;
  }

  void enqueue(Task& p, std::uint64_t flags) override {
    Entity& e = tasks_[p.id];
    Group& g = groups_[p.cgroup];
    if (eevdf_ && (flags & (kEnqNew | kEnqWakeup))) {
      place_eevdf(e, p.cgroup, (flags & kEnqNew) != 0);
    } else if (flags & kEnqNew) {
      e.vruntime = g.min_vruntime + vslice(e.weight);
    } else if (flags & kEnqWakeup) {
      place_wakeup(e, g);
    }
    ++runnable_;
    enqueue_entity(p.cgroup, task_key(p.id));
    if (flags & (kEnqWakeup | kEnqNew)) check_preempt(p);
  }

  void dequeue(Task& p) override {
    Entity& e = tasks_[p.id];
    if (e.queued) {
      dequeue_entity(p.cgroup, task_key(p.id));
      --runnable_;
    }
  }

  Dispatch dispatch(int cpu, Task* prev) override {
    (void)prev;
    for (std::size_t attempt = 0; attempt <= groups_.size(); ++attempt) {
      CgroupId cg = kRootCgroup;
      std::uint64_t key = 0;
      for (;;) {
        Group& g = groups_[cg];
        if (g.queue.empty()) return {};
        key = eevdf_ ? pick_eevdf(g) : g.queue.begin()->second;
        if (!is_group(key)) break;
        cg = group_of(key);
      }
      Task& t = ctx_->task(task_of(key));
      // Draw bandwidth for every limited level; a level whose pool is empty
      // is throttled (its entity leaves its parent's queue) and we pick again.
      std::uint64_t slice = eevdf_ ? base_slice_ns_ : slice_ns();
      bool throttled = false;
      for (CgroupId a = t.cgroup;; a = ctx_->cgroup(a).parent) {
        Group& g = groups_[a];
        if (agentcg_bw_limited(&g.bw)) {
          s64& local = local_at(a, cpu);
          if (!agentcg_bw_acquire(&g.bw, &local, cfg_.bandwidth_slice_ns, ctx_->now().ns())) {
            throttle(a);
            throttled = true;
            break;
          }
          slice = std::min<std::uint64_t>(slice, static_cast<std::uint64_t>(local));
        }
        if (a == kRootCgroup) break;
      }
      if (throttled) continue;
      dequeue_entity(t.cgroup, key);
      --runnable_;
      for (CgroupId a = t.cgroup;; a = ctx_->cgroup(a).parent) {
        groups_[a].running++;
        if (a == kRootCgroup) break;
      }
      return {&t, Time::from_ns(slice)};
    }
    return {};
  }

  void running(Task&, int) override {}

  void stopping(Task& p, int cpu, bool runnable) override {
    const std::uint64_t ran = (ctx_->now() - p.started_at).ns();
    Entity& e = tasks_[p.id];
    e.vruntime += ran * kNice0Load / e.weight;
    if (eevdf_) {
      update_deadline(e);
      // a task going to sleep keeps its lag (V - v), clamped as
      // update_entity_lag() does, for its placement when it wakes
      if (!runnable) e.vlag = clamp_lag(avg_vruntime(groups_[p.cgroup], e.vruntime) - static_cast<double>(e.vruntime), e);
    }
    advance_min(p.cgroup, e.vruntime);
    for (CgroupId a = p.cgroup;; a = ctx_->cgroup(a).parent) {
      Group& g = groups_[a];
      g.running--;
      if (agentcg_bw_limited(&g.bw)) {
        s64& local = local_at(a, cpu);
        agentcg_bw_charge(&g.bw, &local, ran);
        agentcg_bw_return(&g.bw, &local);
      }
      if (a == kRootCgroup) break;
      // The group entity in the parent's queue advances too.
      const CgroupId parent = ctx_->cgroup(a).parent;
      const std::uint64_t key = group_key(a);
      const bool queued = g.entity.queued;
      if (queued) groups_[parent].queue.erase({g.entity.vruntime, key});
      g.entity.vruntime += ran * kNice0Load / g.entity.weight;
      if (eevdf_) update_deadline(g.entity);
      if (queued) groups_[parent].queue.insert({g.entity.vruntime, key});
      advance_min(parent, g.entity.vruntime);
    }
  }

  void init_task(Task& p, bool) override {
    if (tasks_.size() <= p.id) tasks_.resize(p.id + 1);
    tasks_[p.id] = Entity{};
    tasks_[p.id].weight = std::max<std::uint64_t>(1, p.weight * kNice0Load / 100);
  }
  void exit_task(Task& p) override { dequeue(p); }

  void cgroup_init(const CgroupInfo& cg) override {
    Group& g = groups_.at(cg.id);
    g.entity.weight = std::max<std::uint64_t>(1, cg.weight * kNice0Load / 100);
    cgroup_set_bandwidth(cg.id, cg.quota_us, cg.period_us);
  }
  void cgroup_move(Task& p, CgroupId from, CgroupId to) override {
    Entity& e = tasks_[p.id];
    const bool queued = e.queued;
    if (queued) dequeue_entity(from, task_key(p.id));
    e.vruntime = e.vruntime - std::min(e.vruntime, groups_[from].min_vruntime) + groups_[to].min_vruntime;
    p.cgroup = to;
    if (queued) enqueue_entity(to, task_key(p.id));
  }
  void cgroup_set_weight(CgroupId cg, std::uint32_t weight) override {
    Group& g = groups_.at(cg);
    const bool queued = g.entity.queued;
    const CgroupId parent = ctx_->cgroup(cg).parent;
    if (queued) dequeue_entity(parent, group_key(cg));
    g.entity.weight = std::max<std::uint64_t>(1, weight * kNice0Load / 100);
    if (queued) enqueue_entity(parent, group_key(cg));
  }
  void cgroup_set_bandwidth(CgroupId cg, std::optional<std::uint64_t> quota_us,
                            std::uint64_t period_us) override {
    Group& g = groups_.at(cg);
    if (g.timer) ctx_->cancel_timer(g.timer);
    g.timer = 0;
    agentcg_bw_init(&g.bw, quota_us ? *quota_us * 1000 : 0, period_us * 1000);
    if (quota_us) g.timer = ctx_->arm_timer(ctx_->now() + Time::from_ns(g.bw.period_ns), cg);
  }

  // The bandwidth period timer of cgroup `cookie`.
  void on_timer(std::uint64_t cookie) override {
    const auto cg = static_cast<CgroupId>(cookie);
    Group& g = groups_.at(cg);
    const std::uint64_t periods = g.bw.nr_periods;
    const bool was = agentcg_bw_refill(&g.bw, ctx_->now().ns());
    if (g.bw.nr_periods != periods) ctx_->note_period(cg);
    if (was || g.throttled) unthrottle(cg);
    g.timer = ctx_->arm_timer(ctx_->now() + Time::from_ns(g.bw.period_ns), cg);
  }

 private:
  struct Entity {
    std::uint64_t vruntime = 0;
    std::uint64_t weight = kNice0Load;
    bool queued = false;
    std::uint64_t deadline = 0;  // EEVDF: virtual deadline
    double vlag = 0;             // EEVDF: lag kept while asleep (V - vruntime)
  };
  struct Group {
    Entity entity;  // this group's entity in its parent's queue
    std::set<std::pair<std::uint64_t, std::uint64_t>> queue;  // (vruntime, key) of queued children
    std::uint64_t min_vruntime = 0;
    std::uint32_t running = 0;  // tasks of the subtree on a CPU
    bool throttled = false;
    agentcg_bw_pool bw{};
    std::uint64_t timer = 0;
  };

  static std::uint64_t task_key(std::uint32_t id) { return static_cast<std::uint64_t>(id) << 1; }
  static std::uint64_t group_key(CgroupId cg) { return (static_cast<std::uint64_t>(cg) << 1) | 1; }
  static bool is_group(std::uint64_t key) { return key & 1; }
  static std::uint32_t task_of(std::uint64_t key) { return static_cast<std::uint32_t>(key >> 1); }
  static CgroupId group_of(std::uint64_t key) { return static_cast<CgroupId>(key >> 1); }
  Entity& entity(std::uint64_t key) { return is_group(key) ? groups_[group_of(key)].entity : tasks_[task_of(key)]; }
  s64& local_at(CgroupId cg, int cpu) {
    return local_[static_cast<std::size_t>(cg) * static_cast<std::size_t>(ctx_->nr_cpus()) + static_cast<std::size_t>(cpu)];
  }

  std::uint64_t vslice(std::uint64_t weight) const { return slice_ns() * kNice0Load / weight; }
  // sched_slice() on a CPU holding runnable/ncpus tasks, without weights.
  std::uint64_t slice_ns() const {
    const std::uint64_t cpus = static_cast<std::uint64_t>(ctx_->nr_cpus());
    const std::uint64_t nr = std::max<std::uint64_t>(1, (runnable_ + cpus) / cpus);
    const std::uint64_t nr_latency = std::max<std::uint64_t>(1, latency_ns_ / min_gran_ns_);
    const std::uint64_t period = nr > nr_latency ? nr * min_gran_ns_ : latency_ns_;
    return std::max(min_gran_ns_, period / nr);
  }
  void place_wakeup(Entity& e, const Group& g) {
    const std::uint64_t floor = g.min_vruntime > latency_ns_ / 2 ? g.min_vruntime - latency_ns_ / 2 : 0;
    e.vruntime = std::max(e.vruntime, floor);
  }
  // --- EEVDF (kernels >= 6.6) -------------------------------------------
  // V: the load-weighted average vruntime of the group's queued entities
  // (the kernel's avg_vruntime() also counts the running entity; here the
  // running entities of a group on other CPUs are left out). `fallback` is
  // used when nothing is queued.
  double avg_vruntime(const Group& g, std::uint64_t fallback) {
    if (g.queue.empty()) return static_cast<double>(fallback);
    const std::uint64_t base = g.queue.begin()->first;
    double sw = 0, swv = 0;
    for (const auto& [v, key] : g.queue) {
      const double w = static_cast<double>(entity(key).weight);
      sw += w;
      swv += w * static_cast<double>(v - base);
    }
    return static_cast<double>(base) + swv / sw;
  }
  std::uint64_t eevdf_vslice(std::uint64_t weight) const { return base_slice_ns_ * kNice0Load / weight; }
  double clamp_lag(double lag, const Entity& e) const {
    // limit = calc_delta_fair(max(2 x slice, TICK_NSEC = 4 ms), se)
    const double limit = static_cast<double>(std::max<std::uint64_t>(2 * base_slice_ns_, 4000000) * kNice0Load /
                                             e.weight);
    return std::clamp(lag, -limit, limit);
  }
  // place_entity(): vruntime = V - lag (0 for a new task), deadline one
  // virtual slice later, half a slice for a new task (PLACE_DEADLINE_INITIAL).
  void place_eevdf(Entity& e, CgroupId cg, bool is_new) {
    const double v = avg_vruntime(groups_[cg], groups_[cg].min_vruntime) - (is_new ? 0.0 : e.vlag);
    e.vruntime = v > 0 ? static_cast<std::uint64_t>(v) : 0;
    e.vlag = 0;
    e.deadline = e.vruntime + (is_new ? eevdf_vslice(e.weight) / 2 : eevdf_vslice(e.weight));
  }
  // update_deadline(): a new virtual slice once the entity reached its deadline.
  void update_deadline(Entity& e) {
    if (static_cast<std::int64_t>(e.vruntime - e.deadline) >= 0) e.deadline = e.vruntime + eevdf_vslice(e.weight);
  }
  // pick_eevdf(): among the eligible entities (vruntime <= V) the earliest
  // deadline. The queue is ordered by vruntime, so the eligible ones are a
  // prefix; its first entity is always eligible.
  std::uint64_t pick_eevdf(const Group& g) {
    const double avg = avg_vruntime(g, 0);
    std::uint64_t best = g.queue.begin()->second;
    std::uint64_t best_d = entity(best).deadline;
    for (const auto& [v, key] : g.queue) {
      if (static_cast<double>(v) > avg) break;
      const std::uint64_t d = entity(key).deadline;
      if (static_cast<std::int64_t>(d - best_d) < 0) {
        best = key;
        best_d = d;
      }
    }
    return best;
  }

  void advance_min(CgroupId cg, std::uint64_t v) {
    Group& g = groups_[cg];
    const std::uint64_t m = g.queue.empty() ? v : std::min(v, g.queue.begin()->first);
    g.min_vruntime = std::max(g.min_vruntime, m);
  }

  void enqueue_entity(CgroupId cg, std::uint64_t key) {
    Entity& e = entity(key);
    Group& g = groups_[cg];
    const bool was_empty = g.queue.empty();
    g.queue.insert({e.vruntime, key});
    e.queued = true;
    advance_min(cg, e.vruntime);
    if (was_empty && cg != kRootCgroup && !g.throttled && !g.entity.queued) {
      const CgroupId parent = ctx_->cgroup(cg).parent;
      // A group coming back from idle is placed like a waking entity; one
      // whose tasks are still running elsewhere keeps its vruntime.
      if (g.running == 0) place_group(g.entity, parent);
      enqueue_entity(parent, group_key(cg));
    }
  }

  void place_group(Entity& e, CgroupId parent) {
    if (eevdf_) place_eevdf(e, parent, false);
    else place_wakeup(e, groups_[parent]);
  }

  void dequeue_entity(CgroupId cg, std::uint64_t key) {
    Entity& e = entity(key);
    Group& g = groups_[cg];
    g.queue.erase({e.vruntime, key});
    e.queued = false;
    if (g.queue.empty() && cg != kRootCgroup && g.entity.queued) {
      dequeue_entity(ctx_->cgroup(cg).parent, group_key(cg));
    }
  }

  void throttle(CgroupId cg) {
    Group& g = groups_[cg];
    if (g.throttled) return;
    g.throttled = true;
    ctx_->note_throttle(cg, true);
    if (g.entity.queued) dequeue_entity(ctx_->cgroup(cg).parent, group_key(cg));
  }

  void unthrottle(CgroupId cg) {
    Group& g = groups_[cg];
    if (!g.throttled) return;
    g.throttled = false;
    ctx_->note_throttle(cg, false);
    if (!g.queue.empty() && !g.entity.queued && cg != kRootCgroup) {
      const CgroupId parent = ctx_->cgroup(cg).parent;
      if (g.running == 0) place_group(g.entity, parent);
      enqueue_entity(parent, group_key(cg));
    }
    for (int cpu = 0; cpu < ctx_->nr_cpus(); ++cpu)
      if (ctx_->cpu_idle(cpu)) ctx_->kick_cpu(cpu, false);
  }

  // check_preempt_wakeup: compare at the level where both entities meet.
  void check_preempt(Task& p) {
    const int cpu = p.cpu;
    if (cpu < 0 || ctx_->cpu_idle(cpu)) return;
    Task* curr = ctx_->cpu_curr(cpu);
    if (!curr || curr == &p) return;
    // Paths from each task's entity to the root: (queue cgroup, entity key).
    auto path = [&](Task& t) {
      std::vector<std::pair<CgroupId, std::uint64_t>> v;
      v.push_back({t.cgroup, task_key(t.id)});
      for (CgroupId c = t.cgroup; c != kRootCgroup; c = ctx_->cgroup(c).parent)
        v.push_back({ctx_->cgroup(c).parent, group_key(c)});
      return v;
    };
    const auto pw = path(p), pc = path(*curr);
    // From the root level down, skip the entities both tasks are inside; the
    // first differing pair shares a queue.
    std::size_t i = pw.size(), j = pc.size();
    while (i > 0 && j > 0 && pw[i - 1].second == pc[j - 1].second) {
      --i;
      --j;
    }
    if (i == 0 || j == 0) return;
    const Entity& se = entity(pw[i - 1].second);
    const Entity& cse = entity(pc[j - 1].second);
    // curr's entity has not been charged for its current run yet.
    const std::uint64_t ran = (ctx_->now() - curr->started_at).ns();
    const std::uint64_t vcurr = cse.vruntime + ran * kNice0Load / cse.weight;
    if (eevdf_) {
      // check_preempt_wakeup_fair(): preempt when the woken entity is the
      // one pick_eevdf() would take over curr: eligible, earlier deadline
      const double avg = avg_vruntime(groups_[pw[i - 1].first], se.vruntime);
      std::uint64_t dcurr = cse.deadline;
      if (static_cast<std::int64_t>(vcurr - dcurr) >= 0) dcurr = vcurr + eevdf_vslice(cse.weight);
      if (static_cast<double>(se.vruntime) <= avg && static_cast<std::int64_t>(se.deadline - dcurr) < 0)
        ctx_->kick_cpu(cpu, true);
      return;
    }
    const std::uint64_t gran = wakeup_gran_ns_ * kNice0Load / se.weight;
    if (vcurr > se.vruntime && vcurr - se.vruntime > gran) ctx_->kick_cpu(cpu, true);
  }

  config::CfsConfig cfg_;
  bool eevdf_ = false;
  SchedContext* ctx_ = nullptr;
  std::uint64_t latency_ns_ = 0, min_gran_ns_ = 0, wakeup_gran_ns_ = 0, base_slice_ns_ = 0;
  std::vector<Entity> tasks_;
  std::vector<Group> groups_;
  std::vector<s64> local_;  // local bandwidth runtime per (cgroup, cpu)
  std::uint64_t runnable_ = 0;  // queued tasks
};

class FifoClass final : public SchedClass {
 public:
  std::string_view name() const override { return "fifo"; }
  void init(SchedContext& ctx) override { ctx_ = &ctx; }
  int select_cpu(Task&, int prev_cpu, std::uint64_t) override {
    const int idle = ctx_->pick_idle_cpu(prev_cpu);
    return idle >= 0 ? idle : prev_cpu;
  }
  void enqueue(Task& p, std::uint64_t) override { queue_.push_back(&p); }
  void dequeue(Task& p) override {
    const auto it = std::find(queue_.begin(), queue_.end(), &p);
    if (it != queue_.end()) queue_.erase(it);
  }
  Dispatch dispatch(int, Task*) override {
    if (queue_.empty()) return {};
    Task* t = queue_.front();
    queue_.pop_front();
    return {t, Time::from_ms(20)};
  }
  void running(Task&, int) override {}
  void stopping(Task&, int, bool) override {}
  void init_task(Task&, bool) override {}
  void exit_task(Task& p) override { dequeue(p); }
  void cgroup_init(const CgroupInfo&) override {}
  void cgroup_move(Task& p, CgroupId, CgroupId to) override { p.cgroup = to; }
  void cgroup_set_weight(CgroupId, std::uint32_t) override {}
  void cgroup_set_bandwidth(CgroupId, std::optional<std::uint64_t>, std::uint64_t) override {}

 private:
  SchedContext* ctx_ = nullptr;
  std::deque<Task*> queue_;
};

}  // namespace

std::unique_ptr<SchedClass> make_cfs_class(const config::CfsConfig& cfg) {
  return std::make_unique<CfsClass>(cfg, false);
}
std::unique_ptr<SchedClass> make_eevdf_class(const config::CfsConfig& cfg) {
  return std::make_unique<CfsClass>(cfg, true);
}
std::unique_ptr<SchedClass> make_fifo_class() { return std::make_unique<FifoClass>(); }

}  // namespace agentcg::sim
