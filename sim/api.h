// SPDX-License-Identifier: GPL-2.0-only
// The simulator's entry points, shared by the C++ CLI (sim/cli/main.cc) and
// the Python extension (python/src/), so a run from either gives the same
// results.json byte for byte.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "config/strategy_file.h"
#include "sim/cpu/sched_class.h"
#include "sim/metrics.h"
#include "sim/trace/trace.h"

namespace agentcg::sim {

struct RunOptions {
  std::string policy = "cfs";       // cfs, eevdf, fifo, flatcg, agentcg
  std::string gpu_policy = "none";  // none, nvshare, memory-aware, compute-limit, memory-aware+compute-limit
  config::Config config;            // tunables (defaults, or --config FILE)
  std::uint64_t seed = 1;
  // Optional: write a Chrome/Perfetto trace-event JSON of the schedule here.
  std::string perfetto_path;
  // Seed 001 strategies (--strategies FILE): applied by flatcg/agentcg
  // through core's agentcg/strategy.h, as live; empty = none.
  std::vector<strategy::Strategy> strategies;
  // Adds "histograms": {"wakeup_latency_ns", "tool_call_latency_ns"} (the
  // whole machine's LatencyHistogram::to_json(), sim/metrics.h), so that
  // runs of many hosts merge into fleet percentiles (python/agentcg/fleet.py).
  bool histograms = false;
  // With `histograms`: also "cgroups" (the same per cgroup), so that
  // histograms.json (sim::dump_histograms) holds every sample behind the
  // per-cgroup CDF plots. Off for the fleet, which merges machines only.
  bool cgroup_histograms = false;
};

// The CPU policies the simulator knows, in display order.
std::vector<std::string> cpu_policies();
std::vector<std::string> gpu_policies();

// The CPU policy's scheduling class (cpu_policies()), with cfg's cfs and
// scheduler keys. Throws std::invalid_argument for an unknown policy.
std::unique_ptr<SchedClass> make_class(const std::string& policy, const config::Config& cfg);

// Runs one simulation; returns the results document (see README, "results.json").
// Throws std::invalid_argument for an unknown policy and trace::TraceError
// for a trace that fails at run time.
nlohmann::json run(const trace::Trace& trace, const RunOptions& options);

// dump_results() (the results.json writer) is declared in sim/metrics.h.

}  // namespace agentcg::sim
