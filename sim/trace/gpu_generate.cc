// SPDX-License-Identifier: GPL-2.0-only
// Implementation of the gpu-* generators (see gpu_generate.h). Options are
// checked strictly: an unknown key or a malformed number names the option.
#include "sim/trace/gpu_generate.h"

#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "config/did_you_mean.h"
#include "sim/trace/gpu_trace.h"
#include "sim/random.h"

namespace agentcg::trace::gpu {
namespace {

constexpr std::uint64_t kGiB = 1ull << 30;
constexpr std::uint64_t kMs = 1000000ull;

struct Defaults {
  std::map<std::string, std::string> values;
};

// Defaults per kind; every accepted option appears here.
std::map<std::string, std::string> defaults_for(const std::string& kind) {
  std::map<std::string, std::string> d = {
      {"gpus", "1"},          {"gpu-mem-gb", "16"},  {"pcie", "gen3"},
      {"kernel-ms", "10"},    {"kernels-per-iteration", "10"}, {"sync-every", "0"},
      {"arrival-spread-ms", "0"}, {"touched-fraction", "1"}};
  if (kind == "gpu-oversub") {
    d["jobs"] = "4";
    d["job-mem-gb"] = "12";
    d["iterations"] = "600";
    d["host-ms"] = "0";
  } else if (kind == "gpu-fit") {
    d["jobs"] = "4";
    d["job-mem-gb"] = "3";
    d["iterations"] = "600";
    d["host-ms"] = "100";
  } else if (kind == "gpu-quota") {
    d["limits"] = "25,50,75";
    d["job-mem-gb"] = "2";
    d["iterations"] = "100000";
    d["host-ms"] = "0";
    d["duration-s"] = "100";
  } else {
    throw std::invalid_argument("unknown GPU generator kind '" + kind +
                                "' (expected gpu-oversub, gpu-fit or gpu-quota)");
  }
  return d;
}

double num(const std::map<std::string, std::string>& o, const std::string& k, double min, double max) {
  const std::string& s = o.at(k);
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty() || !(v >= min && v <= max)) {
    std::ostringstream m;
    m << "option --" << k << ": expected a number in [" << min << ", " << max << "], got '" << s << "'";
    throw std::invalid_argument(m.str());
  }
  return v;
}

std::uint64_t integer(const std::map<std::string, std::string>& o, const std::string& k,
                      std::uint64_t min, std::uint64_t max) {
  const double v = num(o, k, static_cast<double>(min), static_cast<double>(max));
  if (v != std::floor(v))
    throw std::invalid_argument("option --" + k + ": expected an integer, got '" + o.at(k) + "'");
  return static_cast<std::uint64_t>(v);
}

}  // namespace

trace::Trace generate_gpu_trace(const std::string& kind, std::uint64_t seed,
                                const std::map<std::string, std::string>& options) {
  auto o = defaults_for(kind);
  for (const auto& [k, v] : options) {
    if (!o.count(k)) {
      std::string list;
      std::vector<std::string> names;
      for (const auto& [dk, dv] : o) {
        list += (list.empty() ? "" : ", ") + ("--" + dk);
        names.push_back("--" + dk);
      }
      throw std::invalid_argument("unknown option --" + k + cli::did_you_mean("--" + k, names) + " for " + kind +
                                  " (expected " + list + ")");
    }
    o[k] = v;
  }
  GpuWorkload w;
  const auto ngpus = integer(o, "gpus", 1, 64);
  auto pcie = pcie_preset(o["pcie"]);
  if (!pcie) throw std::invalid_argument("option --pcie: expected gen3, gen4 or gen5, got '" + o["pcie"] + "'");
  for (std::uint64_t g = 0; g < ngpus; ++g) {
    GpuSpec s;
    s.memory_bytes = static_cast<std::uint64_t>(std::llround(num(o, "gpu-mem-gb", 1, 1 << 16) * kGiB));
    s.pcie = *pcie;
    w.gpus.push_back(s);
  }
  const auto job_mem = static_cast<std::uint64_t>(std::llround(num(o, "job-mem-gb", 0, 1 << 16) * kGiB));
  const auto kernel_ns = static_cast<std::uint64_t>(std::llround(num(o, "kernel-ms", 0.001, 1e6) * kMs));
  const auto kpi = static_cast<std::uint32_t>(integer(o, "kernels-per-iteration", 1, 1 << 20));
  const auto sync = static_cast<std::uint32_t>(integer(o, "sync-every", 0, 1 << 20));
  const auto iters = integer(o, "iterations", 1, 1ull << 40);
  const auto host_ns = static_cast<std::uint64_t>(std::llround(num(o, "host-ms", 0, 1e9) * kMs));
  const auto spread_ns = static_cast<std::uint64_t>(std::llround(num(o, "arrival-spread-ms", 0, 1e12) * kMs));
  const auto touched = static_cast<std::uint32_t>(std::llround(num(o, "touched-fraction", 0, 1) * 1e6));
  sim::RandomStream rng(seed, "gpu-generate");

  std::vector<std::optional<std::uint32_t>> limits;
  if (kind == "gpu-quota") {
    std::stringstream ss(o["limits"]);
    for (std::string item; std::getline(ss, item, ',');) {
      std::map<std::string, std::string> one{{"limits", item}};
      limits.push_back(static_cast<std::uint32_t>(integer(one, "limits", 1, 100)));
    }
    if (limits.empty()) throw std::invalid_argument("option --limits: expected e.g. 25,50,75");
  } else {
    limits.resize(integer(o, "jobs", 1, 100000));
  }
  for (std::size_t i = 0; i < limits.size(); ++i) {
    GpuJob j;
    j.id = "j" + std::to_string(i + 1);
    j.arrival_ns = spread_ns ? rng.uniform(0, spread_ns) : 0;
    j.memory_bytes = job_mem;
    j.touched_ppm = touched;
    j.iterations = iters;
    j.kernel_ns = kernel_ns;
    j.kernels_per_iteration = kpi;
    j.sync_every = sync;
    j.host_ns = host_ns;
    j.limit_pct = limits[i];
    w.jobs.push_back(j);
  }
  trace::Trace t;
  t.name = kind;
  t.description = "synthetic GPU workload (" + kind + "), see sim/gpu/README.md";
  t.extra["gpu"] = gpu_section_to_json(w);
  if (kind == "gpu-quota")
    t.duration_ns = static_cast<std::uint64_t>(std::llround(num(o, "duration-s", 0.001, 1e9) * 1e9));
  nlohmann::json opts = nlohmann::json::object();
  for (const auto& [k, v] : o) opts[k] = v;
  t.generator = {{"kind", kind}, {"seed", seed}, {"options", opts}};
  return t;
}

std::vector<GeneratorKind> gpu_generator_kinds() {
  std::vector<GeneratorKind> out;
  for (const char* kind : {"gpu-oversub", "gpu-fit", "gpu-quota"}) {
    GeneratorKind g{kind, std::string("synthetic GPU workload (see trace generate --help)"), {}};
    for (const auto& [k, v] : defaults_for(kind)) g.options.push_back({k, v, "GPU workload option"});
    out.push_back(std::move(g));
  }
  return out;
}

std::string gpu_generator_help() {
  std::string out;
  for (const char* kind : {"gpu-oversub", "gpu-fit", "gpu-quota"}) {
    out += std::string("  ") + kind + ":";
    for (const auto& [k, v] : defaults_for(kind)) out += " --" + k + " " + v;
    out += "\n";
  }
  return out;
}

}  // namespace agentcg::trace::gpu
