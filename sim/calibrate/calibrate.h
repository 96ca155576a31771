// SPDX-License-Identifier: GPL-2.0-only
// Calibration: fits the simulator's machine parameters (MachineConfig in
// config/config.h: context_switch_ns, wakeup_overhead_ns, speed_pct) to
// live measurements by linear least squares (Eigen), and writes/reads the
// result as a machine profile (profile.h), which `--machine FILE` loads.
//
// Model: a workload's elapsed CPU-side time on the live machine is
//   live_ns = work_ns x (100 / speed_pct) + context_switches x context_switch_ns
//             + wakeups x wakeup_overhead_ns
// where work_ns (CPU work at the trace machine's speed), context_switches and
// wakeups come from the simulation of the same workload, so every pair
// (simulated, live) is one linear equation in k = 100 / speed_pct,
// context_switch_ns and wakeup_overhead_ns. At least three measurements whose
// (work, switches, wakeups) columns are independent are needed.
// Worked example: work 1 s, 1000 switches, 500 wakeups measured at 1.2535 s
// live, with two more independent rows, gives k = 1.25 (speed_pct 80),
// 3000 ns per switch, 1000 ns per wakeup.
// Limitations: costs are taken as constant per event (no cache or SMT
// effects); negative fitted costs are clamped to 0 and reported.
// Who calls it: calibrate_command (CLI), tests.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "config/config.h"

namespace agentcg::calibrate {

struct Measurement {
  std::string name;
  std::uint64_t work_ns = 0;
  std::uint64_t context_switches = 0;
  std::uint64_t wakeups = 0;
  std::uint64_t sim_ns = 0;   // what the simulator predicted with its current parameters
  std::uint64_t live_ns = 0;  // what the live machine measured
};

struct Fit {
  config::MachineConfig machine;
  double speed_factor = 1.0;       // fitted k = 100 / speed_pct before rounding
  double rms_error_before_ns = 0;  // sim_ns vs live_ns
  double rms_error_after_ns = 0;   // the fitted model vs live_ns
  std::vector<std::string> notes;  // clamps and other adjustments
};

// CSV with header `name,work_ns,context_switches,wakeups,sim_ns,live_ns`,
// read line by line; '#' lines and blank lines are skipped. Throws
// config::ConfigError("FILE:LINE: ...") on a bad line.
std::vector<Measurement> read_measurements(std::istream& in, const std::string& source);
std::vector<Measurement> read_measurements_file(const std::string& path);

// Throws std::invalid_argument when fewer than 3 measurements are given or
// their columns are not independent (the fit would be undetermined).
// With fixed_context_switch_ns the switch cost is taken as given (its term
// is subtracted from live_ns) and only the speed factor and the wakeup cost
// are fitted: for measurements where every wakeup ends in one switch onto
// the woken task (wakeup-latency totals), the two columns coincide and only
// their sum is observable. Two measurements suffice then. With
// fixed_speed_factor, k is taken as given too (one free parameter).
Fit fit(const std::vector<Measurement>& m, std::optional<std::uint64_t> fixed_context_switch_ns = {},
        std::optional<double> fixed_speed_factor = {});

// Linear least squares min |A x - b| (Eigen, column-pivoting QR) for the
// Gauss-Newton steps of `agentcg fidelity` (A: one row per measurement, one
// column per parameter, already scaled). Throws std::invalid_argument when
// the shapes disagree or A's rank is below its column count (a parameter
// the measurements do not determine).
std::vector<double> least_squares(const std::vector<std::vector<double>>& a, const std::vector<double>& b);

// A machine profile (profile.h: format, version, `machine:`, `fit:`);
// write_profile throws std::runtime_error when the file cannot be written.
std::string profile_yaml(const Fit& f, std::size_t measurements);
void write_profile(const Fit& f, std::size_t measurements, const std::string& path);
// Reads a machine profile (profile.h's loader; throws config::ConfigError).
config::MachineConfig read_profile(const std::string& path);

// calibrate MEASUREMENTS.csv -o PROFILE.yaml [--fix-context-switch-ns N]
// [--cpus N]: 0 ok, 1 bad input, 2 usage.
int calibrate_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace agentcg::calibrate
