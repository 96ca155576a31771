// SPDX-License-Identifier: GPL-2.0-only
// See daemon_logic.h.
#include "live/agentcgroupd/daemon_logic.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace agentcg::live {

enum agentcg_mode mode_of(const config::Config& c) {
  return c.daemon.mode == "flatcg" ? AGENTCG_MODE_FLATCG : AGENTCG_MODE_AGENTCG;
}

agentcg_tunables tunables_of(const config::Config& c) {
  agentcg_tunables t = c.scheduler;
  if (mode_of(c) == AGENTCG_MODE_FLATCG) t.features = 0;
  return t;
}

std::optional<std::uint64_t> parse_memory_events_high(const std::string& text) {
  std::istringstream in(text);
  std::string key;
  std::string value;
  while (in >> key >> value) {
    if (key != "high") continue;
    if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    try {
      return std::stoull(value);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::uint32_t MemMonitor::poll(const std::string& path, std::uint64_t high_events,
                               std::uint64_t now_ns, const agentcg_tunables& t,
                               std::uint32_t* events) {
  auto it = states_.try_emplace(path, agentcg_mem_state{0, 0, 0, 0}).first;
  const std::uint32_t ev = agentcg_mem_penalty_update(&it->second, high_events, now_ns, &t);
  if (events) *events |= ev;
  return it->second.penalty;
}

void MemReadPlan::track(const std::string& path, bool watched) {
  const auto [it, added] = watched_.try_emplace(path, watched);
  it->second = watched;
  if (added) pending_.insert(path);  // the baseline high count
}

void MemReadPlan::untrack(const std::string& path) {
  watched_.erase(path);
  pending_.erase(path);
}

void MemReadPlan::modified(const std::string& path) {
  if (watched_.count(path)) pending_.insert(path);
}

void MemReadPlan::modified_all() {
  for (const auto& [path, w] : watched_) pending_.insert(path);
}

std::vector<std::string> MemReadPlan::due(const MemMonitor& m, std::uint64_t now_ns,
                                          std::uint64_t interval_ns) {
  std::set<std::string> out;
  out.swap(pending_);
  if (!swept_ || now_ns - last_sweep_ns_ >= interval_ns) {
    swept_ = true;
    last_sweep_ns_ = now_ns;
    for (const auto& [path, watched] : watched_)
      if (!watched || m.penalty(path) > 0) out.insert(path);
  }
  return {out.begin(), out.end()};
}

std::uint32_t MemMonitor::penalty(const std::string& path) const {
  const auto it = states_.find(path);
  return it == states_.end() ? 0 : it->second.penalty;
}


namespace {

void family(std::ostringstream& o, const std::string& name, const char* type, const std::string& help) {
  o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
}

}  // namespace

std::string render_metrics(const MetricsSnapshot& s) {
  std::ostringstream o;
  family(o, "agentcg_attached", "gauge", "1 while the agentcg sched_ext scheduler is attached");
  o << "agentcg_attached{mode=\"" << escape_label(s.mode) << "\"} " << (s.attached ? 1 : 0) << '\n';
  for (std::uint32_t i = 0; i < AGENTCG_NR_COUNTERS; i++) {
    const std::string name = std::string("agentcg_") + agentcg_counter_name(i) + "_total";
    std::uint64_t v = s.counters[i];
    // The memory monitor runs in the daemon: its events are counted here.
    if (i == AGENTCG_C_penalties_applied) v += s.mem_penalty_events[0];
    if (i == AGENTCG_C_penalties_released) v += s.mem_penalty_events[1];
    family(o, name, "counter", agentcg_counter_help(i));
    o << name << ' ' << v << '\n';
  }
  for (std::uint32_t i = 0; i < AGENTCG_NR_BPF_STATS; i++) {
    const std::string name = std::string("agentcg_bpf_") + agentcg_bpf_stat_name(i) + "_total";
    family(o, name, "counter", agentcg_bpf_stat_help(i));
    o << name << ' ' << s.bpf_stats[i] << '\n';
  }
  family(o, "agentcg_config_reloads_total", "counter", "successful SIGHUP config reloads");
  o << "agentcg_config_reloads_total " << s.config_reloads << '\n';
  family(o, "agentcg_config_reload_errors_total", "counter",
         "rejected SIGHUP config reloads (the old config stays)");
  o << "agentcg_config_reload_errors_total " << s.config_reload_errors << '\n';
  family(o, "agentcg_cgroups", "gauge", "cgroups watched by the daemon");
  o << "agentcg_cgroups " << s.cgroups.size() << '\n';

  struct PerCg {
    const char* name;
    const char* type;
    const char* help;
    bool needs_stat;
    std::uint64_t (*get)(const CgroupMetrics&);
  };
  static const PerCg kPer[] = {
      {"agentcg_mem_penalty", "gauge", "current memory penalty by cgroup (0..mem_penalty_max)", false,
       [](const CgroupMetrics& c) -> std::uint64_t { return c.mem_penalty; }},
      {"agentcg_cgroup_runtime_ns_total", "counter", "CPU time of the cgroup's tasks under agentcg (ns)", true,
       [](const CgroupMetrics& c) -> std::uint64_t { return c.stat.runtime_ns; }},
      {"agentcg_cgroup_wait_ns_total", "counter", "time the cgroup's tasks waited runnable (ns)", true,
       [](const CgroupMetrics& c) -> std::uint64_t { return c.stat.wait_ns; }},
      {"agentcg_cgroup_forks_total", "counter", "forks in the cgroup seen by the scheduler", true,
       [](const CgroupMetrics& c) -> std::uint64_t { return c.stat.nr_forks; }},
      {"agentcg_cgroup_throttled_ns_total", "counter", "time the cgroup was throttled by cpu.max (ns)", true,
       [](const CgroupMetrics& c) -> std::uint64_t { return c.stat.throttled_ns; }},
      {"agentcg_cgroup_nr_periods_total", "counter", "cpu.stat nr_periods: cpu.max periods with activity", true,
       [](const CgroupMetrics& c) -> std::uint64_t { return c.stat.nr_periods; }},
      {"agentcg_cgroup_nr_throttled_total", "counter", "cpu.stat nr_throttled: periods that throttled (<= nr_periods)", true,
       [](const CgroupMetrics& c) -> std::uint64_t { return c.stat.nr_throttled; }},
      {"agentcg_cgroup_nr_bursts_total", "counter", "cpu.stat nr_bursts: periods that used cpu.max.burst", true,
       [](const CgroupMetrics& c) -> std::uint64_t { return c.stat.nr_bursts; }},
      {"agentcg_cgroup_burst_ns_total", "counter", "cpu.stat burst_usec x 1000: runtime beyond quota", true,
       [](const CgroupMetrics& c) -> std::uint64_t { return c.stat.burst_ns; }},
      {"agentcg_cgroup_weight", "gauge", "cpu.weight as the scheduler sees it", true,
       [](const CgroupMetrics& c) -> std::uint64_t { return c.stat.weight; }},
      {"agentcg_cgroup_eff_weight", "gauge", "effective weight after penalties and fork-storm down-weighting", true,
       [](const CgroupMetrics& c) -> std::uint64_t { return c.stat.eff_weight; }},
      {"agentcg_cgroup_fork_storm", "gauge", "1 while the cgroup is in a fork storm", true,
       [](const CgroupMetrics& c) -> std::uint64_t { return c.stat.fork_storm; }},
  };
  for (const PerCg& m : kPer) {
    family(o, m.name, m.type, m.help);
    for (const CgroupMetrics& c : s.cgroups) {
      if (m.needs_stat && !c.has_stat) continue;
      o << m.name << "{cgroup=\"" << escape_label(c.path) << "\"} " << m.get(c) << '\n';
    }
  }
  return o.str();
}

}  // namespace agentcg::live
