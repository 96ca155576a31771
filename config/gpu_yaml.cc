// SPDX-License-Identifier: GPL-2.0-only
// The `gpu:` section of the config: every key of config::GpuConfig with its
// range. Called by load_string() (config/config.cc). The key list and
// the AGENTCG_GPU_* environment names are documented in gpu_config.h and
// sim/gpu/README.md.
#include <yaml-cpp/yaml.h>

#include "config/config.h"

namespace agentcg::config {

void parse_gpu_section(const YAML::Node& n, const Reader& r, GpuConfig& g) {
  r.only_keys(n, "gpu",
              "time_quantum_ms,idle_release_ms,scheduler_on,switch_time_mode,switch_time_fixed_s,"
              "switch_time_multiplier,switch_time_min_s,switch_time_max_s,memory_reserve_mb,"
              "context_overhead_mb,swap_bandwidth_mb_per_s,prefetch_on_switch_in,max_wait_s,"
              "compute_window_ms,carryover_pct,drop_tail_billing_pct,max_queued_work_ms,placement,gpus,"
              "gpu_memory_mb");
  const std::uint64_t day_ms = 86400000;
  if (n["time_quantum_ms"]) g.time_quantum_ms = r.u64(n, "gpu", "time_quantum_ms", 1, day_ms);
  if (n["idle_release_ms"]) g.idle_release_ms = r.u64(n, "gpu", "idle_release_ms", 1, day_ms);
  if (n["scheduler_on"]) g.scheduler_on = r.boolean(n, "gpu", "scheduler_on");
  if (n["switch_time_mode"]) {
    g.switch_time_mode = r.str(n, "gpu", "switch_time_mode");
    if (g.switch_time_mode != "auto" && g.switch_time_mode != "fixed")
      r.fail(n["switch_time_mode"], "gpu.switch_time_mode", "expected auto or fixed");
  }
  if (n["switch_time_fixed_s"]) g.switch_time_fixed_s = r.u64(n, "gpu", "switch_time_fixed_s", 1, 86400);
  if (n["switch_time_multiplier"])
    g.switch_time_multiplier = r.u64(n, "gpu", "switch_time_multiplier", 1, 1000);
  if (n["switch_time_min_s"]) g.switch_time_min_s = r.u64(n, "gpu", "switch_time_min_s", 1, 86400);
  if (n["switch_time_max_s"]) g.switch_time_max_s = r.u64(n, "gpu", "switch_time_max_s", 1, 86400);
  if (g.switch_time_min_s > g.switch_time_max_s)
    r.fail(n, "gpu.switch_time_min_s", "must not exceed gpu.switch_time_max_s");
  if (n["memory_reserve_mb"]) g.memory_reserve_mb = r.u64(n, "gpu", "memory_reserve_mb", 0, 1 << 20);
  if (n["context_overhead_mb"])
    g.context_overhead_mb = r.u64(n, "gpu", "context_overhead_mb", 0, 1 << 16);
  if (n["swap_bandwidth_mb_per_s"])
    g.swap_bandwidth_mb_per_s = r.u64(n, "gpu", "swap_bandwidth_mb_per_s", 0, 1 << 24);
  if (n["prefetch_on_switch_in"]) g.prefetch_on_switch_in = r.boolean(n, "gpu", "prefetch_on_switch_in");
  if (n["max_wait_s"]) g.max_wait_s = r.u64(n, "gpu", "max_wait_s", 1, 86400 * 7);
  if (n["compute_window_ms"]) g.compute_window_ms = r.u64(n, "gpu", "compute_window_ms", 10, day_ms);
  if (n["carryover_pct"]) g.carryover_pct = r.u64(n, "gpu", "carryover_pct", 0, 100);
  if (n["drop_tail_billing_pct"])
    g.drop_tail_billing_pct = r.u64(n, "gpu", "drop_tail_billing_pct", 0, 100);
  if (n["max_queued_work_ms"]) g.max_queued_work_ms = r.u64(n, "gpu", "max_queued_work_ms", 0, day_ms);
  if (n["placement"]) {
    g.placement = r.str(n, "gpu", "placement");
    if (g.placement != "spread" && g.placement != "pack" && g.placement != "first-fit")
      r.fail(n["placement"], "gpu.placement", "expected spread, pack or first-fit");
  }
  if (n["gpus"]) g.machine_gpus = static_cast<std::uint32_t>(r.u64(n, "gpu", "gpus", 1, 4096));
  if (n["gpu_memory_mb"]) g.machine_gpu_memory_mb = r.u64(n, "gpu", "gpu_memory_mb", 1, 1ull << 30);
}

}  // namespace agentcg::config
