// SPDX-License-Identifier: GPL-2.0-only
// The real-time class of the CPU model (trace rt_priority: SCHED_FIFO and
// SCHED_RR above the modelled class, CpuModel's header comment): it runs
// before and preempts every class's tasks, its tasks keep FIFO order
// within a priority and rotate under RR, and placement, push and pull put
// a waiting RT task on a CPU of lower priority as select_task_rq_rt(),
// push_rt_tasks() and pull_rt_task() do. Traces are built in code.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "sim/api.h"
#include "sim/cpu/cpu_model.h"
#include "sim/event_queue.h"
#include "sim/schedule_log.h"
#include "tests/support/trace_builder.h"

namespace agentcg::sim {
namespace {

using trace::testing::fork_op;
using trace::testing::repeat_op;
using trace::testing::run_op;
using trace::testing::sleep_op;
using trace::testing::wait_op;
using Builder = trace::testing::TraceBuilder;

constexpr std::uint64_t kMs = 1000000;
constexpr std::uint64_t kUs = 1000;

const char* const kPolicies[] = {"cfs", "eevdf", "fifo", "flatcg", "agentcg"};

ScheduleLog run_log(const trace::Trace& t, const std::string& policy, bool per_cpu = false) {
  config::Config cfg;
  if (per_cpu) cfg.machine.runqueues = config::MachineConfig::Runqueues::kPerCpu;
  auto cls = make_class(policy, cfg);
  Simulator simulator;
  ScheduleLog log;
  CpuModel cpu(simulator, t, *cls, cfg.machine, 1, &log);
  cpu.start();
  while (!cpu.finished() && simulator.step()) {
  }
  cpu.finish();
  return log;
}

// The slices of `pid`, in time order.
std::vector<ScheduleSlice> slices_of(const ScheduleLog& log, std::int64_t pid) {
  std::vector<ScheduleSlice> v;
  for (const ScheduleSlice& s : log.slices)
    if (s.pid == pid && s.end_ns > s.start_ns) v.push_back(s);
  std::sort(v.begin(), v.end(), [](const ScheduleSlice& a, const ScheduleSlice& b) { return a.start_ns < b.start_ns; });
  return v;
}

// A periodic task (1 ms of work every 10 ms) beside four hogs of nice -20
// in its cgroup on one CPU: as a real-time task its every wakeup runs at
// once (the wakeup path and a context switch) under every policy; as a
// fair task at nice 19 it waits behind the hogs under cfs, eevdf and fifo.
TEST(RealTime, RunsBeforeEveryClassAndPreemptsAtOnce) {
  for (const char* policy : kPolicies) {
    SCOPED_TRACE(policy);
    auto p90_us = [&](bool rt) {
      Builder b(1, 500 * kMs);
      b.cgroup("/a");
      for (int i = 0; i < 4; ++i) {
        b.process("/a", {run_op(500 * kMs)});
        b.t.processes.back().nice = -20;
      }
      b.process("/a", {repeat_op(45, {sleep_op(9 * kMs), run_op(1 * kMs)})});
      if (rt) b.t.processes.back().rt_priority = 10;
      else b.t.processes.back().nice = 19;
      RunOptions o;
      o.policy = policy;
      const nlohmann::json r = run(b.done(), o);
      // (the periodic task's wakeups: pid 5's, the hogs' start once)
      return r["wakeup_latency_ns"]["p90"].get<double>() / kUs;
    };
    EXPECT_LT(p90_us(true), 50.0);
    // (flatcg and agentcg let a light sleeper in the hogs' group in at once too)
    if (std::string(policy) != "flatcg" && std::string(policy) != "agentcg") {
      EXPECT_GT(p90_us(false), 1000.0);
    }
  }
}

// A fair task that becomes runnable while an RT task runs on the only CPU
// waits for it to finish, whatever its weight: the class is never asked
// while an RT task is runnable there.
TEST(RealTime, AFairTaskWaitsUntilTheRealTimeTaskLeavesTheCpu) {
  for (const char* policy : kPolicies) {
    SCOPED_TRACE(policy);
    Builder b(1, 300 * kMs);
    b.process("/", {run_op(100 * kMs)});
    b.t.processes.back().rt_priority = 1;
    b.process("/", {run_op(1 * kMs)}, 1 * kMs);
    b.t.processes.back().nice = -20;
    const ScheduleLog log = run_log(b.done(), policy);
    const auto fair = slices_of(log, 2);
    ASSERT_FALSE(fair.empty());
    EXPECT_GE(fair.front().start_ns, 100 * kMs);
    EXPECT_EQ(slices_of(log, 1).size(), 1u);  // never preempted
  }
}

// SCHED_FIFO: two tasks of one priority run one after the other, each to
// its end; SCHED_RR: they take turns in 100 ms slices.
TEST(RealTime, FifoRunsToTheEndRoundRobinTakesTurns) {
  for (const bool rr : {false, true}) {
    SCOPED_TRACE(rr ? "rr" : "fifo");
    Builder b(1, 1000 * kMs);
    for (int i = 0; i < 2; ++i) {
      b.process("/", {run_op(300 * kMs)});
      b.t.processes.back().rt_priority = 5;
      b.t.processes.back().rt_round_robin = rr;
    }
    const ScheduleLog log = run_log(b.done(), "eevdf");
    const auto a = slices_of(log, 1), c = slices_of(log, 2);
    ASSERT_FALSE(a.empty());
    ASSERT_FALSE(c.empty());
    if (!rr) {
      EXPECT_EQ(a.size(), 1u);
      EXPECT_EQ(c.size(), 1u);
      EXPECT_GE(c.front().start_ns, a.back().end_ns);
    } else {
      EXPECT_EQ(a.size(), 3u);
      EXPECT_EQ(c.size(), 3u);
      EXPECT_NEAR(static_cast<double>(a.front().end_ns - a.front().start_ns), 100.0 * kMs, 1.0 * kMs);
      EXPECT_LT(c.front().start_ns, a.back().start_ns);  // the second ran before the first was done
    }
  }
}

// A higher priority preempts a lower one at once; the preempted SCHED_FIFO
// task goes back to the head of its priority, so it resumes before
// another task of its priority that was waiting all along.
TEST(RealTime, AHigherPriorityPreemptsAndThePreemptedResumesFirst) {
  Builder b(1, 500 * kMs);
  b.process("/", {run_op(100 * kMs)});  // 1: low, runs first
  b.t.processes.back().rt_priority = 10;
  b.process("/", {run_op(50 * kMs)});  // 2: low, waits behind 1
  b.t.processes.back().rt_priority = 10;
  b.process("/", {run_op(5 * kMs)}, 20 * kMs);  // 3: high, at 20 ms
  b.t.processes.back().rt_priority = 50;
  const ScheduleLog log = run_log(b.done(), "cfs");
  const auto low = slices_of(log, 1), other = slices_of(log, 2), high = slices_of(log, 3);
  ASSERT_EQ(low.size(), 2u);
  ASSERT_EQ(high.size(), 1u);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_LT(high.front().start_ns, 21 * kMs);  // at once (the wakeup path and a switch)
  EXPECT_LE(low[0].end_ns, 20 * kMs + 100 * kUs);
  EXPECT_GE(low[1].start_ns, high.front().end_ns);
  EXPECT_GE(other.front().start_ns, low[1].end_ns);
}

// fork keeps the policy: an RT parent's child without rt_priority is RT
// too; rt_priority 0 makes a child fair. The parent forks the fair child
// first: as a fair task it waits until the RT child is done.
TEST(RealTime, ForkInheritsThePolicyUnlessTheChildSaysOtherwise) {
  for (const char* policy : kPolicies) {
    SCOPED_TRACE(policy);
    Builder b(1, 500 * kMs);
    trace::Op fair = fork_op({run_op(20 * kMs)});
    auto fair_child = std::make_shared<trace::ProcessSpec>(*fair.child());
    fair_child->rt_priority = 0;
    fair.set_child(fair_child);
    b.process("/", {fair, fork_op({run_op(20 * kMs)}), wait_op()});
    b.t.processes.back().rt_priority = 3;
    const ScheduleLog log = run_log(b.done(), policy);
    // pids: 1 the parent, 2 the fair child, 3 the inheriting child
    const auto f = slices_of(log, 2), r = slices_of(log, 3);
    ASSERT_FALSE(f.empty());
    ASSERT_FALSE(r.empty());
    EXPECT_GE(f.front().start_ns, r.back().end_ns);
  }
}

// Placement and balancing on per-CPU queues (eevdf and cfs): a woken RT
// task whose CPU runs a higher RT task goes to the CPU of the lowest
// priority (one running a fair hog), preempting the hog there; one that
// must wait behind a higher RT task (every other CPU is higher too) is
// pulled by the first CPU that drops below it.
TEST(RealTime, PlacementPushAndPullFindACpuOfLowerPriority) {
  for (const char* policy : {"eevdf", "cfs"}) {
    SCOPED_TRACE(policy);
    {
      Builder b(2, 300 * kMs);
      b.process("/", {run_op(100 * kMs)});  // 1: RT 80 on CPU 0
      b.t.processes.back().rt_priority = 80;
      b.process("/", {run_op(200 * kMs)});  // 2: a fair hog (CPU 1)
      // 3: RT 50, woken on CPU 0 (where it last ran, before 1 started? it
      // starts at 10 ms, its parent-less start placed by select_cpu_rt from CPU 0)
      b.process("/", {run_op(5 * kMs)}, 10 * kMs);
      b.t.processes.back().rt_priority = 50;
      const ScheduleLog log = run_log(b.done(), policy, true);
      const auto z = slices_of(log, 3);
      ASSERT_EQ(z.size(), 1u);
      EXPECT_EQ(z.front().cpu, 1u);
      EXPECT_LT(z.front().start_ns, 11 * kMs);
    }
    {
      // CPU 0 runs RT 80 for 100 ms, CPU 1 RT 90 for 50 ms; RT 50 woken at
      // 10 ms has no lower CPU and waits; at 50 ms CPU 1 pulls it.
      Builder b(2, 300 * kMs);
      b.process("/", {run_op(100 * kMs)});
      b.t.processes.back().rt_priority = 80;
      b.process("/", {run_op(50 * kMs)});
      b.t.processes.back().rt_priority = 90;
      b.process("/", {run_op(5 * kMs)}, 10 * kMs);
      b.t.processes.back().rt_priority = 50;
      const ScheduleLog log = run_log(b.done(), policy, true);
      const auto x = slices_of(log, 2), z = slices_of(log, 3);
      ASSERT_EQ(z.size(), 1u);
      ASSERT_FALSE(x.empty());
      EXPECT_NE(z.front().cpu, slices_of(log, 1).front().cpu);
      EXPECT_NEAR(static_cast<double>(z.front().start_ns), static_cast<double>(x.back().end_ns), 10.0 * kUs);
    }
  }
}

// A preempted RT task that has a CPU of lower priority to go to is pushed
// there: RT 50 runs on CPU 0 beside a fair hog on CPU 1; RT 80 wakes on
// CPU 0 and preempts it; RT 50 moves to CPU 1 at once, preempting the hog.
TEST(RealTime, APreemptedRealTimeTaskIsPushedToALowerCpu) {
  Builder b(2, 300 * kMs);
  b.process("/", {run_op(50 * kMs)});  // 1: RT 50
  b.t.processes.back().rt_priority = 50;
  b.process("/", {run_op(200 * kMs)});  // 2: fair hog
  b.process("/", {sleep_op(0), run_op(20 * kMs)}, 10 * kMs);  // 3: RT 80 at 10 ms
  b.t.processes.back().rt_priority = 80;
  const ScheduleLog log = run_log(b.done(), "eevdf", true);
  const auto low = slices_of(log, 1), high = slices_of(log, 3);
  ASSERT_FALSE(high.empty());
  ASSERT_EQ(low.size(), 2u);
  EXPECT_EQ(high.front().cpu, low[0].cpu);
  EXPECT_NE(low[1].cpu, low[0].cpu);
  EXPECT_NEAR(static_cast<double>(low[1].start_ns), static_cast<double>(high.front().start_ns), 10.0 * kUs);
}

TEST(RealTime, Deterministic) {
  Builder b(4, 200 * kMs);
  for (int i = 0; i < 6; ++i) {
    b.process("/", {repeat_op(20, {sleep_op((1 + i) * kMs), run_op((2 + i) * kMs / 2)})});
    if (i % 2 == 0) b.t.processes.back().rt_priority = 10 + i;
    b.t.processes.back().rt_round_robin = i == 4;
  }
  b.hogs("/", 3);
  RunOptions o;
  o.policy = "eevdf";
  o.config.machine.runqueues = config::MachineConfig::Runqueues::kPerCpu;
  EXPECT_EQ(run(b.done(), o).dump(), run(b.t, o).dump());
}

}  // namespace
}  // namespace agentcg::sim
