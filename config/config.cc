// SPDX-License-Identifier: GPL-2.0-only
// The config loader (config.h): YAML text -> Config, or a ConfigError naming
// file, line and key. Invariants: no exception other than ConfigError leaves
// load_string()/load_file() (yaml-cpp's own exceptions, bad_alloc and the
// like are converted at the edge: a daemon that reloads on SIGHUP must be
// able to keep its old config on any bad file); every mapping is checked for
// non-scalar ("complex") keys and duplicate keys, which yaml-cpp accepts and
// would otherwise make `n[key]` silently return the first; a path that is not
// a regular file (a directory) is an error, not "all defaults"; files are
// capped at kMaxConfigBytes so a hostile path (/dev/zero) cannot exhaust
// memory. Called by the simulator's CLI, agentcgroupd (start, --check-config,
// SIGHUP), agentcg-gpud, the Python bindings and fuzz/config_fuzz.cc.
#include "config/config.h"
#include "config/machine_section.h"

#include <sys/stat.h>

#include <fstream>
#include <new>
#include <set>
#include <sstream>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

namespace agentcg::config {

Config::Config() : scheduler(agentcg_tunables_default()) {}

namespace {

// A node's "FILE:LINE". An absent key's node (`section["nope"]`) is a
// zombie whose Mark() throws YAML::InvalidNode: callers pass the enclosing
// section for those, and this still never throws (line omitted instead).
std::string where(const std::string& source, const YAML::Node& n) {
  std::string s = source;
  if (!n.IsDefined()) return s;
  const YAML::Mark m = n.Mark();
  if (m.line >= 0) s += ":" + std::to_string(m.line + 1);
  return s;
}

constexpr std::size_t kMaxConfigBytes = 1 << 20;  // 1 MiB: real configs are < 10 KB

}  // namespace

void Reader::fail(const YAML::Node& at, const std::string& key, const std::string& why) const {
  throw ConfigError(where(source, at) + ": key '" + key + "': " + why);
}

void Reader::only_keys(const YAML::Node& section, const std::string& name,
                       const std::string& allowed) const {
  if (!section.IsMap()) fail(section, name, "expected a mapping of keys");
  std::set<std::string> ok;
  std::stringstream ss(allowed);
  for (std::string k; std::getline(ss, k, ',');) ok.insert(k);
  std::set<std::string> seen;
  for (const auto& kv : section) {
    // `? [a, b]: 1` is a valid YAML mapping with a sequence as its key.
    if (!kv.first.IsScalar())
      fail(kv.first, name, "expected a plain key (one of: " + allowed + "), got a complex (non-scalar) key");
    const auto key = kv.first.Scalar();
    if (!ok.count(key)) {
      fail(kv.first, name + "." + key, "unknown key (expected one of: " + allowed + ")");
    }
    if (!seen.insert(key).second)
      fail(kv.first, name + "." + key, "duplicate key (each key at most once per section)");
  }
}

std::uint64_t Reader::u64(const YAML::Node& section, const std::string& name,
                          const std::string& key, std::uint64_t min, std::uint64_t max) const {
  return u64_value(section[key], name + "." + key, min, max);
}

std::uint64_t Reader::u64_value(const YAML::Node& n, const std::string& full, std::uint64_t min,
                                std::uint64_t max) const {
  std::string text;
  try {
    text = n.as<std::string>();
  } catch (const YAML::Exception&) {
    fail(n, full, "expected an integer");
  }
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
    fail(n, full, "expected a non-negative integer in [" + std::to_string(min) + ", " +
                      std::to_string(max) + "], got '" + text + "'");
  }
  std::uint64_t v = 0;
  try {
    v = std::stoull(text);
  } catch (const std::exception&) {
    fail(n, full, "integer out of range: '" + text + "'");
  }
  if (v < min || v > max) {
    fail(n, full, "value " + text + " out of range [" + std::to_string(min) + ", " +
                      std::to_string(max) + "]");
  }
  return v;
}

double Reader::f64(const YAML::Node& section, const std::string& name, const std::string& key,
                   double min, double max) const {
  const YAML::Node n = section[key];
  const std::string full = name + "." + key;
  double v = 0;
  try {
    v = n.as<double>();
  } catch (const YAML::Exception&) {
    fail(n, full, "expected a number");
  }
  if (!(v >= min && v <= max)) {
    std::ostringstream o;
    o << "value " << v << " out of range [" << min << ", " << max << "]";
    fail(n, full, o.str());
  }
  return v;
}

bool Reader::boolean(const YAML::Node& section, const std::string& name,
                     const std::string& key) const {
  const YAML::Node n = section[key];
  try {
    return n.as<bool>();
  } catch (const YAML::Exception&) {
    fail(n, name + "." + key, "expected true or false");
  }
}

std::string Reader::str(const YAML::Node& section, const std::string& name,
                        const std::string& key) const {
  const YAML::Node n = section[key];
  if (!n.IsScalar()) fail(n, name + "." + key, "expected a string");
  return n.as<std::string>();
}

namespace {

void parse_daemon(const YAML::Node& n, const Reader& r, DaemonConfig& d) {
  r.only_keys(n, "daemon", "log_level,metrics_port,metrics_address,mode,reattach_on_eject");
  if (n["log_level"]) {
    d.log_level = r.str(n, "daemon", "log_level");
    if (d.log_level != "debug" && d.log_level != "info" && d.log_level != "warn" &&
        d.log_level != "error")
      r.fail(n["log_level"], "daemon.log_level", "expected debug, info, warn or error");
  }
  if (n["metrics_port"]) d.metrics_port = static_cast<std::uint32_t>(r.u64(n, "daemon", "metrics_port", 0, 65535));
  if (n["metrics_address"]) d.metrics_address = r.str(n, "daemon", "metrics_address");
  if (n["mode"]) {
    d.mode = r.str(n, "daemon", "mode");
    if (d.mode == "monitor") d.mode = "none";  // the strategies design's monitor-only mode
    if (d.mode != "agentcg" && d.mode != "flatcg" && d.mode != "scx" && d.mode != "none")
      r.fail(n["mode"], "daemon.mode", "expected agentcg, flatcg, scx, none or monitor");
  }
  if (n["reattach_on_eject"]) d.reattach_on_eject = r.boolean(n, "daemon", "reattach_on_eject");
}

void parse_monitor(const YAML::Node& n, const Reader& r, MonitorConfig& m) {
  r.only_keys(n, "monitor", "cgroup_root,poll_interval_ms,sched_monitor");
  if (n["sched_monitor"]) m.sched_monitor = r.boolean(n, "monitor", "sched_monitor");
  if (n["cgroup_root"]) {
    m.cgroup_root = r.str(n, "monitor", "cgroup_root");
    if (m.cgroup_root.empty() || m.cgroup_root[0] != '/')
      r.fail(n["cgroup_root"], "monitor.cgroup_root", "expected an absolute path");
  }
  if (n["poll_interval_ms"])
    m.poll_interval_ms = static_cast<std::uint32_t>(r.u64(n, "monitor", "poll_interval_ms", 1, 60000));
}

// Takes the supervision keys out of a copy of the `scheduler:` section, so
// parse_scheduler_section() sees only tunables.
void parse_supervisor(YAML::Node& n, const Reader& r, SupervisorConfig& s) {
  if (n["scheduler_name"]) {
    s.scheduler_name = r.str(n, "scheduler", "scheduler_name");
    // A bare file name: the allow-list is the directory, so no '/' or '..'.
    if (s.scheduler_name.empty() || s.scheduler_name.find('/') != std::string::npos ||
        s.scheduler_name == "." || s.scheduler_name == "..")
      r.fail(n["scheduler_name"], "scheduler.scheduler_name",
             "expected a file name inside scheduler.scx_dir (no '/'), e.g. scx_bpfland");
    n.remove("scheduler_name");
  }
  if (n["scx_dir"]) {
    s.scx_dir = r.str(n, "scheduler", "scx_dir");
    if (s.scx_dir.empty() || s.scx_dir[0] != '/')
      r.fail(n["scx_dir"], "scheduler.scx_dir", "expected an absolute path");
    n.remove("scx_dir");
  }
  if (n["max_time_watchdog"]) {
    s.max_time_watchdog = r.boolean(n, "scheduler", "max_time_watchdog");
    n.remove("max_time_watchdog");
  }
  if (n["max_time_sec"]) {
    s.max_time_sec = static_cast<std::uint32_t>(r.u64(n, "scheduler", "max_time_sec", 1, 3600));
    n.remove("max_time_sec");
  }
}

void parse_api(const YAML::Node& n, const Reader& r, ApiConfig& a) {
  r.only_keys(n, "api", "listen,token_file,state_file");
  if (n["listen"]) {
    a.listen = r.str(n, "api", "listen");
    const bool unix_sock = a.listen.rfind("unix:/", 0) == 0;
    const bool local_tcp = a.listen.rfind("127.0.0.1:", 0) == 0 || a.listen.rfind("[::1]:", 0) == 0;
    if (!a.listen.empty() && !unix_sock && !local_tcp)
      r.fail(n["listen"], "api.listen",
             "expected unix:/absolute/path or 127.0.0.1:PORT (the API is local only)");
  }
  for (auto* key : {"token_file", "state_file"}) {
    if (!n[key]) continue;
    std::string v = r.str(n, "api", key);
    if (v.empty() || v[0] != '/') r.fail(n[key], std::string("api.") + key, "expected an absolute path");
    (std::string(key) == "token_file" ? a.token_file : a.state_file) = v;
  }
}

}  // namespace

// Shared with the machine-profile loader (sim/calibrate/profile.cc), so a
// profile's `machine:` keys mean what a config's do.
void parse_machine_section(const YAML::Node& n, const Reader& r, MachineConfig& m) {
  r.only_keys(n, "machine",
              "context_switch_ns,wakeup_overhead_ns,speed_pct,cpus,runqueues,idle_exit_ns,idle_exit_after_ns,ipi_idle_ns,task_wakeup_ns,kick_busy_ns,"
              "timer_busy_ns,ext_timer_busy_ns,"
              "migration_cost_ns,background_cpu_pct,fork_cost_ns,exit_cost_ns,fork_after_ns,fork_child_ns,ext_busy_pct,"
              "ext_wakeup_ns,ext_fork_ns,mem_fault_ns_per_mib,fork_ns_per_mib,wakeup_work_ns,sleep_cost_ns,tick_ns,preempt,fork_placement,wake_placement,"
              "balance,cpu_capacity");
  if (n["context_switch_ns"]) {
    m.context_switch_ns = r.u64(n, "machine", "context_switch_ns", 0, 1000000);
    m.context_switch_ns_set = true;
  }
  if (n["wakeup_overhead_ns"]) {
    m.wakeup_overhead_ns = r.u64(n, "machine", "wakeup_overhead_ns", 0, 1000000);
    m.wakeup_overhead_ns_set = true;
  }
  if (n["speed_pct"]) m.speed_pct = static_cast<std::uint32_t>(r.u64(n, "machine", "speed_pct", 1, 10000));
  if (n["cpus"]) m.cpus = static_cast<std::uint32_t>(r.u64(n, "machine", "cpus", 0, 4096));
  if (n["runqueues"]) {
    const std::string v = r.str(n, "machine", "runqueues");
    if (v == "per_cpu") m.runqueues = MachineConfig::Runqueues::kPerCpu;
    else if (v == "global") m.runqueues = MachineConfig::Runqueues::kGlobal;
    else r.fail(n["runqueues"], "machine.runqueues", "expected per_cpu or global, got '" + v + "'");
  }
  if (n["idle_exit_ns"]) m.idle_exit_ns = r.u64(n, "machine", "idle_exit_ns", 0, 10000000);
  if (n["idle_exit_after_ns"]) m.idle_exit_after_ns = r.u64(n, "machine", "idle_exit_after_ns", 0, 10000000000);
  if (n["ipi_idle_ns"]) m.ipi_idle_ns = r.u64(n, "machine", "ipi_idle_ns", 0, 10000000);
  if (n["task_wakeup_ns"]) {
    m.task_wakeup_ns = r.u64(n, "machine", "task_wakeup_ns", 0, 10000000);
    m.task_wakeup_ns_set = true;
  }
  if (n["kick_busy_ns"]) m.kick_busy_ns = r.u64(n, "machine", "kick_busy_ns", 0, 10000000);
  if (n["timer_busy_ns"]) m.timer_busy_ns = r.u64(n, "machine", "timer_busy_ns", 0, 10000000);
  if (n["ext_timer_busy_ns"]) m.ext_timer_busy_ns = r.u64(n, "machine", "ext_timer_busy_ns", 0, 10000000);
  if (n["migration_cost_ns"]) m.migration_cost_ns = r.u64(n, "machine", "migration_cost_ns", 0, 10000000);
  if (n["background_cpu_pct"])
    m.background_cpu_pct = static_cast<std::uint32_t>(r.u64(n, "machine", "background_cpu_pct", 0, 409600));
  if (n["fork_cost_ns"]) m.fork_cost_ns = r.u64(n, "machine", "fork_cost_ns", 0, 1000000000);
  if (n["exit_cost_ns"]) m.exit_cost_ns = r.u64(n, "machine", "exit_cost_ns", 0, 1000000000);
  if (n["fork_after_ns"]) m.fork_after_ns = r.u64(n, "machine", "fork_after_ns", 0, 1000000000);
  if (n["fork_child_ns"]) m.fork_child_ns = r.u64(n, "machine", "fork_child_ns", 0, 1000000000);
  if (n["ext_busy_pct"]) m.ext_busy_pct = static_cast<std::uint32_t>(r.u64(n, "machine", "ext_busy_pct", 0, 90));
  if (n["ext_wakeup_ns"]) m.ext_wakeup_ns = r.u64(n, "machine", "ext_wakeup_ns", 0, 1000000);
  if (n["ext_fork_ns"]) m.ext_fork_ns = r.u64(n, "machine", "ext_fork_ns", 0, 1000000000);
  if (n["mem_fault_ns_per_mib"])
    m.mem_fault_ns_per_mib = r.u64(n, "machine", "mem_fault_ns_per_mib", 0, 1000000000);
  if (n["fork_ns_per_mib"]) m.fork_ns_per_mib = r.u64(n, "machine", "fork_ns_per_mib", 0, 1000000000);
  if (n["wakeup_work_ns"]) m.wakeup_work_ns = r.u64(n, "machine", "wakeup_work_ns", 0, 10000000);
  if (n["sleep_cost_ns"]) m.sleep_cost_ns = r.u64(n, "machine", "sleep_cost_ns", 0, 100000000);
  if (n["tick_ns"]) m.tick_ns = r.u64(n, "machine", "tick_ns", 0, 100000000);
  if (n["fork_placement"]) {
    const std::string v = r.str(n, "machine", "fork_placement");
    if (v == "local") m.fork_placement = MachineConfig::ForkPlacement::kLocal;
    else if (v == "idlest") m.fork_placement = MachineConfig::ForkPlacement::kIdlest;
    else r.fail(n["fork_placement"], "machine.fork_placement", "expected idlest or local, got '" + v + "'");
  }
  if (n["wake_placement"]) {
    const std::string v = r.str(n, "machine", "wake_placement");
    if (v == "energy_aware") m.wake_placement = MachineConfig::WakePlacement::kEnergyAware;
    else if (v == "spread") m.wake_placement = MachineConfig::WakePlacement::kSpread;
    else r.fail(n["wake_placement"], "machine.wake_placement", "expected spread or energy_aware, got '" + v + "'");
  }
  if (n["balance"]) {
    const std::string v = r.str(n, "machine", "balance");
    if (v == "when_overutilized") m.balance = MachineConfig::Balance::kWhenOverutilized;
    else if (v == "always") m.balance = MachineConfig::Balance::kAlways;
    else r.fail(n["balance"], "machine.balance", "expected always or when_overutilized, got '" + v + "'");
  }
  if (n["cpu_capacity"]) {
    const YAML::Node& l = n["cpu_capacity"];
    if (!l.IsSequence() || l.size() == 0 || l.size() > 4096)
      r.fail(l, "machine.cpu_capacity", "expected a list of 1 to 4096 capacities (1..1024), one per CPU");
    m.cpu_capacity.clear();
    for (std::size_t i = 0; i < l.size(); ++i)
      m.cpu_capacity.push_back(
          static_cast<std::uint32_t>(r.u64_value(l[i], "machine.cpu_capacity[" + std::to_string(i) + "]", 1, 1024)));
    if (m.cpus != 0 && m.cpu_capacity.size() != m.cpus)
      r.fail(l, "machine.cpu_capacity", "expected " + std::to_string(m.cpus) + " capacities (machine.cpus), got " +
                                            std::to_string(m.cpu_capacity.size()));
  }
  if (n["preempt"]) {
    const std::string v = r.str(n, "machine", "preempt");
    if (v == "lazy") m.preempt = MachineConfig::Preempt::kLazy;
    else if (v == "full") m.preempt = MachineConfig::Preempt::kFull;
    else r.fail(n["preempt"], "machine.preempt", "expected full or lazy, got '" + v + "'");
    if (m.preempt == MachineConfig::Preempt::kLazy && m.tick_ns == 0)
      r.fail(n["preempt"], "machine.preempt",
             "lazy needs machine.tick_ns (the tick that turns a lazy reschedule into a preemption)");
  }
}

namespace {

void parse_cfs(const YAML::Node& n, const Reader& r, CfsConfig& c) {
  r.only_keys(n, "cfs", "latency_ns,min_granularity_ns,wakeup_granularity_ns,bandwidth_slice_ns,balance_interval_ns,run_to_parity");
  const std::uint64_t s = 1000000000;
  if (n["latency_ns"]) c.latency_ns = r.u64(n, "cfs", "latency_ns", 0, s);
  if (n["min_granularity_ns"]) c.min_granularity_ns = r.u64(n, "cfs", "min_granularity_ns", 0, s);
  if (n["wakeup_granularity_ns"]) c.wakeup_granularity_ns = r.u64(n, "cfs", "wakeup_granularity_ns", 0, s);
  if (n["bandwidth_slice_ns"]) c.bandwidth_slice_ns = r.u64(n, "cfs", "bandwidth_slice_ns", 1000, s);
  if (n["balance_interval_ns"]) c.balance_interval_ns = r.u64(n, "cfs", "balance_interval_ns", 100000, s);
  if (n["run_to_parity"]) c.run_to_parity = r.boolean(n, "cfs", "run_to_parity");
}

}  // namespace

namespace {

Config load_string_unchecked(const std::string& yaml, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own depth guard (its message is just "bad file").
    throw ConfigError(source + ":" + std::to_string(e.mark.line + 1) +
                      ": not valid YAML: nested too deep; expected a shallow config file");
  } catch (const YAML::ParserException& e) {
    throw ConfigError(source + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  Config c;
  const Reader r{source};
  if (root.IsNull()) return c;  // an empty file means all defaults
  r.only_keys(root, "(top level)", "daemon,scheduler,monitor,gpu,machine,cfs,api");
  if (root["daemon"]) parse_daemon(root["daemon"], r, c.daemon);
  if (root["scheduler"]) {
    // The supervision keys are taken out of the loaded tree itself (not a
    // YAML::Clone, which loses the line marks of the other keys' errors).
    YAML::Node sched = root["scheduler"];
    if (sched.IsMap()) parse_supervisor(sched, r, c.supervisor);
    parse_scheduler_section(sched, r, c.scheduler);
  }
  if (root["api"]) parse_api(root["api"], r, c.api);
  if (root["monitor"]) parse_monitor(root["monitor"], r, c.monitor);
  if (root["gpu"]) parse_gpu_section(root["gpu"], r, c.gpu);
  if (root["machine"]) parse_machine_section(root["machine"], r, c.machine);
  if (root["cfs"]) parse_cfs(root["cfs"], r, c.cfs);
  if (c.daemon.mode == "scx" && c.supervisor.scheduler_name.empty())
    r.fail(root["daemon"]["mode"], "scheduler.scheduler_name",
           "required when daemon.mode is scx (a binary in scheduler.scx_dir)");
  return c;
}

}  // namespace

Config load_string(const std::string& yaml, const std::string& source) {
  try {
    return load_string_unchecked(yaml, source);
  } catch (const ConfigError&) {
    throw;
  } catch (const YAML::Exception& e) {
    // A yaml-cpp check this loader did not anticipate (a bad conversion, an
    // alias to a missing anchor): still one error type, with the position.
    std::string at = source;
    if (e.mark.line >= 0) at += ":" + std::to_string(e.mark.line + 1);
    throw ConfigError(at + ": " + e.msg);
  } catch (const std::bad_alloc&) {
    throw ConfigError(source + ": out of memory while loading the config");
  } catch (const std::exception& e) {
    throw ConfigError(source + ": " + e.what());
  }
}

Config load_file(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) throw ConfigError(path + ": cannot open config file (no such file?)");
  if (S_ISDIR(st.st_mode)) throw ConfigError(path + ": is a directory; expected a YAML config file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot open config file");
  // Read at most kMaxConfigBytes + 1: a device or a huge file is an error,
  // not an unbounded allocation.
  std::string text(kMaxConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw ConfigError(path + ": read error");
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxConfigBytes)
    throw ConfigError(path + ": larger than " + std::to_string(kMaxConfigBytes) + " bytes; expected a small YAML config");
  return load_string(text, path);
}

}  // namespace agentcg::config
