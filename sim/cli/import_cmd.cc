// SPDX-License-Identifier: GPL-2.0-only
// Binds the import/stats/merge commands to the process's stdout and stderr.
// Who calls it: sim/cli/main.cc (agentcg-sim trace ...).
#include "sim/cli/import_cmd.h"

#include <iostream>

#include "sim/import/commands.h"

int trace_import_main(const std::vector<std::string>& args) {
  return agentcg::import::import_command(args, std::cout, std::cerr);
}

int trace_stats_main(const std::vector<std::string>& args) {
  return agentcg::import::stats_command(args, std::cout, std::cerr);
}

int trace_merge_main(const std::vector<std::string>& args) {
  return agentcg::import::merge_command(args, std::cout, std::cerr);
}

int trace_mix_main(const std::vector<std::string>& args) {
  return agentcg::import::mix_command(args, std::cout, std::cerr);
}
