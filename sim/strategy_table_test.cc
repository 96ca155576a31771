// SPDX-License-Identifier: GPL-2.0-only
// --strategies in the simulator: the worked example of agentcg/strategy.h
// (weight_pct 300 on one of two equal cgroups gives it 3/4 of the CPU), a
// PID rule by comm (that task's slice; the cgroup's share unchanged),
// no strategies = the run without them byte for byte, determinism, and the
// table's first-match-by-name and PID-over-cgroup precedence.
#include "sim/strategy_table.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/api.h"
#include "sim/trace/trace.h"

namespace agentcg::sim {
namespace {

constexpr std::uint64_t kSec = 1000000000;

trace::Op run_op(std::uint64_t ns) {
  trace::Op o;
  o.kind = trace::OpKind::kRun;
  o.amount = trace::Value::fixed(ns);
  return o;
}

trace::Trace two_groups() {
  trace::Trace t;
  t.name = "strategies";
  t.machine.cpus = 1;
  t.duration_ns = 4 * kSec;
  for (const char* cg : {"/a", "/b"}) {
    trace::CgroupSpec c;
    c.path = cg;
    t.cgroups.push_back(c);
  }
  std::int64_t pid = 1;
  for (const char* cg : {"/a", "/a", "/b", "/b"}) {
    trace::ProcessSpec p;
    p.pid = pid++;
    p.cgroup = cg;
    p.comm = pid == 2 ? "hot" : "hog";
    p.start_ns = 0;
    p.ops = {run_op(10 * kSec)};
    t.processes.push_back(std::move(p));
  }
  trace::validate(t);
  return t;
}

nlohmann::json run_with(const trace::Trace& t, const std::string& strategies) {
  RunOptions o;
  o.policy = "agentcg";
  if (!strategies.empty()) o.strategies = strategy::parse_text(strategies, "test");
  return run(t, o);
}

double share(const nlohmann::json& r, const std::string& cg) { return r["cgroups"][cg]["cpu_share"].get<double>(); }

TEST(SimStrategies, WeightPctGivesTheCgroupItsMultipliedShare) {
  const auto t = two_groups();
  const auto base = run_with(t, "");
  EXPECT_NEAR(share(base, "/a"), 0.5, 0.02);
  const std::string s = R"({"name": "a-up", "selector": {"cgroup": "/a"}, "action": {"weight_pct": 300}})";
  const auto up = run_with(t, s);
  EXPECT_NEAR(share(up, "/a"), 0.75, 0.02);
  EXPECT_NEAR(share(up, "/b"), 0.25, 0.02);
  EXPECT_EQ(dump_results(up), dump_results(run_with(t, s)));  // deterministic
  // An empty strategy set is the plain run, byte for byte.
  EXPECT_EQ(dump_results(base), dump_results(run_with(t, R"({"strategies": []})")));
}

TEST(SimStrategies, WeightPctKeepsVirtualTimeWithTheGroups) {
  // V must advance by what the groups are charged, not by the CPU time: at
  // weight_pct 300, /a's cvtime moves at a third of its service, and when V
  // advanced by the full run time the hog groups fell ever further behind
  // V, so a task waking in a third group (placed near V) waited until they
  // caught up: its wakeups grew to seconds (the live strategy_push stall).
  auto t = two_groups();
  t.duration_ns = 8 * kSec;
  trace::CgroupSpec c;
  c.path = "/c";
  t.cgroups.push_back(c);
  trace::ProcessSpec p;
  p.pid = 100;
  p.cgroup = "/c";
  p.comm = "shell";
  p.start_ns = 0;
  trace::Op sleep;
  sleep.kind = trace::OpKind::kSleep;
  sleep.amount = trace::Value::fixed(20 * kSec / 1000);
  trace::Op loop;
  loop.kind = trace::OpKind::kRepeat;
  loop.set_count(1000);
  loop.set_body({sleep, run_op(kSec / 1000)});
  p.ops = {loop};
  t.processes.push_back(std::move(p));
  trace::validate(t);
  const auto r = run_with(t, R"({"name": "a-up", "selector": {"cgroup": "/a"}, "action": {"weight_pct": 300}})");
  const auto& c_lat = r["cgroups"]["/c"]["wakeup_latency_ns"];
  EXPECT_LT(c_lat["p99"].get<double>(), 50e6) << r["cgroups"]["/c"].dump();
  // /c got the CPU it asked for (1 ms every 21 ms: ~4.7 %), not starved
  EXPECT_GT(share(r, "/c"), 0.04);
  EXPECT_GT(share(r, "/a"), 2.5 * share(r, "/b"));  // the strategy still acts
}

TEST(SimStrategies, PidRuleByCommSetsThatTasksSlice) {
  // The seed's PID rule {execution_time}: "hot" (pid 1, in /a) gets 1 ms
  // slices instead of the 4 ms base slice, so its runs are shorter and the
  // machine switches more (not 4x as many: back-to-back slices of the same
  // task are not switches), and /a's share is unchanged (the rule shapes
  // tasks, not groups).
  const auto t = two_groups();
  const auto base = run_with(t, "");
  const auto r = run_with(t, R"({"name": "hot", "selector": {"comm": "hot"}, "action": {"slice_ns": 1000000}})");
  EXPECT_NEAR(share(r, "/a"), 0.5, 0.02);
  const auto cs0 = base["context_switches"].get<std::uint64_t>();
  const auto cs1 = r["context_switches"].get<std::uint64_t>();
  EXPECT_GT(cs1, cs0 + cs0 / 10) << "base " << cs0 << " with the rule " << cs1;
}

TEST(SimStrategies, TablePrecedence) {
  const StrategyTable table(strategy::parse_text(R"([
    {"name": "a", "selector": {"cgroup": "/x*"}, "action": {"weight_pct": 200}},
    {"name": "b", "selector": {"cgroup": "/x/y"}, "action": {"weight_pct": 50}},
    {"name": "c", "selector": {"pids": [7]}, "action": {"slice_ns": 1000000}},
    {"name": "d", "selector": {"namespace": "ns"}, "action": {"weight_pct": 9}}])", "t"));
  ASSERT_NE(table.of_cgroup("/x/y"), nullptr);
  EXPECT_EQ(table.of_cgroup("/x/y")->weight_pct, 200u);  // first by name wins
  EXPECT_EQ(table.of_cgroup("/z"), nullptr);               // namespace never matches: no pods
  EXPECT_EQ(table.of_task(7, "any", "/x/y")->slice_ns, 1000000u);  // PID rule over cgroup rule
  EXPECT_EQ(table.of_task(8, "any", "/x/y")->weight_pct, 200u);
}

}  // namespace
}  // namespace agentcg::sim
