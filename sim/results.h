// SPDX-License-Identifier: GPL-2.0-only
// The one builder of results.json (README "results.json"). The simulator
// (sim/cpu/cpu_model.cc + sim/api.cc) and the live player
// (live/player/player.cc) measure different things in different ways, fill
// the same input structs below, and get the document from here, so a key,
// a share, a series bin or Jain's index means the same in both.
//
// Invariants: every value derived from the inputs (cpu_share, the series,
// jain_fairness, cpu_utilization) is computed here only; numbers that are
// fractions are rounded by round6(); a series bin is the cgroup's CPU time
// in the bin over the bin's width x cpus, at most 1.0 (a live CPU reading
// can land in a bin a little after the time it was spent, so the player's
// bins can overshoot; the simulator's never do); at most 200 series bins,
// each a whole multiple of series_bin_ns.
// Who calls it: CpuModel::results() (body), run_simulation() in sim/api.cc
// and the player (whole document). Library agentcg_metrics (no simulator).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace agentcg::sim {

// One cgroup, in cgroup-id order (index 0 is the root "/"). The *_ns sums,
// latency summaries and series are hierarchical (the cgroup and its
// descendants); tasks and forks are the cgroup's own.
struct CgroupResultsInput {
  std::string path;
  std::uint64_t cpu_time_ns = 0;
  double entitled_share = 0.0;
  std::uint64_t tasks = 0;
  std::uint64_t forks = 0;
  nlohmann::json wakeup_latency_ns;    // a latency summary (metrics.h)
  nlohmann::json tool_call_latency_ns; // a latency summary (metrics.h)
  std::uint64_t throttled_ns = 0;
  std::uint64_t nr_throttled = 0;
  std::uint64_t nr_periods = 0;
  std::uint64_t mem_peak_bytes = 0;
  std::uint64_t mem_events_high = 0;
  std::uint64_t mem_events_max = 0;
  std::uint64_t mem_oom_kill = 0;
  // CPU ns spent in [k * series_bin_ns, (k + 1) * series_bin_ns); bins past
  // the end of the run are folded into the last one.
  std::vector<std::uint64_t> series_ns;
  // CPU ns (CPUs x ns) cpu.weight guaranteed it per series bin: while it
  // had n runnable tasks, min(n, its guarantee in CPUs), the guarantee
  // being its weight's share down the tree with every sibling busy (and
  // cpu.max). Empty: not measured (the live player; the root).
  std::vector<double> guaranteed_ns;
};

// cpu.weight where a cgroup is busy (results.json cpu_weight_shortfall_pts,
// per cgroup and the worst of them): per window of kWeightWindowNs in which
// it was owed anything (guaranteed_ns), its shortfall max(0, owed - its CPU
// time) over the window x cpus; the mean over those windows, in points of
// the machine. A window nets what a time-sliced scheduler gives and takes
// back within a few rounds; a surplus in one does not pay for a shortfall
// in another; the time a cgroup had nothing to run is no shortfall (unlike
// its whole-run share against its entitlement).
inline constexpr std::uint64_t kWeightWindowNs = 1'000'000'000;
double weight_shortfall_points(const CgroupResultsInput& g, std::uint64_t bin_ns, std::uint64_t end_ns,
                               std::uint64_t cpus);

// The CPU part of a run: everything but the run's identity.
struct CpuResultsInput {
  std::uint64_t cpus = 0;
  std::uint64_t duration_ns = 0;
  std::uint64_t series_bin_ns = 100'000'000;
  std::uint64_t tasks = 0;
  nlohmann::json wakeup_latency_ns;
  nlohmann::json tool_call_latency_ns;
  std::uint64_t tool_calls_completed = 0;
  nlohmann::json new_step_detection;
  std::optional<nlohmann::json> interactive_wakeup_latency_ns;
  std::uint64_t context_switches = 0;
  std::uint64_t max_runnable_wait_ns = 0;
  // Busy CPU time over duration x cpus: the simulator's root cgroup CPU
  // time, the live host's /proc/stat (it sees work outside the trace).
  double cpu_utilization = 0.0;
  // Counter name (agentcg/counters.h) -> value; only counters seen.
  std::vector<std::pair<std::string, std::uint64_t>> counters;
  std::vector<CgroupResultsInput> cgroups;
  // Idle cgroups (see cgroup_had_activity) the caller left out of `cgroups`
  // itself (the simulator, so that a trace of 1e6 empty cgroups does not
  // cost a summary each); the builder adds the idle ones it is given.
  std::uint64_t idle_cgroups = 0;
};

// A cgroup is listed in results.json when something happened in it: a task
// lived in it, it forked, ran, woke, completed a tool call, was throttled or
// a cpu.max period passed, or it charged memory. Its ancestors and the root
// are listed too; every other cgroup is idle: all its figures are zero, and
// results.json counts it in "idle_cgroups" instead of listing a block of
// zeros for it (a hostile trace of 1e6 empty cgroups made an 830 MB
// results.json and cost 6.6 GB to build).
bool cgroup_had_activity(const CgroupResultsInput& c);

// Who and what ran: the keys that name a run.
struct RunIdentity {
  std::string trace;
  std::string policy;
  std::string gpu_policy;
  std::uint64_t seed = 0;
  nlohmann::json config;
  std::uint64_t events = 0;
};

// The CPU keys of results.json (cpus .. series).
nlohmann::json cpu_results_json(const CpuResultsInput& in);
// The whole document: format, version, the identity and the CPU keys;
// callers add their own sections (gpu, histograms, live) after.
nlohmann::json results_json(const RunIdentity& id, const CpuResultsInput& in);

}  // namespace agentcg::sim
