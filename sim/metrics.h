// SPDX-License-Identifier: GPL-2.0-only
// Metric helpers shared by the simulator, the live player, the importers'
// `trace stats` and the fleet runner, so that a percentile means the same
// everywhere (one definition): LatencyHistogram, Jain's fairness index.
//
// LatencyHistogram is a mergeable distribution of u64 samples (ns):
//  - exact while it holds at most kExactMax samples: the percentiles are
//    the exact nearest-rank ones (p = the ceil(p * n)-th smallest sample);
//  - above that, an HDR-style log-linear histogram: values below 128 have a
//    bucket each (exact); above, every power of two is split into 64 equal
//    buckets, so a bucket's width is at most 1/64 of its lower bound. A
//    percentile is the nearest-rank bucket's midpoint, clamped to the exact
//    [min, max]: relative error <= 1/128 (0.79 %) against the exact
//    nearest-rank sample; the first and last ranks are the exact min and
//    max. count, min, max and the sum (so the mean) stay exact.
// Invariants: exact mode iff count() <= kExactMax, whatever the order of
// add() and merge() calls, so a summary depends only on the multiset of
// samples (merging per-host histograms in any order gives the same bytes).
// Ranks are integer arithmetic in parts per million (no floating point:
// p99.9 of 1,000 samples is the 999th, on every platform).
// Memory: exact mode up to 8 KiB; histogram mode 8 bytes per bucket over
// the range of buckets seen (about 1.3 KiB per decade of values).
// Who calls it: sim/cpu/cpu_model.cc, live/player/player.cc,
// sim/import/stats.cc, the fleet merge (python/src, python/agentcg/fleet.py).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace agentcg::sim {

// The exact sum of up to 2^64 samples of up to 2^64 - 1 (GCC/Clang's
// 128-bit integer; __extension__ keeps -Wpedantic quiet).
__extension__ typedef unsigned __int128 Uint128;

class LatencyHistogram {
 public:
  static constexpr std::size_t kExactMax = 1024;
  static constexpr unsigned kSubBits = 6;  // 64 buckets per power of two

  void add(std::uint64_t v) {
    ++count_;
    sum_ += v;
    if (count_ == 1 || v < min_) min_ = v;
    if (v > max_) max_ = v;
    if (exact_) {
      samples_.push_back(v);
      if (samples_.size() > kExactMax) to_buckets();
    } else {
      bump(bucket_of(v), 1);
    }
  }
  void merge(const LatencyHistogram& o);

  std::uint64_t count() const { return count_; }
  std::uint64_t min() const { return count_ ? min_ : 0; }
  std::uint64_t max() const { return max_; }
  bool exact() const { return exact_; }
  // floor(sum / count); 0 when empty.
  std::uint64_t mean() const;
  // The nearest-rank percentile, q in parts per million (990000 = p99);
  // 0 when empty.
  std::uint64_t percentile_ppm(std::uint32_t q_ppm) const;

  // {"count","mean","p50","p90","p99","p999","max"} (integers, results.json).
  nlohmann::json summary() const;
  // The full state, for merging elsewhere (the fleet runner):
  // {"count","sum" (decimal string: may exceed 2^64),"min","max",
  //  "samples":[...]} in exact mode (sorted), or {..,"first_bucket",
  //  "counts":[...]} in histogram mode.
  nlohmann::json to_json() const;
  // Inverse of to_json(); throws std::invalid_argument naming `where` and
  // the field on anything malformed or inconsistent.
  static LatencyHistogram from_json(const nlohmann::json& j, const std::string& where);

  static constexpr std::size_t bucket_of(std::uint64_t v) {
    constexpr std::uint64_t kLinear = std::uint64_t{2} << kSubBits;  // 128
    if (v < kLinear) return static_cast<std::size_t>(v);
    const unsigned e = 63u - static_cast<unsigned>(__builtin_clzll(v));
    const unsigned shift = e - kSubBits;
    return static_cast<std::size_t>(kLinear + (e - kSubBits - 1) * (std::uint64_t{1} << kSubBits) +
                                    ((v >> shift) - (std::uint64_t{1} << kSubBits)));
  }
  // The smallest value in bucket b, and the bucket's width.
  static std::uint64_t bucket_low(std::size_t b);
  static std::uint64_t bucket_width(std::size_t b);

 private:
  void to_buckets();
  void bump(std::size_t b, std::uint64_t n) {
    if (counts_.empty()) first_ = b;
    if (b < first_ || b >= first_ + counts_.size()) grow(b);
    counts_[b - first_] += n;
  }
  void grow(std::size_t b);

  std::uint64_t count_ = 0, min_ = 0, max_ = 0;
  Uint128 sum_ = 0;
  bool exact_ = true;
  std::vector<std::uint64_t> samples_;  // exact mode, in arrival order
  std::size_t first_ = 0;               // histogram mode: bucket of counts_[0]
  std::vector<std::uint64_t> counts_;
};

// latency summary of plain samples (the player's per-cgroup lists): the same
// definition as LatencyHistogram::summary().
nlohmann::json latency_summary(const std::vector<std::uint64_t>& samples);

// Jain's index (sum x)^2 / (n sum x^2) in (0, 1]; 1 for an empty set.
double jain_index(const std::vector<double>& x);

// Rounds to 6 significant decimals so that results.json stays readable and
// stable across platforms' last-bit differences.
double round6(double v);

// Serialises a results document deterministically (sorted keys, 2-space
// indent, final newline): the one writer of results.json for the simulator
// (sim/api.h re-exports it) and the live player.
std::string dump_results(const nlohmann::json& results);

// histograms.json, the one definition of its format (written beside
// results.json by agentcg-sim run/compare and, through the Python
// extension, by the Python CLI; read by python/agentcg/api.py):
//   {"format": "agentcg-histograms", "version": 2,
//    "wakeup_latency_ns": H, "tool_call_latency_ns": H,      (the machine)
//    "cgroups": {"/path": {"wakeup_latency_ns": H, "tool_call_latency_ns": H}, ...}}
// H is LatencyHistogram::to_json(); a cgroup's histograms hold its whole
// subtree's samples, as its results.json percentiles do; cgroups without a
// task in their subtree are left out. `histograms` is the "histograms"
// object of sim::run() with RunOptions::histograms. One line, sorted keys,
// final newline: the same bytes from every writer.
std::string dump_histograms(const nlohmann::json& histograms);

}  // namespace agentcg::sim
