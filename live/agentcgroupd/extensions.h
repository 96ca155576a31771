// SPDX-License-Identifier: GPL-2.0-only
// What agentcgroupd runs beside the agentcg scheduler (strategies design), kept out
// of main.cc: the scheduler-tracepoint monitor (live/monitor/, every
// daemon.mode), the strategies (live/strategy/: local API, persisted store,
// resolution into the scheduler's strategy_cgrp / strategy_pid maps), the
// supervised external scheduler of daemon.mode scx (supervisor.h), and the
// Kubernetes node agent (live/k8s/) when the daemon runs in a cluster.
// main.cc calls start() before attaching, attach_external() for modes none
// and scx, tick() from its loop, metrics_text() when it renders /metrics,
// stop() at exit.
//
// Invariants: tick() and metrics_text() run on the daemon's loop thread;
// the API's handlers run on httplib threads and only touch the store (its
// own mutex) and resolved_json_ (under mu_). The scheduler's maps are
// found by name, so a scheduler object without them (not wired, other
// mode) just leaves the strategies unapplied (reported, not an error).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "config/config.h"
#include "live/agentcgroupd/supervisor.h"
#include "live/monitor/pod_map.h"
#include "live/strategy/store.h"

struct bpf_object;
namespace httplib { class Server; }

namespace agentcg::monitor { class SchedMonitor; }
namespace agentcg::k8s { class NodeAgent; }

namespace agentcg::live {

class Extensions {
 public:
  Extensions();
  ~Extensions();

  // config_path: the daemon's config file (runtime-config/apply writes it).
  void start(const config::Config& cfg, const std::string& mode_override, const std::string& config_path);
  // Modes without the agentcg scheduler: none (monitor only) and scx.
  bool attach_external(const config::Config& cfg, const std::string& mode);
  void add_routes(httplib::Server& metrics_server);  // /healthz on the metrics port
  void tick(std::uint64_t now_ns, bpf_object* scheduler);
  std::string metrics_text(std::uint64_t now_ns);
  void stop();

 private:
  void resolve_and_apply(bpf_object* scheduler);

  std::unique_ptr<monitor::SchedMonitor> monitor_;
  std::string monitor_text_;
  std::uint64_t monitor_at_ns_ = 0;
  std::shared_ptr<monitor::PodDirectory> pods_;
  std::shared_ptr<std::mutex> pods_mu_;
  std::shared_ptr<std::vector<monitor::PodMetricsSelector>> pod_metrics_;  // guarded by *pods_mu_
  std::unique_ptr<strategy::StrategyStore> store_;
  std::unique_ptr<httplib::Server> api_;
  std::thread api_thread_;
  std::unique_ptr<ScxSupervisor> scx_;
  std::unique_ptr<k8s::NodeAgent> k8s_;
  std::string cgroup2_root_;
  std::string mode_;

  // Strategy application state (loop thread).
  bpf_object* applied_obj_ = nullptr;
  std::uint64_t applied_gen_ = ~0ULL;
  std::uint64_t resolved_at_ns_ = 0;
  strategy::Resolved applied_;
  std::uint64_t apply_errors_ = 0;
  bool maps_present_ = false;

  std::mutex mu_;
  std::string resolved_json_;  // guarded by mu_ (read by the API thread)
};

}  // namespace agentcg::live
