// SPDX-License-Identifier: GPL-2.0-only
/*
 * Parses a byte size as written by users: "4096", "512K", "4G", "4GiB",
 * "16GB" (binary multiples: K = 1024). Integers only; nullopt for anything
 * else or on overflow. Lives beside the wire protocol (below shim and
 * daemon). Shared by the shim (AGENTCG_GPU_MEMORY_LIMIT), the
 * daemon (--gpu-memory) and gpuctl (memory-limit).
 */
#pragma once

#include <cstdint>
#include <optional>

namespace agentcg::gpu {

inline std::optional<std::uint64_t> parse_bytes(const char* text) {
  if (text == nullptr || *text < '0' || *text > '9') return std::nullopt;
  std::uint64_t v = 0;
  const char* p = text;
  while (*p >= '0' && *p <= '9') {
    const std::uint64_t d = static_cast<std::uint64_t>(*p - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
    ++p;
  }
  unsigned shift = 0;
  switch (*p) {
    case '\0': break;
    case 'k': case 'K': shift = 10; ++p; break;
    case 'm': case 'M': shift = 20; ++p; break;
    case 'g': case 'G': shift = 30; ++p; break;
    case 't': case 'T': shift = 40; ++p; break;
    default: return std::nullopt;
  }
  if (shift != 0 && (*p == 'i' || *p == 'I')) ++p;
  if (shift != 0 && (*p == 'b' || *p == 'B')) ++p;
  if (*p != '\0') return std::nullopt;
  if (shift != 0 && v > (UINT64_MAX >> shift)) return std::nullopt;
  return v << shift;
}

}  // namespace agentcg::gpu
