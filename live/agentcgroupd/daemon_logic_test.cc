// SPDX-License-Identifier: GPL-2.0-only
// Tests of agentcgroupd's kernel-free logic (daemon_logic.h): config ->
// tunables, cgroup tree walking, memory.events parsing, the memory monitor
// driven by core's agentcg_mem_penalty_update(), and the /metrics text.
#include "live/agentcgroupd/daemon_logic.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

namespace agentcg::live {
namespace {

constexpr std::uint64_t kSec = 1000000000ULL;

TEST(Tunables, FlatcgModeClearsEveryFeature) {
  config::Config c = config::load_string("daemon: {mode: flatcg}\n", "t.yaml");
  EXPECT_EQ(mode_of(c), AGENTCG_MODE_FLATCG);
  EXPECT_EQ(tunables_of(c).features, 0u);
  EXPECT_EQ(tunables_of(c).base_slice_ms, 4u);
  config::Config d = config::load_string("scheduler: {features: {fork_aware: false}}\n", "t.yaml");
  EXPECT_EQ(mode_of(d), AGENTCG_MODE_AGENTCG);
  EXPECT_EQ(tunables_of(d).features, static_cast<u32>(AGENTCG_F_DEFAULT & ~AGENTCG_F_FORK_AWARE));
  // on by default: switching it off must reach the BPF tunables
  config::Config r = config::load_string("scheduler: {features: {retag_stale: false}}\n", "t.yaml");
  EXPECT_EQ(tunables_of(r).features, static_cast<u32>(AGENTCG_F_DEFAULT & ~AGENTCG_F_RETAG_STALE));
}

TEST(Config, ShippedConfigLoadsAndBadOneNamesLineAndKey) {
  const config::Config c = config::load_file("live/agentcgroupd/config.yaml");
  EXPECT_EQ(c.daemon.metrics_port, 9402u);  // the shipped file keeps the default
  EXPECT_EQ(config::Config{}.daemon.metrics_port, 9402u);  // not Prometheus's own 9090
  EXPECT_EQ(c.monitor.poll_interval_ms, 10u);
  try {
    config::load_string("daemon:\n  metrics_port: 70000\n", "bad.yaml");
    FAIL() << "out-of-range port accepted";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml:2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("daemon.metrics_port"), std::string::npos) << e.what();
  }
}

TEST(MemoryEvents, ParsesHighAndRejectsGarbage) {
  EXPECT_EQ(parse_memory_events_high("low 0\nhigh 17\nmax 2\noom 0\noom_kill 0\n"), 17u);
  EXPECT_EQ(parse_memory_events_high("low 0\nmax 2\n"), std::nullopt);
  EXPECT_EQ(parse_memory_events_high("high x1\n"), std::nullopt);
  EXPECT_EQ(parse_memory_events_high(""), std::nullopt);
}

TEST(MemMonitor, FirstReadingIsBaselineRiseRaisesDecayLowers) {
  MemMonitor m;
  agentcg_tunables t = agentcg_tunables_default();
  EXPECT_EQ(m.poll("/off", 1, kSec, t), 0u);
  EXPECT_EQ(m.poll("/off", 9, 2 * kSec, t), 0u) << "mem_penalty is off by default";
  t.features |= AGENTCG_F_MEM_PENALTY;
  std::uint32_t ev = 0;
  // A busy cgroup at daemon start: the first reading only sets the baseline.
  EXPECT_EQ(m.poll("/a", 100, 1 * kSec, t, &ev), 0u);
  EXPECT_EQ(ev, 0u);
  EXPECT_EQ(m.poll("/a", 101, 2 * kSec, t, &ev), 1u);
  EXPECT_TRUE(ev & AGENTCG_EV(penalties_applied));
  for (int i = 0; i < 10; i++) m.poll("/a", 102 + i, 2 * kSec + i, t);
  EXPECT_EQ(m.penalty("/a"), t.mem_penalty_max);
  // No rise for mem_penalty_decay_sec: one step down per decay period.
  EXPECT_EQ(m.poll("/a", 111, 2 * kSec + 9 + (t.mem_penalty_decay_sec - 1) * kSec, t), 4u);
  EXPECT_EQ(m.poll("/a", 111, 2 * kSec + 9 + t.mem_penalty_decay_sec * kSec, t), 3u);
  EXPECT_EQ(m.penalty("/other"), 0u);
  m.forget("/a");
  EXPECT_EQ(m.penalty("/a"), 0u);
  // With the feature off (flatcg) the penalty stays 0.
  t.features = 0;
  m.poll("/b", 1, kSec, t);
  EXPECT_EQ(m.poll("/b", 50, 2 * kSec, t), 0u);
}

// The daemon's read budget (issue 14): with watches set and no penalty,
// a steady tree of 1,000 cgroups costs no memory.events read per loop
// iteration after the baselines; only modified files, penalised cgroups
// (their penalty decays with time) and unwatched files are read, the last
// two once per interval.
TEST(MemReadPlan, ReadsOnlyWhatChangedOrMustDecay) {
  MemMonitor m;
  MemReadPlan plan;
  agentcg_tunables t = agentcg_tunables_default();
  t.features |= AGENTCG_F_MEM_PENALTY;  // off by default; the decay reads need it on
  const std::uint64_t iv = 10000000ULL;  // poll_interval_ms 10
  for (int i = 0; i < 1000; i++) plan.track("/c" + std::to_string(i), true);
  plan.track("/nowatch", false);
  std::vector<std::string> d = plan.due(m, kSec, iv);
  EXPECT_EQ(d.size(), 1001u);  // every baseline once
  for (const auto& p : d) m.poll(p, 5, kSec, t);
  // steady state: nothing but the unwatched file, once per interval
  std::size_t reads = 0;
  for (std::uint64_t k = 1; k <= 100; k++) reads += plan.due(m, kSec + k * iv / 2, iv).size();
  EXPECT_EQ(reads, 50u);  // /nowatch at every other iteration (half-interval steps), nothing else
  // a modified file is read once, at the next iteration
  plan.modified("/c7");
  d = plan.due(m, kSec + 50 * iv + 1, iv);  // the last sweep was at kSec + 50 iv
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], "/c7");
  EXPECT_EQ(m.poll("/c7", 6, 2 * kSec, t), 1u);  // a rise: penalised
  EXPECT_TRUE(plan.due(m, kSec + 50 * iv + 2, iv).empty());
  d = plan.due(m, kSec + 60 * iv, iv);  // the interval sweep: penalised + unwatched
  EXPECT_EQ(d, (std::vector<std::string>{"/c7", "/nowatch"}));
  // an untracked path is never read, even when reported modified
  plan.untrack("/c8");
  plan.modified("/c8");
  EXPECT_TRUE(plan.due(m, kSec + 60 * iv + 1, iv).empty());
  plan.modified_all();  // an inotify queue overflow: everything once
  EXPECT_EQ(plan.due(m, kSec + 60 * iv + 2, iv).size(), 1000u);
}

TEST(WalkCgroups, SortedRelativePathsWithInodeIds) {
  char tmpl[] = "/tmp/agentcg-walk-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::filesystem::path root(tmpl);
  std::filesystem::create_directories(root / "b" / "x");
  std::filesystem::create_directories(root / "a");
  std::ofstream(root / "a" / "memory.events") << "high 3\n";
  const auto list = walk_cgroups(root.string());
  std::vector<std::string> paths;
  for (const auto& e : list) paths.push_back(e.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"/", "/a", "/b", "/b/x"}));
  struct stat st{};
  ASSERT_EQ(::stat((root / "b" / "x").c_str(), &st), 0);
  EXPECT_EQ(list[3].id, static_cast<std::uint64_t>(st.st_ino));
  std::set<std::uint64_t> ids;
  for (const auto& e : list) ids.insert(e.id);
  EXPECT_EQ(ids.size(), 4u);
  // the same paths for a root given with a trailing slash (relative paths
  // are computed lexically: no lookup that a removed cgroup could fail)
  std::vector<std::string> slashed;
  for (const auto& e : walk_cgroups(root.string() + "/")) slashed.push_back(e.path);
  EXPECT_EQ(slashed, paths);
  EXPECT_TRUE(walk_cgroups((root / "missing").string()).empty());
  std::filesystem::remove_all(root);
}

TEST(Metrics, EveryFamilyHasHelpAndTypeAndValuesAreRight) {
  MetricsSnapshot s;
  s.attached = true;
  s.mode = "agentcg";
  s.counters[AGENTCG_C_new_steps] = 7;
  s.counters[AGENTCG_C_fork_storms] = 2;
  s.counters[AGENTCG_C_penalties_applied] = 1;
  s.mem_penalty_events[0] = 4;
  s.bpf_stats[AGENTCG_BS_dispatches] = 99;
  CgroupMetrics a;
  a.path = "/agents/s\"1";
  a.mem_penalty = 3;
  a.has_stat = true;
  a.stat.runtime_ns = 123;
  a.stat.wait_ns = 45;
  a.stat.weight = 200;
  s.cgroups.push_back(a);
  CgroupMetrics b;
  b.path = "/b";
  s.cgroups.push_back(b);
  const std::string text = render_metrics(s);
  EXPECT_NE(text.find("\nagentcg_new_steps_total 7\n"), std::string::npos);
  EXPECT_NE(text.find("\nagentcg_fork_storms_total 2\n"), std::string::npos);
  EXPECT_NE(text.find("\nagentcg_penalties_applied_total 5\n"), std::string::npos);
  EXPECT_NE(text.find("\nagentcg_bpf_dispatches_total 99\n"), std::string::npos);
  EXPECT_NE(text.find("agentcg_mem_penalty{cgroup=\"/agents/s\\\"1\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("agentcg_mem_penalty{cgroup=\"/b\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("agentcg_cgroup_runtime_ns_total{cgroup=\"/agents/s\\\"1\"} 123\n"), std::string::npos);
  EXPECT_NE(text.find("agentcg_cgroup_wait_ns_total{cgroup=\"/agents/s\\\"1\"} 45\n"), std::string::npos);
  EXPECT_EQ(text.find("agentcg_cgroup_runtime_ns_total{cgroup=\"/b\"}"), std::string::npos)
      << "a cgroup without BPF stats must not get zero samples";
  EXPECT_NE(text.find("agentcg_attached{mode=\"agentcg\"} 1\n"), std::string::npos);
  // Every sample's family is introduced by # HELP and # TYPE, once.
  std::istringstream in(text);
  std::set<std::string> help, type;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# HELP ", 0) == 0) {
      EXPECT_TRUE(help.insert(line.substr(7, line.find(' ', 7) - 7)).second) << line;
    } else if (line.rfind("# TYPE ", 0) == 0) {
      EXPECT_TRUE(type.insert(line.substr(7, line.find(' ', 7) - 7)).second) << line;
    } else {
      const std::string name = line.substr(0, line.find_first_of("{ "));
      EXPECT_TRUE(help.count(name)) << "no # HELP before " << line;
      EXPECT_TRUE(type.count(name)) << "no # TYPE before " << line;
    }
  }
  for (std::uint32_t i = 0; i < AGENTCG_NR_COUNTERS; i++)
    EXPECT_TRUE(help.count(std::string("agentcg_") + agentcg_counter_name(i) + "_total"));
}

}  // namespace
}  // namespace agentcg::live
