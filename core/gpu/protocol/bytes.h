// SPDX-License-Identifier: GPL-2.0-only
/*
 * A byte size as written by users, in the one size grammar of agentcg
 * (core/units/units.h: "4096", "512K", "4G", "4GiB" binary; "16GB" = 16 x
 * 10^9). nullopt for anything else or on overflow. Beside the wire protocol
 * (below shim and daemon) for its callers: the shim
 * (AGENTCG_GPU_MEMORY_LIMIT), the daemon (--gpu-memory) and gpuctl
 * (set-memory-limit).
 */
#pragma once

#include <cstdint>
#include <optional>

#include "core/units/units.h"

namespace agentcg::gpu {

inline std::optional<std::uint64_t> parse_bytes(const char* text) {
  if (text == nullptr) return std::nullopt;
  return units::parse_size_bytes(text);
}

}  // namespace agentcg::gpu
