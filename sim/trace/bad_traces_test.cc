// SPDX-License-Identifier: GPL-2.0-only
// The suite of broken traces in tests/data/bad-traces/: each must be
// rejected with the line, JSON pointer and message fragment its manifest
// (expected.json) names, and every file there must be in the manifest. An
// entry with "policy" is valid in general and rejected by that policy's
// limits (validate_for_policy, which `run` and `trace validate --policy` call).
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "tests/support/test_paths.h"
#include "sim/trace/trace.h"

namespace agentcg::trace {
namespace {

TEST(BadTraces, EachFailsWhereAndHowTheManifestSays) {
  const std::string manifest_path = testing::source_path("tests/data/bad-traces/expected.json");
  if (manifest_path.empty()) GTEST_SKIP() << "tests/data/bad-traces/ not found from the working directory";
  const auto manifest = nlohmann::json::parse(testing::read_file(manifest_path));
  const std::filesystem::path dir = std::filesystem::path(manifest_path).parent_path();
  std::set<std::string> listed;
  int checked = 0;
  for (const auto& [name, want] : manifest.at("traces").items()) {
    listed.insert(name);
    const std::string path = (dir / name).string();
    try {
      const Trace t = load_trace_file(path);
      if (want.contains("policy")) validate_for_policy(t, want.at("policy").get<std::string>());
      ADD_FAILURE() << name << ": accepted, expected an error";
    } catch (const TraceError& e) {
      EXPECT_EQ(e.file(), path) << name;
      EXPECT_EQ(e.line(), want.at("line").get<std::uint32_t>()) << name << ": " << e.what();
      EXPECT_EQ(e.pointer().empty() ? "/" : e.pointer(), want.at("pointer").get<std::string>()) << name << ": " << e.what();
      EXPECT_NE(e.message().find(want.at("message").get<std::string>()), std::string::npos)
          << name << ": " << e.what() << "\n  expected to contain: " << want.at("message");
      // The printed form leads with FILE:LINE: POINTER:.
      const std::string prefix = path + ":" + std::to_string(e.line()) + ": ";
      EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
      ++checked;
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": threw something other than TraceError: " << e.what();
    }
  }
  EXPECT_GE(checked, 40);
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name == "expected.json" || entry.path().extension() != ".json") continue;
    EXPECT_TRUE(listed.count(name)) << name << " is not listed in expected.json";
  }
}

}  // namespace
}  // namespace agentcg::trace
