// SPDX-License-Identifier: GPL-2.0-only
// The typed form of a trace's "gpu" section (Trace::extra["gpu"], kept
// untyped by the trace parser): the modelled GPUs and the GPU jobs.
// Documented in sim/gpu/README.md. parse_gpu_section() reports errors as
// trace::TraceError with the trace's file, the line (trace::line_of) and the
// JSON pointer of the bad field, saying what was expected.
// Who calls it: gpu_sim.cc (make_gpu_simulation), the generators and the CSV
// importer (gpu_section_to_json), tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/trace/trace.h"

namespace agentcg::trace::gpu {

// PCIe link presets. Sources: docs/sources.md ("PCIe and Unified Memory figures").
struct PcieSpec {
  std::string name = "gen3";
  // Prefetch / copy rate: the UVMSmart bandwidth curve's asymptote, a = 12 GB/s
  // for a 16 GB/s (Gen3 x16) link, scaled by link rate for Gen4; Gen5's is
  // measured on an H200 (pcie_preset()).
  std::uint64_t copy_bytes_per_s = 12000000000ull;
  // Demand-paging (fault-driven migration) rate: ~3 GB/s measured on Gen3
  // systems (docs/sources.md); scaled by link rate for Gen4 (an assumption:
  // no published figure). Gen5's is fitted to an H200 (pcie_preset()).
  std::uint64_t fault_bytes_per_s = 3000000000ull;
  // The UVM driver's density prefetcher promotes the rest of a 2 MB VA block
  // to a prefetch once 51 % of it is resident (NVIDIA open UVM); so only
  // this share of faulted bytes moves at fault_bytes_per_s, the rest at
  // copy_bytes_per_s. With Gen3 figures this gives ~4.7 GB/s, matching
  // nvshare's measured effective swap-in of 3-5 GB/s (docs/sources.md).
  std::uint32_t density_promote_pct = 51;
  // Cost of one far fault, charged per 2 MB VA block faulted: ~45 us
  // (UVMSmart: 66,645 cycles); 2 MB VA blocks from NVIDIA's open UVM driver.
  std::uint64_t fault_latency_ns = 45000;
  // Pages nobody has touched yet are created on the GPU, not copied over
  // the link: by a kernel's faults at first_touch_bytes_per_s, by a
  // prefetch at create_bytes_per_s. 0 = not told apart (the first touch
  // moves like an evicted page: demand_ns; a prefetch at copy rate). Only
  // the gen5 preset sets them, measured on an H200 (tests/gpu/um_rates.cu).
  std::uint64_t first_touch_bytes_per_s = 0;
  std::uint64_t create_bytes_per_s = 0;

  // Time to demand-page `bytes` in (transfer + per-block fault latency).
  double demand_ns(std::uint64_t bytes) const { return demand_ns(bytes, demand_ns_per_byte()); }
  // The same with demand_ns_per_byte() computed once (the GPU model's hot
  // path: a fault per kernel when working sets thrash).
  double demand_ns(std::uint64_t bytes, double ns_per_byte) const {
    const double blocks = static_cast<double>((bytes + (2ull << 20) - 1) >> 21);
    return static_cast<double>(bytes) * ns_per_byte + blocks * static_cast<double>(fault_latency_ns);
  }
  // Transfer time per byte: the promoted part at fault bandwidth, the rest
  // at copy bandwidth.
  double demand_ns_per_byte() const {
    const double p = density_promote_pct / 100.0;
    return p * 1e9 / static_cast<double>(fault_bytes_per_s) + (1.0 - p) * 1e9 / static_cast<double>(copy_bytes_per_s);
  }
  // Effective demand-paging bandwidth (bytes/s, without fault latency): what
  // the policy budgets a switch at.
  std::uint64_t swap_bytes_per_s() const {
    const double p = density_promote_pct / 100.0;
    return static_cast<std::uint64_t>(1.0 / (p / static_cast<double>(fault_bytes_per_s) +
                                             (1.0 - p) / static_cast<double>(copy_bytes_per_s)));
  }
};

// "gen3" | "gen4" | "gen5"; nullopt for another name.
std::optional<PcieSpec> pcie_preset(const std::string& name);

struct GpuSpec {
  std::uint64_t memory_bytes = 0;
  PcieSpec pcie;
  // Memory each CUDA context takes on its GPU: ~0.5 GiB on a P100 (docs/sources.md).
  std::uint64_t context_overhead_bytes = 512ull << 20;
  // Slow-down of co-running kernels beyond their 1/n time share, in percent
  // (100 = none). No published figure: set per experiment.
  std::uint32_t corun_interference_pct = 100;
};

struct LimitChange {
  std::uint64_t at_ns = 0;
  std::uint32_t limit_pct = 100;
};

struct GpuJob {
  std::string id;
  std::uint64_t arrival_ns = 0;
  std::uint64_t memory_bytes = 0;          // managed allocation
  std::uint32_t touched_ppm = 1000000;     // fraction touched per iteration, parts per million
  std::uint64_t iterations = 1;
  std::uint64_t kernel_ns = 0;             // one kernel alone, data resident
  std::uint32_t kernels_per_iteration = 1;
  std::uint32_t sync_every = 0;            // kernels between syncs; 0 = once per iteration
  std::uint64_t host_ns = 0;               // CPU work between iterations (GPU idle for the job)
  std::uint32_t sm_pct = 100;              // share of the GPU's SMs one kernel occupies, 1..100
  std::optional<std::uint32_t> limit_pct;  // compute limit, 1..100
  std::optional<std::uint32_t> gpu;        // pinned GPU; absent = the policy places it
  std::vector<LimitChange> limit_changes;
  std::string pointer;                     // /gpu/jobs/N, for run-time errors
};

struct GpuWorkload {
  std::vector<GpuSpec> gpus;
  std::vector<GpuJob> jobs;
};

// Throws trace::TraceError (file, line, pointer, what was expected).
GpuWorkload parse_gpu_section(const trace::Trace& trace);
// The inverse (for generators and importers), deterministic key order.
nlohmann::json gpu_section_to_json(const GpuWorkload& w);

}  // namespace agentcg::trace::gpu
