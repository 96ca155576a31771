// SPDX-License-Identifier: GPL-2.0-only
// trace::Value: a fixed or random non-negative quantity (ns or bytes).
//
// Sampling uses only sim::RandomStream's own distributions, so a trace
// replayed with the same run seed draws the same numbers on every standard
// library. Samples are rounded to the nearest integer, never negative, and
// clamped to `max` when it is nonzero (uniform is clamped to its own upper
// bound `b`). mean() is the mean of that clamped distribution, used for
// entitlement estimates and summaries, never on the sampling path.
// Called by the workload replay (sim/cpu/) and by the generators' tests.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "sim/trace/trace.h"

namespace agentcg::trace {
namespace {

// Largest double below 2^64, so the conversion below never overflows.
constexpr double kMaxU64AsDouble = 18446744073709549568.0;

std::uint64_t round_non_negative(double x) {
  if (!(x > 0.0)) return 0;  // also catches NaN
  if (x >= kMaxU64AsDouble) return static_cast<std::uint64_t>(kMaxU64AsDouble);
  return static_cast<std::uint64_t>(x + 0.5);
}

// Standard normal CDF.
double phi(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

}  // namespace

std::uint64_t Value::sample(sim::RandomStream& rng) const {
  std::uint64_t v = 0;
  switch (dist) {
    case Dist::kConst:
      return a;  // a fixed value is never capped: it is what the trace says
    case Dist::kUniform:
      v = rng.uniform(a, std::max(a, b));
      break;
    case Dist::kExponential:
      v = round_non_negative(rng.exponential(static_cast<double>(a)));
      break;
    case Dist::kLogNormal:
      v = round_non_negative(rng.lognormal(static_cast<double>(a), sigma));
      break;
  }
  if (max != 0 && v > max) v = max;
  return v;
}

double Value::mean() const {
  const double cap = static_cast<double>(max);
  switch (dist) {
    case Dist::kConst:
      return static_cast<double>(a);
    case Dist::kUniform: {
      const double lo = static_cast<double>(a);
      const double hi = static_cast<double>(std::max(a, b));
      if (max == 0 || cap >= hi) return (lo + hi) / 2.0;
      if (cap <= lo) return cap;
      // E[min(X, cap)] for X uniform on [lo, hi].
      const double w = hi - lo;
      return ((cap - lo) * (cap + lo) / 2.0 + (hi - cap) * cap) / w;
    }
    case Dist::kExponential: {
      const double m = static_cast<double>(a);
      if (max == 0 || m == 0.0) return m;
      return m * (1.0 - std::exp(-cap / m));  // E[min(X, cap)]
    }
    case Dist::kLogNormal: {
      const double median = static_cast<double>(a);
      const double s = sigma;
      const double uncapped = median * std::exp(s * s / 2.0);
      if (max == 0 || median == 0.0) return uncapped;
      if (s == 0.0) return std::min(median, cap);
      // E[min(X, c)] = e^(mu + s^2/2) Phi((ln c - mu - s^2)/s) + c (1 - Phi((ln c - mu)/s)).
      const double mu = std::log(median);
      const double lc = std::log(cap);
      return uncapped * phi((lc - mu - s * s) / s) + cap * (1.0 - phi((lc - mu) / s));
    }
  }
  return 0.0;
}

}  // namespace agentcg::trace
