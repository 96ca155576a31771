// SPDX-License-Identifier: GPL-2.0-only
// Tests of trace::Value: sampling is deterministic per seed, stays in range,
// honours the cap, and its empirical mean matches mean() (which is what
// entitlement estimates rely on).
#include <gtest/gtest.h>

#include <cmath>

#include "sim/trace/trace.h"

namespace agentcg::trace {
namespace {

Value make(Value::Dist d, std::uint64_t a, std::uint64_t b, double sigma, std::uint64_t cap) {
  Value v;
  v.dist = d;
  v.a = a;
  v.b = b;
  v.sigma = sigma;
  v.max = cap;
  return v;
}

double empirical_mean(const Value& v, std::uint64_t seed, int n) {
  sim::RandomStream rng(seed, "value-test");
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(v.sample(rng));
  return sum / n;
}

TEST(Value, FixedIsConstantAndNotRandom) {
  const Value v = Value::fixed(1234);
  EXPECT_FALSE(v.is_random());
  sim::RandomStream rng(1, "x");
  for (int i = 0; i < 10; ++i) EXPECT_EQ(v.sample(rng), 1234u);
  EXPECT_DOUBLE_EQ(v.mean(), 1234.0);
}

TEST(Value, SameSeedSameSamplesDifferentSeedDiffers) {
  const Value v = make(Value::Dist::kLogNormal, 8000000, 0, 0.5, 0);
  sim::RandomStream r1(42, "s"), r2(42, "s"), r3(43, "s");
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const auto x = v.sample(r1);
    EXPECT_EQ(x, v.sample(r2));
    differs = differs || x != v.sample(r3);
  }
  EXPECT_TRUE(differs);
}

TEST(Value, UniformStaysInRangeAndHitsBothEnds) {
  const Value v = make(Value::Dist::kUniform, 10, 13, 0, 0);
  sim::RandomStream rng(7, "u");
  bool lo = false, hi = false;
  for (int i = 0; i < 1000; ++i) {
    const auto x = v.sample(rng);
    ASSERT_GE(x, 10u);
    ASSERT_LE(x, 13u);
    lo = lo || x == 10;
    hi = hi || x == 13;
  }
  EXPECT_TRUE(lo && hi);
  EXPECT_DOUBLE_EQ(v.mean(), 11.5);
}

TEST(Value, EmpiricalMeansMatchMean) {
  const Value u = make(Value::Dist::kUniform, 1000, 3000, 0, 0);
  const Value e = make(Value::Dist::kExponential, 4000000, 0, 0, 0);
  const Value l = make(Value::Dist::kLogNormal, 3000000, 0, 0.5, 0);
  EXPECT_NEAR(u.mean(), 2000.0, 1e-9);
  EXPECT_NEAR(e.mean(), 4e6, 1e-3);
  EXPECT_NEAR(l.mean(), 3e6 * std::exp(0.125), 1.0);
  for (const Value* v : {&u, &e, &l}) {
    const double m = empirical_mean(*v, 11, 200000);
    EXPECT_NEAR(m / v->mean(), 1.0, 0.01) << "dist " << static_cast<int>(v->dist);
  }
}

TEST(Value, CapClampsSamplesAndLowersTheMean) {
  const Value e = make(Value::Dist::kExponential, 1000, 0, 0, 1500);
  const Value l = make(Value::Dist::kLogNormal, 1000, 0, 1.0, 2000);
  sim::RandomStream rng(3, "cap");
  std::uint64_t max_seen = 0;
  for (int i = 0; i < 10000; ++i) max_seen = std::max({max_seen, e.sample(rng), l.sample(rng)});
  EXPECT_EQ(max_seen, 2000u);  // both caps are reached, never exceeded
  // Closed forms: E[min(X,c)] for the exponential is m (1 - e^(-c/m)).
  EXPECT_NEAR(e.mean(), 1000.0 * (1.0 - std::exp(-1.5)), 1e-6);
  EXPECT_LT(l.mean(), 1000.0 * std::exp(0.5));
  for (const Value* v : {&e, &l}) EXPECT_NEAR(empirical_mean(*v, 5, 200000) / v->mean(), 1.0, 0.01);
}

TEST(Value, LogNormalMedianIsTheMedian) {
  const Value l = make(Value::Dist::kLogNormal, 5000, 0, 0.8, 0);
  sim::RandomStream rng(9, "median");
  int below = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) below += l.sample(rng) < 5000 ? 1 : 0;
  EXPECT_NEAR(static_cast<double>(below) / n, 0.5, 0.01);
}

}  // namespace
}  // namespace agentcg::trace
