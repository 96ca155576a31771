// SPDX-License-Identifier: GPL-2.0-only
// Tests of the agentcg-record importer on the hand-made recording
// tests/data/recordings/record_small/ (two spinners started by `sh` in /a,
// weight 100, and /b, weight 300 with cpu.max and memory limits; a kworker):
// valid trace, processes in their recorded cgroups with the recorded
// settings, kernel threads dropped, a spinner's CPU demand against the one
// the fixture's sched_switch lines give (computed here independently),
// memory.current as mem ops, --only-cgroup, `trace stats` wakeup latency,
// and bad side files (skip + count with DIR/FILE:LINE, --strict, headers).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "sim/import/commands.h"
#include "sim/import/import.h"
#include "sim/trace/trace.h"

namespace agentcg::import {
namespace {

namespace fs = std::filesystem;
constexpr const char* kRec = "tests/data/recordings/record_small";

const trace::ProcessSpec* find_proc(const trace::Trace& t, std::int64_t pid) {
  for (const trace::ProcessSpec& p : t.processes)
    if (p.pid == pid) return &p;
  return nullptr;
}

const trace::CgroupSpec* find_cgroup(const trace::Trace& t, const std::string& path) {
  for (const trace::CgroupSpec& c : t.cgroups)
    if (c.path == path) return &c;
  return nullptr;
}

std::uint64_t run_ns(const trace::ProcessSpec& p) {
  std::uint64_t s = 0;
  for (const trace::Op& op : p.ops)
    if (op.kind == trace::OpKind::kRun) s += op.amount.a;
  return s;
}

std::vector<std::uint64_t> mems(const trace::ProcessSpec& p) {
  std::vector<std::uint64_t> out;
  for (const trace::Op& op : p.ops)
    if (op.kind == trace::OpKind::kMem) out.push_back(op.amount.a);
  return out;
}

// On-CPU ns of `pid` from the sched_switch lines alone (switch-in to
// switch-out), a reference independent of the importer.
std::uint64_t oncpu_from_switches(const std::string& file, std::int64_t pid) {
  std::ifstream in(file);
  std::string line;
  std::uint64_t since = 0;
  bool on = false;
  std::uint64_t total = 0;
  const std::string prev = "prev_pid=" + std::to_string(pid) + " ";
  const std::string next = "next_pid=" + std::to_string(pid) + " ";
  while (std::getline(in, line)) {
    if (line.find("sched_switch:") == std::string::npos) continue;
    const auto colon = line.find(": sched_switch");
    auto b = line.rfind(' ', colon);
    const auto ts = parse_seconds_ns(line.substr(b + 1, colon - b - 1));
    if (!ts) continue;
    if (line.find(prev) != std::string::npos && on) {
      total += *ts - since;
      on = false;
    }
    if (line.find(next) != std::string::npos) {
      since = *ts;
      on = true;
    }
  }
  return total;
}

fs::path copy_fixture(const std::string& name) {
  const fs::path dst = fs::temp_directory_path() / ("agentcg-record-test-" + name);
  fs::remove_all(dst);
  fs::copy(kRec, dst, fs::copy_options::recursive);
  return dst;
}

void replace_line(const fs::path& file, int lineno, const std::string& text) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  std::string l;
  while (std::getline(in, l)) lines.push_back(l);
  in.close();
  lines.at(static_cast<std::size_t>(lineno - 1)) = text;
  std::ofstream out(file);
  for (const std::string& s : lines) out << s << "\n";
}

TEST(RecordImport, FixtureGivesValidTraceInRecordedCgroups) {
  Result r = import_agentcg_record_dir(kRec, Options{});
  const trace::Trace& t = r.trace;
  EXPECT_NO_THROW(trace::validate(t));
  EXPECT_EQ(t.machine.cpus, 2u);  // from meta.json
  EXPECT_EQ(r.report.format, "agentcg-record");
  // The kworker (kthread flag in members.tsv) is dropped; sh and the spinners stay.
  EXPECT_EQ(find_proc(t, 20), nullptr);
  ASSERT_EQ(t.processes.size(), 3u);
  const trace::ProcessSpec* sh = find_proc(t, 100);
  const trace::ProcessSpec* a = find_proc(t, 101);
  const trace::ProcessSpec* b = find_proc(t, 102);
  ASSERT_TRUE(sh && a && b);
  EXPECT_EQ(sh->cgroup, "/");
  EXPECT_EQ(a->cgroup, "/a");
  EXPECT_EQ(b->cgroup, "/b");
  EXPECT_EQ(a->parent, std::optional<std::int64_t>(100));
  // The cgroup settings recorded in cgroups.tsv.
  const trace::CgroupSpec* ca = find_cgroup(t, "/a");
  const trace::CgroupSpec* cb = find_cgroup(t, "/b");
  ASSERT_TRUE(ca && cb);
  EXPECT_EQ(ca->cpu_weight, 100u);
  EXPECT_FALSE(ca->cpu_max.has_value());
  EXPECT_FALSE(ca->memory_high.has_value());
  EXPECT_EQ(cb->cpu_weight, 300u);
  ASSERT_TRUE(cb->cpu_max.has_value());
  EXPECT_EQ(cb->cpu_max->quota_us, 50000u);
  EXPECT_EQ(cb->cpu_max->period_us, 100000u);
  EXPECT_EQ(cb->memory_high, std::optional<std::uint64_t>(1073741824));
  EXPECT_EQ(cb->memory_max, std::optional<std::uint64_t>(2147483648));
  // memory.current samples as mem ops of the cgroup's process, in order.
  EXPECT_EQ(mems(*a), (std::vector<std::uint64_t>{1048576, 2097152}));
  EXPECT_EQ(mems(*b), (std::vector<std::uint64_t>{4194304}));
  EXPECT_EQ(r.report.unrepresented.count("memory.current samples with no imported process alive in the cgroup"), 1u);
}

TEST(RecordImport, SpinnerDemandMatchesSchedSwitch) {
  Result r = import_agentcg_record_dir(kRec, Options{});
  const std::string ft = std::string(kRec) + "/ftrace.txt";
  for (std::int64_t pid : {101, 102}) {
    const trace::ProcessSpec* p = find_proc(r.trace, pid);
    ASSERT_NE(p, nullptr);
    const std::uint64_t ref = oncpu_from_switches(ft, pid);
    ASSERT_GT(ref, 100000000u) << pid;
    // Tolerance: 1 % (the importer counts from the switch-in, the reference
    // too; they differ only if run phases were lost or invented).
    EXPECT_NEAR(static_cast<double>(run_ns(*p)), static_cast<double>(ref), 0.01 * static_cast<double>(ref)) << pid;
  }
  // 1000.001020 -> 1000.203010: sched_process_exit at .203000, its teardown
  // to the last switch-out (X) counted
  EXPECT_EQ(run_ns(*find_proc(r.trace, 101)), 201990000u);
}

TEST(RecordImport, OnlyCgroupKeepsOneSubtree) {
  Options o;
  o.only_cgroup = "/a";
  Result r = import_agentcg_record_dir(kRec, o);
  EXPECT_NO_THROW(trace::validate(r.trace));
  ASSERT_EQ(r.trace.processes.size(), 1u);
  const trace::ProcessSpec& a = r.trace.processes[0];
  EXPECT_EQ(a.pid, 101);
  EXPECT_FALSE(a.parent.has_value());  // its parent sh was dropped: a root at its fork time
  EXPECT_EQ(a.start_ns, std::optional<std::uint64_t>(1000000));
  ASSERT_EQ(r.trace.cgroups.size(), 1u);
  EXPECT_EQ(r.trace.cgroups[0].path, "/a");
  // Only the spinner's own wakeup (wakeup_new -> switch-in, 10 us) stays.
  EXPECT_EQ(r.report.wakeup_latency_ns, (std::vector<std::uint64_t>{10000}));
}

TEST(RecordImport, StatsReportsWakeupLatency) {
  std::ostringstream out, err;
  ASSERT_EQ(stats_command({kRec, "--from", "agentcg-record", "--json"}, out, err), 0) << err.str();
  const auto j = nlohmann::json::parse(out.str());
  ASSERT_TRUE(j.contains("wakeup_latency_ns")) << out.str();
  EXPECT_EQ(j["wakeup_latency_ns"]["count"].get<std::uint64_t>(), 4u);
  EXPECT_EQ(j["wakeup_latency_ns"]["max"].get<std::uint64_t>(), 1990000u);
}

TEST(RecordImport, ImportCommandWritesValidTrace) {
  const fs::path out = fs::temp_directory_path() / "agentcg-record-test-out.json";
  std::ostringstream o, e;
  ASSERT_EQ(import_command({"--from", "agentcg-record", kRec, "-o", out.string()}, o, e), 0) << e.str();
  const trace::Trace t = trace::load_trace_file(out.string());
  EXPECT_EQ(t.processes.size(), 3u);
  fs::remove(out);
  std::ostringstream o2, e2;
  EXPECT_EQ(import_command({"--from", "agentcg-record", kRec, "--cgroup", "/x", "-o", "-"}, o2, e2), 1);
  EXPECT_NE(e2.str().find("--only-cgroup"), std::string::npos) << e2.str();
}

TEST(RecordImport, CorruptSideFileNamesFileAndLine) {
  const fs::path dir = copy_fixture("corrupt");
  replace_line(dir / "members.tsv", 4, "1000050000000\tabc\t101\t0\t/a\tagentcg-work");
  // Default: the row is skipped and counted; 101 has no row, so it takes
  // its parent's cgroup.
  Result r = import_agentcg_record_dir(dir.string(), Options{});
  EXPECT_EQ(r.report.malformed, 1u);
  ASSERT_FALSE(r.report.malformed_examples.empty());
  const std::string want = (dir / "members.tsv").string() + ":4: tid:";
  EXPECT_EQ(r.report.malformed_examples[0].rfind(want, 0), 0u) << r.report.malformed_examples[0];
  EXPECT_EQ(find_proc(r.trace, 101)->cgroup, "/");
  // --strict: the first bad row stops the import with DIR/FILE:LINE.
  Options strict;
  strict.strict = true;
  try {
    import_agentcg_record_dir(dir.string(), strict);
    FAIL() << "expected ImportError";
  } catch (const ImportError& e) {
    EXPECT_EQ(e.file(), (dir / "members.tsv").string());
    EXPECT_EQ(e.line(), 4u);
    EXPECT_NE(std::string(e.what()).find("expected a positive integer"), std::string::npos) << e.what();
  }
  // A bad cpu.max row.
  const fs::path dir2 = copy_fixture("cpumax");
  replace_line(dir2 / "cgroups.tsv", 3, "1000050000000\t/b\t300\t50000\t-\t-");
  try {
    import_agentcg_record_dir(dir2.string(), strict);
    FAIL() << "expected ImportError";
  } catch (const ImportError& e) {
    EXPECT_EQ(e.file(), (dir2 / "cgroups.tsv").string());
    EXPECT_EQ(e.line(), 3u);
    EXPECT_NE(std::string(e.what()).find("cpu.max: expected"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
  fs::remove_all(dir2);
}

// A trimmed real recording (the VM's `record` scenario, kernel 7.2: states
// R+ and Z, group_dead=true). The spinners were forked before the kept
// lines and waited runnable, so their ops span less than their recorded
// lives: the cgroup rows (sampled 68 ms in) must still be matched.
TEST(RecordImport, TrimmedVmRecordingStrict) {
  Options o;
  o.strict = true;
  Result r = import_agentcg_record_dir("tests/data/recordings/record_vm", o);
  EXPECT_NO_THROW(trace::validate(r.trace));
  EXPECT_EQ(r.report.malformed, 0u);
  const trace::ProcessSpec* a = find_proc(r.trace, 138);
  const trace::ProcessSpec* b = find_proc(r.trace, 139);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->cgroup, "/rec-a");
  EXPECT_EQ(b->cgroup, "/rec-b");
  ASSERT_TRUE(find_cgroup(r.trace, "/rec-a") && find_cgroup(r.trace, "/rec-b"));
  EXPECT_EQ(find_cgroup(r.trace, "/rec-a")->cpu_weight, 100u);
  EXPECT_EQ(find_cgroup(r.trace, "/rec-b")->cpu_weight, 300u);
  EXPECT_EQ(find_proc(r.trace, 15), nullptr);  // rcu_preempt, a kernel thread
  EXPECT_EQ(r.trace.machine.cpus, 2u);
  EXPECT_FALSE(r.report.wakeup_latency_ns.empty());
}

TEST(RecordImport, BadHeaderMetaAndMissingFiles) {
  const fs::path dir = copy_fixture("header");
  replace_line(dir / "memory.tsv", 1, "time\tpath\tbytes");
  try {
    import_agentcg_record_dir(dir.string(), Options{});
    FAIL() << "expected ImportError";
  } catch (const ImportError& e) {
    EXPECT_EQ(e.file(), (dir / "memory.tsv").string());
    EXPECT_EQ(e.line(), 1u);
  }
  fs::remove_all(dir);
  const fs::path d2 = copy_fixture("meta");
  replace_line(d2 / "meta.json", 3, "  \"version\": 2,");
  EXPECT_THROW(import_agentcg_record_dir(d2.string(), Options{}), ImportError);
  fs::remove(d2 / "meta.json");
  EXPECT_THROW(import_agentcg_record_dir(d2.string(), Options{}), ImportError);
  fs::remove_all(d2);
  EXPECT_THROW(import_agentcg_record_dir("tests/data/recordings/no-such-recording", Options{}), ImportError);
}

}  // namespace
}  // namespace agentcg::import
