// SPDX-License-Identifier: GPL-2.0-only
#include "sim/trace/cgroup_tree.h"

#include <algorithm>
#include <stdexcept>

namespace agentcg::trace {

namespace {

std::string parent_path(const std::string& p) {
  const auto slash = p.find_last_of('/');
  return slash == 0 ? "/" : p.substr(0, slash);
}

}  // namespace

CgroupTree::CgroupTree(const Trace& trace) {
  // Root first, then the listed cgroups ordered so that parents precede
  // children (shorter paths first; equal depths by path for determinism).
  std::vector<const CgroupSpec*> order;
  CgroupSpec root;
  root.path = "/";
  for (const auto& c : trace.cgroups) {
    if (c.path == "/") root = c;
    else order.push_back(&c);
  }
  auto depth = [](const std::string& p) { return std::count(p.begin(), p.end(), '/'); };
  std::stable_sort(order.begin(), order.end(), [&](const auto* a, const auto* b) {
    const auto da = depth(a->path), db = depth(b->path);
    return da != db ? da < db : a->path < b->path;
  });
  auto add = [&](const CgroupSpec& s, CgroupId parent) {
    const auto id = static_cast<CgroupId>(info_.size());
    const auto v = boost::add_vertex(Vertex{id}, graph_);
    (void)v;
    CgroupInfo ci;
    ci.id = id;
    ci.parent = parent;
    ci.depth = id == kRootCgroup ? 0 : info_[parent].depth + 1;
    ci.weight = s.cpu_weight;
    if (s.cpu_max) {
      ci.quota_us = s.cpu_max->quota_us;
      ci.period_us = s.cpu_max->period_us;
    }
    info_.push_back(ci);
    paths_.push_back(s.path);
    specs_.push_back(s);
    children_.emplace_back();
    by_path_[s.path] = id;
    if (id != kRootCgroup) {
      boost::add_edge(parent, id, graph_);
      children_[parent].push_back(id);
    }
  };
  add(root, kRootCgroup);
  for (const auto* s : order) {
    const auto it = by_path_.find(parent_path(s->path));
    if (it == by_path_.end()) {
      throw TraceError(trace.source, s->loc.line, s->loc.pointer,
                              "cgroup '" + s->path + "' has no parent cgroup '" +
                                  parent_path(s->path) + "' in the trace");
    }
    add(*s, it->second);
  }
}

CgroupId CgroupTree::find(const std::string& path) const {
  const auto it = by_path_.find(path);
  if (it == by_path_.end()) throw std::out_of_range("unknown cgroup '" + path + "'");
  return it->second;
}

bool CgroupTree::is_ancestor(CgroupId a, CgroupId b) const {
  for (;;) {
    if (a == b) return true;
    if (b == kRootCgroup) return false;
    b = info_[b].parent;
  }
}

std::vector<double> CgroupTree::entitled_shares(std::uint32_t nr_cpus,
                                                const std::vector<std::uint32_t>& tasks) const {
  const std::size_t n = info_.size();
  // Bottom-up: how many CPUs each group could use at most (tasks, cpu.max).
  std::vector<double> cap(n, 0.0);
  for (std::size_t i = n; i-- > 0;) {
    double c = static_cast<double>(i < tasks.size() ? tasks[i] : 0);
    for (CgroupId ch : children_[i]) c += cap[ch];
    if (info_[i].quota_us) {
      c = std::min(c, static_cast<double>(*info_[i].quota_us) / static_cast<double>(info_[i].period_us));
    }
    cap[i] = c;
  }
  // Top-down water-filling of each group's CPUs among its entities.
  std::vector<double> alloc(n, 0.0);
  alloc[kRootCgroup] = std::min(static_cast<double>(nr_cpus), cap[kRootCgroup]);
  for (std::size_t i = 0; i < n; ++i) {
    struct Entity {
      double weight, cap, got;
      int child;  // -1 = one of the group's own tasks
    };
    std::vector<Entity> ents;
    for (CgroupId ch : children_[i]) {
      if (cap[ch] > 0) ents.push_back({static_cast<double>(info_[ch].weight), cap[ch], 0.0, static_cast<int>(ch)});
    }
    const std::uint32_t own = i < tasks.size() ? tasks[i] : 0;
    for (std::uint32_t t = 0; t < own; ++t) ents.push_back({100.0, 1.0, 0.0, -1});
    double left = alloc[i];
    std::vector<bool> fixed(ents.size(), false);
    for (std::size_t round = 0; round <= ents.size() && left > 1e-12; ++round) {
      double wsum = 0;
      for (std::size_t k = 0; k < ents.size(); ++k)
        if (!fixed[k]) wsum += ents[k].weight;
      if (wsum <= 0) break;
      bool capped = false;
      for (std::size_t k = 0; k < ents.size(); ++k) {
        if (fixed[k]) continue;
        if (left * ents[k].weight / wsum >= ents[k].cap - ents[k].got) {
          left -= ents[k].cap - ents[k].got;
          ents[k].got = ents[k].cap;
          fixed[k] = true;
          capped = true;
        }
      }
      if (capped) continue;
      for (std::size_t k = 0; k < ents.size(); ++k)
        if (!fixed[k]) ents[k].got += left * ents[k].weight / wsum;
      left = 0;
    }
    for (const auto& e : ents)
      if (e.child >= 0) alloc[static_cast<std::size_t>(e.child)] = e.got;
  }
  std::vector<double> share(n);
  for (std::size_t i = 0; i < n; ++i) share[i] = alloc[i] / static_cast<double>(nr_cpus);
  return share;
}

}  // namespace agentcg::trace
