// SPDX-License-Identifier: GPL-2.0-only
// A recorded capture as the fidelity reference (replay_check.h): the
// capture's own figures (switch count, CPU time, wakeups), the lost
// switch-out repair of the ftrace importer, the replay's per-task CPU time
// and determinism, and the errors for a capture with nothing to compare.
// tests/data/recordings/ftrace_guest_2cpu.txt was recorded for this project
// on its 2-vCPU development guest (Linux 6.18, tracefs, sched_switch/
// waking/wakeup/wakeup_new/fork/exec/exit/migrate; a pipe pair, a sleep
// loop and a short hog while other builds ran): 0.28 s, both CPUs busy.
#include "sim/import/replay_check.h"

#include <sstream>

#include <gtest/gtest.h>

namespace agentcg::import {
namespace {

constexpr const char* kCapture = "tests/data/recordings/ftrace_guest_2cpu.txt";

sim::RunOptions eevdf(config::MachineConfig::Runqueues rq) {
  sim::RunOptions o;
  o.policy = "eevdf";
  o.config.machine.runqueues = rq;
  return o;
}

TEST(ReplayCheck, GuestCaptureMeasuredFigures) {
  const ReplayCheck c = replay_check(kCapture, "ftrace", eevdf(config::MachineConfig::Runqueues::kPerCpu));
  // 423 = sched_switch lines whose next task is not idle and not the task
  // the CPU ran last (counted apart with a script over the file).
  EXPECT_EQ(c.switches_measured, 423u);
  EXPECT_EQ(c.measured.count, 243u);
  EXPECT_EQ(c.cpus, 2u);
  // Two CPUs for 0.278 s hold at most 556 ms of CPU.
  EXPECT_LE(c.cpu_ns_measured, 2u * 278165000u);
  EXPECT_GT(c.cpu_ns_measured, 500000000u);
  // The replay runs every task's recorded CPU time.
  EXPECT_LT(c.task_cpu_error, 0.01);
  EXPECT_EQ(c.tasks, 65u);
}

TEST(ReplayCheck, DeterministicAndRunqueueModelMatters) {
  const auto per_cpu = eevdf(config::MachineConfig::Runqueues::kPerCpu);
  const ReplayCheck a = replay_check(kCapture, "ftrace", per_cpu);
  const ReplayCheck b = replay_check(kCapture, "ftrace", per_cpu);
  EXPECT_EQ(a.to_json().dump(), b.to_json().dump());
  const ReplayCheck g = replay_check(kCapture, "ftrace", eevdf(config::MachineConfig::Runqueues::kGlobal));
  EXPECT_NE(a.to_json()["wakeup_latency_ns"]["simulated"].dump(), g.to_json()["wakeup_latency_ns"]["simulated"].dump());
}

// A switch-out that the capture lacks (A switched in on CPU 0, then B
// switches out there): A's run ends at that switch, not at the recording's
// end, and the report says so.
TEST(ReplayCheck, LostSwitchOutEndsTheRunAtTheCpusNextSwitch) {
  std::istringstream in(
      "# tracer: nop\n"
      "  a-10 [000] d..2. 1.000000: sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=b next_pid=11 next_prio=120\n"
      "  b-11 [000] d..2. 1.001000: sched_switch: prev_comm=b prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=c next_pid=12 next_prio=120\n"
      "  x-13 [000] d..2. 1.003000: sched_switch: prev_comm=x prev_pid=13 prev_prio=120 prev_state=S ==> next_comm=a next_pid=10 next_prio=120\n"
      "  a-10 [001] d..2. 1.100000: sched_switch: prev_comm=y prev_pid=14 prev_prio=120 prev_state=S ==> next_comm=y next_pid=14 next_prio=120\n");
  FtraceDetail d;
  const Result r = import_ftrace(in, "lost", Options{}, &d);
  // c (pid 12) ran from 1.001 until the CPU's next switch at 1.003
  std::uint64_t c_ns = 0;
  for (const auto& [pid, ns] : d.cpu_ns)
    if (d.recorded_tid.at(pid) == 12) c_ns = ns;
  EXPECT_EQ(c_ns, 2000000u);
  EXPECT_EQ(r.report.unrepresented.count("switch-outs not recorded (run ended at the CPU's next switch)"), 1u);
}

TEST(ReplayCheck, CaptureWithoutWakeupsIsAnError) {
  std::istringstream in("# tracer: nop\n");
  FtraceDetail d;
  const Result r = import_ftrace(in, "empty", Options{}, &d);
  EXPECT_THROW(replay_check(r, d, eevdf(config::MachineConfig::Runqueues::kPerCpu)), std::invalid_argument);
  EXPECT_THROW(replay_check("tests/data/recordings/no-such-capture.txt", "ftrace", sim::RunOptions{}), ImportError);
  EXPECT_THROW(replay_check(kCapture, "agentcgroup-ebpf", sim::RunOptions{}), std::invalid_argument);
}

}  // namespace
}  // namespace agentcg::import
