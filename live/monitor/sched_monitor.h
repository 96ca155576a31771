// SPDX-License-Identifier: GPL-2.0-only
// SchedMonitor: loads and attaches bpf/monitor.bpf.c (skeleton
// monitor.skel.h) and reads its per-cgroup map, resolving cgroup ids to
// paths by walking the cgroup v2 mount (found in /proc/self/mountinfo).
// Needs BPF and BTF tracepoints (CAP_BPF + CAP_PERFMON), not sched_ext.
// Used by live/agentcgroupd (every daemon.mode) and by the native monitor
// test tool agentcg-monitor (monitor_tool.cc).
//
// Invariants: not thread-safe; the owner calls snapshot() from its event
// loop. Entries of cgroups that no longer exist are removed from the BPF
// map after they were missing from two walks (a cgroup created between the
// BPF insert and the walk is not dropped).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "live/monitor/monitor_logic.h"

struct agentcg_monitor_bpf;

namespace agentcg::monitor {

class SchedMonitor {
 public:
  SchedMonitor() = default;
  ~SchedMonitor();
  SchedMonitor(const SchedMonitor&) = delete;
  SchedMonitor& operator=(const SchedMonitor&) = delete;

  // Loads and attaches; false with the reason in why() on failure.
  bool start();
  void stop();
  bool loaded() const { return skel_ != nullptr; }
  const std::string& why() const { return why_; }
  const std::string& cgroup2_root() const { return root_; }

  // Reads every cgroup's stats (summed over CPUs) and the global counters.
  MonitorSnapshot snapshot();

  // Run count and run time (ns) summed over the monitor's BPF programs
  // (both 0 unless kernel.bpf_stats_enabled=1).
  std::pair<std::uint64_t, std::uint64_t> prog_stats() const;

  // The cgroup v2 path of an id from the last walk ("" if unknown).
  std::string path_of(std::uint64_t id) const;

 private:
  void walk();

  agentcg_monitor_bpf* skel_ = nullptr;
  std::string why_;
  std::string root_;
  std::map<std::uint64_t, std::string> paths_;   // id -> path (last walk)
  std::map<std::uint64_t, int> missing_;         // id -> walks it was missing from
};

}  // namespace agentcg::monitor
