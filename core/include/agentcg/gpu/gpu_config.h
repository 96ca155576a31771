// SPDX-License-Identifier: GPL-2.0-only
// Configuration of the GPU policies: the `gpu:` section of the shared YAML
// config (parsed by config/gpu_yaml.cc), used by the simulator
// (sim/gpu/) and by the GPU daemon (live/gpud) through
// core/include/agentcg/gpu/policy.h. Defaults are those of the design
// (seeds 002/003, docs/sources.md); every field says where its default comes
// from. Invariant (checked by the parser): ranges below hold.
//
// Mapping of the seed's environment settings (the daemon may also read the
// AGENTCG_GPU_* names, which override the file):
//   NVSHARE_SWITCH_TIME_MODE        -> switch_time_mode      AGENTCG_GPU_SWITCH_TIME_MODE
//   NVSHARE_SWITCH_TIME_FIXED       -> switch_time_fixed_s   AGENTCG_GPU_SWITCH_TIME_FIXED_S
//   NVSHARE_SWITCH_TIME_MULTIPLIER  -> switch_time_multiplier AGENTCG_GPU_SWITCH_TIME_MULTIPLIER
//   NVSHARE_MEMORY_RESERVE_PERCENT  -> memory_reserve_mb + context_overhead_mb (the seed's
//                                      own review, section 10.1, replaces the percentage by a
//                                      fixed reserve plus a per-context overhead)
//   NVSHARE_COMPUTE_WINDOW_MS       -> compute_window_ms     AGENTCG_GPU_COMPUTE_WINDOW_MS
//   NVSHARE_QUOTA_CARRYOVER_PERCENT -> carryover_pct         AGENTCG_GPU_CARRYOVER_PCT
//   NVSHARE_DROP_TAIL_BILLING_PERCENT -> drop_tail_billing_pct AGENTCG_GPU_DROP_TAIL_BILLING_PCT
//   nvshare's TQ (nvsharectl -T)    -> time_quantum_ms       AGENTCG_GPU_TIME_QUANTUM_MS
#pragma once

#include <cstdint>
#include <string>

namespace agentcg::config {

struct GpuConfig {
  // --- nvshare (baseline) ---
  std::uint64_t time_quantum_ms = 30000;  // nvshare TQ, default 30 s (nvshare README)
  std::uint64_t idle_release_ms = 5000;   // client idle release after 5 s without work (nvshare client)
  bool scheduler_on = true;               // false = nvshare "off": everyone runs at once

  // --- memory-aware (memory-aware GPU design, docs/sources.md) ---
  std::string switch_time_mode = "auto";      // "auto" | "fixed" (memory-aware GPU design §8.1)
  std::uint64_t switch_time_fixed_s = 60;     // memory-aware GPU design §8.4 default
  std::uint64_t switch_time_multiplier = 5;   // memory-aware GPU design §8.2 default
  // The memory-aware GPU design clamps to [10, 300] s; the minimum here is 30 s, nvshare's TQ, so
  // that a forced switch never comes sooner than nvshare's would (with 10 s
  // memory-aware moved 3x nvshare's bytes over PCIe on the Tiresias trace).
  std::uint64_t switch_time_min_s = 30;
  std::uint64_t switch_time_max_s = 300;
  std::uint64_t memory_reserve_mb = 500;      // memory-aware GPU design §10.1: fixed reserve 500 MB
  std::uint64_t context_overhead_mb = 300;    // memory-aware GPU design §10.1: 300 MB per active context
  // 0 = use the GPU's own swap bandwidth (GpuCapacity::swap_bytes_per_s).
  std::uint64_t swap_bandwidth_mb_per_s = 0;
  bool prefetch_on_switch_in = true;          // memory-aware GPU design §10.2
  // No client waits longer than this for memory before backfilling stops and
  // the running set is switched out (memory-aware GPU design §6: "最大等待时间").
  std::uint64_t max_wait_s = 600;

  // GPU choice at a client's first request (policy.h): "spread" (idle
  // first, then least memory in use), "pack" (the fullest GPU it fits on),
  // "first-fit" (the lowest GPU that is idle or that it fits on).
  std::string placement = "spread";

  // --- machine profile for the simulator (0 = what the trace says) ---
  std::uint32_t machine_gpus = 0;         // YAML gpu.gpus: model this many GPUs
  std::uint64_t machine_gpu_memory_mb = 0;  // YAML gpu.gpu_memory_mb: memory of each

  // --- compute-limit (compute-limit GPU design, docs/sources.md) ---
  std::uint64_t compute_window_ms = 10000;    // compute-limit GPU design §2.2.1 (the fork used 2 s)
  std::uint64_t carryover_pct = 25;           // compute-limit GPU design §5 item 2 (fork default)
  std::uint64_t drop_tail_billing_pct = 70;   // compute-limit GPU design §5 item 3: default 70
  // Most work (ns of kernels) a limited client may have queued; queued
  // kernels that run after a DROP made the fork's 25 % deliver ~35 % (docs/sources.md).
  std::uint64_t max_queued_work_ms = 20;
};

}  // namespace agentcg::config
