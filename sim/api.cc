// SPDX-License-Identifier: GPL-2.0-only
// run(): one simulation = one Simulator, the CPU model with the chosen
// scheduling class, and (when the trace has GPU jobs) the GPU model.
#include "sim/api.h"

#include <stdexcept>

#include "sim/cpu/cfs.h"
#include "sim/cpu/cpu_model.h"
#include "sim/event_queue.h"
#include "sim/gpu/gpu_sim.h"
#include "sim/results.h"
#include "sim/schedule_log.h"
#include "sim/cpu/scx_class.h"

namespace agentcg::sim {

std::unique_ptr<SchedClass> make_class(const std::string& policy, const config::Config& cfg) {
  if (policy == "cfs") return make_cfs_class(cfg.cfs);
  if (policy == "eevdf") return make_eevdf_class(cfg.cfs);
  if (policy == "fifo") return make_fifo_class();
  if (auto c = make_scx_class(policy, cfg.scheduler)) return c;
  std::string known;
  for (const auto& p : cpu_policies()) known += (known.empty() ? "" : ", ") + p;
  throw std::invalid_argument("unknown policy '" + policy + "' (expected one of: " + known + ")");
}

namespace {

nlohmann::json config_json(const config::Config& c) {
  const auto& s = c.scheduler;
  nlohmann::json j;
  j["machine"] = {{"context_switch_ns", c.machine.context_switch_ns},
                  {"wakeup_overhead_ns", c.machine.wakeup_overhead_ns},
                  {"speed_pct", c.machine.speed_pct},
                  {"cpus", c.machine.cpus}};
  // The per-CPU model's parameters only when set, so that results of the
  // default (global queue, no extra costs) stay byte-identical to before.
  if (c.machine.runqueues == config::MachineConfig::Runqueues::kPerCpu) j["machine"]["runqueues"] = "per_cpu";
  if (c.machine.idle_exit_ns) {
    j["machine"]["idle_exit_ns"] = c.machine.idle_exit_ns;
    j["machine"]["idle_exit_after_ns"] = c.machine.idle_exit_after_ns;
  }
  if (c.machine.ipi_idle_ns) j["machine"]["ipi_idle_ns"] = c.machine.ipi_idle_ns;
  if (c.machine.task_wakeup_ns_set) j["machine"]["task_wakeup_ns"] = c.machine.task_wakeup_ns;
  if (c.machine.kick_busy_ns) j["machine"]["kick_busy_ns"] = c.machine.kick_busy_ns;
  if (c.machine.timer_busy_ns) j["machine"]["timer_busy_ns"] = c.machine.timer_busy_ns;
  if (c.machine.ext_timer_busy_ns) j["machine"]["ext_timer_busy_ns"] = c.machine.ext_timer_busy_ns;
  if (c.machine.migration_cost_ns) j["machine"]["migration_cost_ns"] = c.machine.migration_cost_ns;
  if (c.machine.background_cpu_pct) j["machine"]["background_cpu_pct"] = c.machine.background_cpu_pct;
  if (c.machine.ext_busy_pct) j["machine"]["ext_busy_pct"] = c.machine.ext_busy_pct;
  if (c.machine.ext_wakeup_ns) j["machine"]["ext_wakeup_ns"] = c.machine.ext_wakeup_ns;
  if (c.machine.ext_fork_ns) j["machine"]["ext_fork_ns"] = c.machine.ext_fork_ns;
  if (c.machine.mem_fault_ns_per_mib) j["machine"]["mem_fault_ns_per_mib"] = c.machine.mem_fault_ns_per_mib;
  if (c.machine.fork_ns_per_mib) j["machine"]["fork_ns_per_mib"] = c.machine.fork_ns_per_mib;
  if (c.machine.wakeup_work_ns) j["machine"]["wakeup_work_ns"] = c.machine.wakeup_work_ns;
  if (c.machine.sleep_cost_ns) j["machine"]["sleep_cost_ns"] = c.machine.sleep_cost_ns;
  if (c.machine.tick_ns) j["machine"]["tick_ns"] = c.machine.tick_ns;
  if (c.machine.preempt == config::MachineConfig::Preempt::kLazy) j["machine"]["preempt"] = "lazy";
  if (c.machine.fork_placement == config::MachineConfig::ForkPlacement::kLocal) j["machine"]["fork_placement"] = "local";
  if (c.machine.wake_placement == config::MachineConfig::WakePlacement::kEnergyAware)
    j["machine"]["wake_placement"] = "energy_aware";
  if (c.machine.balance == config::MachineConfig::Balance::kWhenOverutilized)
    j["machine"]["balance"] = "when_overutilized";
  if (!c.machine.cpu_capacity.empty()) j["machine"]["cpu_capacity"] = c.machine.cpu_capacity;
  if (c.machine.fork_cost_ns) j["machine"]["fork_cost_ns"] = c.machine.fork_cost_ns;
  if (c.machine.exit_cost_ns) j["machine"]["exit_cost_ns"] = c.machine.exit_cost_ns;
  if (c.machine.fork_after_ns) j["machine"]["fork_after_ns"] = c.machine.fork_after_ns;
  if (c.machine.fork_child_ns) j["machine"]["fork_child_ns"] = c.machine.fork_child_ns;
  j["cfs"] = {{"latency_ns", c.cfs.latency_ns},
              {"min_granularity_ns", c.cfs.min_granularity_ns},
              {"wakeup_granularity_ns", c.cfs.wakeup_granularity_ns},
              {"bandwidth_slice_ns", c.cfs.bandwidth_slice_ns}};
  if (!c.cfs.run_to_parity) j["cfs"]["run_to_parity"] = false;
  j["scheduler"] = {{"features", s.features},
                    {"startup_boost_window_ms", s.startup_boost_window_ms},
                    {"startup_boost_vtime_ms", s.startup_boost_vtime_ms},
                    {"wakeup_boost_vtime_ms", s.wakeup_boost_vtime_ms},
                    {"base_slice_ms", s.base_slice_ms},
                    {"boosted_slice_ms", s.boosted_slice_ms},
                    {"min_slice_us", s.min_slice_us},
                    {"fork_window_sec", s.fork_window_sec},
                    {"fork_storm_threshold", s.fork_storm_threshold},
                    {"io_bound_wakeup_rate", s.io_bound_wakeup_rate},
                    {"mem_penalty_max", s.mem_penalty_max},
                    {"mem_penalty_decay_sec", s.mem_penalty_decay_sec}};
  return j;
}

}  // namespace

std::vector<std::string> cpu_policies() {
  return {"cfs", "eevdf", "fifo", "flatcg", "agentcg"};
}

std::vector<std::string> gpu_policies() {
  return {"none", "nvshare", "memory-aware", "compute-limit", "memory-aware+compute-limit"};
}

nlohmann::json run(const trace::Trace& trace, const RunOptions& options) {
  trace::validate_for_policy(trace, options.policy);  // the same check as `trace validate --policy`
  auto cls = make_class(options.policy, options.config);
  Simulator sim;
  ScheduleLog log;
  const bool want_log = !options.perfetto_path.empty();
  CpuModel cpu(sim, trace, *cls, options.config.machine, options.seed, want_log ? &log : nullptr);
  const StrategyTable strategies(options.strategies);
  if (!strategies.empty()) cpu.set_strategies(&strategies);
  std::unique_ptr<gpu::GpuSimulation> gpu_sim;
  if (gpu::trace_has_gpu(trace)) {
    gpu_sim = gpu::make_gpu_simulation(sim, trace, options.gpu_policy, options.config.gpu, options.seed,
                                       want_log ? &log : nullptr);
  } else
  if (options.gpu_policy != "none") {
    bool known = false;
    for (const auto& g : gpu_policies()) known = known || g == options.gpu_policy;
    if (!known) throw std::invalid_argument("unknown gpu policy '" + options.gpu_policy + "'");
  }
  cpu.start();
  if (gpu_sim) gpu_sim->start();
  // The run ends at the trace's duration, or when every process has exited
  // and every GPU job has finished.
  for (;;) {
    if (cpu.finished() && (!gpu_sim || gpu_sim->done() || trace.duration_ns)) break;
    if (!sim.step()) break;
  }
  cpu.finish();
  sim.check_accounting();

  RunIdentity id;
  id.trace = trace.name;
  id.policy = options.policy;
  id.gpu_policy = options.gpu_policy;
  id.seed = options.seed;
  id.config = config_json(options.config);
  id.events = sim.executed_count();
  nlohmann::json r = results_json(id, cpu.results_input());
  if (options.histograms) {
    r["histograms"] = {{"wakeup_latency_ns", cpu.wakeup_histogram().to_json()},
                       {"tool_call_latency_ns", cpu.tool_call_histogram().to_json()}};
    if (options.cgroup_histograms) r["histograms"]["cgroups"] = cpu.cgroup_histograms();
  }
  if (gpu_sim) r["gpu"] = gpu_sim->results();
  if (want_log) {
    write_perfetto(log, options.perfetto_path);
  }
  return r;
}

}  // namespace agentcg::sim
