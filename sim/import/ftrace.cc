// SPDX-License-Identifier: GPL-2.0-only
// Importer for scheduler recordings as text: `trace-cmd report`, the tracefs
// `trace` file, and `perf script` output of the sched tracepoints
// (sched_switch, sched_waking, sched_wakeup, sched_wakeup_new,
// sched_process_fork/exec/exit, sched_migrate_task).
//
// Reconstruction, per task (a kernel tid): on-CPU time between a wakeup and
// the switch-out that blocks it is one `run` (preemptions, prev_state R/R+,
// do not end a run: the time spent waiting for a CPU is the scheduler's, not
// the task's); from a blocking switch-out (S/I/T/P: `sleep`, D: `io`) to its
// next wakeup is the sleep. Fork, exec and exit become ops at their place in
// the task's sequence. Worked example:
//   switch-in bash@0, fork@1ms, switch-out S@3ms, waking@10ms, switch-in@10.2ms,
//   sched_process_exit@11ms, switch-out Z@11.5ms
//     ->  run 1ms, fork, run 2ms, sleep 7ms, run 1.3ms, exit
// (the exit op goes at the last switch-out: the teardown after
// sched_process_exit is the task's own CPU; Task::exiting)
// and one observed wakeup latency of 0.2 ms (like `perf sched latency`: from
// the first of sched_waking/sched_wakeup after a sleep, or sched_wakeup_new,
// to the switch that runs the task).
//
// Accepted line shapes (payload key=value, or the compact sched_switch /
// sched_wakeup form printed by trace-cmd's and perf's sched plugin):
//   tracefs:   "  bash-1234  [001] d..2.  100.000100: sched_switch: prev_comm=..."
//   trace-cmd: "  bash-1234  [001]  100.000100: sched_switch: bash:1234 [120] S ==> ..."
//   perf:      "  bash  1234 [001]  100.000100: sched:sched_switch: prev_comm=..."
// prev_state may be a letter (R, R+, S, D, I, T, t, X, Z, P, combinations
// such as D|K) or a number (TASK_REPORT bits since Linux 4.14: 0x1 S, 0x2 D,
// 0x4 T, 0x8 t, 0x10 X, 0x20 Z, 0x40 P, 0x80 I; values with only bits above
// 0x80 set are TASK_REPORT_MAX, "preempted"; include/trace/events/sched.h).
//
// Measured figures besides the wakeup latencies, for fidelity against the
// recording: counters["context_switches"] (switches to a different task
// than the CPU last ran) and, in FtraceDetail, each task's CPU time.
//
// Limitations (counted in the report): migrations and CPU placement (the
// simulator places tasks itself); priority changes (a task's first prio in
// a sched_switch is kept: its nice, or its real-time priority; SCHED_RR is
// written as SCHED_FIFO, the prio does not say); tasks already running at
// the start (their earlier CPU time is unknown; they start at first sight);
// threads are separate processes (the tracepoints do not say clone vs fork).
//
// Who calls it: import_any() / `trace import --from ftrace|perf`, trace stats,
// and the agentcg-record importer (agentcg_record.cc) through FtraceDetail.
#include <algorithm>
#include <charconv>
#include <fstream>
#include <unordered_map>

#include "sim/import/builder.h"
#include "sim/import/import.h"

namespace agentcg::import {

namespace {

enum class TaskState { kNew, kRunning, kRunnable, kSleeping, kDead };
enum class SwitchOut { kRunnable, kSleep, kIo, kDead };

struct Task {
  TaskState state = TaskState::kNew;
  std::uint64_t since_ns = 0;           // running: on-CPU since; sleeping: asleep since
  trace::OpKind sleep_kind = trace::OpKind::kSleep;
  std::optional<std::uint64_t> wakeup_ns;  // pending wakeup for the latency figure
  std::int32_t wake_cpu = -1;              // the CPU of that wakeup's event
  bool wake_new = false;                   // that wakeup was sched_wakeup_new
  bool wake_start = false;                 // that wakeup was the task's first sight (a start, not a sleep's end)
  bool wake_by_task = false;               // that wakeup ended a sleep and a task woke it (WakerKind)
  std::int32_t cpu = -1;                   // running: the CPU it was switched in on
  std::optional<std::int32_t> prio;        // first kernel prio seen in a sched_switch
  // Past sched_process_exit: the task still runs its teardown (exit_mm,
  // exit_files, ...: ~2 ms per child in the VM's fork storm) until its
  // last switch-out (Z/X). That CPU is its own and stays in its ops, a run
  // before the exit op, which goes at the last switch-out.
  bool exiting = false;
  std::int64_t parent = 0;          // the recorded forker (0: not seen forked)
  std::uint32_t live_children = 0;  // children seen forked and not yet exiting
};

struct KeyValue {
  std::string_view key;
  std::string_view value;
};

bool is_key_token(std::string_view tok) {
  const auto eq = tok.find('=');
  if (eq == std::string_view::npos || eq == 0) return false;
  for (std::size_t i = 0; i < eq; ++i) {
    const char c = tok[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// key=value pairs; a value runs until the next key token, so comms with
// spaces ("Bun Pool 2") survive. "==>" separators are skipped.
std::vector<KeyValue> parse_kv(std::string_view payload) {
  std::vector<KeyValue> out;
  std::size_t i = 0;
  const char* value_end = nullptr;
  while (i < payload.size()) {
    while (i < payload.size() && payload[i] == ' ') ++i;
    if (i >= payload.size()) break;
    std::size_t j = i;
    while (j < payload.size() && payload[j] != ' ') ++j;
    const std::string_view tok = payload.substr(i, j - i);
    if (tok == "==>") {
      value_end = nullptr;
    } else if (is_key_token(tok)) {
      const auto eq = tok.find('=');
      out.push_back(KeyValue{tok.substr(0, eq), tok.substr(eq + 1)});
      value_end = tok.data() + tok.size();
    } else if (!out.empty() && value_end != nullptr) {
      // continuation of the previous value (a comm with spaces)
      KeyValue& kv = out.back();
      value_end = tok.data() + tok.size();
      kv.value = std::string_view(kv.value.data(), static_cast<std::size_t>(value_end - kv.value.data()));
    }
    i = j;
  }
  return out;
}

std::optional<std::string_view> get(const std::vector<KeyValue>& kvs, std::string_view key) {
  for (const KeyValue& kv : kvs)
    if (kv.key == key) return kv.value;
  return std::nullopt;
}

std::optional<std::int64_t> to_int(std::string_view s) {
  std::int64_t v = 0;
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// A pid field: 0 (the idle task) .. 2^31-1 (pid_t). Negative or larger
// values make the line malformed instead of reaching the trace (where they
// are invalid and used to lose the whole import).
std::optional<std::int64_t> to_pid(std::string_view s) {
  const auto v = to_int(s);
  if (!v || *v < 0 || *v > kMaxPid) return std::nullopt;
  return v;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// "comm:pid [prio]..." -> comm, pid (the compact plugin form).
bool parse_comm_pid(std::string_view s, std::string_view& comm, std::int64_t& pid,
                    std::string_view& rest) {
  s = trim(s);
  const auto br = s.find(" [");
  const std::string_view head = br == std::string_view::npos ? s : s.substr(0, br);
  rest = br == std::string_view::npos ? std::string_view() : s.substr(br + 1);
  const auto colon = head.find_last_of(':');
  if (colon == std::string_view::npos) return false;
  comm = head.substr(0, colon);
  const auto p = to_pid(head.substr(colon + 1));
  if (!p) return false;
  pid = *p;
  return true;
}

// The task of an event line's header, before its CPU field: "COMM-PID"
// (ftrace, trace-cmd) or "COMM PID" (perf script); nullopt when there is
// none to read (a format without it, or a pid that is not a number).
std::optional<std::pair<std::string_view, std::int64_t>> header_task(std::string_view prefix) {
  const auto br = prefix.find('[');
  std::string_view head = trim(br == std::string_view::npos ? prefix : prefix.substr(0, br));
  const auto sep = head.find_last_of("- ");
  if (sep == std::string_view::npos || sep == 0) return std::nullopt;
  const auto pid = to_pid(head.substr(sep + 1));
  if (!pid) return std::nullopt;
  return std::make_pair(trim(head.substr(0, sep)), *pid);
}

// Whether the line's event ran in an interrupt (hardirq, softirq or NMI),
// from the tracefs latency flags after "[CPU]" ("d.h2." vs "d..3.": the
// third character); nullopt when the line has no such column (perf,
// trace-cmd report without -l).
std::optional<bool> prefix_irq(std::string_view prefix) {
  const auto b = prefix.find(']');
  if (b == std::string_view::npos) return std::nullopt;
  std::string_view f = trim(prefix.substr(b + 1));
  if (const auto sp = f.find(' '); sp != std::string_view::npos) f = f.substr(0, sp);
  if (f.size() < 4 || f.size() > 6 || std::string_view("dDX.").find(f[0]) == std::string_view::npos ||
      std::string_view("ZzHhs.").find(f[2]) == std::string_view::npos)
    return std::nullopt;
  return f[2] != '.';
}

std::optional<SwitchOut> parse_state(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  if ((s[0] >= '0' && s[0] <= '9')) {
    const auto v = to_int(s);
    if (!v || *v < 0) return std::nullopt;
    if (*v == 0) return SwitchOut::kRunnable;
    if (*v & 0x30) return SwitchOut::kDead;
    if (*v & 0x2) return SwitchOut::kIo;
    if (*v & 0xcd) return SwitchOut::kSleep;
    return SwitchOut::kRunnable;  // only TASK_REPORT_MAX-style bits: preempted
  }
  if (s.find('+') != std::string_view::npos || s[0] == 'R') return SwitchOut::kRunnable;
  if (s.find('X') != std::string_view::npos || s.find('Z') != std::string_view::npos)
    return SwitchOut::kDead;
  if (s[0] == 'D') return SwitchOut::kIo;
  const std::string_view sleepy = "SITtPWKNx";
  if (sleepy.find(s[0]) != std::string_view::npos) return SwitchOut::kSleep;
  return std::nullopt;
}

std::string basename_of(std::string_view path) {
  const auto slash = path.find_last_of('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

constexpr std::uint64_t kMaxSpanNs = std::uint64_t{1} << 46;

class FtraceImporter {
 public:
  FtraceImporter(const std::string& source, const Options& opts, FtraceDetail* detail)
      : source_(source), opts_(opts), detail_(detail) {
    report_.format = "ftrace";
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
    std::size_t lead = 0;
    while (lead < text.size() && text[lead] == ' ') ++lead;
    text.remove_prefix(lead);
    if (text.empty() || text[0] == '#') {
      if (auto p = text.find("#P:"); p != std::string_view::npos) header_cpus(text.substr(p + 3));
      return;
    }
    if (text.substr(0, 5) == "cpus=") {
      header_cpus(text.substr(5));
      return;
    }
    // The timestamp is the token before the first ": " whose token is a number.
    std::optional<std::uint64_t> ts;
    std::size_t after = 0;
    cur_cpu_ = -1;
    header_.reset();
    irq_.reset();
    for (std::size_t i = text.find(':'); i != std::string_view::npos; i = text.find(':', i + 1)) {
      if (i + 1 < text.size() && text[i + 1] != ' ') continue;
      std::size_t b = i;
      while (b > 0 && text[b - 1] != ' ') --b;
      ts = parse_seconds_ns(text.substr(b, i - b));
      if (ts) {
        after = i + 1;
        header_ = header_task(text.substr(0, b));
        irq_ = prefix_irq(text.substr(0, b));
        if (!prefix_cpu(text.substr(0, b))) {
          malformed(report_, opts_, source_, report_.lines,
                    "CPU number out of range; expected [0.." + std::to_string(kMaxCpus - 1) + "]");
          return;
        }
        break;
      }
    }
    if (!ts) {
      if (text.find("sched_") != std::string_view::npos)
        malformed(report_, opts_, source_, report_.lines, "sched event line without a timestamp");
      return;  // banners such as "CPU 0 is empty", "version = 6"
    }
    std::string_view rest = trim(text.substr(after));
    std::size_t colon = std::string_view::npos;
    for (std::size_t i = rest.find(':'); i != std::string_view::npos; i = rest.find(':', i + 1)) {
      if (i + 1 == rest.size() || rest[i + 1] == ' ') {
        colon = i;
        break;
      }
    }
    if (colon == std::string_view::npos) {
      malformed(report_, opts_, source_, report_.lines, "expected 'EVENT: fields' after the timestamp");
      return;
    }
    std::string_view event = rest.substr(0, colon);
    if (auto c = event.find_last_of(':'); c != std::string_view::npos) event.remove_prefix(c + 1);
    const std::string_view payload = colon + 1 < rest.size() ? trim(rest.substr(colon + 1)) : "";
    if (event.substr(0, 6) != "sched_") {
      // cpu_idle entering a state (4294967295 is the exit): the machine has
      // idle states and the capture shows them; counted (the capture fit
      // prices a deep state's exit only on such captures), not replayed
      if (event == "cpu_idle") {
        const auto st = get(parse_kv(payload), "state");
        if (st && *st != "4294967295" && *st != "-1") ++report_.counters["idle_state_entries"];
      }
      report_.note_unrepresented("non-scheduler events");
      return;
    }
    if (t0_ && *ts < last_ts_) {
      malformed(report_, opts_, source_, report_.lines,
                "timestamp goes backwards (expected a time-sorted report)");
      return;
    }
    // A jump of more than 2^46 ns (19.5 hours) past the first event is a
    // corrupt timestamp, not a recording (found by fuzz/import_ftrace_fuzz.cc:
    // it made a task run for 32 years).
    if (t0_ && *ts - *t0_ > kMaxSpanNs) {
      malformed(report_, opts_, source_, report_.lines, "timestamp more than 2^46 ns (19.5 hours) after the first");
      return;
    }
    if (!t0_) t0_ = *ts;
    last_ts_ = *ts;
    const std::uint64_t t = *ts - *t0_;
    infer_switch_in(t);
    std::string why;
    if (!dispatch(event, payload, t, why)) {
      if (why.empty()) {
        report_.note_unrepresented("other sched_* events");
      } else {
        malformed(report_, opts_, source_, report_.lines, std::string(event) + ": " + why);
      }
      return;
    }
    ++report_.events;
    if (cur_cpu_ >= 0) {
      if (last_ts_cpu_.size() <= static_cast<std::size_t>(cur_cpu_)) last_ts_cpu_.resize(static_cast<std::size_t>(cur_cpu_) + 1, 0);
      last_ts_cpu_[static_cast<std::size_t>(cur_cpu_)] = t;
    }
  }

  Result finish() {
    const std::uint64_t end = t0_ ? last_ts_ - *t0_ : 0;
    for (ProcessTable::Entry& e : table_.entries()) {
      if (e.builder.exited()) continue;
      Task& task = tasks_[e.recorded_pid];
      if (table_.find(e.recorded_pid) != &e) continue;  // an earlier holder of a reused pid
      if (task.state == TaskState::kRunning) {
        e.builder.run(end - task.since_ns);
        if (detail_ != nullptr) detail_->cpu_ns[e.spec->pid] += end - task.since_ns;
      }
      if (task.state == TaskState::kSleeping) e.builder.sleep_for(end - task.since_ns, task.sleep_kind);
      if (task.exiting) {  // its teardown ran to the recording's end
        if (detail_ != nullptr) detail_->lifetime[e.spec->pid].second = end;
        e.builder.exit();
      }
    }
    if (table_.reused() != 0) report_.note_unrepresented("reused pids renumbered", table_.reused());
    report_.counters["tasks"] = table_.entries().size();
    report_.counters["wakeup_latency_samples"] = report_.wakeup_latency_ns.size();
    Result r;
    r.trace.machine.cpus = opts_.cpus != 0 ? opts_.cpus : std::max<std::uint32_t>(1, max_cpu_ + 1);
    add_cgroup_chain(r.trace, opts_.cgroup);
    if (detail_ != nullptr) {
      detail_->t0_ns = t0_;
      for (const ProcessTable::Entry& e : table_.entries()) {
        detail_->recorded_tid[e.spec->pid] = e.recorded_pid;
        if (!e.builder.exited()) detail_->lifetime[e.spec->pid].second = end;  // alive at the end
      }
    }
    r.trace.processes = table_.take();
    r.trace.duration_ns.reset();
    finish_trace(r.trace, report_, opts_,
                 "per-task run and sleep phases from sched_switch/wakeup, with fork, exec and exit");
    r.report = std::move(report_);
    return r;
  }

 private:
  void header_cpus(std::string_view s) {
    std::size_t n = 0;
    while (n < s.size() && s[n] >= '0' && s[n] <= '9') ++n;
    if (auto v = to_int(s.substr(0, n)); v && *v > 0 && *v <= kMaxCpus)
      max_cpu_ = std::max<std::uint32_t>(max_cpu_, static_cast<std::uint32_t>(*v - 1));
  }
  // False for a CPU number the trace format cannot hold (>= 4096): the line
  // is then malformed (skipped and counted) instead of sizing the machine.
  bool prefix_cpu(std::string_view prefix) {
    const auto a = prefix.find('[');
    const auto b = prefix.find(']', a == std::string_view::npos ? 0 : a);
    if (a == std::string_view::npos || b == std::string_view::npos) return true;
    const auto v = to_int(prefix.substr(a + 1, b - a - 1));
    if (!v) return true;  // not a CPU field
    if (*v < 0 || *v >= kMaxCpus) return false;
    max_cpu_ = std::max<std::uint32_t>(max_cpu_, static_cast<std::uint32_t>(*v));
    cur_cpu_ = static_cast<std::int32_t>(*v);
    return true;
  }

  // The live entry for a tid, created at first sight (already running or
  // sleeping before the recording: it starts at `t` as a root process, on
  // `cpu`, FtraceDetail::present_cpu: the line's CPU unless a wakeup names
  // its target).
  // `on_cpu`: first seen on a CPU (switched in or out, forking, exec'ing,
  // exiting: running or runnable when the recording began,
  // FtraceDetail::present_running), not woken.
  ProcessTable::Entry& task_entry(std::int64_t pid, std::string_view comm, std::uint64_t t, std::int32_t cpu = -1,
                                  bool on_cpu = false) {
    if (ProcessTable::Entry* e = table_.find(pid)) return *e;
    ProcessTable::Entry& e = table_.create(pid, std::string(comm), opts_.cgroup, t);
    if (detail_ != nullptr) {
      detail_->lifetime[e.spec->pid] = {t, t};
      if (const std::int32_t c = cpu >= 0 ? cpu : cur_cpu_; c >= 0) {
        detail_->present_cpu[e.spec->pid] = c;
        if (on_cpu) detail_->present_running.insert(e.spec->pid);
      }
    }
    e.spec->start_ns = t;
    tasks_[pid] = Task{};
    report_.note_unrepresented("tasks present before their first event (earlier CPU unknown)");
    return e;
  }

  // Ends a running stretch at t (keeps the task running).
  void account_run(ProcessTable::Entry& e, Task& task, std::uint64_t t) {
    if (task.state != TaskState::kRunning) return;
    e.builder.run(t - std::min(t, task.since_ns));
    if (detail_ != nullptr) detail_->cpu_ns[e.spec->pid] += t - std::min(t, task.since_ns);
    task.since_ns = t;
  }

  void wake(std::int64_t pid, std::string_view comm, std::uint64_t t, bool is_new, std::int32_t target_cpu) {
    ProcessTable::Entry& e = task_entry(pid, comm, t, target_cpu);
    Task& task = tasks_[pid];
    switch (task.state) {
      case TaskState::kSleeping:
        if (woken_by_last_child(pid, task)) {
          // wait(): a shell or make waiting for its child, replayed as a
          // wait op so that the replay's parent waits for the replay's
          // child (a timed sleep would wake it whatever the child did)
          e.builder.simple(trace::OpKind::kWait);
          e.builder.blocked_until(t);
          ++report_.counters["waits"];
          task.wake_by_task = true;
        } else {
          const std::int64_t waker = waker_of(pid);
          e.builder.sleep_for(t - std::min(t, task.since_ns), task.sleep_kind, waker);
          task.wake_by_task = waker != 0;
        }
        task.state = TaskState::kRunnable;
        task.wakeup_ns = t;
        task.wake_cpu = cur_cpu_;
        task.wake_new = is_new;
        task.wake_start = false;
        break;
      case TaskState::kNew:
        task.state = TaskState::kRunnable;
        task.wakeup_ns = t;
        task.wake_cpu = cur_cpu_;
        task.wake_new = is_new;
        task.wake_start = true;
        task.wake_by_task = false;
        break;
      case TaskState::kRunnable:
        // sched_waking then sched_wakeup: keep the first; a preempted task
        // (no pending wakeup) is not woken.
        break;
      case TaskState::kRunning:
      case TaskState::kDead:
        break;
    }
  }

  // The trace pid of the task that wakes `pid` on this line from its own
  // system call (a pipe write, a futex wake, an exit): the line's task,
  // outside an interrupt, listed; 0 when an interrupt (a timer, I/O
  // completion) or the idle task woke it, or the line does not say.
  std::int64_t waker_of(std::int64_t pid) {
    if (!header_ || header_->second == 0 || header_->second == pid || irq_.value_or(!opts_.unflagged_wakeups_by_task))
      return 0;
    const ProcessTable::Entry* w = table_.find(header_->second);
    return w != nullptr ? w->spec->pid : 0;
  }

  // Whether the line's task, which wakes `pid`, is pid's exiting child and
  // pid has no other child left: its sleep was a wait for its children.
  bool woken_by_last_child(std::int64_t pid, const Task& task) const {
    if (!header_ || task.live_children != 0) return false;
    const auto w = tasks_.find(header_->second);
    return w != tasks_.end() && w->second.exiting && w->second.parent == pid;
  }

  bool dispatch(std::string_view event, std::string_view payload, std::uint64_t t, std::string& why) {
    if (event == "sched_switch") return on_switch(payload, t, why);
    if (event == "sched_waking" || event == "sched_wakeup" || event == "sched_wakeup_new") {
      std::string_view comm;
      std::int64_t pid = 0;
      const auto kvs = parse_kv(payload);
      if (auto p = get(kvs, "pid")) {
        const auto v = to_pid(*p);
        if (!v) return (why = "pid is not a number in 0..2147483647", false);
        pid = *v;
        comm = get(kvs, "comm").value_or("");
      } else {
        std::string_view rest;
        if (!parse_comm_pid(payload, comm, pid, rest))
          return (why = "expected pid=N or COMM:PID", false);
      }
      if (pid == 0) return true;
      std::int32_t target = -1;
      if (const auto v = to_int(get(kvs, "target_cpu").value_or("")); v && *v >= 0 && *v < kMaxCpus)
        target = static_cast<std::int32_t>(*v);
      wake(pid, comm, t, event == "sched_wakeup_new", target);
      return true;
    }
    const auto kvs = parse_kv(payload);
    if (event == "sched_process_fork") {
      const auto ppid = to_pid(get(kvs, "pid").value_or(""));
      const auto cpid = to_pid(get(kvs, "child_pid").value_or(""));
      if (!ppid || !cpid || *cpid <= 0) return (why = "expected pid=N and child_pid=N (pids in 1..2147483647)", false);
      const std::string_view child_comm = get(kvs, "child_comm").value_or(get(kvs, "comm").value_or(""));
      if (*ppid == 0) {  // forked by the idle task (early boot only): a root task
        task_entry(*cpid, child_comm, t);
        return true;
      }
      ProcessTable::Entry& parent = task_entry(*ppid, get(kvs, "comm").value_or(""), t, -1, true);
      Task& ptask = tasks_[*ppid];
      account_run(parent, ptask, t);
      if (ProcessTable::Entry* old = table_.find(*cpid)) {  // pid reused after exit
        // Its last switch-out was lost: the exit it announced ends it here.
        if (tasks_[*cpid].exiting && !old->builder.exited()) old->builder.exit();
        table_.retire(*cpid);
      }
      ProcessTable::Entry& child = table_.create(*cpid, std::string(child_comm), opts_.cgroup, t);
      if (detail_ != nullptr) detail_->lifetime[child.spec->pid] = {t, t};
      // The parent entry reference stays valid: the table is a deque.
      parent.builder.fork(child.spec->pid);
      child.spec->parent = parent.spec->pid;
      if (parent.builder.exited()) {
        child.spec->parent.reset();
        child.spec->start_ns = t;
      }
      tasks_[*cpid] = Task{};
      tasks_[*cpid].parent = *ppid;
      ++tasks_[*ppid].live_children;
      ++report_.counters["forks"];
      return true;
    }
    if (event == "sched_process_exec") {
      const auto pid = to_pid(get(kvs, "pid").value_or(""));
      const auto file = get(kvs, "filename");
      if (!pid || *pid == 0 || !file) return (why = "expected filename=PATH and pid=N (1..2147483647)", false);
      // An empty name (filename= or a path ending in /) would be an exec
      // with an empty comm, which the trace format rejects.
      if (basename_of(*file).empty()) return (why = "expected a non-empty filename=PATH", false);
      ProcessTable::Entry& e = task_entry(*pid, basename_of(*file), t, -1, true);
      account_run(e, tasks_[*pid], t);
      e.builder.exec(basename_of(*file));
      return true;
    }
    if (event == "sched_process_exit") {
      const auto pid = to_pid(get(kvs, "pid").value_or(""));
      if (!pid) return (why = "expected pid=N (0..2147483647)", false);
      if (*pid == 0) return true;
      task_entry(*pid, get(kvs, "comm").value_or(""), t, -1, true);  // first sight: a process from now
      Task& task = tasks_[*pid];
      // The exiting task itself emits the event: it is on a CPU now.
      if (task.state == TaskState::kNew) {
        task.state = TaskState::kRunning;
        task.since_ns = t;
      }
      if (task.state == TaskState::kDead) return true;
      if (!task.exiting && task.parent != 0) {
        Task& pt = tasks_[task.parent];
        if (pt.live_children > 0) --pt.live_children;
      }
      task.exiting = true;  // the exit op follows its teardown (Task::exiting)
      return true;
    }
    if (event == "sched_migrate_task") {
      report_.note_unrepresented("migrations (the simulator places tasks itself)");
      return true;
    }
    return false;
  }

  // A task's kernel prio from sched_switch (prev_prio=/next_prio= or the
  // compact "[PRIO]"), kept the first time it is seen (a later change is
  // counted, not replayed): 100..139 is nice prio-120; 0..99 a real-time
  // priority 99-prio (SCHED_FIFO: the prio does not tell SCHED_RR; 0 is
  // also the stop class's migration/N on older kernels); -1 a deadline
  // task, replayed as real-time priority 99 (counted). Each is written
  // when it differs from what the replay would assume: the parent's for a
  // forked process (fork inherits both), else nice 0 and the fair class.
  // An unreadable prio is ignored (the switch itself is still good).
  void note_prio(ProcessTable::Entry& e, Task& task, std::string_view text) {
    if (text.empty()) return;
    const auto v = to_int(trim(text));
    if (!v || *v < -1 || *v > 139) return;
    const auto prio = static_cast<std::int32_t>(*v);
    if (task.prio) {
      if (*task.prio != prio)
        report_.note_unrepresented(*task.prio >= 100 && prio >= 100
                                       ? "nice changes during the recording (the first nice is kept)"
                                       : "priority changes during the recording (priority inheritance, "
                                         "sched_setscheduler: the first priority is kept)");
      return;
    }
    task.prio = prio;
    if (prio < 0) report_.note_unrepresented("deadline tasks (replayed as real-time priority 99)");
    const std::int32_t rt = prio < 0 ? 99 : prio < 100 ? 99 - prio : 0;
    const std::int32_t nice = prio >= 100 ? prio - 120 : 0;
    std::int32_t assumed_rt = 0, assumed_nice = 0;
    if (e.spec->parent) {
      const auto r = rt_of_pid_.find(*e.spec->parent);
      if (r != rt_of_pid_.end()) assumed_rt = r->second;
      const auto n = nice_of_pid_.find(*e.spec->parent);
      if (n != nice_of_pid_.end()) assumed_nice = n->second;
    }
    if (rt != assumed_rt) e.spec->rt_priority = rt;
    if (rt != 0) rt_of_pid_[e.spec->pid] = rt;
    if (rt != 0) return;  // a real-time task's nice does not act
    if (nice != assumed_nice) e.spec->nice = nice;
    if (nice != 0) nice_of_pid_[e.spec->pid] = nice;
  }

  // `pid` starts running on cur_cpu_ at t (a sched_switch's next task, or
  // one inferred by infer_switch_in): the switch count, the end of its
  // runnable wait (a latency sample when a wakeup was pending).
  void switch_in(std::int64_t pid, std::string_view comm, std::string_view prio, std::uint64_t t,
                 bool inferred = false) {
    if (cur_cpu_ >= 0) {
      // a switch to a different task than the CPU last ran (idle in
      // between does not count), as the simulator counts context_switches
      if (last_on_cpu_.size() <= static_cast<std::size_t>(cur_cpu_)) last_on_cpu_.resize(static_cast<std::size_t>(cur_cpu_) + 1, 0);
      std::int64_t& last = last_on_cpu_[static_cast<std::size_t>(cur_cpu_)];
      if (last != pid) ++report_.counters["context_switches"];
      last = pid;
    }
    ProcessTable::Entry& e = task_entry(pid, comm, t, -1, true);
    Task& task = tasks_[pid];
    note_prio(e, task, prio);
    if (task.state == TaskState::kSleeping) {
      // The wakeup event was not recorded (filtered or lost).
      e.builder.sleep_for(t - std::min(t, task.since_ns), task.sleep_kind);
      report_.note_unrepresented("switch-ins without a recorded wakeup");
    }
    if (task.state != TaskState::kDead) {
      if (task.wakeup_ns) {
        report_.wakeup_latency_ns.push_back(t - std::min(t, *task.wakeup_ns));
        if (detail_ != nullptr) {
          const WakeupKind kind = task.wake_new                 ? WakeupKind::kNew
                                  : task.wake_cpu == cur_cpu_ ? WakeupKind::kLocal
                                                              : WakeupKind::kRemote;
          detail_->wakeups.push_back(
              {e.spec->pid, report_.wakeup_latency_ns.back(), kind, inferred, task.wake_start,
               task.wake_by_task ? WakerKind::kTask : WakerKind::kInterrupt});
        }
      }
      task.wakeup_ns.reset();
      task.state = TaskState::kRunning;
      task.since_ns = t;
      task.cpu = cur_cpu_;
    }
  }

  // A task that is not the one last switched in on this CPU has an event
  // here: its switch-in was not recorded. Seen on the 2-vCPU KVM guest of
  // tests/data/recordings/kvm2cpu, where no switch out of CPU 1's idle task
  // is ever traced (0 of 63-73 per capture, against every one on CPU 0):
  // the woken task then "waited" until its next recorded switch-in,
  // milliseconds later. It is switched in at the CPU's previous event (the
  // earliest it can have run: a lower bound; that event is mostly the
  // wakeup itself, taken in the woken CPU's IPI), and the task the CPU
  // last ran, if still running there, is ended there as a switch-out.
  void infer_switch_in(std::uint64_t t) {
    if (!header_ || header_->second == 0 || cur_cpu_ < 0) return;
    const auto c = static_cast<std::size_t>(cur_cpu_);
    if (c >= cur_task_.size() || c >= last_ts_cpu_.size()) return;  // nothing known of this CPU yet
    const std::int64_t pid = header_->second;
    const std::int64_t q = cur_task_[c];
    if (q == pid || !cpu_seen_switch(c)) return;
    auto it = tasks_.find(pid);
    if (it == tasks_.end() || it->second.state != TaskState::kRunnable) return;  // only a woken or preempted task
    const std::uint64_t at = std::min(t, std::max(last_ts_cpu_[c], it->second.wakeup_ns.value_or(0)));
    if (q != 0) {
      if (ProcessTable::Entry* qe = table_.find(q)) {
        Task& qt = tasks_[q];
        if (qt.state == TaskState::kRunning && qt.cpu == cur_cpu_) {
          account_run(*qe, qt, at);
          qt.state = TaskState::kRunnable;
        }
      }
    }
    cur_task_[c] = pid;
    switch_in(pid, header_->first, "", at, true);
    report_.note_unrepresented("switch-ins not recorded (inferred at the CPU's previous event)");
  }
  bool cpu_seen_switch(std::size_t c) const { return c < switched_.size() && switched_[c]; }

  bool on_switch(std::string_view payload, std::uint64_t t, std::string& why) {
    std::string_view prev_comm, next_comm, state_text, prev_prio, next_prio;
    std::int64_t prev_pid = 0, next_pid = 0;
    const auto kvs = parse_kv(payload);
    if (get(kvs, "prev_pid")) {
      prev_prio = get(kvs, "prev_prio").value_or("");
      next_prio = get(kvs, "next_prio").value_or("");
      const auto pp = to_pid(get(kvs, "prev_pid").value_or(""));
      const auto np = to_pid(get(kvs, "next_pid").value_or(""));
      const auto st = get(kvs, "prev_state");
      if (!pp || !np || !st)
        return (why = "expected prev_pid=, prev_state= and next_pid= (pids in 0..2147483647)", false);
      prev_pid = *pp;
      next_pid = *np;
      state_text = *st;
      prev_comm = get(kvs, "prev_comm").value_or("");
      next_comm = get(kvs, "next_comm").value_or("");
    } else {
      const auto arrow = payload.find("==>");
      if (arrow == std::string_view::npos)
        return (why = "expected 'prev_pid=...' fields or 'COMM:PID [PRIO] STATE ==> COMM:PID [PRIO]'", false);
      std::string_view rest;
      if (!parse_comm_pid(payload.substr(0, arrow), prev_comm, prev_pid, rest))
        return (why = "cannot read the previous task's COMM:PID", false);
      const auto close = rest.find(']');
      state_text = close == std::string_view::npos ? rest : rest.substr(close + 1);
      if (close != std::string_view::npos && !rest.empty() && rest[0] == '[') prev_prio = rest.substr(1, close - 1);
      std::string_view next_rest;
      if (!parse_comm_pid(payload.substr(arrow + 3), next_comm, next_pid, next_rest))
        return (why = "cannot read the next task's COMM:PID", false);
      const auto nclose = next_rest.find(']');
      if (nclose != std::string_view::npos && !next_rest.empty() && next_rest[0] == '[')
        next_prio = next_rest.substr(1, nclose - 1);
    }
    const auto out = parse_state(state_text);
    if (!out) return (why = "unknown prev_state '" + std::string(trim(state_text)) + "'", false);
    if (cur_cpu_ >= 0) {
      // The task switched in last on this CPU is not the one switching out:
      // its switch-out was not recorded (seen in tracefs captures of a busy
      // 6.18 guest). It ran at most until now; without the fix it "ran"
      // to the end of the recording (5.3 s of CPU in 1.5 s on 2 CPUs).
      const auto c = static_cast<std::size_t>(cur_cpu_);
      if (cur_task_.size() <= c) cur_task_.resize(c + 1, 0);
      const std::int64_t q = cur_task_[c];
      if (q != 0 && q != prev_pid) {
        if (ProcessTable::Entry* qe = table_.find(q)) {
          Task& qt = tasks_[q];
          if (qt.state == TaskState::kRunning && qt.cpu == cur_cpu_) {
            account_run(*qe, qt, t);
            qt.state = TaskState::kRunnable;
            report_.note_unrepresented("switch-outs not recorded (run ended at the CPU's next switch)");
          }
        }
      }
      cur_task_[c] = next_pid;
      if (switched_.size() <= c) switched_.resize(c + 1, false);
      switched_[c] = true;
    }
    if (prev_pid != 0) {
      ProcessTable::Entry& e = task_entry(prev_pid, prev_comm, t, -1, true);
      Task& task = tasks_[prev_pid];
      note_prio(e, task, prev_prio);
      if (task.state == TaskState::kNew) {
        task.state = TaskState::kRunning;  // running before its first event
        task.since_ns = t;
      }
      account_run(e, task, t);
      if (task.state != TaskState::kDead) {
        switch (*out) {
          case SwitchOut::kRunnable:
            task.state = TaskState::kRunnable;
            break;
          case SwitchOut::kSleep:
          case SwitchOut::kIo:
            task.state = TaskState::kSleeping;
            task.since_ns = t;
            task.sleep_kind = *out == SwitchOut::kIo ? trace::OpKind::kIo : trace::OpKind::kSleep;
            break;
          case SwitchOut::kDead:
            if (detail_ != nullptr && !e.builder.exited()) detail_->lifetime[e.spec->pid].second = t;
            e.builder.exit();
            task.state = TaskState::kDead;
            break;
        }
      }
    }
    if (next_pid != 0) switch_in(next_pid, next_comm, next_prio, t);
    return true;
  }

  std::string source_;
  Options opts_;
  FtraceDetail* detail_;
  Report report_;
  ProcessTable table_;
  std::unordered_map<std::int64_t, Task> tasks_;  // by recorded tid; lookup only, never iterated
  std::unordered_map<std::int64_t, std::int32_t> nice_of_pid_;  // trace pid -> nice != 0; lookup only
  std::unordered_map<std::int64_t, std::int32_t> rt_of_pid_;    // trace pid -> real-time priority != 0; lookup only
  std::optional<std::uint64_t> t0_;
  std::uint64_t last_ts_ = 0;
  std::uint32_t max_cpu_ = 0;
  std::int32_t cur_cpu_ = -1;               // CPU field of the line being read; -1 = none
  std::vector<std::int64_t> last_on_cpu_;   // per CPU: the last task switched in (0 = none yet)
  std::vector<std::int64_t> cur_task_;      // per CPU: the task switched in last (0 = idle / unknown)
  std::vector<bool> switched_;              // per CPU: a sched_switch was seen there (cur_task_ is known)
  std::vector<std::uint64_t> last_ts_cpu_;  // per CPU: the time of its last event
  std::optional<std::pair<std::string_view, std::int64_t>> header_;  // the line's task (header_task)
  std::optional<bool> irq_;  // the line's event ran in an interrupt (prefix_irq); unknown: nullopt
};

}  // namespace

Result import_ftrace(std::istream& in, const std::string& source, const Options& opts,
                     FtraceDetail* detail) {
  FtraceImporter imp(source, opts, detail);
  std::string line;
  bool too_long = false;
  while (read_bounded_line(in, line, too_long)) {
    if (too_long) imp.line_too_long();
    else imp.line(line);
  }
  if (in.bad()) throw ImportError(source, 0, "read error");
  return imp.finish();
}

Result import_ftrace_file(const std::string& path, const Options& opts) {
  std::ifstream in(path);
  if (!in) throw ImportError(path, 0, "cannot open file (expected trace-cmd report / perf script text)");
  Result r = import_ftrace(in, path, opts);
  return r;
}

}  // namespace agentcg::import
