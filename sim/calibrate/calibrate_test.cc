// SPDX-License-Identifier: GPL-2.0-only
// Tests of the calibration fit on synthetic measurements made with known
// machine parameters, the profile round trip through the machine-profile
// loader, and located errors on bad measurement files.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "sim/calibrate/calibrate.h"

namespace agentcg::calibrate {
namespace {

// live = work x 100/speed + switches x cs + wakeups x wu (+ noise).
std::vector<Measurement> synthetic(std::uint32_t speed_pct, std::uint64_t cs, std::uint64_t wu,
                                   std::int64_t noise_ns) {
  const std::uint64_t rows[][3] = {{1000000000, 1000, 500},   {200000000, 20000, 1000},
                                   {500000000, 5000, 30000},  {3000000000, 100, 100},
                                   {100000000, 50000, 40000}, {800000000, 12000, 7000}};
  std::vector<Measurement> out;
  int i = 0;
  for (const auto& r : rows) {
    Measurement m;
    m.name = "w" + std::to_string(i);
    m.work_ns = r[0];
    m.context_switches = r[1];
    m.wakeups = r[2];
    m.sim_ns = r[0] + r[1] * 2000 + r[2] * 1000;  // the defaults' prediction
    const std::int64_t sign = (i % 2 == 0) ? 1 : -1;
    m.live_ns = r[0] * 100 / speed_pct + r[1] * cs + r[2] * wu + static_cast<std::uint64_t>(sign * noise_ns);
    out.push_back(m);
    ++i;
  }
  return out;
}

TEST(Calibrate, RecoversKnownParametersExactly) {
  const Fit f = fit(synthetic(80, 3000, 1500, 0));
  EXPECT_EQ(f.machine.speed_pct, 80u);
  EXPECT_EQ(f.machine.context_switch_ns, 3000u);
  EXPECT_EQ(f.machine.wakeup_overhead_ns, 1500u);
  EXPECT_NEAR(f.speed_factor, 1.25, 1e-9);
  EXPECT_LT(f.rms_error_after_ns, 1.0);
  EXPECT_GT(f.rms_error_before_ns, 1e6);
  EXPECT_TRUE(f.notes.empty());
}

TEST(Calibrate, RecoversWithNoise) {
  const Fit f = fit(synthetic(125, 5000, 700, 20000));  // +-20 us per measurement
  EXPECT_EQ(f.machine.speed_pct, 125u);
  EXPECT_NEAR(static_cast<double>(f.machine.context_switch_ns), 5000.0, 50.0);
  EXPECT_NEAR(static_cast<double>(f.machine.wakeup_overhead_ns), 700.0, 50.0);
}

TEST(Calibrate, RejectsUndeterminedFits) {
  auto m = synthetic(100, 2000, 1000, 0);
  m.resize(2);
  EXPECT_THROW(fit(m), std::invalid_argument);
  auto same = synthetic(100, 2000, 1000, 0);
  for (auto& x : same) x.wakeups = x.context_switches;  // collinear columns
  EXPECT_THROW(fit(same), std::invalid_argument);
}

TEST(Calibrate, ProfileRoundTripsThroughProfileLoader) {
  const auto m = synthetic(80, 3000, 1500, 0);
  const Fit f = fit(m);
  const auto path = std::filesystem::temp_directory_path() / "agentcg_calibrate_profile.yaml";
  write_profile(f, m.size(), path.string());
  const config::MachineConfig c = read_profile(path.string());
  EXPECT_EQ(c.speed_pct, 80u);
  EXPECT_EQ(c.context_switch_ns, 3000u);
  EXPECT_EQ(c.wakeup_overhead_ns, 1500u);
  EXPECT_EQ(profile_yaml(f, m.size()), profile_yaml(fit(m), m.size()));  // deterministic
  std::filesystem::remove(path);
}

TEST(Calibrate, MeasurementsCsv) {
  std::istringstream ok(
      "# comment\nname,work_ns,context_switches,wakeups,sim_ns,live_ns\nhog,1000,2,3,4,5\r\n\n");
  const auto m = read_measurements(ok, "m.csv");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].name, "hog");
  EXPECT_EQ(m[0].live_ns, 5u);
  std::istringstream bad("name,work_ns,context_switches,wakeups,sim_ns,live_ns\nhog,1000,x,3,4,5\n");
  try {
    read_measurements(bad, "m.csv");
    FAIL() << "expected ConfigError";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("m.csv:2: field 'context_switches'"), std::string::npos) << e.what();
  }
  std::istringstream no_header("hog,1,2,3,4,5\n");
  EXPECT_THROW(read_measurements(no_header, "m.csv"), config::ConfigError);
  std::ostringstream out, err;
  EXPECT_EQ(calibrate_command({}, out, err), 2);
  EXPECT_EQ(calibrate_command({"tests/data/recordings/no-such.csv", "-o", "-"}, out, err), 1);
}

}  // namespace
}  // namespace agentcg::calibrate

namespace agentcg::calibrate {
namespace {

// Wakeup-latency totals: every wakeup ends in one switch, so the switch and
// wakeup columns coincide; with the switch cost fixed, speed and wakeup cost
// are recovered from two independent rows.
TEST(Calibrate, FixedSwitchCostFitsSpeedAndWakeupCost) {
  auto row = [](const char* n, std::uint64_t q, std::uint64_t wakeups) {
    Measurement r;
    r.name = n;
    r.work_ns = q;
    r.context_switches = wakeups;
    r.wakeups = wakeups;
    r.sim_ns = q + wakeups * 3000;
    r.live_ns = static_cast<std::uint64_t>(1.25 * static_cast<double>(q)) + wakeups * (2000 + 40000);
    return r;
  };
  const std::vector<Measurement> m{row("agent", 2000000000, 1000), row("storm", 500000000, 20000),
                                   row("io", 100000000, 5000)};
  EXPECT_THROW(fit(m), std::invalid_argument);  // switches == wakeups: not separable
  const Fit f = fit(m, 2000);
  EXPECT_EQ(f.machine.speed_pct, 80u);
  EXPECT_EQ(f.machine.context_switch_ns, 2000u);
  EXPECT_NEAR(static_cast<double>(f.machine.wakeup_overhead_ns), 40000, 1);
  EXPECT_LT(f.rms_error_after_ns, 1e3);
  EXPECT_GT(f.rms_error_before_ns, 1e6);
}

}  // namespace
}  // namespace agentcg::calibrate

namespace agentcg::calibrate {
namespace {

TEST(Calibrate, LeastSquaresSolvesAndRejectsRankDeficientSystems) {
  // y = 2 a - 3 b, overdetermined and consistent
  const std::vector<std::vector<double>> a{{1, 0}, {0, 1}, {1, 1}, {2, 1}};
  const std::vector<double> b{2, -3, -1, 1};
  const auto x = least_squares(a, b);
  ASSERT_EQ(x.size(), 2u);
  EXPECT_NEAR(x[0], 2, 1e-12);
  EXPECT_NEAR(x[1], -3, 1e-12);
  EXPECT_THROW(least_squares({{1, 2}, {2, 4}, {3, 6}}, {1, 2, 3}), std::invalid_argument);  // rank 1
  EXPECT_THROW(least_squares({{1, 2}}, {1}), std::invalid_argument);                       // too few rows
  EXPECT_THROW(least_squares({{1, 2}, {1}}, {1, 2}), std::invalid_argument);               // ragged
}

}  // namespace
}  // namespace agentcg::calibrate
