// SPDX-License-Identifier: GPL-2.0-only
// Bindings of the config loader (config/config.h): load and validate a
// YAML config (file or text) and return the resolved values as a dict, so
// Python can show defaults and check a config before a sweep starts. The
// dict's keys are the YAML keys, so a value read here can be written back.
#include <sstream>
#include <string>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "config/config.h"
#include "sim/calibrate/calibrate.h"
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
  py::dict cfs;
  cfs["latency_ns"] = c.cfs.latency_ns;
  cfs["min_granularity_ns"] = c.cfs.min_granularity_ns;
  cfs["wakeup_granularity_ns"] = c.cfs.wakeup_granularity_ns;
  cfs["bandwidth_slice_ns"] = c.cfs.bandwidth_slice_ns;
  py::dict gpu;
  gpu["time_quantum_ms"] = c.gpu.time_quantum_ms;
  py::dict out;
  out["scheduler"] = s;
  out["machine"] = machine;
  out["cfs"] = cfs;
  out["gpu"] = gpu;
  return out;
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
  m.def("least_squares", &calibrate::least_squares, py::arg("a"), py::arg("b"),
        "min |A x - b| by column-pivoting QR (Eigen); raises ValueError when A does not determine x.");
}

}  // namespace agentcg::python
