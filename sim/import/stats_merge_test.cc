// SPDX-License-Identifier: GPL-2.0-only
// Tests of `trace stats` (figures on hand-made recordings with known values,
// percentiles), `trace merge` (session cgroups, pid renumbering, stagger) and
// the command entry points (exit codes, messages, determinism).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/import/commands.h"
#include "sim/import/import.h"
#include "sim/import/merge.h"
#include "sim/import/mix.h"
#include "sim/import/stats.h"
#include "sim/trace/trace.h"

namespace agentcg::import {
namespace {

namespace fs = std::filesystem;
constexpr const char* kData = "tests/data/recordings/";
constexpr std::uint64_t kMs = 1000000;

TEST(Percentiles, NearestRank) {
  std::vector<std::uint64_t> v;
  for (std::uint64_t i = 1000; i >= 1; --i) v.push_back(i);
  const Percentiles p = Percentiles::of(v);
  EXPECT_EQ(p.count, 1000u);
  EXPECT_EQ(p.p50, 500u);
  EXPECT_EQ(p.p90, 900u);
  EXPECT_EQ(p.p99, 990u);
  EXPECT_EQ(p.p999, 999u);
  EXPECT_EQ(p.max, 1000u);
  EXPECT_EQ(Percentiles::of({}).count, 0u);
  EXPECT_EQ(Percentiles::of({7}).p50, 7u);
}

TEST(Stats, EbpfSmallFigures) {
  Result r = import_agentcgroup_ebpf_file(std::string(kData) + "ebpf_small.jsonl", Options{});
  const TraceStats s = compute_stats(r.trace);
  EXPECT_EQ(s.tasks, 3u);
  EXPECT_EQ(s.forks, 2u);
  EXPECT_EQ(s.max_forks_per_s, 2u);
  EXPECT_EQ(s.cpu_demand_ns, 100 * kMs);
  EXPECT_EQ(s.span_ns, 310 * kMs);
  EXPECT_EQ(s.memory_peak_bytes, 3584000u + 20480000u);
  EXPECT_EQ(s.process_memory_peak_bytes, 20480000u);
  EXPECT_FALSE(s.wakeup_latency_ns.has_value());
}

TEST(Stats, TaskFolderStepsAndTools) {
  Result r = import_agentcgroup_task_dir(std::string(kData) + "task_small", Options{});
  const TraceStats s = compute_stats(r.trace);
  EXPECT_EQ(s.steps, 2u);
  EXPECT_EQ(s.tool_calls, 3u);
  EXPECT_EQ(s.tasks, 4u);
  EXPECT_EQ(s.cpu_demand_ns, 800 * kMs);
  EXPECT_EQ(s.span_ns, 3000 * kMs);
  // 20 MB agent + the Bash tool's 100 MB burst.
  EXPECT_EQ(s.memory_peak_bytes, 120000000u);
}

TEST(Stats, FtraceWakeupLatencyJson) {
  std::ostringstream out, err;
  const int rc = stats_command({std::string(kData) + "ftrace_tracecmd.txt", "--from", "ftrace", "--json"}, out, err);
  ASSERT_EQ(rc, 0) << err.str();
  const auto j = nlohmann::json::parse(out.str());
  const auto& w = j.at("wakeup_latency_ns");
  EXPECT_EQ(w.at("count"), 3);
  EXPECT_EQ(w.at("p50"), 100000);
  EXPECT_EQ(w.at("p90"), 200000);
  EXPECT_EQ(w.at("p99"), 200000);
  EXPECT_EQ(w.at("p999"), 200000);
  EXPECT_EQ(w.at("max"), 200000);
  EXPECT_EQ(j.at("tasks"), 3);
  EXPECT_EQ(j.at("cpu_demand_ns"), 1000000 + 2000000 + 1900000 + 1010000 + 40000 + 3930000 + 100000);
}

TEST(Merge, SessionsCgroupsPidsStagger) {
  Result a = import_agentcgroup_ebpf_file(std::string(kData) + "ebpf_small.jsonl", Options{});
  Result b = import_agentcgroup_task_dir(std::string(kData) + "task_small", Options{});
  MergeOptions mo;
  mo.stagger_ns = 5000 * kMs;
  std::vector<std::string> warnings;
  const trace::Trace m = merge_sessions({a.trace, b.trace, a.trace}, mo, &warnings);
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(m.processes.size(), 3u + 4u + 3u);
  ASSERT_EQ(m.cgroups.size(), 3u);
  EXPECT_EQ(m.cgroups[0].path, "/session-1");
  EXPECT_EQ(m.cgroups[2].path, "/session-3");
  // Session 1: bash 100 -> 1, python 101 -> 2, ls 102 -> 3.
  EXPECT_EQ(m.processes[0].pid, 1);
  EXPECT_EQ(m.processes[0].cgroup, "/session-1");
  EXPECT_EQ(m.processes[0].start_ns, std::optional<std::uint64_t>(10 * kMs));
  EXPECT_EQ(m.processes[1].parent, std::optional<std::int64_t>(1));
  // Session 2 (task): agent 1 -> 4, tools 2..4 -> 5..7, start shifted 5 s.
  EXPECT_EQ(m.processes[3].pid, 4);
  EXPECT_EQ(m.processes[3].start_ns, std::optional<std::uint64_t>(5000 * kMs));
  EXPECT_EQ(m.processes[4].parent, std::optional<std::int64_t>(4));
  EXPECT_EQ(m.processes[3].agent->session, "task_small");
  // Session 3: bash forks its python (8 -> 9) and ls (10).
  const trace::ProcessSpec& bash3 = m.processes[7];
  EXPECT_EQ(bash3.pid, 8);
  EXPECT_EQ(bash3.cgroup, "/session-3");
  EXPECT_EQ(bash3.start_ns, std::optional<std::uint64_t>(10010 * kMs));
  std::vector<std::int64_t> forked;
  for (const trace::Op& op : bash3.ops)
    if (op.kind == trace::OpKind::kFork) forked.push_back(op.pid());
  EXPECT_EQ(forked, (std::vector<std::int64_t>{9, 10}));
  EXPECT_NO_THROW(trace::validate(m));
  const TraceStats s = compute_stats(m);
  EXPECT_EQ(s.cpu_demand_ns, (100 + 800 + 100) * kMs);
}

TEST(Merge, SubCgroupsAndDuration) {
  Options o;
  o.cgroup = "/agent";
  Result a = import_agentcgroup_ebpf_file(std::string(kData) + "ebpf_small.jsonl", o);
  a.trace.cgroups[0].cpu_weight = 50;
  a.trace.duration_ns = 1000;
  MergeOptions mo;
  mo.stagger_ns = 100;
  mo.cpus = 8;
  const trace::Trace m = merge_sessions({a.trace, a.trace}, mo);
  ASSERT_EQ(m.cgroups.size(), 4u);
  EXPECT_EQ(m.cgroups[1].path, "/session-1/agent");
  EXPECT_EQ(m.cgroups[1].cpu_weight, 50u);
  EXPECT_EQ(m.processes[0].cgroup, "/session-1/agent");
  EXPECT_EQ(m.duration_ns, std::optional<std::uint64_t>(1100));
  EXPECT_EQ(m.machine.cpus, 8u);
  EXPECT_NO_THROW(trace::validate(m));
}

TEST(Commands, ImportToStdoutIsDeterministicAndParses) {
  const std::vector<std::string> args = {"--from", "agentcgroup-ebpf",
                                         std::string(kData) + "ebpf_small.jsonl", "-o", "-"};
  std::ostringstream out1, err1, out2, err2;
  ASSERT_EQ(import_command(args, out1, err1), 0) << err1.str();
  ASSERT_EQ(import_command(args, out2, err2), 0) << err2.str();
  EXPECT_EQ(out1.str(), out2.str());
  EXPECT_NE(err1.str().find("1 malformed lines skipped"), std::string::npos) << err1.str();
  EXPECT_NE(err1.str().find("not represented:"), std::string::npos) << err1.str();
  const trace::Trace t = trace::parse_trace(out1.str(), "stdout");
  EXPECT_EQ(t.processes.size(), 3u);
}

TEST(Commands, ExitCodesAndMessages) {
  std::ostringstream out, err;
  EXPECT_EQ(import_command({std::string(kData) + "ftrace_tracefs.txt", "-o", "-"}, out, err), 2);
  EXPECT_NE(err.str().find("--from"), std::string::npos) << err.str();
  err.str("");
  EXPECT_EQ(import_command({"--from", "ftrace", "--strict", std::string(kData) + "ftrace_tracefs.txt", "-o", "-"},
                           out, err),
            1);
  EXPECT_NE(err.str().find("ftrace_tracefs.txt:26:"), std::string::npos) << err.str();
  err.str("");
  EXPECT_EQ(import_command({"--from", "bogus", "x", "-o", "-"}, out, err), 1);
  EXPECT_NE(err.str().find("unknown format 'bogus'"), std::string::npos) << err.str();
  err.str("");
  EXPECT_EQ(import_command({"--from", "ftrace", "a", "b", "-o", "-"}, out, err), 2);
  EXPECT_EQ(import_command({"--from", "ftrace", "x", "-o", "-", "--cgroup", "rel"}, out, err), 2);
  EXPECT_EQ(stats_command({"tests/data/recordings/does-not-exist.json"}, out, err), 1);
  EXPECT_EQ(merge_command({"a.json", "--stagger", "soon", "-o", "-"}, out, err), 2);
  EXPECT_EQ(merge_command({"--stagger", "1s", "-o", "-"}, out, err), 2);
}

TEST(Commands, MergeFilesRoundTrip) {
  const fs::path dir = fs::temp_directory_path() / "agentcg_import_merge_test";
  fs::create_directories(dir);
  std::ostringstream out, err;
  const std::string a = (dir / "a.json").string();
  ASSERT_EQ(import_command({"--from", "perf", std::string(kData) + "perf_script.txt", "-o", a}, out, err), 0)
      << err.str();
  const std::string m = (dir / "m.json").string();
  ASSERT_EQ(merge_command({a, a, "--stagger", "5s", "-o", m}, out, err), 0) << err.str();
  const trace::Trace t = trace::load_trace_file(m);
  EXPECT_EQ(t.processes.size(), 6u);
  EXPECT_EQ(t.processes[3].start_ns, std::optional<std::uint64_t>(5000 * kMs));
  std::ostringstream sout;
  ASSERT_EQ(stats_command({m}, sout, err), 0) << err.str();
  EXPECT_NE(sout.str().find("tasks:            6"), std::string::npos) << sout.str();
  fs::remove_all(dir);
}


// trace mix: N sessions from the recordings in a seeded order (each used
// once per round), starts i x stagger plus at most stagger / 2, one cgroup
// per session, an interactive shell, a stop time; deterministic.
TEST(Mix, SessionsFromRecordingsStaggeredWithAShell) {
  const trace::Trace a = load_recording(std::string(kData) + "ebpf_small.jsonl");
  const trace::Trace b = load_recording(std::string(kData) + "task_small");
  MixOptions mo;
  mo.sessions = 5;
  mo.cpus = 2;
  mo.stagger_ns = 1000 * kMs;
  mo.duration_ns = 30000 * kMs;
  const trace::Trace m = mix_sessions({a, b}, mo);
  EXPECT_NO_THROW(trace::validate(m));
  EXPECT_EQ(m.machine.cpus, 2u);
  EXPECT_EQ(m.duration_ns, std::optional<std::uint64_t>(30000 * kMs));
  std::size_t from_a = 0, from_b = 0, shells = 0;
  for (std::uint32_t i = 1; i <= 5; ++i) {
    const std::string cg = "/session-" + std::to_string(i);
    std::optional<std::uint64_t> first;
    std::size_t procs = 0;
    for (const trace::ProcessSpec& p : m.processes)
      if (p.cgroup == cg) {
        ++procs;
        if (p.start_ns && (!first || *p.start_ns < *first)) first = *p.start_ns;
      }
    ASSERT_TRUE(first) << cg;
    // recordings start at their own offsets (<= 10 ms here)
    EXPECT_GE(*first, (i - 1) * 1000 * kMs) << cg;
    EXPECT_LE(*first, (i - 1) * 1000 * kMs + 500 * kMs + 10 * kMs) << cg;
    (procs == a.processes.size() ? from_a : from_b)++;
  }
  // rounds of both recordings: 3 + 2 or 2 + 3
  EXPECT_EQ(from_a + from_b, 5u);
  EXPECT_GE(std::min(from_a, from_b), 2u);
  for (const trace::ProcessSpec& p : m.processes) shells += p.cgroup == "/interactive";
  EXPECT_EQ(shells, 1u);
  EXPECT_EQ(trace::to_json_text(m), trace::to_json_text(mix_sessions({a, b}, mo)));
  mo.seed = 2;
  EXPECT_NE(trace::to_json_text(m), trace::to_json_text(mix_sessions({a, b}, mo)));
  mo.sessions = 0;
  EXPECT_THROW(mix_sessions({a, b}, mo), std::invalid_argument);
  EXPECT_THROW(mix_sessions({}, MixOptions{}), std::invalid_argument);
}

}  // namespace
}  // namespace agentcg::import
