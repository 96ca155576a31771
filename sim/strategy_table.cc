// SPDX-License-Identifier: GPL-2.0-only
// See strategy_table.h.
#include "sim/strategy_table.h"

namespace agentcg::sim {

const agentcg_strategy_action* StrategyTable::of_task(std::int64_t pid, const std::string& comm,
                                                      const std::string& cgroup_path) const {
  if (all_.empty()) return nullptr;
  const auto key = std::make_tuple(pid, comm, cgroup_path);
  auto it = task_cache_.find(key);
  if (it == task_cache_.end()) {
    strategy::Target t;
    t.cgroup_path = cgroup_path;
    t.comm = comm;
    t.pid = pid > 0 && pid <= 0xffffffffLL ? static_cast<std::uint32_t>(pid) : 0;
    int found = -1;
    for (size_t i = 0; i < all_.size() && found < 0; i++)
      if (all_[i].selector.pid_level() && strategy::matches_task(all_[i].selector, t)) found = static_cast<int>(i);
    it = task_cache_.emplace(key, found).first;
  }
  // A PID rule wins over the cgroup's rule (bpf/strategy_maps.bpf.h).
  return it->second >= 0 ? &all_[static_cast<size_t>(it->second)].action : of_cgroup(cgroup_path);
}

const agentcg_strategy_action* StrategyTable::of_cgroup(const std::string& cgroup_path) const {
  if (all_.empty()) return nullptr;
  auto it = cgroup_cache_.find(cgroup_path);
  if (it == cgroup_cache_.end()) {
    strategy::Target t;
    t.cgroup_path = cgroup_path;
    int found = -1;
    for (size_t i = 0; i < all_.size() && found < 0; i++)
      if (!all_[i].selector.pid_level() && strategy::matches_cgroup(all_[i].selector, t)) found = static_cast<int>(i);
    it = cgroup_cache_.emplace(cgroup_path, found).first;
  }
  return it->second >= 0 ? &all_[static_cast<size_t>(it->second)].action : nullptr;
}

}  // namespace agentcg::sim
