// SPDX-License-Identifier: GPL-2.0-only
// See monitor_logic.h.
#include "live/monitor/monitor_logic.h"

#include <cstddef>
#include <sstream>

#include "live/cgroupfs/cgroupfs.h"

namespace agentcg::monitor {

static_assert(sizeof(agentcg_mon_cgrp_stat) == (10 + AGENTCG_MON_LAT_BUCKETS) * 8,
              "agentcg_mon_cgrp_stat must have no padding (shared with BPF)");

agentcg_mon_cgrp_stat sum_percpu(const agentcg_mon_cgrp_stat* per_cpu, int ncpu) {
  agentcg_mon_cgrp_stat s{};
  for (int c = 0; c < ncpu; c++) {
    const agentcg_mon_cgrp_stat& v = per_cpu[c];
    s.runtime_ns += v.runtime_ns;
    s.wait_ns += v.wait_ns;
    s.nvcsw += v.nvcsw;
    s.nivcsw += v.nivcsw;
    s.run_count += v.run_count;
    s.migrations += v.migrations;
    s.wakeups += v.wakeups;
    s.forks += v.forks;
    s.exits += v.exits;
    s.lat_sum_ns += v.lat_sum_ns;
    for (int b = 0; b < AGENTCG_MON_LAT_BUCKETS; b++) s.lat_hist[b] += v.lat_hist[b];
  }
  return s;
}

namespace {

using live::escape_label;

struct Field {
  const char* name;  // after agentcg_sched_ / agentcg_pod_sched_
  const char* help;
  std::uint64_t agentcg_mon_cgrp_stat::*member;
};

const Field kFields[] = {
    {"runtime_ns_total", "CPU time from sched_switch (ns)", &agentcg_mon_cgrp_stat::runtime_ns},
    {"wait_ns_total", "time runnable but not running, after a wakeup or a preemption (ns)",
     &agentcg_mon_cgrp_stat::wait_ns},
    {"voluntary_switches_total", "context switches while blocking", &agentcg_mon_cgrp_stat::nvcsw},
    {"involuntary_switches_total", "context switches while runnable (preempted, yielded)",
     &agentcg_mon_cgrp_stat::nivcsw},
    {"run_count_total", "times a task was switched in", &agentcg_mon_cgrp_stat::run_count},
    {"migrations_total", "task migrations between CPUs", &agentcg_mon_cgrp_stat::migrations},
    {"wakeups_total", "task wakeups (incl. new tasks)", &agentcg_mon_cgrp_stat::wakeups},
    {"forks_total", "forks by tasks of the cgroup", &agentcg_mon_cgrp_stat::forks},
    {"exits_total", "task exits", &agentcg_mon_cgrp_stat::exits},
};

void family(std::ostringstream& o, const std::string& name, const char* type, const std::string& help) {
  o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
}

std::string pod_labels(const PodRef& ref, const PodInfo* info) {
  std::string l;
  if (info) l += ",namespace=\"" + escape_label(info->ns) + "\",pod=\"" + escape_label(info->name) + "\"";
  l += ",pod_uid=\"" + escape_label(ref.pod_uid) + "\",qos=\"" + qos_name(ref.qos) + "\"";
  return l;
}

std::string labels_of(const MonitoredCgroup& c, const PodDirectory& pods) {
  std::string l = "cgroup=\"" + escape_label(c.path) + "\"";
  const auto ref = pod_of_cgroup_path(c.path);
  if (!ref) return l;
  const PodInfo* info = pods.find(ref->pod_uid);
  l += pod_labels(*ref, info);
  if (!ref->container_id.empty()) {
    std::string name;
    if (info) {
      auto it = info->containers.find(ref->container_id);
      if (it != info->containers.end()) name = it->second;
    }
    l += ",container_id=\"" + escape_label(ref->container_id) + "\"";
    if (!name.empty()) l += ",container=\"" + escape_label(name) + "\"";
  }
  return l;
}

// Bucket b counts latencies < 2^b us: the le bound is 2^b us in seconds.
std::string le_of(int b) {
  if (b == AGENTCG_MON_LAT_BUCKETS - 1) return "+Inf";
  std::ostringstream o;
  o << (static_cast<double>(1ULL << b) / 1e6);
  return o.str();
}

}  // namespace

std::string render_monitor_metrics(const MonitorSnapshot& s, const PodDirectory& pods,
                                   const std::vector<PodMetricsSelector>& selectors) {
  std::ostringstream o;
  family(o, "agentcg_monitor_loaded", "gauge", "1 while the scheduler-tracepoint monitor is attached");
  o << "agentcg_monitor_loaded " << (s.loaded ? 1 : 0) << '\n';
  static const char* const kGlobalNames[] = {
#define AGENTCG_MON_X_NAME(num, name, help) #name,
      AGENTCG_MON_GLOBAL(AGENTCG_MON_X_NAME)
#undef AGENTCG_MON_X_NAME
  };
  static const char* const kGlobalHelp[] = {
#define AGENTCG_MON_X_HELP(num, name, help) help,
      AGENTCG_MON_GLOBAL(AGENTCG_MON_X_HELP)
#undef AGENTCG_MON_X_HELP
  };
  static_assert(sizeof(kGlobalNames) / sizeof(kGlobalNames[0]) == AGENTCG_MON_NR_GLOBAL,
                "AGENTCG_MON_NR_GLOBAL must match the AGENTCG_MON_GLOBAL list");
  for (int i = 0; i < AGENTCG_MON_NR_GLOBAL; i++) {
    const std::string name = std::string("agentcg_monitor_") + kGlobalNames[i] + "_total";
    family(o, name, "counter", kGlobalHelp[i]);
    o << name << ' ' << s.global[i] << '\n';
  }
  std::vector<std::string> labels;
  labels.reserve(s.cgroups.size());
  for (const auto& c : s.cgroups) labels.push_back(labels_of(c, pods));
  for (const Field& f : kFields) {
    const std::string name = std::string("agentcg_sched_") + f.name;
    family(o, name, "counter", std::string(f.help) + ", by cgroup");
    for (size_t i = 0; i < s.cgroups.size(); i++)
      o << name << '{' << labels[i] << "} " << s.cgroups[i].stat.*f.member << '\n';
  }
  const std::string h = "agentcg_sched_wakeup_latency_seconds";
  family(o, h, "histogram", "wakeup -> running latency, by cgroup");
  for (size_t i = 0; i < s.cgroups.size(); i++) {
    const auto& st = s.cgroups[i].stat;
    std::uint64_t cum = 0;
    for (int b = 0; b < AGENTCG_MON_LAT_BUCKETS; b++) {
      cum += st.lat_hist[b];
      o << h << "_bucket{" << labels[i] << ",le=\"" << le_of(b) << "\"} " << cum << '\n';
    }
    o << h << "_sum{" << labels[i] << "} " << static_cast<double>(st.lat_sum_ns) / 1e9 << '\n';
    o << h << "_count{" << labels[i] << "} " << cum << '\n';
  }
  // Per pod: the pod's cgroups (pod slice and containers) summed.
  struct PodSum {
    PodRef ref;
    agentcg_mon_cgrp_stat stat{};
  };
  std::map<std::string, PodSum> by_pod;
  for (const auto& c : s.cgroups) {
    const auto ref = pod_of_cgroup_path(c.path);
    if (!ref || !pod_selected(selectors, pods.find(ref->pod_uid))) continue;
    PodSum& p = by_pod[ref->pod_uid];
    p.ref = *ref;
    for (const Field& f : kFields) p.stat.*f.member += c.stat.*f.member;
  }
  for (const Field& f : kFields) {
    const std::string name = std::string("agentcg_pod_sched_") + f.name;
    family(o, name, "counter", std::string(f.help) + ", by pod");
    for (const auto& [uid, p] : by_pod) {
      std::string l = pod_labels(p.ref, pods.find(uid));
      o << name << '{' << l.substr(1) << "} " << p.stat.*f.member << '\n';
    }
  }
  return o.str();
}

std::string cgroup2_mount_of(const std::string& mountinfo) {
  // mountinfo: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER
  std::istringstream in(mountinfo);
  std::string line;
  while (std::getline(in, line)) {
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string fstype;
    tail >> fstype;
    if (fstype != "cgroup2") continue;
    std::istringstream head(line.substr(0, dash));
    std::string id, parent, dev, root, mountpoint;
    head >> id >> parent >> dev >> root >> mountpoint;
    if (root == "/") return mountpoint;  // a bind of a sub-tree is not the root
  }
  return "";
}

}  // namespace agentcg::monitor
