// SPDX-License-Identifier: GPL-2.0-only
// The one results.json builder (see results.h for the invariants and who
// calls it).
#include "sim/results.h"

#include <algorithm>
#include <string_view>
#include <unordered_set>

#include "sim/metrics.h"

namespace agentcg::sim {

namespace {

std::uint64_t summary_count(const nlohmann::json& s) {
  const auto it = s.is_object() ? s.find("count") : s.end();
  return it != s.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
}

// Which of `cgroups` are listed: the root (index 0), those with activity
// and their ancestors (found by path: "/a/b" is under "/a").
std::vector<bool> listed_cgroups(const std::vector<CgroupResultsInput>& cgroups) {
  std::unordered_set<std::string_view> ancestors;
  for (const CgroupResultsInput& g : cgroups) {
    if (!cgroup_had_activity(g)) continue;
    std::string_view p = g.path;
    for (std::size_t k = p.rfind('/'); k != std::string_view::npos && k > 0; k = p.rfind('/')) {
      p = p.substr(0, k);
      if (!ancestors.insert(p).second) break;  // its ancestors are in already
    }
  }
  std::vector<bool> listed(cgroups.size());
  for (std::size_t i = 0; i < cgroups.size(); ++i)
    listed[i] = i == 0 || cgroup_had_activity(cgroups[i]) || ancestors.count(cgroups[i].path) != 0;
  return listed;
}

}  // namespace

bool cgroup_had_activity(const CgroupResultsInput& c) {
  return c.cpu_time_ns != 0 || c.tasks != 0 || c.forks != 0 || summary_count(c.wakeup_latency_ns) != 0 ||
         summary_count(c.tool_call_latency_ns) != 0 || c.throttled_ns != 0 || c.nr_throttled != 0 ||
         c.nr_periods != 0 || c.mem_peak_bytes != 0 || c.mem_events_high != 0 || c.mem_events_max != 0 ||
         c.mem_oom_kill != 0;
}

double weight_shortfall_points(const CgroupResultsInput& g, std::uint64_t bin_ns, std::uint64_t end_ns,
                               std::uint64_t cpus) {
  if (cpus == 0) return 0.0;
  const std::uint64_t bin = bin_ns > 0 ? bin_ns : 1;
  const std::uint64_t k = std::max<std::uint64_t>(1, kWeightWindowNs / bin);
  const std::size_t n = std::max(g.guaranteed_ns.size(), g.series_ns.size());
  double short_sum = 0;
  std::uint64_t busy = 0;
  for (std::size_t w = 0; w < n; w += k) {
    double owed = 0, got = 0;
    for (std::size_t b = w; b < std::min<std::size_t>(n, w + k); ++b) {
      if (b < g.guaranteed_ns.size()) owed += g.guaranteed_ns[b];
      if (b < g.series_ns.size()) got += static_cast<double>(g.series_ns[b]);
    }
    if (owed <= 0) continue;
    const std::uint64_t lo = w * bin, hi = std::max(lo + 1, std::min(end_ns, (w + k) * bin));
    ++busy;
    short_sum += std::max(0.0, owed - got) / (static_cast<double>(hi - lo) * static_cast<double>(cpus));
  }
  return busy ? 100.0 * short_sum / static_cast<double>(busy) : 0.0;
}

nlohmann::json cpu_results_json(const CpuResultsInput& in) {
  using nlohmann::json;
  const std::uint64_t end = in.duration_ns;
  const double total = static_cast<double>(end) * static_cast<double>(in.cpus);
  const std::uint64_t bin = in.series_bin_ns > 0 ? in.series_bin_ns : 1;
  const std::uint64_t nbins = end / bin + (end % bin ? 1 : 0);
  // The smallest merge with nbins / merge <= 200, in O(1): a loop here ran
  // once per 100 ms of run time (a hang for duration_ns near 2^62).
  const std::uint64_t merge = nbins / 201 + 1;
  const std::uint64_t interval = bin * merge;

  json series_j = json::object();
  double worst_shortfall = -1;  // < 0: nothing was owed (the live player)
  json cgroups = json::object();
  std::vector<double> jain_x;
  const std::vector<bool> listed = listed_cgroups(in.cgroups);
  std::uint64_t idle = in.idle_cgroups;
  for (std::size_t i = 0; i < in.cgroups.size(); ++i) {
    const CgroupResultsInput& g = in.cgroups[i];
    if (!listed[i]) {
      ++idle;
      continue;
    }
    json c;
    const double share = total > 0 ? static_cast<double>(g.cpu_time_ns) / total : 0.0;
    c["cpu_share"] = round6(share);
    c["entitled_share"] = round6(g.entitled_share);
    c["cpu_time_ns"] = g.cpu_time_ns;
    c["tasks"] = g.tasks;
    c["forks"] = g.forks;
    c["wakeup_latency_ns"] = g.wakeup_latency_ns;
    c["tool_call_latency_ns"] = g.tool_call_latency_ns;
    c["throttled_ns"] = g.throttled_ns;
    c["nr_throttled"] = g.nr_throttled;
    c["nr_periods"] = g.nr_periods;
    c["memory"] = {{"peak_bytes", g.mem_peak_bytes},
                   {"events_high", g.mem_events_high},
                   {"events_max", g.mem_events_max},
                   {"oom_kill", g.mem_oom_kill}};
    if (!g.guaranteed_ns.empty()) {
      const double pts = weight_shortfall_points(g, in.series_bin_ns, end, in.cpus);
      c["cpu_weight_shortfall_pts"] = round6(pts);
      worst_shortfall = std::max(worst_shortfall, pts);
    }
    cgroups[g.path] = std::move(c);
    // Jain's index over the non-root cgroups that had work and a share.
    if (g.tasks > 0 && g.entitled_share > 0 && i != 0) jain_x.push_back(share / g.entitled_share);

    json s = json::array();
    const std::vector<std::uint64_t>& bins = g.series_ns;
    for (std::uint64_t b = 0; b * merge < nbins; ++b) {
      std::uint64_t sum = 0;
      const std::uint64_t k_end = std::min<std::uint64_t>({nbins, (b + 1) * merge, bins.size()});
      for (std::uint64_t k = b * merge; k < k_end; ++k) sum += bins[k];
      if ((b + 1) * merge >= nbins)
        for (std::uint64_t k = nbins; k < bins.size(); ++k) sum += bins[k];
      const std::uint64_t lo = b * interval, hi = std::min(end, (b + 1) * interval);
      const double width = static_cast<double>(hi > lo ? hi - lo : 0) * static_cast<double>(in.cpus);
      s.push_back(width > 0 ? round6(std::min(1.0, static_cast<double>(sum) / width)) : 0.0);
    }
    series_j[g.path] = std::move(s);
  }

  json r;
  r["cpus"] = in.cpus;
  r["duration_ns"] = end;
  r["wakeup_latency_ns"] = in.wakeup_latency_ns;
  r["tool_call_latency_ns"] = in.tool_call_latency_ns;
  r["tool_calls_completed"] = in.tool_calls_completed;
  r["new_step_detection"] = in.new_step_detection;
  if (in.interactive_wakeup_latency_ns) r["interactive_wakeup_latency_ns"] = *in.interactive_wakeup_latency_ns;
  r["context_switches"] = in.context_switches;
  r["max_runnable_wait_ns"] = in.max_runnable_wait_ns;
  r["cpu_utilization"] = round6(in.cpu_utilization);
  r["jain_fairness"] = round6(jain_index(jain_x));
  r["tasks"] = in.tasks;
  r["counters"] = json::object();
  for (const auto& [name, value] : in.counters) r["counters"][name] = value;
  r["cgroups"] = std::move(cgroups);
  r["idle_cgroups"] = idle;
  r["series"] = {{"interval_ns", interval}, {"cgroups", std::move(series_j)}};
  if (worst_shortfall >= 0) r["cpu_weight_shortfall_pts"] = round6(worst_shortfall);
  return r;
}

nlohmann::json results_json(const RunIdentity& id, const CpuResultsInput& in) {
  nlohmann::json r = cpu_results_json(in);
  r["format"] = "agentcg-results";
  r["version"] = 1;
  r["trace"] = id.trace;
  r["policy"] = id.policy;
  r["gpu_policy"] = id.gpu_policy;
  r["seed"] = id.seed;
  r["config"] = id.config;
  r["events"] = id.events;
  return r;
}

}  // namespace agentcg::sim
