// SPDX-License-Identifier: GPL-2.0-only
// The Kubernetes node agent inside agentcgroupd: the API server is the
// control plane (it stores, authenticates, authorises and fans out the
// objects that the strategies design's Manager + MongoDB + per-node polling handle by
// hand). Two list+watch reflectors (reflector.h):
//   SchedulingStrategy (agentcg.io/v1alpha1, all namespaces) -> the
//     cluster strategy set of the StrategyStore; a strategy only ever
//     selects pods of its own namespace (selector.namespace is forced to
//     metadata.namespace, so RBAC on the namespace is RBAC on the rule);
//     the strategy's name is "<namespace>-<name>" (cut to 63);
//   Pods with spec.nodeName = this node -> the PodDirectory (names,
//     labels, container names for /metrics labels and selectors);
//   PodSchedulingMetrics (all namespaces) -> which pods get per-pod series
//     (namespace + spec.labels; spec.metrics and collectionIntervalSec
//     are accepted but every signal is exported at the scrape interval).
// Endpoint: AGENTCG_K8S_API (e.g. http://127.0.0.1:8001 through kubectl
// proxy, or the recorded-response server of the tests), else in-cluster
// (KUBERNETES_SERVICE_HOST/PORT, the service account's token and ca.crt);
// node name from NODE_NAME (the DaemonSet's downward API).
//
// Invariants: callbacks run on the reflector threads and must be
// thread-safe; a SchedulingStrategy whose spec is invalid is skipped and
// counted (the others apply), never partially applied.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config/strategy_file.h"
#include "live/k8s/reflector.h"
#include "live/monitor/pod_map.h"

namespace agentcg::k8s {

struct AgentConfig {
  Endpoint endpoint;
  std::string node_name;
  std::uint32_t watch_timeout_sec = 300;
};

// From the environment (see above); nullopt when not in a cluster.
std::optional<AgentConfig> config_from_env();

// SchedulingStrategy objects -> strategies (invalid ones skipped, counted
// in *invalid with the reason in *why).
std::vector<strategy::Strategy> strategies_of(const std::map<std::string, nlohmann::json>& objs,
                                              std::uint64_t* invalid, std::string* why);
monitor::PodInfo pod_of(const nlohmann::json& pod);

class NodeAgent {
 public:
  using OnStrategies = std::function<void(std::vector<strategy::Strategy>)>;
  using OnPods = std::function<void(std::vector<monitor::PodInfo>)>;
  using OnPodMetrics = std::function<void(std::vector<monitor::PodMetricsSelector>)>;
  NodeAgent(AgentConfig cfg, OnStrategies on_strategies, OnPods on_pods, OnPodMetrics on_pod_metrics = nullptr);
  ~NodeAgent();
  void start();
  void stop();
  const Reflector& strategies() const { return *strategies_; }
  const Reflector& pods() const { return *pods_; }
  const Reflector& pod_metrics() const { return *pod_metrics_; }
  std::uint64_t invalid_strategies() const { return invalid_; }

 private:
  AgentConfig cfg_;
  std::unique_ptr<Reflector> strategies_, pods_, pod_metrics_;
  std::thread t1_, t2_, t3_;
  std::atomic<std::uint64_t> invalid_{0};
};

}  // namespace agentcg::k8s
