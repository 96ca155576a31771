// SPDX-License-Identifier: GPL-2.0-only
// Bindings of the trace API (sim/trace/trace.h): an opaque Trace object
// (parsed and validated, so a Trace in Python is always a valid one), load /
// parse / validate / serialise, and the generators. A Trace pickles as its
// canonical JSON so process pools and Dask workers can receive it.
#include <map>
#include <string>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "python/src/bindings.h"
#include "sim/gpu/gpu_sim.h"
#include "sim/trace/trace.h"
#include <sstream>
#include "sim/trace/trace_commands.h"
#include "sim/import/commands.h"

namespace py = pybind11;

namespace agentcg::python {

namespace {

std::string trace_text(const trace::Trace& t, int indent) {
  return trace::to_json(t).dump(indent) + "\n";
}

}  // namespace

void register_traces(py::module_& m) {
  py::class_<trace::Trace>(m, "Trace", "A validated workload trace (format v1).")
      .def_static(
          "from_file", [](const std::string& path) { return trace::load_trace_file(path); },
          py::arg("path"), "Loads and validates a trace file; raises TraceError.")
      .def_static(
          "from_json",
          [](const std::string& text, const std::string& source) {
            return trace::parse_trace(text, source);
          },
          py::arg("text"), py::arg("source") = "<string>",
          "Parses and validates trace JSON text; raises TraceError naming `source`.")
      .def("to_json", &trace_text, py::arg("indent") = 2,
           "The canonical JSON text (deterministic key order, final newline).")
      .def("write", [](const trace::Trace& t, const std::string& path) {
             trace::write_trace_file(t, path);
           }, py::arg("path"))
      .def("validate", [](const trace::Trace& t) { trace::validate(t); })
      .def_property_readonly("name", [](const trace::Trace& t) { return t.name; })
      .def_property_readonly("description", [](const trace::Trace& t) { return t.description; })
      .def_property_readonly("source", [](const trace::Trace& t) { return t.source; })
      .def_property_readonly("cpus", [](const trace::Trace& t) { return t.machine.cpus; })
      .def_property_readonly("duration_ns", [](const trace::Trace& t) { return t.duration_ns; })
      .def_property_readonly("nr_processes",
                             [](const trace::Trace& t) { return t.processes.size(); })
      .def_property_readonly("cgroup_paths",
                             [](const trace::Trace& t) {
                               std::vector<std::string> paths;
                               for (const auto& c : t.cgroups) paths.push_back(c.path);
                               return paths;
                             })
      .def_property_readonly("has_gpu",
                             [](const trace::Trace& t) { return sim::gpu::trace_has_gpu(t); })
      .def(py::pickle(
          [](const trace::Trace& t) { return py::make_tuple(trace_text(t, -1), t.source); },
          [](const py::tuple& state) {
            if (state.size() != 2) throw std::runtime_error("agentcg.Trace: bad pickle state");
            return trace::parse_trace(state[0].cast<std::string>(), state[1].cast<std::string>());
          }))
      .def("__repr__", [](const trace::Trace& t) {
        return "<agentcg Trace '" + t.name + "': " + std::to_string(t.machine.cpus) + " cpus, " +
               std::to_string(t.cgroups.size()) + " cgroups, " +
               std::to_string(t.processes.size()) + " processes>";
      });

  m.def(
      "generate",
      [](const std::string& kind, std::uint64_t seed,
         const std::map<std::string, std::string>& options) {
        return trace::generate(kind, seed, options);
      },
      py::arg("kind"), py::arg("seed") = 1,
      py::arg("options") = std::map<std::string, std::string>{},
      "Generates a synthetic trace; options are the CLI's --key value pairs.");
  m.def("generator_help", &trace::generator_help);

  // The C++ CLI's `trace` subcommands (the same functions agentcg-sim calls),
  // so the Python CLI keeps their options, messages and exit codes exactly.
  // Output is collected and written to Python's sys.stdout/sys.stderr so it
  // interleaves correctly with Python output and can be captured.
  m.def("trace_commands", []() {
    std::vector<std::string> v;
    v.push_back("generate");
    v.push_back("validate");
    v.push_back("convert");
    v.push_back("import");
    v.push_back("stats");
    v.push_back("merge");
    return v;
  });
  m.def(
      "trace_command",
      [](const std::string& sub, const std::vector<std::string>& args) -> int {
        int rc = -1;
        std::ostringstream out, err;
        {
          py::gil_scoped_release release;
          if (sub == "generate") rc = trace::generate_command(args, out, err);
          if (sub == "validate") rc = trace::validate_command(args, out, err);
          if (sub == "convert") rc = trace::convert_command(args, out, err);
          if (sub == "import") rc = import::import_command(args, out, err);
          if (sub == "stats") rc = import::stats_command(args, out, err);
          if (sub == "merge") rc = import::merge_command(args, out, err);
        }
        py::module_ sys = py::module_::import("sys");
        if (!out.str().empty()) sys.attr("stdout").attr("write")(out.str());
        if (!err.str().empty()) sys.attr("stderr").attr("write")(err.str());
        if (rc < 0) throw std::invalid_argument("trace subcommand '" + sub + "' is not built in");
        (void)args;
        return rc;
      },
      py::arg("subcommand"), py::arg("args"));
}

}  // namespace agentcg::python
