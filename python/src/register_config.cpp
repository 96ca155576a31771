// SPDX-License-Identifier: GPL-2.0-only
// Bindings of the config loader (config/config.h): load and validate a
// YAML config (file or text) and return the resolved values as a dict, so
// Python can show defaults and check a config before a sweep starts. The
// dict's keys are the YAML keys, so a value read here can be written back.
#include <sstream>
#include <string>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <yaml-cpp/yaml.h>

#include "config/config.h"
#include "sim/calibrate/calibrate.h"
#include "sim/calibrate/profile.h"
#include "python/src/bindings.h"

namespace py = pybind11;

namespace agentcg::python {

namespace {

py::dict to_dict(const config::Config& c) {
  const agentcg_tunables& t = c.scheduler;
  py::dict features;
  features["mem_penalty"] = (t.features & AGENTCG_F_MEM_PENALTY) != 0;
  features["auto_boost"] = (t.features & AGENTCG_F_AUTO_BOOST) != 0;
  features["wakeup_boost"] = (t.features & AGENTCG_F_WAKEUP_BOOST) != 0;
  features["fork_aware"] = (t.features & AGENTCG_F_FORK_AWARE) != 0;
  features["min_slice"] = (t.features & AGENTCG_F_MIN_SLICE) != 0;
  features["latency"] = (t.features & AGENTCG_F_LATENCY) != 0;
  py::dict s;
  s["features"] = features;
  s["startup_boost_window_ms"] = t.startup_boost_window_ms;
  s["startup_boost_vtime_ms"] = t.startup_boost_vtime_ms;
  s["wakeup_boost_vtime_ms"] = t.wakeup_boost_vtime_ms;
  s["base_slice_ms"] = t.base_slice_ms;
  s["boosted_slice_ms"] = t.boosted_slice_ms;
  s["min_slice_us"] = t.min_slice_us;
  s["fork_window_sec"] = t.fork_window_sec;
  s["fork_storm_threshold"] = t.fork_storm_threshold;
  s["io_bound_wakeup_rate"] = t.io_bound_wakeup_rate;
  s["mem_penalty_max"] = t.mem_penalty_max;
  s["mem_penalty_decay_sec"] = t.mem_penalty_decay_sec;
  py::dict machine;
  machine["context_switch_ns"] = c.machine.context_switch_ns;
  machine["wakeup_overhead_ns"] = c.machine.wakeup_overhead_ns;
  machine["speed_pct"] = c.machine.speed_pct;
  machine["cpus"] = c.machine.cpus;
  // the per-CPU model's keys (sim/cpu/cfs.h), so Python's key check and
  // --set know them
  machine["runqueues"] = c.machine.runqueues == config::MachineConfig::Runqueues::kPerCpu ? "per_cpu" : "global";
  machine["idle_exit_ns"] = c.machine.idle_exit_ns;
  machine["idle_exit_after_ns"] = c.machine.idle_exit_after_ns;
  machine["kick_busy_ns"] = c.machine.kick_busy_ns;
  machine["ipi_idle_ns"] = c.machine.ipi_idle_ns;
  machine["task_wakeup_ns"] = c.machine.task_wakeup_ns;
  machine["timer_busy_ns"] = c.machine.timer_busy_ns;
  machine["ext_timer_busy_ns"] = c.machine.ext_timer_busy_ns;
  machine["migration_cost_ns"] = c.machine.migration_cost_ns;
  machine["background_cpu_pct"] = c.machine.background_cpu_pct;
  machine["fork_cost_ns"] = c.machine.fork_cost_ns;
  machine["exit_cost_ns"] = c.machine.exit_cost_ns;
  machine["fork_after_ns"] = c.machine.fork_after_ns;
  machine["fork_child_ns"] = c.machine.fork_child_ns;
  machine["ext_busy_pct"] = c.machine.ext_busy_pct;
  machine["ext_wakeup_ns"] = c.machine.ext_wakeup_ns;
  machine["ext_fork_ns"] = c.machine.ext_fork_ns;
  machine["mem_fault_ns_per_mib"] = c.machine.mem_fault_ns_per_mib;
  machine["fork_ns_per_mib"] = c.machine.fork_ns_per_mib;
  machine["wakeup_work_ns"] = c.machine.wakeup_work_ns;
  machine["sleep_cost_ns"] = c.machine.sleep_cost_ns;
  machine["tick_ns"] = c.machine.tick_ns;
  machine["preempt"] = c.machine.preempt == config::MachineConfig::Preempt::kLazy ? "lazy" : "full";
  machine["fork_placement"] =
      c.machine.fork_placement == config::MachineConfig::ForkPlacement::kLocal ? "local" : "idlest";
  machine["balance"] =
      c.machine.balance == config::MachineConfig::Balance::kWhenOverutilized ? "when_overutilized" : "always";
  py::dict cfs;
  cfs["latency_ns"] = c.cfs.latency_ns;
  cfs["min_granularity_ns"] = c.cfs.min_granularity_ns;
  cfs["wakeup_granularity_ns"] = c.cfs.wakeup_granularity_ns;
  cfs["bandwidth_slice_ns"] = c.cfs.bandwidth_slice_ns;
  cfs["balance_interval_ns"] = c.cfs.balance_interval_ns;
  cfs["run_to_parity"] = c.cfs.run_to_parity;
  py::dict gpu;
  gpu["time_quantum_ms"] = c.gpu.time_quantum_ms;
  py::dict out;
  out["scheduler"] = s;
  out["machine"] = machine;
  out["cfs"] = cfs;
  out["gpu"] = gpu;
  return out;
}

// A validated YAML value as Python: digits -> int, other scalars -> str,
// sequences -> lists (what machine keys are made of).
py::object yaml_value(const YAML::Node& n) {
  if (n.IsSequence()) {
    py::list l;
    for (const auto& x : n) l.append(yaml_value(x));
    return l;
  }
  const std::string s = n.IsScalar() ? n.Scalar() : std::string();
  if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos) return py::int_(std::stoull(s));
  return py::str(s);
}

}  // namespace

void register_config(py::module_& m) {
  m.def("default_config", []() { return to_dict(config::Config{}); },
        "The defaults of the sections the simulator uses (scheduler, machine, cfs, gpu).");
  m.def("load_config_file", [](const std::string& path) { return to_dict(config::load_file(path)); },
        py::arg("path"), "Loads and validates a config file; raises ConfigError.");
  m.def(
      "load_config_string",
      [](const std::string& yaml, const std::string& source) {
        return to_dict(config::load_string(yaml, source));
      },
      py::arg("yaml"), py::arg("source") = "<config>",
      "Validates YAML config text; raises ConfigError naming `source`.");
  m.def(
      "calibrate_command",
      [](const std::vector<std::string>& args) -> int {
        std::ostringstream out, err;
        int rc;
        {
          py::gil_scoped_release release;
          rc = calibrate::calibrate_command(args, out, err);
        }
        py::module_ sys = py::module_::import("sys");
        if (!out.str().empty()) sys.attr("stdout").attr("write")(out.str());
        if (!err.str().empty()) sys.attr("stderr").attr("write")(err.str());
        return rc;
      },
      py::arg("args"),
      "`calibrate MEASUREMENTS.csv -o PROFILE.yaml ...` (sim/calibrate): the exit code; output to sys.stdout/stderr.");
  m.def(
      "load_machine_profile",
      [](const std::string& path) {
        const calibrate::MachineProfile p = calibrate::load_profile(path);
        // the machine keys as the file gives them (validated above), so a key
        // the model gains needs no change here
        py::dict machine;
        const YAML::Node sec = YAML::Load(p.text)["machine"];
        for (const auto& kv : sec) machine[py::str(kv.first.Scalar())] = yaml_value(kv.second);
        py::dict fit;
        fit["tool"] = p.fit.tool;
        fit["fitted"] = p.fit.fitted;
        fit["held_out"] = p.fit.held_out;
        fit["targets"] = p.fit.targets;
        fit["sq_log_error_before"] = p.fit.sq_log_error_before < 0 ? py::object(py::none()) : py::float_(p.fit.sq_log_error_before);
        fit["sq_log_error_after"] = p.fit.sq_log_error_after < 0 ? py::object(py::none()) : py::float_(p.fit.sq_log_error_after);
        py::dict out;
        out["machine"] = machine;
        out["fit"] = fit;
        out["source"] = p.source;
        return out;
      },
      py::arg("path"),
      "Loads and validates a machine profile (sim/calibrate/profile.h): {machine: {key: value} as given, "
      "fit: {tool, fitted, held_out, targets, sq_log_error_before, sq_log_error_after}, source}; raises "
      "ConfigError naming FILE:LINE and the key.");
  m.def("least_squares", &calibrate::least_squares, py::arg("a"), py::arg("b"),
        "min |A x - b| by column-pivoting QR (Eigen); raises ValueError when A does not determine x.");
}

}  // namespace agentcg::python
