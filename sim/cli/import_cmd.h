// SPDX-License-Identifier: GPL-2.0-only
// Entry points of `agentcg trace import|stats|merge` for sim/cli/main.cc.
// `args` exclude the leading "trace import" etc. Exit codes: 0 ok, 1 bad
// input, 2 usage. The work is in sim/import/commands.{h,cc} (library, tested).
#pragma once

#include <string>
#include <vector>

int trace_import_main(const std::vector<std::string>& args);
int trace_stats_main(const std::vector<std::string>& args);
int trace_merge_main(const std::vector<std::string>& args);
int trace_mix_main(const std::vector<std::string>& args);
