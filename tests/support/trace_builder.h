// SPDX-License-Identifier: GPL-2.0-only
// Test helper (header-only, for the C++ unit tests of the CPU model): build
// a trace in code, so that each test states its workload (cgroups with
// weights, hogs, run/sleep/io/fork/tool ops) next to its assertions.
// One definition for sim/cpu/*_test.cc (the classes' shared invariants in
// class_invariants_test.cc, and the per-class tests).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sim/trace/trace.h"

namespace agentcg::trace::testing {

inline Op op_ns(OpKind k, std::uint64_t ns) {
  Op o;
  o.kind = k;
  o.amount = Value::fixed(ns);
  return o;
}
inline Op run_op(std::uint64_t ns) { return op_ns(OpKind::kRun, ns); }
inline Op sleep_op(std::uint64_t ns) { return op_ns(OpKind::kSleep, ns); }
inline Op io_op(std::uint64_t ns) { return op_ns(OpKind::kIo, ns); }
inline Op mem_op(std::uint64_t bytes) {
  Op o;
  o.kind = OpKind::kMem;
  o.amount = Value::fixed(bytes);
  return o;
}
inline Op repeat_op(std::uint32_t n, std::vector<Op> body) {
  Op o;
  o.kind = OpKind::kRepeat;
  o.set_count(n);
  o.set_body(std::move(body));
  return o;
}
// Forks a child that runs `ops`, in `cgroup` (default: the parent's).
inline Op fork_op(std::vector<Op> ops, std::string cgroup = "") {
  auto child = std::make_shared<ProcessSpec>();
  child->comm = "child";
  child->cgroup = std::move(cgroup);
  child->ops = std::move(ops);
  Op o;
  o.kind = OpKind::kFork;
  o.set_child(std::move(child));
  return o;
}
// Waits for the process's children (`wait`).
inline Op wait_op() {
  Op o;
  o.kind = OpKind::kWait;
  return o;
}
inline Op tool_op(bool begin) {
  Op o;
  o.kind = begin ? OpKind::kToolBegin : OpKind::kToolEnd;
  if (begin) o.set_name("Bash");
  return o;
}

struct TraceBuilder {
  Trace t;
  std::int64_t pid = 1;
  TraceBuilder(std::uint32_t cpus, std::uint64_t duration_ns) {
    t.name = "test";
    t.machine.cpus = cpus;
    t.duration_ns = duration_ns;
    t.source = "<test>";
  }
  CgroupSpec& cgroup(const std::string& path, std::uint32_t weight = 100) {
    CgroupSpec c;
    c.path = path;
    c.cpu_weight = weight;
    t.cgroups.push_back(c);
    return t.cgroups.back();
  }
  void process(const std::string& cg, std::vector<Op> ops, std::uint64_t start_ns = 0) {
    ProcessSpec p;
    p.pid = pid++;
    p.cgroup = cg;
    p.comm = "p" + std::to_string(p.pid);
    p.start_ns = start_ns;
    p.ops = std::move(ops);
    t.processes.push_back(std::move(p));
  }
  // n processes that run for ns (the whole trace when 0).
  void hogs(const std::string& cg, int n, std::uint64_t ns = 0) {
    for (int i = 0; i < n; i++) process(cg, {run_op(ns ? ns : *t.duration_ns)});
  }
  const Trace& done() {
    validate(t);
    return t;
  }
};

}  // namespace agentcg::trace::testing
