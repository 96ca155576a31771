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

#include <fstream>
#include <map>
#include <set>
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

// A switch-in that the capture lacks (the KVM guest of
// tests/data/recordings/kvm2cpu never traces a switch out of CPU 1's idle
// task): a, woken from CPU 0 onto idle CPU 1, forks there with no switch to
// it recorded. It is switched in at CPU 1's previous event (its wakeup, in
// the IPI: 10 us after the sched_waking), not at its next recorded
// switch-in (none here): a 10 us remote wakeup, its run from there to its
// switch-out, and the report says so. Without the inference a had no
// latency sample and no CPU time.
const char* const kSwitchInFromIdleNotRecorded =
    "# tracer: nop\n"
    "  a-10 [001] d..2. 1.000000: sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n"
    "  b-11 [000] d..2. 1.000500: sched_switch: prev_comm=b prev_pid=11 prev_prio=120 prev_state=R ==> next_comm=b next_pid=11 next_prio=120\n"
    "  b-11 [000] d..4. 1.001000: sched_waking: comm=a pid=10 prio=120 target_cpu=001\n"
    "  <idle>-0 [001] dNh2. 1.001010: sched_wakeup: comm=a pid=10 prio=120 target_cpu=001\n"
    "  a-10 [001] ..... 1.001050: sched_process_fork: comm=a pid=10 child_comm=a child_pid=12\n"
    "  a-10 [001] d..2. 1.005000: sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n";

TEST(ReplayCheck, LostSwitchInFromIdleIsInferredAtTheCpusPreviousEvent) {
  std::istringstream in(kSwitchInFromIdleNotRecorded);
  FtraceDetail d;
  const Result r = import_ftrace(in, "lost-in", Options{}, &d);
  ASSERT_EQ(r.report.wakeup_latency_ns.size(), 1u);
  EXPECT_EQ(r.report.wakeup_latency_ns[0], 10000u);
  ASSERT_EQ(d.wakeups.size(), 1u);
  EXPECT_EQ(d.wakeups[0].kind, WakeupKind::kRemote);
  std::uint64_t a_ns = 0;
  for (const auto& [pid, ns] : d.cpu_ns)
    if (d.recorded_tid.at(pid) == 10) a_ns = ns;
  EXPECT_EQ(a_ns, 3990000u);  // 1.001010 -> 1.005
  EXPECT_EQ(r.report.unrepresented.count("switch-ins not recorded (inferred at the CPU's previous event)"), 1u);
}

// The by-kind split of a replay: every measured wakeup is in one kind, and
// the KVM guest's fork loop shows what its kinds cost there (a wakeup on
// its own CPU, one sent to the other: an IPI, a child's start beside its
// forker), which the default machine does not tell apart.
TEST(ReplayCheck, WakeupsSplitByKind) {
  const ReplayCheck c = replay_check("tests/data/recordings/kvm2cpu/forks.txt", "ftrace",
                                     eevdf(config::MachineConfig::Runqueues::kPerCpu));
  std::uint64_t n = 0;
  for (const auto& [k, ms] : c.by_kind) n += ms.first.count;
  EXPECT_EQ(n, c.measured.count);
  ASSERT_EQ(c.by_kind.count(WakeupKind::kLocal) + c.by_kind.count(WakeupKind::kRemote) +
                c.by_kind.count(WakeupKind::kNew),
            3u);
  const auto p50 = [&](WakeupKind k) { return c.by_kind.at(k).first.p50; };
  EXPECT_LT(p50(WakeupKind::kLocal), p50(WakeupKind::kRemote));
  EXPECT_LT(p50(WakeupKind::kRemote), p50(WakeupKind::kNew));
  EXPECT_TRUE(c.to_json()["wakeup_latency_by_kind_ns"].contains("remote"));
}

// The sleep ends split by what ended them: on the Juno board's capture
// (trace-cmd text without latency flags, the waking line's task taken as
// the waker) an interrupt on an idle CPU (the line's task is <idle>) and a
// task's system call. The measured side as the importer names the waker;
// the simulated side by the model's path, so a machine whose interrupt
// wakeups cost 20 us and task wakeups nothing shows them apart, and the
// opposite machine the other way round.
TEST(ReplayCheck, SleepEndsSplitByWhatEndedThem) {
  Options by_task;
  by_task.unflagged_wakeups_by_task = true;
  sim::RunOptions o;
  o.policy = "cfs";
  o.config.machine.runqueues = config::MachineConfig::Runqueues::kPerCpu;
  o.config.machine.wakeup_overhead_ns = 20000;
  o.config.machine.wakeup_overhead_ns_set = true;
  o.config.machine.task_wakeup_ns = 0;
  o.config.machine.task_wakeup_ns_set = true;
  const std::string juno_b = "tests/data/recordings/public/juno_b.txt";
  const ReplayCheck c = replay_check(juno_b, "ftrace", o, by_task);
  ASSERT_EQ(c.by_waker.size(), 2u);
  const auto& irq = c.by_waker.at(WakerKind::kInterrupt);
  const auto& task = c.by_waker.at(WakerKind::kTask);
  // every measured sleep end is in one of the two (the rest are starts)
  std::uint64_t starts = 0;
  {
    std::ifstream f(juno_b);
    FtraceDetail d;
    import_ftrace(f, juno_b, by_task, &d);
    for (const auto& w : d.wakeups) starts += w.start && !w.inferred;
  }
  EXPECT_EQ(irq.first.count + task.first.count + starts, c.measured.count);
  EXPECT_GT(task.first.count, 100u);
  EXPECT_GT(irq.first.count, 100u);
  // the board: an interrupt's wakeup to its switch-in 8 us at the median
  EXPECT_EQ(irq.first.p50, 8000u);
  EXPECT_GE(irq.second.p50, 20000u);
  EXPECT_LT(task.second.p50, 20000u);
  std::swap(o.config.machine.wakeup_overhead_ns, o.config.machine.task_wakeup_ns);
  const ReplayCheck flipped = replay_check(juno_b, "ftrace", o, by_task);
  EXPECT_LT(flipped.by_waker.at(WakerKind::kInterrupt).second.p50, 20000u);
  EXPECT_GE(flipped.by_waker.at(WakerKind::kTask).second.p50, 20000u);
  EXPECT_TRUE(c.to_json()["wakeup_latency_by_waker_ns"].contains("interrupt"));
  // without the waker (the default for unflagged lines) every sleep end is an interrupt's
  const ReplayCheck irq_only = replay_check(juno_b, "ftrace", o);
  EXPECT_EQ(irq_only.by_waker.count(WakerKind::kTask), 0u);
}

// The tasks a capture found on the machine, with the CPU it first shows
// each on (FtraceDetail::present_cpu, which the replay starts them on:
// CpuModel::set_present, tested in cpu_model_test.cc): the CPU a task ran
// on, or the target CPU of the wakeup that first names it, whatever CPU
// the waker was on; a task forked inside the capture is not one. Those
// first seen on a CPU (switched in or out, forking) rather than woken are
// FtraceDetail::present_running: no sleeper's credit at their start.
TEST(ReplayCheck, TasksPresentAtTheStartKeepTheCpuTheCaptureShowsThemOn) {
  std::istringstream in(
      "# tracer: nop\n"
      "  b-11 [001] d..2. 1.000000: sched_switch: prev_comm=b prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=a next_pid=10 next_prio=120\n"
      "  c-12 [000] d..2. 1.001000: sched_waking: comm=d pid=13 prio=120 target_cpu=001\n"
      "  c-12 [000] ..... 1.002000: sched_process_fork: comm=c pid=12 child_comm=c child_pid=14\n"
      "  c-12 [000] d..2. 1.003000: sched_switch: prev_comm=c prev_pid=12 prev_prio=120 prev_state=S ==> next_comm=c next_pid=14 next_prio=120\n");
  FtraceDetail d;
  import_ftrace(in, "present", Options{}, &d);
  std::map<std::int64_t, std::int32_t> by_tid;
  for (const auto& [pid, cpu] : d.present_cpu) by_tid[d.recorded_tid.at(pid)] = cpu;
  EXPECT_EQ(by_tid, (std::map<std::int64_t, std::int32_t>{{10, 1}, {11, 1}, {12, 0}, {13, 1}}));
  std::set<std::int64_t> running;
  for (const std::int64_t pid : d.present_running) running.insert(d.recorded_tid.at(pid));
  EXPECT_EQ(running, (std::set<std::int64_t>{10, 11, 12}));
}

// The switch-ins the KVM guest did not record (make.txt: 62 of 175, every
// one onto CPU 1 from its idle task) have an inferred latency, a lower
// bound, often 0: the replay check leaves them out of the measured side and
// leaves the model's samples of the same wakeups (the task's start, or its
// n-th sleep end) out of the simulated side. Counted in, they took the
// capture's p50 from 9 to 5 us.
TEST(ReplayCheck, InferredSwitchInsAreLeftOutOfBothSides) {
  std::ifstream f("tests/data/recordings/kvm2cpu/make.txt");
  ASSERT_TRUE(f.good());
  FtraceDetail d;
  const Result r = import_ftrace(f, "make.txt", Options{}, &d);
  const ReplayCheck c = replay_check(r, d, eevdf(config::MachineConfig::Runqueues::kPerCpu));
  std::vector<std::uint64_t> kept;
  std::uint64_t inferred = 0;
  ASSERT_EQ(d.wakeups.size(), r.report.wakeup_latency_ns.size());
  for (std::size_t i = 0; i < d.wakeups.size(); ++i) {
    if (d.wakeups[i].inferred) ++inferred;
    else kept.push_back(r.report.wakeup_latency_ns[i]);
  }
  EXPECT_EQ(inferred, r.report.unrepresented.at("switch-ins not recorded (inferred at the CPU's previous event)"));
  ASSERT_GT(inferred, 0u);
  EXPECT_EQ(c.inferred_left_out, inferred);
  EXPECT_EQ(c.measured.count, kept.size());
  EXPECT_EQ(c.measured.p50, Percentiles::of(kept).p50);
  EXPECT_GT(c.measured.p50, Percentiles::of(r.report.wakeup_latency_ns).p50);
  // the model's samples of the same wakeups go too (one or two may not
  // exist: a task that never ran again before the end)
  EXPECT_LE(c.simulated_left_out, inferred);
  EXPECT_GE(c.simulated_left_out + 2, inferred);
  std::uint64_t n = 0;
  for (const auto& [k, ms] : c.by_kind) n += ms.first.count;
  EXPECT_EQ(n, c.measured.count);
  EXPECT_EQ(c.to_json()["inferred_switch_ins_left_out"]["measured"].get<std::uint64_t>(), inferred);
}

// A capture whose every wakeup has an inferred switch-in (the one above)
// has nothing measured left: an error naming it, not percentiles of nothing.
TEST(ReplayCheck, CaptureWhoseEverySwitchInIsInferredIsAnError) {
  std::istringstream in(kSwitchInFromIdleNotRecorded);
  FtraceDetail d;
  const Result r = import_ftrace(in, "all-inferred", Options{}, &d);
  ASSERT_EQ(r.report.wakeup_latency_ns.size(), 1u);
  try {
    replay_check(r, d, eevdf(config::MachineConfig::Runqueues::kPerCpu));
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("all-inferred: no wakeup's switch-in was recorded"), std::string::npos) << e.what();
  }
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
