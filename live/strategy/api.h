// SPDX-License-Identifier: GPL-2.0-only
// The local HTTP API of agentcgroupd (the strategies design's Decision Maker endpoints,
// on cpp-httplib), local only: it listens on 127.0.0.1 (or [::1]); the
// cpp-httplib of Debian bookworm (0.11) has no Unix-socket server.
//   GET    /api/v1/health                     no token: {"status":"ok",...}
//   GET    /api/v1/strategies                 local + cluster strategies
//   POST   /api/v1/strategies                 create: one strategy, an array
//                                             or {"strategies":[...]}; 201
//   DELETE /api/v1/strategies/NAME            200, or 404
//   GET    /api/v1/strategies/resolved        the cgroups and PIDs each
//                                             strategy resolves to now
//   POST   /api/v1/runtime-config/apply       a whole config YAML: validated,
//                                             written to the config file and
//                                             applied as on SIGHUP; 202
//   GET    /api/v1/runtime-config/status      what was applied, when, and
//                                             which keys wait for a restart
// Every route but health needs "Authorization: Bearer TOKEN" with a token
// from the token file (one a line; the file must be a regular file of mode
// 0600 or 0400: the API does not start otherwise). Errors are JSON
// {"error": "..."} with 400 (bad body: names the JSON path / YAML line and
// what is expected), 401, 404, 405, 409, 413 (body over 1 MiB), 500.
// A rejected request changes nothing (StrategyStore is all or nothing; a
// config is validated in full before it is written).
//
// Invariants: handlers run on httplib's threads and only touch the store
// (its own mutex) and the callbacks, which the owner makes thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "live/strategy/store.h"

namespace httplib { class Server; }

namespace agentcg::strategy {

// Reads tokens from `path`; empty vector + `why` if the file is missing,
// not a regular file, readable by group/others, or holds no token.
std::vector<std::string> load_tokens(const std::string& path, std::string* why);

// Constant-time comparison of an Authorization header against the tokens.
bool authorized(const std::string& authorization_header, const std::vector<std::string>& tokens);

struct ApiHooks {
  std::function<std::string()> health_json;    // extra fields for /health (a JSON object)
  std::function<std::string()> resolved_json;  // the resolved list (a JSON object)
  std::string config_path;                     // where runtime-config/apply writes
  std::function<void()> apply_config;          // after the file is written (e.g. raise SIGHUP)
};

// Limits for a daemon's metrics/health server (GET routes only; agentcgroupd
// and agentcg-gpud): a request with a body over kScrapeMaxBody is answered
// 413 as soon as its headers arrive, never read into memory (cpp-httplib's
// default limit is SIZE_MAX: one client could make the daemon buffer any
// amount); read/write timeouts of 5 s. Call before listen.
constexpr std::size_t kScrapeMaxBody = 4096;
void limit_scrape_server(httplib::Server& srv);

// Registers the routes on `srv`. `store` and the hooks must outlive it.
void add_api_routes(httplib::Server& srv, StrategyStore& store, std::vector<std::string> tokens, ApiHooks hooks);

}  // namespace agentcg::strategy
