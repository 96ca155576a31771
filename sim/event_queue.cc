// SPDX-License-Identifier: GPL-2.0-only
// The engine (see event_queue.h): a radix heap of self-contained nodes, with
// a set of cancelled sequence numbers for lazy cancel; schedule() and push()
// are inline in the header (every event's path).
#include "sim/event_queue.h"

#include <utility>

namespace agentcg::sim {

bool CancelSet::contains(std::uint64_t k) const {
  if (size_ == 0) return false;
  for (std::size_t i = home(k);; i = (i + 1) & (slots_.size() - 1)) {
    if (slots_[i] == k) return true;
    if (slots_[i] == 0) return false;
  }
}

void CancelSet::insert(std::uint64_t k) {
  if (2 * (size_ + 1) > slots_.size()) {
    std::vector<std::uint64_t> old(slots_.empty() ? 64 : 2 * slots_.size(), 0);
    old.swap(slots_);
    size_ = 0;
    for (std::uint64_t x : old)
      if (x != 0) insert(x);
  }
  std::size_t i = home(k);
  while (slots_[i] != 0) {
    if (slots_[i] == k) return;
    i = (i + 1) & (slots_.size() - 1);
  }
  slots_[i] = k;
  ++size_;
}

bool CancelSet::erase(std::uint64_t k) {
  if (size_ == 0) return false;
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = home(k);
  while (slots_[i] != k) {
    if (slots_[i] == 0) return false;
    i = (i + 1) & mask;
  }
  // Backward-shift deletion: move later members of the probe run into the
  // hole when their home does not lie cyclically in (hole, their position].
  for (std::size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
    if (slots_[j] == 0) break;
    const std::size_t h = home(slots_[j]);
    const bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
    if (!stays) {
      slots_[i] = slots_[j];
      i = j;
    }
  }
  slots_[i] = 0;
  --size_;
  return true;
}

std::uint32_t Simulator::handler_index(EventHandler* h) {
  std::uint32_t i = 0;
  while (i < handlers_.size() && handlers_[i] != h) ++i;
  if (i == handlers_.size()) {
    if (i > kHandlerMask) throw std::length_error("Simulator: more than 256 distinct event handlers");
    handlers_.push_back(h);
  }
  last_handler_ = h;
  last_handler_index_ = i;
  return i;
}

void Simulator::schedule_rejected(Time at, EventHandler* h, std::uint32_t kind) const {
  if (at < now_) {
    throw std::logic_error("Simulator::schedule: event at " + std::to_string(at.ns()) +
                           " ns is before now (" + std::to_string(now_.ns()) + " ns)");
  }
  if (h == nullptr) throw std::logic_error("Simulator::schedule: null handler");
  if (kind > kKindMask) throw std::logic_error("Simulator::schedule: kind " + std::to_string(kind) + " >= 2^16");
  throw std::length_error("Simulator: more than 2^40 events scheduled");
}

bool Simulator::is_pending(EventId id) const {
  if (!id.valid() || id.seq > scheduled_) return false;
  const bool taken = id.time < last_time_ || (id.time == last_time_ && id.seq <= last_seq_);
  return !taken && !cancelled_seqs_.contains(id.seq);
}

bool Simulator::cancel(EventId id) {
  if (!is_pending(id)) return false;
  cancelled_seqs_.insert(id.seq);  // the heap node is skipped when popped
  ++cancelled_;
  --pending_;
  return true;
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

bool Simulator::take(Node& out) {
  out = pop();
  last_time_ = out.time;
  last_seq_ = out.seq();
  return cancelled_seqs_.empty() || !cancelled_seqs_.erase(out.seq());
}

bool Simulator::step() {
  // One top() per node: take() would call it again through pop().
  for (const Node* t = top(); t != nullptr; t = top()) {
    const Node n = *t;
    ++head0_;
    --queued_;
    last_time_ = n.time;
    last_seq_ = n.seq();
    if (!cancelled_seqs_.empty() && cancelled_seqs_.erase(n.seq())) continue;  // lazily cancelled
    if (n.time < now_.ns()) throw std::logic_error("Simulator: time went backwards");
    now_ = Time::from_ns(n.time);
    --pending_;
    ++executed_;
    handlers_[n.handler()]->on_event(*this, n.kind(), n.arg);
    return true;
  }
  return false;
}

void Simulator::run_until(Time until) {
  stop_ = false;
  while (!stop_) {
    // Skip cancelled heads so that the peek below sees a live event.
    const Node* t = top();
    while (t != nullptr && !cancelled_seqs_.empty() && cancelled_seqs_.contains(t->seq())) {
      Node skipped;
      (void)take(skipped);
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
