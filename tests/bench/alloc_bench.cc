// SPDX-License-Identifier: GPL-2.0-only
// Per-event allocation counter: this program replaces the global operator
// new/delete with counting versions and runs whole simulations of the same
// trace to two stop times, T and 2T. Setup (trace, cgroups, classes,
// results) costs the same in both, so
//     allocations per event = (allocs(2T) - allocs(T)) / (events(2T) - events(T))
// is the cost of the steady-state event path. Two workloads:
//  - "io": a fixed population (I/O-bound tasks against hogs, no forks): the
//    hot path alone; target 0 for every policy (the target; cfs at
//    least);
//  - "mixed": agent sessions and a fork storm, so new tasks (each one
//    allocates its process state) are part of the difference; reported per
//    event and per new task;
//  - "gpu": the GPU model under each GPU policy (64 jobs on 8 oversubscribed
//    GPUs, engine_bench's BM_GpuSim trace) at 10T and 20T iterations per
//    job (a GPU run ends when its jobs do, not at a stop time).
// Prints figures; asserts nothing (a smoke test runs it at a tiny size).
// Run: build/ci/tests/bench/alloc_bench [T_seconds=5]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "sim/api.h"
#include "sim/trace/trace.h"

namespace {
std::uint64_t g_allocs = 0;  // single-threaded program

void* counted(std::size_t n) {
  ++g_allocs;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* counted_aligned(std::size_t n, std::align_val_t a) {
  ++g_allocs;
  const auto al = static_cast<std::size_t>(a);
  if (void* p = std::aligned_alloc(al, (n + al - 1) / al * al)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t n) { return counted(n); }
void* operator new[](std::size_t n) { return counted(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  ++g_allocs;
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  ++g_allocs;
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new(std::size_t n, std::align_val_t a) { return counted_aligned(n, a); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_aligned(n, a); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

struct Count {
  std::uint64_t allocs, events, tasks;
};

Count run_to(const agentcg::trace::Trace& base, const std::string& policy, std::uint64_t stop_ns) {
  agentcg::trace::Trace t = base;
  t.duration_ns = stop_ns;
  agentcg::sim::RunOptions o;
  o.policy = policy;
  const std::uint64_t before = g_allocs;
  const auto r = agentcg::sim::run(t, o);
  const std::uint64_t allocs = g_allocs - before;
  return {allocs, r["events"].get<std::uint64_t>(), r["tasks"].get<std::uint64_t>()};
}

Count run_gpu(const std::string& policy, std::uint64_t iterations) {
  const auto t = agentcg::trace::generate("gpu-oversub", 1,
                                          {{"gpus", "8"}, {"jobs", "64"}, {"job-mem-gb", "12"}, {"gpu-mem-gb", "16"},
                                           {"iterations", std::to_string(iterations)}});
  agentcg::sim::RunOptions o;
  o.gpu_policy = policy;
  const std::uint64_t before = g_allocs;
  const auto r = agentcg::sim::run(t, o);
  return {g_allocs - before, r["events"].get<std::uint64_t>(), 0};
}

}  // namespace

int main(int argc, char** argv) {
  const double t_s = argc > 1 ? std::atof(argv[1]) : 5.0;
  if (!(t_s > 0)) {
    std::fprintf(stderr, "usage: alloc_bench [T_seconds > 0]\n");
    return 2;
  }
  const auto t_ns = static_cast<std::uint64_t>(t_s * 1e9);
  const std::string dur = std::to_string(static_cast<std::uint64_t>(2 * t_s * 1000)) + "ms";
  struct Workload {
    const char* name;
    agentcg::trace::Trace trace;
  };
  Workload loads[] = {
      {"io", agentcg::trace::generate("io", 1, {{"cpus", "16"}, {"duration", dur}})},
      {"mixed", agentcg::trace::generate("mixed", 1,
                                         {{"cpus", "64"}, {"duration", dur}, {"sessions", "64"},
                                          {"storm-rate", "120"}, {"io-tasks", "32"}, {"hogs", "48"}})},
  };
  std::printf("alloc_bench: allocations between a run to %.3g s and one to %.3g s (steady state)\n", t_s, 2 * t_s);
  std::printf("%-8s %-9s %12s %12s %10s %14s %14s\n", "trace", "policy", "d_events", "d_allocs", "d_tasks",
              "allocs/event", "allocs/task");
  for (const Workload& w : loads) {
    for (const std::string& policy : agentcg::sim::cpu_policies()) {
      const Count a = run_to(w.trace, policy, t_ns);
      const Count b = run_to(w.trace, policy, 2 * t_ns);
      const auto de = static_cast<double>(b.events - a.events);
      const auto da = static_cast<double>(b.allocs) - static_cast<double>(a.allocs);
      const auto dt = static_cast<double>(b.tasks - a.tasks);
      std::printf("%-8s %-9s %12.0f %12.0f %10.0f %14.4f %14s\n", w.name, policy.c_str(), de, da, dt,
                  de > 0 ? da / de : 0.0, dt > 0 ? std::to_string(da / dt).c_str() : "-");
    }
  }
  const auto iters = static_cast<std::uint64_t>(std::max(1.0, 10 * t_s));
  std::printf("\n%-28s %12s %12s %14s   (%llu and %llu iterations per job)\n", "gpu policy", "d_events", "d_allocs",
              "allocs/event", static_cast<unsigned long long>(iters), static_cast<unsigned long long>(2 * iters));
  for (const std::string& policy : agentcg::sim::gpu_policies()) {
    const Count a = run_gpu(policy, iters);
    const Count b = run_gpu(policy, 2 * iters);
    const auto de = static_cast<double>(b.events - a.events);
    const auto da = static_cast<double>(b.allocs) - static_cast<double>(a.allocs);
    std::printf("%-28s %12.0f %12.0f %14.4f\n", policy.c_str(), de, da, de > 0 ? da / de : 0.0);
  }
  return 0;
}
