// SPDX-License-Identifier: GPL-2.0-only
// Metric helpers shared by the simulator, the live player and importers, so
// that a percentile means the same everywhere: exact nearest-rank
// percentiles over all samples (p = the smallest sample with at least p% of
// the samples at or below it), Jain's fairness index.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

namespace agentcg::sim {

// {"count","mean","p50","p90","p99","p999","max"} in the samples' unit
// (integers); all zero for an empty set. Sorts `samples` in place.
nlohmann::json latency_summary(std::vector<std::uint64_t>& samples);
std::uint64_t percentile(const std::vector<std::uint64_t>& sorted, double p);

// Jain's index (sum x)^2 / (n sum x^2) in (0, 1]; 1 for an empty set.
double jain_index(const std::vector<double>& x);

// Rounds to 6 significant decimals so that results.json stays readable and
// stable across platforms' last-bit differences.
double round6(double v);

}  // namespace agentcg::sim
