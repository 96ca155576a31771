// SPDX-License-Identifier: GPL-2.0-only
// CFS and FIFO scheduling classes of the simulator (see cfs.h).
#include "sim/cpu/cfs.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
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
    ncg_ = static_cast<std::uint32_t>(ctx.nr_cgroups());
    nq_ = ctx.per_cpu_runqueues() ? static_cast<std::uint32_t>(ctx.nr_cpus()) : 1;
    rqs_.resize(static_cast<std::size_t>(ncg_) * nq_);
    for (std::uint32_t q = 0; q < nq_; ++q) {
      for (CgroupId cg = 0; cg < ncg_; ++cg) {
        Rq& r = rqs_[rq_of(q, cg)];
        r.cg = cg;
        r.parent = rq_of(q, ctx.cgroup(cg).parent);
        // cfs: min_vruntime starts far from 0 (the kernel starts it at
        // -1 ms in u64 and compares signed; the vruntimes here are compared
        // unsigned), so that nothing is cut at 0: place_wakeup() gives a
        // sleeper its whole credit (half the latency behind min_vruntime)
        // on a queue whose min_vruntime has not passed that yet, and a
        // vruntime moved to a queue keeps its distance behind its minimum
        // (renorm()). A replay's tasks that were there before the capture
        // start as sleepers (CpuModel::set_present) on queues that see no
        // fork: there min_vruntime stayed near 0 for the whole capture.
        // (eevdf places by lag around V: unchanged.)
        if (!eevdf_) r.min_vruntime = kCfsVruntimeOrigin;
      }
    }
    bws_.resize(ncg_);
    nr_queued_.assign(nq_, 0);
    local_.assign(static_cast<std::size_t>(ncg_) * static_cast<std::size_t>(ctx.nr_cpus()), 0);
  }

  int select_cpu(Task& p, int prev_cpu, std::uint64_t flags) override {
    if (nq_ > 1) return ctx_->select_cpu_fair(p, prev_cpu, flags);
    const int idle = ctx_->pick_idle_cpu(prev_cpu);
    return idle >= 0 ? idle : prev_cpu;
  }
  std::uint32_t nr_queued(int cpu) const override { return nq_ > 1 ? nr_queued_[queue_of(cpu)] : 0; }

  void enqueue(Task& p, std::uint64_t flags) override {
    Entity& e = tasks_[p.id];
    // A task still on a run queue (preempted, its slice ended) stays on it
    // and keeps its vruntime; one that was off it (new, woken) joins the
    // queue of the CPU select_cpu chose and is placed.
    const bool is_new = (flags & kEnqNew) != 0;
    if (!e.on_rq) {
      const std::uint32_t from = e.q;
      e.q = queue_of(p.cpu);
      // cfs: a task woken onto another CPU's queue takes its vruntime
      // relative to the queue it left (migrate_task_rq_fair() subtracts
      // that queue's min_vruntime, enqueue_entity() adds the new one's);
      // without it a task from a queue whose tasks had run longer came
      // in far to the right and never preempted. eevdf: its lag moves.
      if (!eevdf_ && !is_new && from != e.q) {
        // signed: a sleeper's vruntime is usually behind its old queue's
        // minimum, and place_wakeup()'s sleeper credit needs that lead kept
        const std::uint32_t gf = rq_of(from, p.cgroup), gt = rq_of(e.q, p.cgroup);
        e.vruntime = renorm(e.vruntime, rqs_[gf].min_vruntime, rqs_[gt].min_vruntime);
      }
    }
    const std::uint32_t gi = rq_of(e.q, p.cgroup);
    if (!e.on_rq) {
      if (eevdf_) place_eevdf(e, gi, is_new);
      else if (is_new) e.vruntime = rqs_[gi].min_vruntime + vslice(e.weight, e.q);
      else if (e.found_offset) {
        // a replay's warm start: the distance the first pass left it at,
        // then the sleeper's floor as for any wakeup
        e.vruntime = rqs_[gi].min_vruntime + static_cast<std::uint64_t>(*e.found_offset);
        e.found_offset.reset();
        place_wakeup(e, rqs_[gi]);
      } else if (flags & kEnqFound) {
        e.vruntime = std::max(e.vruntime, rqs_[gi].min_vruntime);  // no sleeper credit
      } else {
        place_wakeup(e, rqs_[gi]);
      }
      account_enqueue(gi, task_key(p.id));
    }
    ++runnable_;
    ++nr_queued_[e.q];
    tree_insert(gi, task_key(p.id));
    if (flags & (kEnqWakeup | kEnqNew)) check_preempt(p);
    if (nq_ > 1) arm_balance();
  }

  void dequeue(Task& p) override {
    Entity& e = tasks_[p.id];
    const std::uint64_t key = task_key(p.id);
    const std::uint32_t gi = rq_of(e.q, p.cgroup);
    if (e.in_tree) {
      tree_erase(gi, key);
      --runnable_;
      --nr_queued_[e.q];
    }
    if (e.on_rq) leave_rq(gi, key);
  }

  Dispatch dispatch(int cpu, Task* prev) override {
    (void)prev;
    const std::uint32_t q = queue_of(cpu);
    // newidle_balance(): a CPU about to go idle pulls from the busiest queue
    if (nq_ > 1 && rqs_[rq_of(q, kRootCgroup)].root == kNil && ctx_->load_balance_allowed()) pull(busiest(q), q);
    for (std::size_t attempt = 0; attempt <= ncg_; ++attempt) {
      std::uint32_t gi = rq_of(q, kRootCgroup);
      std::uint64_t key = 0;
      for (;;) {
        Rq& g = rqs_[gi];
        if (g.root == kNil) return {};
        key = eevdf_ ? pick_eevdf(g) : leftmost(g);
        if (!is_group(key)) break;
        gi = group_of(key);
      }
      Task& t = ctx_->task(task_of(key));
      // Draw bandwidth for every limited level; a level whose pool is empty
      // is throttled (its entity leaves its parent's queue) and we pick again.
      std::uint64_t slice = eevdf_ ? base_slice_ns_ : slice_ns(q);
      bool throttled = false;
      for (std::uint32_t a = gi;; a = rqs_[a].parent) {
        const CgroupId cg = rqs_[a].cg;
        Bw& b = bws_[cg];
        if (agentcg_bw_limited(&b.bw)) {
          s64& local = local_at(cg, cpu);
          if (!agentcg_bw_acquire(&b.bw, &local, cfg_.bandwidth_slice_ns, ctx_->now().ns())) {
            throttle(a);
            throttled = true;
            break;
          }
          slice = std::min<std::uint64_t>(slice, static_cast<std::uint64_t>(local));
        }
        if (cg == kRootCgroup) break;
      }
      if (throttled) continue;
      // The task leaves the tree but stays on the run queue (the kernel's
      // curr): it still counts in V, and so does each group entity above it.
      tree_erase(gi, key);
      --runnable_;
      --nr_queued_[q];
      for (std::uint32_t a = gi;; a = rqs_[a].parent) {
        rqs_[a].running++;
        if (rqs_[a].cg == kRootCgroup) break;
      }
      return {&t, Time::from_ns(slice)};
    }
    return {};
  }

  void running(Task&, int) override {}

  void stopping(Task& p, int cpu, bool runnable) override {
    const std::uint64_t ran = (ctx_->now() - p.started_at).ns();
    Entity& e = tasks_[p.id];
    const std::uint32_t gi = rq_of(e.q, p.cgroup);
    set_vruntime(gi, e, e.vruntime + ran * kNice0Load / e.weight);
    if (eevdf_) update_deadline(e);
    advance_min(gi, e.vruntime);
    for (std::uint32_t a = gi;;) {
      Rq& g = rqs_[a];
      const CgroupId cg = g.cg;
      Bw& b = bws_[cg];
      if (g.running) g.running--;
      if (agentcg_bw_limited(&b.bw)) {
        s64& local = local_at(cg, cpu);
        agentcg_bw_charge(&b.bw, &local, ran);
        agentcg_bw_return(&b.bw, &local);
        // Runtime handed back while the group is throttled is handed on
        // at once (the kernel's slack timer, distribute_cfs_runtime());
        // waiting for the refill lost it: a 25 % quota delivered 23.25 %.
        if (b.nr_throttled > 0 && b.bw.runtime_ns > 0) unthrottle_all(cg);
      }
      if (cg == kRootCgroup) break;
      // The group entity in the parent's queue advances too (its place in
      // the parent's tree and its term in the parent's V follow); with
      // per-CPU queues its weight is refreshed first (entity_tick() ->
      // update_cfs_group()).
      if (nq_ > 1) refresh_share(a);
      const std::uint32_t parent = g.parent;
      const std::uint64_t key = group_key(a);
      Rq& pg = rqs_[parent];
      const bool in_tree = g.entity.in_tree;
      if (in_tree) pg.root = treap_erase(pg.root, key);
      set_vruntime(parent, g.entity, g.entity.vruntime + ran * kNice0Load / g.entity.weight);
      if (eevdf_) update_deadline(g.entity);
      if (in_tree) pg.root = treap_insert(pg.root, key);
      advance_min(parent, g.entity.vruntime);
      a = parent;
    }
    // A task going to sleep leaves the run queue (and keeps its lag); each
    // group left without runnable entities leaves its parent's queue.
    if (!runnable) leave_rq(gi, task_key(p.id));
  }

  void init_task(Task& p, bool) override {
    if (tasks_.size() <= p.id) tasks_.resize(p.id + 1);
    tasks_[p.id] = Entity{};
    tasks_[p.id].weight = std::max<std::uint64_t>(1, p.weight * kNice0Load / 100);
  }
  void exit_task(Task& p) override { dequeue(p); }

  std::optional<std::int64_t> placement_state(const Task& p) const override {
    if (p.id >= tasks_.size()) return std::nullopt;
    const Entity& e = tasks_[p.id];
    const Rq& g = rqs_[rq_of(e.q, p.cgroup)];
    if (eevdf_)
      return e.on_rq ? static_cast<std::int64_t>(avg_vruntime(g, g.min_vruntime) - e.vruntime) : e.vlag;
    return static_cast<std::int64_t>(e.vruntime - g.min_vruntime);
  }
  void restore_placement(Task& p, std::int64_t state) override {
    Entity& e = tasks_.at(p.id);
    if (eevdf_) e.vlag = clamp_lag(state, e);
    else e.found_offset = state;
  }

  void cgroup_init(const CgroupInfo& cg) override {
    const std::uint64_t w = std::max<std::uint64_t>(1, cg.weight * kNice0Load / 100);
    bws_.at(cg.id).shares = w;
    for (std::uint32_t q = 0; q < nq_; ++q) rqs_[rq_of(q, cg.id)].entity.weight = w;
    cgroup_set_bandwidth(cg.id, cg.quota_us, cg.period_us);
  }
  void cgroup_move(Task& p, CgroupId from, CgroupId to) override {
    Entity& e = tasks_[p.id];
    const std::uint64_t key = task_key(p.id);
    const std::uint32_t gf = rq_of(e.q, from), gt = rq_of(e.q, to);
    const bool in_tree = e.in_tree, on_rq = e.on_rq;
    if (in_tree) tree_erase(gf, key);
    if (on_rq) account_dequeue(gf, key);
    e.vruntime = renorm(e.vruntime, rqs_[gf].min_vruntime, rqs_[gt].min_vruntime);
    p.cgroup = to;
    if (on_rq) account_enqueue(gt, key);
    if (in_tree) tree_insert(gt, key);
  }
  void cgroup_set_weight(CgroupId cg, std::uint32_t weight) override {
    const std::uint64_t w = std::max<std::uint64_t>(1, weight * kNice0Load / 100);
    bws_.at(cg).shares = w;
    for (std::uint32_t q = 0; q < nq_; ++q) {
      const std::uint32_t gi = rq_of(q, cg);
      Entity& ge = rqs_[gi].entity;
      if (cg == kRootCgroup) {
        ge.weight = w;
        continue;
      }
      if (nq_ > 1) {
        update_shares(gi);
        continue;
      }
      Rq& pg = rqs_[rqs_[gi].parent];
      const std::uint64_t key = group_key(gi);
      if (ge.in_tree) pg.root = treap_erase(pg.root, key);
      if (ge.on_rq) avg_sub(pg, ge);
      ge.weight = w;
      if (ge.on_rq) avg_add(pg, ge);
      if (ge.in_tree) pg.root = treap_insert(pg.root, key);
    }
  }
  void cgroup_set_bandwidth(CgroupId cg, std::optional<std::uint64_t> quota_us,
                            std::uint64_t period_us) override {
    Bw& b = bws_.at(cg);
    if (b.timer) ctx_->cancel_timer(b.timer);
    b.timer = 0;
    agentcg_bw_init(&b.bw, quota_us ? *quota_us * 1000 : 0, period_us * 1000);
    if (quota_us) b.timer = ctx_->arm_timer(ctx_->now() + Time::from_ns(b.bw.period_ns), cg);
  }

  // The bandwidth period timer of cgroup `cookie`, or the load balancer.
  void on_timer(std::uint64_t cookie) override {
    if (cookie == kBalanceCookie) {
      balance_timer_ = 0;
      balance();
      arm_balance();
      return;
    }
    const auto cg = static_cast<CgroupId>(cookie);
    Bw& b = bws_.at(cg);
    const std::uint64_t periods = b.bw.nr_periods;
    const bool was = agentcg_bw_refill(&b.bw, ctx_->now().ns());
    if (b.bw.nr_periods != periods) ctx_->note_period(cg);
    if (was || b.nr_throttled > 0) unthrottle_all(cg);
    b.timer = ctx_->arm_timer(ctx_->now() + Time::from_ns(b.bw.period_ns), cg);
  }

 private:
  static constexpr std::uint64_t kBalanceCookie = UINT64_MAX;
  // calc_group_shares()'s floor for a group entity's per-CPU weight.
  static constexpr std::uint64_t kMinShares = 2;

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
    std::uint32_t q = 0;         // tasks: the run queue (CPU) it is on or was last on
    // cfs, restore_placement(): the vruntime's distance from min_vruntime
    // to take at the first enqueue (its queue is chosen there)
    std::optional<std::int64_t> found_offset;
    std::uint64_t left = kNil, right = kNil;  // treap children (entity keys)
    std::uint64_t min_dl = 0, min_dl_key = kNil;  // earliest deadline in this subtree
  };
  // One cgroup's run queue on one CPU (the kernel's per-CPU cfs_rq of a
  // task group), or its only one with a global queue. Index rq_of(q, cg).
  struct Rq {
    Entity entity;  // this group's entity in its parent's queue (same CPU)
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
    CgroupId cg = kRootCgroup;
    std::uint32_t parent = 0;   // the parent cgroup's queue on the same CPU (root: itself)
    bool throttled = false;
  };
  // Per cgroup, whatever its queues: cpu.max, cpu.weight, the load summed
  // over its per-CPU queues (calc_group_shares()'s tg load).
  struct Bw {
    agentcg_bw_pool bw{};
    std::uint64_t timer = 0;
    std::uint64_t shares = kNice0Load;
    std::uint64_t total_load = 0;
    std::uint32_t nr_throttled = 0;  // its queues throttled now
  };

  std::uint32_t queue_of(int cpu) const { return nq_ > 1 && cpu > 0 ? static_cast<std::uint32_t>(cpu) : 0; }
  std::uint32_t rq_of(std::uint32_t q, CgroupId cg) const { return q * ncg_ + cg; }
  static std::uint64_t task_key(std::uint32_t id) { return static_cast<std::uint64_t>(id) << 1; }
  static std::uint64_t group_key(std::uint32_t gi) { return (static_cast<std::uint64_t>(gi) << 1) | 1; }
  static bool is_group(std::uint64_t key) { return key & 1; }
  static std::uint32_t task_of(std::uint64_t key) { return static_cast<std::uint32_t>(key >> 1); }
  static std::uint32_t group_of(std::uint64_t key) { return static_cast<std::uint32_t>(key >> 1); }
  Entity& entity(std::uint64_t key) { return is_group(key) ? rqs_[group_of(key)].entity : tasks_[task_of(key)]; }
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
  std::uint64_t leftmost(const Rq& g) {
    std::uint64_t n = g.root;
    while (n != kNil && entity(n).left != kNil) n = entity(n).left;
    return n;
  }

  // --- V: the kernel's running sums (avg_vruntime) -------------------------
  // avg_add/avg_sub also keep the cgroup's load over all its queues
  // (Bw::total_load) for the per-CPU group shares.
  void avg_add(Rq& g, const Entity& e) {
    if (g.avg_load == 0) {
      g.avg_base = e.vruntime;
      g.avg_sum = 0;
    }
    g.avg_sum += static_cast<i128>(static_cast<std::int64_t>(e.vruntime - g.avg_base)) * e.weight;
    g.avg_load += e.weight;
    bws_[g.cg].total_load += e.weight;
  }
  void avg_sub(Rq& g, const Entity& e) {
    g.avg_sum -= static_cast<i128>(static_cast<std::int64_t>(e.vruntime - g.avg_base)) * e.weight;
    const std::uint64_t d = std::min(g.avg_load, e.weight);
    g.avg_load -= d;
    bws_[g.cg].total_load -= std::min(bws_[g.cg].total_load, d);
    if (g.avg_load == 0) g.avg_sum = 0;
  }
  // V of the queue (floor of the weighted average); `fallback` when empty.
  // `curr_run`: as eligible()'s (curr_uncharged()).
  std::uint64_t avg_vruntime(const Rq& g, std::uint64_t fallback, i128 curr_run = 0) const {
    if (g.avg_load == 0) return fallback;
    const i128 sum = g.avg_sum + curr_run;
    i128 q = sum / static_cast<i128>(g.avg_load);
    if (sum < 0 && q * static_cast<i128>(g.avg_load) != sum) --q;  // floor
    return g.avg_base + static_cast<std::uint64_t>(static_cast<std::int64_t>(q));
  }
  // vruntime_eligible(): v <= V without the division. `curr_run` adds the
  // weighted virtual time the running entity has run since it was last
  // charged (update_curr() before a wakeup-preemption check moves V).
  bool eligible(const Rq& g, std::uint64_t v, i128 curr_run = 0) const {
    if (g.avg_load == 0) return true;
    return static_cast<i128>(static_cast<std::int64_t>(v - g.avg_base)) * g.avg_load <= g.avg_sum + curr_run;
  }
  // Moves an entity's vruntime, keeping the queue's sums right.
  void set_vruntime(std::uint32_t gi, Entity& e, std::uint64_t v) {
    if (e.on_rq) avg_sub(rqs_[gi], e);
    e.vruntime = v;
    if (e.on_rq) avg_add(rqs_[gi], e);
  }

  // --- per-CPU group shares (calc_group_shares(), without PELT) ------------
  // A group's entity on one CPU weighs shares x (its queue's load there) /
  // (its load on all CPUs), at least kMinShares: a group with tasks on
  // four CPUs gets a quarter of its weight on each, as the kernel gives it
  // (from PELT averages; here from the runnable weights, so a task that
  // sleeps stops counting at once). Returns true when the entity's weight
  // changed while it was on its parent's queue (the parent's load changed).
  bool refresh_share(std::uint32_t gi) {
    Rq& g = rqs_[gi];
    if (g.cg == kRootCgroup) return false;
    const Bw& b = bws_[g.cg];
    std::uint64_t w = b.shares;
    if (g.avg_load > 0 && b.total_load > g.avg_load)
      w = std::clamp<std::uint64_t>(b.shares * g.avg_load / b.total_load, kMinShares, b.shares);
    if (w == g.entity.weight) return false;
    Rq& pg = rqs_[g.parent];
    if (!g.entity.on_rq) {
      g.entity.weight = w;
      return false;
    }
    avg_sub(pg, g.entity);
    g.entity.weight = w;
    avg_add(pg, g.entity);
    return true;
  }
  // After queue gi's load changed: its group entity and, while that changes
  // its parent's load, the ones above (update_cfs_group() up the hierarchy).
  void update_shares(std::uint32_t gi) {
    while (refresh_share(gi)) gi = rqs_[gi].parent;
  }

  // --- on_rq (V) and tree (pick) membership, propagated up the hierarchy ----
  void account_enqueue(std::uint32_t gi, std::uint64_t key) {
    Rq& g = rqs_[gi];
    Entity& e = entity(key);
    avg_add(g, e);
    e.on_rq = true;
    if (++g.nr_on_rq == 1 && g.cg != kRootCgroup && !g.throttled && !g.entity.on_rq) {
      place_group(g.entity, g.parent);
      account_enqueue(g.parent, group_key(gi));
    }
    if (nq_ > 1) update_shares(gi);
  }
  void account_dequeue(std::uint32_t gi, std::uint64_t key) {
    Rq& g = rqs_[gi];
    Entity& e = entity(key);
    avg_sub(g, e);
    e.on_rq = false;
    if (g.nr_on_rq) g.nr_on_rq--;
    if (g.nr_on_rq == 0 && g.cg != kRootCgroup && g.entity.on_rq) leave_rq(g.parent, group_key(gi));
    if (nq_ > 1) update_shares(gi);
  }
  // An entity leaves queue gi: EEVDF keeps its lag (update_entity_lag(), for
  // tasks and group entities alike) for its next placement.
  void leave_rq(std::uint32_t gi, std::uint64_t key) {
    Entity& e = entity(key);
    if (eevdf_) {
      const std::uint64_t v = avg_vruntime(rqs_[gi], e.vruntime);
      e.vlag = clamp_lag(static_cast<std::int64_t>(v - e.vruntime), e);
    }
    account_dequeue(gi, key);
  }
  void tree_insert(std::uint32_t gi, std::uint64_t key) {
    Rq& g = rqs_[gi];
    const bool was_empty = g.root == kNil;
    g.root = treap_insert(g.root, key);
    Entity& e = entity(key);
    e.in_tree = true;
    advance_min(gi, e.vruntime);
    if (was_empty && g.cg != kRootCgroup && !g.throttled && !g.entity.in_tree) tree_insert(g.parent, group_key(gi));
  }
  void tree_erase(std::uint32_t gi, std::uint64_t key) {
    Rq& g = rqs_[gi];
    g.root = treap_erase(g.root, key);
    entity(key).in_tree = false;
    if (g.root == kNil && g.cg != kRootCgroup && g.entity.in_tree) tree_erase(g.parent, group_key(gi));
  }

  std::uint64_t vslice(std::uint64_t weight, std::uint32_t q) const { return slice_ns(q) * kNice0Load / weight; }
  // sched_slice() on a CPU holding runnable/ncpus tasks (global queue) or
  // its own queued tasks + the one to run (per-CPU), without weights.
  std::uint64_t slice_ns(std::uint32_t q) const {
    const std::uint64_t cpus = static_cast<std::uint64_t>(ctx_->nr_cpus());
    const std::uint64_t nr =
        nq_ > 1 ? std::uint64_t{nr_queued_[q]} + 1 : std::max<std::uint64_t>(1, (runnable_ + cpus) / cpus);
    const std::uint64_t nr_latency = std::max<std::uint64_t>(1, latency_ns_ / min_gran_ns_);
    const std::uint64_t period = nr > nr_latency ? nr * min_gran_ns_ : latency_ns_;
    return std::max(min_gran_ns_, period / nr);
  }
  // A vruntime moved from a queue to another (migrate_task_rq_fair(), a
  // cgroup move): the same distance from the new queue's min_vruntime,
  // signed (a sleeper placed behind its old queue's minimum, or a queued
  // task that has not caught up, keeps that lead; clamped at 0 only where
  // it would underflow).
  static std::uint64_t renorm(std::uint64_t v, std::uint64_t from_min, std::uint64_t to_min) {
    if (v >= from_min) return to_min + (v - from_min);
    const std::uint64_t behind = from_min - v;
    return behind > to_min ? 0 : to_min - behind;
  }
  void place_wakeup(Entity& e, const Rq& g) {
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
  void place_eevdf(Entity& e, std::uint32_t gi, bool is_new) {
    const Rq& g = rqs_[gi];
    const std::uint64_t v = avg_vruntime(g, g.min_vruntime, curr_uncharged(gi));
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
  std::uint64_t pick_eevdf(const Rq& g, i128 curr_run = 0) {
    std::uint64_t best = kNil, best_d = 0;
    for (std::uint64_t n = g.root; n != kNil;) {
      const Entity& x = entity(n);
      if (eligible(g, x.vruntime, curr_run)) {
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

  void advance_min(std::uint32_t gi, std::uint64_t v) {
    Rq& g = rqs_[gi];
    const std::uint64_t m = g.root == kNil ? v : std::min(v, entity(leftmost(g)).vruntime);
    g.min_vruntime = std::max(g.min_vruntime, m);
  }

  void place_group(Entity& e, std::uint32_t parent) {
    if (eevdf_) place_eevdf(e, parent, false);
    else place_wakeup(e, rqs_[parent]);
  }

  // A throttled queue's group entity leaves its parent's tree and run queue.
  void throttle(std::uint32_t gi) {
    Rq& g = rqs_[gi];
    if (g.throttled) return;
    g.throttled = true;
    if (bws_[g.cg].nr_throttled++ == 0) ctx_->note_throttle(g.cg, true);
    if (g.cg == kRootCgroup) return;
    if (g.entity.in_tree) tree_erase(g.parent, group_key(gi));
    if (g.entity.on_rq) leave_rq(g.parent, group_key(gi));
  }

  // Puts every throttled queue of the cgroup back and kicks the idle CPUs.
  void unthrottle_all(CgroupId cg) {
    bool any = false;
    for (std::uint32_t q = 0; q < nq_; ++q) {
      const std::uint32_t gi = rq_of(q, cg);
      Rq& g = rqs_[gi];
      if (!g.throttled) continue;
      any = true;
      g.throttled = false;
      if (--bws_[cg].nr_throttled == 0) ctx_->note_throttle(cg, false);
      if (cg == kRootCgroup) continue;
      if (g.nr_on_rq > 0 && !g.entity.on_rq) {
        place_group(g.entity, g.parent);
        account_enqueue(g.parent, group_key(gi));
      }
      if (g.root != kNil && !g.entity.in_tree) tree_insert(g.parent, group_key(gi));
    }
    if (!any) return;
    for (int cpu = 0; cpu < ctx_->nr_cpus(); ++cpu)
      if (ctx_->cpu_idle(cpu)) ctx_->kick_cpu(cpu, false);
  }

  // --- per-CPU load balancing ------------------------------------------
  // The queue with the most queued tasks other than `q` (lowest index on a
  // tie) among those with more than one task (sched_balance_rq() detaches
  // only from a busiest rq with nr_running > 1: the one task queued on an
  // idle CPU, kicked to run it, stays there); nq_ when none has.
  std::uint32_t busiest(std::uint32_t q) const {
    std::uint32_t best = nq_, most = 0;
    for (std::uint32_t c = 0; c < nq_; ++c)
      if (c != q && nr_queued_[c] > most && nr_running(c) > 1) {
        most = nr_queued_[c];
        best = c;
      }
    return best;
  }
  // Moves the task queue `src` would run next to queue `dst`
  // (detach_task()/attach_task()); false when src has none to give. The
  // kernel skips cache-hot tasks and takes the list's tail; the next to
  // run is the one whose wait the move shortens most.
  bool pull(std::uint32_t src, std::uint32_t dst) {
    if (src >= nq_ || src == dst || nr_queued_[src] == 0) return false;
    std::uint32_t gi = rq_of(src, kRootCgroup);
    std::uint64_t key = 0;
    for (;;) {
      const Rq& g = rqs_[gi];
      if (g.root == kNil) return false;
      key = eevdf_ ? pick_eevdf(g) : leftmost(g);
      if (!is_group(key)) break;
      gi = group_of(key);
    }
    Task& t = ctx_->task(task_of(key));
    Entity& e = tasks_[t.id];
    const std::uint32_t to = rq_of(dst, t.cgroup);
    tree_erase(gi, key);
    --nr_queued_[src];
    // cfs: vruntime relative to the queue's min_vruntime
    // (migrate_task_rq_fair()); eevdf: the lag goes with it.
    const std::uint64_t from_min = rqs_[gi].min_vruntime;
    leave_rq(gi, key);
    e.q = dst;
    if (eevdf_) place_eevdf(e, to, false);
    else e.vruntime = renorm(e.vruntime, from_min, rqs_[to].min_vruntime);
    account_enqueue(to, key);
    tree_insert(to, key);
    ++nr_queued_[dst];
    t.cpu = static_cast<int>(dst);
    return true;
  }
  std::uint32_t nr_running(std::uint32_t q) const {
    return nr_queued_[q] + (ctx_->cpu_idle(static_cast<int>(q)) ? 0 : 1);
  }
  // rebalance_domains(), one flat domain: move tasks from the CPU with the
  // most to the one with the fewest until they differ by less than two;
  // a task moved to a busy CPU may preempt there, an idle one is kicked.
  void balance() {
    if (!ctx_->load_balance_allowed()) return;
    for (std::uint32_t moves = 0; moves < nq_; ++moves) {
      std::uint32_t hi = 0, lo = 0;
      for (std::uint32_t c = 1; c < nq_; ++c) {
        if (nr_running(c) > nr_running(hi)) hi = c;
        if (nr_running(c) < nr_running(lo)) lo = c;
      }
      if (nr_running(hi) < nr_running(lo) + 2 || !pull(hi, lo)) break;
      const int cpu = static_cast<int>(lo);
      if (ctx_->cpu_idle(cpu)) ctx_->kick_cpu(cpu, false);
      else check_preempt_queued(cpu);
    }
  }
  // After a move to a busy CPU: the moved task preempts curr when it should
  // (attach_task() -> wakeup_preempt()).
  void check_preempt_queued(int cpu) {
    const std::uint32_t q = queue_of(cpu);
    std::uint32_t gi = rq_of(q, kRootCgroup);
    std::uint64_t key = 0;
    for (;;) {
      const Rq& g = rqs_[gi];
      if (g.root == kNil) return;
      key = eevdf_ ? pick_eevdf(g) : leftmost(g);
      if (!is_group(key)) break;
      gi = group_of(key);
    }
    check_preempt(ctx_->task(task_of(key)));
  }
  // The balancer runs while some CPU has queued tasks.
  void arm_balance() {
    if (balance_timer_ != 0) return;
    bool queued = false;
    for (std::uint32_t c = 0; c < nq_ && !queued; ++c) queued = nr_queued_[c] > 0;
    if (queued) balance_timer_ = ctx_->arm_timer(ctx_->now() + Time::from_ns(cfg_.balance_interval_ns), kBalanceCookie);
  }

  // The path from a task's entity to the root: (queue, entity key) pairs.
  void entity_path(const Task& t, std::vector<std::pair<std::uint32_t, std::uint64_t>>& v) const {
    v.clear();
    const std::uint32_t gi = rq_of(tasks_[t.id].q, t.cgroup);
    v.push_back({gi, task_key(t.id)});
    for (std::uint32_t a = gi; rqs_[a].cg != kRootCgroup; a = rqs_[a].parent) v.push_back({rqs_[a].parent, group_key(a)});
  }
  // With per-CPU queues: the weighted virtual time that the task running on
  // queue gi's CPU has run since it was last charged, at gi's level (0 when
  // it runs outside gi): what update_curr() adds to V before
  // place_entity() places a woken or new entity. Without it a wakee was
  // placed at the V of curr's last charge, ahead of curr by half of curr's
  // run since, so curr was no longer eligible and lost its RUN_TO_PARITY
  // protection: a forked child preempted its forker at once (the KVM
  // guest's kernel let the forker run on to its wait(), README "Fidelity").
  // The global queue's V, a machine-wide average the kernel never keeps,
  // is left as charged (the default model's results unchanged).
  i128 curr_uncharged(std::uint32_t gi) {
    if (nq_ <= 1) return 0;
    Task* curr = ctx_->cpu_curr(static_cast<int>(gi / ncg_));
    if (curr == nullptr || curr->id >= tasks_.size() || !tasks_[curr->id].on_rq) return 0;
    entity_path(*curr, path_curr_);
    for (const auto& [q, key] : path_curr_) {
      if (q != gi) continue;
      const Entity& ce = entity(key);
      if (ctx_->now() < curr->started_at) return 0;  // still paying its context switch
      const std::uint64_t ran = (ctx_->now() - curr->started_at).ns();
      return static_cast<i128>(ran * kNice0Load / ce.weight) * static_cast<i128>(ce.weight);
    }
    return 0;
  }

  // check_preempt_wakeup: compare at the level where both entities meet.
  void check_preempt(Task& p) {
    const int cpu = p.cpu;
    if (cpu < 0 || ctx_->cpu_idle(cpu)) return;
    Task* curr = ctx_->cpu_curr(cpu);
    if (!curr || curr == &p) return;
    // Paths from each task's entity to the root: (queue, entity key), in
    // member vectors reused from call to call (no allocation once they
    // reached the tree's depth).
    auto& pw = path_wakee_;
    auto& pc = path_curr_;
    entity_path(p, pw);
    entity_path(*curr, pc);
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
      // check_preempt_wakeup_fair(), after update_curr(): preempt when
      // pick_eevdf() would now take the woken entity. curr competes while
      // eligible, with its deadline renewed once reached; under
      // RUN_TO_PARITY an eligible curr keeps the CPU until the deadline it
      // had when picked (protect_slice(): vprot = that deadline while all
      // slices are the base slice, so an unrenewed deadline means it).
      const Rq& g = rqs_[pw[i - 1].first];
      const i128 run = static_cast<i128>(vcurr - cse.vruntime) * static_cast<i128>(cse.weight);
      const bool curr_eligible = cse.on_rq && eligible(g, vcurr, run);
      if (curr_eligible && cfg_.run_to_parity && static_cast<std::int64_t>(vcurr - cse.deadline) < 0) return;
      const std::uint64_t wakee = pw[i - 1].second;
      if (!eligible(g, se.vruntime, run) || pick_eevdf(g, run) != wakee) return;
      std::uint64_t dcurr = cse.deadline;
      if (static_cast<std::int64_t>(vcurr - dcurr) >= 0) dcurr = vcurr + eevdf_vslice(cse.weight);
      // entity_before(curr, best): curr stays only with a strictly earlier deadline
      if (!curr_eligible || static_cast<std::int64_t>(dcurr - se.deadline) >= 0) ctx_->resched_curr_lazy(cpu);
      return;
    }
    const std::uint64_t gran = wakeup_gran_ns_ * kNice0Load / se.weight;
    if (vcurr > se.vruntime && vcurr - se.vruntime > gran) ctx_->resched_curr_lazy(cpu);
  }

  static constexpr std::uint64_t kCfsVruntimeOrigin = std::uint64_t{1} << 40;  // ~18 minutes of virtual time
  config::CfsConfig cfg_;
  bool eevdf_ = false;
  SchedContext* ctx_ = nullptr;
  std::uint64_t latency_ns_ = 0, min_gran_ns_ = 0, wakeup_gran_ns_ = 0, base_slice_ns_ = 0;
  std::uint32_t ncg_ = 0;  // cgroups
  std::uint32_t nq_ = 1;   // run queues: CPUs (per-CPU) or 1 (global)
  std::vector<Entity> tasks_;
  std::vector<Rq> rqs_;    // rq_of(q, cg)
  std::vector<Bw> bws_;    // by cgroup
  // check_preempt's two root paths, kept to reuse their capacity
  std::vector<std::pair<std::uint32_t, std::uint64_t>> path_wakee_, path_curr_;
  std::vector<std::uint32_t> nr_queued_;  // queued tasks per run queue
  std::vector<s64> local_;  // local bandwidth runtime per (cgroup, cpu)
  std::uint64_t runnable_ = 0;  // queued tasks
  std::uint64_t balance_timer_ = 0;
};

class FifoClass final : public SchedClass {
 public:
  std::string_view name() const override { return "fifo"; }
  bool sched_ext() const override { return true; }  // live: the BPF program's FIFO mode
  void init(SchedContext& ctx) override { ctx_ = &ctx; }
  int select_cpu(Task&, int prev_cpu, std::uint64_t) override {
    const int idle = ctx_->pick_idle_cpu(prev_cpu);
    return idle >= 0 ? idle : prev_cpu;
  }
  void enqueue(Task& p, std::uint64_t) override {
    Link& l = link(p.id);
    if (l.queued) throw std::logic_error("fifo: task " + std::to_string(p.id) + " enqueued twice");
    l.queued = true;
    l.prev = tail_;
    l.next = kNone;
    if (tail_ != kNone) links_[tail_].next = p.id;
    else head_ = p.id;
    tail_ = p.id;
  }
  void dequeue(Task& p) override {
    if (p.id >= links_.size() || !links_[p.id].queued) return;
    Link& l = links_[p.id];
    if (l.prev != kNone) links_[l.prev].next = l.next;
    else head_ = l.next;
    if (l.next != kNone) links_[l.next].prev = l.prev;
    else tail_ = l.prev;
    l = Link{};
  }
  Dispatch dispatch(int, Task*) override {
    if (head_ == kNone) return {};
    Task& t = ctx_->task(head_);
    dequeue(t);
    return {&t, Time::from_ms(20)};
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
  // The run queue: a FIFO list threaded through links_ (by task id), so
  // enqueue/dequeue are O(1) and allocate nothing once links_ covers the ids.
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  struct Link {
    std::uint32_t prev = kNone, next = kNone;
    bool queued = false;
  };
  Link& link(std::uint32_t id) {
    if (links_.size() <= id) links_.resize(id + 1);
    return links_[id];
  }
  SchedContext* ctx_ = nullptr;
  std::vector<Link> links_;
  std::uint32_t head_ = kNone, tail_ = kNone;
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
