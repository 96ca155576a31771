// SPDX-License-Identifier: GPL-2.0-only
// Tests of write_perfetto (sim/perfetto.cc): the file is valid trace-event
// JSON, one process per CPU, slices carry exact microsecond timestamps, the
// task name and cgroup, counters land on the counter process, output is
// deterministic, and an unwritable path throws instead of crashing.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
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
