// SPDX-License-Identifier: GPL-2.0-only
// The GPU policies behind core/include/agentcg/gpu/policy.h, in one class
// parameterised by features, so that memory-aware and compute-limit compose:
//
//   none                        everyone runs at once (nvshare "off")
//   nvshare                     FCFS exclusive lock, DROP at TQ even when alone
//   memory-aware                co-location under a safe memory limit, a wait
//                               queue for clients that do not fit, a forced
//                               switch after a quantum (fixed or auto), a
//                               switch on memory release, prefetch on
//                               switch-in, placement, a starvation bound
//   compute-limit               everyone runs at once, except that limited
//                               clients of a GPU take turns (exclusive
//                               slices); a limited client is dropped when
//                               its quota in the window is used
//   memory-aware+compute-limit  both
//
// Invariants: a client holds at most one grant; every grant has a fresh
// generation; a release with another generation changes nothing; time
// passed in never decreases (an earlier time is treated as the last one).
// Callers: sim/gpu/gpu_sim.cc, live/gpud.
//
// Corrections to the designs' pseudo-code (implementing the stated intent;
// the designs are summarised in docs/sources.md "The design"):
//  - the memory-aware GPU design's timer recomputed its deadline each loop but (in the fork)
//    never slept past the 2 s quota window, so the forced switch never
//    fired; here the forced switch is a next_tick_ns deadline at
//    granted_at + quantum, returned to the caller, and tested.
//  - the memory-aware GPU design (§4.3) moved the running client to the wait queue and
//    granted the next one in the same step, before the first released the
//    GPU; here the next client is granted only when the memory it needs is
//    actually released (release()/disconnect()/memory_update()).
//  - the memory-aware GPU design (§8.2) assumed 1 GB/s and floor(GB) (a 0.9 GB set gave
//    1 s); here the swap time is bytes(out + in) / the GPU's swap
//    bandwidth, rounded up, times the multiplier, clamped.
//  - the memory-aware GPU design's safe limit: total x 90 % replaced by capacity - reserve -
//    overhead x contexts (the seed's own review, section 10.1).
//  - the compute-limit GPU design scaled every limit down by sum/100 when the limits sum above
//    100 %; a limit is a cap, so here the capacity is shared max-min fairly
//    under the caps instead (quota_ns()).
//  - the compute-limit GPU design (§2.2.3) billed the full wall time to every running
//    client ("full accounting") and slept before billing; its section 5
//    replaced that by wall / concurrency, which is what is done here, with
//    the divisor being all clients holding a grant on that GPU (a limited
//    client sharing the GPU with an unlimited one gets half of it).
//  - the compute-limit GPU design reset usage to zero at a window boundary and cleared the
//    throttle flag unconditionally; here the overage carries over at
//    carryover_pct and the throttle is lifted only if usage is below quota.
//  - the fork's "memory overloaded" flag is not needed: fit is recomputed
//    from the reported allocations at every event.
//  - the memory-aware GPU design bounds a waiter's wait (max_wait_s, its
//    section 6) so that a big job cannot block the small ones; switching
//    the running set out at once took back a grant given a moment ago
//    whenever a long queue was past the bound (every grant, on the whole
//    Tiresias trace), so a starving waiter shortens each holder's turn to
//    the minimum quantum (switch_time_min_s) from its grant instead.
//
// Limitations: clients are trusted to report allocations and to honour
// DROP; a client that never releases after DROP keeps its grant (the
// daemon should disconnect it after a timeout).
#include "agentcg/gpu/policy.h"

#include <algorithm>
#include <map>
#include <span>

namespace agentcg::gpu {
namespace {

constexpr std::uint64_t kMiB = 1024ull * 1024ull;
constexpr std::uint64_t kNsPerMs = 1000000ull;
constexpr std::uint64_t kNsPerS = 1000000000ull;

struct Features {
  bool serialise = false;     // nvshare exclusive lock
  bool memory_aware = false;
  bool compute_limit = false;
};

struct Client {
  ClientId id = 0;
  std::optional<GpuIndex> gpu;
  std::uint64_t allocated = 0;
  ClientLimits limits;
  bool requesting = false;
  std::uint64_t request_since_ns = 0;
  std::uint64_t request_seq = 0;
  bool granted = false;
  bool has_context = false;        // granted once: its context exists on *gpu
  bool dropped = false;            // DROP sent, release pending
  bool re_request = false;         // asked again while its DROP was pending
  bool told_wait = false;          // kWaitForMemory sent for this request
  std::uint64_t generation = 0;
  std::uint64_t granted_at_ns = 0;
  std::uint64_t drop_at_ns = 0;
  // compute limit
  std::uint64_t used_ns = 0;       // billed in the current window
  bool throttled = false;
  std::uint64_t tail_estimate_ns = 0;  // billed DROP -> release tail (EWMA)
  std::uint64_t tail_billed_ns = 0;    // billed since the current DROP
};

class Policy final : public GpuPolicy {
 public:
  Policy(std::string name, Features f, const config::GpuConfig& cfg, std::vector<GpuCapacity> gpus)
      : name_(std::move(name)), f_(f), cfg_(cfg), gpus_(std::move(gpus)), buckets_(gpus_.size() + 1) {
    tq_ns_ = cfg_.time_quantum_ms * kNsPerMs;
    on_ = cfg_.scheduler_on && f_.serialise;
    fixed_quantum_ = cfg_.switch_time_mode == "fixed";
    fixed_quantum_ns_ = cfg_.switch_time_fixed_s * kNsPerS;
  }

  std::string name() const override { return name_; }

  Decisions register_client(std::uint64_t now, ClientId id, std::optional<GpuIndex> hint,
                            const ClientLimits& limits) override {
    check_limits(limits);
    if (hint && *hint >= gpus_.size())
      throw PolicyError("client " + std::to_string(id) + ": GPU " + std::to_string(*hint) +
                        " does not exist (have " + std::to_string(gpus_.size()) + ")");
    advance(now);
    Decisions out;
    auto [it, fresh] = clients_.try_emplace(id);
    Client& c = it->second;
    if (fresh) {
      c.id = id;
      c.gpu = hint;
      bucket_insert(c);
    }
    c.limits = limits;
    if (limits.memory_bytes) out.list.push_back({DecisionKind::kMemoryLimit, id, 0, 0, limits.memory_bytes, 0});
    evaluate(now, out);
    return out;
  }

  Decisions memory_update(std::uint64_t now, ClientId id, std::uint64_t bytes) override {
    advance(now);
    Decisions out;
    Client* c = find(id);
    if (c) {
      c->allocated = bytes;
      if (f_.memory_aware && c->granted && c->gpu) shed_overflow(*c->gpu, out);
    }
    evaluate(now, out);
    return out;
  }

  Decisions lock_request(std::uint64_t now, ClientId id) override {
    advance(now);
    Decisions out;
    if (Client* c = find(id)) {
      if (c->granted) {
        if (c->dropped) c->re_request = true;
      } else if (!c->requesting) {
        enqueue(*c);
      }
    }
    evaluate(now, out);
    return out;
  }

  Decisions release(std::uint64_t now, ClientId id, std::uint64_t generation) override {
    advance(now);
    Decisions out;
    Client* c = find(id);
    if (c && c->granted && c->generation == generation) {
      if (c->dropped) {
        // Adaptive tail estimate (compute-limit GPU design §6 item 4): half old, half new.
        c->tail_estimate_ns = (c->tail_estimate_ns + c->tail_billed_ns) / 2;
      }
      c->granted = false;
      c->dropped = false;
      if (c->re_request) {
        c->re_request = false;
        enqueue(*c);
      }
    }
    evaluate(now, out);
    return out;
  }

  Decisions disconnect(std::uint64_t now, ClientId id) override {
    advance(now);
    if (Client* c = find(id)) {
      bucket_erase(*c);
      clients_.erase(id);
    }
    Decisions out;
    evaluate(now, out);
    return out;
  }

  Decisions tick(std::uint64_t now) override {
    advance(now);
    Decisions out;
    evaluate(now, out);
    return out;
  }

  Decisions set_limits(std::uint64_t now, ClientId id, const ClientLimits& limits) override {
    check_limits(limits);
    Client* c = find(id);
    if (!c) throw PolicyError("set_limits: unknown client " + std::to_string(id));
    advance(now);
    Decisions out;
    // Usage is kept (compute-limit GPU design §2.3): raising and lowering a limit
    // repeatedly must not clear what was used in this window.
    c->limits = limits;
    if (c->throttled && c->used_ns < quota_ns(*c)) c->throttled = false;
    if (limits.memory_bytes) out.list.push_back({DecisionKind::kMemoryLimit, id, 0, 0, limits.memory_bytes, 0});
    evaluate(now, out);
    return out;
  }

  Decisions set_quantum(std::uint64_t now, std::uint64_t quantum_ns) override {
    if (quantum_ns == 0) throw PolicyError("set_quantum: the quantum must be > 0 ns");
    advance(now);
    tq_ns_ = quantum_ns;
    fixed_quantum_ = true;
    fixed_quantum_ns_ = quantum_ns;
    Decisions out;
    evaluate(now, out);
    return out;
  }

  Decisions set_mode(std::uint64_t now, bool on) override {
    advance(now);
    mode_off_ = !on;
    on_ = on && f_.serialise;
    Decisions out;
    if (on_) {
      // Back to exclusive: keep the oldest holder of each GPU, drop the rest.
      for (GpuIndex g = 0; g < gpus_.size(); ++g) {
        const Client* keep = nullptr;
        for (Client* c : on_gpu(g))
          if (c->granted && (!keep || c->granted_at_ns < keep->granted_at_ns)) keep = c;
        for (Client* c : on_gpu(g))
          if (c->granted && !c->dropped && c != keep) drop(*c, now, out);
      }
    }
    evaluate(now, out);
    return out;
  }

  GpuIndex choose_gpu(std::uint64_t bytes) const override {
    Client probe;
    probe.allocated = bytes;
    return best_gpu(probe);
  }

  std::vector<ClientView> clients() const override {
    std::vector<ClientView> v;
    for (const auto& [id, c] : clients_) {
      v.push_back({id, c.gpu, c.granted, c.requesting, c.throttled, c.allocated, c.used_ns,
                   c.limits.compute_pct});
    }
    return v;
  }

 private:
  static void check_limits(const ClientLimits& l) {
    if (l.compute_pct < 1 || l.compute_pct > 100)
      throw PolicyError("compute limit " + std::to_string(l.compute_pct) +
                        " % is outside 1..100");
  }

  Client* find(ClientId id) {
    auto it = clients_.find(id);
    return it == clients_.end() ? nullptr : &it->second;
  }
  const Client* find(ClientId id) const {
    auto it = clients_.find(id);
    return it == clients_.end() ? nullptr : &it->second;
  }

  // Every client is in one bucket of buckets_: its GPU's, or the last one
  // while it has none; each bucket in id order, the order of clients_, so
  // a pass over one GPU's clients visits them as the filtered pass over
  // every client did (the same decisions in the same order), in
  // O(clients on that GPU) instead of O(clients) (1,000 clients of 8 GPUs:
  // the per-GPU passes were most of a simulated event).
  std::vector<Client*>& bucket(const Client& c) { return buckets_[c.gpu ? *c.gpu : gpus_.size()]; }
  void bucket_insert(Client& c) {
    auto& b = bucket(c);
    b.insert(std::lower_bound(b.begin(), b.end(), c.id, [](const Client* x, ClientId id) { return x->id < id; }), &c);
  }
  void bucket_erase(Client& c) {
    auto& b = bucket(c);
    b.erase(std::lower_bound(b.begin(), b.end(), c.id, [](const Client* x, ClientId id) { return x->id < id; }));
  }
  // GPU g's clients, in id order.
  std::span<Client* const> on_gpu(GpuIndex g) const { return {buckets_[g].data(), buckets_[g].size()}; }
  // The clients not placed yet, in id order.
  std::span<Client* const> unplaced() const { return on_gpu(gpus_.size()); }

  void enqueue(Client& c) {
    c.requesting = true;
    c.request_seq = ++seq_;
    c.told_wait = false;
    c.request_since_ns = last_ns_;
  }

  bool limited(const Client& c) const { return f_.compute_limit && c.limits.compute_pct < 100; }

  // Quota in the window: W x share / 100, where the share is the client's
  // cap when the limited clients on its GPU fit (caps sum <= 100), else its
  // max-min fair share under the caps (water-filling): each client gets at
  // most its cap, and what a small cap leaves is split evenly among the
  // others, so 25/50/75 -> 25/37.5/37.5. This replaces the compute-limit GPU design's
  // proportional scaling (25/50/75 -> 16.7/33.3/50), which gave the 25 %
  // client less than its cap although the seed defines the limit as a cap.
  // Shares are in units of 1/1000 % (integers: deterministic, no float).
  std::uint64_t quota_ns(const Client& c) const {
    const std::uint64_t w = cfg_.compute_window_ms * kNsPerMs;
    std::vector<std::uint64_t> caps;  // milli-percent, limited clients on c's GPU
    std::uint64_t sum = 0;
    const std::span<Client* const> same = c.gpu ? on_gpu(*c.gpu) : unplaced();
    for (const Client* o : same) {
      if (o->limits.compute_pct < 100) {
        caps.push_back(o->limits.compute_pct * 1000ull);
        sum += o->limits.compute_pct;
      }
    }
    const std::uint64_t mine = c.limits.compute_pct * 1000ull;
    if (sum <= 100) return w / 100 * c.limits.compute_pct;
    std::sort(caps.begin(), caps.end());
    std::uint64_t left = 100000, n = caps.size();
    std::uint64_t level = 0;
    for (std::uint64_t cap : caps) {
      level = left / n;
      if (cap >= level) break;   // every remaining client gets `level`
      left -= cap;               // a small cap is met in full
      --n;
      level = n ? left / n : 0;
    }
    const std::uint64_t share = std::min(mine, level);
    return w / 100000 * share;   // w/100000 first: no overflow for any window
  }

  // Compute-limited clients of one GPU hold it one at a time: billing wall
  // time / holders is exact only when co-runners really split the GPU
  // evenly, which a real GPU (time-sliced contexts, different queue depths)
  // does not do: with 25/50/75 co-running on the fake driver the 50 % client
  // took 57 % and the 75 % one 25 %. Exclusive slices make billed time the
  // time actually held, so a cap is a cap; the quotas sum to at most the
  // window (max-min fair under the caps), so nobody waits for capacity that
  // is not there. Unlimited clients are not affected.
  bool limited_busy(GpuIndex g, const Client& c) const {
    if (!limited(c)) return false;
    for (const Client* o : on_gpu(g))
      if (o != &c && o->granted && limited(*o)) return true;
    return false;
  }

  std::size_t holders(GpuIndex g) const {
    std::size_t n = 0;
    for (const Client* c : on_gpu(g)) n += c->granted;
    return n;
  }

  // Bills [last_ns_, to) to the holders of each GPU: wall time divided by
  // the number of holders; a dropped holder's tail at drop_tail_billing_pct.
  void accrue(std::uint64_t to) {
    if (to <= last_ns_) return;
    const std::uint64_t dt = to - last_ns_;
    // Per GPU, its holders, then their bills: a pass over each GPU's own
    // clients (every policy call advances time).
    for (GpuIndex g = 0; g < gpus_.size(); ++g) {
      const std::size_t n = holders(g);
      if (n == 0) continue;
      for (Client* c : on_gpu(g)) {
        if (!c->granted) continue;
        std::uint64_t share = dt / n;
        if (c->dropped) {
          share = share * cfg_.drop_tail_billing_pct / 100;
          c->tail_billed_ns += share;
        }
        c->used_ns += share;
      }
    }
    last_ns_ = to;
  }

  // Only limited clients have a quota to carry an overage against; the
  // others start every window at zero (O(limited x clients), not O(n^2)).
  void reset_window() {
    for (auto& [id, c] : clients_) {
      if (!limited(c)) {
        c.used_ns = 0;
        c.throttled = false;
        continue;
      }
      const std::uint64_t q = quota_ns(c);
      const std::uint64_t over = c.used_ns > q ? c.used_ns - q : 0;
      c.used_ns = over * cfg_.carryover_pct / 100;
      if (c.throttled && c.used_ns < q) c.throttled = false;
    }
  }

  void advance(std::uint64_t now) {
    if (now < last_ns_) now = last_ns_;
    if (!window_started_) {
      window_started_ = true;
      window_start_ns_ = now;
      last_ns_ = now;
    }
    const std::uint64_t w = cfg_.compute_window_ms * kNsPerMs;
    if (now >= window_start_ns_ + w) {
      accrue(window_start_ns_ + w);
      window_start_ns_ += w;
      reset_window();
      if (now >= window_start_ns_ + w) {
        // Idle for whole windows: nothing was billed in them.
        accrue(now);
        const std::uint64_t k = (now - window_start_ns_) / w;
        window_start_ns_ += k * w;
        reset_window();
      }
    }
    accrue(now);
  }

  void drop(Client& c, std::uint64_t now, Decisions& out) {
    c.dropped = true;
    c.drop_at_ns = now;
    c.tail_billed_ns = 0;
    out.list.push_back({DecisionKind::kDrop, c.id, *c.gpu, c.generation, 0, 0});
  }

  // Holders, memory they hold, and contexts on GPU g: the totals fits() and
  // context_admissible() need, computed once per evaluation and kept up to
  // date by the caller across its grants.
  struct GpuTotals {
    std::uint64_t holders = 0, held_bytes = 0, contexts = 0;
  };
  GpuTotals gpu_totals(GpuIndex g) const {
    GpuTotals t;
    for (const Client* o : on_gpu(g)) {
      if (o->granted) {
        ++t.holders;
        t.held_bytes += o->allocated;
      }
      if (o->has_context) ++t.contexts;
    }
    return t;
  }
  std::uint64_t ctx_bytes(GpuIndex g) const {
    return gpus_[g].context_overhead_bytes ? gpus_[g].context_overhead_bytes : cfg_.context_overhead_mb * kMiB;
  }

  // Context admission: a first grant creates the client's context on g; it
  // is given only if the contexts on g, this one included, plus the
  // client's own memory fit g's memory less the reserve, so that it can at
  // least run alone without its data thrashing against idle contexts
  // (context memory is never overcommitted; the importer refuses jobs that
  // do not fit an empty GPU, and on an empty GPU the first is admitted).
  // Only where the caller models context creation (GpuCapacity::
  // context_overhead_bytes set: the simulator creates a job's context at its
  // first grant); a live process has its context before it asks, so the
  // daemon (0) cannot refuse it.
  bool context_admissible(GpuIndex g, const Client& c) const {
    if (c.has_context || gpus_[g].context_overhead_bytes == 0) return true;
    std::uint64_t n = 0;
    for (const Client* o : on_gpu(g)) n += o->has_context;
    if (n == 0) return true;
    const std::uint64_t reserve = cfg_.memory_reserve_mb * kMiB;
    const std::uint64_t cap = gpus_[g].memory_bytes > reserve ? gpus_[g].memory_bytes - reserve : 0;
    return (n + 1) * ctx_bytes(g) + c.allocated <= cap;
  }

  std::uint64_t placed_bytes(GpuIndex g) const {
    std::uint64_t s = 0;
    for (const Client* c : on_gpu(g)) s += c->allocated;
    return s;
  }

  // Memory for data on g: capacity - reserve - the contexts that exist
  // there (a waiting client without a context takes no memory), plus
  // `extra`'s if it has none yet.
  std::uint64_t safe_limit(GpuIndex g, const Client* extra) const {
    std::uint64_t contexts = 0;
    for (const Client* c : on_gpu(g)) contexts += c->has_context;
    // `extra`, a registered client without a context on g, counts once
    // (choose_gpu()'s probe is not registered and does not)
    if (extra && find(extra->id) == extra && !(extra->has_context && extra->gpu == g)) ++contexts;
    const std::uint64_t reserve = cfg_.memory_reserve_mb * kMiB + ctx_bytes(g) * contexts;
    const std::uint64_t cap = gpus_[g].memory_bytes;
    return cap > reserve ? cap - reserve : 0;
  }

  std::uint64_t running_bytes(GpuIndex g) const {
    std::uint64_t s = 0;
    for (const Client* c : on_gpu(g))
      if (c->granted) s += c->allocated;
    return s;
  }

  // A client fits if nobody holds the GPU, or the holders plus itself stay
  // under the safe limit (memory-aware GPU design §8.3 with §10.1's limit).
  bool fits(GpuIndex g, const Client& c) const {
    if (holders(g) == 0) return true;
    return running_bytes(g) + c.allocated <= safe_limit(g, &c);
  }

  // Auto quantum: time to swap the running set out and `in` in at the GPU's
  // swap bandwidth, times the multiplier, clamped (memory-aware GPU design §8.2).
  std::uint64_t quantum_ns(GpuIndex g, const Client& in) const {
    if (fixed_quantum_) return fixed_quantum_ns_;
    const std::uint64_t bw = cfg_.swap_bandwidth_mb_per_s ? cfg_.swap_bandwidth_mb_per_s * kMiB
                                                          : gpus_[g].swap_bytes_per_s;
    const std::uint64_t bytes = running_bytes(g) + in.allocated;
    std::uint64_t swap_s = bw ? (bytes + bw - 1) / bw : cfg_.switch_time_max_s;
    std::uint64_t q_s = std::clamp(swap_s * cfg_.switch_time_multiplier, cfg_.switch_time_min_s,
                                   cfg_.switch_time_max_s);
    return q_s * kNsPerS;
  }

  // Placement at the first request (memory-aware GPU design, challenge 3), by
  // cfg_.placement (policy.h). "Fits" counts only under memory-aware; a
  // GPU whose contexts are full (context_admissible) is avoided when
  // another can take the client. Ties go to the lowest index.
  GpuIndex best_gpu(const Client& c) const {
    GpuIndex best = 0;
    std::uint64_t best_score = ~0ull;
    const bool pack = cfg_.placement == "pack";
    const bool first_fit = cfg_.placement == "first-fit";
    for (GpuIndex g = 0; g < gpus_.size(); ++g) {
      std::uint64_t n = 0;
      for (const Client* o : on_gpu(g)) n += o->granted || o->requesting;
      const std::uint64_t used = placed_bytes(g);
      const bool idle = n == 0;
      const bool fit = f_.memory_aware && !idle && running_bytes(g) + c.allocated <= safe_limit(g, &c);
      // Lower is better: class in the top bits, the tie-break below.
      constexpr std::uint64_t kTieMax = (std::uint64_t{1} << 56) - 1;
      const std::uint64_t used_mb = std::min<std::uint64_t>(used >> 20, kTieMax);
      std::uint64_t cls = 3, tie = n;
      if (first_fit) {
        if (idle || fit) {
          cls = 0;
          tie = g;
        }
      } else if (pack) {
        if (fit) {
          cls = 0;
          tie = kTieMax - used_mb;
        } else if (idle) {
          cls = 1;
          tie = 0;
        }
      } else {  // spread
        if (idle || fit) {
          cls = idle ? 0 : 1;
          tie = used_mb;
        }
      }
      if (!context_admissible(g, c)) cls += 4;
      const std::uint64_t score = cls << 56 | std::min<std::uint64_t>(tie, kTieMax);
      if (score < best_score) {
        best_score = score;
        best = g;
      }
    }
    return best;
  }

  void place(Client& c) {
    bucket_erase(c);
    c.gpu = best_gpu(c);
    bucket_insert(c);
  }

  void grant(Client& c, std::uint64_t now, Decisions& out) {
    if (c.told_wait) out.list.push_back({DecisionKind::kWake, c.id, *c.gpu, 0, 0, 0});
    // Everything the client has allocated, its first grant included: on a
    // real GPU a prefetch of pages nobody has touched creates them on the
    // GPU (180-242 GB/s on an H200) where the first kernel would fault them
    // in (10-16 GB/s; tests/gpu/um_rates.cu).
    if (f_.memory_aware && cfg_.prefetch_on_switch_in && c.allocated > 0) {
      out.list.push_back({DecisionKind::kPrefetch, c.id, *c.gpu, 0, c.allocated, 0});
    }
    c.requesting = false;
    c.told_wait = false;
    c.granted = true;
    c.has_context = true;
    c.dropped = false;
    c.generation = ++generation_;
    c.granted_at_ns = now;
    const std::uint64_t q = limited(c) ? cfg_.max_queued_work_ms * kNsPerMs : 0;
    out.list.push_back({DecisionKind::kGrant, c.id, *c.gpu, c.generation, 0, q});
  }

  // context_admissible(), telling the client once that it waits.
  bool admit(GpuIndex g, Client& c, Decisions& out) {
    if (context_admissible(g, c)) return true;
    if (!c.told_wait) {
      c.told_wait = true;
      out.list.push_back({DecisionKind::kWaitForMemory, c.id, g, 0, 0, 0});
    }
    return false;
  }

  // The waiting requests of every GPU, in waiters_ (by GPU, then FIFO),
  // with GPU g's in [waiters_at_[g], waiters_at_[g + 1]) (waiters()): one
  // pass over the clients instead of one per GPU. evaluate() takes them
  // before its GPU loop; what it does for GPU g (drops, grants) changes
  // only g's clients and never who requests, so a later GPU's list is the
  // one a fresh pass would give then.
  void all_waiters() {
    waiters_.clear();
    waiters_at_.assign(gpus_.size() + 1, 0);
    for (GpuIndex g = 0; g < gpus_.size(); ++g) {
      waiters_at_[g] = waiters_.size();
      for (Client* c : on_gpu(g))
        if (c->requesting) waiters_.push_back(c);
      std::sort(waiters_.begin() + static_cast<std::ptrdiff_t>(waiters_at_[g]), waiters_.end(),
                [](const Client* a, const Client* b) { return a->request_seq < b->request_seq; });
    }
    waiters_at_[gpus_.size()] = waiters_.size();
  }

  // Waiting requests on g in FIFO order, as all_waiters() took them.
  std::span<Client* const> waiters(GpuIndex g) const {
    return {waiters_.data() + waiters_at_[g], waiters_at_[g + 1] - waiters_at_[g]};
  }

  // memory-aware: after a holder grows, drop the newest holders (never the
  // last one) until the running set fits again.
  void shed_overflow(GpuIndex g, Decisions& out) {
    for (;;) {
      std::vector<Client*> h;
      for (Client* c : on_gpu(g))
        if (c->granted && !c->dropped) h.push_back(c);
      const std::uint64_t sum = running_bytes(g);
      if (h.size() <= 1 || sum <= safe_limit(g, nullptr)) return;
      Client* newest = *std::max_element(h.begin(), h.end(), [](const Client* a, const Client* b) {
        return a->granted_at_ns < b->granted_at_ns ||
               (a->granted_at_ns == b->granted_at_ns && a->generation < b->generation);
      });
      drop(*newest, last_ns_, out);
    }
  }

  void evaluate(std::uint64_t now, Decisions& out) {
    const bool off = mode_off_ || (!f_.memory_aware && !f_.serialise) || (f_.serialise && !on_);
    std::optional<std::uint64_t> next;
    auto want = [&next](std::uint64_t t) { next = next ? std::min(*next, t) : t; };

    // Placement of new requests, in id order (place() moves each out of
    // the unplaced bucket).
    placing_.assign(unplaced().begin(), unplaced().end());
    for (Client* c : placing_)
      if (c->requesting) place(*c);

    // 1. Compute quota: targeted throttling of the over-quota client only.
    if (f_.compute_limit) {
      for (auto& [id, c] : clients_) {
        if (!limited(c)) continue;
        const std::uint64_t q = quota_ns(c);
        if (c.used_ns >= q) c.throttled = true;
        if (c.granted && !c.dropped && c.used_ns + c.tail_estimate_ns >= q) {
          c.throttled = true;
          drop(c, now, out);
        }
      }
    }

    all_waiters();
    // Whether step 4 can want a timer: a quantum, or a compute limit.
    const bool timers = (on_ && !mode_off_) || f_.compute_limit;
    for (GpuIndex g = 0; g < gpus_.size(); ++g) {
      // 2. Time quantum.
      if (on_ && !mode_off_) {
        for (Client* c : on_gpu(g)) {
          if (!c->granted || c->dropped) continue;
          // nvshare: DROP at TQ even when nobody waits.
          if (now >= c->granted_at_ns + tq_ns_) drop(*c, now, out);
        }
      }
      if (f_.memory_aware && !mode_off_) forced_switch(g, now, out, want);

      // 3. Grants. Limited clients on a GPU run one at a time (see
      // limited_busy()); the others as the policy says.
      const std::span<Client* const> w = waiters(g);
      bool granted_here = false;  // memory-aware granted on g in this step
      if (off) {
        for (Client* c : w)
          if (!c->throttled && !limited_busy(g, *c) && admit(g, *c, out)) grant(*c, now, out);
      } else if (f_.serialise) {
        if (holders(g) == 0) {
          for (Client* c : w) {
            if (c->throttled || !admit(g, *c, out)) continue;
            grant(*c, now, out);
            break;
          }
        }
      } else {  // memory-aware
        bool blocked = false;  // the oldest waiter has starved: no backfill
        // fits() and context_admissible() with the GPU's totals computed
        // once and kept up to date across grants (O(waiters), not
        // O(waiters x clients) per event).
        auto [nh, run, nctx] = gpu_totals(g);
        const std::uint64_t cap = gpus_[g].memory_bytes, cb = ctx_bytes(g);
        const std::uint64_t reserve = cfg_.memory_reserve_mb * kMiB;
        auto fits_now = [&](const Client& c) {
          if (nh == 0) return true;
          const std::uint64_t r = reserve + cb * (nctx + (c.has_context ? 0 : 1));
          return run + c.allocated <= (cap > r ? cap - r : 0);
        };
        auto admissible_now = [&](const Client& c) {
          if (c.has_context || nctx == 0 || gpus_[g].context_overhead_bytes == 0) return true;
          const std::uint64_t room = cap > reserve ? cap - reserve : 0;
          return (nctx + 1) * cb + c.allocated <= room;
        };
        for (Client* c : w) {
          if (c->throttled) continue;
          if (fits_now(*c)) {
            if (blocked || limited_busy(g, *c)) continue;
            if (!admissible_now(*c)) {
              (void)admit(g, *c, out);  // tells it to wait, once
              continue;
            }
            const bool fresh = !c->has_context;
            grant(*c, now, out);
            granted_here = true;
            ++nh;
            run += c->allocated;
            if (fresh) ++nctx;
            continue;
          }
          if (!c->told_wait) {
            c->told_wait = true;
            out.list.push_back({DecisionKind::kWaitForMemory, c->id, g, 0, 0, 0});
          }
          const std::uint64_t bound = cfg_.max_wait_s * kNsPerS;
          if (now >= c->request_since_ns + bound) blocked = true;
        }
        // The new holders' turn ends while a waiter does not fit beside
        // them: the forced switch of step 2 ran before them and found the
        // GPU free, so it is taken again for its timer. Without it nothing
        // calls the policy until a holder leaves: on the whole Tiresias
        // trace each job granted on a GPU whose contexts were then full
        // ran to its end while the started ones waited (JCT p99 = the
        // makespan on one GPU).
        if (granted_here && !mode_off_) forced_switch(g, now, out, want);
      }

      // 4. Timers.
      if (timers) want_timers(g, now, want);
    }
    if (f_.compute_limit) {
      bool any = false;
      for (const auto& [id, c] : clients_) any = any || limited(c);
      if (any) want(window_start_ns_ + cfg_.compute_window_ms * kNsPerMs);
    }
    if (next && *next <= now) next = now + 1;
    out.next_tick_ns = next;
  }

  // evaluate()'s step 4 for GPU g: each holder's quantum end, and when a
  // limited holder's quota runs out at the GPU's current sharing.
  template <typename Want>
  void want_timers(GpuIndex g, std::uint64_t now, Want& want) const {
    for (const Client* c : on_gpu(g)) {
      if (!c->granted || c->dropped) continue;
      if (on_ && !mode_off_) want(c->granted_at_ns + tq_ns_);
      if (limited(*c)) {
        const std::uint64_t q = quota_ns(*c);
        const std::uint64_t used = c->used_ns + c->tail_estimate_ns;
        if (used < q) want(now + (q - used) * holders(g));
      }
    }
  }

  // Forced switch (memory-aware GPU design §3, fixed): when the oldest waiter does
  // not fit, holders whose quantum has run out are dropped, oldest first,
  // until it would fit; a waiter past max_wait_s forces it at once.
  template <typename Want>
  void forced_switch(GpuIndex g, std::uint64_t now, Decisions& out, Want& want) {
    Client* head = nullptr;
    // fits() / context_admissible() on cached totals (see evaluate()).
    auto [nh, run, nctx] = gpu_totals(g);
    const std::uint64_t cap = gpus_[g].memory_bytes, cb = ctx_bytes(g);
    const std::uint64_t reserve = cfg_.memory_reserve_mb * kMiB;
    for (Client* c : waiters(g)) {
      if (c->throttled || !c->requesting) continue;  // granted by step 3 since all_waiters()
      if (nh == 0) continue;  // fits: nobody holds the GPU
      const std::uint64_t r = reserve + cb * (nctx + (c->has_context ? 0 : 1));
      if (run + c->allocated <= (cap > r ? cap - r : 0)) continue;  // fits
      // A client whose context cannot be admitted would not run even if
      // the holders left (contexts are freed only when clients exit).
      const std::uint64_t room = cap > reserve ? cap - reserve : 0;
      if (!c->has_context && nctx != 0 && gpus_[g].context_overhead_bytes != 0 &&
          (nctx + 1) * cb + c->allocated > room)
        continue;
      head = c;
      break;
    }
    if (!head) return;
    const std::uint64_t q = quantum_ns(g, *head);
    const bool starving = now >= head->request_since_ns + cfg_.max_wait_s * kNsPerS;
    if (!starving) want(head->request_since_ns + cfg_.max_wait_s * kNsPerS);
    std::vector<Client*> h;
    for (Client* c : on_gpu(g))
      if (c->granted && !c->dropped) h.push_back(c);
    std::sort(h.begin(), h.end(), [](const Client* a, const Client* b) {
      return a->granted_at_ns < b->granted_at_ns ||
             (a->granted_at_ns == b->granted_at_ns && a->generation < b->generation);
    });
    // The quantum is GPU time: n holders share the GPU, so each keeps its
    // place for n quanta of wall time (about one quantum of GPU time each).
    // Otherwise co-location would multiply the switch rate, and the bytes
    // moved over PCIe, by n (measured: 3x nvshare's bytes on the Tiresias
    // trace with 3 co-located jobs per GPU).
    const std::uint64_t qw = q * std::max<std::uint64_t>(1, h.size());
    // Memory that stays on the GPU if we drop nobody else.
    std::uint64_t staying = 0;
    for (Client* c : h) staying += c->allocated;
    const std::uint64_t limit = safe_limit(g, head);
    // A starving waiter cuts the holders' turn short, to the minimum
    // quantum: a holder granted a moment ago keeps the GPU that long, or a
    // switch forced at once would drop it before it ran anything, and with
    // every waiter past max_wait_s (a long queue) every grant would be
    // taken back at once: on the whole Tiresias trace short jobs were
    // granted 8 times per kernel they ran and waited years.
    const std::uint64_t turn = starving ? cfg_.switch_time_min_s * kNsPerS : qw;
    for (Client* c : h) {
      if (staying + head->allocated <= limit) break;
      if (now >= c->granted_at_ns + turn) {
        drop(*c, now, out);
        staying -= c->allocated;
      } else {
        want(c->granted_at_ns + turn);
        break;
      }
    }
  }

  std::string name_;
  Features f_;
  config::GpuConfig cfg_;
  std::vector<GpuCapacity> gpus_;
  std::map<ClientId, Client> clients_;  // node-based: the buckets' pointers stay valid
  std::vector<std::vector<Client*>> buckets_;  // by GPU, then the unplaced (bucket())
  // scratch of evaluate() (all_waiters(), the placement pass), kept to reuse their memory
  std::vector<Client*> placing_;
  std::vector<Client*> waiters_;
  std::vector<std::size_t> waiters_at_;
  std::uint64_t tq_ns_ = 0;
  bool on_ = false;
  bool mode_off_ = false;
  bool fixed_quantum_ = false;
  std::uint64_t fixed_quantum_ns_ = 0;
  std::uint64_t generation_ = 0;
  std::uint64_t seq_ = 0;
  std::uint64_t last_ns_ = 0;
  bool window_started_ = false;
  std::uint64_t window_start_ns_ = 0;
};

}  // namespace

std::vector<std::string> gpu_policy_kinds() {
  return {"none", "nvshare", "memory-aware", "compute-limit", "memory-aware+compute-limit"};
}

std::unique_ptr<GpuPolicy> make_gpu_policy(const std::string& kind, const config::GpuConfig& config,
                                           const std::vector<GpuCapacity>& gpus) {
  if (gpus.empty()) throw PolicyError("GPU policy '" + kind + "': no GPUs given");
  for (std::size_t i = 0; i < gpus.size(); ++i)
    if (gpus[i].memory_bytes == 0)
      throw PolicyError("GPU policy '" + kind + "': GPU " + std::to_string(i) + " has no memory");
  Features f;
  if (kind == "none") {
    f.serialise = true;
    config::GpuConfig off = config;
    off.scheduler_on = false;
    return std::make_unique<Policy>(kind, f, off, gpus);
  }
  if (kind == "nvshare") {
    f.serialise = true;
  } else if (kind == "memory-aware") {
    f.memory_aware = true;
  } else if (kind == "compute-limit") {
    f.compute_limit = true;
  } else if (kind == "memory-aware+compute-limit") {
    f.memory_aware = true;
    f.compute_limit = true;
  } else {
    throw PolicyError("unknown GPU policy '" + kind +
                      "' (expected none, nvshare, memory-aware, compute-limit or "
                      "memory-aware+compute-limit)");
  }
  return std::make_unique<Policy>(kind, f, config, gpus);
}

}  // namespace agentcg::gpu
