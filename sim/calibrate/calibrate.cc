// SPDX-License-Identifier: GPL-2.0-only
// Calibration by least squares (see calibrate.h).
// Invariant: deterministic: the same measurements give the same profile
// bytes (fixed formatting, no clock reads).
// Who calls it: calibrate_command, tests.
#include "sim/calibrate/calibrate.h"

#include <Eigen/Dense>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "sim/args.h"
#include "sim/calibrate/profile.h"

namespace agentcg::calibrate {

namespace {

constexpr const char* kHeader = "name,work_ns,context_switches,wakeups,sim_ns,live_ns";
constexpr const char* kUsage =
    "usage: calibrate MEASUREMENTS.csv -o PROFILE.yaml [--fix-context-switch-ns N] [--cpus N]\n"
    "                 [--sim-speed-pct N] [--fix-speed]\n"
    "  MEASUREMENTS.csv: header name,work_ns,context_switches,wakeups,sim_ns,live_ns\n"
    "  --fix-context-switch-ns N  take the switch cost as N, fit speed and wakeup cost only\n"
    "  --cpus N                   also record machine.cpus N (the machine measured)\n"
    "  --sim-speed-pct N          the simulations ran at speed_pct N (default 100): the fitted\n"
    "                             speed is relative to it (for iterating fits)\n"
    "  --fix-speed                keep the speed at --sim-speed-pct, fit the wakeup cost only\n";

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

}  // namespace

std::vector<Measurement> read_measurements(std::istream& in, const std::string& source) {
  std::vector<Measurement> out;
  std::string line;
  std::uint64_t n = 0;
  bool header = false;
  const char* fields[] = {"name", "work_ns", "context_switches", "wakeups", "sim_ns", "live_ns"};
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const std::string where = source + ":" + std::to_string(n) + ": ";
    if (!header) {
      if (line != kHeader)
        throw config::ConfigError(where + "expected the header '" + std::string(kHeader) + "'");
      header = true;
      continue;
    }
    const auto cols = split(line);
    if (cols.size() != 6)
      throw config::ConfigError(where + "expected 6 comma-separated fields, got " + std::to_string(cols.size()));
    Measurement m;
    m.name = cols[0];
    std::uint64_t* dst[] = {&m.work_ns, &m.context_switches, &m.wakeups, &m.sim_ns, &m.live_ns};
    for (int i = 0; i < 5; ++i) {
      const std::string& c = cols[static_cast<std::size_t>(i) + 1];
      auto [p, ec] = std::from_chars(c.data(), c.data() + c.size(), *dst[i]);
      if (c.empty() || ec != std::errc() || p != c.data() + c.size())
        throw config::ConfigError(where + "field '" + fields[i + 1] +
                                  "': expected a non-negative integer, got '" + c + "'");
    }
    out.push_back(m);
  }
  if (!header) throw config::ConfigError(source + ":1: empty file (expected the header '" + kHeader + "')");
  return out;
}

std::vector<Measurement> read_measurements_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw config::ConfigError(path + ": cannot open (expected a measurements CSV)");
  return read_measurements(in, path);
}

Fit fit(const std::vector<Measurement>& m, std::optional<std::uint64_t> fixed_context_switch_ns,
        std::optional<double> fixed_speed_factor) {
  // Unknowns x = (k, context_switch_ns, wakeup_overhead_ns); a fixed one's
  // term moves to the right-hand side and its column is dropped.
  const bool fix[3] = {fixed_speed_factor.has_value(), fixed_context_switch_ns.has_value(), false};
  const double fixed_v[3] = {fixed_speed_factor.value_or(0),
                             static_cast<double>(fixed_context_switch_ns.value_or(0)), 0};
  std::vector<int> free_cols;
  for (int c = 0; c < 3; ++c)
    if (!fix[c]) free_cols.push_back(c);
  const Eigen::Index cols = static_cast<Eigen::Index>(free_cols.size());
  if (m.size() < free_cols.size())
    throw std::invalid_argument("calibration needs at least " + std::to_string(cols) + " measurements, got " +
                                std::to_string(m.size()));
  const Eigen::Index rows = static_cast<Eigen::Index>(m.size());
  Eigen::MatrixXd a(rows, cols);
  Eigen::VectorXd b(rows);
  // Columns scaled to comparable magnitudes (ns of work vs counts) for a
  // well-conditioned solve; the solution is scaled back.
  const double col_scale[3] = {1e-9, 1e-3, 1e-3};
  for (Eigen::Index i = 0; i < rows; ++i) {
    const Measurement& r = m[static_cast<std::size_t>(i)];
    const double v[3] = {static_cast<double>(r.work_ns), static_cast<double>(r.context_switches),
                         static_cast<double>(r.wakeups)};
    b(i) = static_cast<double>(r.live_ns);
    for (int c = 0; c < 3; ++c)
      if (fix[c]) b(i) -= v[c] * fixed_v[c];
    for (Eigen::Index j = 0; j < cols; ++j) a(i, j) = v[free_cols[static_cast<std::size_t>(j)]] *
                                                      col_scale[free_cols[static_cast<std::size_t>(j)]];
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
  if (qr.rank() < cols)
    throw std::invalid_argument(
        "calibration: the measurements do not separate the free parameters (" +
        std::string(fix[0] ? "" : "CPU speed, ") + (fix[1] ? "" : "context switches, ") +
        "wakeups): vary the workloads so their work, switch and wakeup counts are independent");
  const Eigen::VectorXd y = qr.solve(b);
  Eigen::Vector3d x;
  for (int c = 0; c < 3; ++c) x(c) = fixed_v[c];
  for (Eigen::Index j = 0; j < cols; ++j) {
    const int c = free_cols[static_cast<std::size_t>(j)];
    x(c) = y(j) * col_scale[c];
  }
  Fit f;
  f.speed_factor = x(0);
  if (x(0) <= 0) {
    f.notes.push_back("fitted speed factor <= 0: speed_pct kept at 100");
    f.machine.speed_pct = 100;
  } else {
    const double pct = std::round(100.0 / x(0));
    f.machine.speed_pct = static_cast<std::uint32_t>(std::clamp(pct, 1.0, 10000.0));
  }
  auto cost = [&f](double v, const char* what) -> std::uint64_t {
    if (v < 0) {
      f.notes.push_back(std::string(what) + " fitted negative (" + std::to_string(v) + "): clamped to 0");
      return 0;
    }
    return static_cast<std::uint64_t>(std::llround(std::min(v, 1e6)));
  };
  if (fixed_context_switch_ns) f.notes.push_back("context_switch_ns given, not fitted");
  if (fixed_speed_factor) f.notes.push_back("speed given, not fitted");
  f.machine.context_switch_ns = cost(x(1), "context_switch_ns");
  f.machine.wakeup_overhead_ns = cost(x(2), "wakeup_overhead_ns");
  double before = 0, after = 0;
  for (const Measurement& r : m) {
    const double live = static_cast<double>(r.live_ns);
    const double pred = static_cast<double>(r.work_ns) * 100.0 / f.machine.speed_pct +
                        static_cast<double>(r.context_switches) * static_cast<double>(f.machine.context_switch_ns) +
                        static_cast<double>(r.wakeups) * static_cast<double>(f.machine.wakeup_overhead_ns);
    before += (static_cast<double>(r.sim_ns) - live) * (static_cast<double>(r.sim_ns) - live);
    after += (pred - live) * (pred - live);
  }
  f.rms_error_before_ns = std::sqrt(before / static_cast<double>(m.size()));
  f.rms_error_after_ns = std::sqrt(after / static_cast<double>(m.size()));
  return f;
}

std::vector<double> least_squares(const std::vector<std::vector<double>>& a, const std::vector<double>& b) {
  if (a.empty() || a.size() != b.size())
    throw std::invalid_argument("least_squares: expected as many rows as right-hand sides (got " +
                                std::to_string(a.size()) + " and " + std::to_string(b.size()) + ")");
  const std::size_t cols = a[0].size();
  if (cols == 0 || a.size() < cols)
    throw std::invalid_argument("least_squares: " + std::to_string(a.size()) + " rows cannot determine " +
                                std::to_string(cols) + " parameters");
  Eigen::MatrixXd m(static_cast<Eigen::Index>(a.size()), static_cast<Eigen::Index>(cols));
  Eigen::VectorXd v(static_cast<Eigen::Index>(b.size()));
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != cols)
      throw std::invalid_argument("least_squares: row " + std::to_string(i) + " has " + std::to_string(a[i].size()) +
                                  " columns, expected " + std::to_string(cols));
    for (std::size_t j = 0; j < cols; ++j) m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = a[i][j];
    v(static_cast<Eigen::Index>(i)) = b[i];
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(m);
  if (qr.rank() < static_cast<Eigen::Index>(cols))
    throw std::invalid_argument("least_squares: the measurements do not determine every parameter (rank " +
                                std::to_string(qr.rank()) + " of " + std::to_string(cols) + ")");
  const Eigen::VectorXd x = qr.solve(v);
  return std::vector<double>(x.data(), x.data() + x.size());
}

std::string profile_yaml(const Fit& f, std::size_t measurements) {
  // A machine profile (profile.h): `--machine FILE` reads it back.
  MachineProfile p;
  p.machine = f.machine;
  p.machine_keys = {"context_switch_ns", "wakeup_overhead_ns", "speed_pct"};
  if (f.machine.cpus) p.machine_keys.push_back("cpus");
  p.fit.tool = "agentcg calibrate";
  p.fit.targets = measurements;
  std::ostringstream c;
  c << "agentcg machine profile, fitted by least squares from " << measurements
    << " (simulated, live) measurements.\n";
  c << "RMS error: " << std::llround(f.rms_error_before_ns) << " ns before, "
    << std::llround(f.rms_error_after_ns) << " ns after the fit.";
  for (const std::string& n : f.notes) c << "\nnote: " << n;
  return profile_text(p, c.str());
}

void write_profile(const Fit& f, std::size_t measurements, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error(path + ": cannot write the machine profile");
  out << profile_yaml(f, measurements);
  if (!out) throw std::runtime_error(path + ": write failed");
}

config::MachineConfig read_profile(const std::string& path) { return load_profile(path).machine; }

int calibrate_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    cli::Args a(args, {"out", "fix-context-switch-ns", "cpus", "sim-speed-pct"}, {"fix-speed"});
    if (a.positional().size() != 1) throw cli::UsageError("expected exactly one MEASUREMENTS.csv");
    const auto m = read_measurements_file(a.positional()[0]);
    std::optional<std::uint64_t> cs;
    if (a.get("fix-context-switch-ns")) cs = a.get_u64("fix-context-switch-ns", 0);
    std::optional<double> k;
    if (a.flag("fix-speed")) k = 1.0;  // the measurements' work is at the simulated speed
    Fit f = fit(m, cs, k);
    const std::uint64_t base = a.get_u64("sim-speed-pct", 100);
    if (base < 1 || base > 10000) throw cli::UsageError("--sim-speed-pct: expected 1..10000");
    if (f.speed_factor > 0)
      f.machine.speed_pct =
          static_cast<std::uint32_t>(std::clamp(std::round(static_cast<double>(base) / f.speed_factor), 1.0, 10000.0));
    f.machine.cpus = static_cast<std::uint32_t>(std::min<std::uint64_t>(a.get_u64("cpus", 0), 4096));
    const std::string path = a.require("out");
    if (path == "-") out << profile_yaml(f, m.size());
    else write_profile(f, m.size(), path);
    err << "calibrated from " << m.size() << " measurements: speed_pct " << f.machine.speed_pct
        << ", context_switch_ns " << f.machine.context_switch_ns << ", wakeup_overhead_ns "
        << f.machine.wakeup_overhead_ns << " (RMS error " << std::llround(f.rms_error_before_ns) << " -> "
        << std::llround(f.rms_error_after_ns) << " ns)\n";
    return 0;
  } catch (const cli::UsageError& e) {
    err << "agentcg: " << e.what() << "\n" << kUsage;
    return 2;
  } catch (const std::exception& e) {
    err << "agentcg: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace agentcg::calibrate
