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
// The queue is a radix heap (Ahuja, Mehlhorn, Orlin, Tarjan 1990): event
// times never precede the last one taken, which is exactly the monotone
// order a radix heap needs, and it beats a binary heap at every size here
// (tests/bench/engine_bench.cc). Nodes with equal times always share a
// bucket and keep their insertion order, so equal times stay FIFO.
// Each node carries its payload (handler, kind, arg) so that a pop reads
// only the bucket it walks sequentially; the one random access left is a
// bit in the live bitmap (1 bit per slot: 128 KiB at 1e6 pending, cache
// resident), where a separate slot table cost a cache miss per event at
// 1e6 pending (238 ns/event, 3.3x a bare radix heap). A slot's generation
// is touched only by schedule() (a just-freed slot: hot) and cancel().
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
  // 40 bytes: the insertion sequence and the slot share one word (seq in
  // the high 40 bits, slot in the low 24), so that comparing (time, key) is
  // comparing (time, seq).
  struct Node {
    std::uint64_t time;
    std::uint64_t key;
    EventHandler* handler;
    std::uint64_t arg;
    std::uint32_t kind;
    std::uint32_t slot() const { return static_cast<std::uint32_t>(key & kSlotMask); }
  };
  static constexpr unsigned kSlotBits = 24;
  static constexpr std::uint64_t kSlotMask = (std::uint64_t{1} << kSlotBits) - 1;
  bool live(std::uint32_t slot) const { return (live_[slot >> 6] >> (slot & 63)) & 1; }
  void set_live(std::uint32_t slot, bool on) {
    const std::uint64_t bit = std::uint64_t{1} << (slot & 63);
    live_[slot >> 6] = on ? (live_[slot >> 6] | bit) : (live_[slot >> 6] & ~bit);
  }
  static unsigned bucket_of(std::uint64_t t, std::uint64_t last) {
    return t == last ? 0 : 64 - static_cast<unsigned>(__builtin_clzll(t ^ last));
  }
  void push(Node n);
  // The earliest node (bucket 0's head), nullptr when the queue is empty.
  const Node* top();
  Node pop();  // requires top() != nullptr
  void rebase(std::uint64_t t);
  void release(std::uint32_t slot);

  // Bucket i holds nodes whose highest bit differing from last_ is i - 1;
  // bucket 0 holds nodes at last_, consumed FIFO from head0_.
  std::vector<Node> buckets_[65];
  std::size_t head0_ = 0;
  std::size_t queued_ = 0;  // nodes in the buckets, live or cancelled
  std::uint64_t last_ = 0;
  std::vector<std::uint32_t> gen_;       // by slot; 0 never names a live event
  std::vector<std::uint64_t> live_;      // bit per slot: scheduled, not cancelled, not run
  std::vector<std::uint32_t> free_;      // slots whose node has left the heap (LIFO)
  Time now_;
  std::uint64_t seq_ = 0;
  std::uint64_t scheduled_ = 0, executed_ = 0, cancelled_ = 0;
  std::size_t pending_ = 0;  // live events in the heap
  bool stop_ = false;
};

}  // namespace agentcg::sim
