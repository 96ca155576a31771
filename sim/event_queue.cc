// SPDX-License-Identifier: GPL-2.0-only
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
    slot = static_cast<std::uint32_t>(slots_.size());
    if (slot > kSlotMask) throw std::length_error("Simulator: more than 2^24 pending events");
    slots_.push_back(Slot{});
  }
  Slot& s = slots_[slot];
  s.handler = h;
  s.kind = kind;
  s.arg = arg;
  s.gen = s.gen + 1 == 0 ? 1 : s.gen + 1;
  s.live = true;
  if (seq_ >> (64 - kSlotBits)) throw std::length_error("Simulator: more than 2^40 events scheduled");
  push(Node{at.ns(), (seq_++ << kSlotBits) | slot});
  ++scheduled_;
  ++pending_;
  return EventId{slot, s.gen};
}

bool Simulator::is_pending(EventId id) const {
  return id.valid() && id.slot < slots_.size() && slots_[id.slot].gen == id.gen &&
         slots_[id.slot].live;
}

bool Simulator::cancel(EventId id) {
  if (!is_pending(id)) return false;
  slots_[id.slot].live = false;  // the heap node is skipped when popped
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
  slots_[slot].live = false;
  slots_[slot].handler = nullptr;
  free_.push_back(slot);
}

bool Simulator::step() {
  while (top() != nullptr) {
    Node n = pop();
    Slot& s = slots_[n.slot()];
    if (!s.live) {  // lazily cancelled
      release(n.slot());
      continue;
    }
    if (n.time < now_.ns()) throw std::logic_error("Simulator: time went backwards");
    now_ = Time::from_ns(n.time);
    EventHandler* h = s.handler;
    std::uint32_t kind = s.kind;
    std::uint64_t arg = s.arg;
    release(n.slot());
    --pending_;
    ++executed_;
    h->on_event(*this, kind, arg);
    return true;
  }
  return false;
}

void Simulator::run_until(Time until) {
  stop_ = false;
  while (!stop_) {
    // Skip cancelled heads so that the peek below sees a live event.
    const Node* t = top();
    while (t != nullptr && !slots_[t->slot()].live) {
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
