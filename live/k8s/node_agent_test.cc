// SPDX-License-Identifier: GPL-2.0-only
// The node agent against recorded API-server transcripts (testdata/, the
// only stand-in for an API server) served by a cpp-httplib server on
// 127.0.0.1: a strategy created in the API server (watch ADDED) reaches the
// agent, survives a watch cut inside an event (re-watched from the last
// resourceVersion, the BOOKMARK's) and a 410 Gone (relisted), an invalid
// object is skipped and counted, and a deleted strategy is removed. The
// node's pods arrive with names, labels and container names; the
// PodSchedulingMetrics selectors arrive and select that pod.
#include "live/k8s/node_agent.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include <httplib.h>

namespace agentcg::k8s {
namespace {

std::string data(const std::string& name) {
  std::ifstream in("live/k8s/testdata/" + name);  // tests run in the source root
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << name;
  return ss.str();
}

// The stand-in API server: a script of responses per resource.
class RecordedApiServer {
 public:
  RecordedApiServer() {
    srv_.Get("/apis/agentcg.io/v1alpha1/schedulingstrategies", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      log_.push_back(req.has_param("watch") ? "watch rv=" + req.get_param_value("resourceVersion") : "list");
      if (!req.has_param("watch")) {
        res.set_content(data(lists_++ == 0 ? "strategies_list_1.json" : "strategies_list_2.json"), "application/json");
        return;
      }
      const int n = watches_++;
      if (n == 0) return cut_stream(res, data("strategies_watch_1.jsonl"));
      if (n == 1) return res.set_content(data("strategies_watch_2.jsonl"), "application/json");
      held_stream(res, data("strategies_watch_3.jsonl"));
    });
    srv_.Get("/apis/agentcg.io/v1alpha1/podschedulingmetrics", [this](const httplib::Request& req, httplib::Response& res) {
      if (!req.has_param("watch")) return res.set_content(data("podschedulingmetrics_list.json"), "application/json");
      held_stream(res, "");
    });
    srv_.Get("/api/v1/pods", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      pod_selector_ = req.get_param_value("fieldSelector");
      if (!req.has_param("watch")) return res.set_content(data("pods_list.json"), "application/json");
      held_stream(res, "");
    });
    port_ = srv_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { srv_.listen_after_bind(); });
  }
  ~RecordedApiServer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    srv_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  std::vector<std::string> log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }
  std::string pod_selector() {
    std::lock_guard<std::mutex> lock(mu_);
    return pod_selector_;
  }

 private:
  // Sends `body` then drops the connection without ending the chunked
  // response: the client sees a cut stream.
  void cut_stream(httplib::Response& res, std::string body) {
    res.set_chunked_content_provider("application/json", [body](size_t, httplib::DataSink& sink) {
      sink.write(body.data(), body.size());
      return false;
    });
  }
  // Sends `body` and keeps the watch open until the server shuts down.
  void held_stream(httplib::Response& res, std::string body) {
    res.set_chunked_content_provider("application/json", [this, body](size_t off, httplib::DataSink& sink) {
      if (off == 0 && !body.empty()) {
        sink.write(body.data(), body.size());
        return true;
      }
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(200), [this] { return done_; });
      if (done_ || !sink.is_writable()) {
        sink.done();
        return false;
      }
      return true;
    });
  }

  httplib::Server srv_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  int lists_ = 0, watches_ = 0;
  std::vector<std::string> log_;
  std::string pod_selector_;
};

TEST(NodeAgent, StrategiesSurviveBrokenWatchAnd410AndDeletesApply) {
  RecordedApiServer api;
  AgentConfig cfg;
  cfg.endpoint.scheme_host_port = "http://127.0.0.1:" + std::to_string(api.port());
  cfg.node_name = "node-1";
  cfg.watch_timeout_sec = 30;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::vector<std::string>> seen;  // strategy names after each change
  std::vector<monitor::PodInfo> pods;
  std::vector<monitor::PodMetricsSelector> psm;
  NodeAgent agent(
      cfg,
      [&](std::vector<strategy::Strategy> all) {
        std::vector<std::string> names;
        for (const auto& s : all) names.push_back(s.name);
        std::lock_guard<std::mutex> lock(mu);
        seen.push_back(names);
        cv.notify_all();
      },
      [&](std::vector<monitor::PodInfo> p) {
        std::lock_guard<std::mutex> lock(mu);
        pods = std::move(p);
        cv.notify_all();
      },
      [&](std::vector<monitor::PodMetricsSelector> s) {
        std::lock_guard<std::mutex> lock(mu);
        psm = std::move(s);
        cv.notify_all();
      });
  agent.start();
  const std::vector<std::string> final_set = {"agents-tests-batch"};
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return !seen.empty() && seen.back() == final_set && !pods.empty() && !psm.empty(); }))
        << "the agent did not reach the final set";
  }
  agent.stop();
  // What the agent saw, in order: list 1, ADDED, relist (the invalid
  // bad-slice skipped), DELETED.
  const std::vector<std::vector<std::string>> want = {
      {"agents-coders-fast"},
      {"agents-coders-fast", "agents-tests-batch"},
      {"agents-coders-fast", "agents-tests-batch"},
      {"agents-tests-batch"}};
  EXPECT_EQ(seen, want);
  // The requests: re-watch from the BOOKMARK's resourceVersion after the
  // cut, relist after the 410, watch from the new list's version.
  const std::vector<std::string> log = api.log();
  const std::vector<std::string> want_log = {"list", "watch rv=100", "watch rv=105", "list", "watch rv=300"};
  ASSERT_GE(log.size(), want_log.size());
  EXPECT_EQ(std::vector<std::string>(log.begin(), log.begin() + 5), want_log);
  const auto& st = agent.strategies().stats();
  EXPECT_EQ(st.lists.load(), 2u);
  EXPECT_EQ(st.gone.load(), 1u);
  EXPECT_GE(st.broken.load(), 1u);
  EXPECT_EQ(agent.invalid_strategies(), 1u);
  // The selector of a namespaced strategy is pinned to its namespace.
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0].name, "coder-0");
  EXPECT_EQ(pods[0].ns, "agents");
  EXPECT_EQ(pods[0].labels.at("app"), "coder");
  EXPECT_EQ(pods[0].containers.at("4b825dc642cb6eb9a060e54bf8d69288fbee4904"), "main");
  EXPECT_EQ(api.pod_selector(), "spec.nodeName=node-1");
  // PodSchedulingMetrics: namespace + labels select the pods with series.
  ASSERT_EQ(psm.size(), 1u);
  EXPECT_EQ(psm[0].ns, "agents");
  EXPECT_EQ(psm[0].labels.at("app"), "coder");
  EXPECT_TRUE(monitor::pod_selected(psm, &pods[0]));
}

TEST(NodeAgent, StrategyNamespaceIsForced) {
  std::map<std::string, nlohmann::json> objs;
  objs["u1"] = nlohmann::json::parse(R"({"metadata": {"name": "x", "namespace": "team-a", "uid": "u1"},
      "spec": {"selector": {"namespace": "team-b", "cgroup": "/a*"}, "action": {"weight_pct": 200}}})");
  std::uint64_t bad = 0;
  std::string why;
  const auto all = strategies_of(objs, &bad, &why);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(*all[0].selector.ns, "team-a");
  EXPECT_EQ(all[0].name, "team-a-x");
  EXPECT_EQ(bad, 0u);
}

}  // namespace
}  // namespace agentcg::k8s
