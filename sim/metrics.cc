// SPDX-License-Identifier: GPL-2.0-only
#include "sim/metrics.h"

#include <algorithm>
#include <cmath>

namespace agentcg::sim {

std::uint64_t percentile(const std::vector<std::uint64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  if (rank == 0) rank = 1;
  return sorted[std::min(rank, sorted.size()) - 1];
}

nlohmann::json latency_summary(std::vector<std::uint64_t>& samples) {
  std::sort(samples.begin(), samples.end());
  long double sum = 0;
  for (auto s : samples) sum += static_cast<long double>(s);
  nlohmann::json j;
  j["count"] = samples.size();
  j["mean"] = samples.empty() ? 0 : static_cast<std::uint64_t>(sum / static_cast<long double>(samples.size()));
  j["p50"] = percentile(samples, 50);
  j["p90"] = percentile(samples, 90);
  j["p99"] = percentile(samples, 99);
  j["p999"] = percentile(samples, 99.9);
  j["max"] = samples.empty() ? 0 : samples.back();
  return j;
}

double jain_index(const std::vector<double>& x) {
  if (x.empty()) return 1.0;
  double s = 0, s2 = 0;
  for (double v : x) {
    s += v;
    s2 += v * v;
  }
  return s2 == 0 ? 1.0 : s * s / (static_cast<double>(x.size()) * s2);
}

double round6(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double mag = std::pow(10.0, 6 - static_cast<int>(std::ceil(std::log10(std::fabs(v)))));
  return std::round(v * mag) / mag;
}

}  // namespace agentcg::sim
