// SPDX-License-Identifier: GPL-2.0-only
// Parser and writer of the trace's "gpu" section (see gpu_trace.h and
// sim/gpu/README.md). Every error names the trace file, the line of the
// offending element (trace::line_of, 0 when built in code), its JSON
// pointer, and what was expected. Unknown keys are errors, so a misspelt
// field never passes silently.
#include "sim/trace/gpu_trace.h"

#include <cmath>
#include <set>

namespace agentcg::trace::gpu {
namespace {

using nlohmann::json;

class Ctx {
 public:
  explicit Ctx(const trace::Trace& t) : t_(t) {}
  [[noreturn]] void fail(const std::string& ptr, const std::string& msg) const {
    throw trace::TraceError(t_.source, trace::line_of(t_, ptr), ptr, msg);
  }
  void only(const json& obj, const std::string& ptr, const std::set<std::string>& keys) const {
    if (!obj.is_object()) fail(ptr, "expected an object");
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (!keys.count(it.key())) {
        std::string list;
        for (const auto& k : keys) list += (list.empty() ? "" : ", ") + k;
        fail(ptr + "/" + it.key(), "unknown key '" + it.key() + "' (expected one of: " + list + ")");
      }
    }
  }
  std::uint64_t u64(const json& obj, const std::string& ptr, const std::string& key,
                    std::uint64_t min, std::uint64_t max) const {
    const json& v = obj.at(key);
    const std::string p = ptr + "/" + key;
    // Built in code, a small count may be a signed JSON integer: accept it if >= 0.
    if (v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0)) {
      const auto x = v.get<std::uint64_t>();
      if (x < min || x > max)
        fail(p, "value " + std::to_string(x) + " out of range [" + std::to_string(min) + ", " +
                    std::to_string(max) + "]");
      return x;
    }
    if (v.is_number_integer()) fail(p, "expected a non-negative integer, got " + v.dump());
    fail(p, "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                "], got " + v.dump());
  }
  double number(const json& obj, const std::string& ptr, const std::string& key, double min,
                double max) const {
    const json& v = obj.at(key);
    const std::string p = ptr + "/" + key;
    if (!v.is_number()) fail(p, "expected a number, got " + v.dump());
    const double x = v.get<double>();
    if (!(x >= min && x <= max))
      fail(p, "value " + v.dump() + " out of range [" + json(min).dump() + ", " + json(max).dump() + "]");
    return x;
  }
  std::string str(const json& obj, const std::string& ptr, const std::string& key) const {
    const json& v = obj.at(key);
    if (!v.is_string()) fail(ptr + "/" + key, "expected a string, got " + v.dump());
    return v.get<std::string>();
  }

 private:
  const trace::Trace& t_;
};

constexpr std::uint64_t kGiB = 1ull << 30;
constexpr std::uint64_t kMaxBytes = 1ull << 50;      // 1 PiB: far beyond any GPU or job
constexpr std::uint64_t kMaxNs = 1ull << 62;

GpuSpec parse_gpu(const Ctx& c, const json& g, const std::string& p) {
  c.only(g, p, {"memory_gb", "memory_bytes", "pcie", "context_overhead_mb", "corun_interference_pct",
                "copy_bytes_per_s", "fault_bytes_per_s", "fault_latency_ns", "first_touch_bytes_per_s",
                "create_bytes_per_s"});
  GpuSpec s;
  if (g.contains("memory_gb") == g.contains("memory_bytes"))
    c.fail(p, "expected exactly one of memory_gb (GiB) or memory_bytes");
  if (g.contains("memory_gb")) {
    s.memory_bytes = static_cast<std::uint64_t>(std::llround(c.number(g, p, "memory_gb", 0.001, 1 << 20) * kGiB));
  } else {
    s.memory_bytes = c.u64(g, p, "memory_bytes", 1 << 20, kMaxBytes);
  }
  if (g.contains("pcie")) {
    const std::string name = c.str(g, p, "pcie");
    auto preset = pcie_preset(name);
    if (!preset) c.fail(p + "/pcie", "unknown PCIe generation '" + name + "' (expected gen3, gen4 or gen5)");
    s.pcie = *preset;
  }
  if (g.contains("context_overhead_mb"))
    s.context_overhead_bytes = c.u64(g, p, "context_overhead_mb", 0, 1 << 16) << 20;
  if (g.contains("corun_interference_pct"))
    s.corun_interference_pct = static_cast<std::uint32_t>(c.u64(g, p, "corun_interference_pct", 100, 10000));
  if (g.contains("copy_bytes_per_s")) s.pcie.copy_bytes_per_s = c.u64(g, p, "copy_bytes_per_s", 1 << 20, kMaxBytes);
  if (g.contains("fault_bytes_per_s")) s.pcie.fault_bytes_per_s = c.u64(g, p, "fault_bytes_per_s", 1 << 20, kMaxBytes);
  if (g.contains("fault_latency_ns")) s.pcie.fault_latency_ns = c.u64(g, p, "fault_latency_ns", 0, 1000000000);
  // 0 = not told apart from an evicted page (see PcieSpec)
  if (g.contains("first_touch_bytes_per_s"))
    s.pcie.first_touch_bytes_per_s = c.u64(g, p, "first_touch_bytes_per_s", 0, kMaxBytes);
  if (g.contains("create_bytes_per_s")) s.pcie.create_bytes_per_s = c.u64(g, p, "create_bytes_per_s", 0, kMaxBytes);
  if (s.memory_bytes <= s.context_overhead_bytes)
    c.fail(p, "memory must exceed one context's overhead (" + std::to_string(s.context_overhead_bytes) + " bytes)");
  return s;
}

GpuJob parse_job(const Ctx& c, const json& j, const std::string& p, std::size_t ngpus) {
  c.only(j, p, {"id", "arrival_ns", "memory_bytes", "touched_fraction", "iterations", "kernel_ns",
                "kernels_per_iteration", "sync_every", "host_ns", "sm_pct", "limit_pct", "gpu", "limit_changes"});
  for (const char* k : {"id", "memory_bytes", "iterations", "kernel_ns"})
    if (!j.contains(k)) c.fail(p, std::string("missing required key '") + k + "'");
  GpuJob r;
  r.pointer = p;
  r.id = c.str(j, p, "id");
  if (r.id.empty()) c.fail(p + "/id", "expected a non-empty job id");
  if (j.contains("arrival_ns")) r.arrival_ns = c.u64(j, p, "arrival_ns", 0, kMaxNs);
  r.memory_bytes = c.u64(j, p, "memory_bytes", 0, kMaxBytes);
  if (j.contains("touched_fraction"))
    r.touched_ppm = static_cast<std::uint32_t>(std::llround(c.number(j, p, "touched_fraction", 0.0, 1.0) * 1e6));
  r.iterations = c.u64(j, p, "iterations", 1, 1ull << 40);
  r.kernel_ns = c.u64(j, p, "kernel_ns", 1, kMaxNs);
  if (j.contains("kernels_per_iteration"))
    r.kernels_per_iteration = static_cast<std::uint32_t>(c.u64(j, p, "kernels_per_iteration", 1, 1 << 20));
  if (j.contains("sync_every"))
    r.sync_every = static_cast<std::uint32_t>(c.u64(j, p, "sync_every", 0, 1 << 20));
  if (j.contains("host_ns")) r.host_ns = c.u64(j, p, "host_ns", 0, kMaxNs);
  if (j.contains("sm_pct")) r.sm_pct = static_cast<std::uint32_t>(c.u64(j, p, "sm_pct", 1, 100));
  if (j.contains("limit_pct")) r.limit_pct = static_cast<std::uint32_t>(c.u64(j, p, "limit_pct", 1, 100));
  if (j.contains("gpu")) {
    r.gpu = static_cast<std::uint32_t>(c.u64(j, p, "gpu", 0, 1 << 16));
    if (*r.gpu >= ngpus)
      c.fail(p + "/gpu", "GPU " + std::to_string(*r.gpu) + " does not exist (the trace has " +
                             std::to_string(ngpus) + ")");
  }
  if (j.contains("limit_changes")) {
    const json& lc = j.at("limit_changes");
    if (!lc.is_array()) c.fail(p + "/limit_changes", "expected an array of {at_ns, limit_pct}");
    for (std::size_t i = 0; i < lc.size(); ++i) {
      const std::string q = p + "/limit_changes/" + std::to_string(i);
      c.only(lc[i], q, {"at_ns", "limit_pct"});
      if (!lc[i].contains("at_ns") || !lc[i].contains("limit_pct")) c.fail(q, "expected {at_ns, limit_pct}");
      LimitChange ch{c.u64(lc[i], q, "at_ns", 0, kMaxNs),
                     static_cast<std::uint32_t>(c.u64(lc[i], q, "limit_pct", 1, 100))};
      if (!r.limit_changes.empty() && ch.at_ns < r.limit_changes.back().at_ns)
        c.fail(q + "/at_ns", "limit changes must be in time order");
      r.limit_changes.push_back(ch);
    }
  }
  return r;
}

}  // namespace

std::optional<PcieSpec> pcie_preset(const std::string& name) {
  PcieSpec s;  // gen3 defaults (see gpu_trace.h)
  s.name = name;
  if (name == "gen3") return s;
  // Link rate doubles per generation: 15.75 / 31.5 / 63 GB/s per direction
  // for x16 (docs/sources.md); the rates above scale with it.
  if (name == "gen4") {
    s.copy_bytes_per_s *= 2;
    s.fault_bytes_per_s *= 2;
    return s;
  }
  // Gen5: measured on one H200 (driver 580.159.04, a Firecracker VM;
  // tests/gpu/um_rates.cu, medians of five 8 GiB runs in two boots): prefetch
  // of host-written pages 47.4 GB/s; one far fault per 2 MB block 21 us; a
  // dense sweep of host-written pages 6.83 GB/s, which with the density
  // prefetcher's 51 % and those two gives 4.05 GB/s at the fault rate (the
  // link-rate scaling said 12); untouched pages created by a kernel's faults
  // 9.9 GB/s (9.6-15.9), by a prefetch 210 GB/s (180-242, two runs).
  if (name == "gen5") {
    s.copy_bytes_per_s = 47400000000ull;
    s.fault_bytes_per_s = 4050000000ull;
    s.fault_latency_ns = 21000;
    s.first_touch_bytes_per_s = 9900000000ull;
    s.create_bytes_per_s = 210000000000ull;
    return s;
  }
  return std::nullopt;
}

GpuWorkload parse_gpu_section(const trace::Trace& trace) {
  const Ctx c(trace);
  if (!trace.extra.contains("gpu")) c.fail("/gpu", "the trace has no gpu section");
  const json& g = trace.extra.at("gpu");
  c.only(g, "/gpu", {"gpus", "jobs"});
  if (!g.contains("gpus") || !g["gpus"].is_array() || g["gpus"].empty())
    c.fail("/gpu/gpus", "expected a non-empty array of GPUs, e.g. [{\"memory_gb\":16,\"pcie\":\"gen3\"}]");
  if (!g.contains("jobs") || !g["jobs"].is_array())
    c.fail("/gpu/jobs", "expected an array of jobs");
  GpuWorkload w;
  for (std::size_t i = 0; i < g["gpus"].size(); ++i)
    w.gpus.push_back(parse_gpu(c, g["gpus"][i], "/gpu/gpus/" + std::to_string(i)));
  std::set<std::string> ids;
  for (std::size_t i = 0; i < g["jobs"].size(); ++i) {
    const std::string p = "/gpu/jobs/" + std::to_string(i);
    GpuJob j = parse_job(c, g["jobs"][i], p, w.gpus.size());
    if (!ids.insert(j.id).second) c.fail(p + "/id", "duplicate job id '" + j.id + "'");
    w.jobs.push_back(std::move(j));
  }
  return w;
}

nlohmann::json gpu_section_to_json(const GpuWorkload& w) {
  json gpus = json::array();
  for (const auto& g : w.gpus) {
    json o = json::object();
    o["memory_bytes"] = g.memory_bytes;
    o["pcie"] = g.pcie.name;
    // the rates that differ from the preset's (overrides survive a round trip)
    const PcieSpec preset = pcie_preset(g.pcie.name).value_or(PcieSpec{});
    if (g.pcie.copy_bytes_per_s != preset.copy_bytes_per_s) o["copy_bytes_per_s"] = g.pcie.copy_bytes_per_s;
    if (g.pcie.fault_bytes_per_s != preset.fault_bytes_per_s) o["fault_bytes_per_s"] = g.pcie.fault_bytes_per_s;
    if (g.pcie.fault_latency_ns != preset.fault_latency_ns) o["fault_latency_ns"] = g.pcie.fault_latency_ns;
    if (g.pcie.first_touch_bytes_per_s != preset.first_touch_bytes_per_s)
      o["first_touch_bytes_per_s"] = g.pcie.first_touch_bytes_per_s;
    if (g.pcie.create_bytes_per_s != preset.create_bytes_per_s) o["create_bytes_per_s"] = g.pcie.create_bytes_per_s;
    o["context_overhead_mb"] = g.context_overhead_bytes >> 20;
    if (g.corun_interference_pct != 100) o["corun_interference_pct"] = g.corun_interference_pct;
    gpus.push_back(o);
  }
  json jobs = json::array();
  for (const auto& j : w.jobs) {
    json o = json::object();
    o["id"] = j.id;
    o["arrival_ns"] = j.arrival_ns;
    o["memory_bytes"] = j.memory_bytes;
    o["touched_fraction"] = static_cast<double>(j.touched_ppm) / 1e6;
    o["iterations"] = j.iterations;
    o["kernel_ns"] = j.kernel_ns;
    o["kernels_per_iteration"] = j.kernels_per_iteration;
    if (j.sync_every) o["sync_every"] = j.sync_every;
    if (j.host_ns) o["host_ns"] = j.host_ns;
    if (j.sm_pct != 100) o["sm_pct"] = j.sm_pct;
    if (j.limit_pct) o["limit_pct"] = *j.limit_pct;
    if (j.gpu) o["gpu"] = *j.gpu;
    if (!j.limit_changes.empty()) {
      json lc = json::array();
      for (const auto& ch : j.limit_changes) lc.push_back({{"at_ns", ch.at_ns}, {"limit_pct", ch.limit_pct}});
      o["limit_changes"] = lc;
    }
    jobs.push_back(o);
  }
  return json{{"gpus", gpus}, {"jobs", jobs}};
}

}  // namespace agentcg::trace::gpu
