// SPDX-License-Identifier: GPL-2.0-only
// A recorded scheduler capture (ftrace / trace-cmd / perf sched text) as the
// fidelity reference: the capture's task behaviour is imported (run and
// sleep phases, forks, exits; sim/import/ftrace.cc), replayed in the
// simulator with a machine profile, and the simulated figures are put next
// to the ones the capture measured itself: wakeup latency p50/p90/p99 (from
// the first of sched_waking/sched_wakeup to the switch-in, as `perf sched
// latency`), switches to a different task, and each task's CPU time.
// The capture is replayed twice: the tasks it found on the machine have a
// history it does not record (how far each one's vruntime lags its queue's
// minimum decides whether its wakeups preempt), so the second, measured
// pass starts each with the placement state the first left it in.
// Invariant: deterministic (same capture, options and seed -> same figures).
// Who calls it: `trace stats CAPTURE --from ftrace --replay` (commands.cc),
// tests (sim/import/replay_check_test.cc).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "sim/api.h"
#include "sim/import/import.h"
#include "sim/import/stats.h"

namespace agentcg::import {

struct ReplayCheck {
  std::string policy;
  std::uint32_t cpus = 0;
  Percentiles measured, simulated;          // wakeup latency, ns
  // wakeups whose switch-in the capture did not record (its latency a
  // lower bound, FtraceDetail::Wakeup::inferred), left out of both sides,
  // paired by task and ordinal: how many of the capture's, and how many
  // of the model's samples that paired with them
  std::uint64_t inferred_left_out = 0, simulated_left_out = 0;
  // The same by kind (WakeupKind: on the CPU the task then ran on, on
  // another, a new task's start): the measured side by the capture's wake
  // event and switch-in CPUs, the simulated side by the CPU the model's
  // wakeup ran on and the one the task was next dispatched on.
  std::map<WakeupKind, std::pair<Percentiles, Percentiles>> by_kind;  // (measured, simulated)
  // The ends of sleeps by what ended them (WakerKind: a task's system call,
  // or an interrupt): the measured side by the importer's waker, the
  // simulated side by the model's wakeup path (the replayed sleep's waker).
  std::map<WakerKind, std::pair<Percentiles, Percentiles>> by_waker;  // (measured, simulated)
  std::uint64_t switches_measured = 0, switches_simulated = 0;
  // cpu_idle events entering an idle state in the capture (0: it records
  // none, or the machine has no idle states to show)
  std::uint64_t idle_state_entries = 0;
  std::uint64_t cpu_ns_measured = 0, cpu_ns_simulated = 0;  // all tasks
  // sum over tasks of |simulated - recorded CPU time| / recorded total
  double task_cpu_error = 0;
  std::uint64_t tasks = 0;

  nlohmann::json to_json() const;
  std::string to_text() const;
};

// Imports `path` (format ftrace or perf) and replays it. The machine's CPU
// count is the capture's unless options.config.machine.cpus is set.
// Throws ImportError for an unreadable capture, std::invalid_argument when
// the capture has no scheduler events to compare with.
// `import_opts` as `trace import` takes them (unflagged_wakeups_by_task).
ReplayCheck replay_check(const std::string& path, const std::string& format, const sim::RunOptions& options,
                         const Options& import_opts = Options{});

// The same on an already imported capture.
ReplayCheck replay_check(const Result& imported, const FtraceDetail& detail, const sim::RunOptions& options);

}  // namespace agentcg::import
