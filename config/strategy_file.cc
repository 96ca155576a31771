// SPDX-License-Identifier: GPL-2.0-only
// See strategy_file.h.
#include "config/strategy_file.h"

#include <fnmatch.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace agentcg::strategy {

using nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string& source, const std::string& path, const std::string& why) {
  throw StrategyError(source + ": " + path + ": " + why);
}

void only_keys(const json& o, const std::string& source, const std::string& path,
               std::initializer_list<const char*> allowed) {
  if (!o.is_object()) fail(source, path, "expected an object");
  for (const auto& [k, v] : o.items()) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || k == a;
    if (!ok) {
      std::string list;
      for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
      fail(source, path + "." + k, "unknown key (expected one of: " + list + ")");
    }
  }
}

std::uint64_t uint_in(const json& v, const std::string& source, const std::string& path, std::uint64_t lo,
                      std::uint64_t hi) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
    fail(source, path, "expected an integer " + std::to_string(lo) + ".." + std::to_string(hi));
  const auto x = v.get<std::uint64_t>();
  if (x < lo || x > hi) fail(source, path, "expected an integer " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + std::to_string(x));
  return x;
}

std::string str_of(const json& v, const std::string& source, const std::string& path, size_t max_len) {
  if (!v.is_string()) fail(source, path, "expected a string");
  const auto s = v.get<std::string>();
  if (s.empty() || s.size() > max_len)
    fail(source, path, "expected a non-empty string of at most " + std::to_string(max_len) + " characters");
  for (const unsigned char c : s)
    if (c < 0x20 || c == 0x7f) fail(source, path, "control characters are not allowed");
  return s;
}

bool valid_name(const std::string& n) {
  if (n.empty() || n.size() > 63 || n.front() == '-' || n.back() == '-') return false;
  return std::all_of(n.begin(), n.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

Strategy parse_one(const json& o, const std::string& source, const std::string& at) {
  only_keys(o, source, at, {"name", "selector", "action"});
  Strategy s;
  if (!o.contains("name")) fail(source, at + ".name", "missing (a name of [a-z0-9-], 1..63 characters)");
  s.name = str_of(o["name"], source, at + ".name", 63);
  if (!valid_name(s.name))
    fail(source, at + ".name", "expected [a-z0-9-], 1..63 characters, not starting or ending with '-', got '" + s.name + "'");
  if (!o.contains("selector")) fail(source, at + ".selector", "missing");
  const json& sel = o["selector"];
  const std::string sp = at + ".selector";
  only_keys(sel, source, sp, {"cgroup", "namespace", "labels", "comm", "pids"});
  if (sel.empty()) fail(source, sp, "expected at least one of cgroup, namespace, labels, comm, pids");
  if (sel.contains("cgroup")) {
    s.selector.cgroup_glob = str_of(sel["cgroup"], source, sp + ".cgroup", 4096);
    if ((*s.selector.cgroup_glob)[0] != '/') fail(source, sp + ".cgroup", "expected a glob starting with '/' (relative to the cgroup v2 root)");
  }
  if (sel.contains("namespace")) s.selector.ns = str_of(sel["namespace"], source, sp + ".namespace", 253);
  if (sel.contains("labels")) {
    const json& l = sel["labels"];
    if (!l.is_object() || l.empty()) fail(source, sp + ".labels", "expected a non-empty object of label: value");
    for (const auto& [k, v] : l.items()) s.selector.labels[k] = str_of(v, source, sp + ".labels." + k, 63);
  }
  if (sel.contains("comm")) s.selector.comm = str_of(sel["comm"], source, sp + ".comm", 15);  // TASK_COMM_LEN - 1
  if (sel.contains("pids")) {
    const json& p = sel["pids"];
    if (!p.is_array() || p.empty() || p.size() > 1024) fail(source, sp + ".pids", "expected an array of 1..1024 PIDs");
    for (size_t i = 0; i < p.size(); i++)
      s.selector.pids.push_back(static_cast<std::uint32_t>(uint_in(p[i], source, sp + ".pids[" + std::to_string(i) + "]", 1, 4194304)));
  }
  if (!o.contains("action")) fail(source, at + ".action", "missing");
  const json& a = o["action"];
  const std::string ap = at + ".action";
  only_keys(a, source, ap, {"priority_boost", "weight_pct", "slice_ns", "latency_class"});
  if (a.empty()) fail(source, ap, "expected at least one of priority_boost, weight_pct, slice_ns, latency_class");
  if (a.contains("priority_boost"))
    s.action.priority_boost = static_cast<std::uint32_t>(uint_in(a["priority_boost"], source, ap + ".priority_boost", 0, AGENTCG_STRATEGY_MAX_BOOST));
  s.action.weight_pct = 100;
  if (a.contains("weight_pct"))
    s.action.weight_pct = static_cast<std::uint32_t>(uint_in(a["weight_pct"], source, ap + ".weight_pct", AGENTCG_STRATEGY_MIN_WEIGHT_PCT, AGENTCG_STRATEGY_MAX_WEIGHT_PCT));
  if (a.contains("slice_ns"))
    s.action.slice_ns = uint_in(a["slice_ns"], source, ap + ".slice_ns", AGENTCG_STRATEGY_MIN_SLICE_NS, AGENTCG_STRATEGY_MAX_SLICE_NS);
  if (a.contains("latency_class")) {
    const std::string c = a["latency_class"].is_string() ? a["latency_class"].get<std::string>() : "";
    if (c == "normal") s.action.latency_class = AGENTCG_LAT_NORMAL;
    else if (c == "low") s.action.latency_class = AGENTCG_LAT_LOW;
    else if (c == "batch") s.action.latency_class = AGENTCG_LAT_BATCH;
    else fail(source, ap + ".latency_class", "expected normal, low or batch");
  }
  return s;
}

}  // namespace

const char* latency_class_name(std::uint32_t c) {
  switch (static_cast<agentcg_latency_class>(c)) {
    case AGENTCG_LAT_NORMAL: return "normal";
    case AGENTCG_LAT_LOW: return "low";
    case AGENTCG_LAT_BATCH: return "batch";
  }
  return "normal";
}

std::vector<Strategy> parse_document(const json& doc, const std::string& source) {
  std::vector<Strategy> out;
  if (doc.is_object() && doc.contains("strategies")) {
    only_keys(doc, source, "(document)", {"strategies"});
    const json& arr = doc["strategies"];
    if (!arr.is_array()) fail(source, "strategies", "expected an array");
    if (arr.size() > 4096) fail(source, "strategies", "at most 4096 strategies");
    for (size_t i = 0; i < arr.size(); i++) out.push_back(parse_one(arr[i], source, "strategies[" + std::to_string(i) + "]"));
  } else if (doc.is_array()) {
    if (doc.size() > 4096) fail(source, "(document)", "at most 4096 strategies");
    for (size_t i = 0; i < doc.size(); i++) out.push_back(parse_one(doc[i], source, "[" + std::to_string(i) + "]"));
  } else if (doc.is_object()) {
    out.push_back(parse_one(doc, source, "(strategy)"));
  } else {
    fail(source, "(document)", "expected {\"strategies\": [...]}, an array of strategies or one strategy object");
  }
  normalize(out, source);
  return out;
}

std::vector<Strategy> parse_text(const std::string& text, const std::string& source) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw StrategyError(source + ": not valid JSON (byte " + std::to_string(e.byte) + ")");
  }
  return parse_document(doc, source);
}

std::vector<Strategy> load_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw StrategyError(path + ": cannot open strategy file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_text(ss.str(), path);
}

void normalize(std::vector<Strategy>& all, const std::string& source) {
  std::stable_sort(all.begin(), all.end(), [](const Strategy& a, const Strategy& b) { return a.name < b.name; });
  for (size_t i = 0; i < all.size(); i++) {
    if (i > 0 && all[i].name == all[i - 1].name) fail(source, "name", "duplicate strategy name '" + all[i].name + "'");
    all[i].action.strategy_id = static_cast<std::uint32_t>(i + 1);
  }
}

json to_json(const Strategy& s) {
  json sel = json::object();
  if (s.selector.cgroup_glob) sel["cgroup"] = *s.selector.cgroup_glob;
  if (s.selector.ns) sel["namespace"] = *s.selector.ns;
  if (!s.selector.labels.empty()) sel["labels"] = s.selector.labels;
  if (s.selector.comm) sel["comm"] = *s.selector.comm;
  if (!s.selector.pids.empty()) sel["pids"] = s.selector.pids;
  json act = json::object();
  act["priority_boost"] = s.action.priority_boost;
  act["weight_pct"] = s.action.weight_pct ? s.action.weight_pct : 100;
  act["slice_ns"] = s.action.slice_ns;
  act["latency_class"] = latency_class_name(s.action.latency_class);
  if (s.action.slice_ns == 0) act.erase("slice_ns");  // 0 is not a valid input
  return json{{"name", s.name}, {"selector", sel}, {"action", act}};
}

json to_json(const std::vector<Strategy>& all) {
  json arr = json::array();
  for (const auto& s : all) arr.push_back(to_json(s));
  return json{{"strategies", arr}};
}

bool matches_cgroup(const Selector& s, const Target& t) {
  if (s.cgroup_glob && fnmatch(s.cgroup_glob->c_str(), t.cgroup_path.c_str(), 0) != 0) return false;
  if (s.ns && (!t.ns || *t.ns != *s.ns)) return false;
  for (const auto& [k, v] : s.labels) {
    if (!t.labels) return false;
    auto it = t.labels->find(k);
    if (it == t.labels->end() || it->second != v) return false;
  }
  return true;
}

bool matches_task(const Selector& s, const Target& t) {
  if (!matches_cgroup(s, t)) return false;
  if (s.comm && t.comm != *s.comm) return false;
  if (!s.pids.empty() && std::find(s.pids.begin(), s.pids.end(), t.pid) == s.pids.end()) return false;
  return true;
}

}  // namespace agentcg::strategy
