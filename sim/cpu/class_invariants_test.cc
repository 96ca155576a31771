// SPDX-License-Identifier: GPL-2.0-only
// What every scheduling class of the CPU model must hold, as one
// parametrised suite instead of a copy per class: work conservation (no CPU
// idles while a task waits), determinism (same trace and seed, same bytes;
// another seed, other bytes), and for the fair classes (cfs, eevdf, flatcg,
// agentcg) weighted and nested shares, entitlement capped by the task count,
// cpu.max, and no starvation. FIFO is the trivial baseline: it conserves
// work and is deterministic, nothing more.
// The bounds are the specification's (fair shares within 1 to 2 points, the
// quota within a quarter point, a 200 ms wait bound), not values tuned to
// what the code produced. Per-class behaviour (EEVDF's slices, agentcg's
// features) stays in cpu_model_test.cc and agentcg_test.cc.
#include <string>

#include <gtest/gtest.h>

#include "sim/api.h"
#include "tests/support/trace_builder.h"

namespace agentcg::sim {
namespace {

using trace::testing::io_op;
using trace::testing::repeat_op;
using trace::testing::run_op;
using trace::testing::TraceBuilder;

constexpr std::uint64_t kMs = 1000000, kSec = 1000000000;

nlohmann::json run_class(const trace::Trace& t, const std::string& policy, std::uint64_t seed = 1) {
  RunOptions o;
  o.policy = policy;
  o.seed = seed;
  return run(t, o);
}

double share(const nlohmann::json& r, const std::string& cg) { return r["cgroups"][cg]["cpu_share"].get<double>(); }

class AllClasses : public ::testing::TestWithParam<std::string> {};
class FairClasses : public ::testing::TestWithParam<std::string> {};

// 2 CPUs, one hog in /big (weight 1000) and two in /small (100): more
// runnable tasks than CPUs, spread unevenly over groups of very different
// weights, and a group that cannot use its whole entitlement.
trace::Trace big_and_small() {
  TraceBuilder b(2, 2 * kSec);
  b.cgroup("/big", 1000);
  b.cgroup("/small", 100);
  b.hogs("/big", 1);
  b.hogs("/small", 2);
  return b.done();
}

// The CPUs never idle while a task waits.
TEST_P(AllClasses, WorkConserving) {
  const auto r = run_class(big_and_small(), GetParam());
  EXPECT_GT(r["cpu_utilization"].get<double>(), 0.99);
}

TEST_P(AllClasses, SameSeedSameBytesOtherSeedOtherBytes) {
  TraceBuilder b(2, 2 * kSec);
  b.cgroup("/x");
  b.cgroup("/y", 300);
  trace::Op run_r = run_op(0);
  run_r.amount = trace::Value{trace::Value::Dist::kExponential, 2 * kMs, 0, 0.0, 0};
  trace::Op io_r = io_op(0);
  io_r.amount = trace::Value{trace::Value::Dist::kUniform, 1 * kMs, 9 * kMs, 0.0, 0};
  for (const char* g : {"/x", "/y"})
    for (int i = 0; i < 3; ++i) b.process(g, {repeat_op(100000, {run_r, io_r})});
  const trace::Trace& t = b.done();
  const std::string a1 = dump_results(run_class(t, GetParam(), 5));
  EXPECT_EQ(a1, dump_results(run_class(t, GetParam(), 5)));
  EXPECT_NE(a1, dump_results(run_class(t, GetParam(), 6)));
}

// Hogs in cgroups of weight 100, 200, 300 on 2 CPUs: 1/6, 2/6, 3/6 within a
// point, the entitlement says so, and Jain's index is near 1.
TEST_P(FairClasses, WeightedSharesWithinOnePoint) {
  TraceBuilder b(2, 10 * kSec);
  b.cgroup("/a", 100);
  b.cgroup("/b", 200);
  b.cgroup("/c", 300);
  for (const char* c : {"/a", "/b", "/c"}) b.hogs(c, 2);
  const auto r = run_class(b.done(), GetParam());
  EXPECT_EQ(r["policy"].get<std::string>(), GetParam());
  EXPECT_NEAR(share(r, "/a"), 1.0 / 6, 0.01);
  EXPECT_NEAR(share(r, "/b"), 2.0 / 6, 0.01);
  EXPECT_NEAR(share(r, "/c"), 3.0 / 6, 0.01);
  EXPECT_NEAR(r["cgroups"]["/b"]["entitled_share"].get<double>(), 2.0 / 6, 1e-6);
  EXPECT_GT(r["jain_fairness"].get<double>(), 0.99);
  EXPECT_GT(r["cpu_utilization"].get<double>(), 0.99);
}

// Weights compound down the tree: /a (100) holds /a/x (100) and /a/y (300),
// beside /b (200), all busy: 1/12, 3/12, 8/12 within 2 points (the VM
// scenario `nested` runs the same tree live).
TEST_P(FairClasses, NestedWeightsCompound) {
  TraceBuilder b(2, 10 * kSec);
  b.cgroup("/a", 100);
  b.cgroup("/a/x", 100);
  b.cgroup("/a/y", 300);
  b.cgroup("/b", 200);
  for (const char* c : {"/a/x", "/a/y", "/b"}) b.hogs(c, 2);
  const auto r = run_class(b.done(), GetParam());
  EXPECT_NEAR(share(r, "/a/x"), 1.0 / 12, 0.02);
  EXPECT_NEAR(share(r, "/a/y"), 3.0 / 12, 0.02);
  EXPECT_NEAR(share(r, "/a"), 4.0 / 12, 0.02);
  EXPECT_NEAR(share(r, "/b"), 8.0 / 12, 0.02);
}

// One task cannot use more than one of the two CPUs, whatever its weight:
// the rest goes to the other group.
TEST_P(FairClasses, EntitlementIsCappedByTaskCount) {
  const auto r = run_class(big_and_small(), GetParam());
  EXPECT_NEAR(r["cgroups"]["/big"]["entitled_share"].get<double>(), 0.5, 1e-6);
  EXPECT_NEAR(share(r, "/big"), 0.5, 0.01);
  EXPECT_NEAR(share(r, "/small"), 0.5, 0.01);
}

// cpu.max 50000/100000 (half a CPU of 2: a quarter of the machine) on one
// group of two hogs, beside two unlimited hogs: the quota holds within a
// quarter point, the group is throttled, the rest goes to the other group,
// and cpu.stat stays consistent (nr_throttled <= nr_periods).
TEST_P(FairClasses, CpuMaxQuotaHolds) {
  TraceBuilder b(2, 10 * kSec);
  b.cgroup("/lim").cpu_max = trace::CpuMax{50000, 100000};
  b.cgroup("/other");
  b.hogs("/lim", 2);
  b.hogs("/other", 2);
  const auto r = run_class(b.done(), GetParam());
  EXPECT_NEAR(share(r, "/lim"), 0.25, 0.0025);
  EXPECT_NEAR(share(r, "/other"), 0.75, 0.01);
  const auto& lim = r["cgroups"]["/lim"];
  EXPECT_GT(lim["nr_throttled"].get<std::uint64_t>(), 50u);
  EXPECT_LE(lim["nr_throttled"].get<std::uint64_t>(), lim["nr_periods"].get<std::uint64_t>());
}

// 36 groups on 2 CPUs, 4 of hogs and 32 of bursty tasks (20 ms of CPU,
// 150 ms asleep, exponential): no task waits 200 ms, and every group gets
// at least half of its fair 1/36.
TEST_P(FairClasses, NoGroupStarves) {
  TraceBuilder b(2, 10 * kSec);
  for (int i = 0; i < 36; ++i) {
    const std::string g = "/s" + std::to_string(i);
    b.cgroup(g);
    if (i < 4) {
      b.hogs(g, 1);
      continue;
    }
    trace::Op burst = run_op(0), nap = trace::testing::sleep_op(0);
    burst.amount = trace::Value{trace::Value::Dist::kExponential, 20 * kMs, 0, 0.0, 0};
    nap.amount = trace::Value{trace::Value::Dist::kExponential, 150 * kMs, 0, 0.0, 0};
    b.process(g, {repeat_op(100000, {burst, nap})}, static_cast<std::uint64_t>(i) * kMs);
  }
  const auto r = run_class(b.done(), GetParam());
  EXPECT_LT(r["max_runnable_wait_ns"].get<std::uint64_t>(), 200 * kMs);
  for (int i = 0; i < 36; ++i) {
    const std::string g = "/s" + std::to_string(i);
    EXPECT_GT(share(r, g), 0.5 / 36) << g;
  }
}

std::string param_name(const ::testing::TestParamInfo<std::string>& p) { return p.param; }

INSTANTIATE_TEST_SUITE_P(Classes, AllClasses, ::testing::Values("cfs", "eevdf", "flatcg", "agentcg", "fifo"),
                         param_name);
INSTANTIATE_TEST_SUITE_P(Classes, FairClasses, ::testing::Values("cfs", "eevdf", "flatcg", "agentcg"), param_name);

}  // namespace
}  // namespace agentcg::sim
