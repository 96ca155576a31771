// SPDX-License-Identifier: GPL-2.0-only
// Importers: recorded traces (AgentCgroup eBPF JSON lines, AgentCgroup task
// folders, Linux ftrace / perf script text) -> trace::Trace (sim/trace/trace.h).
//
// Invariants shared by every importer:
// - streaming: input is read line by line (JSON documents through a parser
//   callback that discards each element once used), so memory grows with the
//   trace produced and the set of live tasks, never with the input's size;
// - a malformed line is either skipped and counted (default) or, with
//   `strict`, raised as ImportError naming file and line;
// - what the trace format cannot represent is counted in Report::unrepresented
//   (ordered keys, so output is deterministic) and written into the trace's
//   description and generator provenance;
// - time 0 of the produced trace is the recording's first timestamp.
//
// Who calls it: sim/import/commands.cc (`trace import`, `trace stats`), tests.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <set>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/trace/trace.h"

namespace agentcg::import {

// Bad input: what, where (file, 1-based line; 0 = whole file) and why.
class ImportError : public std::runtime_error {
 public:
  ImportError(const std::string& file, std::uint64_t line, const std::string& message);
  const std::string& file() const { return file_; }
  std::uint64_t line() const { return line_; }

 private:
  std::string file_;
  std::uint64_t line_;
};

struct Options {
  bool strict = false;      // fail on the first malformed line instead of skipping it
  std::string name;         // trace name; empty = derived from the input's file name
  std::string cgroup = "/"; // cgroup that receives the imported processes
  std::uint32_t cpus = 0;   // machine CPUs; 0 = the importer's default
  // agentcgroup-ebpf: a process that never got a RESOURCE_DETAIL sample (it
  // lived < 100 ms) has no CPU counter; true models its lifetime as CPU run
  // time instead of sleep (then total CPU exceeds the recorded counters).
  bool unsampled_as_run = false;
  // agentcg-record: keep only processes in this cgroup or below it; empty =
  // every process except kernel threads.
  std::string only_cgroup;
  // ftrace/perf: who woke a task when the line has no latency-flags column
  // (perf script, `trace-cmd report` without -l), so interrupt context
  // cannot be told from a system call. false: nobody named (a timer or
  // interrupt; nothing claimed that the capture does not say); true: the
  // line's task, when it is not the idle task (a capture taken where
  // wakeups mostly come from tasks, e.g. the Juno board's pipes and ttys of
  // tests/data/recordings/public/; an interrupt that hit a running task is
  // then taken as that task's wakeup).
  bool unflagged_wakeups_by_task = false;
};

// What happened during an import, for the stderr summary and provenance.
struct Report {
  std::string format;
  std::string input;
  std::uint64_t lines = 0;            // lines (or JSON elements) read
  std::uint64_t events = 0;           // events turned into ops
  std::uint64_t malformed = 0;        // skipped malformed lines
  std::vector<std::string> malformed_examples;  // first few "file:line: why"
  std::map<std::string, std::uint64_t> unrepresented;  // what -> count
  std::map<std::string, std::uint64_t> counters;       // importer figures
  // Scheduler recordings (ftrace): wakeup -> running latencies observed, ns,
  // in input order.
  std::vector<std::uint64_t> wakeup_latency_ns;

  void note_unrepresented(const std::string& what, std::uint64_t n = 1) { unrepresented[what] += n; }
  // Human-readable multi-line summary (stderr).
  std::string summary() const;
  nlohmann::json to_json() const;
};

struct Result {
  trace::Trace trace;
  Report report;
};

// Called for a malformed line: throws in strict mode, else counts it.
void malformed(Report& report, const Options& opts, const std::string& file,
               std::uint64_t line, const std::string& why);

// agentcgroup-ebpf: JSON lines (one event per line).
Result import_agentcgroup_ebpf(std::istream& in, const std::string& source, const Options& opts);
Result import_agentcgroup_ebpf_file(const std::string& path, const Options& opts);

// agentcgroup-task: a folder with resources.json and tool_calls.json.
Result import_agentcgroup_task(std::istream& resources, const std::string& resources_name,
                               std::istream& tool_calls, const std::string& tool_calls_name,
                               const Options& opts);
Result import_agentcgroup_task_dir(const std::string& dir, const Options& opts);

// What the ftrace importer knows beyond the trace, for importers built on it
// (agentcg-record): the clock, the recorded tid of every produced pid and
// each wakeup latency's task. Ordered maps: deterministic when iterated.
// Where a wakeup ran, by the CPUs of its wake event and of the switch-in:
// on the CPU the task then ran on (a timer on the sleeper's CPU, a waker
// beside its wakee), on another (an IPI), or a new task's start
// (sched_wakeup_new).
enum class WakeupKind : std::uint8_t { kLocal, kRemote, kNew };
inline const char* wakeup_kind_name(WakeupKind k) {
  return k == WakeupKind::kLocal ? "local" : k == WakeupKind::kRemote ? "remote" : "new";
}
// What ended a sleep: another task from its own system call (a pipe write,
// a futex wake, a child's exit: the sleep's recorded `waker`, or the wait
// op's child), or an interrupt (a timer, I/O completion, an interrupt taken
// on an idle CPU). The two cost a machine different things: on the Arm
// Juno board of tests/data/recordings/public a wakeup by an interrupt on an
// idle CPU took 8-9 us to its switch-in at the p50 in both halves of the
// capture, one by a task beside it 3 us in one half and 8 in the other.
enum class WakerKind : std::uint8_t { kTask, kInterrupt };
inline const char* waker_kind_name(WakerKind k) { return k == WakerKind::kTask ? "task" : "interrupt"; }

struct FtraceDetail {
  std::optional<std::uint64_t> t0_ns;                 // recording timestamp of trace time 0
  std::map<std::int64_t, std::int64_t> recorded_tid;  // trace pid -> recorded tid
  // One measured wakeup latency (report.wakeup_latency_ns, the same order).
  struct Wakeup {
    std::int64_t pid;    // trace pid
    std::uint64_t ns;    // latency
    WakeupKind kind;
    // its switch-in was not recorded and was inferred at the CPU's previous
    // event (a lower bound, often the wakeup itself: not a measurement;
    // replay_check leaves it out on both sides)
    bool inferred;
    // the task's start (sched_wakeup_new, or a task first seen at a
    // wakeup) rather than the end of a sleep
    bool start;
    // for the end of a sleep, what ended it (the importer's waker: with
    // Options::unflagged_wakeups_by_task, or the latency flags, a task)
    WakerKind waker = WakerKind::kInterrupt;
  };
  std::vector<Wakeup> wakeups;  // input order
  // trace pid -> (first event, exit or the recording's last event), trace
  // time: the recorded lifetime, which the ops (no runnable waits) may not span.
  std::map<std::int64_t, std::pair<std::uint64_t, std::uint64_t>> lifetime;
  std::map<std::int64_t, std::uint64_t> cpu_ns;  // trace pid -> CPU time recorded, ns
  // trace pid -> the CPU the capture first shows it on, for each task
  // present before its first event (not forked inside the capture): the
  // CPU it ran on, or was woken onto (sched_wakeup's target_cpu)
  std::map<std::int64_t, std::int32_t> present_cpu;
  // those of them first seen on a CPU (switched in or out, forking,
  // exec'ing, exiting) rather than woken: running or runnable when the
  // capture began
  std::set<std::int64_t> present_running;
};

// ftrace: trace-cmd report / tracefs `trace` text / perf script text.
// `detail`, when given, receives the FtraceDetail of the import.
Result import_ftrace(std::istream& in, const std::string& source, const Options& opts,
                     FtraceDetail* detail = nullptr);
Result import_ftrace_file(const std::string& path, const Options& opts);

// agentcg-record: a folder written by live/recorder/agentcg-record
// (ftrace.txt, members.tsv, cgroups.tsv, memory.tsv, meta.json).
Result import_agentcg_record_dir(const std::string& dir, const Options& opts);

// Dispatch by format name (agentcgroup-ebpf, agentcgroup-task, ftrace, perf
// is an alias of ftrace, agentcg-record). Throws std::invalid_argument for an unknown format.
Result import_any(const std::string& format, const std::string& path, const Options& opts);
// Formats import_any knows, comma-separated, for usage text.
std::string formats();

// Longest line an importer stores (1 MiB; real lines are < 1 KB): a longer
// one is read to its end without being kept and skipped as malformed, so a
// single-line multi-GB file costs constant memory (issue 17).
inline constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20;

// Reads the next line (without '\n') into `line`; false at the end of the
// input. A line longer than kMaxLineBytes leaves `line` holding its first
// kMaxLineBytes bytes and sets `too_long`.
bool read_bounded_line(std::istream& in, std::string& line, bool& too_long);

// `s` with every byte that is not part of valid UTF-8 replaced by '?'
// (process names are raw bytes in the kernel; trace JSON is UTF-8).
std::string utf8_or_replace(const std::string& s);

// Parses "SSS.fff" seconds (any number of fraction digits, truncated to ns)
// into integer ns without floating point; nullopt if not a number.
std::optional<std::uint64_t> parse_seconds_ns(std::string_view text);
// "2026-02-07T09:41:11.704Z" (UTC, fraction optional) -> ns since the epoch.
std::optional<std::uint64_t> parse_iso8601_utc_ns(std::string_view text);

}  // namespace agentcg::import
