// SPDX-License-Identifier: GPL-2.0-only
// Unit tests of core/include/agentcg/agentcg.h (the agentcg features) and
// counters.h. Each test states the intended behaviour of the design (seed
// 000) after the corrections listed in agentcg.h, so a regression to the
// seed's pseudo-code (e.g. an unbounded boost, a tumbling fork counter, a
// first memory.events reading taken as a rise) fails here.
#include "agentcg/agentcg.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace {

constexpr u64 kMs = 1000000ull;
constexpr u64 kSec = 1000000000ull;

agentcg_tunables defaults() { return agentcg_tunables_default(); }

agentcg_tunables only(u32 features) {
  agentcg_tunables t = agentcg_tunables_default();
  t.features = features;
  return t;
}

agentcg_cgrp group(u32 weight = 100) {
  agentcg_cgrp cg;
  agentcg_cgrp_init(&cg, weight);
  return cg;
}

// ---- mem_penalty ----

TEST(MemPenalty, FirstReadingIsBaselineThenRisesStepByStepToMax) {
  const agentcg_tunables t = defaults();
  agentcg_mem_state s{};
  EXPECT_EQ(agentcg_mem_penalty_update(&s, 1000, 0, &t), 0u);
  EXPECT_EQ(s.penalty, 0u) << "a daemon starting on a busy cgroup must not penalise it";
  u64 now = 0;
  for (u32 i = 1; i <= 6; i++) {
    now += 10 * kMs;
    const u32 ev = agentcg_mem_penalty_update(&s, 1000 + i, now, &t);
    EXPECT_EQ(s.penalty, std::min(i, t.mem_penalty_max));
    EXPECT_EQ(ev != 0, i <= t.mem_penalty_max);
  }
  // No rise: stays for decay_sec, then drops one step per decay_sec.
  const u64 last_rise = now;
  now = last_rise + 5 * kSec - 10 * kMs;
  agentcg_mem_penalty_update(&s, 1006, now, &t);
  EXPECT_EQ(s.penalty, 4u);
  now = last_rise + 5 * kSec;
  EXPECT_EQ(agentcg_mem_penalty_update(&s, 1006, now, &t), AGENTCG_EV(penalties_released));
  EXPECT_EQ(s.penalty, 3u);
  for (u64 k = 1; k <= 3; k++) agentcg_mem_penalty_update(&s, 1006, last_rise + (5 + 5 * k) * kSec, &t);
  EXPECT_EQ(s.penalty, 0u);
  EXPECT_EQ(agentcg_mem_penalty_update(&s, 1006, last_rise + 100 * kSec, &t), 0u);
  EXPECT_EQ(s.penalty, 0u);
}

TEST(MemPenalty, CounterResetIsANewBaselineAndFeatureOffKeepsZero) {
  agentcg_tunables t = defaults();
  agentcg_mem_state s{};
  agentcg_mem_penalty_update(&s, 10, 0, &t);
  agentcg_mem_penalty_update(&s, 11, kMs, &t);
  EXPECT_EQ(s.penalty, 1u);
  agentcg_mem_penalty_update(&s, 2, 2 * kMs, &t);  // cgroup re-created
  EXPECT_EQ(s.penalty, 1u);
  EXPECT_EQ(s.last_high, 2u);
  t.features &= ~AGENTCG_F_MEM_PENALTY;
  agentcg_mem_penalty_update(&s, 50, 3 * kMs, &t);
  EXPECT_EQ(s.penalty, 0u);
}

TEST(MemPenalty, DividesWeightByOnePlusPenaltyOnlyThroughWeight) {
  const agentcg_tunables t = defaults();
  agentcg_cgrp cg = group(100);
  cg.cvtime = 1000 * kMs;
  for (u32 p = 0; p <= 4; p++) {
    cg.mem_penalty = p;
    EXPECT_EQ(agentcg_eff_weight(&cg, &t), 100 / (1 + p));
    // correction 1: the penalty never shifts the (absolute) vtime
    EXPECT_EQ(agentcg_eff_vtime(&cg, 0, &t), cg.cvtime);
  }
  cg.mem_penalty = 9;  // clamped to mem_penalty_max
  EXPECT_EQ(agentcg_eff_weight(&cg, &t), 20u);
  const agentcg_tunables off = only(0);
  EXPECT_EQ(agentcg_eff_weight(&cg, &off), 100u);
}

// ---- fork_aware ----

TEST(ForkStorm, ThresholdWithinWindowDetectsAndRecoversAfterAQuietWindow) {
  const agentcg_tunables t = defaults();
  agentcg_cgrp cg = group(100);
  agentcg_global g{};
  agentcg_on_runnable(&cg, &g, 0, &t);
  u32 storms = 0;
  u64 now = 0;
  for (u32 i = 1; i <= 32; i++) {
    now = i * 5 * kMs;
    storms += (agentcg_on_fork(&cg, now, &t) & AGENTCG_EV(fork_storms)) != 0;
  }
  EXPECT_EQ(cg.storm, 0u) << "32 forks in a window is not a storm (threshold is 32)";
  now += kMs;
  storms += (agentcg_on_fork(&cg, now, &t) & AGENTCG_EV(fork_storms)) != 0;
  EXPECT_EQ(cg.storm, 1u);
  EXPECT_EQ(storms, 1u);
  EXPECT_EQ(agentcg_eff_weight(&cg, &t), 25u);
  // Forks keep coming fast: counted once.
  for (int i = 0; i < 10; i++) {
    now += kMs;
    EXPECT_EQ(agentcg_on_fork(&cg, now, &t) & AGENTCG_EV(fork_storms), 0u);
  }
  const u64 last = now;
  EXPECT_FALSE(agentcg_fork_tick(&cg, last + kSec - 1, &t));
  EXPECT_EQ(cg.storm, 1u);
  EXPECT_TRUE(agentcg_fork_tick(&cg, last + kSec, &t));
  EXPECT_EQ(cg.storm, 0u);
  EXPECT_EQ(agentcg_eff_weight(&cg, &t), 100u);
}

TEST(ForkStorm, BurstStraddlingAWindowEdgeIsStillAStorm) {
  // 20 forks at the end of one bucket and 20 at the start of the next:
  // 40 within 100 ms. A tumbling counter (the seed) would see 20 + 20.
  const agentcg_tunables t = defaults();
  agentcg_cgrp cg = group(100);
  agentcg_global g{};
  agentcg_on_runnable(&cg, &g, 0, &t);
  for (int i = 0; i < 20; i++) agentcg_on_fork(&cg, 950 * kMs + i * kMs, &t);
  for (int i = 0; i < 20; i++) agentcg_on_fork(&cg, 1000 * kMs + i * kMs, &t);
  EXPECT_EQ(cg.storm, 1u);
}

TEST(ForkStorm, SteadyRateBelowThresholdNeverStorms) {
  const agentcg_tunables t = defaults();
  agentcg_cgrp cg = group(100);
  agentcg_global g{};
  agentcg_on_runnable(&cg, &g, 0, &t);
  // 30 forks/s for 10 s, evenly spread.
  for (u64 i = 0; i < 300; i++) agentcg_on_fork(&cg, i * (kSec / 30), &t);
  EXPECT_EQ(cg.storm, 0u);
}

TEST(ForkStorm, StormingGroupGetsNoStartupBoost) {
  const agentcg_tunables t = defaults();
  agentcg_cgrp cg = group(100);
  agentcg_global g{};
  EXPECT_TRUE(agentcg_on_runnable(&cg, &g, 0, &t) & AGENTCG_EV(boosts_granted));
  EXPECT_TRUE(agentcg_boosted(&cg, kMs, &t));
  for (int i = 0; i < 40; i++) agentcg_on_fork(&cg, kMs + i * 100000, &t);
  EXPECT_EQ(cg.storm, 1u);
  EXPECT_FALSE(agentcg_boosted(&cg, 6 * kMs, &t)) << "a storm cancels an active boost";
  agentcg_on_quiescent(&cg, 10 * kMs);
  // New step during the storm (idle 300 ms, last storm fork at ~5 ms, still in window):
  const u32 ev = agentcg_on_runnable(&cg, &g, 310 * kMs, &t);
  EXPECT_TRUE(ev & AGENTCG_EV(new_steps));
  EXPECT_TRUE(ev & AGENTCG_EV(boosts_denied));
  EXPECT_FALSE(agentcg_boosted(&cg, 311 * kMs, &t));
}

// ---- auto_boost ----

TEST(StartupBoost, NewGroupIsOrderedEarlierOnlyWithinItsWindow) {
  const agentcg_tunables t = defaults();
  agentcg_global g{};
  g.cvtime_now = 500 * kMs;
  agentcg_cgrp cg = group(100);
  const u64 t0 = 7 * kSec;
  const u32 ev = agentcg_on_runnable(&cg, &g, t0, &t);
  EXPECT_EQ(ev, AGENTCG_EV(new_steps) | AGENTCG_EV(boosts_granted));
  EXPECT_EQ(cg.cvtime, g.cvtime_now);
  EXPECT_EQ(agentcg_eff_vtime(&cg, t0, &t), cg.cvtime - 20 * kMs);
  EXPECT_EQ(agentcg_slice_ns(&cg, t0, &t), 2 * kMs);
  EXPECT_EQ(agentcg_eff_vtime(&cg, t0 + 100 * kMs - 1, &t), cg.cvtime - 20 * kMs);
  EXPECT_EQ(agentcg_eff_vtime(&cg, t0 + 100 * kMs, &t), cg.cvtime) << "boost ends with its window";
  EXPECT_EQ(agentcg_slice_ns(&cg, t0 + 100 * kMs, &t), 4 * kMs);
  EXPECT_EQ(cg.cvtime, g.cvtime_now) << "the credit never changes cvtime itself";
}

TEST(StartupBoost, ShortIdleIsNotANewStepLongIdleIs) {
  const agentcg_tunables t = defaults();
  agentcg_global g{};
  agentcg_cgrp cg = group(100);
  agentcg_on_runnable(&cg, &g, 0, &t);
  agentcg_on_quiescent(&cg, 50 * kMs);
  EXPECT_EQ(agentcg_on_runnable(&cg, &g, 250 * kMs, &t), 0u) << "idle 200 ms = 2 windows, not more";
  agentcg_on_quiescent(&cg, 300 * kMs);
  EXPECT_TRUE(agentcg_on_runnable(&cg, &g, 501 * kMs, &t) & AGENTCG_EV(new_steps));
}

TEST(StartupBoost, RetriggeringGroupIsBoundedByItsBudget) {
  // A group that idles just over 2 windows and wakes again, for 20 s: the
  // total credit it receives is at most one full credit plus the refill
  // rate (one credit per 10 windows = 20 ms/s) times the elapsed time.
  const agentcg_tunables t = defaults();
  agentcg_global g{};
  agentcg_cgrp cg = group(100);
  u64 credit = 0, grants = 0, now = 0;
  for (int i = 0; i < 100; i++) {
    const u32 ev = agentcg_on_runnable(&cg, &g, now, &t);
    ASSERT_TRUE(ev & AGENTCG_EV(new_steps));
    if (ev & AGENTCG_EV(boosts_granted)) {
      credit += cg.boost_credit_ns;
      grants++;
    }
    now += kMs;
    agentcg_on_quiescent(&cg, now);
    now += 201 * kMs;
  }
  const u64 bound = 20 * kMs + now * 20 * kMs / kSec;
  EXPECT_LE(credit, bound);
  EXPECT_GT(credit, bound / 2) << "the budget refills, the boost is not a one-off";
  EXPECT_EQ(grants, 100u);
  EXPECT_LT(credit / grants, 20 * kMs) << "re-triggers get partial credit";
}

TEST(StartupBoost, OffMeansNoCreditButStepsAreStillCounted) {
  const agentcg_tunables t = only(0);
  agentcg_global g{};
  agentcg_cgrp cg = group(100);
  EXPECT_EQ(agentcg_on_runnable(&cg, &g, 0, &t), AGENTCG_EV(new_steps));
  EXPECT_FALSE(agentcg_has_boost(&cg, 0, &t));
  EXPECT_EQ(agentcg_eff_vtime(&cg, 0, &t), cg.cvtime);
  EXPECT_EQ(agentcg_slice_ns(&cg, 0, &t), 4 * kMs);
}

// ---- wakeup_boost ----

TEST(WakeupBoost, RateAboveThresholdIsIoBoundWithBoundedCredit) {
  const agentcg_tunables t = defaults();
  agentcg_global g{};
  agentcg_cgrp io = group(100);
  agentcg_on_runnable(&io, &g, 0, &t);
  // 8 wakeups per second: not above the rate of 10/s. (The estimate is
  // approximate: at exactly 10/s it reads 10 or 11, as a closed 1 s window would.)
  for (u64 i = 1; i <= 24; i++) agentcg_on_wakeup(&io, i * 125 * kMs, &t);
  EXPECT_EQ(io.io_bound, 0u);
  // 50 wakeups per second.
  u64 now = 3 * kSec;
  u32 became = 0;
  for (int i = 0; i < 50; i++) {
    now += 20 * kMs;
    became += (agentcg_on_wakeup(&io, now, &t) & AGENTCG_EV(io_bound_groups)) != 0;
  }
  EXPECT_EQ(io.io_bound, 1u);
  EXPECT_EQ(became, 1u);
  io.cvtime = 100 * kMs;
  EXPECT_EQ(agentcg_eff_vtime(&io, now, &t), 95 * kMs);
  EXPECT_EQ(agentcg_eff_vtime(&io, now + 10 * kMs - 1, &t), 95 * kMs);
  EXPECT_EQ(agentcg_eff_vtime(&io, now + 10 * kMs, &t), 100 * kMs) << "credit expires";
  // Back to 2 wakeups per second: classified CPU-bound again within ~1-2 s.
  for (int i = 0; i < 6; i++) {
    now += 500 * kMs;
    agentcg_on_wakeup(&io, now, &t);
  }
  EXPECT_EQ(io.io_bound, 0u);
}

TEST(WakeupBoost, OffGivesNothing) {
  const agentcg_tunables t = only(AGENTCG_F_ALL & ~AGENTCG_F_WAKEUP_BOOST);
  agentcg_cgrp io = group(100);
  for (int i = 0; i < 100; i++) EXPECT_EQ(agentcg_on_wakeup(&io, i * kMs, &t), 0u);
  EXPECT_FALSE(agentcg_wake_credited(&io, 100 * kMs, &t));
}

// ---- preemption and min_slice ----

TEST(Preempt, BoostedWakerPreemptsOnlyAfterMinSlice) {
  const agentcg_tunables t = defaults();
  agentcg_global g{};
  g.cvtime_now = 50 * kMs;
  agentcg_cgrp waker = group(100), victim = group(100);
  agentcg_on_runnable(&victim, &g, 0, &t);
  victim.cvtime = 60 * kMs;
  agentcg_task vt;
  agentcg_task_init(&vt, 100);
  vt.started_at_ns = 10 * kSec;
  agentcg_on_runnable(&waker, &g, 10 * kSec + 100000, &t);  // new group: boosted
  auto r = agentcg_should_preempt(&waker, &victim, &vt, 10 * kSec + 100000, &t);
  EXPECT_EQ(r.verdict, AGENTCG_PREEMPT_AT);
  EXPECT_EQ(r.at_ns, 10 * kSec + 500000) << "no preemption before 500 us of running";
  r = agentcg_should_preempt(&waker, &victim, &vt, 10 * kSec + 600000, &t);
  EXPECT_EQ(r.verdict, AGENTCG_PREEMPT_NOW);
  // min_slice off: at once.
  agentcg_tunables nomin = t;
  nomin.features &= ~AGENTCG_F_MIN_SLICE;
  r = agentcg_should_preempt(&waker, &victim, &vt, 10 * kSec + 100000, &nomin);
  EXPECT_EQ(r.verdict, AGENTCG_PREEMPT_NOW);
}

TEST(Preempt, NoPreemptionWithoutBoostOrWhenAheadOrBetweenBoosted) {
  const agentcg_tunables t = defaults();
  agentcg_global g{};
  agentcg_cgrp a = group(100), b = group(100);
  agentcg_task vt;
  agentcg_task_init(&vt, 100);
  // a unboosted (boost window passed)
  agentcg_on_runnable(&a, &g, 0, &t);
  EXPECT_EQ(agentcg_should_preempt(&a, &b, &vt, kSec, &t).verdict, AGENTCG_PREEMPT_NO);
  // a boosted but far ahead in vtime (it overran its share)
  agentcg_cgrp c = group(100);
  agentcg_on_runnable(&c, &g, 2 * kSec, &t);
  c.cvtime = b.cvtime + 500 * kMs;
  EXPECT_EQ(agentcg_should_preempt(&c, &b, &vt, 2 * kSec + kMs, &t).verdict, AGENTCG_PREEMPT_NO);
  // victim task itself boosted
  c.cvtime = b.cvtime;
  vt.boosted = 1;
  EXPECT_EQ(agentcg_should_preempt(&c, &b, &vt, 2 * kSec + kMs, &t).verdict, AGENTCG_PREEMPT_NO);
  // same group
  vt.boosted = 0;
  EXPECT_EQ(agentcg_should_preempt(&c, &c, &vt, 2 * kSec + kMs, &t).verdict, AGENTCG_PREEMPT_NO);
  EXPECT_EQ(agentcg_should_preempt(&c, &b, &vt, 2 * kSec + kMs, &t).verdict, AGENTCG_PREEMPT_NOW);
}

// ---- counters ----

TEST(Counters, DenseUniqueNamesFitInAnEventMask) {
  std::set<std::string> names;
  for (u32 i = 0; i < AGENTCG_NR_COUNTERS; i++) {
    const std::string n = agentcg_counter_name(i);
    EXPECT_FALSE(n.empty()) << "counter " << i << " has no name (numbers must be dense)";
    EXPECT_FALSE(std::string(agentcg_counter_help(i)).empty());
    names.insert(n);
  }
  EXPECT_EQ(names.size(), static_cast<std::size_t>(AGENTCG_NR_COUNTERS));
  EXPECT_STREQ(agentcg_counter_name(AGENTCG_NR_COUNTERS), "");
  EXPECT_LE(AGENTCG_NR_COUNTERS, 32);
  EXPECT_STREQ(agentcg_counter_name(AGENTCG_C_new_steps), "new_steps");
  EXPECT_STREQ(agentcg_counter_name(AGENTCG_C_fork_storms), "fork_storms");
}

}  // namespace
