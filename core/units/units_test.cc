// SPDX-License-Identifier: GPL-2.0-only
// The one duration and size grammar (units.h) against the shared table
// core/units/units_table.json, which tests/python/test_units.py feeds to the
// Python definition too: both accept exactly the listed forms with the
// listed values and reject the rest.
#include "core/units/units.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace {

nlohmann::json table() {
  std::ifstream in("core/units/units_table.json");  // ctest runs in the source root
  EXPECT_TRUE(in) << "core/units/units_table.json not found (run from the repository root)";
  return nlohmann::json::parse(in);
}

template <typename Parse>
void check(const nlohmann::json& t, Parse parse) {
  ASSERT_GT(t.at("accept").size(), 5u);
  ASSERT_GT(t.at("reject").size(), 5u);
  for (const auto& row : t.at("accept")) {
    const std::string text = row.at(0).get<std::string>();
    const auto v = parse(text);
    ASSERT_TRUE(v.has_value()) << "'" << text << "' should be accepted";
    EXPECT_EQ(*v, row.at(1).get<std::uint64_t>()) << "'" << text << "'";
  }
  for (const auto& row : t.at("reject")) {
    const std::string text = row.get<std::string>();
    EXPECT_FALSE(parse(text).has_value()) << "'" << text << "' should be rejected, got " << parse(text).value_or(0);
  }
}

TEST(units, DurationTable) {
  check(table().at("duration"), [](const std::string& s) { return agentcg::units::parse_duration_ns(s); });
}

TEST(units, SizeTable) {
  check(table().at("size"), [](const std::string& s) { return agentcg::units::parse_size_bytes(s); });
}

// Every unit at the largest whole value that fits, and one more: the
// overflow checks are exact at the boundary.
TEST(units, OverflowBoundaryPerUnit) {
  using agentcg::units::parse_duration_ns;
  constexpr std::uint64_t kMax = ~0ULL;
  const std::pair<const char*, std::uint64_t> units[] = {
      {"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}, {"m", 60000000000}, {"h", 3600000000000}};
  for (const auto& [u, mult] : units) {
    const std::uint64_t n = kMax / mult;
    EXPECT_EQ(parse_duration_ns(std::to_string(n) + u), n * mult) << u;
    if (mult > 1) {
      EXPECT_FALSE(parse_duration_ns(std::to_string(n + 1) + u)) << u;
    }
  }
}

}  // namespace
