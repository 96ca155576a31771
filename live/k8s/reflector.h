// SPDX-License-Identifier: GPL-2.0-only
// A Kubernetes list + watch client for one resource (what client-go's
// Reflector does), on cpp-httplib:
//   1. LIST  PATH[?fieldSelector=...]            -> items + metadata.resourceVersion
//   2. WATCH PATH?watch=1&resourceVersion=RV&allowWatchBookmarks=true&timeoutSeconds=T
//      newline-delimited events {"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": ...};
//      each event advances RV; a stream that ends or breaks is re-watched from
//      the last RV after a back-off (0.5 s doubling to 30 s, reset by a good
//      event); "410 Gone" (HTTP status, or an ERROR event with code 410:
//      the RV is too old) forces a new LIST, which replaces the whole set.
// The consumer sees the whole current set (uid -> object) after every
// change, so it never has to apply deltas itself.
//
// Invariants: run() blocks until stop(); one connection at a time; every
// object is keyed by metadata.uid; a malformed event line is counted and
// skipped, never applied. Who calls: node_agent.cc (strategies and the
// node's pods); reflector_test.cc against recorded API-server responses.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

namespace agentcg::k8s {

struct Endpoint {
  std::string scheme_host_port;  // "https://10.0.0.1:443" or "http://127.0.0.1:8080"
  std::string bearer_token;      // service account token ("" = none)
  std::string ca_file;           // CA bundle for https ("" = system default)
};

struct ReflectorStats {
  std::atomic<std::uint64_t> lists{0}, watches{0}, events{0}, gone{0}, broken{0}, bad_events{0}, errors{0};
};

class Reflector {
 public:
  using OnChange = std::function<void(const std::map<std::string, nlohmann::json>& objects)>;
  Reflector(Endpoint ep, std::string path, std::string field_selector, OnChange on_change,
            std::uint32_t watch_timeout_sec = 300);
  void run();
  void stop();
  const ReflectorStats& stats() const { return stats_; }
  std::string resource_version() const;

 private:
  enum class WatchEnd { kTimeout, kBroken, kGone, kError, kStopped };
  bool list();
  WatchEnd watch();
  bool handle_line(const std::string& line);  // false: stop this watch (410)
  void sleep_backoff();
  std::string query(bool watch) const;

  Endpoint ep_;
  std::string path_, field_selector_;
  OnChange on_change_;
  std::uint32_t watch_timeout_sec_;
  std::map<std::string, nlohmann::json> objects_;
  mutable std::mutex mu_;
  std::string rv_;  // guarded by mu_
  std::atomic<bool> stop_{false};
  std::mutex cli_mu_;
  void* active_ = nullptr;  // the watch's httplib::Client, guarded by cli_mu_ (stop() cuts it)
  std::condition_variable cv_;
  std::uint64_t backoff_ms_ = 500;
  bool relist_ = true;
  ReflectorStats stats_;
};

}  // namespace agentcg::k8s
