// SPDX-License-Identifier: GPL-2.0-only
// See api.h.
#include "live/strategy/api.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "config/config.h"

namespace agentcg::strategy {

using nlohmann::json;

std::vector<std::string> load_tokens(const std::string& path, std::string* why) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) {
    *why = path + ": " + std::strerror(errno);
    return {};
  }
  if (!S_ISREG(st.st_mode)) {
    *why = path + ": not a regular file";
    return {};
  }
  if (st.st_mode & 077) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    *why = path + ": mode " + mode + " lets group/others read the tokens: expected 0600 (chmod 600)";
    return {};
  }
  std::ifstream in(path);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    if (line.size() < 16) {
      *why = path + ": a token shorter than 16 characters";
      return {};
    }
    out.push_back(line);
  }
  if (out.empty()) *why = path + ": no token in the file";
  return out;
}

bool authorized(const std::string& h, const std::vector<std::string>& tokens) {
  const std::string prefix = "Bearer ";
  if (h.compare(0, prefix.size(), prefix) != 0) return false;
  const std::string given = h.substr(prefix.size());
  bool ok = false;
  for (const auto& t : tokens) {
    // Constant time in the token's content (lengths are not secret).
    unsigned diff = given.size() != t.size();
    for (size_t i = 0; i < t.size(); i++) diff |= static_cast<unsigned>(t[i] ^ (i < given.size() ? given[i] : 0));
    ok = ok || diff == 0;
  }
  return ok;
}

namespace {

constexpr size_t kMaxBody = 1 << 20;

void reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(2) + "\n", "application/json");
}

void error(httplib::Response& res, int status, const std::string& why) { reply(res, status, json{{"error", why}}); }

// State of the runtime-config endpoints (seed: runtime-config apply/status).
struct RuntimeConfigState {
  std::mutex mu;
  std::uint64_t generation = 0;
  std::string applied_at;  // UTC
  std::vector<std::string> restart_required;
  std::string yaml;
};

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::ofstream o(tmp, std::ios::trunc);
  o << text;
  o.flush();
  if (!o) return "cannot write " + tmp;
  o.close();
  if (::rename(tmp.c_str(), path.c_str()) != 0) return "cannot rename " + tmp + ": " + std::strerror(errno);
  return "";
}

json strategy_list(const StrategyStore& store) {
  json arr = json::array();
  for (const auto& s : store.local()) {
    json j = to_json(s);
    j["source"] = "local";
    arr.push_back(j);
  }
  for (const auto& s : store.cluster()) {
    json j = to_json(s);
    j["source"] = "kubernetes";
    arr.push_back(j);
  }
  return json{{"strategies", arr}, {"generation", store.generation()}};
}

}  // namespace

void limit_scrape_server(httplib::Server& srv) {
  srv.set_payload_max_length(kScrapeMaxBody);
  srv.set_read_timeout(5, 0);
  srv.set_write_timeout(5, 0);
}

void add_api_routes(httplib::Server& srv, StrategyStore& store, std::vector<std::string> tokens, ApiHooks hooks) {
  auto rc = std::make_shared<RuntimeConfigState>();
  auto toks = std::make_shared<std::vector<std::string>>(std::move(tokens));
  auto hk = std::make_shared<ApiHooks>(std::move(hooks));
  srv.set_payload_max_length(kMaxBody);  // httplib answers 413 above it
  auto guard = [toks](const httplib::Request& req, httplib::Response& res) {
    if (authorized(req.get_header_value("Authorization"), *toks)) return true;
    res.set_header("WWW-Authenticate", "Bearer");
    error(res, 401, "missing or wrong bearer token (Authorization: Bearer TOKEN, tokens in the API's token file)");
    return false;
  };
  srv.Get("/api/v1/health", [hk, &store](const httplib::Request&, httplib::Response& res) {
    json j = json::object();
    if (hk->health_json) j = json::parse(hk->health_json(), nullptr, false);
    if (!j.is_object()) j = json::object();
    j["status"] = "ok";
    j["strategies"] = store.local().size() + store.cluster().size();
    reply(res, 200, j);
  });
  srv.Get("/api/v1/strategies", [guard, &store](const httplib::Request& req, httplib::Response& res) {
    if (!guard(req, res)) return;
    reply(res, 200, strategy_list(store));
  });
  srv.Post("/api/v1/strategies", [guard, &store](const httplib::Request& req, httplib::Response& res) {
    if (!guard(req, res)) return;
    std::vector<Strategy> batch;
    try {
      batch = parse_text(req.body, "request body");
    } catch (const StrategyError& e) {
      return error(res, 400, e.what());
    }
    const StoreResult r = store.create(batch);
    if (!r.ok()) return error(res, r.status, r.error);
    json created = json::array();
    for (const auto& s : batch) created.push_back(s.name);
    reply(res, 201, json{{"created", created}, {"generation", store.generation()}});
  });
  srv.Get("/api/v1/strategies/resolved", [guard, hk](const httplib::Request& req, httplib::Response& res) {
    if (!guard(req, res)) return;
    json j = hk->resolved_json ? json::parse(hk->resolved_json(), nullptr, false) : json::object();
    reply(res, 200, j.is_discarded() ? json::object() : j);
  });
  srv.Delete(R"(/api/v1/strategies/([a-z0-9-]{1,63}))", [guard, &store](const httplib::Request& req, httplib::Response& res) {
    if (!guard(req, res)) return;
    const StoreResult r = store.remove(req.matches[1]);
    if (!r.ok()) return error(res, r.status, r.error);
    reply(res, 200, json{{"deleted", std::string(req.matches[1])}, {"generation", store.generation()}});
  });
  srv.Post("/api/v1/runtime-config/apply", [guard, hk, rc](const httplib::Request& req, httplib::Response& res) {
    if (!guard(req, res)) return;
    if (hk->config_path.empty()) return error(res, 404, "agentcgroupd runs without a config file: nothing to apply to");
    config::Config next;
    try {
      next = config::load_string(req.body, "request body");
    } catch (const config::ConfigError& e) {
      return error(res, 400, e.what());
    }
    std::vector<std::string> restart;
    try {
      const config::Config cur = config::load_file(hk->config_path);
      if (cur.daemon.mode != next.daemon.mode) restart.push_back("daemon.mode");
      if (std::memcmp(&cur.scheduler, &next.scheduler, sizeof(cur.scheduler)) != 0) restart.push_back("scheduler");
      if (cur.daemon.metrics_port != next.daemon.metrics_port || cur.daemon.metrics_address != next.daemon.metrics_address)
        restart.push_back("daemon.metrics_port/metrics_address");
      if (cur.api.listen != next.api.listen || cur.api.token_file != next.api.token_file) restart.push_back("api");
    } catch (const config::ConfigError&) {
      // the current file is unreadable or bad: everything is new
    }
    if (std::string err = write_atomically(hk->config_path, req.body); !err.empty()) return error(res, 500, err);
    std::uint64_t gen;
    {
      std::lock_guard<std::mutex> lock(rc->mu);
      gen = ++rc->generation;
      rc->applied_at = utc_now();
      rc->restart_required = restart;
      rc->yaml = req.body;
    }
    if (hk->apply_config) hk->apply_config();
    reply(res, 202, json{{"generation", gen}, {"restart_required", restart}});
  });
  srv.Get("/api/v1/runtime-config/status", [guard, hk, rc](const httplib::Request& req, httplib::Response& res) {
    if (!guard(req, res)) return;
    std::lock_guard<std::mutex> lock(rc->mu);
    reply(res, 200, json{{"generation", rc->generation},
                         {"applied_at", rc->applied_at},
                         {"config_path", hk->config_path},
                         {"restart_required", rc->restart_required},
                         {"config", rc->yaml}});
  });
  srv.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;  // a handler already answered
    if (res.status == 404) return error(res, 404, "no such endpoint: " + req.method + " " + req.path);
    if (res.status == 413) return error(res, 413, "request body over 1 MiB");
    if (res.status == 405) return error(res, 405, "method not allowed: " + req.method + " " + req.path);
    error(res, res.status, "request failed");
  });
}

}  // namespace agentcg::strategy
