// SPDX-License-Identifier: GPL-2.0-only
// gpu_cluster_bench: a GPU cluster job trace (the gpu-csv format) at several
// machine sizes x the GPU policies (x placements), one table row per run:
// makespan, JCT p50 / p99 (finished jobs; nearest-rank percentiles),
// utilisation (busy GPU time / (makespan x GPUs)), bytes moved over PCIe,
// and the simulator's cost per event (wall ns / executed events, the one
// timed figure: a benchmark, not a test). Deterministic apart from that
// column. Reproduces the README's cluster table:
//   build/ci/sim/gpu_cluster_bench TRACE.csv [--gpus 1,2,4,8] [--gpu-mem-gb 16]
//       [--policies a,b] [--placements spread,pack,first-fit] [--max-jobs N]
// Who calls it: people (README), never CTest.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "agentcg/gpu/policy.h"
#include "sim/event_queue.h"
#include "sim/import/gpu_csv_import.h"
#include "sim/gpu/gpu_sim.h"

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t rank = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size()) + 0.999999);
  rank = std::clamp<std::size_t>(rank, 1, v.size());
  return v[rank - 1];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace agentcg;
  if (argc < 2 || std::string(argv[1]) == "--help") {
    std::fprintf(stderr,
                 "usage: gpu_cluster_bench TRACE.csv [--gpus 1,2,4,8] [--gpu-mem-gb 16] [--policies a,b]\n"
                 "                         [--placements spread] [--max-jobs N]\n");
    return argc < 2 ? 2 : 0;
  }
  std::string csv = argv[1];
  std::vector<std::string> gpus = {"1", "2", "4", "8"}, placements = {"spread"};
  std::vector<std::string> policies = gpu::gpu_policy_kinds();
  double mem_gb = 16;
  std::uint64_t max_jobs = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--gpus") gpus = split(v);
    else if (a == "--policies") policies = split(v);
    else if (a == "--placements") placements = split(v);
    else if (a == "--gpu-mem-gb") mem_gb = std::atof(v.c_str());
    else if (a == "--max-jobs") max_jobs = std::strtoull(v.c_str(), nullptr, 10);
    else {
      std::fprintf(stderr, "gpu_cluster_bench: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  std::printf("| GPUs | policy | placement | makespan (h) | JCT p50 (h) | JCT p99 (h) | util %% | PCIe (TB) | "
              "finished | events | ns/event |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& gs : gpus) {
    sim::gpu::ImportOptions o;
    o.gpus = static_cast<std::uint32_t>(std::stoul(gs));
    o.gpu_memory_gb = mem_gb;
    o.max_jobs = max_jobs;
    trace::Trace t;
    try {
      t = sim::gpu::import_gpu_csv(csv, o);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gpu_cluster_bench: %s\n", e.what());
      return 1;
    }
    std::fputs(sim::gpu::import_summary(t).c_str(), stderr);
    for (const auto& p : policies) {
      for (const auto& pl : placements) {
        config::GpuConfig cfg;
        cfg.placement = pl;
        sim::Simulator s;
        auto g = sim::gpu::make_gpu_simulation(s, t, p, cfg, 1);
        g->start();
        const auto t0 = std::chrono::steady_clock::now();
        while (!g->done() && s.step()) {
        }
        const double wall_ns =
            std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
        const auto r = g->results();
        std::vector<double> jct;
        for (const auto& [id, j] : r["jobs"].items())
          if (!j["jct_ns"].is_null()) jct.push_back(j["jct_ns"].get<double>());
        const double h = 3600e9;
        std::printf("| %s | %s | %s | %.1f | %.2f | %.1f | %.1f | %.2f | %llu/%llu | %llu | %.0f |\n", gs.c_str(), p.c_str(),
                    pl.c_str(), r["makespan_ns"].get<double>() / h, pct(jct, 50) / h, pct(jct, 99) / h,
                    r["busy_fraction"].get<double>() * 100, r["bytes_migrated"].get<double>() / 1e12,
                    static_cast<unsigned long long>(r["jobs_finished"].get<std::uint64_t>()),
                    static_cast<unsigned long long>(r["jobs_total"].get<std::uint64_t>()),
                    static_cast<unsigned long long>(s.executed_count()),
                    wall_ns / static_cast<double>(std::max<std::uint64_t>(1, s.executed_count())));
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
