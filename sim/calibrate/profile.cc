// SPDX-License-Identifier: GPL-2.0-only
// Machine-profile loader (profile.h). The `machine:` section goes through
// the config loader's own parse_machine_section, so a key the model gains
// (config/) is a profile key too, with the same range and error text.
// Invariant: every failure is a config::ConfigError naming FILE:LINE and
// the key; yaml-cpp's exceptions never leave this file.
// Who calls it: sim/cli/main.cc, python/src/register_config.cpp, tests.
#include "sim/calibrate/profile.h"

#include "config/machine_section.h"

#include <sys/stat.h>

#include <fstream>
#include <iomanip>
#include <new>
#include <set>
#include <sstream>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

namespace agentcg::calibrate {

namespace {

constexpr std::size_t kMaxProfileBytes = 1 << 20;  // real profiles are < 2 KB
constexpr const char* kTopKeys = "format,version,machine,fit";
constexpr const char* kFitKeys = "tool,fitted,held_out,targets,sq_log_error_before,sq_log_error_after";

std::vector<std::string> names(const YAML::Node& sec, const config::Reader& r, const std::string& key) {
  const YAML::Node n = sec[key];
  if (!n.IsSequence()) r.fail(n, "fit." + key, "expected a list of scenario names, e.g. [fid-hogs, fid-io]");
  std::vector<std::string> out;
  for (const auto& x : n) {
    if (!x.IsScalar() || x.Scalar().empty())
      r.fail(x, "fit." + key, "expected a list of scenario names (non-empty strings)");
    out.push_back(x.Scalar());
  }
  return out;
}

MachineProfile parse_unchecked(const std::string& yaml, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::DeepRecursion& e) {
    throw config::ConfigError(source + ":" + std::to_string(e.mark.line + 1) +
                              ": not valid YAML: nested too deep; expected a machine profile");
  } catch (const YAML::ParserException& e) {
    throw config::ConfigError(source + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  const config::Reader r{source};
  if (root.IsNull())
    throw config::ConfigError(source + ":1: empty file; expected a machine profile (format: " +
                              std::string(kProfileFormat) + ", version, machine)");
  r.only_keys(root, "(top level)", kTopKeys);  // also: a mapping, no duplicate or complex keys
  for (const char* k : {"format", "version", "machine"})
    if (!root[k])
      r.fail(root, k, std::string("missing; a machine profile needs format: ") + kProfileFormat +
                          ", version: 1 and a machine: section");
  const YAML::Node fmt = root["format"];
  if (!fmt.IsScalar() || fmt.Scalar() != kProfileFormat)
    r.fail(fmt, "format",
           std::string("expected ") + kProfileFormat +
               " (a config file's machine: section is loaded with --config, not --machine)");
  const YAML::Node ver = root["version"];
  if (!ver.IsScalar() || ver.Scalar() != std::to_string(kProfileVersion))
    r.fail(ver, "version", "expected 1 (this build reads machine profiles of version 1)");
  MachineProfile p;
  p.source = source;
  p.text = yaml;
  const YAML::Node m = root["machine"];
  config::parse_machine_section(m, r, p.machine);
  for (const auto& kv : m) p.machine_keys.push_back(kv.first.Scalar());
  if (p.machine_keys.empty()) r.fail(m, "machine", "expected at least one machine key (e.g. cpus)");
  if (root["fit"]) {
    const YAML::Node f = root["fit"];
    r.only_keys(f, "fit", kFitKeys);
    if (f["tool"]) p.fit.tool = r.str(f, "fit", "tool");
    if (f["fitted"]) p.fit.fitted = names(f, r, "fitted");
    if (f["held_out"]) p.fit.held_out = names(f, r, "held_out");
    if (f["targets"]) p.fit.targets = r.u64(f, "fit", "targets", 0, 1u << 30);
    if (f["sq_log_error_before"]) p.fit.sq_log_error_before = r.f64(f, "fit", "sq_log_error_before", 0, 1e300);
    if (f["sq_log_error_after"]) p.fit.sq_log_error_after = r.f64(f, "fit", "sq_log_error_after", 0, 1e300);
    const std::set<std::string> fitted(p.fit.fitted.begin(), p.fit.fitted.end());
    for (const auto& h : p.fit.held_out)
      if (fitted.count(h))
        r.fail(f["held_out"], "fit.held_out",
               "scenario '" + h + "' is also in fit.fitted; a held-out scenario must not be fitted on");
  }
  return p;
}

}  // namespace

MachineProfile parse_profile(const std::string& yaml, const std::string& source) {
  try {
    return parse_unchecked(yaml, source);
  } catch (const config::ConfigError&) {
    throw;
  } catch (const YAML::Exception& e) {
    std::string at = source;
    if (e.mark.line >= 0) at += ":" + std::to_string(e.mark.line + 1);
    throw config::ConfigError(at + ": " + e.msg);
  } catch (const std::bad_alloc&) {
    throw config::ConfigError(source + ": out of memory while loading the machine profile");
  } catch (const std::exception& e) {
    throw config::ConfigError(source + ": " + e.what());
  }
}

MachineProfile load_profile(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    throw config::ConfigError(path + ": cannot open machine profile (no such file?)");
  if (S_ISDIR(st.st_mode))
    throw config::ConfigError(path + ": is a directory; expected a machine profile (YAML, written by "
                              "`agentcg fidelity`)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config::ConfigError(path + ": cannot open machine profile");
  std::string text(kMaxProfileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxProfileBytes)
    throw config::ConfigError(path + ": larger than 1 MiB; expected a machine profile (a few lines of YAML)");
  return parse_profile(text, path);
}

void apply_profile(const MachineProfile& p, config::MachineConfig& m) {
  // Copy exactly the keys the profile names: parse its machine section again
  // into M (it was validated when loaded, so this cannot fail), which keeps
  // this free of a per-key list the model would have to keep in step.
  const YAML::Node root = YAML::Load(p.text);
  config::parse_machine_section(root["machine"], config::Reader{p.source}, m);
}

std::string profile_text(const MachineProfile& p, const std::string& comment) {
  std::ostringstream o;
  if (!comment.empty()) {
    std::istringstream c(comment);
    for (std::string line; std::getline(c, line);) o << "# " << line << "\n";
  }
  o << "format: " << kProfileFormat << "\nversion: " << kProfileVersion << "\nmachine:\n";
  const config::MachineConfig& m = p.machine;
  for (const auto& k : p.machine_keys) {
    o << "  " << k << ": ";
    if (k == "cpus") o << m.cpus;
    else if (k == "context_switch_ns") o << m.context_switch_ns;
    else if (k == "wakeup_overhead_ns") o << m.wakeup_overhead_ns;
    else if (k == "speed_pct") o << m.speed_pct;
    else throw std::logic_error("profile_text: machine key '" + k + "' has no writer");
    o << "\n";
  }
  const ProfileFit& f = p.fit;
  const bool any = !f.tool.empty() || !f.fitted.empty() || !f.held_out.empty() || f.targets ||
                   f.sq_log_error_before >= 0 || f.sq_log_error_after >= 0;
  if (!any) return o.str();
  auto list = [](const std::vector<std::string>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + YAML::Dump(YAML::Node(v[i]));
    return s + "]";
  };
  o << "fit:\n";
  if (!f.tool.empty()) o << "  tool: " << YAML::Dump(YAML::Node(f.tool)) << "\n";
  o << "  fitted: " << list(f.fitted) << "\n  held_out: " << list(f.held_out) << "\n";
  if (f.targets) o << "  targets: " << f.targets << "\n";
  o << std::setprecision(17);
  if (f.sq_log_error_before >= 0) o << "  sq_log_error_before: " << f.sq_log_error_before << "\n";
  if (f.sq_log_error_after >= 0) o << "  sq_log_error_after: " << f.sq_log_error_after << "\n";
  return o.str();
}

}  // namespace agentcg::calibrate
