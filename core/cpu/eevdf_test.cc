// SPDX-License-Identifier: GPL-2.0-only
// Unit tests of the base rule (core/include/agentcg/eevdf.h) and of what the
// live scheduler and the simulator share with it: nested shares compounding
// (flatcg.h), cpu.max with burst and consistent cpu.stat counters
// (bandwidth.h), and the wakeup-preemption verdicts. A tiny multi-CPU loop
// serving requests in deadline order checks the shares the rule delivers.
#include "agentcg/eevdf.h"

#include <gtest/gtest.h>

#include <array>
#include <initializer_list>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "agentcg/bandwidth.h"
#include "agentcg/flatcg.h"
#include "agentcg/place.h"

namespace {

constexpr std::uint64_t kUs = 1000, kMs = 1000000;

agentcg_tunables base_tunables() {
  agentcg_tunables t = agentcg_tunables_default();
  t.features = 0;  // flatcg: the rule alone
  return t;
}

// A cgroup tree: nodes (parent index, weight); node 0 is the root.
struct Tree {
  agentcg_global g{};
  std::vector<agentcg_cgrp> cg;
  std::vector<int> parent;
  explicit Tree(const std::vector<std::pair<int, std::uint32_t>>& nodes) {
    cg.resize(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); i++) {
      agentcg_cgrp_init(&cg[i], nodes[i].second);
      parent.push_back(nodes[i].first);
    }
  }
  std::uint32_t chain(int id, agentcg_cgrp* (&out)[AGENTCG_MAX_DEPTH]) {
    std::vector<agentcg_cgrp*> c;
    for (int i = id; i >= 0; i = parent[i]) c.insert(c.begin(), &cg[i]);
    for (std::size_t i = 0; i < c.size(); i++) out[i] = c[i];
    return static_cast<std::uint32_t>(c.size());
  }
  void activate(int id, bool on) {
    agentcg_cgrp* ch[AGENTCG_MAX_DEPTH];
    const std::uint32_t n = chain(id, ch);
    agentcg_update_active(ch, n, &g, on);
  }
  std::uint32_t qshare(int id) {
    agentcg_cgrp* ch[AGENTCG_MAX_DEPTH];
    const std::uint32_t n = chain(id, ch);
    return agentcg_refresh_hweight(ch, n, &g);
  }
};

// Serves always-busy leaves (`per_leaf` tasks each) on `cpus` CPUs for
// `total_ns`, one request at a time in deadline order, as the shared queue
// does; returns CPU time per leaf.
std::map<int, std::uint64_t> serve(Tree& tr, const std::vector<int>& leaves, int per_leaf, int cpus,
                                   std::uint64_t total_ns, const agentcg_tunables& t) {
  struct Q {
    std::uint64_t deadline;
    int leaf, task;
    bool operator<(const Q& o) const {
      return deadline != o.deadline ? deadline < o.deadline
                                    : (leaf != o.leaf ? leaf < o.leaf : task < o.task);
    }
  };
  std::set<Q> queue;
  std::map<std::pair<int, int>, agentcg_req> req;
  std::map<int, std::uint64_t> got;
  std::uint32_t ev = 0;
  auto enqueue = [&](int leaf, int task, std::uint64_t now) {
    agentcg_cgrp& c = tr.cg[leaf];
    const agentcg_req r = agentcg_eevdf_request(&c, &tr.g, tr.qshare(leaf), 100, c.nr_queued, now, &t, &ev);
    c.nr_queued++;
    req[{leaf, task}] = r;
    queue.insert({r.deadline, leaf, task});
  };
  for (int l : leaves)
    for (int k = 0; k < per_leaf; k++) {
      tr.activate(l, true);
      enqueue(l, k, 0);
    }
  // CPUs run in lock step: each round every CPU takes the first request.
  for (std::uint64_t now = 0; now < total_ns;) {
    std::vector<Q> running;
    for (int c = 0; c < cpus && !queue.empty(); c++) {
      running.push_back(*queue.begin());
      queue.erase(queue.begin());
      tr.cg[running.back().leaf].nr_queued--;
      agentcg_eevdf_picked(&tr.g, &req[{running.back().leaf, running.back().task}]);
    }
    std::uint64_t ran = ~0ull;
    for (const Q& q : running) ran = std::min(ran, req[{q.leaf, q.task}].slice_ns);
    for (const Q& q : running) {
      agentcg_cgrp_charge(&tr.cg[q.leaf], tr.qshare(q.leaf), ran);
      agentcg_eevdf_advance(&tr.g, ran);
      got[q.leaf] += ran;
    }
    now += ran;
    for (const Q& q : running) enqueue(q.leaf, q.task, now);
  }
  return got;
}

TEST(Eevdf, NestedWeightsCompound) {
  // root; /a 100 { /a/x 100, /a/y 300 }, /b 200: 1/12, 3/12, 8/12.
  Tree tr({{-1, 100}, {0, 100}, {1, 100}, {1, 300}, {0, 200}});
  for (int l : {2, 3, 4}) tr.activate(l, true);
  EXPECT_NEAR(tr.qshare(2) / double(AGENTCG_ONE), 1.0 / 12, 1e-4);
  EXPECT_NEAR(tr.qshare(3) / double(AGENTCG_ONE), 3.0 / 12, 1e-4);
  EXPECT_NEAR(tr.qshare(4) / double(AGENTCG_ONE), 8.0 / 12, 1e-4);
  for (int l : {2, 3, 4}) tr.activate(l, false);
  const auto got = serve(tr, {2, 3, 4}, 2, 2, 20000 * kMs, base_tunables());
  const double tot = double(got.at(2) + got.at(3) + got.at(4));
  EXPECT_NEAR(got.at(2) / tot, 1.0 / 12, 0.02);
  EXPECT_NEAR(got.at(3) / tot, 3.0 / 12, 0.02);
  EXPECT_NEAR(got.at(4) / tot, 8.0 / 12, 0.02);
}

TEST(Eevdf, FlatWeightsOnOneQueue) {
  Tree tr({{-1, 100}, {0, 100}, {0, 200}, {0, 300}});
  const auto got = serve(tr, {1, 2, 3}, 2, 2, 20000 * kMs, base_tunables());
  const double tot = double(got.at(1) + got.at(2) + got.at(3));
  EXPECT_NEAR(got.at(1) / tot, 1.0 / 6, 0.01);
  EXPECT_NEAR(got.at(2) / tot, 2.0 / 6, 0.01);
  EXPECT_NEAR(got.at(3) / tot, 3.0 / 6, 0.01);
}

TEST(Eevdf, RequestsOfOneGroupChain) {
  const agentcg_tunables t = base_tunables();
  agentcg_global g{};
  agentcg_cgrp c;
  agentcg_cgrp_init(&c, 100);
  std::uint32_t ev = 0;
  const std::uint32_t third = AGENTCG_ONE / 3;
  const agentcg_req r1 = agentcg_eevdf_request(&c, &g, third, 100, 0, 0, &t, &ev);
  const agentcg_req r2 = agentcg_eevdf_request(&c, &g, third, 100, 1, 0, &t, &ev);
  const agentcg_req r3 = agentcg_eevdf_request(&c, &g, third, 100, 2, 0, &t, &ev);
  // the second request starts after the first one's virtual length (slice x 3)
  EXPECT_EQ(r2.start - r1.start, agentcg_vlen(r1.slice_ns, third));
  EXPECT_EQ(r3.start - r2.start, agentcg_vlen(r1.slice_ns, third));
  EXPECT_LT(r1.deadline, r2.deadline);
  EXPECT_EQ(r1.slice_ns, std::uint64_t{t.base_slice_ms} * kMs);
}

// A queued request is stale only while its group is past V + its slice
// (not eligible) AND the request's start is behind the group's service.
TEST(Eevdf, StaleRequestsAreThoseOfAGroupThatRanPastItsShare) {
  const agentcg_tunables t = base_tunables();
  agentcg_global g{};
  g.cvtime_now = 1000 * kMs;
  agentcg_cgrp c;
  agentcg_cgrp_init(&c, 100);
  c.cvtime = g.cvtime_now;
  std::uint32_t ev = 0;
  const agentcg_req r = agentcg_eevdf_request(&c, &g, AGENTCG_ONE / 4, 100, 0, 0, &t, &ev);
  EXPECT_FALSE(agentcg_eevdf_stale(&r, &c, &g));  // just tagged, group at V
  agentcg_cgrp_charge(&c, AGENTCG_ONE / 4, 10 * kMs);  // the group ran 10 ms at a quarter share: 40 ms virtual
  EXPECT_TRUE(agentcg_eevdf_stale(&r, &c, &g));
  g.cvtime_now += 40 * kMs;  // the others caught up: the group is eligible again
  EXPECT_FALSE(agentcg_eevdf_stale(&r, &c, &g));
  // past V, but the request was tagged after that service: not stale
  agentcg_cgrp_charge(&c, AGENTCG_ONE / 4, 10 * kMs);
  const agentcg_req fresh = agentcg_eevdf_request(&c, &g, AGENTCG_ONE / 4, 100, 0, 0, &t, &ev);
  EXPECT_FALSE(agentcg_eevdf_stale(&fresh, &c, &g));
  EXPECT_TRUE(agentcg_eevdf_stale(&r, &c, &g));
}

TEST(Eevdf, LagIsKeptAcrossSleepAndBounded) {
  const agentcg_tunables t = base_tunables();
  const std::uint64_t slice = agentcg_base_slice_ns(&t);
  agentcg_global g{};
  g.cvtime_now = 100 * kMs;
  agentcg_cgrp over, waited, hoarder;
  for (agentcg_cgrp* c : {&over, &waited, &hoarder}) agentcg_cgrp_init(c, 100);
  over.cvtime = 101 * kMs;   // ran 1 ms ahead of V
  waited.cvtime = 99 * kMs;  // 1 ms behind
  hoarder.cvtime = 10 * kMs; // far behind: bounded to two slices of its service
  agentcg_cgrp half;         // the same at half the machine: two slices at share 1/2
  agentcg_cgrp_init(&half, 100);
  half.cvtime = 10 * kMs;
  half.qshare = AGENTCG_ONE / 2;
  for (agentcg_cgrp* c : {&over, &waited, &hoarder, &half}) agentcg_eevdf_save_lag(c, &g, &t);
  g.cvtime_now = 500 * kMs;  // time passes while they sleep
  for (agentcg_cgrp* c : {&over, &waited, &hoarder, &half}) agentcg_eevdf_place(c, &g);
  EXPECT_EQ(over.cvtime, 501 * kMs) << "an overrun is not forgiven by sleeping";
  EXPECT_EQ(waited.cvtime, 499 * kMs);
  EXPECT_EQ(hoarder.cvtime, 500 * kMs - 2 * slice);
  EXPECT_EQ(half.cvtime, 500 * kMs - agentcg_vlen(2 * slice, AGENTCG_ONE / 2));
}

// V follows the picked request's group time, not its start tag: a request
// queued behind two siblings must not pull V (and every sleeper placed at
// V - lag) two requests ahead.
TEST(Eevdf, PickedMovesVToTheGroupNotItsQueuedTag) {
  const agentcg_tunables t = base_tunables();
  agentcg_global g{};
  g.cvtime_now = 100 * kMs;
  agentcg_cgrp c;
  agentcg_cgrp_init(&c, 100);
  c.seen = 1;
  c.cvtime = 100 * kMs;
  std::uint32_t ev = 0;
  const agentcg_req r3 = agentcg_eevdf_request(&c, &g, AGENTCG_ONE / 2, 100, 2, 0, &t, &ev);
  ASSERT_GT(r3.start, 100 * kMs);
  agentcg_eevdf_picked(&g, &r3);
  EXPECT_EQ(g.cvtime_now, 100 * kMs);
  c.cvtime = 103 * kMs;
  const agentcg_req r1 = agentcg_eevdf_request(&c, &g, AGENTCG_ONE / 2, 100, 0, 0, &t, &ev);
  agentcg_eevdf_picked(&g, &r1);
  EXPECT_EQ(g.cvtime_now, 103 * kMs);
}

TEST(Eevdf, PreemptionVerdicts) {
  agentcg_tunables t = agentcg_tunables_default();
  const std::uint64_t start = 1000 * kMs, slice = 4 * kMs;
  // earlier deadline, current still protected: not before start + min_slice
  agentcg_preempt r = agentcg_eevdf_preempt(10, 20, start, slice, start + 100 * kUs, &t);
  EXPECT_EQ(r.verdict, AGENTCG_PREEMPT_AT);
  EXPECT_EQ(r.at_ns, start + std::uint64_t{t.min_slice_us} * kUs);
  r = agentcg_eevdf_preempt(10, 20, start, slice, start + 600 * kUs, &t);
  EXPECT_EQ(r.verdict, AGENTCG_PREEMPT_NOW);
  r = agentcg_eevdf_preempt(30, 20, start, slice, start + 600 * kUs, &t);
  EXPECT_EQ(r.verdict, AGENTCG_PREEMPT_NO);
  // a slice shorter than min_slice protects only the slice
  EXPECT_EQ(agentcg_protect_ns(200 * kUs, &t), 200 * kUs);
  // without the min_slice feature: strict EEVDF, an earlier deadline preempts at once
  t.features &= ~AGENTCG_F_MIN_SLICE;
  r = agentcg_eevdf_preempt(10, 20, start, slice, start, &t);
  EXPECT_EQ(r.verdict, AGENTCG_PREEMPT_NOW);
}

TEST(Eevdf, BoostCreditPullsTheDeadline) {
  agentcg_tunables t = agentcg_tunables_default();
  agentcg_global g{};
  agentcg_cgrp plain, boosted;
  agentcg_cgrp_init(&plain, 100);
  agentcg_cgrp_init(&boosted, 100);
  std::uint32_t ev = agentcg_on_runnable(&boosted, &g, 0, &t);
  ASSERT_TRUE(ev & AGENTCG_EV(boosts_granted));
  plain.seen = 1;
  ev = 0;
  const agentcg_req rp = agentcg_eevdf_request(&plain, &g, AGENTCG_ONE / 2, 100, 0, kMs, &t, &ev);
  const agentcg_req rb = agentcg_eevdf_request(&boosted, &g, AGENTCG_ONE / 2, 100, 0, kMs, &t, &ev);
  EXPECT_TRUE(agentcg_before(rb.deadline, rp.deadline)) << "keys are compared wrap-safe";
  EXPECT_EQ(rb.start, rp.start) << "the credit changes the order, not the start tag";
}

TEST(Bandwidth, BurstCarriesUnusedQuotaAndCounts) {
  agentcg_bw_pool p;
  agentcg_bw_init(&p, 50 * kMs, 100 * kMs);
  agentcg_bw_set_burst(&p, 20 * kMs);
  s64 local = 0;
  // period 1: use 20 ms of 50
  for (int i = 0; i < 4; i++) {
    ASSERT_TRUE(agentcg_bw_acquire(&p, &local, AGENTCG_BW_DEFAULT_SLICE_NS, 0));
    agentcg_bw_charge(&p, &local, 5 * kMs);
  }
  agentcg_bw_return(&p, &local);
  agentcg_bw_refill(&p, 100 * kMs);
  EXPECT_EQ(p.runtime_ns, 70 * kMs) << "30 ms unused, 20 ms of it carried (burst)";
  // period 2: use all 70 ms -> a burst of 20 ms, then throttled
  std::uint64_t used = 0;
  while (agentcg_bw_acquire(&p, &local, AGENTCG_BW_DEFAULT_SLICE_NS, 100 * kMs)) {
    agentcg_bw_charge(&p, &local, 5 * kMs);
    used += 5 * kMs;
  }
  EXPECT_EQ(used, 70 * kMs);
  EXPECT_EQ(p.nr_throttled, 0u) << "counted at the refill, with the period";
  agentcg_bw_refill(&p, 200 * kMs);
  EXPECT_EQ(p.nr_bursts, 1u);
  EXPECT_EQ(p.burst_time_ns, 20 * kMs);
  EXPECT_EQ(p.nr_periods, 2u);
  EXPECT_EQ(p.nr_throttled, 1u);
  EXPECT_LE(p.nr_throttled, p.nr_periods);
}

TEST(Bandwidth, ThrottledNeverExceedsPeriods) {
  agentcg_bw_pool p;
  agentcg_bw_init(&p, 1 * kMs, 100 * kMs);
  s64 local = 0;
  std::uint64_t now = 0;
  for (int period = 0; period < 50; period++) {
    for (int k = 0; k < 10; k++) {
      if (agentcg_bw_acquire(&p, &local, AGENTCG_BW_DEFAULT_SLICE_NS, now)) agentcg_bw_charge(&p, &local, kMs);
      now += kMs;
      EXPECT_LE(p.nr_throttled, p.nr_periods);
    }
    now = (period + 1) * 100 * kMs;
    agentcg_bw_refill(&p, now);
    EXPECT_LE(p.nr_throttled, p.nr_periods);
  }
  EXPECT_EQ(p.nr_throttled, 50u);
}

}  // namespace

namespace {

// A stream of new groups, each placed at V, must not starve a group that
// already ran: V advances with the service (agentcg_eevdf_advance). Without
// it V would stay at the newcomers' start and the old group would wait for
// as long as groups keep arriving (the live 13 s watchdog stall).
TEST(Eevdf, ArrivalsAtVDoNotStarveOthers) {
  const agentcg_tunables t = base_tunables();
  agentcg_global g{};
  std::vector<agentcg_cgrp> cg(200);
  for (auto& c : cg) agentcg_cgrp_init(&c, 100);
  const std::uint32_t share = AGENTCG_ONE / 2;  // two CPUs' worth of groups sharing
  std::uint32_t ev = 0;
  // group 0 ran one slice: its cvtime is one request ahead
  cg[0].seen = 1;
  agentcg_cgrp_charge(&cg[0], share, 4 * kMs);
  const agentcg_req old = agentcg_eevdf_request(&cg[0], &g, share, 100, 0, 0, &t, &ev);
  int rounds = 0;
  for (std::size_t i = 1; i < cg.size(); i++, rounds++) {
    cg[i].seen = 1;
    cg[i].cvtime = g.cvtime_now;  // a new group is placed at V
    const agentcg_req r = agentcg_eevdf_request(&cg[i], &g, share, 100, 0, 0, &t, &ev);
    if (!agentcg_before(r.deadline, old.deadline)) break;  // the old group is first now
    agentcg_eevdf_picked(&g, &r);
    agentcg_cgrp_charge(&cg[i], share, r.slice_ns);
    agentcg_eevdf_advance(&g, r.slice_ns);
  }
  EXPECT_LE(rounds, 4) << "newcomers kept going first";
}

}  // namespace

// The per-CPU placement (place.h): an idle CPU takes the wakee directly
// unless an earlier request waits in the shared queue; a busy CPU is
// preempted through its local queue when the base rule says NOW; AT gives
// the re-check time; a request that may not preempt goes to the shared queue.
TEST(Place, IdleLocalPreemptSharedAndTimer) {
  agentcg_tunables t = agentcg_tunables_default();  // min_slice on: 500 us protection
  agentcg_place_in in{};
  in.key = 100 * kMs;
  in.now_ns = 50 * kMs;
  in.cpu_idle = 1;
  EXPECT_EQ(agentcg_place_task(&in, &t).kind, AGENTCG_PLACE_LOCAL);
  in.has_head = 1;
  in.head_key = 99 * kMs;  // an earlier request waits: keep the order
  EXPECT_EQ(agentcg_place_task(&in, &t).kind, AGENTCG_PLACE_SHARED);
  in.head_key = 101 * kMs;
  EXPECT_EQ(agentcg_place_task(&in, &t).kind, AGENTCG_PLACE_LOCAL);

  // busy CPU running a request with a later deadline, past its protection
  in.cpu_idle = 0;
  in.wakeup = 1;
  in.curr_ours = 1;
  in.curr_deadline = 104 * kMs;
  in.curr_slice_ns = 4 * kMs;
  in.curr_started_ns = in.now_ns - 600 * kUs;
  EXPECT_EQ(agentcg_place_task(&in, &t).kind, AGENTCG_PLACE_LOCAL_PREEMPT);
  in.head_key = 99 * kMs;  // the CPU must re-pick from the shared queue
  EXPECT_EQ(agentcg_place_task(&in, &t).kind, AGENTCG_PLACE_SHARED_PREEMPT);
  in.has_head = 0;
  // still protected: not before started + 500 us
  in.curr_started_ns = in.now_ns - 100 * kUs;
  agentcg_place r = agentcg_place_task(&in, &t);
  EXPECT_EQ(r.kind, AGENTCG_PLACE_SHARED_AT);
  EXPECT_EQ(r.at_ns, in.curr_started_ns + 500 * kUs);
  in.slice_ns = 4 * kMs;  // an equal slice is held back too
  EXPECT_EQ(agentcg_place_task(&in, &t).kind, AGENTCG_PLACE_SHARED_AT);
  in.slice_ns = 2 * kMs;  // a shorter (boosted) one is not: PREEMPT_SHORT
  EXPECT_EQ(agentcg_place_task(&in, &t).kind, AGENTCG_PLACE_LOCAL_PREEMPT);
  // two latency requests (slices of min_slice_us): the earlier deadline
  // preempts at once, the running one is not protected for its whole slice
  in.curr_slice_ns = in.slice_ns = 500 * kUs;
  EXPECT_EQ(agentcg_place_task(&in, &t).kind, AGENTCG_PLACE_LOCAL_PREEMPT);
  in.curr_slice_ns = in.slice_ns = 600 * kUs;  // longer than min_slice: protected
  EXPECT_EQ(agentcg_place_task(&in, &t).kind, AGENTCG_PLACE_SHARED_AT);
  in.curr_slice_ns = 4 * kMs;
  in.slice_ns = 0;
  // the running request is ordered first: no preemption
  in.curr_deadline = 90 * kMs;
  EXPECT_EQ(agentcg_place_task(&in, &t).kind, AGENTCG_PLACE_SHARED);
  // a slice end (not a wakeup) never preempts; the CPU's last task stays local
  in.curr_deadline = 104 * kMs;
  in.curr_started_ns = in.now_ns - 600 * kUs;
  in.wakeup = 0;
  EXPECT_EQ(agentcg_place_task(&in, &t).kind, AGENTCG_PLACE_SHARED);
  in.last = 1;
  EXPECT_EQ(agentcg_place_task(&in, &t).kind, AGENTCG_PLACE_LOCAL);
  // a CPU running another class's task is not compared
  in.last = 0;
  in.wakeup = 1;
  in.curr_ours = 0;
  EXPECT_EQ(agentcg_place_task(&in, &t).kind, AGENTCG_PLACE_SHARED);
}

// A CPU already kicked for one request is no target for the next (place.h
// curr_kicked): the second of two workers forked together, ordered before
// the parent that runs there, goes to the shared queue and scans the other
// CPUs, though the first worker (its equal or earlier head) waits there.
// A wakeup of key 100 ms at 50 ms onto a CPU running one of our requests
// (deadline `curr_deadline`) for 600 us, past its protection.
static agentcg_place_in wakeup_beside(u64 curr_deadline) {
  agentcg_place_in in{};
  in.key = 100 * kMs;
  in.now_ns = 50 * kMs;
  in.wakeup = 1;
  in.curr_ours = 1;
  in.curr_deadline = curr_deadline;
  in.curr_started_ns = in.now_ns - 600 * kUs;
  in.curr_slice_ns = 4 * kMs;
  return in;
}

TEST(Place, AKickedCpuTakesNoSecondRequest) {
  agentcg_tunables t = agentcg_tunables_default();
  agentcg_place_in in = wakeup_beside(120 * kMs);  // the parent, ordered after its worker
  EXPECT_EQ(agentcg_place_task(&in, &t).kind, AGENTCG_PLACE_LOCAL_PREEMPT);  // the first worker
  in.curr_kicked = 1;
  in.has_head = 1;
  in.head_key = 99 * kMs;  // the first worker, on its way to that CPU
  const agentcg_place r = agentcg_place_task(&in, &t);
  EXPECT_EQ(r.kind, AGENTCG_PLACE_SHARED);
  EXPECT_TRUE(agentcg_place_retarget(&in, r, &t));
  in.curr_kicked = 0;  // not kicked: an earlier head is the next to run, no scan
  EXPECT_FALSE(agentcg_place_retarget(&in, agentcg_place_task(&in, &t), &t));
  in.curr_kicked = 1;
  in.cpu_idle = 1;  // an idle CPU claimed for it is its own, kicked or not
  in.has_head = 0;
  EXPECT_EQ(agentcg_place_task(&in, &t).kind, AGENTCG_PLACE_LOCAL);
}

// The victim scan (place.h): a wakeup the chosen CPU does not take at once
// and that would head the shared queue looks for another CPU; one qualifies
// when the base rule says NOW against what runs there.
TEST(Place, RetargetAndVictim) {
  agentcg_tunables t = agentcg_tunables_default();
  agentcg_place_in in = wakeup_beside(90 * kMs);  // the chosen CPU runs an earlier request (its parent)
  agentcg_place r = agentcg_place_task(&in, &t);
  ASSERT_EQ(r.kind, AGENTCG_PLACE_SHARED);
  EXPECT_TRUE(agentcg_place_retarget(&in, r, &t));
  in.has_head = 1;
  in.head_key = 99 * kMs;  // an earlier request waits: that one is the next to run
  EXPECT_FALSE(agentcg_place_retarget(&in, r, &t));
  in.head_key = 101 * kMs;
  EXPECT_TRUE(agentcg_place_retarget(&in, r, &t));
  in.curr_started_ns = in.now_ns - 100 * kUs;  // a later request, protected there: AT, still worth a scan
  in.curr_deadline = 104 * kMs;
  r = agentcg_place_task(&in, &t);
  ASSERT_EQ(r.kind, AGENTCG_PLACE_SHARED_AT);
  EXPECT_TRUE(agentcg_place_retarget(&in, r, &t));
  in.wakeup = 0;  // a slice end does not preempt anywhere
  EXPECT_FALSE(agentcg_place_retarget(&in, r, &t));
  in.wakeup = 1;
  t.features &= ~AGENTCG_F_VICTIM_PREEMPT;  // the feature off: no scan
  EXPECT_FALSE(agentcg_place_retarget(&in, r, &t));
  t.features |= AGENTCG_F_VICTIM_PREEMPT;
  // a victim: a later deadline past its protection; not an earlier one; a
  // protected one only deferred, to the end of its protection
  const u64 now = in.now_ns;
  const auto scan = [&](std::initializer_list<std::array<u64, 3>> cpus) {
    agentcg_victim_scan s = agentcg_victim_scan_start();
    s32 c = 1;
    for (const auto& cc : cpus) agentcg_victim_consider(&s, &in, c++, cc[0], cc[1], cc[2], &t);
    return s;
  };
  agentcg_victim_scan s = scan({{104 * kMs, now - 600 * kUs, 4 * kMs}});
  EXPECT_EQ(s.now_cpu, 1);
  s = scan({{99 * kMs, now - 600 * kUs, 4 * kMs}});
  EXPECT_EQ(s.now_cpu, -1);
  EXPECT_EQ(s.at_cpu, -1);
  s = scan({{104 * kMs, now - 100 * kUs, 4 * kMs}});
  EXPECT_EQ(s.now_cpu, -1);
  EXPECT_EQ(s.at_cpu, 1);
  EXPECT_EQ(s.at_ns, now + 400 * kUs);
  // of two at once the later deadline; of two protected ones the first to end
  s = scan({{104 * kMs, now - 600 * kUs, 4 * kMs}, {108 * kMs, now - 700 * kUs, 4 * kMs}});
  EXPECT_EQ(s.now_cpu, 2);
  s = scan({{104 * kMs, now - 100 * kUs, 4 * kMs}, {108 * kMs, now - 300 * kUs, 4 * kMs}});
  EXPECT_EQ(s.at_cpu, 2);
  EXPECT_EQ(s.at_ns, now + 200 * kUs);
  // one at once beats a deferred one
  s = scan({{104 * kMs, now - 100 * kUs, 4 * kMs}, {108 * kMs, now - 600 * kUs, 4 * kMs}});
  EXPECT_EQ(s.now_cpu, 2);
  EXPECT_FALSE(agentcg_victim_defer(&s, agentcg_place{AGENTCG_PLACE_SHARED, 0, 0}));
  // deferred: worth a timer unless the chosen CPU's own re-check comes first
  s = scan({{104 * kMs, now - 100 * kUs, 4 * kMs}});
  EXPECT_TRUE(agentcg_victim_defer(&s, agentcg_place{AGENTCG_PLACE_SHARED, 0, 0}));
  EXPECT_TRUE(agentcg_victim_defer(&s, agentcg_place{AGENTCG_PLACE_SHARED_AT, 0, now + 450 * kUs}));
  EXPECT_FALSE(agentcg_victim_defer(&s, agentcg_place{AGENTCG_PLACE_SHARED_AT, 0, now + 400 * kUs}));
}

// A stale request (its group ran past its share since it was tagged)
// competes at the deadline a re-tag would give it; a fresh one at its own.
TEST(Eevdf, EffectiveDeadlineOfAStaleRequest) {
  agentcg_tunables t = agentcg_tunables_default();
  agentcg_global g{};
  g.cvtime_now = 1000 * kMs;
  agentcg_cgrp cg{};
  cg.cvtime = 1010 * kMs;  // past V + slice
  agentcg_req r{};
  r.start = 990 * kMs;
  r.slice_ns = 4 * kMs;
  r.deadline = 994 * kMs;
  EXPECT_EQ(agentcg_eevdf_eff_deadline(&r, &cg, &g, &t), 1014 * kMs);
  t.features &= ~AGENTCG_F_RETAG_STALE;
  EXPECT_EQ(agentcg_eevdf_eff_deadline(&r, &cg, &g, &t), 994 * kMs);
  t.features |= AGENTCG_F_RETAG_STALE;
  cg.cvtime = 1003 * kMs;  // within V + slice: not stale
  EXPECT_EQ(agentcg_eevdf_eff_deadline(&r, &cg, &g, &t), 994 * kMs);
  EXPECT_EQ(agentcg_eevdf_eff_deadline(&r, nullptr, &g, &t), 994 * kMs);
}

