// SPDX-License-Identifier: GPL-2.0-only
// Bindings of the GPU side: which GPU policies exist and whether a trace
// carries GPU jobs (the GPU model itself runs inside _core.run()).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "python/src/bindings.h"
#include "sim/api.h"
#include "sim/gpu/gpu_sim.h"

namespace py = pybind11;

namespace agentcg::python {

void register_gpu(py::module_& m) {
  m.def("gpu_policies", &sim::gpu_policies, "The GPU policies (\"none\" first).");
  m.def("trace_has_gpu", &sim::gpu::trace_has_gpu, py::arg("trace"));
}

}  // namespace agentcg::python
