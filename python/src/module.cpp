// SPDX-License-Identifier: GPL-2.0-only
// agentcg._core: the private extension under the typed package
// python/agentcg (which is what users import). Maps the C++ error types to
// Python exceptions carrying where the error is (TraceError: file, line,
// JSON pointer; ConfigError: "FILE:LINE: key ..." message), so the CLI can
// print one clear line. Invariant: no C++ exception escapes as a crash.
#include <pybind11/pybind11.h>

#include "config/config.h"
#include "python/src/bindings.h"
#include "sim/trace/trace.h"

namespace py = pybind11;

PYBIND11_MODULE(_core, m) {
  m.doc() = "agentcg simulator bindings (private; use the agentcg package)";
  m.attr("__version__") = AGENTCG_VERSION;

  static py::exception<agentcg::trace::TraceError> trace_error(m, "TraceError", PyExc_ValueError);
  static py::exception<agentcg::config::ConfigError> config_error(m, "ConfigError",
                                                                  PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const agentcg::trace::TraceError& e) {
      py::object type = py::reinterpret_borrow<py::object>(trace_error.ptr());
      py::object exc = type(e.what());
      exc.attr("file") = e.file();
      exc.attr("line") = e.line();
      exc.attr("pointer") = e.pointer();
      exc.attr("message") = e.message();
      PyErr_SetObject(trace_error.ptr(), exc.ptr());
    } catch (const agentcg::config::ConfigError& e) {
      config_error(e.what());
    }
  });

  agentcg::python::register_traces(m);
  agentcg::python::register_run(m);
  agentcg::python::register_config(m);
  agentcg::python::register_gpu(m);
}
