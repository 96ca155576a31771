// SPDX-License-Identifier: GPL-2.0-only
// What ran where and when, recorded by the CPU model when a caller asks for
// it (RunOptions::perfetto_path, the schedule-timeline plot). Written out as
// Chrome trace-event JSON by sim/perfetto.cc.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace agentcg::sim {

struct ScheduleSlice {
  std::uint32_t cpu;
  std::int64_t pid;
  std::uint32_t cgroup;  // index into ScheduleLog::cgroup_paths
  std::uint64_t start_ns;
  std::uint64_t end_ns;
};

// A sampled counter (e.g. runnable tasks of a cgroup, GPU memory resident).
struct CounterSample {
  std::string track;  // e.g. "cgroup /storm runnable"
  std::uint64_t ts_ns;
  double value;
};

struct ScheduleLog {
  std::uint32_t nr_cpus = 0;
  std::vector<std::string> cgroup_paths;
  std::vector<std::string> task_names;  // by pid order of first appearance
  std::vector<std::pair<std::int64_t, std::string>> pid_comm;
  std::vector<ScheduleSlice> slices;    // in order of end time
  std::vector<CounterSample> counters;
  std::uint64_t end_ns = 0;
};

// Writes a Chrome/Perfetto trace-event JSON file (CPU tracks, task slices,
// counters). Throws std::runtime_error if the file cannot be written.
// A path ending in .txt or .systrace gets write_systrace's text instead.
void write_perfetto(const ScheduleLog& log, const std::string& path);

// ftrace/systrace text: "# tracer: nop" and one sched_switch line per change
// of task on a CPU (Perfetto reads it as a kernel capture). No sched_waking:
// the log does not record when a task became runnable.
void write_systrace(const ScheduleLog& log, const std::string& path);

}  // namespace agentcg::sim
