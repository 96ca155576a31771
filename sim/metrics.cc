// SPDX-License-Identifier: GPL-2.0-only
// LatencyHistogram (see metrics.h for the definition and its error bound),
// Jain's index, round6.
#include "sim/metrics.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace agentcg::sim {

namespace {
constexpr std::uint64_t kLinear = std::uint64_t{2} << LatencyHistogram::kSubBits;  // 128
constexpr std::uint64_t kSub = std::uint64_t{1} << LatencyHistogram::kSubBits;     // 64
constexpr std::size_t kBuckets = LatencyHistogram::bucket_of(~std::uint64_t{0}) + 1;

std::string u128_to_string(Uint128 v) {
  if (v == 0) return "0";
  std::string s;
  while (v != 0) {
    s.push_back(static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  }
  std::reverse(s.begin(), s.end());
  return s;
}

// The ceil(q * n)-th smallest (1-based, at least 1), q in parts per million.
std::uint64_t rank_of(std::uint64_t n, std::uint32_t q_ppm) {
  const Uint128 r = (static_cast<Uint128>(n) * q_ppm + 999999) / 1000000;
  return r == 0 ? 1 : static_cast<std::uint64_t>(std::min<Uint128>(r, n));
}
}  // namespace

std::uint64_t LatencyHistogram::bucket_low(std::size_t b) {
  if (b < kLinear) return b;
  const std::uint64_t octave = (b - kLinear) / kSub;  // 0 for [128, 256)
  const std::uint64_t sub = kSub + (b - kLinear) % kSub;
  return sub << (octave + 1);
}

std::uint64_t LatencyHistogram::bucket_width(std::size_t b) {
  if (b < kLinear) return 1;
  return std::uint64_t{1} << ((b - kLinear) / kSub + 1);
}

void LatencyHistogram::grow(std::size_t b) {
  const std::size_t lo = std::min(b, first_);
  const std::size_t hi = std::max(b + 1, first_ + counts_.size());
  if (lo < first_) counts_.insert(counts_.begin(), first_ - lo, 0);
  first_ = lo;
  counts_.resize(hi - lo, 0);
}

void LatencyHistogram::to_buckets() {
  exact_ = false;
  for (std::uint64_t v : samples_) bump(bucket_of(v), 1);
  samples_.clear();
  samples_.shrink_to_fit();
}

void LatencyHistogram::merge(const LatencyHistogram& o) {
  if (o.count_ == 0) return;
  if (count_ == 0 || o.min_ < min_) min_ = o.min_;
  max_ = std::max(max_, o.max_);
  count_ += o.count_;
  sum_ += o.sum_;
  if (exact_ && o.exact_ && count_ <= kExactMax) {
    samples_.insert(samples_.end(), o.samples_.begin(), o.samples_.end());
    return;
  }
  if (exact_) to_buckets();
  if (o.exact_) {
    for (std::uint64_t v : o.samples_) bump(bucket_of(v), 1);
  } else {
    for (std::size_t i = 0; i < o.counts_.size(); ++i)
      if (o.counts_[i] != 0) bump(o.first_ + i, o.counts_[i]);
  }
}

std::uint64_t LatencyHistogram::mean() const {
  return count_ == 0 ? 0 : static_cast<std::uint64_t>(sum_ / count_);
}

std::uint64_t LatencyHistogram::percentile_ppm(std::uint32_t q_ppm) const {
  if (count_ == 0) return 0;
  const std::uint64_t r = rank_of(count_, q_ppm);
  if (r == count_) return max_;  // the extremes are exact in both modes
  if (r == 1) return min_;
  if (exact_) {
    std::vector<std::uint64_t> v = samples_;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(r - 1), v.end());
    return v[r - 1];
  }
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= r) {
      const std::size_t b = first_ + i;
      const std::uint64_t mid = bucket_low(b) + bucket_width(b) / 2;
      return std::clamp(mid, min_, max_);
    }
  }
  return max_;  // unreachable: the counts sum to count_
}

nlohmann::json LatencyHistogram::summary() const {
  nlohmann::json j;
  j["count"] = count_;
  j["mean"] = mean();
  if (exact_) {
    // One sort for all four ranks.
    std::vector<std::uint64_t> v = samples_;
    std::sort(v.begin(), v.end());
    auto at = [&](std::uint32_t q) { return v.empty() ? 0 : v[rank_of(count_, q) - 1]; };
    j["p50"] = at(500000);
    j["p90"] = at(900000);
    j["p99"] = at(990000);
    j["p999"] = at(999000);
  } else {
    j["p50"] = percentile_ppm(500000);
    j["p90"] = percentile_ppm(900000);
    j["p99"] = percentile_ppm(990000);
    j["p999"] = percentile_ppm(999000);
  }
  j["max"] = max_;
  return j;
}

nlohmann::json LatencyHistogram::to_json() const {
  nlohmann::json j;
  j["count"] = count_;
  j["sum"] = u128_to_string(sum_);
  j["min"] = min();
  j["max"] = max_;
  if (exact_) {
    std::vector<std::uint64_t> v = samples_;
    std::sort(v.begin(), v.end());
    j["samples"] = v;
  } else {
    j["first_bucket"] = first_;
    j["counts"] = counts_;
  }
  return j;
}

LatencyHistogram LatencyHistogram::from_json(const nlohmann::json& j, const std::string& where) {
  auto bad = [&](const std::string& field, const std::string& what) {
    return std::invalid_argument(where + ": histogram field '" + field + "': " + what);
  };
  // JSON parsers type a non-negative integer as signed or unsigned.
  auto is_u64 = [](const nlohmann::json& v) {
    return v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0);
  };
  auto u64 = [&](const char* field) {
    if (!j.contains(field) || !is_u64(j[field])) throw bad(field, "expected an unsigned integer");
    return j[field].get<std::uint64_t>();
  };
  if (!j.is_object()) throw bad("", "expected an object");
  LatencyHistogram h;
  h.count_ = u64("count");
  h.min_ = u64("min");
  h.max_ = u64("max");
  if (!j.contains("sum") || !j["sum"].is_string()) throw bad("sum", "expected a decimal string");
  const std::string s = j["sum"].get<std::string>();
  if (s.empty() || s.size() > 39) throw bad("sum", "expected a decimal string of 1-39 digits");
  for (char c : s) {
    if (c < '0' || c > '9') throw bad("sum", "expected a decimal string, got '" + s + "'");
    h.sum_ = h.sum_ * 10 + static_cast<unsigned>(c - '0');
  }
  std::uint64_t n = 0;
  if (j.contains("samples")) {
    if (!j["samples"].is_array()) throw bad("samples", "expected an array");
    for (const auto& v : j["samples"]) {
      if (!is_u64(v)) throw bad("samples", "expected unsigned integers");
      h.samples_.push_back(v.get<std::uint64_t>());
    }
    n = h.samples_.size();
    if (n > kExactMax) throw bad("samples", "more than " + std::to_string(kExactMax) + " samples");
  } else {
    h.exact_ = false;
    const std::uint64_t first = u64("first_bucket");
    if (!j.contains("counts") || !j["counts"].is_array()) throw bad("counts", "expected an array");
    if (first >= kBuckets) throw bad("first_bucket", "beyond the last bucket (" + std::to_string(kBuckets - 1) + ")");
    if (j["counts"].size() > kBuckets - first) throw bad("counts", "runs beyond the last bucket");
    h.first_ = static_cast<std::size_t>(first);
    for (const auto& v : j["counts"]) {
      if (!is_u64(v)) throw bad("counts", "expected unsigned integers");
      const std::uint64_t c = v.get<std::uint64_t>();
      if (c > ~std::uint64_t{0} - n) throw bad("counts", "total overflows");
      n += c;
      h.counts_.push_back(c);
    }
    if (n <= kExactMax) throw bad("counts", "a histogram of <= " + std::to_string(kExactMax) + " samples must be exact");
  }
  if (n != h.count_) throw bad("count", "is " + std::to_string(h.count_) + " but the samples/counts add up to " + std::to_string(n));
  if (n != 0 && h.min_ > h.max_) throw bad("min", "greater than max");
  return h;
}

nlohmann::json latency_summary(const std::vector<std::uint64_t>& samples) {
  LatencyHistogram h;
  for (std::uint64_t s : samples) h.add(s);
  return h.summary();
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

std::string dump_results(const nlohmann::json& results) { return results.dump(2) + "\n"; }

std::string dump_histograms(const nlohmann::json& histograms) {
  nlohmann::json doc = histograms;
  doc["format"] = "agentcg-histograms";
  doc["version"] = 2;
  return doc.dump() + "\n";
}

}  // namespace agentcg::sim
