// SPDX-License-Identifier: GPL-2.0-only
// See sched_monitor.h.
#include "live/monitor/sched_monitor.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "live/cgroupfs/cgroupfs.h"
#include "monitor.skel.h"

namespace agentcg::monitor {

SchedMonitor::~SchedMonitor() { stop(); }

bool SchedMonitor::start() {
  stop();
  // In a container the host's tree is a bind mount (deploy/base/daemonset.yaml):
  // AGENTCG_CGROUP2_ROOT names it; cgroup ids are global, so the map keys match.
  if (const char* env = std::getenv("AGENTCG_CGROUP2_ROOT"); env && *env) {
    root_ = env;
  } else {
    const auto mi = live::read_small_file("/proc/self/mountinfo");
    root_ = mi ? cgroup2_mount_of(*mi) : "";
  }
  if (root_.empty()) {
    why_ = "no cgroup v2 mount in /proc/self/mountinfo";
    return false;
  }
  skel_ = agentcg_monitor_bpf__open();
  if (!skel_) {
    why_ = std::string("opening the monitor BPF object failed: ") + std::strerror(errno);
    return false;
  }
  if (int err = agentcg_monitor_bpf__load(skel_); err) {
    why_ = std::string("loading the monitor BPF object failed: ") + std::strerror(-err) +
           " (needs CAP_BPF+CAP_PERFMON and a kernel with BTF, /sys/kernel/btf/vmlinux)";
    agentcg_monitor_bpf__destroy(skel_);
    skel_ = nullptr;
    return false;
  }
  if (int err = agentcg_monitor_bpf__attach(skel_); err) {
    why_ = std::string("attaching the monitor to the scheduler tracepoints failed: ") + std::strerror(-err);
    agentcg_monitor_bpf__destroy(skel_);
    skel_ = nullptr;
    return false;
  }
  why_.clear();
  walk();
  return true;
}

void SchedMonitor::stop() {
  if (skel_) agentcg_monitor_bpf__destroy(skel_);
  skel_ = nullptr;
}

void SchedMonitor::walk() {
  paths_.clear();
  for (const auto& e : live::walk_cgroups(root_)) paths_[e.id] = e.path;
}

std::pair<std::uint64_t, std::uint64_t> SchedMonitor::prog_stats() const {
  std::pair<std::uint64_t, std::uint64_t> r{0, 0};
  if (!skel_) return r;
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, skel_->obj) {
    bpf_prog_info info{};
    __u32 len = sizeof(info);
    const int fd = bpf_program__fd(prog);
    if (fd < 0 || bpf_prog_get_info_by_fd(fd, &info, &len) != 0) continue;
    r.first += info.run_cnt;
    r.second += info.run_time_ns;
  }
  return r;
}

std::string SchedMonitor::path_of(std::uint64_t id) const {
  auto it = paths_.find(id);
  return it == paths_.end() ? "" : it->second;
}

MonitorSnapshot SchedMonitor::snapshot() {
  MonitorSnapshot s;
  s.loaded = skel_ != nullptr;
  s.why_not = why_;
  if (!skel_) return s;
  walk();
  const int ncpu = libbpf_num_possible_cpus();
  const size_t n = ncpu > 0 ? static_cast<size_t>(ncpu) : 1;
  {
    std::vector<std::uint64_t> per(n);
    for (std::uint32_t i = 0; i < AGENTCG_MON_NR_GLOBAL; i++)
      if (bpf_map__lookup_elem(skel_->maps.mon_global, &i, sizeof(i), per.data(), per.size() * sizeof(per[0]), 0) == 0)
        for (const auto v : per) s.global[i] += v;
  }
  const int fd = bpf_map__fd(skel_->maps.mon_cgrp);
  std::vector<agentcg_mon_cgrp_stat> per(n);
  std::vector<std::uint64_t> gone;
  std::uint64_t key = 0;
  std::uint64_t next = 0;
  bool first = true;
  std::map<std::string, MonitoredCgroup> by_path;
  // The map holds at most AGENTCG_MON_MAX_CGRPS keys: the walk is bounded.
  for (int guard = 0; guard <= AGENTCG_MON_MAX_CGRPS; guard++) {
    if (bpf_map_get_next_key(fd, first ? nullptr : &key, &next) != 0) break;
    first = false;
    key = next;
    if (bpf_map_lookup_elem(fd, &key, per.data()) != 0) continue;
    auto it = paths_.find(key);
    if (it == paths_.end()) {
      if (++missing_[key] >= 2) gone.push_back(key);
      continue;
    }
    missing_.erase(key);
    MonitoredCgroup& c = by_path[it->second];
    c.path = it->second;
    c.stat = sum_percpu(per.data(), static_cast<int>(n));
  }
  for (const auto id : gone) {
    bpf_map_delete_elem(fd, &id);
    missing_.erase(id);
  }
  for (auto& [path, c] : by_path) s.cgroups.push_back(std::move(c));
  return s;
}

}  // namespace agentcg::monitor
