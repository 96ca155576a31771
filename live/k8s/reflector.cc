// SPDX-License-Identifier: GPL-2.0-only
// See reflector.h.
#include "live/k8s/reflector.h"

#include <algorithm>
#include <chrono>

#include <httplib.h>

namespace agentcg::k8s {

using nlohmann::json;

namespace {

std::unique_ptr<httplib::Client> client_of(const Endpoint& ep, std::uint32_t read_timeout_sec) {
  auto c = std::make_unique<httplib::Client>(ep.scheme_host_port);
  if (!ep.ca_file.empty()) c->set_ca_cert_path(ep.ca_file.c_str());
  c->set_connection_timeout(5, 0);
  c->set_read_timeout(read_timeout_sec, 0);
  if (!ep.bearer_token.empty()) c->set_bearer_token_auth(ep.bearer_token.c_str());
  return c;
}

std::string url_encode(const std::string& s) {
  std::string o;
  static const char* hex = "0123456789ABCDEF";
  for (const unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      o += static_cast<char>(c);
    } else {
      o += '%';
      o += hex[c >> 4];
      o += hex[c & 15];
    }
  }
  return o;
}

}  // namespace

Reflector::Reflector(Endpoint ep, std::string path, std::string field_selector, OnChange on_change,
                     std::uint32_t watch_timeout_sec)
    : ep_(std::move(ep)),
      path_(std::move(path)),
      field_selector_(std::move(field_selector)),
      on_change_(std::move(on_change)),
      watch_timeout_sec_(watch_timeout_sec) {}

std::string Reflector::resource_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rv_;
}

std::string Reflector::query(bool watch) const {
  std::string q;
  auto add = [&](const std::string& kv) { q += (q.empty() ? "?" : "&") + kv; };
  if (!field_selector_.empty()) add("fieldSelector=" + url_encode(field_selector_));
  if (watch) {
    add("watch=1");
    add("resourceVersion=" + url_encode(resource_version()));
    add("allowWatchBookmarks=true");
    add("timeoutSeconds=" + std::to_string(watch_timeout_sec_));
  }
  return path_ + q;
}

void Reflector::sleep_backoff() {
  std::mutex m;
  std::unique_lock<std::mutex> lock(m);
  cv_.wait_for(lock, std::chrono::milliseconds(backoff_ms_), [this] { return stop_.load(); });
  backoff_ms_ = std::min<std::uint64_t>(backoff_ms_ * 2, 30000);
}

bool Reflector::list() {
  stats_.lists++;
  auto cli = client_of(ep_, 30);
  auto res = cli->Get(query(false).c_str());
  if (stop_) return false;
  if (!res || res->status != 200) {
    stats_.errors++;
    return false;
  }
  json doc = json::parse(res->body, nullptr, false);
  if (doc.is_discarded() || !doc.contains("items") || !doc["items"].is_array()) {
    stats_.errors++;
    return false;
  }
  std::map<std::string, json> next;
  for (auto& item : doc["items"]) {
    const std::string uid = item.value("/metadata/uid"_json_pointer, "");
    if (!uid.empty()) next[uid] = item;
  }
  objects_ = std::move(next);
  {
    std::lock_guard<std::mutex> lock(mu_);
    rv_ = doc.value("/metadata/resourceVersion"_json_pointer, "");
  }
  on_change_(objects_);
  return true;
}

bool Reflector::handle_line(const std::string& line) {
  if (line.empty()) return true;
  json ev = json::parse(line, nullptr, false);
  if (ev.is_discarded() || !ev.contains("type") || !ev["type"].is_string() || !ev.contains("object") ||
      !ev["object"].is_object()) {
    stats_.bad_events++;
    return true;
  }
  const std::string type = ev["type"];
  const json& obj = ev["object"];
  if (type == "ERROR") {
    // A Status object; 410 Gone: our resourceVersion is too old: relist.
    if (obj.value("code", 0) == 410) {
      stats_.gone++;
      relist_ = true;
      return false;
    }
    stats_.errors++;
    return false;
  }
  const std::string rv = obj.value("/metadata/resourceVersion"_json_pointer, "");
  if (type == "BOOKMARK") {
    if (!rv.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      rv_ = rv;
    }
    return true;
  }
  const std::string uid = obj.value("/metadata/uid"_json_pointer, "");
  if (uid.empty() || (type != "ADDED" && type != "MODIFIED" && type != "DELETED")) {
    stats_.bad_events++;
    return true;
  }
  stats_.events++;
  if (type == "DELETED")
    objects_.erase(uid);
  else
    objects_[uid] = obj;
  if (!rv.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    rv_ = rv;
  }
  backoff_ms_ = 500;
  on_change_(objects_);
  return true;
}

Reflector::WatchEnd Reflector::watch() {
  stats_.watches++;
  const auto started = std::chrono::steady_clock::now();
  const std::uint64_t events_before = stats_.events;
  auto cli = client_of(ep_, watch_timeout_sec_ + 30);
  {
    std::lock_guard<std::mutex> lock(cli_mu_);
    if (stop_) return WatchEnd::kStopped;
    active_ = cli.get();
  }
  std::string buf;
  bool keep = true;
  int status = 0;
  auto res = cli->Get(
      query(true).c_str(), httplib::Headers{},
      [&](const httplib::Response& r) {
        status = r.status;
        return r.status == 200;
      },
      [&](const char* data, size_t len) {
        buf.append(data, len);
        size_t nl;
        while (keep && (nl = buf.find('\n')) != std::string::npos) {
          const std::string line = buf.substr(0, nl);
          buf.erase(0, nl + 1);
          keep = handle_line(line);
        }
        return keep && !stop_.load();
      });
  {
    std::lock_guard<std::mutex> lock(cli_mu_);
    active_ = nullptr;
  }
  if (stop_) return WatchEnd::kStopped;
  if (status == 410) {
    stats_.gone++;
    relist_ = true;
    return WatchEnd::kGone;
  }
  if (!keep) return relist_ ? WatchEnd::kGone : WatchEnd::kError;
  if (status != 0 && status != 200) {
    stats_.errors++;
    return WatchEnd::kError;
  }
  // The stream ended: the server's timeoutSeconds (clean, all lines whole)
  // or a cut connection (no response, or a partial last line).
  if (!res || !buf.empty()) {
    stats_.broken++;
    return WatchEnd::kBroken;
  }
  // A server that ends every watch at once without events would make a
  // tight loop: treat that as broken (back-off).
  if (stats_.events == events_before && std::chrono::steady_clock::now() - started < std::chrono::seconds(1)) {
    stats_.broken++;
    return WatchEnd::kBroken;
  }
  return WatchEnd::kTimeout;
}

void Reflector::run() {
  while (!stop_) {
    if (relist_) {
      if (!list()) {
        sleep_backoff();
        continue;
      }
      relist_ = false;
    }
    switch (watch()) {
      case WatchEnd::kStopped:
      case WatchEnd::kTimeout:  // re-watch at once from the last resourceVersion
      case WatchEnd::kGone:     // relist at once (client-go does the same)
        break;
      case WatchEnd::kBroken:
      case WatchEnd::kError:
        sleep_backoff();
        break;
    }
  }
}

void Reflector::stop() {
  stop_ = true;
  {
    std::lock_guard<std::mutex> lock(cli_mu_);
    if (active_) static_cast<httplib::Client*>(active_)->stop();
  }
  cv_.notify_all();
}

}  // namespace agentcg::k8s
