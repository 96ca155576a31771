// SPDX-License-Identifier: GPL-2.0-only
// Shared declarations of the agentcg._core bindings: one register_* function
// per area (boost-histogram's layout), all called from module.cpp.
#pragma once

#include <pybind11/pybind11.h>

namespace agentcg::python {

void register_traces(pybind11::module_& m);
void register_run(pybind11::module_& m);
void register_config(pybind11::module_& m);
void register_gpu(pybind11::module_& m);

}  // namespace agentcg::python
