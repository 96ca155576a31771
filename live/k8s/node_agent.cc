// SPDX-License-Identifier: GPL-2.0-only
// See node_agent.h.
#include "live/k8s/node_agent.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace agentcg::k8s {

using nlohmann::json;

namespace {
std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}
const char* kSa = "/var/run/secrets/kubernetes.io/serviceaccount";
}  // namespace

std::optional<AgentConfig> config_from_env() {
  AgentConfig c;
  const char* node = std::getenv("NODE_NAME");
  if (!node || !*node) return std::nullopt;
  c.node_name = node;
  if (const char* api = std::getenv("AGENTCG_K8S_API"); api && *api) {
    c.endpoint.scheme_host_port = api;
    if (const char* tok = std::getenv("AGENTCG_K8S_TOKEN_FILE")) c.endpoint.bearer_token = read_all(tok);
    return c;
  }
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port) return std::nullopt;
  const std::string h = host;
  c.endpoint.scheme_host_port = "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port;
  c.endpoint.bearer_token = read_all(std::string(kSa) + "/token");
  c.endpoint.ca_file = std::string(kSa) + "/ca.crt";
  return c;
}

std::vector<strategy::Strategy> strategies_of(const std::map<std::string, json>& objs, std::uint64_t* invalid,
                                              std::string* why) {
  std::vector<strategy::Strategy> out;
  for (const auto& [uid, o] : objs) {
    const std::string ns = o.value("/metadata/namespace"_json_pointer, "");
    const std::string name = o.value("/metadata/name"_json_pointer, "");
    const json spec = o.value("spec", json::object());
    json doc = json::object();
    doc["name"] = (ns + "-" + name).substr(0, 63);
    while (!doc["name"].get<std::string>().empty() && doc["name"].get<std::string>().back() == '-')
      doc["name"] = doc["name"].get<std::string>().substr(0, doc["name"].get<std::string>().size() - 1);
    doc["selector"] = spec.value("selector", json::object());
    if (doc["selector"].is_object()) doc["selector"]["namespace"] = ns;  // own namespace only
    doc["action"] = spec.value("action", json::object());
    try {
      auto one = strategy::parse_document(doc, "SchedulingStrategy " + ns + "/" + name);
      out.push_back(std::move(one.at(0)));
    } catch (const strategy::StrategyError& e) {
      ++*invalid;
      *why = e.what();
    }
  }
  try {
    strategy::normalize(out, "SchedulingStrategy");
  } catch (const strategy::StrategyError& e) {  // two objects cut to one name
    ++*invalid;
    *why = e.what();
    out.clear();
  }
  return out;
}

monitor::PodInfo pod_of(const json& pod) {
  monitor::PodInfo p;
  p.uid = pod.value("/metadata/uid"_json_pointer, "");
  p.ns = pod.value("/metadata/namespace"_json_pointer, "");
  p.name = pod.value("/metadata/name"_json_pointer, "");
  p.node = pod.value("/spec/nodeName"_json_pointer, "");
  const json labels = pod.value("/metadata/labels"_json_pointer, json::object());
  if (labels.is_object())
    for (const auto& [k, v] : labels.items())
      if (v.is_string()) p.labels[k] = v.get<std::string>();
  for (const char* key : {"containerStatuses", "initContainerStatuses"}) {
    const json st = pod.value(json::json_pointer("/status/" + std::string(key)), json::array());
    if (!st.is_array()) continue;
    for (const auto& c : st) {
      const std::string id = c.value("containerID", "");
      if (!id.empty()) p.containers[monitor::strip_runtime_prefix(id)] = c.value("name", "");
    }
  }
  return p;
}

NodeAgent::NodeAgent(AgentConfig cfg, OnStrategies on_strategies, OnPods on_pods, OnPodMetrics on_pod_metrics)
    : cfg_(std::move(cfg)) {
  pod_metrics_ = std::make_unique<Reflector>(
      cfg_.endpoint, "/apis/agentcg.io/v1alpha1/podschedulingmetrics", "",
      [on_pod_metrics](const std::map<std::string, json>& objs) {
        std::vector<monitor::PodMetricsSelector> sel;
        for (const auto& [uid, o] : objs) {
          monitor::PodMetricsSelector s;
          s.ns = o.value("/metadata/namespace"_json_pointer, "");
          const json l = o.value("/spec/labels"_json_pointer, json::object());
          if (l.is_object())
            for (const auto& [k, v] : l.items())
              if (v.is_string()) s.labels[k] = v.get<std::string>();
          sel.push_back(std::move(s));
        }
        if (on_pod_metrics) on_pod_metrics(std::move(sel));
      },
      cfg_.watch_timeout_sec);
  strategies_ = std::make_unique<Reflector>(
      cfg_.endpoint, "/apis/agentcg.io/v1alpha1/schedulingstrategies", "",
      [this, on_strategies](const std::map<std::string, json>& objs) {
        std::uint64_t bad = 0;
        std::string why;
        auto all = strategies_of(objs, &bad, &why);
        invalid_ = bad;
        on_strategies(std::move(all));
      },
      cfg_.watch_timeout_sec);
  pods_ = std::make_unique<Reflector>(
      cfg_.endpoint, "/api/v1/pods", "spec.nodeName=" + cfg_.node_name,
      [on_pods](const std::map<std::string, json>& objs) {
        std::vector<monitor::PodInfo> pods;
        for (const auto& [uid, o] : objs) pods.push_back(pod_of(o));
        on_pods(std::move(pods));
      },
      cfg_.watch_timeout_sec);
}

NodeAgent::~NodeAgent() { stop(); }

void NodeAgent::start() {
  t1_ = std::thread([this] { strategies_->run(); });
  t2_ = std::thread([this] { pods_->run(); });
  t3_ = std::thread([this] { pod_metrics_->run(); });
}

void NodeAgent::stop() {
  strategies_->stop();
  pods_->stop();
  pod_metrics_->stop();
  if (t1_.joinable()) t1_.join();
  if (t2_.joinable()) t2_.join();
  if (t3_.joinable()) t3_.join();
}

}  // namespace agentcg::k8s
