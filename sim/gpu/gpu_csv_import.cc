// SPDX-License-Identifier: GPL-2.0-only
// CSV job traces -> trace "gpu" section (see gpu_csv_import.h).
//
// Mapping: one row = one job on one GPU (num_gpu > 1 is kept as a one-GPU
// job and counted in generator.multi_gpu_rows: the model has no gang
// scheduling). duration (s) is the job's GPU time alone; iterations = the
// iterations column, else duration / iteration_ns, capped at
// max_iterations; kernel_ns = duration / iterations. submit_time (s) is the
// arrival, else row x interarrival_ns. `interval` is not used (counted).
// Memory comes from model_name through the table below.
#include "sim/gpu/gpu_csv_import.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "sim/gpu/gpu_trace.h"

namespace agentcg::sim::gpu {
namespace {

// Training footprints: weights + gradients + two Adam moments in fp32 =
// 16 bytes x parameters (parameter counts from the models' papers: AlexNet
// 61M, Krizhevsky 2012; VGG-16 138M / VGG-19 144M, Simonyan & Zisserman 2015;
// ResNet-50 25.6M / ResNet-101 44.5M / ResNet-152 60.2M, He et al. 2016;
// Inception-v3 23.8M, Szegedy et al. 2016; GoogLeNet 6.8M, Szegedy 2015;
// BERT-base 110M / BERT-large 340M, Devlin et al. 2019; Transformer-big 213M,
// Vaswani et al. 2017), plus an activation term at a typical batch size that
// is an ESTIMATE (not a cited figure), rounded to 0.5 GiB.
struct ModelMem {
  const char* name;
  double params_m;
  double activations_gib;
};
constexpr ModelMem kModels[] = {
    {"alexnet", 61, 1.0},      {"vgg11", 133, 4.0},     {"vgg16", 138, 6.0},
    {"vgg19", 144, 6.5},       {"resnet18", 11.7, 2.0}, {"resnet50", 25.6, 5.0},
    {"resnet101", 44.5, 7.0},  {"resnet152", 60.2, 9.0}, {"inception3", 23.8, 5.5},
    {"inception4", 42.7, 7.5}, {"googlenet", 6.8, 2.5}, {"bert", 110, 6.0},
    {"bert-large", 340, 10.0}, {"transformer", 213, 6.0}, {"lstm", 66, 2.0},
};

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : line) {
    if (ch == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (ch != '\r' && ch != '"') {
      cur += ch;
    }
  }
  out.push_back(cur);
  for (auto& s : out) {
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
    std::size_t b = 0;
    while (b < s.size() && (s[b] == ' ' || s[b] == '\t')) ++b;
    s = s.substr(b);
  }
  return out;
}

bool parse_number(const std::string& s, double& v) {
  if (s.empty()) return false;
  std::size_t used = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == s.size() && std::isfinite(v);
}

}  // namespace

std::uint64_t model_memory_bytes(const std::string& model_name) {
  std::string m = model_name;
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& e : kModels) {
    if (m == e.name) {
      const double bytes = e.params_m * 1e6 * 16 + e.activations_gib * (1ull << 30);
      return static_cast<std::uint64_t>(std::llround(bytes));
    }
  }
  return 0;
}

trace::Trace import_gpu_csv(const std::string& path, const ImportOptions& opt) {
  std::ifstream in(path);
  if (!in) throw trace::TraceError(path, 0, "", "cannot open GPU job CSV file");
  std::string line;
  if (!std::getline(in, line)) throw trace::TraceError(path, 1, "", "empty file: expected a CSV header");
  std::map<std::string, std::size_t> col;
  const auto header = split(line);
  for (std::size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  if (!col.count("duration"))
    throw trace::TraceError(path, 1, "duration",
                            "header has no 'duration' column (expected columns job_id,num_gpu,"
                            "submit_time,iterations,model_name,duration,interval; duration required)");
  auto pcie = pcie_preset(opt.pcie);
  if (!pcie) throw std::invalid_argument("pcie: expected gen3, gen4 or gen5, got '" + opt.pcie + "'");
  GpuWorkload w;
  for (std::uint32_t g = 0; g < std::max<std::uint32_t>(1, opt.gpus); ++g) {
    GpuSpec s;
    s.memory_bytes = static_cast<std::uint64_t>(std::llround(opt.gpu_memory_gb * (1ull << 30)));
    s.pcie = *pcie;
    w.gpus.push_back(s);
  }
  std::uint64_t lineno = 1, rows = 0, skipped = 0, multi = 0, unknown_model = 0, interval_rows = 0;
  nlohmann::json examples = nlohmann::json::array();
  std::map<std::string, int> ids;
  auto bad = [&](const std::string& column, const std::string& why) {
    if (opt.strict) throw trace::TraceError(path, static_cast<std::uint32_t>(lineno), column, why);
    ++skipped;
    if (examples.size() < 5) examples.push_back(path + ":" + std::to_string(lineno) + ": " + column + ": " + why);
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (opt.max_jobs && rows >= opt.max_jobs) break;
    const auto f = split(line);
    if (f.size() != header.size()) {
      bad("(row)", "expected " + std::to_string(header.size()) + " fields, got " + std::to_string(f.size()));
      continue;
    }
    auto field = [&](const std::string& name) -> const std::string* {
      auto it = col.find(name);
      return it == col.end() ? nullptr : &f[it->second];
    };
    double duration = 0;
    if (!parse_number(*field("duration"), duration) || duration <= 0) {
      bad("duration", "expected a positive number of seconds, got '" + *field("duration") + "'");
      continue;
    }
    GpuJob j;
    if (const auto* id = field("job_id"); id && !id->empty()) {
      j.id = *id;
    } else {
      j.id = "row" + std::to_string(lineno);
    }
    if (ids[j.id]++) j.id += "#" + std::to_string(ids[j.id]);
    double submit = 0;
    if (const auto* s = field("submit_time")) {
      if (!parse_number(*s, submit) || submit < 0) {
        bad("submit_time", "expected a non-negative number of seconds, got '" + *s + "'");
        continue;
      }
      j.arrival_ns = static_cast<std::uint64_t>(std::llround(submit * 1e9));
    } else {
      j.arrival_ns = rows * opt.interarrival_ns;
    }
    if (const auto* g = field("num_gpu")) {
      double n = 0;
      if (!parse_number(*g, n) || n < 1 || n != std::floor(n)) {
        bad("num_gpu", "expected a positive integer, got '" + *g + "'");
        continue;
      }
      if (n > 1) ++multi;
    }
    const double dur_ns = duration * 1e9;
    double iters = std::max(1.0, std::floor(dur_ns / static_cast<double>(opt.iteration_ns)));
    if (const auto* it = field("iterations")) {
      if (!parse_number(*it, iters) || iters < 1) {
        bad("iterations", "expected a positive integer, got '" + *it + "'");
        continue;
      }
    }
    iters = std::min(iters, static_cast<double>(std::max<std::uint64_t>(1, opt.max_iterations)));
    j.iterations = static_cast<std::uint64_t>(iters);
    j.kernel_ns = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(dur_ns / iters)));
    j.memory_bytes = opt.default_memory_bytes;
    if (const auto* m = field("model_name")) {
      const std::uint64_t b = model_memory_bytes(*m);
      if (b) j.memory_bytes = b; else ++unknown_model;
    }
    if (field("interval")) ++interval_rows;
    j.pointer = "/gpu/jobs/" + std::to_string(w.jobs.size());
    w.jobs.push_back(std::move(j));
    ++rows;
  }
  trace::Trace t;
  const auto slash = path.find_last_of('/');
  t.name = "gpu-csv:" + (slash == std::string::npos ? path : path.substr(slash + 1));
  t.description = "GPU jobs imported from a CSV job trace (sim/gpu/README.md)";
  t.source = path;
  t.extra["gpu"] = gpu_section_to_json(w);
  t.generator = {{"kind", "gpu-csv"},
                 {"input", t.name.substr(8)},
                 {"rows", rows},
                 {"skipped", skipped},
                 {"skipped_examples", examples},
                 {"multi_gpu_rows", multi},
                 {"unknown_model_rows", unknown_model},
                 {"interval_ignored_rows", interval_rows},
                 {"options",
                  {{"strict", opt.strict}, {"gpus", opt.gpus}, {"gpu_memory_gb", opt.gpu_memory_gb},
                   {"pcie", opt.pcie}, {"interarrival_ns", opt.interarrival_ns},
                   {"max_iterations", opt.max_iterations}, {"iteration_ns", opt.iteration_ns},
                   {"max_jobs", opt.max_jobs}, {"default_memory_bytes", opt.default_memory_bytes}}}};
  return t;
}

}  // namespace agentcg::sim::gpu
