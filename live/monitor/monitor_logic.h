// SPDX-License-Identifier: GPL-2.0-only
// The parts of the scheduler monitor that need no kernel: summing the
// per-CPU values of bpf/monitor.bpf.c's map, labelling cgroups with their
// pod (pod_map.h), and the Prometheus text of the monitor's families:
//   agentcg_sched_<what>_total{cgroup, [namespace, pod, pod_uid, qos, container]}
//   agentcg_sched_wakeup_latency_seconds (histogram, same labels)
//   agentcg_pod_sched_<what>_total{namespace, pod, pod_uid, qos} (pods summed)
// Called by live/monitor/sched_monitor.cc (the libbpf side) and tested by
// monitor_logic_test.cc without BPF or root.
//
// Invariants: output ordered by cgroup path / pod uid (std::map), so a
// scrape is stable; counters are never decreased by the exporter.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bpf/monitor_intf.h"
#include "live/monitor/pod_map.h"

namespace agentcg::monitor {

// Sum of `ncpu` per-CPU values as the map lookup returns them.
agentcg_mon_cgrp_stat sum_percpu(const agentcg_mon_cgrp_stat* per_cpu, int ncpu);

struct MonitoredCgroup {
  std::string path;  // relative to the cgroup v2 root, "/" for the root
  agentcg_mon_cgrp_stat stat{};
};

struct MonitorSnapshot {
  bool loaded = false;
  std::string why_not;  // when !loaded: the load/attach error
  std::uint64_t global[AGENTCG_MON_NR_GLOBAL] = {};
  std::vector<MonitoredCgroup> cgroups;  // sorted by path
};

// Prometheus text (0.0.4) of the monitor's families. Per-pod families only
// for the pods `selectors` select (PodSchedulingMetrics; none = all pods).
std::string render_monitor_metrics(const MonitorSnapshot& s, const PodDirectory& pods,
                                   const std::vector<PodMetricsSelector>& selectors = {});

// Finds the cgroup v2 mount in a /proc/self/mountinfo text ("" if none).
std::string cgroup2_mount_of(const std::string& mountinfo);

}  // namespace agentcg::monitor
