// SPDX-License-Identifier: GPL-2.0-only
// CSV job traces -> trace "gpu" section (see gpu_csv_import.h).
//
// Mapping: one row = one job on one GPU. A row asking for more than one GPU
// (num_gpu > 1) is refused, never squeezed onto one: the model has no gang
// scheduling, so such a row is skipped and counted (refused_multi_gpu, with
// the GPUs it asked for) or, with --strict, an error naming the line; a job
// whose memory plus one context cannot fit one GPU is refused the same way
// (refused_over_capacity). Times are bounded (duration and submit_time at
// most kMaxSeconds, so that ns fit in 64 bits; a 1.8e19 s duration used to
// overflow llround). The trace written is checked with parse_gpu_section(),
// the validator `run` uses. duration (s) is the job's GPU time alone; iterations = the
// iterations column, else duration / iteration_ns, capped at
// max_iterations; kernel_ns = duration / iterations. submit_time (s) is the
// arrival, else row x interarrival_ns. `interval` is not used (counted).
// Memory comes from model_name through the table below.
#include "sim/import/gpu_csv_import.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "sim/import/import.h"
#include "sim/trace/gpu_trace.h"

namespace agentcg::sim::gpu {
// The trace's GPU section types are the trace library's (sim/trace/gpu_trace.h).
using trace::gpu::GpuJob;
using trace::gpu::GpuSpec;
using trace::gpu::GpuWorkload;
using trace::gpu::gpu_section_to_json;
using trace::gpu::parse_gpu_section;
using trace::gpu::pcie_preset;
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

// Times in the trace are u64 ns; 1e9 s (31 years) keeps every product and
// sum far from 2^64 ns (1.8e10 s).
constexpr double kMaxSeconds = 1e9;

std::string gib(std::uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(b) / (1ull << 30));
  return buf;
}

}  // namespace

std::uint64_t model_memory_bytes(const std::string& model_name) {
  std::string m = model_name;
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& e : kModels) {
    if (m == e.name) {
      const double bytes = e.params_m * 1e6 * 16 + e.activations_gib * (1ull << 30);
      return static_cast<std::uint64_t>(bytes);  // < 2^40: exact enough, no llround overflow
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
  if (opt.gpus < 1 || opt.gpus > 4096)
    throw std::invalid_argument("gpus: expected 1..4096, got " + std::to_string(opt.gpus));
  if (!(opt.gpu_memory_gb > 0) || opt.gpu_memory_gb > 1 << 20)
    throw std::invalid_argument("gpu memory: expected 0 < GiB <= 1048576, got " + std::to_string(opt.gpu_memory_gb));
  auto pcie = pcie_preset(opt.pcie);
  if (!pcie) throw std::invalid_argument("pcie: expected gen3, gen4 or gen5, got '" + opt.pcie + "'");
  GpuWorkload w;
  for (std::uint32_t g = 0; g < std::max<std::uint32_t>(1, opt.gpus); ++g) {
    GpuSpec s;
    s.memory_bytes = static_cast<std::uint64_t>(opt.gpu_memory_gb * (1ull << 30));  // bounded above
    s.pcie = *pcie;
    w.gpus.push_back(s);
  }
  std::uint64_t lineno = 1, rows = 0, skipped = 0, multi = 0, unknown_model = 0, interval_rows = 0;
  std::uint64_t refused_multi = 0, refused_multi_gpus = 0, refused_capacity = 0, gpus_asked = 0;
  const std::uint64_t gpu_bytes = w.gpus.front().memory_bytes;
  const std::uint64_t ctx = w.gpus.front().context_overhead_bytes;
  nlohmann::json examples = nlohmann::json::array();
  std::map<std::string, int> ids;
  std::set<std::string> used;
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
    if (!parse_number(*field("duration"), duration) || duration <= 0 || duration > kMaxSeconds) {
      bad("duration", "expected a positive number of seconds up to 1e9, got '" + *field("duration") + "'");
      continue;
    }
    GpuJob j;
    if (const auto* id = field("job_id"); id && !id->empty()) {
      // JSON text is UTF-8: a byte that is not becomes '?' here, before the
      // duplicate check (the writer replaced "\xff" and "\xd0" with the
      // same U+FFFD later, so two distinct ids parsed back as one: a fuzz
      // finding, fuzz/corpus/import_gpu_csv/non-utf8-ids.csv).
      j.id = import::utf8_or_replace(*id);
    } else {
      j.id = "row" + std::to_string(lineno);
    }
    // A repeated id gets the first free "#N" suffix: "a", "a", "a#2" must
    // not end as two "a#2" (parse_gpu_section rejects duplicate ids, which
    // lost the whole non-strict import). ids: the next suffix to try per
    // base id; used: every id given out.
    if (!used.insert(j.id).second) {
      const std::string base = j.id;
      int& n = ids[base];
      do {
        j.id = base + "#" + std::to_string(++n + 1);
      } while (!used.insert(j.id).second);
    }
    double submit = 0;
    if (const auto* s = field("submit_time")) {
      if (!parse_number(*s, submit) || submit < 0 || submit > kMaxSeconds) {
        bad("submit_time", "expected a non-negative number of seconds up to 1e9, got '" + *s + "'");
        continue;
      }
      j.arrival_ns = static_cast<std::uint64_t>(submit * 1e9);  // <= 1e18: fits u64
    } else {
      j.arrival_ns = rows * opt.interarrival_ns;
    }
    std::uint64_t asked = 1;
    if (const auto* g = field("num_gpu")) {
      double n = 0;
      if (!parse_number(*g, n) || n < 1 || n > 65536 || n != std::floor(n)) {
        bad("num_gpu", "expected an integer 1..65536, got '" + *g + "'");
        continue;
      }
      asked = static_cast<std::uint64_t>(n);
    }
    gpus_asked += asked;
    if (asked > 1) {
      ++multi;
      if (opt.strict)
        throw trace::TraceError(path, static_cast<std::uint32_t>(lineno), "num_gpu",
                                "job asks for " + std::to_string(asked) +
                                    " GPUs; multi-GPU (gang) jobs are not modelled (one job = one GPU)");
      ++refused_multi;
      refused_multi_gpus += asked;
      continue;
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
    j.kernel_ns = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(dur_ns / iters + 0.5));  // <= 1e18
    j.memory_bytes = opt.default_memory_bytes;
    if (const auto* m = field("model_name")) {
      const std::uint64_t b = model_memory_bytes(*m);
      if (b) j.memory_bytes = b; else ++unknown_model;
    }
    if (j.memory_bytes + ctx > gpu_bytes) {
      if (opt.strict)
        throw trace::TraceError(path, static_cast<std::uint32_t>(lineno), "model_name",
                                "job needs " + gib(j.memory_bytes) + " + a " + gib(ctx) + " context, more than a " +
                                    gib(gpu_bytes) + " GPU");
      ++refused_capacity;
      continue;
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
                 {"gpus_asked", gpus_asked},
                 {"refused_multi_gpu", refused_multi},
                 {"refused_multi_gpu_gpus", refused_multi_gpus},
                 {"refused_over_capacity", refused_capacity},
                 {"unknown_model_rows", unknown_model},
                 {"interval_ignored_rows", interval_rows},
                 {"options",
                  {{"strict", opt.strict}, {"gpus", opt.gpus}, {"gpu_memory_gb", opt.gpu_memory_gb},
                   {"pcie", opt.pcie}, {"interarrival_ns", opt.interarrival_ns},
                   {"max_iterations", opt.max_iterations}, {"iteration_ns", opt.iteration_ns},
                   {"max_jobs", opt.max_jobs}, {"default_memory_bytes", opt.default_memory_bytes}}}};
  // An import without a job is an error, not an empty trace (the summary
  // says why every line was refused or skipped).
  if (rows == 0)
    throw trace::TraceError(path, 0, "", "no job imported: " + import_summary(t).substr(0, import_summary(t).find('\n')));
  // One validation path: what `run` will parse, parsed here (throws
  // trace::TraceError naming the field).
  (void)parse_gpu_section(t);
  return t;
}

std::string import_summary(const trace::Trace& t) {
  const auto& g = t.generator;
  const auto& o = g.at("options");
  std::ostringstream s;
  s << "gpu-csv: " << g.at("rows").get<std::uint64_t>() << " jobs on " << o.at("gpus").get<std::uint32_t>()
    << " GPU(s) of " << o.at("gpu_memory_gb").get<double>() << " GiB (" << g.at("gpus_asked").get<std::uint64_t>()
    << " GPUs asked in all)";
  s << "; skipped " << g.at("skipped").get<std::uint64_t>() << " malformed line(s)";
  if (auto n = g.at("refused_multi_gpu").get<std::uint64_t>())
    s << "; refused " << n << " multi-GPU job(s) asking " << g.at("refused_multi_gpu_gpus").get<std::uint64_t>()
      << " GPUs (gangs are not modelled)";
  if (auto n = g.at("refused_over_capacity").get<std::uint64_t>())
    s << "; refused " << n << " job(s) larger than one GPU";
  if (auto n = g.at("unknown_model_rows").get<std::uint64_t>())
    s << "; " << n << " job(s) with an unknown model got the default memory";
  if (!g.contains("rows") || g.at("rows").get<std::uint64_t>() == 0) s << "; no job imported";
  s << "\n";
  for (const auto& e : g.at("skipped_examples")) s << "  " << e.get<std::string>() << "\n";
  return s.str();
}

}  // namespace agentcg::sim::gpu
