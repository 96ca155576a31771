// SPDX-License-Identifier: GPL-2.0-only
// Writes a ScheduleLog (sim/schedule_log.h) as Chrome trace-event JSON, the
// format the Perfetto UI (ui.perfetto.dev) and chrome://tracing open.
//
// Layout: one process per CPU ("CPU n", pid n, one thread track tid n) whose
// complete events ("ph":"X") are the task slices, named "comm (pid)" and
// carrying the task's pid and cgroup in args; one extra process "counters"
// (pid = number of CPUs) holding every CounterSample as a counter event
// ("ph":"C"), one counter track per CounterSample::track.
//
// Invariants: the output depends only on the log (deterministic bytes: no
// locale, integer timestamps printed exactly as microseconds with three
// decimals so nanosecond precision survives, counters in log order); slices
// on one CPU never overlap in a valid log so each CPU track is flat.
//
// A path ending in ".txt" or ".systrace" gets ftrace/systrace text instead
// (write_systrace below): the format Perfetto's own importer reads as a
// kernel capture, so the CPU tracks look like those of a real trace.
//
// Who calls it: sim/api.cc when RunOptions::perfetto_path is set (the CLI's
// --perfetto FILE and the Python Result.schedule()).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/schedule_log.h"

namespace agentcg::sim {
namespace {

// ns -> microseconds "123.456" exactly (trace-event timestamps are in us).
void append_us(std::string& out, std::uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llu.%03llu", static_cast<unsigned long long>(ns / 1000),
                static_cast<unsigned long long>(ns % 1000));
  out += buf;
}

// A JSON string literal (escaping done by nlohmann so any comm is safe).
std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

void append_double(std::string& out, double v) {
  // JSON has no NaN/Inf; a counter with such a value is written as 0 rather
  // than producing a file the UI refuses.
  if (!std::isfinite(v)) v = 0.0;
  out += nlohmann::json(v).dump();
}

// A comm as ftrace prints it: at most 15 bytes (TASK_COMM_LEN 16), no
// spaces or '=' (which would break "key=value" parsing).
std::string ftrace_comm(const std::string& s) {
  std::string c = s.empty() ? std::string("task") : s.substr(0, 15);
  for (char& ch : c)
    if (ch == ' ' || ch == '=' || static_cast<unsigned char>(ch) < 0x20) ch = '_';
  return c;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// ftrace text (trace-cmd report / tracefs "trace" layout) with one
// sched_switch per change of task on a CPU. What the ScheduleLog does not
// hold is not invented: there are no sched_waking lines (the log records
// slices, not the moment a task became runnable) and prev_state is R when
// another task takes the CPU at the same instant (a preemption or a slice
// end) and S when the CPU goes idle (the task blocked or exited).
std::string systrace_text(const ScheduleLog& log) {
  std::map<std::int64_t, std::string> comm;
  for (const auto& [pid, name] : log.pid_comm) comm[pid] = ftrace_comm(name);
  auto name_of = [&](std::int64_t pid, std::uint32_t cpu) {
    if (pid <= 0) return "swapper/" + std::to_string(cpu);
    auto it = comm.find(pid);
    return it != comm.end() ? it->second : std::string("task");
  };
  std::vector<ScheduleSlice> sl(log.slices.begin(), log.slices.end());
  std::stable_sort(sl.begin(), sl.end(), [](const ScheduleSlice& a, const ScheduleSlice& b) {
    return a.cpu != b.cpu ? a.cpu < b.cpu : a.start_ns < b.start_ns;
  });
  struct Line {
    std::uint64_t ts;
    std::uint32_t cpu;
    std::string text;
  };
  std::vector<Line> lines;
  auto sw = [&](std::uint64_t ts, std::uint32_t cpu, std::int64_t prev, char state, std::int64_t next) {
    const std::string pc = name_of(prev, cpu), nc = name_of(next, cpu);
    char head[96];
    std::snprintf(head, sizeof head, "%16s-%-7lld [%03u] d..2 %llu.%06llu: ", pc.c_str(),
                  static_cast<long long>(prev > 0 ? prev : 0), cpu, static_cast<unsigned long long>(ts / 1000000000),
                  static_cast<unsigned long long>(ts % 1000000000 / 1000));
    lines.push_back({ts, cpu,
                     std::string(head) + "sched_switch: prev_comm=" + pc + " prev_pid=" +
                         std::to_string(prev > 0 ? prev : 0) + " prev_prio=120 prev_state=" + state +
                         " ==> next_comm=" + nc + " next_pid=" + std::to_string(next > 0 ? next : 0) +
                         " next_prio=120"});
  };
  for (std::size_t i = 0; i < sl.size(); ++i) {
    const auto& s = sl[i];
    const bool first_on_cpu = i == 0 || sl[i - 1].cpu != s.cpu;
    const ScheduleSlice* prev = first_on_cpu ? nullptr : &sl[i - 1];
    if (prev && prev->end_ns == s.start_ns) {
      if (prev->pid != s.pid) sw(s.start_ns, s.cpu, prev->pid, 'R', s.pid);
    } else {
      if (prev) sw(prev->end_ns, s.cpu, prev->pid, 'S', 0);
      sw(s.start_ns, s.cpu, 0, 'R', s.pid);
    }
    const bool last_on_cpu = i + 1 == sl.size() || sl[i + 1].cpu != s.cpu;
    if (last_on_cpu && s.end_ns < log.end_ns) sw(s.end_ns, s.cpu, s.pid, 'S', 0);
  }
  std::stable_sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) {
    return a.ts != b.ts ? a.ts < b.ts : a.cpu < b.cpu;
  });
  std::string out = "# tracer: nop\n#\n# entries-in-buffer/entries-written: " + std::to_string(lines.size()) +
                    "/" + std::to_string(lines.size()) + "   #P:" + std::to_string(log.nr_cpus) +
                    "\n#\n#                                _-----=> irqs-off\n"
                    "#           TASK-PID     CPU#  ||||   TIMESTAMP  FUNCTION\n"
                    "#              | |         |   ||||      |         |\n";
  for (const auto& l : lines) out += l.text + "\n";
  return out;
}

}  // namespace

void write_systrace(const ScheduleLog& log, const std::string& path) {
  const std::string out = systrace_text(log);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error(path + ": cannot open for writing (systrace text)");
  f.write(out.data(), static_cast<std::streamsize>(out.size()));
  f.close();
  if (!f) throw std::runtime_error(path + ": write failed (systrace text)");
}

void write_perfetto(const ScheduleLog& log, const std::string& path) {
  if (ends_with(path, ".txt") || ends_with(path, ".systrace")) return write_systrace(log, path);
  // Last comm recorded for a pid wins (exec renames a task; the final name is
  // the most useful label for a whole-run view).
  std::map<std::int64_t, std::string> comm;
  for (const auto& [pid, name] : log.pid_comm) comm[pid] = name;

  std::uint32_t nr_cpus = log.nr_cpus;
  for (const auto& s : log.slices) {
    if (s.cpu + 1 > nr_cpus) nr_cpus = s.cpu + 1;
  }
  const std::uint32_t counter_pid = nr_cpus;

  std::string out;
  out.reserve(256 + log.slices.size() * 140 + log.counters.size() * 100);
  out += "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"agentcg-sim\",\"end_ns\":";
  out += std::to_string(log.end_ns);
  out += ",\"cpus\":";
  out += std::to_string(nr_cpus);
  out += "},\"traceEvents\":[\n";
  bool first = true;
  auto begin_event = [&]() {
    if (!first) out += ",\n";
    first = false;
  };

  for (std::uint32_t cpu = 0; cpu < nr_cpus; ++cpu) {
    const std::string p = std::to_string(cpu);
    begin_event();
    out += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + p + ",\"tid\":" + p +
           ",\"args\":{\"name\":\"CPU " + p + "\"}}";
    begin_event();
    out += "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + p + ",\"tid\":" + p +
           ",\"args\":{\"sort_index\":" + p + "}}";
    begin_event();
    out += "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + p + ",\"tid\":" + p +
           ",\"args\":{\"name\":\"CPU " + p + "\"}}";
  }
  if (!log.counters.empty()) {
    const std::string p = std::to_string(counter_pid);
    begin_event();
    out += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + p + ",\"tid\":0" +
           ",\"args\":{\"name\":\"counters\"}}";
    begin_event();
    out += "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + p + ",\"tid\":0" +
           ",\"args\":{\"sort_index\":" + p + "}}";
  }

  for (const auto& s : log.slices) {
    auto it = comm.find(s.pid);
    const std::string label = (it != comm.end() ? it->second : std::string("task")) + " (" +
                              std::to_string(s.pid) + ")";
    const std::string cg = s.cgroup < log.cgroup_paths.size() ? log.cgroup_paths[s.cgroup]
                                                               : std::string("?");
    const std::uint64_t end = s.end_ns >= s.start_ns ? s.end_ns : s.start_ns;
    const std::string p = std::to_string(s.cpu);
    begin_event();
    out += "{\"ph\":\"X\",\"name\":" + quoted(label) + ",\"cat\":\"sched\",\"pid\":" + p +
           ",\"tid\":" + p + ",\"ts\":";
    append_us(out, s.start_ns);
    out += ",\"dur\":";
    append_us(out, end - s.start_ns);
    out += ",\"args\":{\"pid\":" + std::to_string(s.pid) + ",\"cgroup\":" + quoted(cg) + "}}";
  }

  const std::string cp = std::to_string(counter_pid);
  for (const auto& c : log.counters) {
    begin_event();
    out += "{\"ph\":\"C\",\"name\":" + quoted(c.track) + ",\"pid\":" + cp + ",\"tid\":0,\"ts\":";
    append_us(out, c.ts_ns);
    out += ",\"args\":{\"value\":";
    append_double(out, c.value);
    out += "}}";
  }
  out += "\n]}\n";

  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error(path + ": cannot open for writing (Perfetto trace)");
  f.write(out.data(), static_cast<std::streamsize>(out.size()));
  f.close();
  if (!f) throw std::runtime_error(path + ": write failed (Perfetto trace)");
}

}  // namespace agentcg::sim
