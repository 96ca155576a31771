// SPDX-License-Identifier: GPL-2.0-only
// Engine and full-simulation benchmarks (figures quoted in the README):
//  - BM_Hold/N: the classic hold model: N pending events; each step pops the
//    earliest and schedules one at now + exponential delay. Reports ns per
//    event (target: <= 100 ns at 1e4 pending on the project's 2-core
//    machines; within 1.5x of BM_HoldBareRadix at 1e6).
//  - BM_HoldPriorityQueue/N, BM_HoldBareRadix/N: the same hold loop over a
//    bare std::priority_queue of (time, seq) and over a bare radix heap of
//    (time, seq) (no payload, no cancel, no checks): the floors the engine
//    is compared with, measured in the same run (baselines, not engines).
//  - BM_CpuSim: a full CPU simulation (64 CPUs, ~1,000 tasks, agent +
//    fork-storm mix, CFS and agentcg) reporting the speed-up over simulated
//    time (target: >= 30x).
#include <benchmark/benchmark.h>

#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "sim/api.h"
#include "sim/event_queue.h"
#include "sim/random.h"
#include "sim/trace/trace.h"

namespace {

using agentcg::sim::EventHandler;
using agentcg::sim::RandomStream;
using agentcg::sim::Simulator;
using agentcg::sim::Time;

struct Hold : EventHandler {
  RandomStream rng{1, "hold"};
  std::uint64_t mean_ns = 1000;
  void on_event(Simulator& sim, std::uint32_t, std::uint64_t) override {
    sim.schedule_in(Time::from_ns(static_cast<std::uint64_t>(rng.exponential(static_cast<double>(mean_ns)))), this, 0);
  }
};

void BM_Hold(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  Simulator sim;
  Hold h;
  h.mean_ns = 1000 * n;
  for (std::size_t i = 0; i < n; ++i) sim.schedule(Time::from_ns(h.rng.below(h.mean_ns)), &h, 0);
  // Warm up so that the heap reaches its steady shape.
  for (std::size_t i = 0; i < std::min<std::size_t>(n, 100000); ++i) sim.step();
  for (auto _ : state) sim.step();
  state.SetItemsProcessed(state.iterations());
  state.counters["ns_per_event"] = benchmark::Counter(
      static_cast<double>(state.iterations()), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Hold)->Arg(100)->Arg(10000)->Arg(1000000);

// Baseline 1: a bare binary heap of (time, seq); the same RNG draws.
void BM_HoldPriorityQueue(benchmark::State& state) {
  using Item = std::pair<std::uint64_t, std::uint64_t>;
  const auto n = static_cast<std::uint64_t>(state.range(0));
  RandomStream rng{1, "hold"};
  const std::uint64_t mean_ns = 1000 * n;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> q;
  std::uint64_t seq = 0;
  for (std::uint64_t i = 0; i < n; ++i) q.emplace(rng.below(mean_ns), seq++);
  auto step = [&] {
    const std::uint64_t t = q.top().first;
    q.pop();
    q.emplace(t + static_cast<std::uint64_t>(rng.exponential(static_cast<double>(mean_ns))), seq++);
  };
  for (std::uint64_t i = 0; i < std::min<std::uint64_t>(n, 100000); ++i) step();
  for (auto _ : state) step();
  state.counters["ns_per_event"] = benchmark::Counter(
      static_cast<double>(state.iterations()), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_HoldPriorityQueue)->Arg(100)->Arg(10000)->Arg(1000000);

// Baseline 2: a bare radix heap of 16-byte (time, seq) nodes, the same
// bucket scheme as the engine without payloads, cancel or checks.
class BareRadixHeap {
 public:
  struct Node {
    std::uint64_t time, seq;
  };
  void push(Node n) {
    buckets_[bucket(n.time)].push_back(n);
    ++size_;
  }
  Node pop() {
    if (head0_ == buckets_[0].size()) {
      buckets_[0].clear();
      head0_ = 0;
      unsigned i = 1;
      while (buckets_[i].empty()) ++i;
      std::uint64_t m = buckets_[i].front().time;
      for (const Node& x : buckets_[i]) m = x.time < m ? x.time : m;
      last_ = m;
      for (const Node& x : buckets_[i]) buckets_[bucket(x.time)].push_back(x);
      buckets_[i].clear();
    }
    --size_;
    return buckets_[0][head0_++];
  }

 private:
  unsigned bucket(std::uint64_t t) const {
    return t == last_ ? 0 : 64 - static_cast<unsigned>(__builtin_clzll(t ^ last_));
  }
  std::vector<Node> buckets_[65];
  std::size_t head0_ = 0, size_ = 0;
  std::uint64_t last_ = 0;
};

void BM_HoldBareRadix(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  RandomStream rng{1, "hold"};
  const std::uint64_t mean_ns = 1000 * n;
  BareRadixHeap q;
  std::uint64_t seq = 0;
  for (std::uint64_t i = 0; i < n; ++i) q.push({rng.below(mean_ns), seq++});
  auto step = [&] {
    const std::uint64_t t = q.pop().time;
    q.push({t + static_cast<std::uint64_t>(rng.exponential(static_cast<double>(mean_ns))), seq++});
  };
  for (std::uint64_t i = 0; i < std::min<std::uint64_t>(n, 100000); ++i) step();
  for (auto _ : state) step();
  state.counters["ns_per_event"] = benchmark::Counter(
      static_cast<double>(state.iterations()), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_HoldBareRadix)->Arg(100)->Arg(10000)->Arg(1000000);

void BM_CpuSim(benchmark::State& state, const std::string& policy) {
  // 64 CPUs; agent sessions plus a fork storm: ~1,000 tasks over 10 s.
  const auto trace = agentcg::trace::generate(
      "mixed", 1,
      {{"cpus", "64"}, {"duration", "10s"}, {"sessions", "64"}, {"storm-rate", "120"}, {"io-tasks", "32"}, {"hogs", "48"}});
  agentcg::sim::RunOptions o;
  o.policy = policy;
  double simulated_ns = 0, tasks = 0, events = 0;
  for (auto _ : state) {
    const auto r = agentcg::sim::run(trace, o);
    simulated_ns = r["duration_ns"].get<double>();
    tasks = r["tasks"].get<double>();
    events = r["events"].get<double>();
  }
  state.counters["tasks"] = tasks;
  state.counters["events"] = events;
  state.counters["simulated_s"] = simulated_ns / 1e9;
  state.counters["speedup_x"] = benchmark::Counter(simulated_ns / 1e9 * static_cast<double>(state.iterations()),
                                                   benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_CpuSim, cfs, std::string("cfs"))->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_CpuSim, agentcg, std::string("agentcg"))->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
