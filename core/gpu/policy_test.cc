// SPDX-License-Identifier: GPL-2.0-only
// Unit tests of the core GPU policies (core/gpu/policy.cc) driven by events
// alone: nvshare's DROP at TQ and round robin, memory-aware admission, the
// forced switch at the quantum, prefetch on switch-in, placement, the
// starvation bound, compute-limit throttling, limit changes that keep
// usage, and bad input.
#include "agentcg/gpu/policy.h"

#include <gtest/gtest.h>

#include <set>

#include "agentcg/gpu/gpu_config.h"

namespace agentcg::gpu {
namespace {

constexpr std::uint64_t kS = 1000000000ull;
constexpr std::uint64_t kGiB = 1ull << 30;

std::vector<Decision> of(const Decisions& d, DecisionKind k) {
  std::vector<Decision> v;
  for (const auto& x : d.list)
    if (x.kind == k) v.push_back(x);
  return v;
}

std::unique_ptr<GpuPolicy> make(const std::string& kind, config::GpuConfig cfg = {},
                                std::size_t gpus = 1, std::uint64_t mem = 16 * kGiB) {
  std::vector<GpuCapacity> caps(gpus, GpuCapacity{mem, 5000000000ull});
  return make_gpu_policy(kind, cfg, caps);
}

TEST(NvsharePolicy, LoneClientGetsDropEveryQuantum) {
  auto p = make("nvshare");
  (void)p->register_client(0, 1, 0, {});
  auto d = p->lock_request(0, 1);
  auto g = of(d, DecisionKind::kGrant);
  ASSERT_EQ(g.size(), 1u);
  ASSERT_TRUE(d.next_tick_ns);
  EXPECT_EQ(*d.next_tick_ns, 30 * kS);
  d = p->tick(30 * kS);
  auto drops = of(d, DecisionKind::kDrop);
  ASSERT_EQ(drops.size(), 1u);  // even though nobody waits
  EXPECT_EQ(drops[0].generation, g[0].generation);
  (void)p->lock_request(30 * kS + 1, 1);           // asks again while draining
  d = p->release(30 * kS + 2, 1, g[0].generation);
  auto g2 = of(d, DecisionKind::kGrant);
  ASSERT_EQ(g2.size(), 1u);
  EXPECT_GT(g2[0].generation, g[0].generation);
  EXPECT_EQ(*d.next_tick_ns, 60 * kS + 2);
}

TEST(NvsharePolicy, FcfsRoundRobinAndStaleRelease) {
  auto p = make("nvshare");
  for (ClientId c : {1, 2}) (void)p->register_client(0, c, 0, {});
  auto ga = of(p->lock_request(0, 1), DecisionKind::kGrant);
  EXPECT_TRUE(of(p->lock_request(1, 2), DecisionKind::kGrant).empty());
  ASSERT_EQ(of(p->tick(30 * kS), DecisionKind::kDrop).size(), 1u);
  EXPECT_TRUE(p->release(30 * kS, 1, ga[0].generation + 100).list.empty());  // stale
  auto d = p->release(30 * kS, 1, ga[0].generation);
  auto gb = of(d, DecisionKind::kGrant);
  ASSERT_EQ(gb.size(), 1u);
  EXPECT_EQ(gb[0].client, 2u);
  // A asks again: it queues behind B.
  EXPECT_TRUE(of(p->lock_request(30 * kS, 1), DecisionKind::kGrant).empty());
  // Disconnect counts as a release.
  auto d2 = p->disconnect(31 * kS, 2);
  ASSERT_EQ(of(d2, DecisionKind::kGrant).size(), 1u);
  EXPECT_EQ(of(d2, DecisionKind::kGrant)[0].client, 1u);
}

TEST(NvsharePolicy, OffModeGrantsEveryoneAndQuantumChanges) {
  auto p = make("none");
  for (ClientId c : {1, 2, 3}) {
    (void)p->register_client(0, c, 0, {});
    EXPECT_EQ(of(p->lock_request(0, c), DecisionKind::kGrant).size(), 1u);
  }
  auto n = make("nvshare");
  (void)n->register_client(0, 1, 0, {});
  (void)n->lock_request(0, 1);
  auto d = n->set_quantum(1 * kS, 5 * kS);
  EXPECT_EQ(*d.next_tick_ns, 5 * kS);
  EXPECT_THROW((void)n->set_quantum(1, 0), PolicyError);
}

TEST(MemoryAwarePolicy, WaitsWhenItDoesNotFitAndForcedSwitchFiresAtQuantum) {
  config::GpuConfig cfg;
  cfg.switch_time_mode = "fixed";
  cfg.switch_time_fixed_s = 20;
  auto p = make("memory-aware", cfg);
  for (ClientId c : {1, 2}) {
    (void)p->register_client(0, c, 0, {});
    (void)p->memory_update(0, c, 12 * kGiB);
  }
  auto ga = of(p->lock_request(0, 1), DecisionKind::kGrant);
  ASSERT_EQ(ga.size(), 1u);
  auto d = p->lock_request(1 * kS, 2);
  EXPECT_EQ(of(d, DecisionKind::kWaitForMemory).size(), 1u);
  ASSERT_TRUE(d.next_tick_ns);
  EXPECT_EQ(*d.next_tick_ns, 20 * kS);  // the forced switch is a real deadline
  EXPECT_TRUE(of(p->tick(19 * kS), DecisionKind::kDrop).empty());
  auto drop = of(p->tick(20 * kS), DecisionKind::kDrop);
  ASSERT_EQ(drop.size(), 1u);
  EXPECT_EQ(drop[0].client, 1u);
  (void)p->lock_request(20 * kS, 1);
  d = p->release(21 * kS, 1, ga[0].generation);
  EXPECT_EQ(of(d, DecisionKind::kWake).size(), 1u);
  ASSERT_EQ(of(d, DecisionKind::kGrant).size(), 1u);
  EXPECT_EQ(of(d, DecisionKind::kGrant)[0].client, 2u);
  // B never ran: its pages are created on the GPU by the prefetch.
  auto pf_b = of(d, DecisionKind::kPrefetch);
  ASSERT_EQ(pf_b.size(), 1u);
  EXPECT_EQ(pf_b[0].client, 2u);
  EXPECT_EQ(pf_b[0].bytes, 12 * kGiB);
  // B's quantum ends; A comes back with a prefetch of what it allocated.
  (void)of(p->tick(41 * kS), DecisionKind::kDrop);
  d = p->release(41 * kS, 2, of(d, DecisionKind::kGrant)[0].generation);
  auto pf = of(d, DecisionKind::kPrefetch);
  ASSERT_EQ(pf.size(), 1u);
  EXPECT_EQ(pf[0].client, 1u);
  EXPECT_EQ(pf[0].bytes, 12 * kGiB);
}

TEST(MemoryAwarePolicy, LoneClientIsNotDropped) {
  auto p = make("memory-aware");
  (void)p->register_client(0, 1, 0, {});
  (void)p->memory_update(0, 1, 12 * kGiB);
  (void)p->lock_request(0, 1);
  EXPECT_TRUE(of(p->tick(1000 * kS), DecisionKind::kDrop).empty());
}

TEST(MemoryAwarePolicy, ColocatesWhatFitsAndSwitchesOnMemoryRelease) {
  auto p = make("memory-aware");
  for (ClientId c : {1, 2, 3}) {
    (void)p->register_client(0, c, 0, {});
    (void)p->memory_update(0, c, c == 3 ? 10 * kGiB : 3 * kGiB);
  }
  EXPECT_EQ(of(p->lock_request(0, 1), DecisionKind::kGrant).size(), 1u);
  EXPECT_EQ(of(p->lock_request(0, 2), DecisionKind::kGrant).size(), 1u);
  // 3 + 3 + 10 GiB > 16 GiB - 500 MiB - 3 x 300 MiB: waits.
  EXPECT_EQ(of(p->lock_request(0, 3), DecisionKind::kWaitForMemory).size(), 1u);
  // Client 2 frees its memory: 3 now fits without waiting for a quantum.
  auto d = p->memory_update(2 * kS, 2, 0);
  ASSERT_EQ(of(d, DecisionKind::kGrant).size(), 1u);
  EXPECT_EQ(of(d, DecisionKind::kGrant)[0].client, 3u);
}

TEST(MemoryAwarePolicy, AutoQuantumFromSwapTime) {
  // 20 + 20 GiB at 5 GB/s = 8.6 s -> 9 s x 5 = 45 s (32 GiB GPU).
  auto p = make("memory-aware", {}, 1, 32 * kGiB);
  for (ClientId c : {1, 2}) {
    (void)p->register_client(0, c, 0, {});
    (void)p->memory_update(0, c, 20 * kGiB);
  }
  (void)p->lock_request(0, 1);
  auto d = p->lock_request(0, 2);
  EXPECT_EQ(*d.next_tick_ns, 45 * kS);
  // Small sets clamp to the minimum: 30 s by default (nvshare's TQ, so a
  // forced switch never comes sooner than nvshare's would), or as set
  // (3 GiB: both contexts are admitted, the two sets do not fit together).
  for (std::uint64_t min_s : {30, 10}) {
    config::GpuConfig cfg;
    cfg.switch_time_min_s = min_s;
    auto q = make("memory-aware", cfg, 1, 3 * kGiB);
    for (ClientId c : {1, 2}) {
      (void)q->register_client(0, c, 0, {});
      (void)q->memory_update(0, c, 1 * kGiB);
    }
    (void)q->lock_request(0, 1);
    EXPECT_EQ(*q->lock_request(0, 2).next_tick_ns, min_s * kS);
  }
}

TEST(MemoryAwarePolicy, PlacementPrefersIdleGpu) {
  auto p = make("memory-aware", {}, 2);
  for (ClientId c : {1, 2}) {
    (void)p->register_client(0, c, std::nullopt, {});
    (void)p->memory_update(0, c, 12 * kGiB);
  }
  auto a = of(p->lock_request(0, 1), DecisionKind::kGrant);
  auto b = of(p->lock_request(0, 2), DecisionKind::kGrant);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_NE(a[0].gpu, b[0].gpu);
}

TEST(MemoryAwarePolicy, StarvationBoundStopsBackfill) {
  config::GpuConfig cfg;
  cfg.max_wait_s = 50;
  cfg.switch_time_mode = "fixed";
  cfg.switch_time_fixed_s = 1000;  // the quantum alone would starve the big one
  auto p = make("memory-aware", cfg);
  (void)p->register_client(0, 1, 0, {});
  (void)p->memory_update(0, 1, 4 * kGiB);
  (void)p->register_client(0, 2, 0, {});
  (void)p->memory_update(0, 2, 14 * kGiB);
  (void)p->register_client(0, 3, 0, {});
  (void)p->memory_update(0, 3, 4 * kGiB);
  auto g1 = of(p->lock_request(0, 1), DecisionKind::kGrant);
  (void)p->lock_request(1, 2);  // big one waits
  // Small ones may backfill before the bound...
  auto g3 = of(p->lock_request(2, 3), DecisionKind::kGrant);
  ASSERT_EQ(g3.size(), 1u);
  // ...at the bound, the running set is switched out although its quantum is not over.
  auto d = p->tick(50 * kS + 1);
  EXPECT_EQ(of(d, DecisionKind::kDrop).size(), 2u);
  (void)p->release(51 * kS, 1, g1[0].generation);
  (void)p->lock_request(51 * kS, 1);  // wants back in: must not jump the starving one
  d = p->release(52 * kS, 3, g3[0].generation);
  auto g = of(d, DecisionKind::kGrant);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].client, 2u);
}

// Three memory-aware clients of 12 GiB on a 16 GiB GPU (no two fit
// together): 1 granted at 0, 2 asking at 1 s, 3 at `third_at`; then 1,
// dropped at `drop_at`, releases a second later and 2 is granted.
struct ThreeThatDoNotFitTogether {
  std::unique_ptr<GpuPolicy> p;
  Decisions at_release;  // the decisions of 1's release
  ThreeThatDoNotFitTogether(const config::GpuConfig& cfg, std::uint64_t third_at, std::uint64_t drop_at)
      : p(make("memory-aware", cfg)) {
    for (ClientId c : {1, 2, 3}) {
      (void)p->register_client(0, c, 0, {});
      (void)p->memory_update(0, c, 12 * kGiB);
    }
    auto g1 = of(p->lock_request(0, 1), DecisionKind::kGrant);
    EXPECT_EQ(g1.size(), 1u);
    (void)p->lock_request(1 * kS, 2);
    (void)p->lock_request(third_at, 3);
    EXPECT_EQ(of(p->tick(drop_at), DecisionKind::kDrop).size(), 1u);
    at_release = p->release(drop_at + kS, 1, g1.empty() ? 0 : g1[0].generation);
    auto g2 = of(at_release, DecisionKind::kGrant);
    EXPECT_EQ(g2.size(), 1u);
    if (!g2.empty()) {
      EXPECT_EQ(g2[0].client, 2u);
    }
  }
};

// A client granted when the GPU frees up gets the quantum, not the GPU
// until it leaves: a waiter that does not fit beside it arms the forced
// switch at its quantum's end. The forced switch used to run only before
// the grants, with the GPU free, and nothing else called the policy: a job
// granted so ran to its end (the whole Tiresias trace on one GPU: JCT p99
// = the makespan).
TEST(MemoryAwarePolicy, AClientGrantedWhenTheGpuFreesUpHasAQuantumNotTheGpu) {
  config::GpuConfig cfg;
  cfg.switch_time_mode = "fixed";
  cfg.switch_time_fixed_s = 60;
  ThreeThatDoNotFitTogether t(cfg, 10 * kS, 60 * kS);  // 1 is done for now: it does not ask again
  ASSERT_TRUE(t.at_release.next_tick_ns);  // 3 waits: 2's quantum ends at 121 s
  EXPECT_EQ(*t.at_release.next_tick_ns, 121 * kS);
  auto drops = of(t.p->tick(121 * kS), DecisionKind::kDrop);
  ASSERT_EQ(drops.size(), 1u);
  EXPECT_EQ(drops[0].client, 2u);
}

// A starving waiter shortens the holders' turn to the minimum quantum
// (switch_time_min_s, 30 s), not to nothing: a client granted a moment ago
// keeps the GPU that long. Dropping it at once took every grant back while
// a long queue was past max_wait_s (the whole Tiresias trace: 8 grants per
// kernel run, JCT p99 1.9x nvshare's).
TEST(MemoryAwarePolicy, AStarvingWaiterLetsAFreshHolderRunItsMinimumQuantum) {
  config::GpuConfig cfg;
  cfg.max_wait_s = 50;
  cfg.switch_time_mode = "fixed";
  cfg.switch_time_fixed_s = 1000;
  ThreeThatDoNotFitTogether t(cfg, 2 * kS, 51 * kS);  // at 51 s 2 starves: 1 has held 51 s
  auto& p = t.p;
  // 3 has waited 50 s too, and does not fit beside 2: 2 keeps the GPU for 30 s
  auto d = p->tick(53 * kS);
  EXPECT_TRUE(of(d, DecisionKind::kDrop).empty());
  ASSERT_TRUE(d.next_tick_ns);
  EXPECT_EQ(*d.next_tick_ns, 82 * kS);
  d = p->tick(82 * kS);
  auto drops = of(d, DecisionKind::kDrop);
  ASSERT_EQ(drops.size(), 1u);
  EXPECT_EQ(drops[0].client, 2u);
}

TEST(ComputeLimitPolicy, ThrottlesOnlyTheOverQuotaClientAndBoundsQueuedWork) {
  auto p = make("compute-limit");
  (void)p->register_client(0, 1, 0, {25, 0});
  (void)p->register_client(0, 2, 0, {100, 0});
  auto g1 = of(p->lock_request(0, 1), DecisionKind::kGrant);
  auto g2 = of(p->lock_request(0, 2), DecisionKind::kGrant);
  ASSERT_EQ(g1.size(), 1u);
  ASSERT_EQ(g2.size(), 1u);
  EXPECT_EQ(g1[0].max_queued_ns, 20000000u);
  EXPECT_EQ(g2[0].max_queued_ns, 0u);
  // Two holders: client 1 is billed half the wall time; 2.5 s quota -> 5 s.
  auto d = p->tick(4 * kS);
  EXPECT_TRUE(of(d, DecisionKind::kDrop).empty());
  EXPECT_EQ(*d.next_tick_ns, 5 * kS);
  d = p->tick(5 * kS);
  auto drops = of(d, DecisionKind::kDrop);
  ASSERT_EQ(drops.size(), 1u);
  EXPECT_EQ(drops[0].client, 1u);
  (void)p->lock_request(5 * kS, 1);
  d = p->release(5 * kS, 1, g1[0].generation);
  EXPECT_TRUE(of(d, DecisionKind::kGrant).empty());  // throttled until the window ends
  d = p->tick(10 * kS);
  auto g = of(d, DecisionKind::kGrant);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].client, 1u);
}

TEST(ComputeLimitPolicy, RaisedLimitKeepsUsageAndTakesEffectAtOnce) {
  auto p = make("compute-limit");
  (void)p->register_client(0, 1, 0, {25, 0});
  auto g = of(p->lock_request(0, 1), DecisionKind::kGrant);
  ASSERT_EQ(of(p->tick(2500000000ull), DecisionKind::kDrop).size(), 1u);
  (void)p->lock_request(2500000000ull, 1);
  (void)p->release(2500000000ull, 1, g[0].generation);
  // Raised to 50 % at 4 s: 2.5 s used stays; 2.5 s more are allowed.
  auto d = p->set_limits(4 * kS, 1, {50, 0});
  auto g2 = of(d, DecisionKind::kGrant);
  ASSERT_EQ(g2.size(), 1u);
  EXPECT_EQ(p->clients()[0].window_used_ns, 2500000000ull);
  EXPECT_EQ(*d.next_tick_ns, 6500000000ull);
  // Lowering it again does not reset usage either.
  d = p->set_limits(5 * kS, 1, {25, 0});
  EXPECT_EQ(of(d, DecisionKind::kDrop).size(), 1u);
  EXPECT_EQ(p->clients()[0].window_used_ns, 3500000000ull);
}

// 25/50/75 on one GPU: max-min fair under the caps -> 25/37.5/37.5 % of
// the 10 s window (quota 2.5 / 3.75 / 3.75 s), not scaled to 16.7/33/50.
TEST(ComputeLimitPolicy, LimitsAboveHundredAreMaxMinFairUnderTheCaps) {
  for (ClientId alone : {1u, 2u, 3u}) {
    auto p = make("compute-limit");
    (void)p->register_client(0, 1, 0, {25, 0});
    (void)p->register_client(0, 2, 0, {50, 0});
    (void)p->register_client(0, 3, 0, {75, 0});
    auto d = p->lock_request(0, alone);
    ASSERT_TRUE(d.next_tick_ns);
    EXPECT_EQ(*d.next_tick_ns, alone == 1 ? 2500000000ull : 3750000000ull) << alone;
  }
  // 10/20/90/90: 10 and 20 are met in full, 90 and 90 split the other 70.
  auto p = make("compute-limit");
  (void)p->register_client(0, 1, 0, {10, 0});
  (void)p->register_client(0, 2, 0, {20, 0});
  (void)p->register_client(0, 3, 0, {90, 0});
  (void)p->register_client(0, 4, 0, {90, 0});
  EXPECT_EQ(*p->lock_request(0, 1).next_tick_ns, 1 * kS);
  (void)p->disconnect(0, 1);
  // Without the 10 % client: 20 + 40 + 40.
  EXPECT_EQ(*p->lock_request(0, 4).next_tick_ns, 4 * kS);
}

TEST(ComputeLimitPolicy, LimitsAboveHundredAreScaled) {
  auto p = make("compute-limit");
  (void)p->register_client(0, 1, 0, {80, 0});
  (void)p->register_client(0, 2, 0, {80, 0});
  (void)p->lock_request(0, 1);
  // Alone for now: quota 10 s x 80 / 160 = 5 s.
  auto d = p->tick(1);
  EXPECT_EQ(*d.next_tick_ns, 5 * kS);
}

// Context memory is admitted, never overcommitted: a 4 GiB GPU with 1 GiB
// contexts takes three 1 GiB clients (3 x 1 + 1 = 4); the fourth waits
// (told so once) until a context is freed.
TEST(GpuAdmission, ContextsBeyondCapacityWait) {
  config::GpuConfig cfg;
  cfg.memory_reserve_mb = 0;
  for (const char* kind : {"none", "nvshare", "memory-aware"}) {
    auto p = make_gpu_policy(kind, cfg, {GpuCapacity{4 * kGiB, 5000000000ull, 1 * kGiB}});
    std::vector<Decision> grants, waits;
    for (ClientId id = 1; id <= 4; ++id) {
      (void)p->register_client(0, id, 0, {});
      (void)p->memory_update(0, id, kGiB / 2);
    }
    auto collect = [&](const Decisions& d) {
      for (auto g : of(d, DecisionKind::kGrant)) grants.push_back(g);
      for (auto w : of(d, DecisionKind::kWaitForMemory)) waits.push_back(w);
    };
    // Each takes the GPU once (serialising policies hand it on at release).
    for (ClientId id = 1; id <= 4; ++id) collect(p->lock_request(0, id));
    for (int round = 0; round < 4; ++round) {
      auto held = grants;
      for (const auto& g : held) collect(p->release(1, g.client, g.generation));
    }
    std::set<ClientId> ran;
    for (const auto& g : grants) ran.insert(g.client);
    EXPECT_EQ(ran, (std::set<ClientId>{1, 2, 3})) << kind;
    ASSERT_FALSE(waits.empty()) << kind;
    EXPECT_EQ(waits.back().client, 4u) << kind;
    collect(p->disconnect(2, 1));
    for (const auto& g : grants) ran.insert(g.client);
    EXPECT_TRUE(ran.count(4)) << kind << ": a freed context did not admit the waiting client";
  }
}

// Placement at the first request on 3 GPUs: GPU 0 runs 4 GiB, GPU 1 runs
// 8 GiB, GPU 2 is idle. spread -> the idle GPU; pack -> the fullest it
// fits on; first-fit -> the lowest it fits on.
TEST(GpuPlacement, SpreadPackFirstFit) {
  for (const auto& [placement, want] : std::vector<std::pair<std::string, GpuIndex>>{
           {"spread", 2}, {"pack", 1}, {"first-fit", 0}}) {
    config::GpuConfig cfg;
    cfg.placement = placement;
    auto p = make("memory-aware", cfg, 3);
    (void)p->register_client(0, 1, 0, {});
    (void)p->memory_update(0, 1, 4 * kGiB);
    (void)p->register_client(0, 2, 1, {});
    (void)p->memory_update(0, 2, 8 * kGiB);
    (void)p->lock_request(0, 1);
    (void)p->lock_request(0, 2);
    (void)p->register_client(0, 3, std::nullopt, {});
    (void)p->memory_update(0, 3, 2 * kGiB);
    auto g = of(p->lock_request(1, 3), DecisionKind::kGrant);
    ASSERT_EQ(g.size(), 1u) << placement;
    EXPECT_EQ(g[0].gpu, want) << placement;
  }
}

TEST(GpuPolicyErrors, BadInput) {
  EXPECT_THROW(make("fair-share"), PolicyError);
  EXPECT_THROW(make_gpu_policy("nvshare", {}, {}), PolicyError);
  auto p = make("compute-limit");
  EXPECT_THROW((void)p->register_client(0, 1, 0, {0, 0}), PolicyError);
  EXPECT_THROW((void)p->register_client(0, 1, 0, {101, 0}), PolicyError);
  EXPECT_THROW((void)p->register_client(0, 1, 3, {}), PolicyError);
  EXPECT_THROW((void)p->set_limits(0, 42, {50, 0}), PolicyError);
  // Unknown clients in protocol events are ignored (a race after disconnect).
  EXPECT_TRUE(p->lock_request(0, 42).list.empty());
}

}  // namespace
}  // namespace agentcg::gpu
