// SPDX-License-Identifier: GPL-2.0-only
// Tests of the machine-profile loader (profile.h): a profile's values reach
// the MachineConfig, only the keys it names are applied, the text it writes
// reads back to the same values, and every bad profile is a ConfigError
// naming the file, the line and the key.
#include "sim/calibrate/profile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace agentcg::calibrate {
namespace {

constexpr const char* kGood =
    "# fitted by a test\n"
    "format: agentcg-machine-profile\n"
    "version: 1\n"
    "machine:\n"
    "  cpus: 2\n"
    "  wakeup_overhead_ns: 250000\n"
    "  speed_pct: 110\n"
    "fit:\n"
    "  tool: agentcg fidelity\n"
    "  fitted: [hogs, io]\n"
    "  held_out: [agent]\n"
    "  targets: 12\n"
    "  sq_log_error_before: 1598.5\n"
    "  sq_log_error_after: 501.25\n";

std::string error_of(const std::string& yaml) {
  try {
    parse_profile(yaml, "p.yaml");
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(MachineProfile, ParsesValuesAndProvenance) {
  const MachineProfile p = parse_profile(kGood, "p.yaml");
  EXPECT_EQ(p.machine.cpus, 2u);
  EXPECT_EQ(p.machine.wakeup_overhead_ns, 250000u);
  EXPECT_EQ(p.machine.speed_pct, 110u);
  EXPECT_EQ(p.machine_keys, (std::vector<std::string>{"cpus", "wakeup_overhead_ns", "speed_pct"}));
  EXPECT_EQ(p.fit.tool, "agentcg fidelity");
  EXPECT_EQ(p.fit.fitted, (std::vector<std::string>{"hogs", "io"}));
  EXPECT_EQ(p.fit.held_out, (std::vector<std::string>{"agent"}));
  EXPECT_EQ(p.fit.targets, 12u);
  EXPECT_DOUBLE_EQ(p.fit.sq_log_error_before, 1598.5);
  EXPECT_DOUBLE_EQ(p.fit.sq_log_error_after, 501.25);
}

TEST(MachineProfile, AppliesOnlyTheKeysItNames) {
  config::MachineConfig m;
  m.context_switch_ns = 7777;  // e.g. from --config: the profile does not name it
  m.cpus = 8;
  apply_profile(parse_profile(kGood, "p.yaml"), m);
  EXPECT_EQ(m.context_switch_ns, 7777u);
  EXPECT_FALSE(m.context_switch_ns_set);
  EXPECT_EQ(m.cpus, 2u);
  EXPECT_EQ(m.wakeup_overhead_ns, 250000u);
  EXPECT_TRUE(m.wakeup_overhead_ns_set);  // wins over the trace's machine section
  EXPECT_EQ(m.speed_pct, 110u);
}

TEST(MachineProfile, WrittenTextReadsBack) {
  const MachineProfile p = parse_profile(kGood, "p.yaml");
  const std::string text = profile_text(p, "line one\nline two");
  EXPECT_EQ(text.rfind("# line one\n# line two\nformat: agentcg-machine-profile\n", 0), 0u);
  const MachineProfile q = parse_profile(text, "q.yaml");
  EXPECT_EQ(q.machine_keys, p.machine_keys);
  EXPECT_EQ(q.machine.wakeup_overhead_ns, p.machine.wakeup_overhead_ns);
  EXPECT_EQ(q.machine.speed_pct, p.machine.speed_pct);
  EXPECT_EQ(q.fit.fitted, p.fit.fitted);
  EXPECT_EQ(q.fit.held_out, p.fit.held_out);
  EXPECT_DOUBLE_EQ(q.fit.sq_log_error_after, p.fit.sq_log_error_after);
  EXPECT_EQ(profile_text(q, "line one\nline two"), text);  // deterministic
}

TEST(MachineProfile, BadProfilesNameFileLineAndKey) {
  const std::string head = "format: agentcg-machine-profile\nversion: 1\n";
  EXPECT_NE(error_of(head + "machine:\n  cpus: 2\n  wakeup_cost_ns: 5\n")
                .find("p.yaml:5: key 'machine.wakeup_cost_ns': unknown key"),
            std::string::npos);
  EXPECT_NE(error_of(head + "machine:\n  speed_pct: 0\n").find("p.yaml:4: key 'machine.speed_pct': value 0 out of range"),
            std::string::npos);
  EXPECT_NE(error_of("format: agentcg-config\nversion: 1\nmachine:\n  cpus: 2\n").find("p.yaml:1: key 'format'"),
            std::string::npos);
  EXPECT_NE(error_of("format: agentcg-machine-profile\nversion: 2\nmachine:\n  cpus: 2\n")
                .find("p.yaml:2: key 'version': expected 1"),
            std::string::npos);
  // a config file passed as a profile: says which flag loads it
  EXPECT_NE(error_of("machine:\n  cpus: 2\n").find("key 'format': missing"), std::string::npos);
  EXPECT_NE(error_of(head + "machine:\n  cpus: 2\nfit:\n  fitted: [io]\n  held_out: [io]\n")
                .find("p.yaml:7: key 'fit.held_out': scenario 'io' is also in fit.fitted"),
            std::string::npos);
  EXPECT_NE(error_of(head + "machine:\n  cpus: 2\nfit:\n  fitted: io\n").find("p.yaml:6: key 'fit.fitted': expected a list"),
            std::string::npos);
  EXPECT_NE(error_of(head + "machine: {}\n").find("key 'machine': expected at least one machine key"),
            std::string::npos);
  EXPECT_NE(error_of("").find("p.yaml:1: empty file"), std::string::npos);
  EXPECT_NE(error_of("format: [\n").find("p.yaml:"), std::string::npos);
  EXPECT_NE(error_of(head + "machine:\n  cpus: 2\n  cpus: 3\n").find("duplicate key"), std::string::npos);
}

TEST(MachineProfile, LoadFileErrors) {
  const auto dir = std::filesystem::temp_directory_path();
  EXPECT_THROW(load_profile((dir / "agentcg-no-such-profile.yaml").string()), config::ConfigError);
  try {
    load_profile(dir.string());
    FAIL() << "a directory was accepted";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos);
  }
  const auto path = dir / "agentcg_profile_test.yaml";
  {
    std::ofstream(path) << kGood;
  }
  EXPECT_EQ(load_profile(path.string()).machine.wakeup_overhead_ns, 250000u);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace agentcg::calibrate
