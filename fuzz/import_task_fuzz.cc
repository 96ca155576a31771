// SPDX-License-Identifier: GPL-2.0-only
// Fuzz target: the AgentCgroup task-folder importer
// (sim/import/agentcgroup_task.cc). The input is resources.json, a NUL byte,
// then tool_calls.json (no NUL: all of it is resources.json and the tool
// calls are an empty list).
#include <sstream>

#include "fuzz/import_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string all(reinterpret_cast<const char*>(data), size);
  const auto nul = all.find('\0');
  const std::string resources = all.substr(0, nul);
  const std::string tools = nul == std::string::npos ? std::string("[]") : all.substr(nul + 1);
  agentcg::fuzz::check_import([&]() {
    std::istringstream r(resources), t(tools);
    return agentcg::import::import_agentcgroup_task(r, "resources.json", t, "tool_calls.json",
                                                    agentcg::import::Options{});
  });
  return 0;
}
