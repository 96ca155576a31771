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
// Limits (each throws when exceeded): kind < 2^16, at most 256 distinct
// handlers per Simulator, 2^40 events scheduled per run.
//
// The queue is a radix heap (Ahuja, Mehlhorn, Orlin, Tarjan 1990): event
// times never precede the last one taken, which is exactly the monotone
// order a radix heap needs, and it beats a binary heap at every size here
// (tests/bench/engine_bench.cc). Nodes with equal times always share a
// bucket and keep their insertion order, so equal times stay FIFO.
// Each node carries its payload (handler, kind, arg) and its sequence
// number, so that the per-event path touches no per-event side table: a
// pop reads only the bucket it walks sequentially. (A slot table, or even
// a per-slot generation stored on schedule, cost a cache miss per event at
// 1e6 pending, where a reused slot is a random one: 238-300 ns/event,
// 2.7-3.3x a bare radix heap.) Cancel is lazy: cancelled sequence numbers
// go into a small open-addressing set (CancelSet), consulted at a pop only
// while it is non-empty and emptied as the cancelled nodes come out.
// An event is pending iff it is not in that set and (time, seq) is after
// the last popped node's: nodes leave the heap in (time, seq) order.
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
  std::uint64_t time = 0;
  std::uint64_t seq = 0;  // 1 + the number of events scheduled before it; 0 = none
  constexpr bool valid() const { return seq != 0; }
};

// A set of nonzero u64 keys: linear probing with backward-shift deletion in
// a power-of-two table kept at most half full; it grows (and allocates)
// only when more cancelled events are outstanding than ever before.
class CancelSet {
 public:
  bool empty() const { return size_ == 0; }
  bool contains(std::uint64_t k) const;
  void insert(std::uint64_t k);
  bool erase(std::uint64_t k);  // false if absent

 private:
  std::size_t home(std::uint64_t k) const { return static_cast<std::size_t>((k * 0x9e3779b97f4a7c15ULL) >> 20) & (slots_.size() - 1); }
  std::vector<std::uint64_t> slots_;  // 0 = empty
  std::size_t size_ = 0;
};

class Simulator {
 public:
  Simulator() = default;
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  Time now() const { return now_; }

  // Schedules `h->on_event(kind, arg)` at absolute time `at` (>= now()).
  // Inline: it is on every event's path (the checks' messages are out of line).
  EventId schedule(Time at, EventHandler* h, std::uint32_t kind, std::uint64_t arg = 0) {
    const std::uint64_t seq = scheduled_ + 1;
    if (at < now_ || h == nullptr || kind > kKindMask || (seq >> (64 - kKindBits - kHandlerBits)) != 0) [[unlikely]]
      schedule_rejected(at, h, kind);
    const std::uint64_t hi = h == last_handler_ ? last_handler_index_ : handler_index(h);
    push(Node{at.ns(), arg, (seq << (kKindBits + kHandlerBits)) | (hi << kKindBits) | kind});
    ++scheduled_;
    ++pending_;
    return EventId{at.ns(), seq};
  }
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
  // 24 bytes: the sequence number, the handler (an index into handlers_:
  // a simulator has a handful, the CPU and GPU models) and the kind share
  // one word (seq: high 40 bits, handler: 8, kind: low 16). The (time,
  // seq) order is the buckets' order itself: every node sits in
  // bucket_of(time, last_) for the current last_ (the radix heap
  // invariant), so nodes with equal times are always in one bucket, and
  // push_back, the redistribution in top() and rebase() all keep a
  // bucket's nodes in the order they arrived, which is seq order.
  struct Node {
    std::uint64_t time;
    std::uint64_t arg;
    std::uint64_t meta;
    std::uint64_t seq() const { return meta >> (kKindBits + kHandlerBits); }
    std::uint32_t handler() const { return static_cast<std::uint32_t>((meta >> kKindBits) & kHandlerMask); }
    std::uint32_t kind() const { return static_cast<std::uint32_t>(meta & kKindMask); }
  };
  static constexpr unsigned kKindBits = 16;
  static constexpr unsigned kHandlerBits = 8;
  static constexpr std::uint64_t kKindMask = (std::uint64_t{1} << kKindBits) - 1;
  static constexpr std::uint64_t kHandlerMask = (std::uint64_t{1} << kHandlerBits) - 1;
  std::uint32_t handler_index(EventHandler* h);
  // Pops the next node; true if it is live (not cancelled).
  bool take(Node& out);
  static unsigned bucket_of(std::uint64_t t, std::uint64_t last) {
    return t == last ? 0 : 64 - static_cast<unsigned>(__builtin_clzll(t ^ last));
  }
  // Throws the error that schedule()'s checks found.
  [[noreturn]] void schedule_rejected(Time at, EventHandler* h, std::uint32_t kind) const;
  void push(Node n) {
    // Only run_until() can leave now() below the heap's last minimum (it
    // peeks past its boundary); re-bucket everything around the earlier time.
    if (n.time < last_) rebase(n.time);
    buckets_[bucket_of(n.time, last_)].push_back(n);
    ++queued_;
  }
  // The earliest node (bucket 0's head), nullptr when the queue is empty.
  const Node* top();
  Node pop();  // requires top() != nullptr
  void rebase(std::uint64_t t);

  // Bucket i holds nodes whose highest bit differing from last_ is i - 1;
  // bucket 0 holds nodes at last_, consumed FIFO from head0_.
  std::vector<Node> buckets_[65];
  std::size_t head0_ = 0;
  std::size_t queued_ = 0;  // nodes in the buckets, live or cancelled
  std::uint64_t last_ = 0;
  std::vector<EventHandler*> handlers_;  // at most 2^kHandlerBits distinct
  EventHandler* last_handler_ = nullptr;
  std::uint32_t last_handler_index_ = 0;
  CancelSet cancelled_seqs_;        // cancelled events still in the buckets
  std::uint64_t last_time_ = 0;     // (time, seq) of the last node taken out
  std::uint64_t last_seq_ = 0;
  Time now_;
  std::uint64_t scheduled_ = 0, executed_ = 0, cancelled_ = 0;
  std::size_t pending_ = 0;  // live events in the heap
  bool stop_ = false;
};

}  // namespace agentcg::sim
