// SPDX-License-Identifier: GPL-2.0-only
// Test helper (header-only, for the C++ unit tests; was sim/trace/): locate
// a file of the source tree (traces/, tests/data/) from the test's working
// directory. CTest runs sim_tests in the source root
// (agentcg_add_test sets WORKING_DIRECTORY); when run by hand from a build
// folder, the parents are searched too; AGENTCG_SOURCE_DIR overrides both.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace agentcg::trace::testing {

// The path of `rel` (e.g. "traces/agent.json"), or "" when not found.
inline std::string source_path(const std::string& rel) {
  namespace fs = std::filesystem;
  if (const char* root = std::getenv("AGENTCG_SOURCE_DIR")) {
    const fs::path p = fs::path(root) / rel;
    return fs::exists(p) ? p.string() : std::string();
  }
  std::error_code ec;
  for (fs::path dir = fs::current_path(ec); !ec && !dir.empty(); dir = dir.parent_path()) {
    if (fs::exists(dir / rel)) return (dir / rel).string();
    if (dir == dir.parent_path()) break;
  }
  return std::string();
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace agentcg::trace::testing
