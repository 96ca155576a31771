// SPDX-License-Identifier: GPL-2.0-only
// Replay of a recorded capture against its own measurements (replay_check.h).
#include "sim/import/replay_check.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "sim/cpu/cpu_model.h"
#include "sim/event_queue.h"
#include "sim/schedule_log.h"

namespace agentcg::import {

namespace {

// The kernel's own policies only (sim::make_class builds them): a
// capture's kernel ran eevdf or cfs, not a BPF scheduler of this project.
std::unique_ptr<sim::SchedClass> make_class(const std::string& policy, const config::Config& cfg) {
  if (policy == "cfs" || policy == "eevdf" || policy == "fifo") return sim::make_class(policy, cfg);
  throw std::invalid_argument("replay check: policy '" + policy +
                              "' (a capture's kernel runs eevdf or cfs; expected eevdf, cfs or fifo)");
}

double err_pct(double sim, double measured) { return measured > 0 ? (sim - measured) / measured * 100.0 : 0.0; }

// One wakeup of either side: its task, which of the task's wakeups it is
// (its start, or the n-th end of a sleep), its kind, its latency and, for a
// sleep's end, what ended it.
struct Sample {
  std::int64_t pid;
  bool start;
  std::size_t nth;  // among the task's sleep ends (0 for a start)
  WakeupKind kind;
  std::uint64_t ns;
  WakerKind waker;
};

// The capture's samples (the importer's FtraceDetail, in input order).
std::vector<Sample> measured_samples(const FtraceDetail& detail) {
  std::vector<Sample> out;
  std::map<std::int64_t, std::size_t> ends;
  for (const FtraceDetail::Wakeup& w : detail.wakeups)
    out.push_back({w.pid, w.start, w.start ? 0 : ends[w.pid]++, w.kind, w.ns, w.waker});
  return out;
}

// The model's samples from its schedule log: each wakeup to the task's
// next slice (its switch-in), local when that slice is on the CPU the
// wakeup ran on; a task the capture found running (no start measured) has
// none for its start.
std::vector<Sample> simulated_samples(const sim::ScheduleLog& log) {
  std::map<std::int64_t, std::vector<std::pair<std::uint64_t, std::uint32_t>>> starts;  // pid -> (start, cpu)
  for (const sim::ScheduleSlice& s : log.slices) starts[s.pid].emplace_back(s.start_ns, s.cpu);
  for (auto& [pid, v] : starts) std::sort(v.begin(), v.end());
  std::vector<Sample> out;
  std::map<std::int64_t, std::size_t> ends;
  for (const sim::WakeEvent& w : log.wakeups) {
    const std::size_t nth = w.fork ? 0 : ends[w.pid]++;
    if (w.fork && w.waker_cpu < 0) continue;
    const auto it = starts.find(w.pid);
    if (it == starts.end()) continue;
    const auto& v = it->second;
    const auto s = std::lower_bound(v.begin(), v.end(), std::make_pair(w.ts_ns, std::uint32_t{0}));
    if (s == v.end()) continue;  // never ran again before the end
    const WakeupKind k = w.fork                                                    ? WakeupKind::kNew
                         : w.waker_cpu == static_cast<std::int32_t>(s->second) ? WakeupKind::kLocal
                                                                                : WakeupKind::kRemote;
    out.push_back({w.pid, w.fork, nth, k, s->first - w.ts_ns, w.by_task ? WakerKind::kTask : WakerKind::kInterrupt});
  }
  return out;
}

// Leaves out of both sides every wakeup whose switch-in the capture did not
// record (FtraceDetail::Wakeup::inferred: its latency is a lower bound, not
// a measurement), paired by task and ordinal: a task's start with its
// start, its n-th sleep end with its n-th (a sleep end whose wakeup event
// the capture lost has no sample there, and shifts that task's later
// pairs by one: counted in the import's report). Then fills the overall
// percentiles, ReplayCheck::by_kind and (sleep ends) ReplayCheck::by_waker.
void compare(const FtraceDetail& detail, const sim::ScheduleLog& log, ReplayCheck& c) {
  std::vector<Sample> meas = measured_samples(detail);
  std::vector<Sample> sim = simulated_samples(log);
  std::set<std::tuple<std::int64_t, bool, std::size_t>> left_out;
  for (std::size_t i = 0; i < meas.size(); ++i)
    if (detail.wakeups[i].inferred) left_out.insert({meas[i].pid, meas[i].start, meas[i].nth});
  c.inferred_left_out = left_out.size();
  std::vector<std::uint64_t> all_m, all_s;
  std::map<WakeupKind, std::pair<std::vector<std::uint64_t>, std::vector<std::uint64_t>>> kinds;
  std::map<WakerKind, std::pair<std::vector<std::uint64_t>, std::vector<std::uint64_t>>> wakers;
  for (const Sample& m : meas)
    if (!left_out.count({m.pid, m.start, m.nth})) {
      all_m.push_back(m.ns);
      kinds[m.kind].first.push_back(m.ns);
      if (!m.start) wakers[m.waker].first.push_back(m.ns);
    }
  for (const Sample& s : sim)
    if (!left_out.count({s.pid, s.start, s.nth})) {
      all_s.push_back(s.ns);
      kinds[s.kind].second.push_back(s.ns);
      if (!s.start) wakers[s.waker].second.push_back(s.ns);
    } else {
      ++c.simulated_left_out;
    }
  c.measured = Percentiles::of(std::move(all_m));
  c.simulated = Percentiles::of(std::move(all_s));
  for (auto& [k, ms] : kinds)
    if (!ms.first.empty() || !ms.second.empty())
      c.by_kind[k] = {Percentiles::of(std::move(ms.first)), Percentiles::of(std::move(ms.second))};
  for (auto& [k, ms] : wakers)
    c.by_waker[k] = {Percentiles::of(std::move(ms.first)), Percentiles::of(std::move(ms.second))};
}

}  // namespace

ReplayCheck replay_check(const Result& imported, const FtraceDetail& detail, const sim::RunOptions& options) {
  if (imported.report.wakeup_latency_ns.empty())
    throw std::invalid_argument(imported.report.input +
                                ": no wakeup latencies in the capture (expected sched_switch and "
                                "sched_waking/sched_wakeup events): nothing to compare with");
  const auto inferred = [](const FtraceDetail::Wakeup& w) { return w.inferred; };
  if (std::all_of(detail.wakeups.begin(), detail.wakeups.end(), inferred))
    throw std::invalid_argument(imported.report.input +
                                ": no wakeup's switch-in was recorded (each one's latency inferred, a lower "
                                "bound): nothing measured to compare with");
  ReplayCheck c;
  c.policy = options.policy;
  const auto sw = imported.report.counters.find("context_switches");
  c.switches_measured = sw != imported.report.counters.end() ? sw->second : 0;
  const auto idle = imported.report.counters.find("idle_state_entries");
  c.idle_state_entries = idle != imported.report.counters.end() ? idle->second : 0;

  // Two passes: the capture does not record what its tasks did before it
  // (how far each one's vruntime lags its queue's minimum, which decides
  // whether its wakeups preempt), so the first pass's end state stands in
  // for it and the second, measured pass starts each found task with it
  // (CpuModel::set_present).
  // (The first pass keeps no schedule log: only its end state is read.)
  const auto replay = [&](const std::map<std::int64_t, std::int64_t>& history, sim::ScheduleLog* log,
                          nlohmann::json* results) {
    auto cls = make_class(options.policy, options.config);
    sim::Simulator simulator;
    sim::CpuModel cpu(simulator, imported.trace, *cls, options.config.machine, options.seed, log);
    cpu.set_present(detail.present_cpu, detail.present_running, history);
    cpu.start();
    while (!cpu.finished() && simulator.step()) {
    }
    cpu.finish();
    if (results != nullptr) *results = cpu.results();
    return cpu.placement_history();
  };
  sim::ScheduleLog log;
  nlohmann::json r;
  replay(replay({}, nullptr, nullptr), &log, &r);
  if (!options.perfetto_path.empty()) sim::write_perfetto(log, options.perfetto_path);
  c.cpus = r["cpus"].get<std::uint32_t>();
  c.switches_simulated = r["context_switches"].get<std::uint64_t>();

  std::map<std::int64_t, std::uint64_t> sim_cpu;
  for (const sim::ScheduleSlice& s : log.slices) sim_cpu[s.pid] += s.end_ns - s.start_ns;
  compare(detail, log, c);
  std::uint64_t abs_diff = 0;
  for (const auto& [pid, ns] : detail.cpu_ns) {
    const std::uint64_t s = sim_cpu.count(pid) ? sim_cpu[pid] : 0;
    c.cpu_ns_measured += ns;
    abs_diff += s > ns ? s - ns : ns - s;
    ++c.tasks;
  }
  for (const auto& [pid, ns] : sim_cpu) c.cpu_ns_simulated += ns;
  c.task_cpu_error = c.cpu_ns_measured > 0 ? static_cast<double>(abs_diff) / static_cast<double>(c.cpu_ns_measured) : 0.0;
  return c;
}

ReplayCheck replay_check(const std::string& path, const std::string& format, const sim::RunOptions& options,
                         const Options& import_opts) {
  if (format != "ftrace" && format != "perf")
    throw std::invalid_argument("replay check: format '" + format + "'; expected ftrace or perf (scheduler text)");
  std::ifstream in(path);
  if (!in) throw ImportError(path, 0, "cannot open file (expected trace-cmd report / perf script text)");
  FtraceDetail detail;
  Result imported = import_ftrace(in, path, import_opts, &detail);
  if (options.config.machine.cpus != 0) imported.trace.machine.cpus = options.config.machine.cpus;
  return replay_check(imported, detail, options);
}

nlohmann::json ReplayCheck::to_json() const {
  auto pj = [](const Percentiles& p) { return p.to_json(); };
  nlohmann::json kinds = nlohmann::json::object();
  for (const auto& [k, ms] : by_kind) kinds[wakeup_kind_name(k)] = {{"measured", pj(ms.first)}, {"simulated", pj(ms.second)}};
  nlohmann::json wakers = nlohmann::json::object();
  for (const auto& [k, ms] : by_waker)
    wakers[waker_kind_name(k)] = {{"measured", pj(ms.first)}, {"simulated", pj(ms.second)}};
  return {{"policy", policy},
          {"cpus", cpus},
          {"wakeup_latency_ns", {{"measured", pj(measured)}, {"simulated", pj(simulated)}}},
          {"wakeup_latency_by_kind_ns", kinds},
          {"wakeup_latency_by_waker_ns", wakers},
          {"inferred_switch_ins_left_out", {{"measured", inferred_left_out}, {"simulated", simulated_left_out}}},
          {"context_switches", {{"measured", switches_measured}, {"simulated", switches_simulated}}},
          {"idle_state_entries", idle_state_entries},
          {"cpu_time_ns", {{"measured", cpu_ns_measured}, {"simulated", cpu_ns_simulated}}},
          {"task_cpu_time_error", std::round(task_cpu_error * 1e6) / 1e6},
          {"tasks", tasks}};
}

std::string ReplayCheck::to_text() const {
  std::ostringstream o;
  o << std::fixed << std::setprecision(1);
  auto us = [](std::uint64_t ns) { return static_cast<double>(ns) / 1e3; };
  o << "replay of the capture under " << policy << " on " << cpus << " CPUs (measured / simulated / error)\n";
  o << "  wakeup latency p50  " << us(measured.p50) << " / " << us(simulated.p50) << " us  "
    << err_pct(us(simulated.p50), us(measured.p50)) << " %\n";
  o << "  wakeup latency p90  " << us(measured.p90) << " / " << us(simulated.p90) << " us  "
    << err_pct(us(simulated.p90), us(measured.p90)) << " %\n";
  o << "  wakeup latency p99  " << us(measured.p99) << " / " << us(simulated.p99) << " us  "
    << err_pct(us(simulated.p99), us(measured.p99)) << " %\n";
  o << "  wakeups             " << measured.count << " / " << simulated.count << "\n";
  if (inferred_left_out > 0)
    o << "  left out            " << inferred_left_out << " / " << simulated_left_out
      << " (switch-ins the capture did not record: their latency unknown)\n";
  const auto split = [&](const std::string& label, const std::pair<Percentiles, Percentiles>& ms) {
    const std::string name = "  " + label;
    o << name << std::string(name.size() < 20 ? 20 - name.size() : 1, ' ') << ms.first.count << " / "
      << ms.second.count << ", p50 " << us(ms.first.p50) << " / " << us(ms.second.p50) << " us, p90 "
      << us(ms.first.p90) << " / " << us(ms.second.p90) << " us\n";
  };
  for (const auto& [k, ms] : by_kind) split(std::string(wakeup_kind_name(k)) + " wakeups", ms);
  for (const auto& [k, ms] : by_waker) split(std::string("woken by ") + (k == WakerKind::kTask ? "a task" : "an interrupt"), ms);
  o << "  task switches       " << switches_measured << " / " << switches_simulated << "  "
    << err_pct(static_cast<double>(switches_simulated), static_cast<double>(switches_measured)) << " %\n";
  o << "  CPU time            " << static_cast<double>(cpu_ns_measured) / 1e6 << " / "
    << static_cast<double>(cpu_ns_simulated) / 1e6 << " ms;  per-task error " << task_cpu_error * 100 << " % of the total ("
    << tasks << " tasks)\n";
  return o.str();
}

}  // namespace agentcg::import
