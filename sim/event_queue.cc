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
    slots_.push_back(Slot{});
  }
  Slot& s = slots_[slot];
  s.handler = h;
  s.kind = kind;
  s.arg = arg;
  s.gen = s.gen + 1 == 0 ? 1 : s.gen + 1;
  s.live = true;
  push(Node{at.ns(), seq_++, slot});
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
  std::size_t i = heap_.size();
  heap_.push_back(n);
  while (i > 0) {
    std::size_t parent = (i - 1) / 4;
    if (!before(n, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = n;
}

Simulator::Node Simulator::pop() {
  Node top = heap_.front();
  Node last = heap_.back();
  heap_.pop_back();
  std::size_t n = heap_.size();
  if (n == 0) return top;
  std::size_t i = 0;
  for (;;) {
    std::size_t c = 4 * i + 1;
    if (c >= n) break;
    std::size_t best = c;
    std::size_t end = c + 4 < n ? c + 4 : n;
    for (std::size_t k = c + 1; k < end; ++k)
      if (before(heap_[k], heap_[best])) best = k;
    if (!before(heap_[best], last)) break;
    heap_[i] = heap_[best];
    i = best;
  }
  heap_[i] = last;
  return top;
}

void Simulator::release(std::uint32_t slot) {
  slots_[slot].live = false;
  slots_[slot].handler = nullptr;
  free_.push_back(slot);
}

bool Simulator::step() {
  while (!heap_.empty()) {
    Node n = pop();
    Slot& s = slots_[n.slot];
    if (!s.live) {  // lazily cancelled
      release(n.slot);
      continue;
    }
    if (n.time < now_.ns()) throw std::logic_error("Simulator: time went backwards");
    now_ = Time::from_ns(n.time);
    EventHandler* h = s.handler;
    std::uint32_t kind = s.kind;
    std::uint64_t arg = s.arg;
    release(n.slot);
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
    while (!heap_.empty() && !slots_[heap_.front().slot].live) release(pop().slot);
    if (heap_.empty()) return;
    if (heap_.front().time > until.ns()) {
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
