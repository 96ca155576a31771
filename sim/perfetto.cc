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
// Who calls it: sim/api.cc when RunOptions::perfetto_path is set (the CLI's
// --perfetto FILE and the Python Result.schedule()).
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

}  // namespace

void write_perfetto(const ScheduleLog& log, const std::string& path) {
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
