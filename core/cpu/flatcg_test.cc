// SPDX-License-Identifier: GPL-2.0-only
// Unit tests of core/include/agentcg/flatcg.h: hierarchical shares over the
// active set, vtime charging, the lag bound, and weighted fairness of the
// smallest-cvtime-first pick (driven here by a tiny one-CPU loop; the
// simulator-level tests are in sim/cpu/scx_class_test.cc).
#include "agentcg/flatcg.h"

#include <gtest/gtest.h>

// flatcg_single_thread_test.cc runs these tests again on the simulator's
// build of the header (AGENTCG_SINGLE_THREADED), under its own suite name.
#ifndef AGENTCG_FLATCG_SUITE
#define AGENTCG_FLATCG_SUITE Flatcg
#endif

#include <array>
#include <vector>

namespace {

constexpr double kOne = AGENTCG_ONE;

struct Tree {
  agentcg_global g{};
  std::vector<agentcg_cgrp> cg;
  std::vector<int> parent;  // -1 for the root
  explicit Tree(std::vector<std::pair<int, std::uint32_t>> nodes) {
    cg.resize(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); i++) {
      agentcg_cgrp_init(&cg[i], nodes[i].second);
      parent.push_back(nodes[i].first);
    }
  }
  std::vector<agentcg_cgrp*> chain(int id) {
    std::vector<agentcg_cgrp*> c;
    for (int i = id; i >= 0; i = parent[i]) c.insert(c.begin(), &cg[i]);
    return c;
  }
  void activate(int id, bool on) {
    auto c = chain(id);
    agentcg_update_active(c.data(), static_cast<u32>(c.size()), &g, on);
  }
  double share(int id) {
    auto c = chain(id);
    return agentcg_refresh_hweight(c.data(), static_cast<u32>(c.size()), &g) / kOne;
  }
};

TEST(AGENTCG_FLATCG_SUITE, SiblingSharesFollowActiveWeights) {
  Tree t({{-1, 100}, {0, 100}, {0, 200}});
  t.activate(1, true);
  t.activate(2, true);
  EXPECT_NEAR(t.share(1), 1.0 / 3, 1e-5);
  EXPECT_NEAR(t.share(2), 2.0 / 3, 1e-5);
  EXPECT_EQ(t.cg[0].child_weight_sum, 300u);
  // /b goes idle: /a gets the whole machine (refreshed through the generation).
  t.activate(2, false);
  EXPECT_EQ(t.cg[0].child_weight_sum, 100u);
  EXPECT_NEAR(t.share(1), 1.0, 1e-6);
}

TEST(AGENTCG_FLATCG_SUITE, NestedSharesMultiplyDownTheTree) {
  // root -> p(100) -> c1(100), c2(300); root -> q(100)
  Tree t({{-1, 100}, {0, 100}, {1, 100}, {1, 300}, {0, 100}});
  t.activate(2, true);
  t.activate(3, true);
  t.activate(4, true);
  EXPECT_NEAR(t.share(2), 0.5 * 0.25, 1e-5);
  EXPECT_NEAR(t.share(3), 0.5 * 0.75, 1e-5);
  EXPECT_NEAR(t.share(4), 0.5, 1e-5);
  EXPECT_EQ(t.cg[1].nr_active_children, 2u);
  // Deactivating c1 and c2 deactivates p: q alone.
  t.activate(2, false);
  t.activate(3, false);
  EXPECT_FALSE(agentcg_cgrp_active(&t.cg[1]));
  EXPECT_EQ(t.cg[0].child_weight_sum, 100u);
  EXPECT_NEAR(t.share(4), 1.0, 1e-6);
}

TEST(AGENTCG_FLATCG_SUITE, OwnTasksCompeteAsOneNiceZeroChild) {
  Tree t({{-1, 100}, {0, 300}});
  t.activate(0, true);  // a task in the root cgroup
  t.activate(1, true);
  EXPECT_NEAR(t.share(0), 0.25, 1e-5);  // 100 / (100 + 300)
  EXPECT_NEAR(t.share(1), 0.75, 1e-5);
}

TEST(AGENTCG_FLATCG_SUITE, EffWeightChangeUpdatesParentSum) {
  Tree t({{-1, 100}, {0, 100}, {0, 100}});
  t.activate(1, true);
  t.activate(2, true);
  EXPECT_NEAR(t.share(1), 0.5, 1e-5);
  EXPECT_TRUE(agentcg_set_eff_weight(&t.cg[2], &t.cg[0], 25, &t.g));
  EXPECT_EQ(t.cg[0].child_weight_sum, 125u);
  EXPECT_NEAR(t.share(1), 0.8, 1e-5);
  EXPECT_FALSE(agentcg_set_eff_weight(&t.cg[2], &t.cg[0], 25, &t.g));
  // An inactive group's weight change must not touch the sum.
  t.activate(2, false);
  agentcg_set_eff_weight(&t.cg[2], &t.cg[0], 100, &t.g);
  EXPECT_EQ(t.cg[0].child_weight_sum, 100u);
  t.activate(2, true);
  EXPECT_EQ(t.cg[0].child_weight_sum, 200u);
}

TEST(AGENTCG_FLATCG_SUITE, ChargeScalesByShare) {
  agentcg_cgrp cg;
  agentcg_cgrp_init(&cg, 100);
  agentcg_cgrp_charge(&cg, AGENTCG_ONE / 4, 1000000);
  EXPECT_EQ(cg.cvtime, 4000000u);
  agentcg_task t;
  agentcg_task_init(&t, 200);
  agentcg_task_charge(&t, 1000000);
  EXPECT_EQ(t.vtime, 500000u);
}

TEST(AGENTCG_FLATCG_SUITE, LagOfAnIdleGroupIsBoundedToOneSlice) {
  agentcg_global g{};
  g.cvtime_now = 100000000;
  agentcg_cgrp cg;
  agentcg_cgrp_init(&cg, 100);
  cg.cvtime = 10000000;
  EXPECT_TRUE(agentcg_cgrp_bound_lag(&cg, &g, 4000000));
  EXPECT_EQ(cg.cvtime, 96000000u);
  // A group ahead of cvtime_now keeps its vtime (no reward for idling, no penalty).
  cg.cvtime = 120000000;
  EXPECT_FALSE(agentcg_cgrp_bound_lag(&cg, &g, 4000000));
  EXPECT_EQ(cg.cvtime, 120000000u);
  // Tasks inside the group likewise.
  agentcg_task t;
  agentcg_task_init(&t, 100);
  cg.tvtime_now = 50000000;
  agentcg_task_enqueue(&t, &cg, 4000000);
  EXPECT_EQ(t.vtime, 46000000u);
}

TEST(AGENTCG_FLATCG_SUITE, WrapSafeBefore) {
  EXPECT_TRUE(agentcg_before(~0ull - 5, 3));
  EXPECT_FALSE(agentcg_before(3, ~0ull - 5));
  EXPECT_TRUE(agentcg_before(1, 2));
}

// One CPU, three always-busy groups 100:200:300, 1 ms quanta, smallest cvtime
// first: each group's CPU time is within 1 % of its weight fraction.
TEST(AGENTCG_FLATCG_SUITE, SmallestCvtimeFirstGivesWeightedShares) {
  Tree t({{-1, 100}, {0, 100}, {0, 200}, {0, 300}});
  for (int i = 1; i <= 3; i++) t.activate(i, true);
  std::array<std::uint64_t, 4> ran{};
  for (int step = 0; step < 6000; step++) {
    int best = 1;
    for (int i = 2; i <= 3; i++)
      if (agentcg_before(t.cg[i].cvtime, t.cg[best].cvtime)) best = i;
    agentcg_cgrp_picked(&t.g, &t.cg[best]);
    const u32 share = static_cast<u32>(t.share(best) * kOne + 0.5);
    agentcg_cgrp_charge(&t.cg[best], share, 1000000);
    ran[best] += 1000000;
  }
  const double total = static_cast<double>(ran[1] + ran[2] + ran[3]);
  EXPECT_NEAR(ran[1] / total, 1.0 / 6, 0.01 / 6);
  EXPECT_NEAR(ran[2] / total, 2.0 / 6, 0.01 * 2 / 6);
  EXPECT_NEAR(ran[3] / total, 3.0 / 6, 0.01 * 3 / 6);
}

}  // namespace
