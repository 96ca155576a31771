// SPDX-License-Identifier: GPL-2.0-only
// Tests of the one percentile definition (sim/metrics.h, LatencyHistogram):
// exact nearest rank while small, the stated <= 1/128 relative error above,
// merges that do not depend on order or on how samples were split, the JSON
// form the fleet merge ships between processes, and its error messages.
#include "sim/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sim/random.h"
#include "sim/results.h"

namespace agentcg::sim {
namespace {

std::uint64_t nearest_rank(std::vector<std::uint64_t> v, std::uint64_t q_ppm) {
  std::sort(v.begin(), v.end());
  std::uint64_t r = (q_ppm * v.size() + 999999) / 1000000;
  return v[std::max<std::uint64_t>(r, 1) - 1];
}

// Heavy-tailed latencies from 1 ns to ~10 s (a random exponent).
std::vector<std::uint64_t> samples(std::size_t n, std::uint64_t seed) {
  RandomStream rng(seed, "metrics_test");
  std::vector<std::uint64_t> v;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t bits = 1 + rng.below(34);
    v.push_back(rng.below(std::uint64_t{1} << bits));
  }
  return v;
}

TEST(LatencyHistogram, ExactNearestRankWhenSmall) {
  std::vector<std::uint64_t> v;
  for (std::uint64_t i = 1000; i >= 1; --i) v.push_back(i);
  LatencyHistogram h;
  for (auto x : v) h.add(x);
  EXPECT_TRUE(h.exact());
  const auto s = h.summary();
  EXPECT_EQ(s["count"], 1000);
  EXPECT_EQ(s["p50"], 500);
  EXPECT_EQ(s["p90"], 900);
  EXPECT_EQ(s["p99"], 990);
  // p99.9 of 1,000 samples is the 999th: the two old definitions disagreed
  // here (a double ceil(0.999 * 1000) gave the 1000th).
  EXPECT_EQ(s["p999"], 999);
  EXPECT_EQ(s["max"], 1000);
  EXPECT_EQ(s["mean"], 500);  // floor(500.5)
  EXPECT_EQ(latency_summary(v), s);  // the player's entry point: same definition
  EXPECT_EQ(LatencyHistogram().summary()["p99"], 0);
  LatencyHistogram one;
  one.add(7);
  EXPECT_EQ(one.summary()["p50"], 7);
}

TEST(LatencyHistogram, ModeSwitchesAtTheThresholdOnly) {
  LatencyHistogram h;
  for (std::size_t i = 0; i < LatencyHistogram::kExactMax; ++i) h.add(1000 + i);
  EXPECT_TRUE(h.exact());
  h.add(5);
  EXPECT_FALSE(h.exact());
  EXPECT_EQ(h.min(), 5u);
}

TEST(LatencyHistogram, BucketsCoverEveryValueWithinTheStatedWidth) {
  RandomStream rng(3, "buckets");
  for (int i = 0; i < 200000; ++i) {
    const std::uint64_t v = i < 300 ? static_cast<std::uint64_t>(i) : rng.next_u64() >> rng.below(64);
    const std::size_t b = LatencyHistogram::bucket_of(v);
    const std::uint64_t lo = LatencyHistogram::bucket_low(b), w = LatencyHistogram::bucket_width(b);
    ASSERT_LE(lo, v) << v;
    ASSERT_LE(v - lo, w - 1) << v;
    if (v < 128) {
      ASSERT_EQ(w, 1u) << v;
    } else {
      ASSERT_LE(w * 64, lo) << v;  // width <= 1/64 of the bucket's lower bound
    }
    if (v > 0) {
      ASSERT_LE(LatencyHistogram::bucket_of(v - 1), b) << v;
    }
  }
  EXPECT_EQ(LatencyHistogram::bucket_low(LatencyHistogram::bucket_of(~std::uint64_t{0})) +
                (LatencyHistogram::bucket_width(LatencyHistogram::bucket_of(~std::uint64_t{0})) - 1),
            ~std::uint64_t{0});
}

TEST(LatencyHistogram, RelativeErrorWithinBoundAboveTheThreshold) {
  const auto v = samples(200000, 1);
  LatencyHistogram h;
  for (auto x : v) h.add(x);
  ASSERT_FALSE(h.exact());
  EXPECT_EQ(h.count(), v.size());
  EXPECT_EQ(h.max(), *std::max_element(v.begin(), v.end()));
  EXPECT_EQ(h.min(), *std::min_element(v.begin(), v.end()));
  long double sum = 0;
  for (auto x : v) sum += static_cast<long double>(x);
  EXPECT_EQ(h.mean(), static_cast<std::uint64_t>(sum / static_cast<long double>(v.size())));
  for (std::uint32_t q : {1000u, 100000u, 500000u, 900000u, 990000u, 999000u, 999900u, 1000000u}) {
    const std::uint64_t exact = nearest_rank(v, q);
    const std::uint64_t got = h.percentile_ppm(q);
    const double err = std::fabs(static_cast<double>(got) - static_cast<double>(exact));
    EXPECT_LE(err, static_cast<double>(exact) / 128.0) << "q=" << q << " exact " << exact << " got " << got;
  }
  EXPECT_EQ(h.percentile_ppm(1000000), h.max());
}

TEST(LatencyHistogram, MergeIndependentOfOrderAndSplit) {
  const auto v = samples(5000, 2);
  LatencyHistogram all;
  for (auto x : v) all.add(x);
  // Splits with parts below and above the exact threshold, merged forwards
  // and backwards, and one merged into an already-large histogram.
  for (std::size_t parts : {2u, 7u, 40u}) {
    std::vector<LatencyHistogram> hs(parts);
    for (std::size_t i = 0; i < v.size(); ++i) hs[(i * 31 + i / 3) % parts].add(v[i]);
    LatencyHistogram fwd, bwd;
    for (std::size_t i = 0; i < parts; ++i) fwd.merge(hs[i]);
    for (std::size_t i = parts; i-- > 0;) bwd.merge(hs[i]);
    EXPECT_EQ(fwd.to_json(), all.to_json()) << parts;
    EXPECT_EQ(bwd.to_json(), all.to_json()) << parts;
    EXPECT_EQ(fwd.summary(), all.summary()) << parts;
  }
  // Two exact halves that stay exact together keep exact percentiles.
  LatencyHistogram a, b, ab;
  for (std::uint64_t i = 0; i < 500; ++i) a.add(i * 1000003);
  for (std::uint64_t i = 500; i < 1000; ++i) b.add(i * 1000003);
  ab.merge(b);
  ab.merge(a);
  EXPECT_TRUE(ab.exact());
  EXPECT_EQ(ab.percentile_ppm(990000), 989 * 1000003u);
}

TEST(LatencyHistogram, JsonRoundTripIncludingSumsBeyond64Bits) {
  LatencyHistogram h;
  for (int i = 0; i < 3000; ++i) h.add(~std::uint64_t{0} - static_cast<std::uint64_t>(i));
  const auto j = h.to_json();
  EXPECT_EQ(j["sum"].get<std::string>().size(), 23u);  // ~5.5e22
  const LatencyHistogram back = LatencyHistogram::from_json(j, "t");
  EXPECT_EQ(back.to_json(), j);
  EXPECT_EQ(back.summary(), h.summary());
  LatencyHistogram small;
  small.add(42);
  EXPECT_EQ(LatencyHistogram::from_json(small.to_json(), "t").summary(), small.summary());
}

TEST(LatencyHistogram, FromJsonRejectsMalformedInputNamingTheField) {
  LatencyHistogram h;
  for (int i = 0; i < 2000; ++i) h.add(static_cast<std::uint64_t>(i));
  auto expect_error = [](nlohmann::json j, const std::string& field) {
    try {
      (void)LatencyHistogram::from_json(j, "host-3");
      ADD_FAILURE() << "accepted " << j.dump().substr(0, 80);
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("host-3: histogram field '" + field + "'"), std::string::npos)
          << e.what();
    }
  };
  auto j = h.to_json();
  j["count"] = 5;
  expect_error(j, "count");
  j = h.to_json();
  j["sum"] = "12x";
  expect_error(j, "sum");
  j = h.to_json();
  j["counts"][0] = -1;
  expect_error(j, "counts");
  j = h.to_json();
  j["first_bucket"] = 100000;
  expect_error(j, "first_bucket");
  j = h.to_json();
  j["counts"].push_back(1);
  expect_error(j, "count");  // the counts no longer add up to count
  j = h.to_json();
  j.erase("min");
  expect_error(j, "min");
  expect_error(nlohmann::json::array(), "");
}

}  // namespace
}  // namespace agentcg::sim

namespace agentcg::sim {
namespace {

// The builder's listing rule, as the player reaches it (it passes every
// cgroup): the root, the cgroups with activity and their ancestors are
// listed; the rest are added to the caller's own idle count.
TEST(ResultsJson, IdleCgroupsAreCountedNotListed) {
  CpuResultsInput in;
  in.cpus = 1;
  in.duration_ns = 1000000000;
  in.idle_cgroups = 5;  // dropped by the caller already
  auto cg = [&](const std::string& path) -> CgroupResultsInput& {
    in.cgroups.emplace_back();
    in.cgroups.back().path = path;
    in.cgroups.back().wakeup_latency_ns = latency_summary({});
    in.cgroups.back().tool_call_latency_ns = latency_summary({});
    return in.cgroups.back();
  };
  cg("/");
  cg("/a");
  cg("/a/b").tasks = 1;
  cg("/c");
  cg("/d").wakeup_latency_ns = latency_summary({10, 20});
  cg("/e").mem_peak_bytes = 4096;
  const nlohmann::json r = cpu_results_json(in);
  EXPECT_EQ(r["idle_cgroups"], 6);
  std::vector<std::string> listed;
  for (auto it = r["cgroups"].begin(); it != r["cgroups"].end(); ++it) listed.push_back(it.key());
  EXPECT_EQ(listed, (std::vector<std::string>{"/", "/a", "/a/b", "/d", "/e"}));
  EXPECT_EQ(r["series"]["cgroups"].size(), 5u);
  EXPECT_FALSE(cgroup_had_activity(in.cgroups[1]));
  EXPECT_TRUE(cgroup_had_activity(in.cgroups[4]));
}

}  // namespace
}  // namespace agentcg::sim
