// SPDX-License-Identifier: GPL-2.0-only
// `trace stats`: a summary of a trace (or of a recording through its
// importer): tasks, forks per second (max over sliding 1 s windows), CPU
// demand, memory peaks, agent steps and tool calls, and for scheduler
// recordings the observed wakeup latency distribution under the same
// `wakeup_latency_ns` key and percentile names as results.json.
//
// Figures are from the trace played without contention: each process runs
// its ops back to back (run/sleep/io take their mean value), forks start
// children at the parent's position, `wait` waits for the children's ends.
// Invariant: deterministic (no unordered iteration; stable sorts).
// Who calls it: sim/import/commands.cc, tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/trace/trace.h"

namespace agentcg::import {

// Percentiles by the one definition of sim/metrics.h (LatencyHistogram:
// exact nearest-rank up to 1,024 samples, <= 0.79 % relative error above).
struct Percentiles {
  std::uint64_t count = 0;
  std::uint64_t p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0;
  static Percentiles of(std::vector<std::uint64_t> samples);
  nlohmann::json to_json() const;  // {"count","p50","p90","p99","p999","max"}
};

struct TraceStats {
  std::string name;
  std::uint64_t tasks = 0;              // listed processes + forked template instances
  std::uint64_t forks = 0;              // fork ops executed
  std::uint64_t max_forks_per_s = 0;    // most forks in any 1 s window [t, t + 1 s)
  std::uint64_t cpu_demand_ns = 0;      // sum of run ops (means)
  std::uint64_t span_ns = 0;            // last process end (uncontended)
  std::uint64_t memory_peak_bytes = 0;  // peak of the sum of all processes' memory
  std::uint64_t process_memory_peak_bytes = 0;  // largest single process
  std::uint64_t tool_calls = 0;
  std::uint64_t steps = 0;
  std::optional<Percentiles> wakeup_latency_ns;  // recordings with scheduler events only

  nlohmann::json to_json() const;
  std::string to_text() const;
};

TraceStats compute_stats(const trace::Trace& trace);

}  // namespace agentcg::import
