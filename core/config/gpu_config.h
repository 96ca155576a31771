// SPDX-License-Identifier: GPL-2.0-only
// Configuration of the GPU policies (`gpu:` section). Placeholder filled by
// the GPU-policy work: see core/include/agentcg/gpu/.
#pragma once

#include <cstdint>

namespace agentcg::config {

struct GpuConfig {
  std::uint64_t time_quantum_ms = 30000;  // nvshare TQ (default 30 s)
};

}  // namespace agentcg::config
