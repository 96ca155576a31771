// SPDX-License-Identifier: GPL-2.0-only
// The `trace generate`, `trace validate` and `trace convert` commands, with their streams
// passed in so that tests can run them (sim/cli/trace_cmd.h binds them to
// std::cout/std::cerr for agentcg-sim).
//
//   trace generate KIND [--seed N] -o FILE|- [--KEY VALUE | --KEY=VALUE ...]
//   trace generate --help
//   trace validate FILE...
//   trace convert IN OUT   (JSON <-> binary, by IN's first bytes; OUT - = stdout)
// `args` excludes the leading "trace generate"/"trace validate"/"trace convert" words.
// Exit codes: 0 ok, 1 invalid trace (or unreadable/unwritable file), 2 usage
// error (including bad generator options). Never throws.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace agentcg::trace {

int generate_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int validate_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int convert_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace agentcg::trace
