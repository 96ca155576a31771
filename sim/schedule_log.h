// SPDX-License-Identifier: GPL-2.0-only
// What ran where and when, recorded by the CPU model (task slices, wakeups)
// and the GPU model (lock holds, drains after a DROP, memory residency)
// when a caller asks for it (RunOptions::perfetto_path, the timeline
// plots). Written out as Chrome trace-event JSON or ftrace text by
// sim/perfetto.cc.
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

// A task became runnable (the kernel's sched_waking; fork: sched_wakeup_new)
// at ts_ns; target_cpu is the CPU it last ran on (task_cpu() when the
// kernel emits sched_waking, before select_task_rq), 0 for a new task.
struct WakeEvent {
  std::int64_t pid;
  std::uint32_t target_cpu;  // the task's CPU when it woke (its last one; 0 for a new task)
  std::uint64_t ts_ns;
  bool fork;
  std::int32_t waker_cpu = -1;  // the CPU the wakeup ran on (a timer's: the sleeper's last; -1 unknown)
  // a task woke it from its system call (a recorded sleep's waker, a child's
  // exit), not a timer or interrupt; a fork's start: false
  bool by_task = false;
};

// A GPU job's hold of its GPU's lock: kHold from the grant to the DROP (or
// to the release when no DROP came), kDrain from the DROP to the release
// (the job finishes its queued kernels before it lets go, as nvshare's
// client does). end_ns of a hold still open when the run stops is the
// run's end.
enum class GpuSliceKind { kHold, kDrain };
struct GpuSlice {
  std::uint32_t gpu;
  std::uint32_t job;  // index into ScheduleLog::gpu_jobs
  GpuSliceKind kind;
  std::uint64_t start_ns;
  std::uint64_t end_ns;
};

// A job's bytes resident on its GPU from ts_ns on (a step function).
struct GpuResidency {
  std::uint32_t gpu;
  std::uint32_t job;
  std::uint64_t ts_ns;
  std::uint64_t bytes;
};

struct ScheduleLog {
  std::uint32_t nr_cpus = 0;
  std::vector<std::string> cgroup_paths;
  std::vector<std::string> task_names;  // by pid order of first appearance
  std::vector<std::pair<std::int64_t, std::string>> pid_comm;
  std::vector<ScheduleSlice> slices;    // in order of end time
  std::vector<CounterSample> counters;
  std::vector<WakeEvent> wakeups;       // in time order
  std::uint32_t nr_gpus = 0;
  std::vector<std::string> gpu_jobs;    // job ids, in trace order
  std::vector<GpuSlice> gpu_slices;     // in order of start time
  std::vector<GpuResidency> gpu_residency;  // in time order
  std::uint64_t end_ns = 0;
};

// Writes a Chrome/Perfetto trace-event JSON file (CPU tracks, task slices,
// counters). Throws std::runtime_error if the file cannot be written.
// A path ending in .txt or .systrace gets write_systrace's text instead.
void write_perfetto(const ScheduleLog& log, const std::string& path);

// ftrace/systrace text: "# tracer: nop", one sched_switch line per change
// of task on a CPU, sched_waking / sched_wakeup_new when a task became
// runnable, and the GPU track as atrace marks (tracing_mark_write B/E
// slices per job, C counters for residency) in one pseudo-process per GPU
// (Perfetto reads it all as a kernel capture).
void write_systrace(const ScheduleLog& log, const std::string& path);

}  // namespace agentcg::sim
