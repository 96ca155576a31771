// SPDX-License-Identifier: GPL-2.0-only
// A cgroup's id and the scheduling knobs the CPU classes read from it
// (cpu.weight, cpu.max), without the tree (sim/trace/cgroup_tree.h): the
// simulator's class interface (sim/cpu/sched_class.h) needs only these.
#pragma once

#include <cstdint>
#include <optional>

namespace agentcg::trace {

using CgroupId = std::uint32_t;  // dense index; 0 is the root cgroup
inline constexpr CgroupId kRootCgroup = 0;

// One cgroup's scheduling knobs as the CPU classes read them.
struct CgroupInfo {
  CgroupId id = kRootCgroup;
  CgroupId parent = kRootCgroup;  // root's parent is itself
  std::uint32_t depth = 0;        // root = 0
  std::uint32_t weight = 100;     // cpu.weight
  std::optional<std::uint64_t> quota_us;  // cpu.max quota; nullopt = max
  std::uint64_t period_us = 100000;
};

}  // namespace agentcg::trace
