// SPDX-License-Identifier: GPL-2.0-only
// StrategyStore: persisted (a new store on the same file sees the same
// set), all or nothing (a conflicting batch and an unwritable state file
// change nothing), delete; resolve(): cgroup globs, namespace/labels via
// the pod directory, PID rules by comm and pid, first match by name wins.
#include "live/strategy/store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

namespace agentcg::strategy {
namespace {

std::string temp_dir() {
  char tmpl[] = "/tmp/agentcg-store-XXXXXX";
  return mkdtemp(tmpl);
}

std::vector<Strategy> one(const std::string& json) { return parse_text(json, "t"); }

TEST(StrategyStore, PersistsAndIsAllOrNothing) {
  const std::string dir = temp_dir();
  const std::string file = dir + "/strategies.json";
  {
    StrategyStore s(file);
    EXPECT_EQ(s.load(), "");
    EXPECT_EQ(s.create(one(R"({"name": "b", "selector": {"pids": [7]}, "action": {"priority_boost": 1}})")).status, 201);
    EXPECT_EQ(s.create(one(R"({"name": "a", "selector": {"cgroup": "/x/*"}, "action": {"weight_pct": 200}})")).status, 201);
    // a batch with one existing name adds nothing
    const auto gen = s.generation();
    const auto r = s.create(one(R"([{"name": "c", "selector": {"pids": [1]}, "action": {"weight_pct": 5}},
                                    {"name": "a", "selector": {"pids": [1]}, "action": {"weight_pct": 5}}])"));
    EXPECT_EQ(r.status, 409);
    EXPECT_NE(r.error.find("'a' already exists"), std::string::npos);
    EXPECT_EQ(s.local().size(), 2u);
    EXPECT_EQ(s.generation(), gen);
  }
  StrategyStore again(file);
  EXPECT_EQ(again.load(), "");
  ASSERT_EQ(again.local().size(), 2u);
  EXPECT_EQ(again.local()[0].name, "a");
  EXPECT_EQ(again.local()[0].action.weight_pct, 200u);
  EXPECT_EQ(again.remove("zz").status, 404);
  EXPECT_EQ(again.remove("a").status, 200);
  StrategyStore third(file);
  third.load();
  ASSERT_EQ(third.local().size(), 1u);
  EXPECT_EQ(third.local()[0].name, "b");
  // An unwritable state file: the create fails with 500 and nothing changes.
  if (geteuid() != 0) {  // root writes anyway
    chmod(dir.c_str(), 0500);
    const auto r = third.create(one(R"({"name": "d", "selector": {"pids": [1]}, "action": {"weight_pct": 5}})"));
    EXPECT_EQ(r.status, 500);
    EXPECT_EQ(third.local().size(), 1u);
    chmod(dir.c_str(), 0700);
  }
  // A corrupt state file is reported, not crashed on.
  std::ofstream(file) << "{not json";
  StrategyStore bad(file);
  EXPECT_NE(bad.load().find("not valid JSON"), std::string::npos);
  EXPECT_TRUE(bad.local().empty());
  std::system(("rm -rf " + dir).c_str());
}

TEST(StrategyResolve, CgroupsPodsAndPids) {
  auto all = parse_text(R"([
    {"name": "a-coders", "selector": {"namespace": "agents", "labels": {"app": "coder"}}, "action": {"weight_pct": 300}},
    {"name": "b-tools", "selector": {"cgroup": "/agents/*"}, "action": {"slice_ns": 1000000}},
    {"name": "c-python", "selector": {"comm": "python3", "cgroup": "/agents/*"}, "action": {"priority_boost": 2}},
    {"name": "d-pid", "selector": {"pids": [4242]}, "action": {"latency_class": "low"}}])", "t");
  const std::string uid = "0a1b2c3d-4e5f-6789-abcd-ef0123456789";
  monitor::PodDirectory pods;
  monitor::PodInfo p;
  p.uid = uid;
  p.ns = "agents";
  p.name = "coder-0";
  p.labels = {{"app", "coder"}};
  pods.upsert(p);
  const std::string pod_cg = "/kubepods/burstable/pod" + uid + "/ctr1";
  std::vector<CgroupInfo> cgroups = {{"/", 1}, {"/agents/s1", 10}, {"/other", 11}, {pod_cg, 12}};
  std::vector<TaskInfo> tasks = {{100, "python3", "/agents/s1"}, {101, "bash", "/agents/s1"},
                                 {102, "python3", "/other"}, {4242, "sleep", "/other"}};
  const Resolved r = resolve(all, cgroups, tasks, pods);
  ASSERT_EQ(r.cgroups.size(), 2u);
  EXPECT_EQ(r.cgroups.at(10).strategy, "b-tools");
  EXPECT_EQ(r.cgroups.at(10).action.slice_ns, 1000000u);
  EXPECT_EQ(r.cgroups.at(12).strategy, "a-coders");
  EXPECT_EQ(r.cgroups.at(12).action.weight_pct, 300u);
  ASSERT_EQ(r.pids.size(), 2u);
  EXPECT_EQ(r.pids.at(100).strategy, "c-python");
  EXPECT_EQ(r.pids.at(4242).strategy, "d-pid");
  // Unknown pod (no directory entry): namespace/label selectors do not match.
  const Resolved r2 = resolve(all, cgroups, tasks, monitor::PodDirectory{});
  EXPECT_EQ(r2.cgroups.count(12), 0u);
  // Removing every strategy resolves to nothing (the default behaviour).
  const Resolved r3 = resolve({}, cgroups, tasks, pods);
  EXPECT_TRUE(r3.cgroups.empty());
  EXPECT_TRUE(r3.pids.empty());
}

TEST(StrategyResolve, ReadsThisProcess) {
  const auto tasks = read_tasks();
  bool found = false;
  for (const auto& t : tasks) found = found || t.tgid == static_cast<std::uint32_t>(getpid());
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace agentcg::strategy
