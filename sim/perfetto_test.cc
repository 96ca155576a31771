// SPDX-License-Identifier: GPL-2.0-only
// Tests of write_perfetto (sim/perfetto.cc): the file is valid trace-event
// JSON, one process per CPU, slices carry exact microsecond timestamps, the
// task name and cgroup, counters land on the counter process, output is
// deterministic, and an unwritable path throws instead of crashing.
#include <algorithm>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/schedule_log.h"

namespace agentcg::sim {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

ScheduleLog sample_log() {
  ScheduleLog log;
  log.nr_cpus = 2;
  log.cgroup_paths = {"/", "/agent"};
  log.pid_comm = {{10, "bash"}, {11, "cc1\"x"}, {10, "make"}};
  log.slices = {{0, 10, 1, 1500, 2750}, {1, 11, 0, 0, 1000000}, {0, 11, 0, 3000, 3001}};
  log.counters = {{"cgroup /agent runnable", 0, 1.0}, {"cgroup /agent runnable", 2000, 0.5}};
  log.end_ns = 1000000;
  return log;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          (name + "." + std::to_string(::testing::UnitTest::GetInstance()->random_seed())))
      .string();
}

// The systrace text against the ftrace format Perfetto's importer parses:
// "# tracer: nop", then "COMM-PID [CPU] FLAGS SECONDS.MICROS: sched_switch:
// prev_comm= prev_pid= prev_prio= prev_state= ==> next_comm= next_pid=
// next_prio=", in time order; on each CPU the next task of one switch is the
// previous task of the next switch (the track is consistent).
TEST(PerfettoTest, SystraceTextHasConsistentSchedSwitches) {
  const std::string path = temp_path("agentcg-systrace") + ".txt";
  write_perfetto(sample_log(), path);  // the .txt suffix selects the text format
  const std::string text = read_all(path);
  std::filesystem::remove(path);
  ASSERT_EQ(text.rfind("# tracer: nop\n", 0), 0u) << text;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  double last_ts = -1;
  std::map<unsigned, std::string> current;  // cpu -> pid running after the last switch
  std::vector<std::string> next_comms;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    char prev_comm[32], next_comm[32], state[8];
    int pid = 0, prev_pid = 0, next_pid = 0, prev_prio = 0, next_prio = 0;
    unsigned cpu = 0;
    unsigned long long sec = 0, usec = 0;
    char task[64], flags[8];
    ASSERT_EQ(std::sscanf(line.c_str(), " %63[^ ] [%u] %7s %llu.%llu: sched_switch: prev_comm=%31s prev_pid=%d "
                          "prev_prio=%d prev_state=%7s ==> next_comm=%31s next_pid=%d next_prio=%d",
                          task, &cpu, flags, &sec, &usec, prev_comm, &prev_pid, &prev_prio, state, next_comm,
                          &next_pid, &next_prio), 12) << line;
    const std::string t(task);
    ASSERT_EQ(t.substr(0, t.rfind('-')), std::string(prev_comm)) << line;
    pid = std::stoi(t.substr(t.rfind('-') + 1));
    EXPECT_EQ(pid, prev_pid) << line;
    const double ts = static_cast<double>(sec) + static_cast<double>(usec) / 1e6;
    EXPECT_GE(ts, last_ts) << "not in time order: " << line;
    last_ts = ts;
    if (current.count(cpu)) {
      EXPECT_EQ(current[cpu], std::to_string(prev_pid)) << line;
    }
    current[cpu] = std::to_string(next_pid);
    EXPECT_TRUE(std::string(state) == "R" || std::string(state) == "S") << line;
    if (next_pid == 0) {
      EXPECT_EQ(std::string(next_comm), "swapper/" + std::to_string(cpu)) << line;
    }
    next_comms.push_back(next_comm);
    ++n;
  }
  // CPU 0: idle -> make, make blocks, idle -> cc1 (comm sanitised, 15 bytes), cc1 blocks; CPU 1: idle -> cc1
  EXPECT_EQ(n, 5) << text;
  EXPECT_NE(std::find(next_comms.begin(), next_comms.end(), "make"), next_comms.end());
  EXPECT_NE(std::find(next_comms.begin(), next_comms.end(), "cc1\"x"), next_comms.end());
  EXPECT_EQ(text.find("sched_waking"), std::string::npos);  // not in the log: not invented
}

TEST(PerfettoTest, WritesValidTraceEventJson) {
  const std::string path = temp_path("agentcg_perfetto_test.json");
  write_perfetto(sample_log(), path);
  const auto doc = nlohmann::json::parse(read_all(path));
  ASSERT_TRUE(doc.contains("traceEvents"));
  int cpu_names = 0, slices = 0, counters = 0;
  for (const auto& e : doc["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "process_name" && e["args"]["name"].get<std::string>().rfind("CPU ", 0) == 0)
      ++cpu_names;
    if (ph == "X") {
      ++slices;
      EXPECT_LT(e["pid"].get<int>(), 2);
      EXPECT_EQ(e["pid"], e["tid"]);
    }
    if (ph == "C") {
      ++counters;
      EXPECT_EQ(e["pid"].get<int>(), 2) << "counters live on the process after the CPUs";
      EXPECT_EQ(e["name"], "cgroup /agent runnable");
    }
  }
  EXPECT_EQ(cpu_names, 2);
  EXPECT_EQ(slices, 3);
  EXPECT_EQ(counters, 2);

  // First slice: exact us with ns precision, named by the task's last comm.
  const auto& first = *std::find_if(doc["traceEvents"].begin(), doc["traceEvents"].end(),
                                    [](const nlohmann::json& e) { return e["ph"] == "X"; });
  EXPECT_EQ(first["name"], "make (10)");
  EXPECT_DOUBLE_EQ(first["ts"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(first["dur"].get<double>(), 1.25);
  EXPECT_EQ(first["args"]["cgroup"], "/agent");
  EXPECT_EQ(first["args"]["pid"], 10);
  // The quote in a comm is escaped, not breaking the file.
  EXPECT_NE(read_all(path).find("cc1\\\"x (11)"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(PerfettoTest, Deterministic) {
  const std::string a = temp_path("agentcg_perfetto_a.json");
  const std::string b = temp_path("agentcg_perfetto_b.json");
  write_perfetto(sample_log(), a);
  write_perfetto(sample_log(), b);
  EXPECT_EQ(read_all(a), read_all(b));
  std::filesystem::remove(a);
  std::filesystem::remove(b);
}

TEST(PerfettoTest, SliceOnUndeclaredCpuGetsItsTrack) {
  ScheduleLog log = sample_log();
  log.slices.push_back({5, 10, 1, 10, 20});
  const std::string path = temp_path("agentcg_perfetto_cpu.json");
  write_perfetto(log, path);
  const auto doc = nlohmann::json::parse(read_all(path));
  bool named = false;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "process_name" && e["pid"] == 5) named = true;
  EXPECT_TRUE(named);
  EXPECT_EQ(doc["otherData"]["cpus"], 6);
  std::filesystem::remove(path);
}

TEST(PerfettoTest, UnwritablePathThrows) {
  EXPECT_THROW(write_perfetto(sample_log(), "/nonexistent-dir/x/trace.json"), std::runtime_error);
}

}  // namespace
}  // namespace agentcg::sim
