// SPDX-License-Identifier: GPL-2.0-only
// The discrete-event engine: one Simulator instance per run (never a
// global). Events are ordered by (time, insertion sequence), so events at
// equal times run in the order they were scheduled. Cancel is lazy: a
// cancelled event stays in the heap and is skipped when it reaches the top.
//
// Invariants (checked, with a message, in every build):
//  - time never goes backwards: schedule() before now() is rejected;
//  - no event is lost: scheduled == executed + cancelled + pending at all
//    times (check_accounting()).
//
// Payloads are (handler, kind, arg) rather than std::function: the handler
// switches on kind, which keeps an event at 24 bytes in a 4-ary heap and the
// engine at tens of nanoseconds per event (tests/bench/engine_bench.cc).
// Nothing here reads a clock.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/time.h"

namespace agentcg::sim {

class Simulator;

// Something that receives events. `kind` and `arg` are the handler's own.
class EventHandler {
 public:
  virtual ~EventHandler() = default;
  virtual void on_event(Simulator& sim, std::uint32_t kind, std::uint64_t arg) = 0;
};

// Identifies a scheduled event for cancel(). Default-constructed = none.
struct EventId {
  std::uint32_t slot = 0;
  std::uint32_t gen = 0;  // 0 never names a live event
  constexpr bool valid() const { return gen != 0; }
};

class Simulator {
 public:
  Simulator() = default;
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  Time now() const { return now_; }

  // Schedules `h->on_event(kind, arg)` at absolute time `at` (>= now()).
  EventId schedule(Time at, EventHandler* h, std::uint32_t kind, std::uint64_t arg = 0);
  EventId schedule_in(Time delay, EventHandler* h, std::uint32_t kind, std::uint64_t arg = 0) {
    return schedule(now_ + delay, h, kind, arg);
  }
  // Returns false if the event already ran or was cancelled (safe either way).
  bool cancel(EventId id);
  bool is_pending(EventId id) const;

  // Runs one event; returns false when no live event is left.
  bool step();
  // Runs events with time <= until; now() ends at `until` if the queue
  // still holds later events, else at the last event's time.
  void run_until(Time until);
  void run() { run_until(Time::max()); }
  // Stops run()/run_until() after the current event.
  void stop() { stop_ = true; }

  std::size_t pending() const { return pending_; }
  std::uint64_t scheduled_count() const { return scheduled_; }
  std::uint64_t executed_count() const { return executed_; }
  std::uint64_t cancelled_count() const { return cancelled_; }
  // Throws std::logic_error if an event was lost or counted twice.
  void check_accounting() const;

 private:
  struct Node {
    std::uint64_t time;
    std::uint64_t seq;
    std::uint32_t slot;
  };
  struct Slot {
    EventHandler* handler = nullptr;
    std::uint64_t arg = 0;
    std::uint32_t kind = 0;
    std::uint32_t gen = 0;
    bool live = false;
  };
  static bool before(const Node& a, const Node& b) {
    return a.time < b.time || (a.time == b.time && a.seq < b.seq);
  }
  void push(Node n);
  Node pop();
  void release(std::uint32_t slot);

  std::vector<Node> heap_;  // 4-ary min-heap
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_;
  Time now_;
  std::uint64_t seq_ = 0;
  std::uint64_t scheduled_ = 0, executed_ = 0, cancelled_ = 0;
  std::size_t pending_ = 0;  // live events in the heap
  bool stop_ = false;
};

}  // namespace agentcg::sim
