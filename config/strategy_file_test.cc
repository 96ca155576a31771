// SPDX-License-Identifier: GPL-2.0-only
// The strategy document: round trip, ids by name, every rejection names the
// JSON path and the expected form, all-or-nothing, selector matching; and
// core's action functions (identity for no action, the worked example of
// agentcg/strategy.h).
#include "config/strategy_file.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace agentcg::strategy {
namespace {

const char* kDoc = R"({"strategies": [
  {"name": "zeta", "selector": {"pids": [42]}, "action": {"priority_boost": 2, "slice_ns": 1000000}},
  {"name": "alpha", "selector": {"cgroup": "/agents/coder-*", "namespace": "agents", "labels": {"app": "coder"}},
   "action": {"weight_pct": 300, "latency_class": "low"}}]})";

TEST(StrategyFile, ParsesSortsAndRoundTrips) {
  const auto all = parse_text(kDoc, "doc");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "alpha");
  EXPECT_EQ(all[0].action.strategy_id, 1u);
  EXPECT_EQ(all[0].action.weight_pct, 300u);
  EXPECT_EQ(all[0].action.latency_class, static_cast<std::uint32_t>(AGENTCG_LAT_LOW));
  EXPECT_FALSE(all[0].selector.pid_level());
  EXPECT_EQ(all[1].name, "zeta");
  EXPECT_TRUE(all[1].selector.pid_level());
  EXPECT_EQ(all[1].action.slice_ns, 1000000u);
  const auto again = parse_text(to_json(all).dump(), "again");
  EXPECT_EQ(to_json(again), to_json(all));
}

void expect_error(const std::string& text, const std::string& needle) {
  try {
    parse_text(text, "req");
    FAIL() << "accepted: " << text;
  } catch (const StrategyError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(StrategyFile, RejectsWithPathAndExpectation) {
  expect_error("{", "req: not valid JSON");
  expect_error(R"({"name": "a", "selector": {}, "action": {"weight_pct": 2}})", "(strategy).selector: expected at least one");
  expect_error(R"({"name": "A_b", "selector": {"pids": [1]}, "action": {"weight_pct": 2}})", "(strategy).name: expected [a-z0-9-]");
  expect_error(R"({"name": "a", "selector": {"pids": [1]}, "action": {"slice_ns": 5}})", "(strategy).action.slice_ns: expected an integer 100000..1000000000, got 5");
  expect_error(R"({"name": "a", "selector": {"pids": [1]}, "action": {"latency_class": "fast"}})", "expected normal, low or batch");
  expect_error(R"({"name": "a", "selector": {"pid": 1}, "action": {"weight_pct": 2}})", "(strategy).selector.pid: unknown key");
  expect_error(R"({"name": "a", "selector": {"cgroup": "agents"}, "action": {"weight_pct": 2}})", "starting with '/'");
  expect_error(R"({"name": "a", "selector": {"pids": [-3]}, "action": {"weight_pct": 2}})", "selector.pids[0]: expected an integer");
  // one bad entry rejects the whole document, duplicates too
  expect_error(R"({"strategies": [{"name": "ok", "selector": {"pids": [1]}, "action": {"weight_pct": 2}},
                                   {"name": "bad", "selector": {"pids": [1]}, "action": {}}]})",
               "strategies[1].action: expected at least one");
  expect_error(R"([{"name": "a", "selector": {"pids": [1]}, "action": {"weight_pct": 2}},
                  {"name": "a", "selector": {"pids": [2]}, "action": {"weight_pct": 2}}])",
               "duplicate strategy name 'a'");
}

TEST(StrategyFile, Matching) {
  const auto all = parse_text(kDoc, "doc");
  const std::string ns = "agents", other = "default";
  const std::map<std::string, std::string> labels{{"app", "coder"}, {"tier", "x"}};
  Target t;
  t.cgroup_path = "/agents/coder-7/tools";  // '*' crosses '/'
  t.ns = &ns;
  t.labels = &labels;
  EXPECT_TRUE(matches_cgroup(all[0].selector, t));
  t.ns = &other;
  EXPECT_FALSE(matches_cgroup(all[0].selector, t));
  t.ns = nullptr;  // not a known pod
  EXPECT_FALSE(matches_cgroup(all[0].selector, t));
  Target p;
  p.cgroup_path = "/x";
  p.pid = 42;
  EXPECT_TRUE(matches_task(all[1].selector, p));
  p.pid = 43;
  EXPECT_FALSE(matches_task(all[1].selector, p));
}

TEST(StrategyCore, ActionFunctions) {
  // No action: identity everywhere (removing a strategy restores the default).
  EXPECT_EQ(agentcg_strategy_slice_ns(nullptr, 4000000), 4000000u);
  EXPECT_EQ(agentcg_strategy_charge_ns(nullptr, 1000), 1000u);
  EXPECT_EQ(agentcg_strategy_vtime_credit_ns(nullptr, 4000000), 0u);
  agentcg_strategy_action a{};
  a.weight_pct = 300;
  EXPECT_EQ(agentcg_strategy_charge_ns(&a, 3000), 1000u);  // charged a third: 3x the share
  a.weight_pct = 50;
  EXPECT_EQ(agentcg_strategy_charge_ns(&a, 3000), 6000u);
  a = {};
  a.slice_ns = 1000000;
  EXPECT_EQ(agentcg_strategy_slice_ns(&a, 4000000), 1000000u);
  a.latency_class = AGENTCG_LAT_LOW;
  EXPECT_EQ(agentcg_strategy_slice_ns(&a, 4000000), 500000u);
  EXPECT_EQ(agentcg_strategy_vtime_credit_ns(&a, 4000000), 4000000u);
  a.priority_boost = 2;
  EXPECT_EQ(agentcg_strategy_vtime_credit_ns(&a, 4000000), 12000000u);
  a = {};
  a.latency_class = AGENTCG_LAT_BATCH;
  EXPECT_EQ(agentcg_strategy_slice_ns(&a, 4000000), 8000000u);
  a.slice_ns = 900000000;
  EXPECT_EQ(agentcg_strategy_slice_ns(&a, 4000000), AGENTCG_STRATEGY_MAX_SLICE_NS);  // clamped
}

}  // namespace
}  // namespace agentcg::strategy
