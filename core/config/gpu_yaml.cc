// SPDX-License-Identifier: GPL-2.0-only
// The `gpu:` section of the config.
#include <yaml-cpp/yaml.h>

#include "core/config/config.h"

namespace agentcg::config {

void parse_gpu_section(const YAML::Node& n, const Reader& r, GpuConfig& g) {
  r.only_keys(n, "gpu", "time_quantum_ms");
  if (n["time_quantum_ms"]) g.time_quantum_ms = r.u64(n, "gpu", "time_quantum_ms", 1, 86400000);
}

}  // namespace agentcg::config
