// SPDX-License-Identifier: GPL-2.0-only
// `trace merge` (see merge.h): session cgroups, pid renumbering, staggered
// starts.
// Who calls it: sim/import/commands.cc, tests.
#include "sim/import/merge.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <map>

namespace agentcg::import {

namespace {

std::string move_cgroup(const std::string& prefix, const std::string& path) {
  if (path.empty()) return path;  // templates: the parent's cgroup
  if (path == "/") return prefix;
  return prefix + path;
}

struct Renumber {
  const std::map<std::int64_t, std::int64_t>& pids;
  const std::string& prefix;

  std::int64_t pid(std::int64_t old) const {
    auto it = pids.find(old);
    return it == pids.end() ? old : it->second;
  }
  void ops(std::vector<trace::Op>& list) const {
    for (trace::Op& op : list) {
      if (op.kind == trace::OpKind::kFork && !op.child()) op.set_pid(pid(op.pid()));
      if (op.kind == trace::OpKind::kFork && op.child()) {
        auto copy = std::make_shared<trace::ProcessSpec>(*op.child());
        process(*copy);
        op.set_child(std::move(copy));
      }
      if (std::vector<trace::Op>* body = op.mutable_body()) ops(*body);
    }
  }
  void process(trace::ProcessSpec& p) const {
    if (p.pid != 0) p.pid = pid(p.pid);
    if (p.parent) p.parent = pid(*p.parent);
    p.cgroup = move_cgroup(prefix, p.cgroup);
    ops(p.ops);
  }
};

}  // namespace

trace::Trace merge_sessions(const std::vector<trace::Trace>& inputs, const MergeOptions& opts,
                            std::vector<std::string>* warnings) {
  trace::Trace out;
  out.name = opts.name;
  out.machine.cpus = 1;
  std::int64_t next_pid = 1;
  bool all_have_duration = !inputs.empty();
  std::uint64_t duration = 0;
  nlohmann::json names = nlohmann::json::array();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const trace::Trace& in = inputs[i];
    const std::string prefix = "/session-" + std::to_string(i + 1);
    const std::uint64_t offset = opts.stagger_ns * i;
    names.push_back(in.name);
    out.machine.cpus = std::max(out.machine.cpus, in.machine.cpus);
    if (i == 0) {
      out.machine.context_switch_ns = in.machine.context_switch_ns;
      out.machine.wakeup_overhead_ns = in.machine.wakeup_overhead_ns;
    } else {
      if (out.machine.context_switch_ns != in.machine.context_switch_ns) out.machine.context_switch_ns.reset();
      if (out.machine.wakeup_overhead_ns != in.machine.wakeup_overhead_ns) out.machine.wakeup_overhead_ns.reset();
    }
    if (!in.extra.empty() && warnings != nullptr)
      for (const auto& [k, v] : in.extra.items())
        warnings->push_back("session " + std::to_string(i + 1) + " (" + in.name + "): section '" + k +
                            "' dropped (merge does not renumber it)");
    // The session's cgroup carries the input root's settings.
    trace::CgroupSpec root;
    root.path = prefix;
    for (const trace::CgroupSpec& c : in.cgroups)
      if (c.path == "/") {
        root = c;
        root.path = prefix;
      }
    out.cgroups.push_back(root);
    for (const trace::CgroupSpec& c : in.cgroups) {
      if (c.path == "/") continue;
      trace::CgroupSpec moved = c;
      moved.path = prefix + c.path;
      out.cgroups.push_back(moved);
    }
    std::map<std::int64_t, std::int64_t> pids;
    for (const trace::ProcessSpec& p : in.processes) pids[p.pid] = next_pid++;
    const Renumber rn{pids, prefix};
    const std::string session = in.name.empty() ? prefix.substr(1) : in.name;
    for (const trace::ProcessSpec& p : in.processes) {
      trace::ProcessSpec q = p;
      rn.process(q);
      if (q.start_ns) q.start_ns = *q.start_ns + offset;
      if (!q.agent) q.agent = trace::AgentInfo{session};
      out.processes.push_back(std::move(q));
    }
    if (in.duration_ns) duration = std::max(duration, *in.duration_ns + offset);
    else all_have_duration = false;
  }
  if (opts.cpus != 0) out.machine.cpus = opts.cpus;
  if (all_have_duration) out.duration_ns = duration;
  out.description = std::to_string(inputs.size()) + " recorded sessions on one machine, each in "
                    "/session-N, starts staggered by " + std::to_string(opts.stagger_ns) + " ns.";
  out.generator = nlohmann::json::object();
  out.generator["kind"] = "merge";
  out.generator["stagger_ns"] = opts.stagger_ns;
  out.generator["inputs"] = names;
  return out;
}

}  // namespace agentcg::import
