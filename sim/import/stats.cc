// SPDX-License-Identifier: GPL-2.0-only
// `trace stats` figures: an uncontended walk over a trace's processes (see
// stats.h); percentiles by sim/metrics.h's one definition.
// Who calls it: sim/import/commands.cc, tests.
#include "sim/import/stats.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <sstream>

#include "sim/metrics.h"

namespace agentcg::import {

namespace {

constexpr std::uint64_t kNsPerS = 1000000000ULL;

struct ProcState {
  std::uint64_t t = 0;
  std::uint64_t mem = 0;
  std::uint64_t children_end = 0;
};

class Walker {
 public:
  explicit Walker(const trace::Trace& tr) : tr_(tr) {
    for (const trace::ProcessSpec& p : tr.processes) by_pid_[p.pid] = &p;
  }

  TraceStats run() {
    for (const trace::ProcessSpec& p : tr_.processes)
      if (p.start_ns) s_.span_ns = std::max(s_.span_ns, process(p, *p.start_ns));
    std::sort(forks_.begin(), forks_.end());
    for (std::size_t i = 0, j = 0; i < forks_.size(); ++i) {
      while (j < forks_.size() && forks_[j] < forks_[i] + kNsPerS) ++j;
      s_.max_forks_per_s = std::max<std::uint64_t>(s_.max_forks_per_s, j - i);
    }
    std::sort(mem_.begin(), mem_.end());
    std::int64_t cur = 0;
    for (const auto& [t, d] : mem_) {
      cur += d;
      if (cur > 0) s_.memory_peak_bytes = std::max(s_.memory_peak_bytes, static_cast<std::uint64_t>(cur));
    }
    s_.name = tr_.name;
    return s_;
  }

 private:
  std::uint64_t process(const trace::ProcessSpec& p, std::uint64_t start) {
    ++s_.tasks;
    ProcState st;
    st.t = start;
    st.children_end = start;
    ops(p.ops, st);
    if (st.mem != 0) mem_.emplace_back(st.t, -static_cast<std::int64_t>(st.mem));
    return std::max(st.t, st.children_end);
  }

  static std::uint64_t mean(const trace::Value& v) {
    return v.is_random() ? static_cast<std::uint64_t>(v.mean() + 0.5) : v.a;
  }

  // false once an exit op ran.
  bool ops(const std::vector<trace::Op>& list, ProcState& st) {
    for (const trace::Op& op : list) {
      switch (op.kind) {
        case trace::OpKind::kRun:
          s_.cpu_demand_ns += mean(op.amount);
          st.t += mean(op.amount);
          break;
        case trace::OpKind::kSleep:
        case trace::OpKind::kIo:
          st.t += mean(op.amount);
          break;
        case trace::OpKind::kFork: {
          const trace::ProcessSpec* child = op.child().get();
          if (child == nullptr) {
            auto it = by_pid_.find(op.pid());
            if (it == by_pid_.end()) break;
            child = it->second;
          }
          ++s_.forks;
          forks_.push_back(st.t);
          st.children_end = std::max(st.children_end, process(*child, st.t));
          break;
        }
        case trace::OpKind::kExec:
          break;
        case trace::OpKind::kWait:
          st.t = std::max(st.t, st.children_end);
          break;
        case trace::OpKind::kExit:
          return false;
        case trace::OpKind::kMem: {
          const std::uint64_t b = mean(op.amount);
          mem_.emplace_back(st.t, static_cast<std::int64_t>(b) - static_cast<std::int64_t>(st.mem));
          st.mem = b;
          s_.process_memory_peak_bytes = std::max(s_.process_memory_peak_bytes, b);
          break;
        }
        case trace::OpKind::kRepeat:
          for (std::uint32_t i = 0; i < op.count(); ++i)
            if (!ops(op.body(), st)) return false;
          break;
        case trace::OpKind::kToolBegin:
          ++s_.tool_calls;
          break;
        case trace::OpKind::kToolEnd:
          break;
        case trace::OpKind::kStep:
          ++s_.steps;
          break;
      }
    }
    return true;
  }

  const trace::Trace& tr_;
  std::map<std::int64_t, const trace::ProcessSpec*> by_pid_;
  std::vector<std::uint64_t> forks_;
  std::vector<std::pair<std::uint64_t, std::int64_t>> mem_;
  TraceStats s_;
};

std::string ms(std::uint64_t ns) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(3) << static_cast<double>(ns) / 1e6 << " ms";
  return o.str();
}

std::string mib(std::uint64_t b) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(1) << static_cast<double>(b) / (1024.0 * 1024.0) << " MiB";
  return o.str();
}

}  // namespace

Percentiles Percentiles::of(std::vector<std::uint64_t> v) {
  // The one percentile definition (sim/metrics.h), the same as results.json.
  sim::LatencyHistogram h;
  for (std::uint64_t s : v) h.add(s);
  Percentiles p;
  p.count = h.count();
  p.p50 = h.percentile_ppm(500000);
  p.p90 = h.percentile_ppm(900000);
  p.p99 = h.percentile_ppm(990000);
  p.p999 = h.percentile_ppm(999000);
  p.max = h.max();
  return p;
}

nlohmann::json Percentiles::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  j["count"] = count;
  j["p50"] = p50;
  j["p90"] = p90;
  j["p99"] = p99;
  j["p999"] = p999;
  j["max"] = max;
  return j;
}

TraceStats compute_stats(const trace::Trace& trace) { return Walker(trace).run(); }

nlohmann::json TraceStats::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  j["name"] = name;
  j["tasks"] = tasks;
  j["forks"] = forks;
  j["max_forks_per_s"] = max_forks_per_s;
  j["cpu_demand_ns"] = cpu_demand_ns;
  j["span_ns"] = span_ns;
  // Average CPUs busy over the span, in thousandths (integer, deterministic).
  j["avg_cpu_milli"] = span_ns == 0 ? 0 : cpu_demand_ns * 1000 / span_ns;
  j["memory_peak_bytes"] = memory_peak_bytes;
  j["process_memory_peak_bytes"] = process_memory_peak_bytes;
  j["steps"] = steps;
  j["tool_calls"] = tool_calls;
  if (wakeup_latency_ns) j["wakeup_latency_ns"] = wakeup_latency_ns->to_json();
  return j;
}

std::string TraceStats::to_text() const {
  std::ostringstream o;
  o << "trace " << name << "\n"
    << "  tasks:            " << tasks << " (" << forks << " forks, max " << max_forks_per_s
    << " forks in 1 s)\n"
    << "  CPU demand:       " << ms(cpu_demand_ns) << " over a span of " << ms(span_ns);
  if (span_ns != 0)
    o << " (" << std::fixed << std::setprecision(1)
      << 100.0 * static_cast<double>(cpu_demand_ns) / static_cast<double>(span_ns) << "% of one CPU)";
  o << "\n"
    << "  memory peak:      " << mib(memory_peak_bytes) << " total, " << mib(process_memory_peak_bytes)
    << " largest process\n"
    << "  agent:            " << steps << " steps, " << tool_calls << " tool calls\n";
  if (wakeup_latency_ns) {
    const Percentiles& p = *wakeup_latency_ns;
    o << "  wakeup latency:   " << p.count << " wakeups, p50 " << ms(p.p50) << ", p90 " << ms(p.p90)
      << ", p99 " << ms(p.p99) << ", p99.9 " << ms(p.p999) << ", max " << ms(p.max) << "\n";
  }
  return o.str();
}

}  // namespace agentcg::import
