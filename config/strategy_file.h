// SPDX-License-Identifier: GPL-2.0-only
// The strategy document (the strategies design's scheduling strategies), shared by
// agentcgroupd's local API (live/strategy/), its persisted state file, the
// Kubernetes SchedulingStrategy spec (deploy/crds/) and the simulator's
// `--strategies FILE`, so a strategy tried in the simulator is the one
// pushed live. JSON:
//   {"strategies": [
//     {"name": "coder-fast",                       // [a-z0-9-], 1..63
//      "selector": {"cgroup": "/agents/coder-*",    // fnmatch glob, '*' crosses '/'
//                   "namespace": "agents", "labels": {"app": "coder"},
//                   "comm": "python3", "pids": [1234]},
//      "action": {"priority_boost": 1, "weight_pct": 200,
//                 "slice_ns": 2000000, "latency_class": "low"}}]}
// A selector needs at least one field; all given fields must match. With
// `comm` or `pids` it is PID-level (resolved to PIDs, the seed's PID rule),
// otherwise cgroup-level. An action needs at least one field.
//
// Invariants: parsing is all or nothing (a bad entry rejects the whole
// document with its JSON path and the expected form); strategies are kept
// sorted by name and get ids 1..N in that order; when several match the
// same cgroup or PID, the first by name wins. No I/O here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "agentcg/strategy.h"

namespace agentcg::strategy {

class StrategyError : public std::runtime_error {
 public:
  explicit StrategyError(const std::string& what) : std::runtime_error(what) {}
};

struct Selector {
  std::optional<std::string> cgroup_glob;
  std::optional<std::string> ns;
  std::map<std::string, std::string> labels;
  std::optional<std::string> comm;
  std::vector<std::uint32_t> pids;
  bool pid_level() const { return comm.has_value() || !pids.empty(); }
};

struct Strategy {
  std::string name;
  Selector selector;
  agentcg_strategy_action action{};  // strategy_id set by assign_ids()
};

// Parses {"strategies": [...]}, a bare array, or one strategy object.
// Throws StrategyError("SOURCE: strategies[2].action.slice_ns: expected ...").
std::vector<Strategy> parse_document(const nlohmann::json& doc, const std::string& source);
std::vector<Strategy> parse_text(const std::string& text, const std::string& source);
std::vector<Strategy> load_file(const std::string& path);

nlohmann::json to_json(const Strategy& s);
nlohmann::json to_json(const std::vector<Strategy>& all);  // {"strategies": [...]}

// Sorts by name, rejects duplicate names, sets action.strategy_id = 1..N.
void normalize(std::vector<Strategy>& all, const std::string& source);

// What a candidate cgroup / task looks like to a selector. ns and labels
// are those of the pod the cgroup belongs to (null when not a known pod).
struct Target {
  std::string cgroup_path;
  const std::string* ns = nullptr;
  const std::map<std::string, std::string>* labels = nullptr;
  std::string comm;      // task-level only
  std::uint32_t pid = 0;  // task-level only (tgid)
};
bool matches_cgroup(const Selector& s, const Target& t);  // ignores comm/pids
bool matches_task(const Selector& s, const Target& t);

const char* latency_class_name(std::uint32_t c);

}  // namespace agentcg::strategy
