// SPDX-License-Identifier: GPL-2.0-only
// The `trace import`, `trace stats`, `trace merge` and `trace mix` commands, with their
// output streams as parameters so tests can run them; sim/cli/import_cmd.cc
// binds them to std::cout / std::cerr for agentcg-sim.
// Exit codes: 0 ok, 1 bad input (named with file and line), 2 usage error.
// Who calls it: sim/cli/import_cmd.cc, tests.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace agentcg::import {

// trace import --from FORMAT INPUT -o OUT [--strict] [--name N] [--cgroup PATH]
//              [--cpus N] [--unsampled-as-run]
int import_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
// trace stats FILE [--from FORMAT] [--json] [--strict]
int stats_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
// trace merge A B ... [--stagger DUR] -o OUT [--cpus N] [--name N]
int merge_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
// trace mix RECORDING... -o OUT [--sessions N] [--cpus M] [--stagger DUR] [--duration DUR]
//           [--seed S] [--interactive K]
int mix_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace agentcg::import
