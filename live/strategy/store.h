// SPDX-License-Identifier: GPL-2.0-only
// StrategyStore: agentcgroupd's strategies, created and deleted through the
// local API (api.h), persisted in a state file so a restart keeps them;
// plus the set pushed by the Kubernetes node agent (live/k8s/), which is
// not persisted (the API server is its store and is re-listed at start).
// Resolve(): strategies x (cgroups, pods, tasks) -> the entries of the
// scheduler's two maps (core/include/agentcg/strategy.h).
//
// Invariants: every change is all or nothing: a request is validated in
// full and the new state file is written (temp file, fsync, rename) before
// the in-memory set is swapped; on any error nothing changes. The
// generation counter increases with every change. Thread-safe (one mutex):
// the API thread and the daemon's loop call it.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "config/strategy_file.h"
#include "live/monitor/pod_map.h"

namespace agentcg::strategy {

struct StoreResult {
  int status = 200;   // HTTP-like: 200/201 ok, 400 bad, 404 missing, 409 conflict, 500 I/O
  std::string error;  // empty when ok
  bool ok() const { return status < 300; }
};

class StrategyStore {
 public:
  explicit StrategyStore(std::string state_file) : state_file_(std::move(state_file)) {}

  // Loads the state file (a missing file is an empty set). On a bad file
  // returns its error and keeps an empty set (the file is left as is).
  std::string load();
  StoreResult create(std::vector<Strategy> batch);
  StoreResult remove(const std::string& name);
  // The Kubernetes node agent's whole set (names are "<namespace>.<name>"
  // in listings); not persisted.
  void set_cluster(std::vector<Strategy> all);

  std::vector<Strategy> local() const;
  std::vector<Strategy> cluster() const;
  // Local first, then cluster; ids renumbered 1..N in that order.
  std::vector<Strategy> effective() const;
  std::uint64_t generation() const;

 private:
  std::string save_locked(const std::vector<Strategy>& next) const;

  mutable std::mutex mu_;
  std::string state_file_;
  std::vector<Strategy> local_;    // guarded by mu_
  std::vector<Strategy> cluster_;  // guarded by mu_
  std::uint64_t generation_ = 0;   // guarded by mu_
};

// One cgroup or task as the resolver sees it.
struct CgroupInfo {
  std::string path;  // relative to the cgroup v2 root
  std::uint64_t id = 0;
};
struct TaskInfo {
  std::uint32_t tgid = 0;
  std::string comm;
  std::string cgroup_path;
};

struct ResolvedEntry {
  agentcg_strategy_action action{};
  std::string strategy;  // name
  std::string what;      // cgroup path, or "comm (cgroup path)"
};
struct Resolved {
  std::map<std::uint64_t, ResolvedEntry> cgroups;  // cgroup id -> action
  std::map<std::uint32_t, ResolvedEntry> pids;     // tgid -> action
};

// Pure: the first matching strategy (in `all` order) wins per cgroup/PID.
Resolved resolve(const std::vector<Strategy>& all, const std::vector<CgroupInfo>& cgroups,
                 const std::vector<TaskInfo>& tasks, const monitor::PodDirectory& pods);

// The processes of this machine from /proc (tgid, comm, cgroup v2 path).
std::vector<TaskInfo> read_tasks(const std::string& proc_root = "/proc");

}  // namespace agentcg::strategy
