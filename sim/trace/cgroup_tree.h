// SPDX-License-Identifier: GPL-2.0-only
// The cgroup v2 hierarchy of a trace's machine, held in a Boost.Graph
// adjacency list (vertex = cgroup, edge = parent -> child). Ids are dense
// and parents come before children (id order is a topological order), which
// lets bottom-up sums run as one reverse pass.
//
// Also computes each cgroup's entitlement: the CPU share its weights and
// limits entitle it to when every task is runnable (see entitled_shares()).
// Part of the trace library (agentcg_trace) because both the simulator and
// the live player (agentcg-player, for the entitlement it reports) build it
// from a trace: the player needs no simulator code for it. The simulator
// names these types agentcg::sim::CgroupId/CgroupInfo/CgroupTree
// (sim/cpu/sched_class.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "sim/trace/cgroup_info.h"
#include "sim/trace/trace.h"

namespace agentcg::trace {

class CgroupTree {
 public:
  // Builds the tree from a validated trace (the root "/" is implicit).
  explicit CgroupTree(const Trace& trace);

  std::size_t size() const { return info_.size(); }
  const CgroupInfo& info(CgroupId id) const { return info_.at(id); }
  const std::string& path(CgroupId id) const { return paths_.at(id); }
  const CgroupSpec& spec(CgroupId id) const { return specs_.at(id); }
  const std::vector<CgroupId>& children(CgroupId id) const { return children_.at(id); }
  // Throws std::out_of_range naming the path if unknown.
  CgroupId find(const std::string& path) const;
  // True if `a` is `b` or an ancestor of `b`.
  bool is_ancestor(CgroupId a, CgroupId b) const;

  // Entitled fraction of the machine per cgroup (hierarchical: a parent's
  // entitlement includes its children's) when all tasks are runnable. Each
  // level divides its parent's CPUs among its child groups and its own tasks
  // (each task an entity of weight 100 that can use at most one CPU) by
  // weight, water-filling around caps: a group is capped by cpu.max
  // (quota/period CPUs) and by the number of tasks it holds (one CPU each).
  // `tasks[id]` is the number of tasks placed directly in cgroup `id`.
  std::vector<double> entitled_shares(std::uint32_t nr_cpus,
                                      const std::vector<std::uint32_t>& tasks) const;

 private:
  struct Vertex {
    CgroupId id;
  };
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, Vertex>;
  Graph graph_;
  std::vector<CgroupInfo> info_;
  std::vector<std::string> paths_;
  std::vector<CgroupSpec> specs_;
  std::vector<std::vector<CgroupId>> children_;
  std::map<std::string, CgroupId> by_path_;
};

}  // namespace agentcg::trace
