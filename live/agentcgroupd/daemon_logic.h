// SPDX-License-Identifier: GPL-2.0-only
// The parts of agentcgroupd that need no kernel: tunables from the config,
// walking the cgroup v2 tree, parsing memory.events, the memory monitor
// (core's agentcg_mem_penalty_update(), the same function the simulator
// runs), and the Prometheus text. main.cc is the thin I/O shell around
// these; daemon_logic_test.cc tests them without BPF or root.
//
// Invariants: every output is ordered by cgroup path (std::map / sorted
// vectors), so /metrics is stable between scrapes and runs.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agentcg/agentcg.h"
#include "agentcg/counters.h"
#include "bpf/agentcg_intf.h"
#include "config/config.h"
#include "live/cgroupfs/cgroupfs.h"  // walk_cgroups, read_small_file, escape_label

namespace agentcg::live {

// The BPF program's mode and tunables for a config (flatcg = no features).
enum agentcg_mode mode_of(const config::Config& c);
agentcg_tunables tunables_of(const config::Config& c);

// The `high N` count of a memory.events file's text; nullopt if absent.
std::optional<std::uint64_t> parse_memory_events_high(const std::string& text);

// The memory monitor: one agentcg_mem_state per cgroup path.
class MemMonitor {
 public:
  // One poll of `path`'s memory.events high count; returns the new penalty
  // and adds the core event mask to `events`.
  std::uint32_t poll(const std::string& path, std::uint64_t high_events, std::uint64_t now_ns,
                     const agentcg_tunables& t, std::uint32_t* events = nullptr);
  void forget(const std::string& path) { states_.erase(path); }
  std::uint32_t penalty(const std::string& path) const;
  const std::map<std::string, agentcg_mem_state>& states() const { return states_; }

 private:
  std::map<std::string, agentcg_mem_state> states_;
};

// Which cgroups' memory.events the daemon reads in one loop iteration.
// Why (issue 14): reading every cgroup's file every poll_interval_ms cost
// the daemon a large part of a CPU under TCG while the scheduler was
// attached (the file reads, the 100 Hz wakeups and the scheduler's
// callbacks for them), and grows with the number of cgroups; EEVDF ran
// without that load in the live comparison. The kernel reports a change
// of memory.events as a file-modified event (inotify IN_MODIFY, cgroup
// v2's documented notification), so a file is read when it changed, once
// when its cgroup appears (the baseline count), and, every interval, only
// where the penalty still decays with time (penalty > 0) or no watch
// could be set (then polling is the only way to see a change).
// Invariant: a tracked path without a watch and every penalised path are
// read at least once per interval; nothing else is read without an event.
class MemReadPlan {
 public:
  // A cgroup with a memory.events file; `watched`: an IN_MODIFY watch is set.
  void track(const std::string& path, bool watched);
  void untrack(const std::string& path);
  // A file-modified event for `path`'s memory.events (or, for an inotify
  // queue overflow, every tracked path: modified_all()).
  void modified(const std::string& path);
  void modified_all();
  // The paths to read now, sorted. `now_ns` is monotonic.
  std::vector<std::string> due(const MemMonitor& m, std::uint64_t now_ns, std::uint64_t interval_ns);
  std::size_t tracked() const { return watched_.size(); }
  bool tracking(const std::string& path) const { return watched_.count(path) != 0; }

 private:
  std::map<std::string, bool> watched_;  // path -> an inotify watch is set
  std::set<std::string> pending_;        // modified or never read
  std::uint64_t last_sweep_ns_ = 0;
  bool swept_ = false;
};

struct CgroupMetrics {
  std::string path;
  std::uint32_t mem_penalty = 0;  // as computed by the daemon
  agentcg_cgrp_stat stat{};       // from the BPF map (zero if none)
  bool has_stat = false;
};

struct MetricsSnapshot {
  bool attached = false;
  std::string mode;
  std::array<std::uint64_t, AGENTCG_NR_COUNTERS> counters{};
  std::array<std::uint64_t, AGENTCG_NR_BPF_STATS> bpf_stats{};
  std::uint64_t mem_penalty_events[2] = {0, 0};  // applied, released (daemon side)
  std::uint64_t config_reloads = 0;
  std::uint64_t config_reload_errors = 0;
  std::uint64_t cgroups_seen = 0;
  std::vector<CgroupMetrics> cgroups;  // sorted by path
};

// Prometheus text exposition (version 0.0.4), every family with # HELP/# TYPE.
std::string render_metrics(const MetricsSnapshot& s);

}  // namespace agentcg::live
