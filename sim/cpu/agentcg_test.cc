// SPDX-License-Identifier: GPL-2.0-only
// Acceptance tests of flatcg/agentcg in the CPU model: each feature's
// intent, measured through agentcg::sim::run() on traces built in code
// (or the io generator), compared with flatcg where the issue asks for it.
// The numbers asserted are the specification's (fair shares, 4/5 under a
// storm, 1/(1+penalty) weights, cpu.max quota, 500 us min_slice, 100 ms
// starvation bound), not values tuned to what the code produced.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agentcg/agentcg.h"
#include "agentcg/eevdf.h"
#include "agentcg/tunables.h"
#include "sim/api.h"
#include "sim/cpu/cpu_model.h"
#include "sim/cpu/scx_class.h"
#include "sim/event_queue.h"
#include "sim/trace/trace.h"
#include "tests/support/trace_builder.h"

namespace agentcg::sim {
namespace {

constexpr std::uint64_t kUs = 1000, kMs = 1000000, kSec = 1000000000;

using trace::testing::fork_op;
using trace::testing::mem_op;
using trace::testing::repeat_op;
using trace::testing::run_op;
using trace::testing::sleep_op;
using trace::testing::wait_op;
using trace::testing::tool_op;
using Builder = trace::testing::TraceBuilder;

nlohmann::json run_policy(const trace::Trace& t, const std::string& policy) {
  RunOptions o;
  o.policy = policy;
  return run(t, o);
}

nlohmann::json run_agentcg(const trace::Trace& t, std::uint32_t features) {
  RunOptions o;
  o.policy = "agentcg";
  o.config.scheduler.features = features;
  return run(t, o);
}

// Four CPUs, four hogs in /hog and an /agent of the same weight running
// `agent_ops`, for `duration_ns`; fork_aware off (the agent's forks would
// be a storm), so that what a test compares is placement alone.
nlohmann::json agent_beside_four_hogs(std::uint64_t duration_ns, std::vector<trace::Op> agent_ops,
                                      std::uint32_t features = AGENTCG_F_DEFAULT & ~AGENTCG_F_FORK_AWARE) {
  Builder b(4, duration_ns);
  b.cgroup("/hog", 100);
  b.cgroup("/agent", 100);
  b.hogs("/hog", 4);
  b.process("/agent", std::move(agent_ops));
  return run_agentcg(b.t, features);
}

double share(const nlohmann::json& r, const std::string& cg) {
  return r["cgroups"][cg]["cpu_share"].get<double>();
}

// Mean of a cgroup's CPU-share series over [from_ns, to_ns).
double share_between(const nlohmann::json& r, const std::string& cg, std::uint64_t from_ns,
                     std::uint64_t to_ns) {
  const std::uint64_t iv = r["series"]["interval_ns"].get<std::uint64_t>();
  const auto& s = r["series"]["cgroups"][cg];
  double sum = 0;
  int n = 0;
  for (std::uint64_t b = from_ns / iv; b < to_ns / iv && b < s.size(); b++) {
    sum += s[b].get<double>();
    n++;
  }
  return n ? sum / n : 0.0;
}

std::uint64_t counter(const nlohmann::json& r, const std::string& name) {
  return r["counters"].contains(name) ? r["counters"][name].get<std::uint64_t>() : 0;
}

TEST(ScxFactory, KnowsFlatcgAndAgentcgOnly) {
  const agentcg_tunables t = agentcg_tunables_default();
  EXPECT_EQ(make_scx_class("flatcg", t)->name(), "flatcg");
  EXPECT_EQ(make_scx_class("agentcg", t)->name(), "agentcg");
  EXPECT_EQ(make_scx_class("cfs", t), nullptr);
  EXPECT_EQ(make_scx_class("", t), nullptr);
}

// Hierarchy flattening: /p (100) holds /p/a (100) and /p/b (300), beside /q (100).
TEST(ScxAcceptance, NestedWeightsFlatten) {
  Builder b(2, 10 * kSec);
  b.cgroup("/p", 100);
  b.cgroup("/p/a", 100);
  b.cgroup("/p/b", 300);
  b.cgroup("/q", 100);
  for (const char* c : {"/p/a", "/p/b", "/q"}) b.hogs(c, 2, 10 * kSec);
  const auto r = run_policy(b.done(), "flatcg");
  EXPECT_NEAR(share(r, "/p/a"), 1.0 / 8, 0.01 / 8);
  EXPECT_NEAR(share(r, "/p/b"), 3.0 / 8, 0.01 * 3 / 8);
  EXPECT_NEAR(share(r, "/q"), 1.0 / 2, 0.01 / 2);
}

// cpu.max on a parent limits its children together; cpu.stat stays consistent.
TEST(ScxAcceptance, ParentCpuMaxLimitsChildrenTogether) {
  Builder b(2, 10 * kSec);
  trace::CpuMax m;
  m.quota_us = 50000;
  m.period_us = 100000;
  b.cgroup("/p").cpu_max = m;
  b.cgroup("/p/c1");
  b.cgroup("/p/c2");
  b.cgroup("/other");
  for (const char* c : {"/p/c1", "/p/c2", "/other"}) b.hogs(c, 2, 10 * kSec);
  const trace::Trace& t = b.done();
  for (const char* policy : {"flatcg", "agentcg"}) {
    const auto r = run_policy(t, policy);
    // 0.5 CPU of 2: a quarter of the machine, split between the children
    EXPECT_NEAR(share(r, "/p/c1") + share(r, "/p/c2"), 0.25, 0.01) << policy;
    EXPECT_NEAR(share(r, "/p/c1"), share(r, "/p/c2"), 0.02) << policy;
    const auto& p = r["cgroups"]["/p"];
    EXPECT_GT(p["nr_throttled"].get<std::uint64_t>(), 50u) << policy;
    EXPECT_LE(p["nr_throttled"].get<std::uint64_t>(), p["nr_periods"].get<std::uint64_t>()) << policy;
  }
}

// Startup boost: an agent whose steps start after idle periods (LLM think
// time) gets its first burst on a CPU sooner under agentcg than flatcg,
// while its long-run share stays that of flatcg (the boost moves CPU time
// earlier, it adds none).
TEST(ScxAcceptance, StartupBoostStartsNewStepsSooner) {
  Builder b(2, 20 * kSec);
  b.cgroup("/batch");
  b.cgroup("/agent");
  b.hogs("/batch", 4, 20 * kSec);
  b.process("/agent", {repeat_op(40, {sleep_op(300 * kMs), run_op(60 * kMs)})});
  const trace::Trace& t = b.done();
  const auto f = run_policy(t, "flatcg");
  const auto a = run_policy(t, "agentcg");
  const auto fl = f["cgroups"]["/agent"]["wakeup_latency_ns"];
  const auto al = a["cgroups"]["/agent"]["wakeup_latency_ns"];
  std::printf("startup boost: /agent wakeup p50 flatcg %llu agentcg %llu ns; p99 %llu vs %llu ns\n",
              (unsigned long long)fl["p50"].get<std::uint64_t>(), (unsigned long long)al["p50"].get<std::uint64_t>(),
              (unsigned long long)fl["p99"].get<std::uint64_t>(), (unsigned long long)al["p99"].get<std::uint64_t>());
  // p50 may already be the model's floor (wakeup path + context switch)
  EXPECT_LE(al["p50"].get<std::uint64_t>(), fl["p50"].get<std::uint64_t>());
  EXPECT_LT(al["p99"].get<std::uint64_t>(), fl["p99"].get<std::uint64_t>());
  EXPECT_GE(counter(a, "boosts_granted"), 30u);
  EXPECT_NEAR(share(a, "/agent"), share(f, "/agent"), 0.01);
}

// Memory penalty: /a crosses memory.high four times 20 ms apart at 2 s:
// penalty 4 (weight 100/5 = 20: share 20/120 of the CPU), then one step
// less every 5 s (25/125, 33/133, 50/150) and back to 1/2.
TEST(ScxAcceptance, MemoryPenaltyLowersShareAndDecays) {
  Builder b(1, 25 * kSec);
  b.cgroup("/a").memory_high = 100ull << 20;
  b.cgroup("/b");
  b.hogs("/a", 1, 25 * kSec);
  b.hogs("/b", 1, 25 * kSec);
  b.process("/a", {sleep_op(2 * kSec), mem_op(200ull << 20), sleep_op(20 * kMs), mem_op(210ull << 20),
                   sleep_op(20 * kMs), mem_op(220ull << 20), sleep_op(20 * kMs), mem_op(230ull << 20),
                   sleep_op(30 * kSec)});
  const trace::Trace& t = b.done();
  // mem_penalty is off by default (tunables.h AGENTCG_F_DEFAULT): on here
  const auto a = run_agentcg(t, AGENTCG_F_ALL);
  const auto f = run_policy(t, "flatcg");
  const auto d = run_policy(t, "agentcg");
  EXPECT_EQ(counter(d, "penalties_applied"), 0u);
  EXPECT_NEAR(share_between(d, "/a", 3 * kSec, 7 * kSec), 0.5, 0.02);
  EXPECT_NEAR(share_between(a, "/a", 0, 2 * kSec), 0.5, 0.02);
  EXPECT_NEAR(share_between(a, "/a", 3 * kSec, 7 * kSec), 20.0 / 120, 0.02);
  EXPECT_NEAR(share_between(a, "/a", 8 * kSec, 12 * kSec), 25.0 / 125, 0.02);
  EXPECT_NEAR(share_between(a, "/a", 13 * kSec, 17 * kSec), 33.0 / 133, 0.02);
  EXPECT_NEAR(share_between(a, "/a", 18 * kSec, 22 * kSec), 50.0 / 150, 0.02);
  EXPECT_NEAR(share_between(a, "/a", 23 * kSec, 25 * kSec), 0.5, 0.02);
  EXPECT_EQ(counter(a, "penalties_applied"), 4u);
  EXPECT_EQ(counter(a, "penalties_released"), 4u);
  EXPECT_NEAR(share_between(f, "/a", 3 * kSec, 7 * kSec), 0.5, 0.02);
}

// Fork storm: /storm (a hog plus a parent forking 100 children/s of 5 ms
// from 1 s to 4 s) against /victim (a hog and an agent making tool calls).
// agentcg: the storm is detected within its first window, the victim's
// share while both are busy rises from 1/2 to 100/125 = 4/5, and comes back
// to 1/2 once a window passed without a storm; tool calls get faster.
// (The storm's parent waits behind its own backlog of children, as under
// the kernel's EEVDF, so its 300 forks take until ~7 s: recovery is
// checked after that, 11-14 s.)
TEST(ScxAcceptance, ForkStormIsDownWeightedAndRecovers) {
  Builder b(1, 14 * kSec);
  b.cgroup("/storm");
  b.cgroup("/victim");
  b.hogs("/storm", 1, 14 * kSec);
  b.hogs("/victim", 1, 14 * kSec);
  b.process("/storm", {repeat_op(300, {fork_op({run_op(5 * kMs)}), sleep_op(10 * kMs)})}, 1 * kSec);
  b.process("/victim", {repeat_op(60, {sleep_op(100 * kMs), tool_op(true), run_op(10 * kMs), tool_op(false)})});
  const trace::Trace& t = b.done();
  const auto a = run_policy(t, "agentcg");
  const auto f = run_policy(t, "flatcg");
  EXPECT_GE(counter(a, "fork_storms"), 1u);
  EXPECT_NEAR(share_between(a, "/victim", 0, 1 * kSec), 0.5, 0.03);
  EXPECT_NEAR(share_between(a, "/victim", 2 * kSec, 4 * kSec), 0.8, 0.03);
  EXPECT_NEAR(share_between(f, "/victim", 2 * kSec, 4 * kSec), 0.5, 0.03);
  EXPECT_NEAR(share_between(a, "/victim", 11 * kSec, 14 * kSec), 0.5, 0.03);
  const auto at = a["cgroups"]["/victim"]["tool_call_latency_ns"]["p50"].get<std::uint64_t>();
  const auto ft = f["cgroups"]["/victim"]["tool_call_latency_ns"]["p50"].get<std::uint64_t>();
  std::printf("fork storm: /victim share 2-4 s agentcg %.3f flatcg %.3f; tool p50 %llu vs %llu ns\n",
              share_between(a, "/victim", 2 * kSec, 4 * kSec), share_between(f, "/victim", 2 * kSec, 4 * kSec),
              (unsigned long long)at, (unsigned long long)ft);
  EXPECT_LT(at, ft);
}

// retag_stale (on by default) on the bundled fork-storm
// trace (traces/fork-storm.json is `trace generate fork-storm`, seed 1), run
// seed 3: without it the victim agent's worst wakeups wait behind a dozen
// storm children whose start tags were 165 ms old (8.2 ms); with it the
// storm's stale heads are re-tagged and the victim's worst wakeup is a
// wakeup behind one slice (eevdf: 2.2 ms). Shares stay where they were.
TEST(ScxAcceptance, RetagStaleKeepsAStormsOldTagsFromDelayingTheVictim) {
  const trace::Trace t = trace::generate("fork-storm", 1, {});
  RunOptions o;
  o.policy = "agentcg";
  o.seed = 3;
  // storm_reserve off on both sides: it keeps a CPU free of the storm for
  // the victim, which then waits behind no storm tag at all (its worst
  // wakeup 1.0 ms without retag_stale)
  o.config.scheduler.features = AGENTCG_F_DEFAULT & ~AGENTCG_F_RETAG_STALE & ~AGENTCG_F_STORM_RESERVE;
  const auto a = run(t, o);
  o.config.scheduler.features = AGENTCG_F_DEFAULT & ~AGENTCG_F_STORM_RESERVE;
  const auto r = run(t, o);
  const auto amax = a["cgroups"]["/victim"]["wakeup_latency_ns"]["max"].get<std::uint64_t>();
  const auto rmax = r["cgroups"]["/victim"]["wakeup_latency_ns"]["max"].get<std::uint64_t>();
  std::printf("fork storm seed 3: /victim wakeup max %llu ns without retag_stale, %llu with\n",
              (unsigned long long)amax, (unsigned long long)rmax);
  EXPECT_GT(amax, 5 * kMs);
  EXPECT_LT(rmax, 3 * kMs);
  EXPECT_NEAR(share(r, "/victim"), share(a, "/victim"), 0.02);
}

// storm_reserve (on by default): two CPUs, /storm forking 4 children of
// 3 ms at a time without pause (~650 forks/s: a storm), /waker a periodic
// waker (cyclictest's shape: 1 ms sleeps, 20 us of work) from 0.2 s to
// ~0.9 s. With the reserve the storm holds one CPU while the waker
// wakes, and the wakeups start on the other, idle one; without it half of
// them find both CPUs running storm children and preempt one. The default
// machine charges a preemption nothing more than a wakeup onto an idle CPU,
// so what is asserted there is where the wakeups start (the preemptions);
// on a machine where a busy CPU notices a preempting kick late
// (kick_busy_ns: under TCG ~0.3-0.5 ms, README "Live") it is the latency.
// Once the waker is gone the storm has both CPUs again (after the 20 ms
// window).
TEST(ScxAcceptance, StormReserveKeepsACpuFreeForAPeriodicWaker) {
  Builder b(2, 2 * kSec);
  b.cgroup("/storm", 100);
  b.cgroup("/waker", 100);
  const trace::Op child = fork_op({run_op(3 * kMs)});
  b.process("/storm", {repeat_op(100000, {child, child, child, child, wait_op()})});
  // from 0.2 s, once the storm is one (33 forks within a second: its first
  // ~50 ms), to ~0.9 s
  b.process("/waker", {sleep_op(200 * kMs), repeat_op(680, {sleep_op(1 * kMs), run_op(20 * kUs)})});
  const auto on = run_agentcg(b.t, AGENTCG_F_DEFAULT);
  const auto off = run_agentcg(b.t, AGENTCG_F_DEFAULT & ~AGENTCG_F_STORM_RESERVE);
  const auto p99 = [](const nlohmann::json& r) {
    return r["cgroups"]["/waker"]["wakeup_latency_ns"]["p99"].get<std::uint64_t>();
  };
  std::printf("periodic waker beside a fork storm on 2 CPUs: /waker wakeup p99 %llu ns with storm_reserve, %llu "
              "without; /storm share 0.3-0.9 s %.3f vs %.3f, 1.2-2 s %.3f\n",
              (unsigned long long)p99(on), (unsigned long long)p99(off),
              share_between(on, "/storm", 300 * kMs, 900 * kMs), share_between(off, "/storm", 300 * kMs, 900 * kMs),
              share_between(on, "/storm", 1200 * kMs, 2 * kSec));
  EXPECT_GT(counter(on, "fork_storms"), 0u);
  EXPECT_GT(counter(on, "storm_reserves"), 0u);
  EXPECT_EQ(counter(off, "storm_reserves"), 0u);
  // the waker's wakeups start on the idle CPU: (almost) no preemption
  // with the reserve, one for about every other wakeup without it
  std::printf("preemptions %llu with storm_reserve, %llu without\n", (unsigned long long)counter(on, "preemptions"),
              (unsigned long long)counter(off, "preemptions"));
  EXPECT_GT(counter(off, "preemptions"), 300u);
  EXPECT_LT(counter(on, "preemptions"), counter(off, "preemptions") / 10);
  EXPECT_LT(p99(on), 50 * kUs);
  // on a machine whose busy CPU notices a preempting kick 400 us late (a
  // busy vCPU under TCG, machine.kick_busy_ns), that is the waker's gain
  RunOptions tcg;
  tcg.policy = "agentcg";
  tcg.config.machine.kick_busy_ns = 400 * kUs;
  const auto on_tcg = run(b.t, tcg);
  tcg.config.scheduler.features = AGENTCG_F_DEFAULT & ~AGENTCG_F_STORM_RESERVE;
  const auto off_tcg = run(b.t, tcg);
  std::printf("with kick_busy_ns 400 us: /waker wakeup p50 %llu / p99 %llu ns with storm_reserve, %llu / %llu without\n",
              (unsigned long long)on_tcg["cgroups"]["/waker"]["wakeup_latency_ns"]["p50"].get<std::uint64_t>(),
              (unsigned long long)p99(on_tcg),
              (unsigned long long)off_tcg["cgroups"]["/waker"]["wakeup_latency_ns"]["p50"].get<std::uint64_t>(),
              (unsigned long long)p99(off_tcg));
  EXPECT_LT(p99(on_tcg), 50 * kUs);
  EXPECT_GT(p99(off_tcg), 400 * kUs);
  // bounded: the storm keeps one CPU of two while the waker is active, and
  // has both once it is gone
  EXPECT_NEAR(share_between(on, "/storm", 300 * kMs, 900 * kMs), 0.5, 0.03);
  EXPECT_GT(share_between(off, "/storm", 300 * kMs, 900 * kMs), 0.9);
  EXPECT_GT(share_between(on, "/storm", 1200 * kMs, 2 * kSec), 0.97);
}

// victim_preempt (on by default): a forked child that the parent's CPU
// does not take preempts another CPU running a request it is ordered
// before. Four CPUs, four hogs in /hog; /agent (the same weight: two CPUs'
// worth, which its two children never exceed) sleeps 20 ms, forks two 2 ms
// children and waits for them, 20 times. That is ~80 forks/s, a fork storm
// by fork_aware's threshold (32/s), whose early verdict catches it at its
// 9th fork; fork_aware is off in both runs, so that what differs is the
// scan alone. Without the scan the first child
// runs on the parent's CPU once the parent waits and the second queues
// until a slice ends (most of them 2 ms); with it the second preempts a
// hog at once.
TEST(ScxAcceptance, VictimPreemptStartsAForkedChildOnAnotherCpu) {
  const std::vector<trace::Op> agent = {
      repeat_op(20, {sleep_op(20 * kMs), fork_op({run_op(2 * kMs)}), fork_op({run_op(2 * kMs)}), wait_op()})};
  const auto on = agent_beside_four_hogs(2 * kSec, agent);
  const auto off = agent_beside_four_hogs(2 * kSec, agent, AGENTCG_F_DEFAULT & ~AGENTCG_F_FORK_AWARE & ~AGENTCG_F_VICTIM_PREEMPT);
  const auto p90 = [](const nlohmann::json& r) {
    return r["cgroups"]["/agent"]["wakeup_latency_ns"]["p90"].get<std::uint64_t>();
  };
  std::printf("forked children beside 4 hogs: /agent wakeup p90 %llu ns with victim_preempt, %llu without\n",
              (unsigned long long)p90(on), (unsigned long long)p90(off));
  EXPECT_LT(p90(on), 100000u);
  EXPECT_GT(p90(off), 1 * kMs);
  // the hogs keep their share either way: the children's work is the same
  EXPECT_NEAR(share(on, "/hog"), share(off, "/hog"), 0.01);
}

// Tool workers forked at one instant, each ordered before the agent that
// forks them (the step's auto_boost credit pulls their deadlines earlier
// than the agent's own, which was made at its wakeup): the first preempts
// the agent's CPU and the rest must look elsewhere. Each used to go to the
// agent's CPU as well (place.h compared it with the agent, not with the
// worker already on its way there) and waited out the first's min_slice
// (502 us here without curr_kicked; the bundled fork storm, seed 2: the
// victim's workers 257 and 502 us). A CPU kicked for one request is now no
// target for the next, and each worker preempts a hog elsewhere at once.
TEST(ScxAcceptance, WorkersForkedTogetherEachTakeAnotherCpuAtOnce) {
  // the fork storm's victim: thinks 100 ms (a new step when it forks; no
  // epoch at the wakeup itself, which takes 200 ms idle), then forks 3
  // workers of 150 ms each
  const trace::Op worker = fork_op({run_op(150 * kMs)});
  const auto r = agent_beside_four_hogs(8 * kSec, {repeat_op(20, {sleep_op(100 * kMs), worker, worker, worker, wait_op()})});
  const auto w = [&](const char* k) { return r["cgroups"]["/agent"]["wakeup_latency_ns"][k].get<std::uint64_t>(); };
  std::printf("3 workers forked together beside 4 hogs: /agent wakeup p90 %llu, max %llu ns (%llu wakeups)\n",
              (unsigned long long)w("p90"), (unsigned long long)w("max"), (unsigned long long)w("count"));
  ASSERT_GE(w("count"), 40u);
  EXPECT_GT(r["counters"]["boosts_granted"].get<std::uint64_t>(), 0u) << "the steps must be boosted for the case";
  EXPECT_LT(w("max"), 100 * kUs);
}

// The bundled fork storm, seeds 1-3 (README "Crowded machine", storm row):
// the victim's wakeup p99 (its agent's wakeups and its tool workers' first
// runs) is under half of eevdf's with the default features, and higher
// without victim_preempt on every seed.
TEST(ScxAcceptance, StormVictimWakeupsUnderHalfOfEevdf) {
  const trace::Trace t = trace::generate("fork-storm", 1, {});
  for (std::uint64_t seed = 1; seed <= 3; seed++) {
    SCOPED_TRACE(seed);
    RunOptions o;
    o.seed = seed;
    o.policy = "eevdf";
    const auto e = run(t, o);
    o.policy = "agentcg";
    const auto a = run(t, o);
    o.config.scheduler.features = AGENTCG_F_DEFAULT & ~AGENTCG_F_VICTIM_PREEMPT;
    const auto n = run(t, o);
    const auto p99 = [](const nlohmann::json& r) {
      return r["cgroups"]["/victim"]["wakeup_latency_ns"]["p99"].get<std::uint64_t>();
    };
    std::printf("fork storm seed %llu: /victim wakeup p99 eevdf %llu, agentcg %llu, without victim_preempt %llu ns\n",
                (unsigned long long)seed, (unsigned long long)p99(e), (unsigned long long)p99(a),
                (unsigned long long)p99(n));
    EXPECT_LT(2 * p99(a), p99(e));
    EXPECT_GT(p99(n), p99(a));
  }
}

// cyclictest next to a fork storm, as `live compare` runs it (2 threads
// waking every 1 ms in /victim, stress-ng --fork 4 in /storm) on the VM's
// fitted machine profile (2 CPUs, 1 ms wakeup path, 4 ms tick, 30 %
// background in the root group, 13 ms per fork). Each storm child is a new
// request, so counted per task the storm was almost always inside a
// min_slice protection, and a woken thread whose own CPU ran an earlier
// request had no other CPU to go to until a slice ended: /victim wakeup
// p999 3.06 ms against eevdf's 1.00 ms, max 4.13 against 3.02. With the
// protection counted from when the CPU took the group (eevdf.h
// agentcg_group_run_since) and a deferred victim's re-check (place.h
// agentcg_victim_defer), no worse than eevdf at p99, p999 and the maximum.
TEST(ScxAcceptance, PeriodicWakerNextToAForkStormNoWorseThanEevdf) {
  const trace::Op wait = wait_op();
  Builder b(2, 8 * kSec);
  b.cgroup("/victim", 100);
  b.cgroup("/storm", 100);
  for (int i = 0; i < 2; i++) b.process("/victim", {repeat_op(100000, {sleep_op(1 * kMs), run_op(20 * kUs)})});
  for (int i = 0; i < 4; i++) b.process("/storm", {repeat_op(100000, {fork_op({run_op(200 * kUs)}), wait})});
  RunOptions o;
  o.config.machine.wakeup_overhead_ns = 1 * kMs;
  o.config.machine.wakeup_overhead_ns_set = true;
  o.config.machine.background_cpu_pct = 30;
  o.config.machine.ext_busy_pct = 5;
  o.config.machine.fork_cost_ns = 13 * kMs;
  o.config.machine.tick_ns = 4 * kMs;
  o.policy = "eevdf";
  const auto e = run(b.t, o);
  o.policy = "agentcg";
  const auto a = run(b.t, o);
  const auto w = [](const nlohmann::json& r, const char* k) {
    return r["cgroups"]["/victim"]["wakeup_latency_ns"][k].get<std::uint64_t>();
  };
  std::printf("cyclictest beside a fork storm: /victim wakeup p99/p999/max eevdf %llu/%llu/%llu, agentcg %llu/%llu/%llu ns\n",
              (unsigned long long)w(e, "p99"), (unsigned long long)w(e, "p999"), (unsigned long long)w(e, "max"),
              (unsigned long long)w(a, "p99"), (unsigned long long)w(a, "p999"), (unsigned long long)w(a, "max"));
  ASSERT_GT(w(e, "p99"), 1 * kMs) << "the wakeup path of the VM profile must be in the figures";
  EXPECT_LE(w(a, "p99"), w(e, "p99") + 50 * kUs);
  EXPECT_LE(w(a, "p999"), w(e, "p999") + 50 * kUs);
  EXPECT_LE(w(a, "max"), w(e, "max") + 100 * kUs);
  EXPECT_GT(a["cgroups"]["/storm"]["forks"].get<std::uint64_t>(), 500u) << "the storm must storm";
}

// Wakeup boost on the io generator's trace: /io's wakeup p99 is lower with
// the feature than without it (the rest of agentcg alike). Against flatcg
// it is not asserted: since the v3 base rule flatcg's /io p99 is 56 us and
// agentcg's min_slice protection (which flatcg lacks) costs more than that.
TEST(ScxAcceptance, WakeupBoostLowersIoWakeupLatency) {
  const trace::Trace t = trace::generate("io", 1, {{"duration", "5s"}});
  const auto a = run_agentcg(t, AGENTCG_F_ALL);
  const auto n = run_agentcg(t, AGENTCG_F_ALL & ~AGENTCG_F_WAKEUP_BOOST);
  const auto ap = a["cgroups"]["/io"]["wakeup_latency_ns"]["p99"].get<std::uint64_t>();
  const auto np = n["cgroups"]["/io"]["wakeup_latency_ns"]["p99"].get<std::uint64_t>();
  std::printf("io: /io wakeup p99 agentcg %llu, without wakeup_boost %llu ns\n", (unsigned long long)ap,
              (unsigned long long)np);
  EXPECT_LT(ap, np);
  EXPECT_GT(counter(a, "wakeup_boosts"), 0u);
}

// A SchedClass decorator that checks min_slice: every stop of a runnable
// task before its slice ended is a preemption, and must come after its
// CPU has run the task's group for 500 us. The group's time counts from
// when the CPU took the group: a CPU whose previous run was of the same
// group and ended at most 500 us before keeps counting (eevdf.h
// agentcg_group_run_since; a request of another group may preempt a task
// that started just now if its group held the CPU longer).
class MinSliceProbe final : public SchedClass {
 public:
  explicit MinSliceProbe(std::unique_ptr<SchedClass> inner) : inner_(std::move(inner)) {}
  std::string_view name() const override { return inner_->name(); }
  bool sched_ext() const override { return inner_->sched_ext(); }
  void init(SchedContext& ctx) override { ctx_ = &ctx; inner_->init(ctx); }
  int select_cpu(Task& p, int prev, std::uint64_t f) override { return inner_->select_cpu(p, prev, f); }
  void enqueue(Task& p, std::uint64_t f) override { inner_->enqueue(p, f); }
  void dequeue(Task& p) override { inner_->dequeue(p); }
  Dispatch dispatch(int cpu, Task* prev) override {
    Dispatch d = inner_->dispatch(cpu, prev);
    if (d.task) slice_[d.task->id] = d.slice;
    return d;
  }
  void running(Task& p, int cpu) override {
    Held& h = held_[cpu];
    if (!(h.any && h.cg == p.cgroup && p.started_at - h.stopped <= Time::from_us(500))) h.since = p.started_at;
    h.cg = p.cgroup;
    inner_->running(p, cpu);
  }
  void stopping(Task& p, int cpu, bool runnable) override {
    Held& h = held_[cpu];
    const Time ran = ctx_->now() - p.started_at;
    const Time group_ran = ctx_->now() - h.since;
    if (runnable && ran < slice_[p.id]) {
      preempted++;
      if (group_ran < Time::from_us(500)) early++;
      min_ran = std::min(min_ran, group_ran);
    }
    h.any = true;
    h.stopped = ctx_->now();
    inner_->stopping(p, cpu, runnable);
  }
  void init_task(Task& p, bool fork) override { inner_->init_task(p, fork); }
  void exit_task(Task& p) override { inner_->exit_task(p); }
  void cgroup_init(const CgroupInfo& cg) override { inner_->cgroup_init(cg); }
  void cgroup_move(Task& p, CgroupId a, CgroupId b) override { inner_->cgroup_move(p, a, b); }
  void cgroup_set_weight(CgroupId cg, std::uint32_t w) override { inner_->cgroup_set_weight(cg, w); }
  void cgroup_set_bandwidth(CgroupId cg, std::optional<std::uint64_t> q, std::uint64_t p) override {
    inner_->cgroup_set_bandwidth(cg, q, p);
  }
  void on_timer(std::uint64_t c) override { inner_->on_timer(c); }

  std::uint64_t preempted = 0, early = 0;
  Time min_ran = Time::max();

 private:
  std::unique_ptr<SchedClass> inner_;
  SchedContext* ctx_ = nullptr;
  std::map<std::uint32_t, Time> slice_;
  struct Held {
    bool any = false;
    CgroupId cg = 0;
    Time since, stopped;
  };
  std::map<int, Held> held_;
};

void run_probe(const trace::Trace& t, MinSliceProbe& probe) {
  Simulator sim;
  CpuModel cpu(sim, t, probe, config::MachineConfig{}, 1);
  cpu.start();
  while (!cpu.finished() && sim.step()) {
  }
  cpu.finish();
}

// min_slice protects a running request from every waker with a slice as
// long as its own; a shorter one (boosted, latency) preempts at once
// (eevdf.h PREEMPT_SHORT), so it is checked with equal slices.
TEST(ScxAcceptance, NoBoostPreemptsBeforeMinSlice) {
  const trace::Trace io = trace::generate("io", 1, {{"duration", "3s"}});
  agentcg_tunables nolat = agentcg_tunables_default();
  // every request with the base slice: a shorter one (boosted, latency)
  // skips the protection by design (eevdf.h PREEMPT_SHORT)
  nolat.features &= ~(AGENTCG_F_LATENCY | AGENTCG_F_AUTO_BOOST | AGENTCG_F_WAKEUP_BOOST);
  MinSliceProbe probe(make_agentcg_class(nolat));
  run_probe(io, probe);
  std::printf("min_slice: %llu preemptions, shortest hold of a CPU by a group before one %llu ns\n",
              (unsigned long long)probe.preempted, (unsigned long long)probe.min_ran.ns());
  EXPECT_GT(probe.preempted, 100u) << "the test must exercise wakeup preemption";
  EXPECT_EQ(probe.early, 0u);
  // Without min_slice the same trace preempts earlier: the probe can see it.
  agentcg_tunables nomin = nolat;
  nomin.features &= ~AGENTCG_F_MIN_SLICE;
  MinSliceProbe p2(make_agentcg_class(nomin));
  run_probe(io, p2);
  EXPECT_GT(p2.early, 0u);
}

// The latency window's rule: opens at an activation after more than 30 ms
// with nothing runnable, lasts 5 ms, not after a short gap, not while the
// group storms, never with the feature off.
TEST(AgentcgLatency, WindowFollowsQuietSpellsOnly) {
  agentcg_tunables t = agentcg_tunables_default();
  agentcg_global g{};
  agentcg_cgrp cg{};
  agentcg_cgrp_init(&cg, 100);
  agentcg_on_runnable(&cg, &g, 0, &t);  // first activation: not a quiet spell
  EXPECT_FALSE(agentcg_latency_req(&cg, 1 * kMs, &t));
  agentcg_on_quiescent(&cg, 10 * kMs);
  agentcg_on_runnable(&cg, &g, 50 * kMs, &t);  // 40 ms quiet: a window
  EXPECT_TRUE(agentcg_latency_req(&cg, 51 * kMs, &t));
  EXPECT_EQ(agentcg_slice_ns(&cg, 51 * kMs, &t), 500 * kUs);
  // the budget: 2 ms of service (at the whole machine's share) ends it
  cg.cvtime = cg.lat_cv0 + 1500 * kUs;
  EXPECT_EQ(agentcg_slice_ns(&cg, 52 * kMs, &t), 500 * kUs);
  EXPECT_EQ(agentcg_latency_left_ns(&cg, 52 * kMs, &t), 500 * kUs);
  cg.cvtime = cg.lat_cv0 + 2 * kMs;
  EXPECT_FALSE(agentcg_latency_req(&cg, 52 * kMs, &t));
  cg.cvtime = cg.lat_cv0;
  EXPECT_TRUE(agentcg_latency_req(&cg, 69 * kMs, &t));
  EXPECT_FALSE(agentcg_latency_req(&cg, 70 * kMs, &t));  // the 20 ms window is over
  agentcg_on_quiescent(&cg, 80 * kMs);
  agentcg_on_runnable(&cg, &g, 84 * kMs, &t);  // 4 ms gap: no new window
  EXPECT_FALSE(agentcg_latency_req(&cg, 85 * kMs, &t));
  agentcg_on_quiescent(&cg, 85 * kMs);
  agentcg_on_runnable(&cg, &g, 120 * kMs, &t);
  EXPECT_TRUE(agentcg_latency_req(&cg, 121 * kMs, &t));
  cg.storm = 1;
  EXPECT_FALSE(agentcg_latency_req(&cg, 121 * kMs, &t));
  cg.storm = 0;
  agentcg_tunables off = t;
  off.features &= ~AGENTCG_F_LATENCY;
  EXPECT_FALSE(agentcg_latency_req(&cg, 121 * kMs, &off));
  // only an eligible request (start <= V) gets the band's credit
  g.cvtime_now = 1000 * kMs;
  EXPECT_EQ(agentcg_latency_credit(&cg, &g, 999 * kMs, 121 * kMs, &t), AGENTCG_LATENCY_CREDIT_NS);
  EXPECT_EQ(agentcg_latency_credit(&cg, &g, 1001 * kMs, 121 * kMs, &t), 0u);
}


// Latency requests are ordered among themselves by V + slice / share, not
// by the lag their groups saved while asleep: a shell at half the machine
// comes before a session at 1/200 that slept with far more virtual lag
// (ordered by S + slice, as other requests are, the session came first);
// a later latency request at the same share comes after an earlier one; a
// non-latency request stays behind the band; start tags are untouched.
TEST(AgentcgLatency, BandIsOrderedByShareNotByLag) {
  agentcg_tunables t = agentcg_tunables_default();
  agentcg_global g{};
  g.cvtime_now = 10000 * kMs;
  agentcg_cgrp shell{}, session{}, busy{};
  for (agentcg_cgrp* c : {&shell, &session, &busy}) agentcg_cgrp_init(c, 100);
  for (agentcg_cgrp* c : {&shell, &session}) {
    agentcg_on_runnable(c, &g, 0, &t);
    agentcg_on_quiescent(c, 10 * kMs);
    agentcg_on_runnable(c, &g, 100 * kMs, &t);  // 90 ms quiet: a latency window
  }
  shell.cvtime = g.cvtime_now - 16 * kMs;      // its lag clamp at share 1/2
  session.cvtime = g.cvtime_now - 1600 * kMs;  // at share 1/200
  busy.seen = 1;
  busy.cvtime = g.cvtime_now - 1600 * kMs;
  std::uint32_t ev = 0;
  const std::uint32_t half = AGENTCG_ONE / 2, small = AGENTCG_ONE / 200;
  ASSERT_TRUE(agentcg_latency_req(&shell, 101 * kMs, &t));
  ASSERT_TRUE(agentcg_latency_req(&session, 101 * kMs, &t));
  const agentcg_req rs = agentcg_eevdf_request(&shell, &g, half, 100, 0, 101 * kMs, &t, &ev);
  const agentcg_req ra = agentcg_eevdf_request(&session, &g, small, 100, 0, 101 * kMs, &t, &ev);
  const agentcg_req rb = agentcg_eevdf_request(&busy, &g, small, 100, 0, 101 * kMs, &t, &ev);
  EXPECT_TRUE(agentcg_before(rs.deadline, ra.deadline)) << "the shell's keystroke first";
  EXPECT_TRUE(agentcg_before(ra.deadline, rb.deadline)) << "the band ahead of other requests";
  EXPECT_EQ(ra.start, session.cvtime) << "the band changes the order, not the start tag";
  // the same session's next latency request, after V moved on, comes after the first
  g.cvtime_now += 5 * kMs;
  const agentcg_req ra2 = agentcg_eevdf_request(&session, &g, small, 100, 0, 102 * kMs, &t, &ev);
  EXPECT_TRUE(agentcg_before(ra.deadline, ra2.deadline));
}

// latency (agentcg.h): a shell (300 us bursts after 100 ms sleeps) beside
// 4 hogs in two groups on 2 CPUs. Its wakeups are latency requests: a
// 500 us slice that preempts a running 4 ms request at once (eevdf.h's
// PREEMPT_SHORT), so even its longest wakeup is the model's wakeup path
// plus a context switch (under 100 us), where without the feature a wakeup
// that comes in the 500 us after a CPU changed groups (the hogs' groups
// take turns) waits for the protection to end.
// Its share stays its demand (it adds no CPU time).
TEST(ScxAcceptance, LatencyRequestsPreemptWithoutWaitingForMinSlice) {
  Builder b(2, 10 * kSec);
  b.cgroup("/batch");
  b.cgroup("/batch2");
  b.cgroup("/interactive");
  b.hogs("/batch", 2, 10 * kSec);
  b.hogs("/batch2", 2, 10 * kSec);
  // sleeps of 100 ms + i x 137 us: the wakeups fall at every phase of the
  // hogs' 4 ms slices, some inside the first 500 us of one
  std::vector<trace::Op> shell;
  for (std::uint64_t i = 0; i < 90; i++) {
    shell.push_back(sleep_op(100 * kMs + i * 137 * kUs));
    shell.push_back(run_op(300 * kUs));
  }
  b.process("/interactive", shell);
  const trace::Trace& t = b.done();
  // without auto_boost and wakeup_boost every other request has the base
  // slice, so what lets the shell skip the protected time is latency alone
  const std::uint32_t base = AGENTCG_F_ALL & ~AGENTCG_F_AUTO_BOOST & ~AGENTCG_F_WAKEUP_BOOST;
  const auto on = run_agentcg(t, base);
  const auto off = run_agentcg(t, base & ~AGENTCG_F_LATENCY);
  // the longest wakeup: the one that came in the running request's protected time
  const auto p_on = on["cgroups"]["/interactive"]["wakeup_latency_ns"]["max"].get<std::uint64_t>();
  const auto p_off = off["cgroups"]["/interactive"]["wakeup_latency_ns"]["max"].get<std::uint64_t>();
  std::printf("latency: shell's longest wakeup %llu ns with the feature, %llu ns without\n",
              (unsigned long long)p_on, (unsigned long long)p_off);
  EXPECT_LT(p_on, 100 * kUs);
  EXPECT_GE(p_off, 300 * kUs);
  EXPECT_NEAR(share(on, "/interactive"), share(off, "/interactive"), 0.002);
}

// The latency window cannot be farmed for share: /gamer's 8 tasks sleep
// 31 ms (just over the quiet spell) and run 20 ms, so every burst starts
// a latency window, against 8 hogs in /batch on 2 CPUs. Its demand is 3
// CPUs; its share stays within 2 points of its entitlement (1/2).
TEST(ScxAcceptance, LatencyWindowAddsNoShare) {
  Builder b(2, 10 * kSec);
  b.cgroup("/batch");
  b.cgroup("/gamer");
  b.hogs("/batch", 8, 10 * kSec);
  for (int i = 0; i < 8; i++) b.process("/gamer", {repeat_op(400, {sleep_op(31 * kMs), run_op(20 * kMs)})});
  const trace::Trace& t = b.done();
  const auto a = run_agentcg(t, AGENTCG_F_ALL);
  std::printf("latency: /gamer share %.4f (entitled 0.5)\n", share(a, "/gamer"));
  EXPECT_LE(share(a, "/gamer"), 0.52);
  EXPECT_GE(share(a, "/batch"), 0.48);
}

// No starvation at 2x oversubscription with every feature firing: boosts
// re-triggering, a fork storm and a memory penalty at its maximum.
TEST(ScxAcceptance, NoStarvationUnderAdversarialLoad) {
  Builder b(4, 10 * kSec);
  b.cgroup("/batch");
  b.cgroup("/mem").memory_high = 10ull << 20;
  b.cgroup("/storm");
  b.hogs("/batch", 4, 10 * kSec);
  b.hogs("/mem", 2, 10 * kSec);
  std::vector<trace::Op> grow;
  for (int i = 1; i <= 400; i++) {
    grow.push_back(mem_op((10ull + static_cast<std::uint64_t>(i)) << 20));
    grow.push_back(sleep_op(25 * kMs));
  }
  b.process("/mem", grow);
  b.hogs("/storm", 1, 10 * kSec);
  b.process("/storm", {repeat_op(1000, {fork_op({run_op(2 * kMs)}), sleep_op(10 * kMs)})});
  for (int i = 0; i < 4; i++) {
    const std::string cg = "/retrig-" + std::to_string(i);
    b.cgroup(cg);
    b.process(cg, {repeat_op(40, {sleep_op(205 * kMs), run_op(50 * kMs)})}, static_cast<std::uint64_t>(i) * 37 * kMs);
  }
  const trace::Trace& t = b.done();
  const auto a = run_agentcg(t, AGENTCG_F_ALL);  // mem_penalty too (off by default)
  const auto f = run_policy(t, "flatcg");
  std::printf("adversarial: max runnable wait agentcg %llu flatcg %llu ns\n",
              (unsigned long long)a["max_runnable_wait_ns"].get<std::uint64_t>(),
              (unsigned long long)f["max_runnable_wait_ns"].get<std::uint64_t>());
  EXPECT_GT(counter(a, "fork_storms"), 0u);
  EXPECT_GT(counter(a, "boosts_granted"), 4u);
  EXPECT_GE(counter(a, "penalties_applied"), 4u);
  EXPECT_LT(a["max_runnable_wait_ns"].get<std::uint64_t>(), 100 * kMs);
  // cpu.weight where busy: the re-triggered boosts take nothing /batch or
  // the re-triggering groups were owed; /mem's penalty divides its weight
  // on purpose (flatcg, without it: none)
  const auto pts = [](const nlohmann::json& r, const char* g) {
    return r["cgroups"][g]["cpu_weight_shortfall_pts"].get<double>();
  };
  for (const char* g : {"/batch", "/retrig-0", "/retrig-1", "/retrig-2", "/retrig-3"}) EXPECT_LT(pts(a, g), 1.0) << g;
  EXPECT_GT(pts(a, "/mem"), 1.0);
  EXPECT_LT(pts(f, "/mem"), 1.0);
}

// 1,000 CPU hogs in 1,000 sibling cgroups, started one every 20 ms on 2
// CPUs (the VM's `scale` scenario): each is a new session with a full
// epoch. Uncapped, an epoch served 20 ms (ten of the group's 1 s turns) in
// advance and then waited several rounds: the longest runnable wait was
// 3.9 s against flatcg's 2.0 s (live under TCG: 12.3 s, ejected by the
// sched_ext watchdog). Capped at the next second's entitlement
// (agentcg_epoch_start), agentcg waits no longer than the base rule.
TEST(ScxAcceptance, AStreamOfNewSessionsDoesNotStretchTheRound) {
  Builder b(2, 30 * kSec);
  b.cgroup("/s");
  for (int i = 0; i < 1000; i++) {
    const std::string cg = "/s/" + std::to_string(i);
    b.cgroup(cg);
    b.process(cg, {run_op(30 * kSec)}, static_cast<std::uint64_t>(i) * 20 * kMs);
  }
  const trace::Trace& t = b.done();
  const auto a = run_agentcg(t, AGENTCG_F_DEFAULT);
  const auto f = run_policy(t, "flatcg");
  const auto wa = a["max_runnable_wait_ns"].get<std::uint64_t>();
  const auto wf = f["max_runnable_wait_ns"].get<std::uint64_t>();
  std::printf("1,000 new sessions: max runnable wait agentcg %llu flatcg %llu ns\n",
              (unsigned long long)wa, (unsigned long long)wf);
  EXPECT_GT(counter(a, "boosts_granted"), 900u);
  EXPECT_LE(wa, wf + wf / 10);
}

}  // namespace
}  // namespace agentcg::sim
