// SPDX-License-Identifier: GPL-2.0-only
// Trace format v1: Trace -> JSON, in one canonical form.
//
// Canonical means: optional fields are written only when present (a field
// absent in the input stays absent), fields with a default are always
// written (cpu_weight, cgroup, name, description), keys in a fixed order
// (the order of traces/README.md, unknown keys of carried sections
// alphabetically after), containers on one line when they fit in kLineWidth
// columns so that each op sits on its own line. Hence parse(to_json_text(t))
// gives t back and to_json_text(parse(text)) is a fixed point.
// Called by the CLI (`trace generate`), the generators' tests and the
// bundled-traces test that keeps traces/*.json from drifting.
// Strings that are not valid UTF-8 (possible only in a Trace built in code:
// validate() and the parser reject them) are written with U+FFFD in place of
// the bad bytes instead of throwing nlohmann's type_error 316.
#include <fstream>

#include "sim/trace/trace.h"

namespace agentcg::trace {

using nlohmann::json;

namespace {

std::string dump_text(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json value_json(const Value& v) {
  switch (v.dist) {
    case Value::Dist::kConst:
      return v.a;
    case Value::Dist::kUniform: {
      const std::uint64_t hi = (v.max != 0 && v.max < v.b) ? v.max : v.b;
      return json{{"dist", "uniform"}, {"min", v.a}, {"max", hi}};
    }
    case Value::Dist::kExponential: {
      json j{{"dist", "exponential"}, {"mean", v.a}};
      if (v.max != 0) j["max"] = v.max;
      return j;
    }
    case Value::Dist::kLogNormal: {
      json j{{"dist", "lognormal"}, {"median", v.a}, {"sigma", v.sigma}};
      if (v.max != 0) j["max"] = v.max;
      return j;
    }
  }
  return v.a;
}

json process_json(const ProcessSpec& p, bool templ);

json ops_json(const std::vector<Op>& ops) {
  json out = json::array();
  for (const Op& op : ops) {
    json j;
    switch (op.kind) {
      case OpKind::kRun: j = {{"op", "run"}, {"ns", value_json(op.amount)}}; break;
      case OpKind::kSleep:
      case OpKind::kIo:
        j = {{"op", op.kind == OpKind::kSleep ? "sleep" : "io"}, {"ns", value_json(op.amount)}};
        if (op.waker() != 0) j["waker"] = op.waker();
        break;
      case OpKind::kFork:
        if (op.child()) j = {{"op", "fork"}, {"child", process_json(*op.child(), true)}};
        else j = {{"op", "fork"}, {"pid", op.pid()}};
        break;
      case OpKind::kExec: j = {{"op", "exec"}, {"comm", op.name()}}; break;
      case OpKind::kWait: j = {{"op", "wait"}}; break;
      case OpKind::kExit: j = {{"op", "exit"}}; break;
      case OpKind::kMem: j = {{"op", "mem"}, {"bytes", value_json(op.amount)}}; break;
      case OpKind::kRepeat: j = {{"op", "repeat"}, {"count", op.count()}, {"body", ops_json(op.body())}}; break;
      case OpKind::kToolBegin: j = {{"op", "tool_begin"}, {"tool", op.name()}}; break;
      case OpKind::kToolEnd: j = {{"op", "tool_end"}}; break;
      case OpKind::kStep: j = {{"op", "step"}, {"step", op.step()}}; break;
    }
    out.push_back(std::move(j));
  }
  return out;
}

json process_json(const ProcessSpec& p, bool templ) {
  json j = json::object();
  if (!templ) {
    j["pid"] = p.pid;
    if (p.parent) j["parent"] = *p.parent;
    if (p.start_ns) j["start_ns"] = *p.start_ns;
  }
  if (!templ || !p.cgroup.empty()) j["cgroup"] = p.cgroup;
  if (!p.comm.empty()) j["comm"] = p.comm;
  if (p.nice) j["nice"] = *p.nice;
  if (p.rt_priority) j["rt_priority"] = *p.rt_priority;
  if (p.rt_round_robin) j["rt_policy"] = "rr";
  if (p.agent) j["agent"] = json{{"session", p.agent->session}};
  j["ops"] = ops_json(p.ops);
  return j;
}

// Key order of the written text: the order the README documents.
int key_rank(const std::string& k) {
  static const char* const kOrder[] = {
      "format", "version", "name", "description", "duration_ns", "generator", "machine", "cgroups", "processes",
      // generator
      "kind", "seed", "options",
      // machine
      "cpus", "context_switch_ns", "wakeup_overhead_ns",
      // cgroups
      "path", "cpu_weight", "cpu_max", "quota_us", "period_us", "memory_high", "memory_max",
      // processes and ops
      "op", "pid", "parent", "start_ns", "cgroup", "comm", "nice", "rt_priority", "rt_policy", "agent", "session", "ns", "bytes", "count", "tool",
      "step", "child", "body", "ops",
      // values
      "dist", "min", "mean", "median", "sigma", "max"};
  int i = 0;
  for (const char* o : kOrder) {
    if (k == o) return i;
    ++i;
  }
  return i;  // unknown keys (carried sections): after, alphabetically
}

std::vector<std::string> ordered_keys(const json& j) {
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  std::stable_sort(keys.begin(), keys.end(), [](const std::string& a, const std::string& b) {
    const int ra = key_rank(a), rb = key_rank(b);
    return ra != rb ? ra < rb : a < b;
  });
  return keys;
}

constexpr std::size_t kLineWidth = 110;

void write_compact(const json& j, std::string& out) {
  if (j.is_object()) {
    out += '{';
    bool first = true;
    for (const std::string& k : ordered_keys(j)) {
      if (!first) out += ", ";
      first = false;
      out += dump_text(json(k));
      out += ": ";
      write_compact(j.at(k), out);
    }
    out += '}';
  } else if (j.is_array()) {
    out += '[';
    for (std::size_t i = 0; i < j.size(); ++i) {
      if (i) out += ", ";
      write_compact(j[i], out);
    }
    out += ']';
  } else {
    out += dump_text(j);
  }
}

void write_pretty(const json& j, std::size_t indent, std::string& out) {
  if (indent > 0 || !j.is_structured()) {
    std::string flat;
    write_compact(j, flat);
    if (!j.is_structured() || j.empty() || indent + flat.size() <= kLineWidth) {
      out += flat;
      return;
    }
  }
  const std::string pad(indent + 1, ' ');
  if (j.is_object()) {
    out += "{\n";
    const auto keys = ordered_keys(j);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      out += pad;
      out += dump_text(json(keys[i]));
      out += ": ";
      write_pretty(j.at(keys[i]), indent + 1, out);
      out += i + 1 < keys.size() ? ",\n" : "\n";
    }
    out += std::string(indent, ' ') + "}";
  } else {
    out += "[\n";
    for (std::size_t i = 0; i < j.size(); ++i) {
      out += pad;
      write_pretty(j[i], indent + 1, out);
      out += i + 1 < j.size() ? ",\n" : "\n";
    }
    out += std::string(indent, ' ') + "]";
  }
}

}  // namespace

json to_json(const Trace& t) {
  json j = json::object();
  j["format"] = kFormatName;
  j["version"] = t.version;
  j["name"] = t.name;
  j["description"] = t.description;
  if (t.duration_ns) j["duration_ns"] = *t.duration_ns;
  if (!t.generator.is_null()) j["generator"] = t.generator;
  json m{{"cpus", t.machine.cpus}};
  if (t.machine.context_switch_ns) m["context_switch_ns"] = *t.machine.context_switch_ns;
  if (t.machine.wakeup_overhead_ns) m["wakeup_overhead_ns"] = *t.machine.wakeup_overhead_ns;
  j["machine"] = std::move(m);
  json cgs = json::array();
  for (const CgroupSpec& c : t.cgroups) {
    json cj{{"path", c.path}, {"cpu_weight", c.cpu_weight}};
    if (c.cpu_max) cj["cpu_max"] = json{{"quota_us", c.cpu_max->quota_us}, {"period_us", c.cpu_max->period_us}};
    if (c.memory_high) cj["memory_high"] = *c.memory_high;
    if (c.memory_max) cj["memory_max"] = *c.memory_max;
    cgs.push_back(std::move(cj));
  }
  j["cgroups"] = std::move(cgs);
  json procs = json::array();
  for (const ProcessSpec& p : t.processes) procs.push_back(process_json(p, false));
  j["processes"] = std::move(procs);
  if (t.extra.is_object())
    for (auto it = t.extra.begin(); it != t.extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

std::string to_json_text(const Trace& trace) {
  std::string out;
  write_pretty(to_json(trace), 0, out);
  out += '\n';
  return out;
}

void write_trace_file(const Trace& trace, const std::string& path) {
  const std::string text = to_json_text(trace);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error(path + ": cannot open for writing");
  f << text;
  f.flush();
  if (!f) throw std::runtime_error(path + ": write error");
}

}  // namespace agentcg::trace
