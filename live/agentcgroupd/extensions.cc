// SPDX-License-Identifier: GPL-2.0-only
// See extensions.h.
#include "live/agentcgroupd/extensions.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "live/agentcgroupd/daemon_logic.h"
#include "live/http/bounded_server.h"
#include "live/k8s/node_agent.h"
#include "live/monitor/sched_monitor.h"
#include "live/strategy/api.h"

namespace agentcg::live {

using nlohmann::json;

namespace {
constexpr std::uint64_t kMonitorRefreshNs = 1000000000ULL;  // cgroup walk + map read
constexpr std::uint64_t kResolveNs = 1000000000ULL;         // /proc scan for PID rules

void log_line(const char* level, const std::string& msg) {
  std::fprintf(stderr, "agentcgroupd: %s: %s\n", level, msg.c_str());
}
}  // namespace

Extensions::Extensions()
    : pods_(std::make_shared<monitor::PodDirectory>()),
      pods_mu_(std::make_shared<std::mutex>()),
      pod_metrics_(std::make_shared<std::vector<monitor::PodMetricsSelector>>()) {}

Extensions::~Extensions() { stop(); }

void Extensions::start(const config::Config& cfg, const std::string& mode_override,
                       const std::string& config_path) {
  mode_ = mode_override.empty() ? cfg.daemon.mode : mode_override;
  if (cfg.monitor.sched_monitor) {
    monitor_ = std::make_unique<monitor::SchedMonitor>();
    if (monitor_->start()) {
      cgroup2_root_ = monitor_->cgroup2_root();
      log_line("info", "scheduler monitor attached to the sched_* tracepoints (cgroup v2 at " + cgroup2_root_ + ")");
    } else {
      log_line("warn", "scheduler monitor not loaded: " + monitor_->why());
    }
  }
  if (const char* env = std::getenv("AGENTCG_CGROUP2_ROOT"); cgroup2_root_.empty() && env && *env) cgroup2_root_ = env;
  if (cgroup2_root_.empty()) {
    const auto mi = read_small_file("/proc/self/mountinfo");
    cgroup2_root_ = mi ? monitor::cgroup2_mount_of(*mi) : "";
  }
  store_ = std::make_unique<strategy::StrategyStore>(cfg.api.state_file);
  if (std::string err = store_->load(); !err.empty())
    log_line("error", "strategy state file rejected, starting with no local strategies: " + err);
  if (!cfg.api.listen.empty()) {
    std::string why;
    auto tokens = strategy::load_tokens(cfg.api.token_file, &why);
    const auto colon = cfg.api.listen.rfind(':');
    std::string host = cfg.api.listen.substr(0, colon);
    if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    const int port = std::atoi(cfg.api.listen.substr(colon + 1).c_str());
    if (cfg.api.listen.rfind("unix:", 0) == 0) {
      log_line("error", "api.listen: unix sockets need cpp-httplib >= 0.13 (Debian bookworm has 0.11): API off");
    } else if (tokens.empty()) {
      log_line("error", "strategies API off: " + why);
    } else {
      api_ = std::make_unique<BoundedServer>();  // bounded request heads (live/http)
      strategy::ApiHooks hooks;
      hooks.health_json = [this] {
        json j{{"mode", mode_}, {"monitor_loaded", monitor_ && monitor_->loaded()}};
        if (scx_) j["scx"] = {{"running", scx_->running()}, {"attached", scx_->attached()}, {"why", scx_->why()}};
        return j.dump();
      };
      hooks.resolved_json = [this] {
        std::lock_guard<std::mutex> lock(mu_);
        return resolved_json_;
      };
      hooks.config_path = config_path;
      hooks.apply_config = [] { ::kill(::getpid(), SIGHUP); };  // the daemon's own reload path
      strategy::add_api_routes(*api_, *store_, std::move(tokens), std::move(hooks));
      if (!api_->bind_to_port(host.c_str(), port)) {
        log_line("error", "strategies API: cannot listen on " + cfg.api.listen);
        api_.reset();
      } else {
        api_thread_ = std::thread([this] { api_->listen_after_bind(); });
        log_line("info", "strategies API on http://" + cfg.api.listen + "/api/v1/");
      }
    }
  }
  if (auto kc = k8s::config_from_env()) {
    auto pods = pods_;
    auto pods_mu = pods_mu_;
    strategy::StrategyStore* store = store_.get();
    k8s_ = std::make_unique<k8s::NodeAgent>(
        *kc, [store](std::vector<strategy::Strategy> all) { store->set_cluster(std::move(all)); },
        [pods, pods_mu](std::vector<monitor::PodInfo> list) {
          std::lock_guard<std::mutex> lock(*pods_mu);
          pods->clear();
          for (auto& p : list) pods->upsert(std::move(p));
        },
        [sel = pod_metrics_, pods_mu](std::vector<monitor::PodMetricsSelector> list) {
          std::lock_guard<std::mutex> lock(*pods_mu);
          *sel = std::move(list);
        });
    k8s_->start();
    log_line("info", "Kubernetes node agent: watching SchedulingStrategy and the pods of node " + kc->node_name +
                         " at " + kc->endpoint.scheme_host_port);
  }
}

bool Extensions::attach_external(const config::Config& cfg, const std::string& mode) {
  if (mode == "none") {
    log_line("info", "daemon.mode none: no scheduler attached (the kernel's default), monitor only");
    return true;
  }
  if (!scx_)
    scx_ = std::make_unique<ScxSupervisor>(cfg.supervisor.scx_dir, cfg.supervisor.scheduler_name,
                                           cfg.supervisor.max_time_watchdog, cfg.supervisor.max_time_sec);
  struct timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  if (!scx_->start(static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(ts.tv_nsec))) {
    log_line("error", "daemon.mode scx: " + scx_->why());
    return false;
  }
  log_line("info", "daemon.mode scx: started " + scx_->path());
  return true;
}

void Extensions::add_routes(httplib::Server& srv) {
  srv.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
}

void Extensions::resolve_and_apply(bpf_object* obj) {
  const auto all = store_->effective();
  std::vector<strategy::CgroupInfo> cgroups;
  if (!cgroup2_root_.empty())
    for (const auto& e : walk_cgroups(cgroup2_root_)) cgroups.push_back({e.path, e.id});
  bool pid_level = false;
  for (const auto& s : all) pid_level = pid_level || s.selector.pid_level();
  const auto tasks = pid_level ? strategy::read_tasks() : std::vector<strategy::TaskInfo>{};
  strategy::Resolved r;
  {
    std::lock_guard<std::mutex> lock(*pods_mu_);
    r = strategy::resolve(all, cgroups, tasks, *pods_);
  }
  bpf_map* mc = obj ? bpf_object__find_map_by_name(obj, "strategy_cgrp") : nullptr;
  bpf_map* mp = obj ? bpf_object__find_map_by_name(obj, "strategy_pid") : nullptr;
  maps_present_ = mc && mp;
  if (obj != applied_obj_) applied_ = {};  // a new scheduler object has empty maps
  if (maps_present_) {
    // Deletes first, then upserts: an entry is never missing between its
    // old and new value (update in place), and removed rules stop at once.
    for (const auto& [id, e] : applied_.cgroups)
      if (!r.cgroups.count(id)) bpf_map__delete_elem(mc, &id, sizeof(id), 0);
    for (const auto& [pid, e] : applied_.pids)
      if (!r.pids.count(pid)) bpf_map__delete_elem(mp, &pid, sizeof(pid), 0);
    for (const auto& [id, e] : r.cgroups)
      if (bpf_map__update_elem(mc, &id, sizeof(id), &e.action, sizeof(e.action), BPF_ANY) != 0) apply_errors_++;
    for (const auto& [pid, e] : r.pids)
      if (bpf_map__update_elem(mp, &pid, sizeof(pid), &e.action, sizeof(e.action), BPF_ANY) != 0) apply_errors_++;
    // The hot path looks the two maps up only while this count is non-zero.
    if (bpf_map* mn = bpf_object__find_map_by_name(obj, "strategy_count")) {
      const std::uint32_t zero = 0;
      const auto n = static_cast<std::uint32_t>(r.cgroups.size() + r.pids.size());
      if (bpf_map__update_elem(mn, &zero, sizeof(zero), &n, sizeof(n), BPF_ANY) != 0) apply_errors_++;
    }
  }
  applied_obj_ = obj;
  json cg = json::array(), pids = json::array();
  for (const auto& [id, e] : r.cgroups)
    cg.push_back({{"cgroup_id", id}, {"cgroup", e.what}, {"strategy", e.strategy}});
  for (const auto& [pid, e] : r.pids) pids.push_back({{"pid", pid}, {"task", e.what}, {"strategy", e.strategy}});
  json j{{"generation", store_->generation()}, {"cgroups", cg}, {"pids", pids}, {"applied", maps_present_}};
  if (!maps_present_)
    j["why_not_applied"] = mode_ == "agentcg" || mode_ == "flatcg"
                               ? "the loaded scheduler has no strategy maps"
                               : "daemon.mode " + mode_ + " runs no agentcg scheduler: strategies are resolved, not applied";
  applied_ = std::move(r);
  std::lock_guard<std::mutex> lock(mu_);
  resolved_json_ = j.dump();
}

void Extensions::tick(std::uint64_t now_ns, bpf_object* scheduler) {
  if (scx_) scx_->tick(now_ns);
  if (!store_) return;
  const std::uint64_t gen = store_->generation();
  // The periodic re-resolve (new cgroups and PIDs matching a rule) only
  // while some strategy exists: it walks the whole cgroup tree, which cost
  // the daemon CPU every second for nothing (issue 14).
  const bool periodic = now_ns - resolved_at_ns_ >= kResolveNs && !store_->effective().empty();
  if (gen != applied_gen_ || scheduler != applied_obj_ || periodic) {
    resolve_and_apply(scheduler);
    applied_gen_ = gen;
    resolved_at_ns_ = now_ns;
  }
}

std::string Extensions::metrics_text(std::uint64_t now_ns) {
  if (monitor_ && (monitor_text_.empty() || now_ns - monitor_at_ns_ >= kMonitorRefreshNs)) {
    std::lock_guard<std::mutex> lock(*pods_mu_);
    monitor_text_ = monitor::render_monitor_metrics(monitor_->snapshot(), *pods_, *pod_metrics_);
    monitor_at_ns_ = now_ns;
  }
  std::ostringstream o;
  o << monitor_text_;
  o << "# HELP agentcg_strategies strategies in effect (local API + Kubernetes)\n# TYPE agentcg_strategies gauge\n";
  o << "agentcg_strategies " << (store_ ? store_->effective().size() : 0) << '\n';
  o << "# HELP agentcg_strategy_targets cgroups and PIDs the strategies resolve to\n# TYPE agentcg_strategy_targets gauge\n";
  o << "agentcg_strategy_targets{kind=\"cgroup\"} " << applied_.cgroups.size() << '\n';
  o << "agentcg_strategy_targets{kind=\"pid\"} " << applied_.pids.size() << '\n';
  o << "# HELP agentcg_strategy_applied 1 when the scheduler's strategy maps receive the resolved entries\n# TYPE agentcg_strategy_applied gauge\n";
  o << "agentcg_strategy_applied " << (maps_present_ ? 1 : 0) << '\n';
  o << "# HELP agentcg_strategy_apply_errors_total failed strategy map updates\n# TYPE agentcg_strategy_apply_errors_total counter\n";
  o << "agentcg_strategy_apply_errors_total " << apply_errors_ << '\n';
  if (scx_) {
    o << "# HELP agentcg_scx_running 1 while the supervised sched_ext binary runs\n# TYPE agentcg_scx_running gauge\n";
    o << "agentcg_scx_running " << (scx_->running() ? 1 : 0) << '\n';
    o << "# HELP agentcg_scx_restarts_total restarts of the supervised scheduler\n# TYPE agentcg_scx_restarts_total counter\n";
    o << "agentcg_scx_restarts_total " << scx_->restarts() << '\n';
    o << "# HELP agentcg_scx_watchdog_kills_total stops by scheduler.max_time_watchdog\n# TYPE agentcg_scx_watchdog_kills_total counter\n";
    o << "agentcg_scx_watchdog_kills_total " << scx_->watchdog_kills() << '\n';
  }
  if (k8s_) {
    const auto& s = k8s_->strategies().stats();
    const auto& p = k8s_->pods().stats();
    o << "# HELP agentcg_k8s_lists_total LIST requests (resource=strategies|pods)\n# TYPE agentcg_k8s_lists_total counter\n";
    o << "agentcg_k8s_lists_total{resource=\"strategies\"} " << s.lists << "\nagentcg_k8s_lists_total{resource=\"pods\"} " << p.lists << '\n';
    o << "# HELP agentcg_k8s_watch_gone_total watches ended by 410 Gone (relisted)\n# TYPE agentcg_k8s_watch_gone_total counter\n";
    o << "agentcg_k8s_watch_gone_total{resource=\"strategies\"} " << s.gone << "\nagentcg_k8s_watch_gone_total{resource=\"pods\"} " << p.gone << '\n';
    o << "# HELP agentcg_k8s_watch_broken_total watches cut (re-watched after a back-off)\n# TYPE agentcg_k8s_watch_broken_total counter\n";
    o << "agentcg_k8s_watch_broken_total{resource=\"strategies\"} " << s.broken << "\nagentcg_k8s_watch_broken_total{resource=\"pods\"} " << p.broken << '\n';
    o << "# HELP agentcg_k8s_invalid_strategies SchedulingStrategy objects skipped as invalid\n# TYPE agentcg_k8s_invalid_strategies gauge\n";
    o << "agentcg_k8s_invalid_strategies " << k8s_->invalid_strategies() << '\n';
  }
  return o.str();
}

void Extensions::stop() {
  if (k8s_) k8s_->stop();
  k8s_.reset();
  if (api_) api_->stop();
  if (api_thread_.joinable()) api_thread_.join();
  api_.reset();
  if (scx_) scx_->stop();
  if (monitor_) monitor_->stop();
}

}  // namespace agentcg::live
