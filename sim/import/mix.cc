// SPDX-License-Identifier: GPL-2.0-only
// `trace mix` (see mix.h): seeded session order and jitter, then trace
// merge's layout, then the interactive shell.
// Who calls it: sim/import/commands.cc, tests.
#include "sim/import/mix.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "sim/import/import.h"
#include "sim/import/merge.h"
#include "sim/random.h"

namespace agentcg::import {

trace::Trace load_recording(const std::string& path) {
  namespace fs = std::filesystem;
  Options o;
  if (fs::is_directory(path)) return import_agentcgroup_task_dir(path, o).trace;
  if (path.size() > 6 && path.compare(path.size() - 6, 6, ".jsonl") == 0)
    return import_agentcgroup_ebpf_file(path, o).trace;
  return trace::load_trace_file(path);
}

trace::Trace mix_sessions(const std::vector<trace::Trace>& inputs, const MixOptions& opts,
                          std::vector<std::string>* warnings) {
  if (inputs.empty()) throw std::invalid_argument("trace mix: no recordings given");
  if (opts.sessions == 0) throw std::invalid_argument("trace mix: --sessions must be at least 1");
  sim::RandomStream rng(opts.seed, "mix");
  std::vector<std::size_t> order;
  std::vector<trace::Trace> copies;
  copies.reserve(opts.sessions);
  for (std::uint32_t i = 0; i < opts.sessions; ++i) {
    if (order.empty()) {
      // a new round: every recording once, in a seeded order (Fisher-Yates)
      for (std::size_t k = 0; k < inputs.size(); ++k) order.push_back(k);
      for (std::size_t k = order.size(); k > 1; --k) std::swap(order[k - 1], order[rng.below(k)]);
    }
    const std::size_t pick = order.back();
    order.pop_back();
    trace::Trace t = inputs[pick];
    const std::uint64_t offset = opts.stagger_ns * i + rng.below(opts.stagger_ns / 2 + 1);
    for (trace::ProcessSpec& p : t.processes)
      if (p.start_ns) p.start_ns = *p.start_ns + offset;
    if (t.duration_ns) t.duration_ns = *t.duration_ns + offset;
    copies.push_back(std::move(t));
  }
  MergeOptions mo;
  mo.stagger_ns = 0;
  mo.cpus = opts.cpus;
  mo.name = opts.name;
  trace::Trace out = merge_sessions(copies, mo, warnings);
  if (opts.interactive > 0) {
    const std::uint64_t span = opts.duration_ns.value_or(out.duration_ns.value_or(600000000000ULL));
    const trace::Trace shell =
        trace::generate("crowded", opts.seed,
                        {{"sessions", "0"},
                         {"interactive", std::to_string(opts.interactive)},
                         {"duration", std::to_string(std::max<std::uint64_t>(span, 1000000)) + "ns"}});
    std::int64_t next_pid = 1;
    for (const trace::ProcessSpec& p : out.processes) next_pid = std::max(next_pid, p.pid + 1);
    for (const trace::CgroupSpec& c : shell.cgroups)
      if (c.path == "/interactive") out.cgroups.push_back(c);
    for (trace::ProcessSpec p : shell.processes) {
      if (p.cgroup != "/interactive") continue;
      p.pid = next_pid++;
      out.processes.push_back(std::move(p));
    }
  }
  if (opts.duration_ns) out.duration_ns = *opts.duration_ns;
  out.description = std::to_string(opts.sessions) + " recorded sessions (" + std::to_string(inputs.size()) +
                    " recordings, seeded order) on " + std::to_string(opts.cpus) +
                    " CPUs, each in /session-N, starts staggered by " + std::to_string(opts.stagger_ns) +
                    " ns plus jitter" + (opts.interactive ? ", an interactive shell in /interactive" : "") + ".";
  nlohmann::json names = nlohmann::json::array();
  for (const trace::Trace& t : inputs) names.push_back(t.name);
  out.generator = nlohmann::json::object();
  out.generator["kind"] = "mix";
  out.generator["seed"] = opts.seed;
  out.generator["sessions"] = opts.sessions;
  out.generator["stagger_ns"] = opts.stagger_ns;
  out.generator["interactive"] = opts.interactive;
  out.generator["inputs"] = names;
  return out;
}

}  // namespace agentcg::import
