// SPDX-License-Identifier: GPL-2.0-only
// Importer for AgentCgroup eBPF recordings (JSON lines, one event per line;
// see ../shared/traces/README.md): the process tree from EXEC / PROC_FORK /
// EXIT, CPU demand from the cumulative per-pid counters of RESOURCE_DETAIL,
// memory from their rss_kb.
//
// Model, per process: between two samples of the same pid the counter grew by
// d ms; the importer emits `run d ms` at the start of the interval and sleeps
// until the sample's time (where in the interval the CPU was used is not
// recorded; at the start matches a process that works right after exec).
// Forks, execs and exits are placed at their timestamps on the parent's /
// process's own timeline. Worked example (100 ms sampling):
//   EXEC bash@0 -> DETAIL bash cpu=10ms@100ms -> DETAIL bash cpu=40ms@200ms
//   -> EXIT bash@250ms   gives   run 10ms, sleep 90ms, run 30ms, sleep 120ms, exit.
//
// Limitations (each counted in the report and written into the trace):
// - CPU a process used after its last sample, and all CPU of processes that
//   lived less than one sampling period, is not in the counters; such a
//   process's life is a sleep (or a run with Options::unsampled_as_run);
// - a process's threads are one sequence of ops: CPU above one core in an
//   interval makes the process lag behind the recording's wall clock;
// - file, network and summary events have no op in the trace format;
// - CPU used before the recording by processes already running is dropped
//   (their first sample is the baseline).
// The AgentCgroup README calls PROC_FORK's child `pid` with parent `ppid`;
// child_pid / parent_pid are accepted too.
//
// Who calls it: import_any() / `trace import --from agentcgroup-ebpf`.
#include <fstream>
#include <string>
#include <unordered_map>

#include "sim/import/builder.h"
#include "sim/import/import.h"

namespace agentcg::import {

namespace {

constexpr std::uint64_t kNsPerMs = 1000000;

std::optional<std::uint64_t> get_u64(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  if (it->is_number_unsigned()) return it->get<std::uint64_t>();
  if (it->is_number_integer() && it->get<std::int64_t>() >= 0)
    return static_cast<std::uint64_t>(it->get<std::int64_t>());
  return std::nullopt;
}

std::string get_str(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Per-process sampling state, beside the table (lookup only, never iterated).
struct Sampling {
  bool sampled = false;
  std::uint64_t last_cpu_ms = 0;
};

// 2^60 ns of recording, counters up to 2^38 ms each (8.7 years of CPU) and
// RSS up to 2^50 KiB: sums of runs and sleeps stay below 2^62 ns.
constexpr std::uint64_t kMaxSpanNs = std::uint64_t{1} << 60;
constexpr std::uint64_t kMaxCounterMs = std::uint64_t{1} << 38;
constexpr std::uint64_t kMaxRssKb = std::uint64_t{1} << 50;

class EbpfImporter {
 public:
  EbpfImporter(const std::string& source, const Options& opts) : source_(source), opts_(opts) {
    report_.format = "agentcgroup-ebpf";
    report_.input = source;
  }

  void line_too_long() {
    ++report_.lines;
    malformed(report_, opts_, source_, report_.lines,
              "line longer than " + std::to_string(kMaxLineBytes) + " bytes (skipped unread)");
  }

  void line(std::string_view text) {
    ++report_.lines;
    text = rstrip(text);
    if (text.empty()) return;
    nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      malformed(report_, opts_, source_, report_.lines, "not a JSON object");
      return;
    }
    const std::string event = get_str(j, "event");
    const auto ts = get_u64(j, "timestamp");
    if (event.empty() || !ts) {
      malformed(report_, opts_, source_, report_.lines,
                "expected string 'event' and non-negative integer 'timestamp'");
      return;
    }
    // Bounds that keep every produced time and size far below the trace
    // format's 2^62 (found by fuzz/import_ebpf_fuzz.cc): a line outside them
    // is malformed, not a reason to lose the whole import.
    if (t0_ && *ts > *t0_ && *ts - *t0_ > kMaxSpanNs) {
      malformed(report_, opts_, source_, report_.lines, "timestamp more than 2^60 ns (36 years) after the first");
      return;
    }
    for (const auto& [key, max] : {std::pair<const char*, std::uint64_t>{"cpu_user_ms", kMaxCounterMs},
                                   {"cpu_sys_ms", kMaxCounterMs},
                                   {"duration_ms", kMaxCounterMs},
                                   {"rss_kb", kMaxRssKb}}) {
      if (auto v = get_u64(j, key); v && *v > max) {
        malformed(report_, opts_, source_, report_.lines,
                  std::string("'") + key + "' out of range; expected at most " + std::to_string(max));
        return;
      }
    }
    if (!t0_) t0_ = *ts;
    if (event == "CLOCK_SYNC") {
      if (get_str(j, "phase") == "end") end_ns_ = rel(*ts);
      return;
    }
    if (event == "EXEC" || event == "PROC_FORK" || event == "EXIT" || event == "RESOURCE_DETAIL") {
      process_event(event, j, *ts);
      return;
    }
    if (event == "RESOURCE_SAMPLE") {
      report_.note_unrepresented("RESOURCE_SAMPLE container totals (per-pid counters used instead)");
      return;
    }
    report_.note_unrepresented("file, network and summary events");
  }

  Result finish() {
    const std::uint64_t end = std::max(end_ns_, last_ns_);
    std::uint64_t still_running = 0;
    for (ProcessTable::Entry& e : table_.entries()) {
      if (e.builder.exited()) continue;
      ++still_running;
      e.builder.sleep_until(end);
    }
    if (still_running != 0) report_.counters["processes_alive_at_end"] = still_running;
    if (table_.reused() != 0) report_.note_unrepresented("reused pids renumbered", table_.reused());
    report_.counters["cpu_ms_total"] = cpu_ms_total_;
    report_.counters["processes"] = table_.entries().size();
    Result r;
    r.trace.machine.cpus = opts_.cpus != 0 ? opts_.cpus : 4;
    add_cgroup_chain(r.trace, opts_.cgroup);
    r.trace.processes = table_.take();
    const std::string session = opts_.name.empty() ? stem(source_) : opts_.name;
    for (trace::ProcessSpec& p : r.trace.processes) p.agent = trace::AgentInfo{session};
    finish_trace(r.trace, report_, opts_,
                 "process tree from EXEC/PROC_FORK/EXIT, CPU from per-pid cumulative counters, "
                 "memory from RSS samples");
    r.report = std::move(report_);
    return r;
  }

 private:
  std::uint64_t rel(std::uint64_t ts) {
    if (ts < *t0_) {
      report_.note_unrepresented("events before the first timestamp (moved to time 0)");
      return 0;
    }
    return ts - *t0_;
  }

  // Creates a process forked by `ppid` at `t` (or a root process when the
  // parent is not part of the recording).
  ProcessTable::Entry& spawn(std::int64_t pid, std::int64_t ppid, const std::string& comm,
                             std::uint64_t t) {
    ProcessTable::Entry* parent = ppid > 0 ? table_.find(ppid) : nullptr;
    if (parent != nullptr && parent->builder.exited()) parent = nullptr;
    const std::uint64_t start = parent != nullptr ? std::max(t, parent->builder.cursor_ns()) : t;
    ProcessTable::Entry& child =
        table_.create(pid, parent != nullptr ? parent->spec->comm : comm, opts_.cgroup, start);
    if (parent != nullptr) {
      if (parent->builder.cursor_ns() > t) report_.note_unrepresented("forks placed late (parent lagging)");
      parent->builder.sleep_until(t);
      parent->builder.fork(child.spec->pid);
      child.spec->parent = parent->spec->pid;
      ++report_.counters["forks"];
    } else {
      child.spec->start_ns = start;
      ++report_.counters["root_processes"];
    }
    return child;
  }

  void process_event(const std::string& event, const nlohmann::json& j, std::uint64_t ts) {
    std::optional<std::uint64_t> pid = get_u64(j, "pid");
    std::optional<std::uint64_t> ppid = get_u64(j, "ppid");
    if (event == "PROC_FORK" && get_u64(j, "child_pid")) {
      pid = get_u64(j, "child_pid");
      ppid = get_u64(j, "parent_pid");
    }
    // pids are kernel pid_t values: 1..2^31-1 (larger ones are not pids, and
    // the trace format rejects them, which used to lose the whole import).
    if (!pid || *pid == 0 || *pid > std::uint64_t{kMaxPid} || ppid.value_or(0) > std::uint64_t{kMaxPid}) {
      malformed(report_, opts_, source_, report_.lines, event + ": expected 'pid' (and 'ppid') in 1..2147483647");
      return;
    }
    const std::uint64_t t = rel(ts);
    if (t < last_ns_) report_.note_unrepresented("out-of-order process events (placed late)");
    last_ns_ = std::max(last_ns_, t);
    ++report_.events;
    const auto p = static_cast<std::int64_t>(*pid);
    const auto pp = static_cast<std::int64_t>(ppid.value_or(0));
    const std::string comm = get_str(j, "comm");
    ProcessTable::Entry* e = table_.find(p);

    if (event == "PROC_FORK") {
      if (e != nullptr) return;  // already known (EXEC seen first)
      spawn(p, pp, comm, t);
      return;
    }
    if (event == "EXEC") {
      if (comm.empty()) {
        malformed(report_, opts_, source_, report_.lines, "EXEC: expected a non-empty 'comm'");
        return;
      }
      if (e == nullptr) {
        e = &spawn(p, pp, comm, t);
        if (e->spec->comm != comm) e->builder.exec(comm);
      } else {
        e->builder.sleep_until(t);
        e->builder.exec(comm);
      }
      ++report_.counters["execs"];
      if (auto rss = get_u64(j, "rss_kb")) e->builder.mem(*rss * 1024);
      return;
    }
    if (event == "EXIT") {
      if (e == nullptr) {
        // Never seen alive: it lived duration_ms (a fork without exec, or one
        // that started before the recording).
        const std::uint64_t life_ns = get_u64(j, "duration_ms").value_or(0) * kNsPerMs;
        e = &spawn(p, pp, comm, t > life_ns ? t - life_ns : 0);
        if (!comm.empty() && e->spec->comm != comm) e->builder.exec(comm);
      }
      Sampling& s = sampling_[p];
      if (!s.sampled) {
        ++report_.counters["unsampled_processes"];
        const std::uint64_t life = t > e->builder.cursor_ns() ? t - e->builder.cursor_ns() : 0;
        report_.note_unrepresented(opts_.unsampled_as_run
                                       ? "ms of unsampled process lifetime modelled as CPU"
                                       : "ms of unsampled process lifetime modelled as sleep",
                                   life / kNsPerMs);
        if (opts_.unsampled_as_run) e->builder.run(life);
      }
      e->builder.sleep_until(t);
      e->builder.exit();
      ++report_.counters["exits"];
      sampling_.erase(p);
      table_.retire(p);
      return;
    }
    // RESOURCE_DETAIL
    const auto user = get_u64(j, "cpu_user_ms");
    const auto sys = get_u64(j, "cpu_sys_ms");
    if (!user || !sys) {
      malformed(report_, opts_, source_, report_.lines,
                "RESOURCE_DETAIL: expected non-negative integers 'cpu_user_ms' and 'cpu_sys_ms'");
      return;
    }
    const std::uint64_t cpu_ms = *user + *sys;
    Sampling& s = sampling_[p];
    if (e == nullptr) {
      // Running before the recording: its counter so far is the baseline.
      e = &spawn(p, 0, comm, t);
      s.last_cpu_ms = cpu_ms;
      if (cpu_ms != 0) report_.note_unrepresented("ms of CPU used before the recording", cpu_ms);
    }
    s.sampled = true;
    if (cpu_ms < s.last_cpu_ms) {
      report_.note_unrepresented("CPU counter decreases (new baseline)");
      s.last_cpu_ms = cpu_ms;
    }
    const std::uint64_t delta_ns = (cpu_ms - s.last_cpu_ms) * kNsPerMs;
    s.last_cpu_ms = cpu_ms;
    cpu_ms_total_ += delta_ns / kNsPerMs;
    const std::uint64_t before = e->builder.cursor_ns();
    e->builder.run(delta_ns);
    if (before + delta_ns > t && delta_ns != 0 && before <= t)
      report_.note_unrepresented("ms of CPU above one core per process (threads serialised)",
                                 (before + delta_ns - t) / kNsPerMs);
    e->builder.sleep_until(t);
    if (auto rss = get_u64(j, "rss_kb")) e->builder.mem(*rss * 1024);
  }

  std::string source_;
  Options opts_;
  Report report_;
  ProcessTable table_;
  std::unordered_map<std::int64_t, Sampling> sampling_;  // lookup only, never iterated
  std::optional<std::uint64_t> t0_;
  std::uint64_t end_ns_ = 0;
  std::uint64_t last_ns_ = 0;
  std::uint64_t cpu_ms_total_ = 0;
};

}  // namespace

Result import_agentcgroup_ebpf(std::istream& in, const std::string& source, const Options& opts) {
  EbpfImporter imp(source, opts);
  std::string line;
  bool too_long = false;
  while (read_bounded_line(in, line, too_long)) {
    if (too_long) imp.line_too_long();
    else imp.line(line);
  }
  if (in.bad()) throw ImportError(source, 0, "read error");
  return imp.finish();
}

Result import_agentcgroup_ebpf_file(const std::string& path, const Options& opts) {
  std::ifstream in(path);
  if (!in) throw ImportError(path, 0, "cannot open file (expected an ebpf_trace.jsonl recording)");
  return import_agentcgroup_ebpf(in, path, opts);
}

}  // namespace agentcg::import
