// SPDX-License-Identifier: GPL-2.0-only
// CFS and FIFO scheduling classes of the simulator (see cfs.h).
#include "sim/cpu/cfs.h"

#include <algorithm>
#include <cstdint>
#include <deque>
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

// 128-bit sums of weight x vruntime offsets: no overflow at any queue length.
__extension__ typedef __int128 i128;

constexpr std::uint64_t kNil = UINT64_MAX;  // no tree node

// splitmix64: the treap's node priorities, a fixed function of the entity
// key so that runs stay deterministic.
std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
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
    // A task still on the run queue (preempted, its slice ended) keeps its
    // vruntime; one that was off it (new, woken) is placed.
    if (!e.on_rq) {
      const bool is_new = (flags & kEnqNew) != 0;
      if (eevdf_) place_eevdf(e, p.cgroup, is_new);
      else if (is_new) e.vruntime = g.min_vruntime + vslice(e.weight);
      else place_wakeup(e, g);
      account_enqueue(p.cgroup, task_key(p.id));
    }
    ++runnable_;
    tree_insert(p.cgroup, task_key(p.id));
    if (flags & (kEnqWakeup | kEnqNew)) check_preempt(p);
  }

  void dequeue(Task& p) override {
    Entity& e = tasks_[p.id];
    const std::uint64_t key = task_key(p.id);
    if (e.in_tree) {
      tree_erase(p.cgroup, key);
      --runnable_;
    }
    if (e.on_rq) leave_rq(p.cgroup, key);
  }

  Dispatch dispatch(int cpu, Task* prev) override {
    (void)prev;
    for (std::size_t attempt = 0; attempt <= groups_.size(); ++attempt) {
      CgroupId cg = kRootCgroup;
      std::uint64_t key = 0;
      for (;;) {
        Group& g = groups_[cg];
        if (g.root == kNil) return {};
        key = eevdf_ ? pick_eevdf(g) : leftmost(g);
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
      // The task leaves the tree but stays on the run queue (the kernel's
      // curr): it still counts in V, and so does each group entity above it.
      tree_erase(t.cgroup, key);
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
    set_vruntime(p.cgroup, e, e.vruntime + ran * kNice0Load / e.weight);
    if (eevdf_) update_deadline(e);
    advance_min(p.cgroup, e.vruntime);
    for (CgroupId a = p.cgroup;; a = ctx_->cgroup(a).parent) {
      Group& g = groups_[a];
      if (g.running) g.running--;
      if (agentcg_bw_limited(&g.bw)) {
        s64& local = local_at(a, cpu);
        agentcg_bw_charge(&g.bw, &local, ran);
        agentcg_bw_return(&g.bw, &local);
        // Runtime handed back while the group is throttled is handed on
        // at once (the kernel's slack timer, distribute_cfs_runtime());
        // waiting for the refill lost it: a 25 % quota delivered 23.25 %.
        if (g.throttled && g.bw.runtime_ns > 0) unthrottle(a);
      }
      if (a == kRootCgroup) break;
      // The group entity in the parent's queue advances too (its place in
      // the parent's tree and its term in the parent's V follow).
      const CgroupId parent = ctx_->cgroup(a).parent;
      const std::uint64_t key = group_key(a);
      Group& pg = groups_[parent];
      const bool in_tree = g.entity.in_tree;
      if (in_tree) pg.root = treap_erase(pg.root, key);
      set_vruntime(parent, g.entity, g.entity.vruntime + ran * kNice0Load / g.entity.weight);
      if (eevdf_) update_deadline(g.entity);
      if (in_tree) pg.root = treap_insert(pg.root, key);
      advance_min(parent, g.entity.vruntime);
    }
    // A task going to sleep leaves the run queue (and keeps its lag); each
    // group left without runnable entities leaves its parent's queue.
    if (!runnable) leave_rq(p.cgroup, task_key(p.id));
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
    const std::uint64_t key = task_key(p.id);
    const bool in_tree = e.in_tree, on_rq = e.on_rq;
    if (in_tree) tree_erase(from, key);
    if (on_rq) account_dequeue(from, key);
    e.vruntime = e.vruntime - std::min(e.vruntime, groups_[from].min_vruntime) + groups_[to].min_vruntime;
    p.cgroup = to;
    if (on_rq) account_enqueue(to, key);
    if (in_tree) tree_insert(to, key);
  }
  void cgroup_set_weight(CgroupId cg, std::uint32_t weight) override {
    Group& g = groups_.at(cg);
    Entity& ge = g.entity;
    const std::uint64_t w = std::max<std::uint64_t>(1, weight * kNice0Load / 100);
    if (cg == kRootCgroup) {
      ge.weight = w;
      return;
    }
    Group& pg = groups_[ctx_->cgroup(cg).parent];
    const std::uint64_t key = group_key(cg);
    if (ge.in_tree) pg.root = treap_erase(pg.root, key);
    if (ge.on_rq) avg_sub(pg, ge);
    ge.weight = w;
    if (ge.on_rq) avg_add(pg, ge);
    if (ge.in_tree) pg.root = treap_insert(pg.root, key);
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
  // One schedulable entity (a task, or a group in its parent's queue). It is
  // "on the run queue" (on_rq, counted in the queue's V) while it or, for a
  // group, anything below it is runnable or running; "in the tree"
  // (pickable) while it is queued and not running. The tree fields make
  // the entity its own node of the queue's treap (intrusive, like the
  // kernel's rb_node in sched_entity).
  struct Entity {
    std::uint64_t vruntime = 0;
    std::uint64_t weight = kNice0Load;
    std::uint64_t deadline = 0;  // EEVDF: virtual deadline
    std::int64_t vlag = 0;       // EEVDF: lag kept while off the run queue (V - vruntime)
    bool on_rq = false;
    bool in_tree = false;
    std::uint64_t left = kNil, right = kNil;  // treap children (entity keys)
    std::uint64_t min_dl = 0, min_dl_key = kNil;  // earliest deadline in this subtree
  };
  struct Group {
    Entity entity;  // this group's entity in its parent's queue
    // Queued (pickable) child entities: a treap ordered by (vruntime, key),
    // each node augmented with its subtree's earliest deadline, so that
    // EEVDF's pick is one descent (O(log n)).
    std::uint64_t root = kNil;
    // The kernel's running sums for V over the on_rq children (queued and
    // running): V = avg_base + avg_sum / avg_load with
    // avg_sum = sum w x (v - avg_base), avg_load = sum w. O(1) per change.
    std::uint64_t avg_base = 0;
    i128 avg_sum = 0;
    std::uint64_t avg_load = 0;
    std::uint32_t nr_on_rq = 0;  // on_rq child entities
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

  // --- the treap -----------------------------------------------------------
  bool node_less(std::uint64_t a, std::uint64_t b) {
    const std::uint64_t va = entity(a).vruntime, vb = entity(b).vruntime;
    return va < vb || (va == vb && a < b);
  }
  static bool dl_before(std::uint64_t da, std::uint64_t ka, std::uint64_t db, std::uint64_t kb) {
    const auto d = static_cast<std::int64_t>(da - db);
    return d < 0 || (d == 0 && ka < kb);
  }
  void pull(std::uint64_t n) {
    Entity& x = entity(n);
    x.min_dl = x.deadline;
    x.min_dl_key = n;
    for (const std::uint64_t c : {x.left, x.right}) {
      if (c == kNil) continue;
      const Entity& y = entity(c);
      if (dl_before(y.min_dl, y.min_dl_key, x.min_dl, x.min_dl_key)) {
        x.min_dl = y.min_dl;
        x.min_dl_key = y.min_dl_key;
      }
    }
  }
  // Splits t into the nodes ordered before `key` (l) and after it (r).
  void split(std::uint64_t t, std::uint64_t key, std::uint64_t& l, std::uint64_t& r) {
    if (t == kNil) {
      l = r = kNil;
      return;
    }
    Entity& x = entity(t);
    if (node_less(t, key)) {
      split(x.right, key, x.right, r);
      l = t;
    } else {
      split(x.left, key, l, x.left);
      r = t;
    }
    pull(t);
  }
  std::uint64_t merge(std::uint64_t a, std::uint64_t b) {
    if (a == kNil) return b;
    if (b == kNil) return a;
    if (mix64(a) > mix64(b)) {
      entity(a).right = merge(entity(a).right, b);
      pull(a);
      return a;
    }
    entity(b).left = merge(a, entity(b).left);
    pull(b);
    return b;
  }
  std::uint64_t treap_insert(std::uint64_t t, std::uint64_t key) {
    if (t == kNil || mix64(key) > mix64(t)) {
      Entity& k = entity(key);
      split(t, key, k.left, k.right);
      pull(key);
      return key;
    }
    Entity& x = entity(t);
    if (node_less(key, t)) x.left = treap_insert(x.left, key);
    else x.right = treap_insert(x.right, key);
    pull(t);
    return t;
  }
  std::uint64_t treap_erase(std::uint64_t t, std::uint64_t key) {
    if (t == kNil) throw std::logic_error("cfs: erase of an entity not in its queue");
    Entity& x = entity(t);
    if (t == key) {
      const std::uint64_t m = merge(x.left, x.right);
      x.left = x.right = kNil;
      return m;
    }
    if (node_less(key, t)) x.left = treap_erase(x.left, key);
    else x.right = treap_erase(x.right, key);
    pull(t);
    return t;
  }
  std::uint64_t leftmost(const Group& g) {
    std::uint64_t n = g.root;
    while (n != kNil && entity(n).left != kNil) n = entity(n).left;
    return n;
  }

  // --- V: the kernel's running sums (avg_vruntime) -------------------------
  void avg_add(Group& g, const Entity& e) {
    if (g.avg_load == 0) {
      g.avg_base = e.vruntime;
      g.avg_sum = 0;
    }
    g.avg_sum += static_cast<i128>(static_cast<std::int64_t>(e.vruntime - g.avg_base)) * e.weight;
    g.avg_load += e.weight;
  }
  void avg_sub(Group& g, const Entity& e) {
    g.avg_sum -= static_cast<i128>(static_cast<std::int64_t>(e.vruntime - g.avg_base)) * e.weight;
    g.avg_load -= std::min(g.avg_load, e.weight);
    if (g.avg_load == 0) g.avg_sum = 0;
  }
  // V of the queue (floor of the weighted average); `fallback` when empty.
  std::uint64_t avg_vruntime(const Group& g, std::uint64_t fallback) const {
    if (g.avg_load == 0) return fallback;
    i128 q = g.avg_sum / static_cast<i128>(g.avg_load);
    if (g.avg_sum < 0 && q * static_cast<i128>(g.avg_load) != g.avg_sum) --q;  // floor
    return g.avg_base + static_cast<std::uint64_t>(static_cast<std::int64_t>(q));
  }
  // vruntime_eligible(): v <= V without the division.
  bool eligible(const Group& g, std::uint64_t v) const {
    if (g.avg_load == 0) return true;
    return static_cast<i128>(static_cast<std::int64_t>(v - g.avg_base)) * g.avg_load <= g.avg_sum;
  }
  // Moves an entity's vruntime, keeping the queue's sums right.
  void set_vruntime(CgroupId cg, Entity& e, std::uint64_t v) {
    if (e.on_rq) avg_sub(groups_[cg], e);
    e.vruntime = v;
    if (e.on_rq) avg_add(groups_[cg], e);
  }

  // --- on_rq (V) and tree (pick) membership, propagated up the hierarchy ----
  void account_enqueue(CgroupId cg, std::uint64_t key) {
    Group& g = groups_[cg];
    Entity& e = entity(key);
    avg_add(g, e);
    e.on_rq = true;
    if (++g.nr_on_rq == 1 && cg != kRootCgroup && !g.throttled && !g.entity.on_rq) {
      const CgroupId parent = ctx_->cgroup(cg).parent;
      place_group(g.entity, parent);
      account_enqueue(parent, group_key(cg));
    }
  }
  void account_dequeue(CgroupId cg, std::uint64_t key) {
    Group& g = groups_[cg];
    Entity& e = entity(key);
    avg_sub(g, e);
    e.on_rq = false;
    if (g.nr_on_rq) g.nr_on_rq--;
    if (g.nr_on_rq == 0 && cg != kRootCgroup && g.entity.on_rq) leave_rq(ctx_->cgroup(cg).parent, group_key(cg));
  }
  // An entity leaves cg's run queue: EEVDF keeps its lag (update_entity_lag(),
  // for tasks and group entities alike) for its next placement.
  void leave_rq(CgroupId cg, std::uint64_t key) {
    Entity& e = entity(key);
    if (eevdf_) {
      const std::uint64_t v = avg_vruntime(groups_[cg], e.vruntime);
      e.vlag = clamp_lag(static_cast<std::int64_t>(v - e.vruntime), e);
    }
    account_dequeue(cg, key);
  }
  void tree_insert(CgroupId cg, std::uint64_t key) {
    Group& g = groups_[cg];
    const bool was_empty = g.root == kNil;
    g.root = treap_insert(g.root, key);
    Entity& e = entity(key);
    e.in_tree = true;
    advance_min(cg, e.vruntime);
    if (was_empty && cg != kRootCgroup && !g.throttled && !g.entity.in_tree)
      tree_insert(ctx_->cgroup(cg).parent, group_key(cg));
  }
  void tree_erase(CgroupId cg, std::uint64_t key) {
    Group& g = groups_[cg];
    g.root = treap_erase(g.root, key);
    entity(key).in_tree = false;
    if (g.root == kNil && cg != kRootCgroup && g.entity.in_tree) tree_erase(ctx_->cgroup(cg).parent, group_key(cg));
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
  std::uint64_t eevdf_vslice(std::uint64_t weight) const { return base_slice_ns_ * kNice0Load / weight; }
  std::int64_t clamp_lag(std::int64_t lag, const Entity& e) const {
    // limit = calc_delta_fair(max(2 x slice, TICK_NSEC = 4 ms), se)
    const auto limit = static_cast<std::int64_t>(std::max<std::uint64_t>(2 * base_slice_ns_, 4000000) * kNice0Load /
                                                 e.weight);
    return std::clamp(lag, -limit, limit);
  }
  // place_entity(): vruntime = V - lag (0 for a new task), the lag inflated
  // by (W + w) / W so that adding the entity leaves it with that lag; the
  // deadline one virtual slice later, half a slice for a new task
  // (PLACE_DEADLINE_INITIAL).
  void place_eevdf(Entity& e, CgroupId cg, bool is_new) {
    const Group& g = groups_[cg];
    const std::uint64_t v = avg_vruntime(g, g.min_vruntime);
    i128 lag = is_new ? 0 : e.vlag;
    if (lag != 0 && g.avg_load > 0)
      lag = lag * static_cast<i128>(g.avg_load + e.weight) / static_cast<i128>(g.avg_load);
    e.vruntime = v - static_cast<std::uint64_t>(static_cast<std::int64_t>(lag));
    e.vlag = 0;
    e.deadline = e.vruntime + (is_new ? eevdf_vslice(e.weight) / 2 : eevdf_vslice(e.weight));
  }
  // update_deadline(): a new virtual slice once the entity reached its deadline.
  void update_deadline(Entity& e) {
    if (static_cast<std::int64_t>(e.vruntime - e.deadline) >= 0) e.deadline = e.vruntime + eevdf_vslice(e.weight);
  }
  // pick_eevdf(): among the eligible entities (vruntime <= V, a prefix of
  // the vruntime order) the earliest deadline, in one descent of the treap;
  // the leftmost when none is eligible (V can sit below every queued entity
  // while the ones behind it run).
  std::uint64_t pick_eevdf(const Group& g) {
    std::uint64_t best = kNil, best_d = 0;
    for (std::uint64_t n = g.root; n != kNil;) {
      const Entity& x = entity(n);
      if (eligible(g, x.vruntime)) {
        if (x.left != kNil) {
          const Entity& l = entity(x.left);
          if (best == kNil || dl_before(l.min_dl, l.min_dl_key, best_d, best)) {
            best = l.min_dl_key;
            best_d = l.min_dl;
          }
        }
        if (best == kNil || dl_before(x.deadline, n, best_d, best)) {
          best = n;
          best_d = x.deadline;
        }
        n = x.right;
      } else {
        n = x.left;
      }
    }
    return best != kNil ? best : leftmost(g);
  }

  void advance_min(CgroupId cg, std::uint64_t v) {
    Group& g = groups_[cg];
    const std::uint64_t m = g.root == kNil ? v : std::min(v, entity(leftmost(g)).vruntime);
    g.min_vruntime = std::max(g.min_vruntime, m);
  }

  void place_group(Entity& e, CgroupId parent) {
    if (eevdf_) place_eevdf(e, parent, false);
    else place_wakeup(e, groups_[parent]);
  }

  // A throttled group's entity leaves its parent's tree and run queue.
  void throttle(CgroupId cg) {
    Group& g = groups_[cg];
    if (g.throttled) return;
    g.throttled = true;
    ctx_->note_throttle(cg, true);
    if (cg == kRootCgroup) return;
    const CgroupId parent = ctx_->cgroup(cg).parent;
    if (g.entity.in_tree) tree_erase(parent, group_key(cg));
    if (g.entity.on_rq) leave_rq(parent, group_key(cg));
  }

  void unthrottle(CgroupId cg) {
    Group& g = groups_[cg];
    if (!g.throttled) return;
    g.throttled = false;
    ctx_->note_throttle(cg, false);
    if (cg != kRootCgroup) {
      const CgroupId parent = ctx_->cgroup(cg).parent;
      if (g.nr_on_rq > 0 && !g.entity.on_rq) {
        place_group(g.entity, parent);
        account_enqueue(parent, group_key(cg));
      }
      if (g.root != kNil && !g.entity.in_tree) tree_insert(parent, group_key(cg));
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
      std::uint64_t dcurr = cse.deadline;
      if (static_cast<std::int64_t>(vcurr - dcurr) >= 0) dcurr = vcurr + eevdf_vslice(cse.weight);
      if (eligible(groups_[pw[i - 1].first], se.vruntime) && static_cast<std::int64_t>(se.deadline - dcurr) < 0)
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
