// SPDX-License-Identifier: GPL-2.0-only
// The local API end to end over HTTP on 127.0.0.1 (a real cpp-httplib
// server and client): token file permission check, 401 without a token,
// create/list/delete, 400 with the JSON path for a malformed body and 409
// for a conflict, both leaving the state file byte-identical, 413 for an
// oversized body, runtime-config apply (validated; a bad YAML changes
// nothing) and status, health without a token.
#include "live/strategy/api.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace agentcg::strategy {
namespace {

using nlohmann::json;

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/agentcg-api-XXXXXX";
    dir_ = mkdtemp(tmpl);
    tokens_ = dir_ + "/tokens";
    std::ofstream(tokens_) << "# comment\n" << kToken << "\n";
    chmod(tokens_.c_str(), 0644);
    std::string why;
    EXPECT_TRUE(load_tokens(tokens_, &why).empty());
    EXPECT_NE(why.find("expected 0600"), std::string::npos) << why;
    chmod(tokens_.c_str(), 0600);
    auto toks = load_tokens(tokens_, &why);
    ASSERT_EQ(toks.size(), 1u) << why;
    config_ = dir_ + "/config.yaml";
    std::ofstream(config_) << "daemon:\n  mode: none\n";
    store_ = std::make_unique<StrategyStore>(dir_ + "/strategies.json");
    ApiHooks hooks;
    hooks.config_path = config_;
    hooks.apply_config = [this] { applied_++; };
    hooks.resolved_json = [] { return std::string(R"({"cgroups": [], "pids": []})"); };
    add_api_routes(srv_, *store_, toks, hooks);
    port_ = srv_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { srv_.listen_after_bind(); });
  }
  void TearDown() override {
    srv_.stop();
    thread_.join();
    std::system(("rm -rf " + dir_).c_str());
  }
  httplib::Client client(bool auth = true) {
    httplib::Client c("127.0.0.1", port_);
    if (auth) c.set_bearer_token_auth(kToken);
    return c;
  }
  static constexpr const char* kToken = "test-token-0123456789abcdef";
  std::string dir_, tokens_, config_;
  std::unique_ptr<StrategyStore> store_;
  httplib::Server srv_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> applied_{0};
};

TEST_F(ApiTest, StrategiesLifecycle) {
  auto anon = client(false);
  auto r = anon.Get("/api/v1/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["status"], "ok");
  r = anon.Get("/api/v1/strategies");
  EXPECT_EQ(r->status, 401);
  auto wrong = client(false);
  wrong.set_bearer_token_auth("test-token-0123456789abcdeX");
  EXPECT_EQ(wrong.Get("/api/v1/strategies")->status, 401);

  auto c = client();
  r = c.Post("/api/v1/strategies", R"({"name": "fast", "selector": {"cgroup": "/agents/*"}, "action": {"weight_pct": 300}})",
             "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 201) << r->body;
  const std::string state = slurp(dir_ + "/strategies.json");
  EXPECT_NE(state.find("\"fast\""), std::string::npos);

  // Malformed: 400 naming the path; conflict: 409; neither changes the file.
  r = c.Post("/api/v1/strategies", R"({"strategies": [{"name": "ok2", "selector": {"pids": [1]}, "action": {"weight_pct": 2}},
               {"name": "bad", "selector": {"pids": [1]}, "action": {"slice_ns": 1}}]})", "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(json::parse(r->body)["error"].get<std::string>().find("strategies[1].action.slice_ns"), std::string::npos) << r->body;
  r = c.Post("/api/v1/strategies", "not json", "application/json");
  EXPECT_EQ(r->status, 400);
  r = c.Post("/api/v1/strategies", R"({"name": "fast", "selector": {"pids": [1]}, "action": {"weight_pct": 2}})", "application/json");
  EXPECT_EQ(r->status, 409);
  r = c.Post("/api/v1/strategies", std::string(2 << 20, ' '), "application/json");
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(slurp(dir_ + "/strategies.json"), state);

  r = c.Get("/api/v1/strategies");
  const auto list = json::parse(r->body)["strategies"];
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["name"], "fast");
  EXPECT_EQ(list[0]["source"], "local");
  EXPECT_EQ(c.Get("/api/v1/strategies/resolved")->status, 200);

  EXPECT_EQ(c.Delete("/api/v1/strategies/nope")->status, 404);
  EXPECT_EQ(c.Delete("/api/v1/strategies/fast")->status, 200);
  EXPECT_TRUE(store_->local().empty());
  EXPECT_EQ(c.Get("/api/v1/nowhere")->status, 404);
}

TEST_F(ApiTest, RuntimeConfig) {
  auto c = client();
  const std::string before = slurp(config_);
  auto r = c.Post("/api/v1/runtime-config/apply", "daemon:\n  mode: sometimes\n", "application/yaml");
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("daemon.mode"), std::string::npos) << r->body;
  EXPECT_EQ(slurp(config_), before);
  EXPECT_EQ(applied_, 0);
  r = c.Post("/api/v1/runtime-config/apply", "daemon:\n  mode: agentcg\nmonitor:\n  poll_interval_ms: 20\n", "application/yaml");
  EXPECT_EQ(r->status, 202) << r->body;
  EXPECT_EQ(applied_, 1);
  EXPECT_NE(slurp(config_).find("poll_interval_ms: 20"), std::string::npos);
  const auto st = json::parse(c.Get("/api/v1/runtime-config/status")->body);
  EXPECT_EQ(st["generation"], 1);
  EXPECT_EQ(st["restart_required"], json::array({"daemon.mode"}));
}

}  // namespace
}  // namespace agentcg::strategy
