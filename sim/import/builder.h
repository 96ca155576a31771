// SPDX-License-Identifier: GPL-2.0-only
// Helpers shared by the importers: a per-process op builder with a wall-clock
// cursor, and the process table that keeps processes in creation order.
//
// Invariants: a process's ops, played without contention, end at cursor_ns()
// (the recording's time of the last event placed); adjacent runs and adjacent
// sleeps of the same kind are merged and zero-length ops are dropped, so a
// trace's size follows the recording's activity, not its sampling rate.
// Pids in the produced trace are unique: a recorded pid that is reused after
// its process exited gets a fresh pid above every recorded one.
//
// Who calls it: the importers in sim/import/ only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/import/import.h"
#include "sim/trace/trace.h"

namespace agentcg::import {

class ProcessBuilder {
 public:
  explicit ProcessBuilder(trace::ProcessSpec* spec, std::uint64_t start_ns)
      : spec_(spec), cursor_ns_(start_ns) {}

  std::uint64_t cursor_ns() const { return cursor_ns_; }
  trace::ProcessSpec& spec() { return *spec_; }
  bool exited() const { return exited_; }

  void run(std::uint64_t ns) {
    if (ns == 0 || exited_) return;
    cursor_ns_ += ns;
    run_total_ns_ += ns;
    add_timed(trace::OpKind::kRun, ns);
  }
  // Sleeps (or blocks on I/O) from the cursor to `t`; no-op when t <= cursor.
  void sleep_until(std::uint64_t t, trace::OpKind kind = trace::OpKind::kSleep) {
    if (t <= cursor_ns_ || exited_) return;
    add_timed(kind, t - cursor_ns_);
    cursor_ns_ = t;
  }
  // Sleeps (or blocks) for a measured duration, wherever the cursor is.
  // `waker`: the listed process that ended it (0: a timer or interrupt).
  void sleep_for(std::uint64_t ns, trace::OpKind kind = trace::OpKind::kSleep, std::int64_t waker = 0) {
    if (ns == 0 || exited_) return;
    add_timed(kind, ns, waker);
    cursor_ns_ += ns;
  }
  // The process was blocked by an op that takes no recorded time of its own
  // (wait for children) until t: the cursor moves, no op is added.
  void blocked_until(std::uint64_t t) { cursor_ns_ = std::max(cursor_ns_, t); }
  void mem(std::uint64_t bytes) {
    if (exited_ || (have_mem_ && bytes == last_mem_)) return;
    trace::Op op;
    op.kind = trace::OpKind::kMem;
    op.amount = trace::Value::fixed(bytes);
    spec_->ops.push_back(std::move(op));
    have_mem_ = true;
    last_mem_ = bytes;
  }
  void fork(std::int64_t child_pid) {
    if (exited_) return;
    trace::Op op;
    op.kind = trace::OpKind::kFork;
    op.set_pid(child_pid);
    spec_->ops.push_back(std::move(op));
  }
  void exec(const std::string& comm) {
    if (exited_) return;
    trace::Op op;
    op.kind = trace::OpKind::kExec;
    op.set_name(utf8_or_replace(comm));
    spec_->ops.push_back(std::move(op));
  }
  void simple(trace::OpKind kind, const std::string& name = {}, std::uint64_t step = 0) {
    if (exited_) return;
    trace::Op op;
    op.kind = kind;
    op.set_name(name);
    op.set_step(step);
    spec_->ops.push_back(std::move(op));
  }
  void exit() {
    if (exited_) return;
    simple(trace::OpKind::kExit);
    exited_ = true;
  }
  std::uint64_t run_total_ns() const { return run_total_ns_; }

 private:
  // A sleep's `waker` (0: a timer's) is the one that ended it: merged into
  // the sleep before it, the later end is the op's.
  void add_timed(trace::OpKind kind, std::uint64_t ns, std::int64_t waker = 0) {
    if (!spec_->ops.empty()) {
      trace::Op& last = spec_->ops.back();
      if (last.kind == kind && !last.amount.is_random()) {
        last.amount.a += ns;
        if (kind != trace::OpKind::kRun) last.set_waker(waker);
        return;
      }
    }
    trace::Op op;
    op.kind = kind;
    op.amount = trace::Value::fixed(ns);
    if (kind != trace::OpKind::kRun) op.set_waker(waker);
    spec_->ops.push_back(std::move(op));
  }

  trace::ProcessSpec* spec_;
  std::uint64_t cursor_ns_;
  std::uint64_t run_total_ns_ = 0;
  std::uint64_t last_mem_ = 0;
  bool have_mem_ = false;
  bool exited_ = false;
};

// Bounds of the trace format that importers check per line, so that a bad
// value skips its line instead of making the whole trace invalid.
inline constexpr std::int64_t kMaxPid = 2147483647;  // pid_t
inline constexpr std::int64_t kMaxCpus = 4096;       // machine.cpus

// Processes in creation order with lookup by recorded pid. Entries live in a
// std::deque so an Entry& stays valid while later processes are created.
class ProcessTable {
 public:
  struct Entry {
    std::unique_ptr<trace::ProcessSpec> spec;
    ProcessBuilder builder;
    std::int64_t recorded_pid;
  };

  // The live (not exited) process for a recorded pid, or nullptr.
  Entry* find(std::int64_t recorded_pid) {
    auto it = live_.find(recorded_pid);
    return it == live_.end() ? nullptr : &entries_[it->second];
  }
  // Creates a process; the previous holder of the pid (if any) is retired.
  // A reused recorded pid gets a fresh pid from kReusedPidBase up.
  Entry& create(std::int64_t recorded_pid, const std::string& comm, const std::string& cgroup,
                std::uint64_t start_ns) {
    std::int64_t pid = recorded_pid;
    if (used_.count(recorded_pid) != 0) {
      pid = kReusedPidBase + static_cast<std::int64_t>(reused_++);
    }
    used_.emplace(recorded_pid, 1);
    auto spec = std::make_unique<trace::ProcessSpec>();
    spec->pid = pid;
    spec->comm = utf8_or_replace(comm);
    spec->cgroup = cgroup;
    trace::ProcessSpec* raw = spec.get();
    entries_.push_back(Entry{std::move(spec), ProcessBuilder(raw, start_ns), recorded_pid});
    live_[recorded_pid] = entries_.size() - 1;
    return entries_.back();
  }
  // Forgets the pid's live process (after its exit) so a reuse creates anew.
  void retire(std::int64_t recorded_pid) { live_.erase(recorded_pid); }
  std::deque<Entry>& entries() { return entries_; }
  std::uint64_t reused() const { return reused_; }

  // Moves the specs out in creation order.
  std::vector<trace::ProcessSpec> take() {
    std::vector<trace::ProcessSpec> out;
    out.reserve(entries_.size());
    for (Entry& e : entries_) out.push_back(std::move(*e.spec));
    entries_.clear();
    live_.clear();
    return out;
  }

  // Fresh pids for reused recorded pids start here (above Linux's pid_max
  // limit of 2^22, so they cannot clash with recorded pids).
  static constexpr std::int64_t kReusedPidBase = std::int64_t{1} << 23;

 private:
  std::deque<Entry> entries_;
  std::unordered_map<std::int64_t, std::size_t> live_;  // lookup only, never iterated
  std::unordered_map<std::int64_t, int> used_;          // lookup only, never iterated
  std::uint64_t reused_ = 0;
};

// Trims trailing whitespace and '\r' (CRLF files).
inline std::string_view rstrip(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

// File name without directories and extension, for default trace names.
std::string stem(const std::string& path);

// Appends the cgroup `path` and its ancestors (parents first) to t.cgroups,
// skipping "/" and paths already listed.
void add_cgroup_chain(trace::Trace& t, const std::string& path);

// Fills name/description/generator of an imported trace from the report.
void finish_trace(trace::Trace& t, const Report& report, const Options& opts,
                  const std::string& what);

}  // namespace agentcg::import
