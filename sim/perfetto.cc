// SPDX-License-Identifier: GPL-2.0-only
// Writes a ScheduleLog (sim/schedule_log.h) as Chrome trace-event JSON, the
// format the Perfetto UI (ui.perfetto.dev) and chrome://tracing open.
//
// Layout: one process per CPU ("CPU n", pid n, one thread track tid n) whose
// complete events ("ph":"X", "cat":"sched") are the task slices, named
// "comm (pid)" and carrying the task's pid and cgroup in args; one extra
// process "counters" (pid = number of CPUs) holding every CounterSample as a
// counter event ("ph":"C"), one counter track per CounterSample::track; and
// with GPU jobs one process per GPU ("GPU g", pid = CPUs + 1 + g) with one
// thread per job placed there (tid = 1 + job index, "job ID") whose
// "cat":"gpu" slices are the lock holds ("holds GPU") and the drains after
// a DROP ("draining after DROP"), and counter tracks "resident ID" (bytes).
//
// Invariants: the output depends only on the log (deterministic bytes: no
// locale, integer timestamps printed exactly as microseconds with three
// decimals so nanosecond precision survives, counters in log order); slices
// on one CPU never overlap in a valid log so each CPU track is flat.
//
// A path ending in ".txt" or ".systrace" gets ftrace/systrace text instead
// (write_systrace below): the format Perfetto's own importer reads as a
// kernel capture, so the CPU tracks, the wakeups (sched_waking, with the
// wakeup latency in the UI) and the GPU track look like those of a real
// trace.
//
// Who calls it: sim/api.cc when RunOptions::perfetto_path is set (the CLI's
// --perfetto FILE and the Python Result.schedule()).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <vector>
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

// ftrace text (trace-cmd report / tracefs "trace" layout): one sched_switch
// per change of task on a CPU, one sched_waking (sched_wakeup_new for a new
// task) per wakeup, and the GPU track. What the ScheduleLog does not hold
// is not invented: prev_state is S when the task's next run follows a
// wakeup (it blocked), or it never runs again (it blocked or exited), and R
// otherwise (preempted, or its slice ended); the waker is unknown, so a
// wakeup line is
// attributed to the idle task of the target CPU (as a timer or I/O
// interrupt taken while idle would be).
//
// The GPU track: one pseudo-process per GPU whose threads are its jobs,
// with pids above every simulated pid (base = the next multiple of 1000),
// written as atrace marks (tracing_mark_write "B|tgid|name" / "E|tgid" for
// the hold and drain slices, "C|tgid|name|value" for resident MiB), the
// lines carrying the "(tgid)" column so Perfetto groups them per GPU.
//
// Lines are sorted by time; at one instant: slice ends, wakeups, switches,
// slice begins, counters (a wakeup precedes the switch that runs the task).
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
  // Per task: its slice starts and its wakeups, both ascending, to tell a
  // task that blocked (a wakeup before its next run) from a preempted one.
  std::map<std::int64_t, std::vector<std::uint64_t>> starts_of, wakes_of;
  for (const auto& s : sl) starts_of[s.pid].push_back(s.start_ns);
  for (auto& [pid, v] : starts_of) std::sort(v.begin(), v.end());
  for (const auto& w : log.wakeups) wakes_of[w.pid].push_back(w.ts_ns);
  auto out_state = [&](const ScheduleSlice& s) {
    const std::int64_t pid = s.pid;
    const std::uint64_t end = s.end_ns;
    const auto& st = starts_of[pid];
    // its next slice: the first that starts after this one (slices of a
    // task never overlap; this one may have zero length)
    const auto next = std::upper_bound(st.begin(), st.end(), s.start_ns);
    if (next == st.end()) return 'S';
    const auto& wk = wakes_of[pid];
    const auto w = std::lower_bound(wk.begin(), wk.end(), end);
    return w != wk.end() && *w <= *next ? 'S' : 'R';
  };
  enum Order : int { kSliceEnd = 0, kWake = 1, kSwitch = 2, kSliceBegin = 3, kCounter = 4 };
  struct Line {
    std::uint64_t ts;
    int order;
    std::uint32_t cpu;
    std::string text;
  };
  std::vector<Line> lines;
  auto head = [](const std::string& task, std::int64_t pid, std::optional<std::int64_t> tgid, std::uint32_t cpu,
                 std::uint64_t ts) {
    char buf[160];
    char tg[32] = "";
    if (tgid) std::snprintf(tg, sizeof tg, " (%7lld)", static_cast<long long>(*tgid));
    std::snprintf(buf, sizeof buf, "%16s-%-7lld%s [%03u] d..2 %llu.%06llu: ", task.c_str(),
                  static_cast<long long>(pid), tg, cpu, static_cast<unsigned long long>(ts / 1000000000),
                  static_cast<unsigned long long>(ts % 1000000000 / 1000));
    return std::string(buf);
  };
  auto sw = [&](std::uint64_t ts, std::uint32_t cpu, std::int64_t prev, char state, std::int64_t next) {
    const std::string pc = name_of(prev, cpu), nc = name_of(next, cpu);
    lines.push_back({ts, kSwitch, cpu,
                     head(pc, prev > 0 ? prev : 0, std::nullopt, cpu, ts) + "sched_switch: prev_comm=" + pc +
                         " prev_pid=" + std::to_string(prev > 0 ? prev : 0) + " prev_prio=120 prev_state=" + state +
                         " ==> next_comm=" + nc + " next_pid=" + std::to_string(next > 0 ? next : 0) +
                         " next_prio=120"});
  };
  for (std::size_t i = 0; i < sl.size(); ++i) {
    const auto& s = sl[i];
    const bool first_on_cpu = i == 0 || sl[i - 1].cpu != s.cpu;
    const ScheduleSlice* prev = first_on_cpu ? nullptr : &sl[i - 1];
    if (prev && prev->end_ns == s.start_ns) {
      if (prev->pid != s.pid) sw(s.start_ns, s.cpu, prev->pid, out_state(*prev), s.pid);
    } else {
      if (prev) sw(prev->end_ns, s.cpu, prev->pid, out_state(*prev), 0);
      sw(s.start_ns, s.cpu, 0, 'R', s.pid);
    }
    const bool last_on_cpu = i + 1 == sl.size() || sl[i + 1].cpu != s.cpu;
    if (last_on_cpu && s.end_ns < log.end_ns) sw(s.end_ns, s.cpu, s.pid, out_state(s), 0);
  }
  for (const auto& w : log.wakeups) {
    const std::uint32_t cpu = w.target_cpu;
    const std::string c = name_of(w.pid, cpu);
    char tc[16];
    std::snprintf(tc, sizeof tc, "%03u", cpu);
    lines.push_back({w.ts_ns, kWake, cpu,
                     head("swapper/" + std::to_string(cpu), 0, std::nullopt, cpu, w.ts_ns) +
                         (w.fork ? "sched_wakeup_new: comm=" : "sched_waking: comm=") + c +
                         " pid=" + std::to_string(w.pid) + " prio=120 target_cpu=" + tc});
  }
  if (!log.gpu_slices.empty() || !log.gpu_residency.empty()) {
    std::int64_t top = 0;
    for (const auto& [pid, name] : log.pid_comm) top = std::max(top, pid);
    for (const auto& s : log.slices) top = std::max(top, s.pid);
    const std::int64_t base = (top / 1000 + 1) * 1000;
    const auto njobs = static_cast<std::int64_t>(log.gpu_jobs.size());
    auto tgid_of = [&](std::uint32_t gpu) { return base + static_cast<std::int64_t>(gpu) * (njobs + 1); };
    auto job_comm = [&](std::uint32_t job) {
      return ftrace_comm(job < log.gpu_jobs.size() ? log.gpu_jobs[job] : "job" + std::to_string(job));
    };
    for (const auto& g : log.gpu_slices) {
      const std::int64_t tgid = tgid_of(g.gpu), tid = tgid + 1 + g.job;
      const std::uint64_t end = std::min(std::max(g.end_ns, g.start_ns), std::max(log.end_ns, g.start_ns));
      const std::string what = g.kind == GpuSliceKind::kHold ? "holds GPU " : "draining after DROP on GPU ";
      lines.push_back({g.start_ns, kSliceBegin, 0,
                       head(job_comm(g.job), tid, tgid, 0, g.start_ns) + "tracing_mark_write: B|" +
                           std::to_string(tgid) + "|" + what + std::to_string(g.gpu)});
      lines.push_back({end, kSliceEnd, 0,
                       head(job_comm(g.job), tid, tgid, 0, end) + "tracing_mark_write: E|" + std::to_string(tgid)});
    }
    for (const auto& r : log.gpu_residency) {
      const std::int64_t tgid = tgid_of(r.gpu), tid = tgid + 1 + r.job;
      lines.push_back({r.ts_ns, kCounter, 0,
                       head(job_comm(r.job), tid, tgid, 0, r.ts_ns) + "tracing_mark_write: C|" +
                           std::to_string(tgid) + "|GPU " + std::to_string(r.gpu) + " resident MiB " +
                           job_comm(r.job) + "|" + std::to_string(r.bytes >> 20)});
    }
  }
  std::stable_sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) {
    if (a.ts != b.ts) return a.ts < b.ts;
    if (a.order != b.order) return a.order < b.order;
    return a.cpu < b.cpu;
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
  // GPU processes: holds and drains per job thread, residency counters.
  if (log.nr_gpus > 0 && (!log.gpu_slices.empty() || !log.gpu_residency.empty())) {
    auto gpu_pid = [&](std::uint32_t g) { return std::to_string(nr_cpus + 1 + g); };
    auto job_name = [&](std::uint32_t j) {
      return j < log.gpu_jobs.size() ? log.gpu_jobs[j] : "job" + std::to_string(j);
    };
    std::vector<std::vector<bool>> named(log.nr_gpus, std::vector<bool>(log.gpu_jobs.size() + 1, false));
    for (std::uint32_t g = 0; g < log.nr_gpus; ++g) {
      const std::string p = gpu_pid(g);
      begin_event();
      out += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + p + ",\"tid\":0,\"args\":{\"name\":\"GPU " +
             std::to_string(g) + "\"}}";
      begin_event();
      out += "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + p + ",\"tid\":0,\"args\":{\"sort_index\":" +
             p + "}}";
    }
    auto name_thread = [&](std::uint32_t g, std::uint32_t j) {
      if (g >= named.size() || j >= named[g].size() || named[g][j]) return;
      named[g][j] = true;
      begin_event();
      out += "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + gpu_pid(g) + ",\"tid\":" + std::to_string(1 + j) +
             ",\"args\":{\"name\":" + quoted("job " + job_name(j)) + "}}";
    };
    for (const auto& g : log.gpu_slices) {
      name_thread(g.gpu, g.job);
      const std::uint64_t end = std::min(std::max(g.end_ns, g.start_ns), std::max(log.end_ns, g.start_ns));
      begin_event();
      out += "{\"ph\":\"X\",\"name\":\"";
      out += g.kind == GpuSliceKind::kHold ? "holds GPU" : "draining after DROP";
      out += "\",\"cat\":\"gpu\",\"pid\":" + gpu_pid(g.gpu) + ",\"tid\":" + std::to_string(1 + g.job) + ",\"ts\":";
      append_us(out, g.start_ns);
      out += ",\"dur\":";
      append_us(out, end - g.start_ns);
      out += ",\"args\":{\"job\":" + quoted(job_name(g.job)) + ",\"gpu\":" + std::to_string(g.gpu) + "}}";
    }
    for (const auto& r : log.gpu_residency) {
      begin_event();
      out += "{\"ph\":\"C\",\"name\":" + quoted("GPU " + std::to_string(r.gpu) + " resident " + job_name(r.job)) +
             ",\"pid\":" + gpu_pid(r.gpu) + ",\"tid\":0,\"ts\":";
      append_us(out, r.ts_ns);
      out += ",\"args\":{\"value\":" + std::to_string(r.bytes) + "}}";
    }
  }
  out += "\n]}\n";

  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error(path + ": cannot open for writing (Perfetto trace)");
  f.write(out.data(), static_cast<std::streamsize>(out.size()));
  f.close();
  if (!f) throw std::runtime_error(path + ": write failed (Perfetto trace)");
}

}  // namespace agentcg::sim
