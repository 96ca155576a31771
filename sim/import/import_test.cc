// SPDX-License-Identifier: GPL-2.0-only
// Tests of the importers on small hand-made recordings in
// tests/data/recordings/ (exact expected ops), malformed-line handling
// (skip + count vs --strict with file:line), the real AgentCgroup samples in
// ../shared/traces/ when present (validate; CPU equals the counters), and
// streaming (RSS does not grow with a 200k-line input of ignored events).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "sim/import/import.h"
#include "sim/trace/line_iterator.h"
#include "sim/trace/trace.h"

#if defined(__SANITIZE_ADDRESS__)
#define AGENTCG_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AGENTCG_TEST_ASAN 1
#endif
#endif
#ifdef AGENTCG_TEST_ASAN
// From <sanitizer/allocator_interface.h>, which clang ships and gcc 12 does
// not; libasan exports it either way.
extern "C" std::size_t __sanitizer_get_current_allocated_bytes(void);
#endif

namespace agentcg::import {
namespace {

namespace fs = std::filesystem;
constexpr const char* kData = "tests/data/recordings/";
constexpr std::uint64_t kMs = 1000000;

std::string ops_str(const std::vector<trace::Op>& ops) {
  std::ostringstream o;
  bool first = true;
  for (const trace::Op& op : ops) {
    if (!first) o << " ";
    first = false;
    switch (op.kind) {
      case trace::OpKind::kRun: o << "run:" << op.amount.a; break;
      case trace::OpKind::kSleep: o << "sleep:" << op.amount.a; break;
      case trace::OpKind::kIo: o << "io:" << op.amount.a; break;
      case trace::OpKind::kFork: o << "fork:" << op.pid(); break;
      case trace::OpKind::kExec: o << "exec:" << op.name(); break;
      case trace::OpKind::kWait: o << "wait"; break;
      case trace::OpKind::kExit: o << "exit"; break;
      case trace::OpKind::kMem: o << "mem:" << op.amount.a; break;
      case trace::OpKind::kRepeat: o << "repeat"; break;
      case trace::OpKind::kToolBegin: o << "tool_begin:" << op.name(); break;
      case trace::OpKind::kToolEnd: o << "tool_end"; break;
      case trace::OpKind::kStep: o << "step:" << op.step(); break;
    }
  }
  return o.str();
}

const trace::ProcessSpec& proc(const trace::Trace& t, std::int64_t pid) {
  for (const trace::ProcessSpec& p : t.processes)
    if (p.pid == pid) return p;
  throw std::runtime_error("no pid " + std::to_string(pid));
}

std::uint64_t total_run_ns(const std::vector<trace::Op>& ops) {
  std::uint64_t s = 0;
  for (const trace::Op& op : ops) {
    if (op.kind == trace::OpKind::kRun) s += op.amount.a;
    if (op.child()) s += total_run_ns(op.child()->ops);
  }
  return s;
}
std::uint64_t total_run_ns(const trace::Trace& t) {
  std::uint64_t s = 0;
  for (const trace::ProcessSpec& p : t.processes) s += total_run_ns(p.ops);
  return s;
}

// --- agentcgroup-ebpf -------------------------------------------------------

TEST(EbpfImport, SmallRecordingGivesExactOps) {
  Result r = import_agentcgroup_ebpf_file(std::string(kData) + "ebpf_small.jsonl", Options{});
  const trace::Trace& t = r.trace;
  ASSERT_EQ(t.processes.size(), 3u);
  const trace::ProcessSpec& bash = proc(t, 100);
  EXPECT_FALSE(bash.parent.has_value());
  ASSERT_TRUE(bash.start_ns.has_value());
  EXPECT_EQ(*bash.start_ns, 10 * kMs);
  EXPECT_EQ(ops_str(bash.ops),
            "mem:81920 run:10000000 sleep:80000000 mem:3584000 sleep:20000000 fork:101 "
            "run:15000000 sleep:120000000 fork:102 run:15000000 sleep:30000000 mem:4096000 "
            "sleep:10000000 exit");
  const trace::ProcessSpec& py = proc(t, 101);
  EXPECT_EQ(py.parent, std::optional<std::int64_t>(100));
  EXPECT_FALSE(py.start_ns.has_value());
  EXPECT_EQ(ops_str(py.ops), "exec:python3 mem:102400 run:60000000 sleep:20000000 mem:20480000 sleep:50000000 exit");
  const trace::ProcessSpec& ls = proc(t, 102);
  EXPECT_EQ(ops_str(ls.ops), "exec:ls sleep:5000000 exit");
  // CPU demand = the counters' growth: bash 40 ms + python3 60 ms.
  EXPECT_EQ(total_run_ns(t), 100 * kMs);
  EXPECT_EQ(r.report.counters.at("cpu_ms_total"), 100u);
  EXPECT_EQ(r.report.malformed, 1u);
  ASSERT_EQ(r.report.malformed_examples.size(), 1u);
  EXPECT_NE(r.report.malformed_examples[0].find("ebpf_small.jsonl:9:"), std::string::npos)
      << r.report.malformed_examples[0];
  EXPECT_EQ(r.report.unrepresented.at("file, network and summary events"), 1u);
  EXPECT_EQ(r.report.unrepresented.at("ms of unsampled process lifetime modelled as sleep"), 5u);
  EXPECT_NE(t.description.find("Not represented"), std::string::npos);
  EXPECT_EQ(t.generator["format"], "agentcgroup-ebpf");
  EXPECT_EQ(t.generator["input"], "ebpf_small.jsonl");
  for (const trace::ProcessSpec& p : t.processes) {
    ASSERT_TRUE(p.agent.has_value());
    EXPECT_EQ(p.agent->session, "ebpf_small");
  }
  EXPECT_NO_THROW(trace::validate(t));
}

TEST(EbpfImport, StrictFailsWithFileAndLine) {
  Options o;
  o.strict = true;
  try {
    import_agentcgroup_ebpf_file(std::string(kData) + "ebpf_small.jsonl", o);
    FAIL() << "expected ImportError";
  } catch (const ImportError& e) {
    EXPECT_EQ(e.line(), 9u);
    EXPECT_NE(std::string(e.what()).find("ebpf_small.jsonl:9: not a JSON object"), std::string::npos)
        << e.what();
  }
}

TEST(EbpfImport, UnsampledAsRunAndCgroup) {
  Options o;
  o.unsampled_as_run = true;
  o.cgroup = "/agents/a1";
  Result r = import_agentcgroup_ebpf_file(std::string(kData) + "ebpf_small.jsonl", o);
  EXPECT_EQ(ops_str(proc(r.trace, 102).ops), "exec:ls run:5000000 exit");
  ASSERT_EQ(r.trace.cgroups.size(), 2u);
  EXPECT_EQ(r.trace.cgroups[0].path, "/agents");
  EXPECT_EQ(r.trace.cgroups[1].path, "/agents/a1");
  for (const trace::ProcessSpec& p : r.trace.processes) EXPECT_EQ(p.cgroup, "/agents/a1");
  EXPECT_NO_THROW(trace::validate(r.trace));
}

TEST(EbpfImport, PidReuseAndForkWithoutExec) {
  std::istringstream in(
      "{\"timestamp\":0,\"event\":\"EXEC\",\"comm\":\"sh\",\"pid\":7,\"ppid\":1}\n"
      "{\"timestamp\":1000,\"event\":\"PROC_FORK\",\"comm\":\"sh\",\"pid\":8,\"ppid\":7}\n"
      "{\"timestamp\":2000,\"event\":\"EXIT\",\"comm\":\"sh\",\"pid\":8,\"ppid\":7}\n"
      "{\"timestamp\":3000,\"event\":\"EXEC\",\"comm\":\"cat\",\"pid\":8,\"ppid\":7}\n"
      "{\"timestamp\":4000,\"event\":\"EXIT\",\"comm\":\"cat\",\"pid\":8,\"ppid\":7}\n"
      "\n"
      "{\"event\":\"EXIT\",\"pid\":8}\n");
  Result r = import_agentcgroup_ebpf(in, "mem.jsonl", Options{});
  ASSERT_EQ(r.trace.processes.size(), 3u);
  EXPECT_EQ(ops_str(proc(r.trace, 7).ops), "sleep:1000 fork:8 sleep:2000 fork:8388608 sleep:1000");
  EXPECT_EQ(ops_str(proc(r.trace, 8).ops), "sleep:1000 exit");
  EXPECT_EQ(ops_str(proc(r.trace, 8388608).ops), "exec:cat sleep:1000 exit");
  EXPECT_EQ(r.report.malformed, 1u);  // the line without a timestamp
  EXPECT_EQ(r.report.unrepresented.at("reused pids renumbered"), 1u);
  EXPECT_NO_THROW(trace::validate(r.trace));
}

// Real AgentCgroup recordings: validate, and CPU equals the counters' growth.
TEST(EbpfImport, RealSamples) {
  const fs::path dir = "../shared/traces/agentcgroup/ebpf";
  if (!fs::is_directory(dir)) GTEST_SKIP() << "no real recordings at " << dir << " (optional)";
  int n = 0;
  for (const char* name : {"swebench_starlette1147_100ms.jsonl", "pilot_haiku_A_r1.jsonl", "smoke_cgroup.jsonl"}) {
    const fs::path p = dir / name;
    if (!fs::exists(p)) continue;
    ++n;
    Result r = import_agentcgroup_ebpf_file(p.string(), Options{});
    EXPECT_NO_THROW(trace::validate(r.trace)) << name;
    EXPECT_EQ(r.report.malformed, 0u) << name;
    // Independent count: per pid, the last cumulative value minus the first
    // for pids already running at their first sample (else minus 0).
    std::ifstream in(p);
    std::string line;
    std::map<std::int64_t, std::pair<std::uint64_t, std::uint64_t>> first_last;  // pid -> (base, last)
    std::map<std::int64_t, bool> exec_seen;
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line);
      const std::string ev = j["event"];
      if (ev == "EXEC") exec_seen[j["pid"].get<std::int64_t>()] = true;
      if (ev != "RESOURCE_DETAIL") continue;
      const auto pid = j["pid"].get<std::int64_t>();
      const std::uint64_t cpu = j["cpu_user_ms"].get<std::uint64_t>() + j["cpu_sys_ms"].get<std::uint64_t>();
      auto it = first_last.find(pid);
      if (it == first_last.end()) first_last[pid] = {exec_seen[pid] ? 0 : cpu, cpu};
      else it->second.second = cpu;
    }
    std::uint64_t expected_ms = 0;
    for (const auto& [pid, fl] : first_last) expected_ms += fl.second - fl.first;
    EXPECT_EQ(total_run_ns(r.trace), expected_ms * kMs) << name;
    if (std::string(name).find("swebench") != std::string::npos) {
      EXPECT_GT(expected_ms, 1000u);
      EXPECT_GT(r.trace.processes.size(), 50u);
    }
  }
  if (n == 0) GTEST_SKIP() << "no real recordings found in " << dir;
}

// Streaming: 200k ignored lines must not grow the peak RSS by more than a
// few MiB (a whole-file reader would hold ~30 MiB of text). Under ASan the
// RSS measures the sanitizer (shadow memory, the quarantine of freed blocks)
// more than the importer, so the bound is on the live heap instead: its
// peak, sampled each time the importer reads a line (LineSource), plus what
// the result keeps.
[[maybe_unused]] std::uint64_t peak_rss_kb() {  // unused under ASan
  std::ifstream s("/proc/self/status");
  std::string line;
  while (std::getline(s, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6));
  return 0;
}

class LineSource : public std::streambuf {
 public:
  LineSource(std::string line, std::uint64_t n) : line_(std::move(line)), left_(n) {}
  // The most bytes live on the heap when a line was read (ASan builds; 0 otherwise).
  std::uint64_t peak_live_bytes() const { return peak_live_; }

 protected:
  int_type underflow() override {
#ifdef AGENTCG_TEST_ASAN
    peak_live_ = std::max<std::uint64_t>(peak_live_, __sanitizer_get_current_allocated_bytes());
#endif
    if (left_ == 0) return traits_type::eof();
    --left_;
    setg(line_.data(), line_.data(), line_.data() + line_.size());
    return traits_type::to_int_type(line_[0]);
  }

 private:
  std::string line_;
  std::uint64_t left_;
  std::uint64_t peak_live_ = 0;
};

TEST(EbpfImport, StreamingMemoryStaysFlat) {
#ifndef AGENTCG_TEST_ASAN
  if (peak_rss_kb() == 0) GTEST_SKIP() << "/proc/self/status VmHWM not available";
#endif
  // Warm up allocator and parser.
  {
    LineSource src(
        "{\"timestamp\":1,\"event\":\"FILE_OPEN\",\"comm\":\"bash\",\"pid\":5,\"count\":1,"
        "\"filepath\":\"/usr/lib/locale/C.utf8/LC_MEASUREMENT/with/a/long/path/name\",\"flags\":0}\n",
        1000);
    std::istream in(&src);
    (void)import_agentcgroup_ebpf(in, "warm", Options{});
  }
#ifdef AGENTCG_TEST_ASAN
  const std::uint64_t before = __sanitizer_get_current_allocated_bytes();
#else
  const std::uint64_t before = peak_rss_kb();
#endif
  LineSource src(
      "{\"timestamp\":1,\"event\":\"FILE_OPEN\",\"comm\":\"bash\",\"pid\":5,\"count\":1,"
      "\"filepath\":\"/usr/lib/locale/C.utf8/LC_MEASUREMENT/with/a/long/path/name\",\"flags\":0}\n",
      200000);
  std::istream in(&src);
  Result r = import_agentcgroup_ebpf(in, "big", Options{});
  EXPECT_EQ(r.report.lines, 200000u);
#ifdef AGENTCG_TEST_ASAN
  const std::uint64_t kept = __sanitizer_get_current_allocated_bytes();
  const std::uint64_t peak = std::max(src.peak_live_bytes(), kept);
  EXPECT_LT(peak - before, 4096u * 1024u) << "live heap grew by " << (peak - before) / 1024 << " KiB";
#else
  const std::uint64_t after = peak_rss_kb();
  EXPECT_LT(after - before, 4096u) << "peak RSS grew by " << (after - before) << " KiB";
#endif
}

// --- ftrace / perf ------------------------------------------------------------

void expect_small_sched_trace(const Result& r) {
  const trace::Trace& t = r.trace;
  EXPECT_EQ(t.machine.cpus, 2u);
  ASSERT_EQ(t.processes.size(), 3u);
  const trace::ProcessSpec& bash = proc(t, 1000);
  EXPECT_EQ(bash.start_ns, std::optional<std::uint64_t>(0));
  // bash's sleep ends with its only child's exit waking it: a wait(), replayed
  // as a wait op (the replay's bash waits for the replay's ls)
  EXPECT_EQ(ops_str(bash.ops),
            "run:1000000 fork:1001 run:2000000 wait run:1900000 io:2000000 run:1010000 exit");
  EXPECT_EQ(r.report.counters.at("waits"), 1u);
  const trace::ProcessSpec& ls = proc(t, 1001);
  EXPECT_EQ(ls.parent, std::optional<std::int64_t>(1000));
  EXPECT_EQ(ls.comm, "bash");
  // Both runs end at the last switch-out (X), not at sched_process_exit:
  // the 10 us and 30 us of teardown between them are the tasks' own CPU.
  EXPECT_EQ(ops_str(ls.ops), "run:40000 exec:ls run:3930000 exit");
  const trace::ProcessSpec& kw = proc(t, 30);
  EXPECT_EQ(kw.comm, "kworker/0:1");
  EXPECT_EQ(kw.start_ns, std::optional<std::uint64_t>(6210000));
  EXPECT_EQ(ops_str(kw.ops), "run:100000 sleep:4010000");
  EXPECT_EQ(r.report.wakeup_latency_ns, (std::vector<std::uint64_t>{50000, 200000, 100000}));
  EXPECT_NO_THROW(trace::validate(t));
}

TEST(FtraceImport, TraceCmdReport) {
  Result r = import_ftrace_file(std::string(kData) + "ftrace_tracecmd.txt", Options{});
  expect_small_sched_trace(r);
  EXPECT_EQ(r.report.malformed, 0u);
}

TEST(FtraceImport, TracefsTextSkipsMalformedAndCountsOthers) {
  Result r = import_ftrace_file(std::string(kData) + "ftrace_tracefs.txt", Options{});
  expect_small_sched_trace(r);
  EXPECT_EQ(r.report.malformed, 1u);
  ASSERT_EQ(r.report.malformed_examples.size(), 1u);
  EXPECT_NE(r.report.malformed_examples[0].find("ftrace_tracefs.txt:26: sched_switch:"), std::string::npos)
      << r.report.malformed_examples[0];
  EXPECT_EQ(r.report.unrepresented.at("migrations (the simulator places tasks itself)"), 1u);
  EXPECT_EQ(r.report.unrepresented.at("non-scheduler events"), 1u);
}

TEST(FtraceImport, TracefsStrictNamesLine) {
  Options o;
  o.strict = true;
  try {
    import_ftrace_file(std::string(kData) + "ftrace_tracefs.txt", o);
    FAIL() << "expected ImportError";
  } catch (const ImportError& e) {
    EXPECT_EQ(e.line(), 26u);
    EXPECT_NE(std::string(e.what()).find("prev_state"), std::string::npos) << e.what();
  }
}

TEST(FtraceImport, PerfScriptWithNumericStates) {
  Result r = import_ftrace_file(std::string(kData) + "perf_script.txt", Options{});
  EXPECT_EQ(r.report.malformed, 0u);
  expect_small_sched_trace(r);
}

// A sleep that the exit of a task's last living child ends is a wait();
// one that a child's exit ends while another child lives (make -j waits
// for any) stays a sleep of its recorded length, and so does one ended by
// a task that is not its child.
TEST(FtraceImport, ASleepEndedByTheLastChildsExitIsAWait) {
  std::istringstream in(
      "  sh-1 [000] d..2. 1.000000: sched_switch: prev_comm=x prev_pid=9 prev_prio=120 prev_state=S ==> next_comm=sh next_pid=1 next_prio=120\n"
      "  sh-1 [000] ..... 1.000100: sched_process_fork: comm=sh pid=1 child_comm=sh child_pid=2\n"
      "  sh-1 [000] ..... 1.000200: sched_process_fork: comm=sh pid=1 child_comm=sh child_pid=3\n"
      "  sh-1 [000] d..2. 1.000300: sched_switch: prev_comm=sh prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=a next_pid=2 next_prio=120\n"
      "  a-2 [000] ..... 1.001000: sched_process_exit: comm=a pid=2 prio=120\n"
      "  a-2 [000] d..3. 1.001010: sched_waking: comm=sh pid=1 prio=120 target_cpu=000\n"
      "  a-2 [000] d..2. 1.001020: sched_switch: prev_comm=a prev_pid=2 prev_prio=120 prev_state=X ==> next_comm=sh next_pid=1 next_prio=120\n"
      "  sh-1 [000] d..2. 1.001100: sched_switch: prev_comm=sh prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=3 next_prio=120\n"
      "  b-3 [000] ..... 1.002000: sched_process_exit: comm=b pid=3 prio=120\n"
      "  b-3 [000] d..3. 1.002010: sched_waking: comm=sh pid=1 prio=120 target_cpu=000\n"
      "  b-3 [000] d..2. 1.002020: sched_switch: prev_comm=b prev_pid=3 prev_prio=120 prev_state=X ==> next_comm=sh next_pid=1 next_prio=120\n"
      "  sh-1 [000] d..2. 1.002100: sched_switch: prev_comm=sh prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=k next_pid=7 next_prio=120\n"
      "  k-7 [000] d..3. 1.003000: sched_waking: comm=sh pid=1 prio=120 target_cpu=000\n"
      "  k-7 [000] d..2. 1.003010: sched_switch: prev_comm=k prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=sh next_pid=1 next_prio=120\n");
  const Result r = import_ftrace(in, "waits.txt", Options{});
  const trace::ProcessSpec& sh = proc(r.trace, 1);
  EXPECT_EQ(ops_str(sh.ops), "run:100000 fork:2 run:100000 fork:3 run:100000 sleep:710000 run:80000 wait run:80000 sleep:900000");
  EXPECT_EQ(r.report.counters.at("waits"), 1u);
  EXPECT_NO_THROW(trace::validate(r.trace));
}

// A sleep ended from another task's system call (the waking event outside
// an interrupt, on that task's line) names it as the sleep's waker; one ended
// by an interrupt ('h' or 's' in the flags), by the idle task, or on a line
// without the flags column (perf) is a timer's (no waker).
TEST(FtraceImport, ASleepEndedByAnotherTasksSystemCallNamesItsWaker) {
  std::istringstream in(
      "  r-5 [001] d..2. 1.000000: sched_switch: prev_comm=r prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=w next_pid=6 next_prio=120\n"
      "  w-6 [001] d..3. 1.000100: sched_waking: comm=r pid=5 prio=120 target_cpu=000\n"
      "  <idle>-0 [000] d..2. 1.000120: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=r next_pid=5 next_prio=120\n"
      "  r-5 [000] d..2. 1.000200: sched_switch: prev_comm=r prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n"
      "  w-6 [001] d.h2. 1.000300: sched_waking: comm=r pid=5 prio=120 target_cpu=000\n"
      "  <idle>-0 [000] d..2. 1.000320: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=r next_pid=5 next_prio=120\n"
      "  r-5 [000] d..2. 1.000400: sched_switch: prev_comm=r prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n"
      "  <idle>-0 [000] d..3. 1.000500: sched_waking: comm=r pid=5 prio=120 target_cpu=000\n"
      "  <idle>-0 [000] d..2. 1.000520: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=r next_pid=5 next_prio=120\n"
      "  r-5 [000] d..2. 1.000600: sched_switch: prev_comm=r prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n"
      "  w-6 [001] d.s3. 1.000700: sched_waking: comm=r pid=5 prio=120 target_cpu=000\n"
      "  <idle>-0 [000] d..2. 1.000720: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=r next_pid=5 next_prio=120\n"
      "  r-5 [000] d..2. 1.000800: sched_switch: prev_comm=r prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n"
      "  w-6 [001] d..3. 1.000900: sched_waking: comm=r pid=5 prio=120 target_cpu=000\n"
      "  <idle>-0 [000] d..2. 1.000920: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=r next_pid=5 next_prio=120\n");
  const Result r = import_ftrace(in, "wakers.txt", Options{});
  auto wakers = [](const trace::ProcessSpec& p) {
    std::vector<std::int64_t> w;
    for (const trace::Op& op : p.ops)
      if (op.kind == trace::OpKind::kSleep) w.push_back(op.waker());
    return w;
  };
  // w's system call, a hardirq on w's CPU, the idle task, a softirq, w again
  EXPECT_EQ(wakers(proc(r.trace, 5)), (std::vector<std::int64_t>{6, 0, 0, 0, 6}));
  EXPECT_NO_THROW(trace::validate(r.trace));
  // the JSON text keeps it
  const trace::Trace back = trace::parse_trace(trace::to_json_text(r.trace), "wakers.json");
  EXPECT_EQ(trace::to_json_text(back), trace::to_json_text(r.trace));
  EXPECT_EQ(wakers(proc(back, 5)), (std::vector<std::int64_t>{6, 0, 0, 0, 6}));
  // perf's shape has no flags column: no waker is claimed
  std::istringstream perf(
      "  w  6 [001]  1.000000: sched:sched_switch: prev_comm=w prev_pid=6 prev_prio=120 prev_state=R ==> next_comm=r next_pid=5 next_prio=120\n"
      "  r  5 [001]  1.000050: sched:sched_switch: prev_comm=r prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=w next_pid=6 next_prio=120\n"
      "  w  6 [001]  1.000100: sched:sched_waking: comm=r pid=5 prio=120 target_cpu=000\n"
      "  <idle>  0 [000]  1.000120: sched:sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=r next_pid=5 next_prio=120\n");
  const Result q = import_ftrace(perf, "wakers.perf", Options{});
  for (const trace::Op& op : proc(q.trace, 5).ops) EXPECT_EQ(op.waker(), 0) << static_cast<int>(op.kind);
  // unless asked to take the line's task (--unflagged-wakeups task); the
  // idle task never is one
  Options by_task;
  by_task.unflagged_wakeups_by_task = true;
  perf.clear();
  perf.seekg(0);
  EXPECT_EQ(wakers(proc(import_ftrace(perf, "wakers.perf", by_task).trace, 5)), (std::vector<std::int64_t>{6}));
  std::istringstream idle(
      "  r  5 [001]  1.000050: sched:sched_switch: prev_comm=r prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n"
      "  <idle>  0 [000]  1.000100: sched:sched_waking: comm=r pid=5 prio=120 target_cpu=000\n"
      "  <idle>  0 [000]  1.000120: sched:sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=r next_pid=5 next_prio=120\n");
  EXPECT_EQ(wakers(proc(import_ftrace(idle, "idle.perf", by_task).trace, 5)), (std::vector<std::int64_t>{0}));
}

TEST(FtraceImport, SameOpsFromAllThreeShapes) {
  auto a = import_ftrace_file(std::string(kData) + "ftrace_tracecmd.txt", Options{});
  auto b = import_ftrace_file(std::string(kData) + "perf_script.txt", Options{});
  a.trace.name = b.trace.name = "x";
  a.trace.description = b.trace.description = "";
  a.trace.generator = b.trace.generator = nlohmann::json::object();
  a.trace.source = b.trace.source = "";
  EXPECT_EQ(trace::to_json(a.trace), trace::to_json(b.trace));
}

TEST(FtraceImport, CommWithSpacesAndBackwardsTime) {
  std::istringstream in(
      "  Bun Pool 2-77 [003] d..2. 5.000000: sched_switch: prev_comm=Bun Pool 2 prev_pid=77 "
      "prev_prio=120 prev_state=S ==> next_comm=swapper/3 next_pid=0 next_prio=120\n"
      "  <idle>-0 [003] d..2. 4.000000: sched_wakeup: comm=Bun Pool 2 pid=77 prio=120 target_cpu=003\n"
      "  <idle>-0 [003] d..2. 5.5: sched_wakeup: comm=Bun Pool 2 pid=77 prio=120 target_cpu=003\n");
  Result r = import_ftrace(in, "s.txt", Options{});
  ASSERT_EQ(r.trace.processes.size(), 1u);
  EXPECT_EQ(r.trace.processes[0].comm, "Bun Pool 2");
  EXPECT_EQ(ops_str(r.trace.processes[0].ops), "sleep:500000000");
  EXPECT_EQ(r.trace.machine.cpus, 4u);
  EXPECT_EQ(r.report.malformed, 1u);  // time went backwards
}

// sched_switch's prio is the task's nice (prio - 120), in the key=value and
// the compact "[PRIO]" forms: a niced compiler (prio 130) keeps nice 10, its
// forked child inherits it without a key of its own, a child that runs at
// nice 0 says so; a real-time task (prio 49) gets real-time priority 50,
// its forked child inherits it, and a child of it at prio 120 is written as
// the fair class; a later prio change is counted, not replayed.
TEST(FtraceImport, PrioBecomesNiceOrARealTimePriority) {
  std::istringstream in(
      "  cc1-50 [000] d..2. 1.000000: sched_switch: prev_comm=cc1 prev_pid=50 prev_prio=130 prev_state=R ==> "
      "next_comm=bash next_pid=60 next_prio=120\n"
      "  bash-60 [000] d..2. 1.001000: sched_process_fork: comm=bash pid=60 child_comm=bash child_pid=61\n"
      "  cc1-50 [001] d..2. 1.001500: sched_process_fork: comm=cc1 pid=50 child_comm=cc1 child_pid=51\n"
      "  bash-60 [000] d..2. 1.002000: sched_switch: bash:60 [120] S ==> cc1:51 [130]\n"
      "  cc1-51 [000] d..2. 1.003000: sched_switch: cc1:51 [130] S ==> irq/9:70 [49]\n"
      "  irq-70 [000] d..2. 1.003500: sched_process_fork: comm=irq/9 pid=70 child_comm=w child_pid=71\n"
      "  irq-70 [000] d..2. 1.003600: sched_process_fork: comm=irq/9 pid=70 child_comm=f child_pid=72\n"
      "  irq-70 [000] d..2. 1.004000: sched_switch: irq/9:70 [49] S ==> bash:61 [120]\n"
      "  bash-61 [000] d..2. 1.005000: sched_switch: bash:61 [120] S ==> w:71 [49]\n"
      "  w-71 [000] d..2. 1.006000: sched_switch: w:71 [49] S ==> f:72 [120]\n"
      "  f-72 [000] d..2. 1.007000: sched_switch: f:72 [120] S ==> irq/9:70 [39]\n");
  Result r = import_ftrace(in, "n.txt", Options{});
  EXPECT_EQ(r.report.malformed, 0u);
  EXPECT_EQ(proc(r.trace, 70).rt_priority, std::optional<std::int32_t>(50));
  EXPECT_EQ(proc(r.trace, 71).rt_priority, std::nullopt);  // inherits its parent's 50
  EXPECT_EQ(proc(r.trace, 72).rt_priority, std::optional<std::int32_t>(0));  // the fair class, said
  EXPECT_EQ(proc(r.trace, 50).rt_priority, std::nullopt);
  EXPECT_EQ(r.report.unrepresented.at("priority changes during the recording (priority inheritance, "
                                      "sched_setscheduler: the first priority is kept)"),
            1u);
  EXPECT_EQ(proc(r.trace, 50).nice, std::optional<std::int32_t>(10));
  EXPECT_EQ(proc(r.trace, 51).nice, std::nullopt);  // inherits its parent's 10
  EXPECT_EQ(proc(r.trace, 60).nice, std::nullopt);  // 0, the default
  EXPECT_EQ(proc(r.trace, 61).nice, std::nullopt);
  EXPECT_EQ(proc(r.trace, 70).nice, std::nullopt);
  EXPECT_EQ(r.report.unrepresented.count("real-time priorities (replayed as nice 0)"), 0u);
  EXPECT_NE(trace::to_json(r.trace).dump().find("\"nice\":10"), std::string::npos);
  EXPECT_NE(trace::to_json(r.trace).dump().find("\"rt_priority\":50"), std::string::npos);
  EXPECT_NO_THROW(trace::validate(r.trace));
}

// A task's teardown after sched_process_exit (exit_mm and the rest: ~2 ms
// per child in the VM's fork storm) is its own CPU: the run goes on to its
// last switch-out (Z), a preemption in between does not end it, and the
// exit op goes there. A task still exiting when the recording ends exits at
// the end; one whose last switch-out was lost exits when its pid is reused.
TEST(FtraceImport, TeardownAfterExitIsTheTasksOwnCpu) {
  std::istringstream in(
      "  sh-10 [000] d..2. 1.000000: sched_process_fork: comm=sh pid=10 child_comm=sh child_pid=11\n"
      "  sh-10 [000] d..2. 1.000100: sched_process_fork: comm=sh pid=10 child_comm=sh child_pid=12\n"
      "  sh-10 [000] d..2. 1.000200: sched_switch: prev_comm=sh prev_pid=10 prev_prio=120 prev_state=S ==> "
      "next_comm=sh next_pid=11 next_prio=120\n"
      "  sh-11 [000] ..... 1.001200: sched_process_exit: comm=sh pid=11 prio=120 group_dead=true\n"
      "  sh-11 [000] d..2. 1.002200: sched_switch: prev_comm=sh prev_pid=11 prev_prio=120 prev_state=R+ ==> "
      "next_comm=sh next_pid=12 next_prio=120\n"
      "  sh-12 [000] ..... 1.002700: sched_process_exit: comm=sh pid=12 prio=120 group_dead=true\n"
      "  sh-12 [000] d..2. 1.003200: sched_switch: prev_comm=sh prev_pid=12 prev_prio=120 prev_state=R+ ==> "
      "next_comm=sh next_pid=11 next_prio=120\n"
      "  sh-11 [000] d..2. 1.005200: sched_switch: prev_comm=sh prev_pid=11 prev_prio=120 prev_state=Z ==> "
      "next_comm=sh next_pid=12 next_prio=120\n"
      // 12's last switch-out is lost; its pid is reused by a new fork.
      "  sh-10 [001] d..2. 1.006000: sched_process_fork: comm=sh pid=10 child_comm=sh child_pid=12\n"
      "  sh-10 [001] d..2. 1.006100: sched_process_fork: comm=sh pid=10 child_comm=sh child_pid=13\n"
      "  sh-13 [001] ..... 1.007000: sched_process_exit: comm=sh pid=13 prio=120 group_dead=true\n"
      "  sh-12 [000] d..2. 1.008000: sched_switch: prev_comm=sh prev_pid=12 prev_prio=120 prev_state=S ==> "
      "next_comm=swapper/0 next_pid=0 next_prio=120\n");
  Result r = import_ftrace(in, "x.txt", Options{});
  EXPECT_EQ(r.report.malformed, 0u);
  // 11: 1 ms to sched_process_exit, 1 ms of teardown, preempted, 2 ms more.
  EXPECT_EQ(ops_str(proc(r.trace, 11).ops), "run:4000000 exit");
  // 12 (its first holder keeps the pid; the reuse is renumbered): 0.5 ms
  // to its exit, 0.5 ms of teardown; its last switch-out was lost, so it
  // exits at the reuse of its pid.
  EXPECT_EQ(ops_str(proc(r.trace, 12).ops), "run:1000000 exit");
  // 13 never switched out after its exit: it runs to the recording's end
  // (1.008000) and exits there.
  EXPECT_EQ(ops_str(proc(r.trace, 13).ops), "run:1000000 exit");
  EXPECT_NO_THROW(trace::validate(r.trace));
}

// --- agentcgroup-task -----------------------------------------------------------

TEST(TaskImport, SmallFolderGivesExactOps) {
  Result r = import_agentcgroup_task_dir(std::string(kData) + "task_small", Options{});
  const trace::Trace& t = r.trace;
  ASSERT_EQ(t.processes.size(), 4u);
  EXPECT_EQ(ops_str(proc(t, 1).ops),
            "mem:10000000 run:200000000 sleep:800000000 mem:20000000 run:250000000 sleep:250000000 "
            "step:1 fork:2 wait run:10000000 sleep:90000000 step:2 fork:3 sleep:100000000 fork:4 wait "
            "run:40000000 sleep:360000000 mem:30000000");
  EXPECT_EQ(ops_str(proc(t, 2).ops),
            "tool_begin:Bash run:250000000 sleep:250000000 mem:100000000 run:10000000 sleep:90000000 "
            "tool_end exit");
  EXPECT_EQ(ops_str(proc(t, 3).ops),
            "tool_begin:Read run:10000000 sleep:90000000 run:5000000 sleep:95000000 tool_end exit");
  EXPECT_EQ(ops_str(proc(t, 4).ops),
            "tool_begin:Grep run:5000000 sleep:95000000 run:20000000 sleep:180000000 tool_end exit");
  EXPECT_EQ(total_run_ns(t), 800 * kMs);
  EXPECT_EQ(r.report.malformed, 1u);
  ASSERT_EQ(r.report.malformed_examples.size(), 1u);
  EXPECT_NE(r.report.malformed_examples[0].find("resources.json:6: sample"), std::string::npos)
      << r.report.malformed_examples[0];
  EXPECT_EQ(r.report.counters.at("tool_calls"), 3u);
  EXPECT_EQ(r.report.counters.at("steps"), 2u);
  EXPECT_NO_THROW(trace::validate(t));
}

// The error of importing resources.json text `resources` (and no tool
// calls) as r.json; a test failure when the import succeeds.
ImportError task_import_error(const std::string& resources) {
  std::istringstream res(resources);
  std::istringstream calls("[]");
  try {
    import_agentcgroup_task(res, "r.json", calls, "c.json", Options{});
  } catch (const ImportError& e) {
    return e;
  }
  ADD_FAILURE() << "expected ImportError";
  return ImportError("", 0, "no error");
}

TEST(TaskImport, StrictAndBadJson) {
  Options o;
  o.strict = true;
  EXPECT_THROW(import_agentcgroup_task_dir(std::string(kData) + "task_small", o), ImportError);
  const ImportError e = task_import_error("{\"samples\": [\n {\"epoch\": 1.0,\n");
  EXPECT_EQ(e.file(), "r.json");
  EXPECT_EQ(e.line(), 3u);
  EXPECT_THROW(import_agentcgroup_task_dir("tests/data/recordings/no-such-task", Options{}), ImportError);
}

// A run of blanks past trace::LineCounter::kMaxBlankRun ends the text (the
// JSON lexer would keep it whole): an error naming the file and line.
TEST(TaskImport, LongRunOfBlanksIsAnError) {
  const ImportError e =
      task_import_error("{\"samples\":\n" + std::string(2 * trace::LineCounter::kMaxBlankRun, ' ') + "[]}");
  EXPECT_EQ(e.file(), "r.json");
  EXPECT_EQ(e.line(), 2u);
  EXPECT_NE(std::string(e.what()).find("blanks in a row"), std::string::npos) << e.what();
}

TEST(TaskImport, RealSamples) {
  const fs::path dir = "../shared/traces/agentcgroup/tasks";
  if (!fs::is_directory(dir)) GTEST_SKIP() << "no real task folders at " << dir << " (optional)";
  std::vector<fs::path> tasks;
  for (const auto& e : fs::directory_iterator(dir)) tasks.push_back(e.path());
  std::sort(tasks.begin(), tasks.end());
  for (const fs::path& p : tasks) {
    Result r = import_agentcgroup_task_dir(p.string(), Options{});
    EXPECT_NO_THROW(trace::validate(r.trace)) << p;
    EXPECT_EQ(r.report.malformed, 0u) << p;
    // CPU demand = sum over samples after the first of cpu% x interval.
    auto j = nlohmann::json::parse(std::ifstream(p / "resources.json"));
    long double expected = 0;
    const auto& s = j["samples"];
    for (std::size_t i = 1; i < s.size(); ++i) {
      const std::string pct = s[i]["cpu_percent"];
      expected += std::stold(pct.substr(0, pct.size() - 1)) / 100.0L *
                  (s[i]["epoch"].get<double>() - s[i - 1]["epoch"].get<double>()) * 1e9L;
    }
    const long double got = static_cast<long double>(total_run_ns(r.trace));
    EXPECT_NEAR(static_cast<double>(got), static_cast<double>(expected), 1e-3 * static_cast<double>(expected) + 1e6)
        << p;
    auto calls = nlohmann::json::parse(std::ifstream(p / "tool_calls.json"));
    EXPECT_EQ(r.report.counters.at("tool_calls"), calls.size()) << p;
  }
}

// --- helpers ----------------------------------------------------------------------

TEST(ImportHelpers, ParseTimes) {
  EXPECT_EQ(parse_seconds_ns("100.000100"), std::optional<std::uint64_t>(100000100000ULL));
  EXPECT_EQ(parse_seconds_ns("1.123456789123"), std::optional<std::uint64_t>(1123456789ULL));
  EXPECT_EQ(parse_seconds_ns("7"), std::optional<std::uint64_t>(7000000000ULL));
  EXPECT_FALSE(parse_seconds_ns("1.2x"));
  EXPECT_FALSE(parse_seconds_ns(".5"));
  EXPECT_EQ(parse_iso8601_utc_ns("1970-01-01T00:16:41.500Z"), std::optional<std::uint64_t>(1001500000000ULL));
  EXPECT_EQ(parse_iso8601_utc_ns("2026-02-07T09:41:11.704Z"), std::optional<std::uint64_t>(1770457271704000000ULL));
  EXPECT_FALSE(parse_iso8601_utc_ns("2026-02-07 nonsense"));
  EXPECT_THROW(import_any("nope", "x", Options{}), std::invalid_argument);
}


// --- hostile inputs (issue 17) ---------------------------------------------
// Each fixture in tests/data/bad-imports/ has one bad line (line 14 of the
// ftrace files, line 3 of the JSON lines files) that used to make the whole
// import fail (or produce a trace that `run` rejects). Non-strict: the line
// is skipped and counted and the trace is valid; strict: ImportError names
// the line.
namespace hostile {

constexpr const char* kBad = "tests/data/bad-imports/";

struct Case {
  const char* file;
  std::uint64_t line;
  const char* why;
};

TEST(HostileImport, BadLineIsSkippedCountedAndTheTraceStaysValid) {
  const Case cases[] = {
      {"ftrace-pid-above-int32.txt", 14, "child_pid"},
      {"ftrace-cpu-20000.txt", 14, "CPU number out of range"},
      {"ftrace-empty-exec-filename.txt", 14, "non-empty filename"},
      {"ftrace-prev-pid-negative.txt", 14, "prev_pid"},
      {"ebpf-pid-above-int32.jsonl", 3, "1..2147483647"},
      {"ebpf-empty-exec-comm.jsonl", 3, "non-empty 'comm'"},
  };
  // The recordings the fixtures extend have malformed lines of their own.
  const std::uint64_t base_ebpf =
      import_agentcgroup_ebpf_file(std::string(kData) + "ebpf_small.jsonl", Options{}).report.malformed;
  const std::uint64_t base_ftrace =
      import_ftrace_file(std::string(kData) + "ftrace_tracefs.txt", Options{}).report.malformed;
  for (const Case& c : cases) {
    const std::string path = std::string(kBad) + c.file;
    const bool ebpf = std::string(c.file).rfind("ebpf", 0) == 0;
    Result r = ebpf ? import_agentcgroup_ebpf_file(path, Options{}) : import_ftrace_file(path, Options{});
    EXPECT_EQ(r.report.malformed, (ebpf ? base_ebpf : base_ftrace) + 1) << c.file;
    ASSERT_FALSE(r.report.malformed_examples.empty()) << c.file;
    EXPECT_NE(r.report.malformed_examples[0].find(std::string(c.file) + ":" + std::to_string(c.line) + ": "),
              std::string::npos)
        << r.report.malformed_examples[0];
    EXPECT_NE(r.report.malformed_examples[0].find(c.why), std::string::npos) << r.report.malformed_examples[0];
    EXPECT_NO_THROW(trace::validate(r.trace)) << c.file;
    EXPECT_LE(r.trace.machine.cpus, 4096u) << c.file;
    // The written text parses back (what `run` reads).
    EXPECT_NO_THROW(trace::parse_trace(trace::to_json_text(r.trace), c.file)) << c.file;
    Options strict;
    strict.strict = true;
    try {
      if (ebpf) import_agentcgroup_ebpf_file(path, strict);
      else import_ftrace_file(path, strict);
      ADD_FAILURE() << c.file << ": strict import accepted it";
    } catch (const ImportError& e) {
      EXPECT_EQ(e.line(), c.line) << e.what();
    }
  }
}

// Found by fuzz/import_ftrace_fuzz.cc: a timestamp 32 years after the first
// made a task run that long, past the simulator's cap on CPU work; the line
// is now skipped and counted, and the rest imports.
TEST(HostileImport, FuzzFoundTimestampJumpIsSkipped) {
  Result r = import_ftrace_file(std::string(kBad) + "fuzz-ftrace-timestamp-jump.txt", Options{});
  EXPECT_GE(r.report.malformed, 1u);
  bool jump = false;
  for (const std::string& m : r.report.malformed_examples) jump = jump || m.find("19.5 hours") != std::string::npos;
  EXPECT_TRUE(jump);
  EXPECT_NO_THROW(trace::validate(r.trace));
}

TEST(HostileImport, NonUtf8CommIsRepairedNotFatal) {
  Result r = import_ftrace_file(std::string(kBad) + "ftrace-non-utf8-comm.txt", Options{});
  const trace::ProcessSpec& p = proc(r.trace, 1500);
  EXPECT_EQ(p.comm, "b?d");
  EXPECT_NO_THROW(trace::validate(r.trace));
  const std::string text = trace::to_json_text(r.trace);  // used to throw type_error 316
  EXPECT_NE(text.find("\"b?d\""), std::string::npos);
}

// A stream of `n` bytes without a newline, generated on the fly (a 2 GB
// single-line file without the file).
class EndlessLine : public std::streambuf {
 public:
  explicit EndlessLine(std::uint64_t n) : left_(n) { buf_.fill('x'); }

 protected:
  int_type underflow() override {
    if (left_ == 0) return traits_type::eof();
    const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(left_, buf_.size()));
    left_ -= k;
    setg(buf_.data(), buf_.data(), buf_.data() + k);
    return traits_type::to_int_type(buf_[0]);
  }

 private:
  std::array<char, 65536> buf_{};
  std::uint64_t left_;
};

TEST(HostileImport, LongSingleLineIsSkippedWithoutBeingKept) {
  // 64 MiB: 64x the line cap. The line is read through, not stored, so the
  // importer holds at most kMaxLineBytes of it (README: constant memory).
  for (const bool ebpf : {false, true}) {
    EndlessLine src(std::uint64_t{64} << 20);
    std::istream in(&src);
    Result r = ebpf ? import_agentcgroup_ebpf(in, "huge.txt", Options{}) : import_ftrace(in, "huge.txt", Options{});
    EXPECT_EQ(r.report.lines, 1u);
    EXPECT_EQ(r.report.malformed, 1u);
    ASSERT_FALSE(r.report.malformed_examples.empty());
    EXPECT_NE(r.report.malformed_examples[0].find("huge.txt:1: line longer than"), std::string::npos)
        << r.report.malformed_examples[0];
  }
}

TEST(HostileImport, BoundedLineReaderKeepsShortLinesIntact) {
  std::istringstream in("a\n\nbc\r\nlast");
  std::string line;
  bool too_long = true;
  std::vector<std::string> got;
  while (read_bounded_line(in, line, too_long)) {
    EXPECT_FALSE(too_long);
    got.push_back(line);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"a", "", "bc\r", "last"}));
}

}  // namespace hostile

}  // namespace
}  // namespace agentcg::import
