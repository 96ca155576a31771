// SPDX-License-Identifier: GPL-2.0-only
// Engine invariants: (time, seq) order, lazy cancel, monotonic time,
// no lost events, determinism of the random streams.
#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "sim/random.h"

namespace agentcg::sim {
namespace {

using namespace time_literals;

struct Recorder : EventHandler {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> seen;  // (time, arg)
  void on_event(Simulator& sim, std::uint32_t, std::uint64_t arg) override {
    seen.emplace_back(sim.now().ns(), arg);
  }
};

TEST(EventQueue, EqualTimesRunInInsertionOrder) {
  Simulator sim;
  Recorder r;
  for (std::uint64_t i = 0; i < 100; ++i) sim.schedule(5_ms, &r, 0, i);
  sim.schedule(1_ms, &r, 0, 1000);
  sim.run();
  ASSERT_EQ(r.seen.size(), 101u);
  EXPECT_EQ(r.seen[0], std::make_pair(std::uint64_t{1000000}, std::uint64_t{1000}));
  for (std::uint64_t i = 0; i < 100; ++i) EXPECT_EQ(r.seen[i + 1].second, i) << "position " << i;
}

TEST(EventQueue, OrdersByTimeAcrossManyEvents) {
  Simulator sim;
  Recorder r;
  RandomStream rng(7, "order");
  for (int i = 0; i < 10000; ++i) sim.schedule(Time::from_ns(rng.below(1000000)), &r, 0, static_cast<std::uint64_t>(i));
  sim.run();
  ASSERT_EQ(r.seen.size(), 10000u);
  for (std::size_t i = 1; i < r.seen.size(); ++i) {
    ASSERT_LE(r.seen[i - 1].first, r.seen[i].first);
    if (r.seen[i - 1].first == r.seen[i].first) {
      ASSERT_LT(r.seen[i - 1].second, r.seen[i].second);
    }
  }
}

TEST(EventQueue, CancelSkipsTheEventAndIsIdempotent) {
  Simulator sim;
  Recorder r;
  const EventId a = sim.schedule(1_ms, &r, 0, 1);
  sim.schedule(2_ms, &r, 0, 2);
  EXPECT_TRUE(sim.is_pending(a));
  EXPECT_TRUE(sim.cancel(a));
  EXPECT_FALSE(sim.cancel(a));
  EXPECT_FALSE(sim.is_pending(a));
  EXPECT_EQ(sim.pending(), 1u);
  sim.run();
  ASSERT_EQ(r.seen.size(), 1u);
  EXPECT_EQ(r.seen[0].second, 2u);
  // An id whose slot was reused by a later event must not cancel that event.
  const EventId b = sim.schedule(sim.now() + 1_ms, &r, 0, 3);
  EXPECT_FALSE(sim.cancel(a));
  EXPECT_TRUE(sim.is_pending(b));
  sim.check_accounting();
}

TEST(EventQueue, RejectsEventsInThePast) {
  Simulator sim;
  Recorder r;
  sim.schedule(10_ms, &r, 0);
  sim.run();
  EXPECT_EQ(sim.now(), 10_ms);
  EXPECT_THROW(sim.schedule(9_ms, &r, 0), std::logic_error);
}

TEST(EventQueue, TimeNeverGoesBackwardsWhileHandlersSchedule) {
  struct Chain : EventHandler {
    std::uint64_t last = 0;
    int left = 1000;
    RandomStream rng{3, "chain"};
    void on_event(Simulator& sim, std::uint32_t, std::uint64_t) override {
      EXPECT_GE(sim.now().ns(), last);
      last = sim.now().ns();
      if (--left > 0) {
        sim.schedule_in(Time::from_ns(rng.below(3)), this, 0);  // includes zero delays
        sim.schedule_in(Time::from_ns(rng.below(1000)), this, 0);
      }
    }
  } c;
  Simulator sim;
  sim.schedule(0_ns, &c, 0);
  sim.run_until(1_s);
  sim.check_accounting();
  EXPECT_GT(sim.executed_count(), 1000u);
}

TEST(EventQueue, NoEventIsLost) {
  Simulator sim;
  Recorder r;
  std::vector<EventId> ids;
  for (int i = 0; i < 1000; ++i) ids.push_back(sim.schedule(Time::from_us(static_cast<std::uint64_t>(i)), &r, 0, static_cast<std::uint64_t>(i)));
  for (int i = 0; i < 1000; i += 3) sim.cancel(ids[static_cast<std::size_t>(i)]);
  sim.run_until(Time::from_us(500));
  sim.check_accounting();
  EXPECT_EQ(sim.scheduled_count(), 1000u);
  EXPECT_EQ(sim.executed_count() + sim.cancelled_count() + sim.pending(), 1000u);
  sim.run();
  EXPECT_EQ(sim.pending(), 0u);
  EXPECT_EQ(sim.executed_count(), 1000u - 334u);
  EXPECT_EQ(r.seen.size(), sim.executed_count());
  sim.check_accounting();
}

TEST(EventQueue, RunUntilStopsAtTheBoundary) {
  Simulator sim;
  Recorder r;
  sim.schedule(1_ms, &r, 0, 1);
  sim.schedule(3_ms, &r, 0, 3);
  sim.run_until(2_ms);
  EXPECT_EQ(r.seen.size(), 1u);
  EXPECT_EQ(sim.now(), 2_ms);
  sim.run();
  EXPECT_EQ(r.seen.size(), 2u);
}

TEST(EventQueue, SchedulingBelowAPeekedEventAfterRunUntilKeepsOrder) {
  // run_until() looks at the next event (3 ms) and stops at 2 ms; events
  // then scheduled between 2 and 3 ms must still run first, FIFO.
  Simulator sim;
  Recorder r;
  sim.schedule(3_ms, &r, 0, 3);
  sim.schedule(3_ms, &r, 0, 4);
  sim.run_until(2_ms);
  sim.schedule(2_ms + 500_us, &r, 0, 1);
  sim.schedule(2_ms + 500_us, &r, 0, 2);
  sim.schedule(3_ms, &r, 0, 5);
  sim.run();
  ASSERT_EQ(r.seen.size(), 5u);
  for (std::uint64_t i = 0; i < 5; ++i) EXPECT_EQ(r.seen[i].second, i + 1);
  sim.check_accounting();
}

// Lazy cancel through the CancelSet: many interleaved cancels of events at
// equal and different times, checked against a plain model of what must run.
TEST(EventQueue, ManyCancelsAtEqualTimesMatchAModel) {
  struct Rec : EventHandler {
    std::vector<std::uint64_t> ran;
    void on_event(Simulator&, std::uint32_t, std::uint64_t arg) override { ran.push_back(arg); }
  } rec;
  Simulator sim;
  RandomStream rng(9, "cancels");
  std::vector<EventId> ids;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> expect;  // (time, index) of survivors
  std::vector<bool> cancelled;
  for (std::uint64_t i = 0; i < 20000; ++i) {
    const std::uint64_t t = rng.below(500);  // many equal times
    ids.push_back(sim.schedule(Time::from_ns(t), &rec, 7, i));
    cancelled.push_back(false);
    if (i % 3 == 0) {  // cancel an earlier, still pending event
      const std::uint64_t j = rng.below(i + 1);
      EXPECT_EQ(sim.cancel(ids[j]), !cancelled[j]);
      cancelled[j] = true;
      EXPECT_FALSE(sim.is_pending(ids[j]));
    }
  }
  for (std::uint64_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(sim.is_pending(ids[i]), !cancelled[i]);
    if (!cancelled[i]) expect.emplace_back(Time::from_ns(0).ns() + ids[i].time, i);
  }
  std::stable_sort(expect.begin(), expect.end(), [](auto a, auto b) { return a.first < b.first; });
  sim.run();
  ASSERT_EQ(rec.ran.size(), expect.size());
  for (std::size_t k = 0; k < expect.size(); ++k) ASSERT_EQ(rec.ran[k], expect[k].second) << k;
  for (const EventId& id : ids) EXPECT_FALSE(sim.is_pending(id));
  EXPECT_FALSE(sim.cancel(ids[5]));
  sim.check_accounting();
}

TEST(EventQueue, LimitsOfThePackedNodeAreChecked) {
  struct Nop : EventHandler {
    void on_event(Simulator&, std::uint32_t, std::uint64_t) override {}
  };
  Simulator sim;
  std::vector<Nop> hs(257);
  EXPECT_THROW(sim.schedule(Time::from_ns(1), &hs[0], 1u << 16), std::logic_error);
  for (int i = 0; i < 256; ++i) sim.schedule(Time::from_ns(1), &hs[static_cast<std::size_t>(i)], 65535, 7);
  EXPECT_THROW(sim.schedule(Time::from_ns(1), &hs[256], 0), std::length_error);
  sim.run();
  EXPECT_EQ(sim.executed_count(), 256u);
}

TEST(RandomStream, SameSeedSameNumbersOtherSeedOtherNumbers) {
  RandomStream a(42, "x"), b(42, "x"), c(43, "x"), d(42, "y");
  int diff_seed = 0, diff_stream = 0;
  for (int i = 0; i < 100; ++i) {
    const auto va = a.next_u64();
    EXPECT_EQ(va, b.next_u64());
    diff_seed += va != c.next_u64();
    diff_stream += va != d.next_u64();
  }
  EXPECT_EQ(diff_seed, 100);
  EXPECT_EQ(diff_stream, 100);
}

TEST(RandomStream, DistributionsHaveTheirMoments) {
  RandomStream r(1, "moments");
  const int n = 200000;
  double se = 0, su = 0, sl = 0;
  std::uint64_t below_max = 0;
  for (int i = 0; i < n; ++i) {
    se += r.exponential(5.0);
    su += r.uniform01();
    sl += r.lognormal(10.0, 0.5) < 10.0 ? 1 : 0;
    below_max = std::max(below_max, r.below(7));
  }
  EXPECT_NEAR(se / n, 5.0, 0.05);
  EXPECT_NEAR(su / n, 0.5, 0.005);
  EXPECT_NEAR(sl / n, 0.5, 0.005);  // the median of a log-normal
  EXPECT_EQ(below_max, 6u);
}

}  // namespace
}  // namespace agentcg::sim
