// SPDX-License-Identifier: GPL-2.0-only
// Strategies in the simulator (`agentcg-sim run --strategies FILE`, the
// same document agentcgroupd's API and the SchedulingStrategy CRD take):
// resolves a task (pid, comm, cgroup path) or a cgroup to the action of the
// first matching strategy, as live/strategy/store.cc does for the live
// maps, so the scheduler class applies it through core's agentcg/strategy.h
// functions exactly as bpf/agentcg.bpf.c does. The CPU model answers the
// class's SchedContext::strategy_of_task/_cgroup from it.
//
// Invariants: deterministic (strategies in name order, caches keyed by
// value, no I/O). Pod selectors (namespace, labels) never match in the
// simulator: a trace has no pods. A task's PID rule is looked up with its
// current comm (after exec), as the live resolver rereads /proc.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "config/strategy_file.h"

namespace agentcg::sim {

class StrategyTable {
 public:
  explicit StrategyTable(std::vector<strategy::Strategy> all) : all_(std::move(all)) {}
  bool empty() const { return all_.empty(); }
  const agentcg_strategy_action* of_task(std::int64_t pid, const std::string& comm, const std::string& cgroup_path) const;
  const agentcg_strategy_action* of_cgroup(const std::string& cgroup_path) const;

 private:
  std::vector<strategy::Strategy> all_;
  mutable std::map<std::tuple<std::int64_t, std::string, std::string>, int> task_cache_;  // -> index or -1
  mutable std::map<std::string, int> cgroup_cache_;
};

}  // namespace agentcg::sim
