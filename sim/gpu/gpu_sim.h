// SPDX-License-Identifier: GPL-2.0-only
// The GPU + PCIe model's entry point for sim/api.cc: builds the modelled
// GPUs and jobs from a trace's "gpu" section and drives them with a core/
// GPU policy on the shared Simulator. (Interface fixed; the model behind it
// lives in sim/gpu/.)
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "agentcg/gpu/gpu_config.h"
#include "sim/event_queue.h"
#include "sim/trace/trace.h"

namespace agentcg::sim {
struct ScheduleLog;
}

namespace agentcg::sim::gpu {

// True when the trace carries GPU jobs (trace.extra["gpu"]).
bool trace_has_gpu(const trace::Trace& trace);

class GpuSimulation {
 public:
  virtual ~GpuSimulation() = default;
  // Schedules the job arrivals; called before Simulator::run().
  virtual void start() = 0;
  // True once every job has finished.
  virtual bool done() const = 0;
  // The "gpu" object of results.json.
  virtual nlohmann::json results() const = 0;
};

// Throws std::invalid_argument for an unknown policy ("none", "nvshare",
// "memory-aware", "compute-limit", "memory-aware+compute-limit") and
// trace::TraceError for a bad gpu section. With `log`, lock holds, drains
// and memory residency are recorded there (sim/schedule_log.h).
std::unique_ptr<GpuSimulation> make_gpu_simulation(Simulator& sim, const trace::Trace& trace,
                                                   const std::string& policy,
                                                   const config::GpuConfig& config,
                                                   std::uint64_t seed, ScheduleLog* log = nullptr);

}  // namespace agentcg::sim::gpu
