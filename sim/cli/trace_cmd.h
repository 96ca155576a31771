// SPDX-License-Identifier: GPL-2.0-only
// agentcg-sim's `trace generate`, `trace validate` and `trace convert` entry points, called
// by sim/cli/main.cc with the arguments after "trace generate"/"trace
// validate". Header-only on purpose: sim/CMakeLists.txt builds agentcg-sim
// from cli/main.cc alone (cli/ is kept out of the agentcg_sim library), so
// the logic lives in the library (sim/trace/trace_commands.cc, tested there)
// and this header only binds it to std::cout/std::cerr.
#pragma once

#include <iostream>
#include <string>
#include <vector>

#include "sim/trace/trace_commands.h"

namespace agentcg::cli {

inline int trace_generate_main(const std::vector<std::string>& args) {
  return agentcg::trace::generate_command(args, std::cout, std::cerr);
}
inline int trace_validate_main(const std::vector<std::string>& args) {
  return agentcg::trace::validate_command(args, std::cout, std::cerr);
}
inline int trace_convert_main(const std::vector<std::string>& args) {
  return agentcg::trace::convert_command(args, std::cout, std::cerr);
}

}  // namespace agentcg::cli

// main.cc calls these unqualified from its own anonymous namespace.
using agentcg::cli::trace_generate_main;
using agentcg::cli::trace_validate_main;
using agentcg::cli::trace_convert_main;
