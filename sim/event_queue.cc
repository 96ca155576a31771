// SPDX-License-Identifier: GPL-2.0-only
// The engine (see event_queue.h): a radix heap of self-contained nodes with
// a live bitmap for lazy cancel.
#include "sim/event_queue.h"

#include <utility>

namespace agentcg::sim {

EventId Simulator::schedule(Time at, EventHandler* h, std::uint32_t kind, std::uint64_t arg) {
  if (at < now_) {
    throw std::logic_error("Simulator::schedule: event at " + std::to_string(at.ns()) +
                           " ns is before now (" + std::to_string(now_.ns()) + " ns)");
  }
  if (h == nullptr) throw std::logic_error("Simulator::schedule: null handler");
  std::uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(gen_.size());
    if (slot > kSlotMask) throw std::length_error("Simulator: more than 2^24 pending events");
    gen_.push_back(0);
    if (slot % 64 == 0) live_.push_back(0);
  }
  std::uint32_t& g = gen_[slot];
  g = g + 1 == 0 ? 1 : g + 1;
  set_live(slot, true);
  if (seq_ >> (64 - kSlotBits)) throw std::length_error("Simulator: more than 2^40 events scheduled");
  push(Node{at.ns(), (seq_++ << kSlotBits) | slot, h, arg, kind});
  ++scheduled_;
  ++pending_;
  return EventId{slot, g};
}

bool Simulator::is_pending(EventId id) const {
  return id.valid() && id.slot < gen_.size() && gen_[id.slot] == id.gen && live(id.slot);
}

bool Simulator::cancel(EventId id) {
  if (!is_pending(id)) return false;
  set_live(id.slot, false);  // the heap node is skipped when popped
  ++cancelled_;
  --pending_;
  return true;
}

void Simulator::push(Node n) {
  // Only run_until() can leave now() below the heap's last minimum (it peeks
  // past its boundary); re-bucket everything around the earlier time.
  if (n.time < last_) rebase(n.time);
  buckets_[bucket_of(n.time, last_)].push_back(n);
  ++queued_;
}

void Simulator::rebase(std::uint64_t t) {
  std::vector<Node> all(buckets_[0].begin() + static_cast<std::ptrdiff_t>(head0_), buckets_[0].end());
  for (unsigned i = 1; i < 65; ++i) all.insert(all.end(), buckets_[i].begin(), buckets_[i].end());
  for (auto& b : buckets_) b.clear();
  head0_ = 0;
  last_ = t;
  for (const Node& n : all) buckets_[bucket_of(n.time, last_)].push_back(n);
}

const Simulator::Node* Simulator::top() {
  std::vector<Node>& b0 = buckets_[0];
  if (head0_ < b0.size()) return &b0[head0_];
  b0.clear();
  head0_ = 0;
  if (queued_ == 0) return nullptr;
  unsigned i = 1;
  while (buckets_[i].empty()) ++i;
  std::vector<Node>& b = buckets_[i];
  std::uint64_t m = b.front().time;
  for (const Node& n : b) m = n.time < m ? n.time : m;
  last_ = m;
  // Every node moves to a lower bucket, in order (equal times stay FIFO).
  for (const Node& n : b) buckets_[bucket_of(n.time, last_)].push_back(n);
  b.clear();
  return &b0[0];
}

Simulator::Node Simulator::pop() {
  const Node n = *top();
  ++head0_;
  --queued_;
  return n;
}

void Simulator::release(std::uint32_t slot) {
  set_live(slot, false);
  free_.push_back(slot);
}

bool Simulator::step() {
  while (top() != nullptr) {
    const Node n = pop();
    const bool was_live = live(n.slot());
    release(n.slot());
    if (!was_live) continue;  // lazily cancelled
    if (n.time < now_.ns()) throw std::logic_error("Simulator: time went backwards");
    now_ = Time::from_ns(n.time);
    --pending_;
    ++executed_;
    n.handler->on_event(*this, n.kind, n.arg);
    return true;
  }
  return false;
}

void Simulator::run_until(Time until) {
  stop_ = false;
  while (!stop_) {
    // Skip cancelled heads so that the peek below sees a live event.
    const Node* t = top();
    while (t != nullptr && !live(t->slot())) {
      release(pop().slot());
      t = top();
    }
    if (t == nullptr) return;
    if (t->time > until.ns()) {
      now_ = until;
      return;
    }
    step();
  }
}

void Simulator::check_accounting() const {
  if (scheduled_ != executed_ + cancelled_ + pending_) {
    throw std::logic_error("Simulator: lost event: scheduled " + std::to_string(scheduled_) +
                           " != executed " + std::to_string(executed_) + " + cancelled " +
                           std::to_string(cancelled_) + " + pending " + std::to_string(pending_));
  }
}

}  // namespace agentcg::sim
