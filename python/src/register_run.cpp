// SPDX-License-Identifier: GPL-2.0-only
// Bindings of the simulator entry point (sim/api.h). run() returns the
// results document as the exact text dump_results() produces, so a run from
// Python writes the same results.json bytes as the C++ CLI. The GIL is
// released for the whole load-config + simulate + serialise step so other
// Python threads (progress bars, Dask workers) keep running.
#include <string>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "core/config/config.h"
#include "python/src/bindings.h"
#include "sim/api.h"

namespace py = pybind11;

namespace agentcg::python {

void register_run(py::module_& m) {
  m.def(
      "run",
      [](const trace::Trace& trace, const std::string& policy, const std::string& gpu_policy,
         std::uint64_t seed, const std::string& config_path, const std::string& config_yaml,
         const std::string& config_source, const std::string& perfetto_path) {
        py::gil_scoped_release release;
        sim::RunOptions options;
        options.policy = policy;
        options.gpu_policy = gpu_policy;
        options.seed = seed;
        options.perfetto_path = perfetto_path;
        if (!config_path.empty()) {
          options.config = config::load_file(config_path);
        } else if (!config_yaml.empty()) {
          options.config = config::load_string(config_yaml, config_source);
        }
        return sim::dump_results(sim::run(trace, options));
      },
      py::arg("trace"), py::arg("policy") = "cfs", py::arg("gpu_policy") = "none",
      py::arg("seed") = 1, py::arg("config_path") = "", py::arg("config_yaml") = "",
      py::arg("config_source") = "<config>", py::arg("perfetto_path") = "",
      "Runs one simulation; returns results.json text. Raises ValueError for an "
      "unknown policy, TraceError/ConfigError for bad input.");
  m.def("cpu_policies", &sim::cpu_policies, "The CPU policies, in display order.");
}

}  // namespace agentcg::python
