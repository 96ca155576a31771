// SPDX-License-Identifier: GPL-2.0-only
// Synthetic trace generators: agent, fork-storm, io, hogs, mixed, crowded,
// builds (and the
// GPU model's gpu-* kinds, dispatched to sim/trace/gpu_generate.h).
//
// Two kinds of randomness, kept apart on purpose:
//  - structure (which tool a step calls, how many children a build forks,
//    start offsets) is drawn here from sim::RandomStream(seed, "<kind>"), so
//    the same (kind, seed, options) gives byte-identical traces;
//  - durations and sizes inside ops are distributions (trace::Value) that the
//    simulator samples from the *run* seed, so one trace replays differently
//    under different run seeds.
// Every option has a default and is validated; the effective options (with
// derived defaults resolved) go into Trace::generator so that
// generate(kind, seed, generator["options"]) reproduces the trace.
//
// Realism of the agent kind (AgentCgroup study, arXiv 2602.09345): think
// (LLM) time lognormal median 3 s; tools: Read/Edit (~0.1-0.3 s, a little
// CPU), test runs via Bash (1-4 pytest-like children, ~17 s of mostly I/O
// waits with CPU bursts), builds via Bash (1-4 compiler children with CPU
// bursts of ~150 ms). Expected: tool time ~65 % of a step, CPU ~11 % of one
// core on average with peaks of 100-400 % when a build's children overlap,
// memory bursts of ~400 MiB per child for 1-2 s over a 185 MiB agent
// baseline, < 1 process start per second per session. The arithmetic is in
// traces/README.md.
// Called by the CLI (`agentcg-sim trace generate`), Python and tests.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "config/did_you_mean.h"
#include "core/units/units.h"
#include "sim/trace/trace.h"

#include "sim/trace/gpu_generate.h"

namespace agentcg::trace {
namespace {

constexpr std::uint64_t kUs = 1000;
constexpr std::uint64_t kMs = 1000 * kUs;
constexpr std::uint64_t kSec = 1000 * kMs;
constexpr std::uint64_t kMiB = 1024 * 1024;
constexpr std::uint64_t kGiB = 1024 * kMiB;

[[noreturn]] void bad_option(const std::string& kind, const std::string& key, const std::string& value,
                             const std::string& expected) {
  throw std::invalid_argument("generator " + kind + ": option --" + key + " \"" + value + "\": expected " + expected);
}

// "2.5s" -> digits "25", scale 1/10. Parses an unsigned decimal with up to 9
// fractional digits exactly (no floating point) times `unit`.
bool parse_decimal(const std::string& num, std::uint64_t unit, std::uint64_t& out) {
  if (num.empty()) return false;
  std::uint64_t whole = 0, frac = 0, frac_div = 1;
  bool dot = false, digits = false;
  for (char c : num) {
    if (c == '.') {
      if (dot) return false;
      dot = true;
    } else if (c >= '0' && c <= '9') {
      digits = true;
      const std::uint64_t d = static_cast<std::uint64_t>(c - '0');
      if (!dot) {
        if (whole > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;
        whole = whole * 10 + d;
      } else {
        if (frac_div >= 1000000000) return false;
        frac = frac * 10 + d;
        frac_div *= 10;
      }
    } else {
      return false;
    }
  }
  if (!digits) return false;
  if (whole > std::numeric_limits<std::uint64_t>::max() / unit) return false;
  // frac < 10^9 and unit <= 1000 (counts and sigma; sizes and durations are
  // core/units/units.h), so frac * unit cannot overflow.
  out = whole * unit + frac * unit / frac_div;
  return true;
}

struct OptSpec {
  const char* key;
  const char* def;  // "" = derived from other options (help says how)
  const char* help;
};

class Options {
 public:
  Options(std::string kind, std::vector<OptSpec> specs, const std::map<std::string, std::string>& given)
      : kind_(std::move(kind)), specs_(std::move(specs)), given_(given) {
    for (const auto& [k, v] : given_) {
      bool known = false;
      for (const OptSpec& s : specs_) known = known || k == s.key;
      if (!known) {
        std::string list;
        std::vector<std::string> names;
        for (const OptSpec& s : specs_) {
          list += std::string(list.empty() ? "--" : ", --") + s.key;
          names.push_back(std::string("--") + s.key);
        }
        throw std::invalid_argument("generator " + kind_ + ": unknown option --" + k +
                                    cli::did_you_mean("--" + k, names) + "; expected one of: " + list);
      }
    }
  }

  // The given value, else the default ("" when derived).
  std::string raw(const std::string& key) const {
    auto it = given_.find(key);
    if (it != given_.end()) return it->second;
    for (const OptSpec& s : specs_)
      if (key == s.key) return s.def;
    throw std::logic_error("generator " + kind_ + ": option " + key + " not declared");
  }
  bool derived(const std::string& key) const { return raw(key).empty(); }
  void record(const std::string& key, const std::string& value) { effective_[key] = value; }

  std::uint64_t count(const std::string& key, std::uint64_t lo, std::uint64_t hi, std::uint64_t derived_value = 0) {
    std::string s = raw(key);
    if (s.empty()) s = std::to_string(derived_value);
    std::uint64_t v = 0;
    if (!parse_decimal(s, 1, v) || s.find('.') != std::string::npos || v < lo || v > hi)
      bad_option(kind_, key, s, "an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
    record(key, s);
    return v;
  }
  std::uint64_t duration(const std::string& key, std::uint64_t lo_ns, std::uint64_t hi_ns) {
    const std::string s = raw(key);
    const auto v = units::parse_duration_ns(s);
    if (!v || *v < lo_ns || *v > hi_ns)
      bad_option(kind_, key, s, std::string(units::kDurationForms) + " in " + show_ns(lo_ns) + ".." + show_ns(hi_ns));
    record(key, s);
    return *v;
  }
  std::optional<std::uint64_t> size(const std::string& key) {
    const std::string s = raw(key);
    record(key, s);
    if (s == "max") return std::nullopt;
    const auto v = units::parse_size_bytes(s);
    if (!v) bad_option(kind_, key, s, std::string(units::kSizeForms) + ", or \"max\"");
    if (*v == 0 || *v > (std::uint64_t{1} << 50)) bad_option(kind_, key, s, "a size in 1 B..1 PiB");
    return *v;
  }
  // "8ms" | "uniform:MIN:MAX" | "exp:MEAN[:CAP]" | "lognormal:MEDIAN:SIGMA[:CAP]" (durations).
  Value dist(const std::string& key) {
    const std::string s = raw(key);
    const std::string expected =
        "a duration (8ms) or a distribution: uniform:MIN:MAX, exp:MEAN[:CAP], lognormal:MEDIAN:SIGMA[:CAP] "
        "(times like 10s, 500ms, 250us, 1000ns; SIGMA a number in 0..10)";
    std::vector<std::string> parts;
    std::stringstream ss(s);
    for (std::string p; std::getline(ss, p, ':');) parts.push_back(p);
    if (s.empty() || s.back() == ':') bad_option(kind_, key, s, expected);
    const auto time = [&](const std::string& p) {
      std::uint64_t v = 0;
      const auto d = units::parse_duration_ns(p);
      if (!d || *d > (std::uint64_t{1} << 50)) bad_option(kind_, key, s, expected);
      v = *d;
      return v;
    };
    Value v;
    if (parts.size() == 1) {
      v = Value::fixed(time(parts[0]));
    } else if (parts[0] == "uniform" && parts.size() == 3) {
      v.dist = Value::Dist::kUniform;
      v.a = time(parts[1]);
      v.b = time(parts[2]);
      if (v.b < v.a) bad_option(kind_, key, s, "uniform:MIN:MAX with MIN <= MAX");
    } else if (parts[0] == "exp" && (parts.size() == 2 || parts.size() == 3)) {
      v.dist = Value::Dist::kExponential;
      v.a = time(parts[1]);
      if (parts.size() == 3) v.max = time(parts[2]);
    } else if (parts[0] == "lognormal" && (parts.size() == 3 || parts.size() == 4)) {
      v.dist = Value::Dist::kLogNormal;
      v.a = time(parts[1]);
      std::uint64_t milli = 0;  // sigma with up to 3 decimals, exact
      if (!parse_decimal(parts[2], 1000, milli) || milli > 10000) bad_option(kind_, key, s, expected);
      v.sigma = static_cast<double>(milli) / 1000.0;
      if (parts.size() == 4) v.max = time(parts[3]);
    } else {
      bad_option(kind_, key, s, expected);
    }
    if (v.is_random() && (v.a == 0 && v.dist != Value::Dist::kUniform))
      bad_option(kind_, key, s, "a positive mean/median");
    record(key, s);
    return v;
  }
  std::vector<std::uint32_t> weights(const std::string& key) {
    const std::string s = raw(key);
    std::vector<std::uint32_t> out;
    std::stringstream ss(s);
    for (std::string p; std::getline(ss, p, ',');) {
      std::uint64_t v = 0;
      if (!parse_decimal(p, 1, v) || p.find('.') != std::string::npos || v < 1 || v > 10000)
        bad_option(kind_, key, s, "a comma-separated list of cpu.weight values in 1..10000, e.g. 100,200,300");
      out.push_back(static_cast<std::uint32_t>(v));
    }
    if (out.empty() || s.back() == ',' || out.size() > 1000)
      bad_option(kind_, key, s, "a comma-separated list of 1..1000 cpu.weight values, e.g. 100,200,300");
    record(key, s);
    return out;
  }
  std::optional<CpuMax> cpu_max(const std::string& key) {
    const std::string s = raw(key);
    record(key, s);
    if (s.empty() || s == "max") return std::nullopt;
    const auto comma = s.find(',');
    std::uint64_t q = 0, p = 0;
    if (comma == std::string::npos || !parse_decimal(s.substr(0, comma), 1, q) ||
        !parse_decimal(s.substr(comma + 1), 1, p) || s.find('.') != std::string::npos || q < 1000 || p < 1000 ||
        p > 1000000 || q > (std::uint64_t{1} << 40))
      bad_option(kind_, key, s, "QUOTA_US,PERIOD_US with quota >= 1000 and period in 1000..1000000, e.g. 50000,100000");
    return CpuMax{q, p};
  }

  nlohmann::json effective() const {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [k, v] : effective_) j[k] = v;
    return j;
  }
  const std::string& kind() const { return kind_; }

 private:
  static std::string show_ns(std::uint64_t ns) {
    if (ns % kSec == 0) return std::to_string(ns / kSec) + "s";
    if (ns % kMs == 0) return std::to_string(ns / kMs) + "ms";
    if (ns % kUs == 0) return std::to_string(ns / kUs) + "us";
    return std::to_string(ns) + "ns";
  }

  std::string kind_;
  std::vector<OptSpec> specs_;
  std::map<std::string, std::string> given_;
  std::map<std::string, std::string> effective_;
};

// --- op construction -------------------------------------------------------

Op op_ns(OpKind k, const Value& v) {
  Op o;
  o.kind = k;
  o.amount = v;
  return o;
}
Op run(const Value& v) { return op_ns(OpKind::kRun, v); }
Op sleep_op(const Value& v) { return op_ns(OpKind::kSleep, v); }
Op io(const Value& v) { return op_ns(OpKind::kIo, v); }
Op mem(const Value& v) {
  Op o;
  o.kind = OpKind::kMem;
  o.amount = v;
  return o;
}
Op simple(OpKind k) {
  Op o;
  o.kind = k;
  return o;
}
Op named(OpKind k, std::string name) {
  Op o;
  o.kind = k;
  o.set_name(std::move(name));
  return o;
}
Op step(std::uint64_t n) {
  Op o;
  o.kind = OpKind::kStep;
  o.set_step(n);
  return o;
}
Op repeat(std::uint32_t count, std::vector<Op> body) {
  Op o;
  o.kind = OpKind::kRepeat;
  o.set_count(count);
  o.set_body(std::move(body));
  return o;
}
Op fork_child(std::string comm, std::vector<Op> ops) {
  auto c = std::make_shared<ProcessSpec>();
  c->pid = 0;
  c->cgroup.clear();  // the parent's cgroup
  c->comm = std::move(comm);
  c->ops = std::move(ops);
  Op o;
  o.kind = OpKind::kFork;
  o.set_child(std::move(c));
  return o;
}
Value fixed(std::uint64_t v) { return Value::fixed(v); }
Value lognormal(std::uint64_t median, double sigma, std::uint64_t cap = 0) {
  Value v;
  v.dist = Value::Dist::kLogNormal;
  v.a = median;
  v.sigma = sigma;
  v.max = cap;
  return v;
}
Value expo(std::uint64_t mean, std::uint64_t cap = 0) {
  Value v;
  v.dist = Value::Dist::kExponential;
  v.a = mean;
  v.max = cap;
  return v;
}
Value uniform(std::uint64_t lo, std::uint64_t hi) {
  Value v;
  v.dist = Value::Dist::kUniform;
  v.a = lo;
  v.b = hi;
  return v;
}

std::uint32_t clamp_count(double x) {
  if (!(x > 1.0)) return 1;
  if (x > 1e9) return 1000000000;
  return static_cast<std::uint32_t>(std::ceil(x));
}

// Accumulates one trace; pids are handed out in order.
struct Builder {
  Trace t;
  std::int64_t next_pid = 1;

  void cgroup(const std::string& path, std::uint32_t weight = 100, std::optional<CpuMax> cpu_max = std::nullopt,
              std::optional<std::uint64_t> high = std::nullopt, std::optional<std::uint64_t> max = std::nullopt) {
    CgroupSpec c;
    c.path = path;
    c.cpu_weight = weight;
    c.cpu_max = cpu_max;
    c.memory_high = high;
    c.memory_max = max;
    t.cgroups.push_back(std::move(c));
  }
  ProcessSpec& process(const std::string& cgroup, const std::string& comm, std::uint64_t start_ns) {
    ProcessSpec p;
    p.pid = next_pid++;
    p.cgroup = cgroup;
    p.comm = comm;
    p.start_ns = start_ns;
    t.processes.push_back(std::move(p));
    return t.processes.back();
  }
};

// --- the parts each kind is made of ----------------------------------------

struct HogParams {
  std::vector<std::uint32_t> weights;
  std::uint64_t tasks_per_group;
  std::optional<CpuMax> cpu_max;
  std::uint64_t duration_ns;
  std::string prefix;  // cgroup name prefix, "/hog-"
};

void add_hogs(Builder& b, const HogParams& p) {
  for (std::size_t g = 0; g < p.weights.size(); ++g) {
    const std::string path = p.prefix + std::to_string(g);
    b.cgroup(path, p.weights[g], p.cpu_max);
    for (std::uint64_t i = 0; i < p.tasks_per_group; ++i) b.process(path, "hog", 0).ops = {run(fixed(p.duration_ns))};
  }
}

struct StormParams {
  std::uint64_t rate_per_s;
  std::uint64_t start_ns;
  std::uint64_t length_ns;
  Value child_run;
};

// One parent in /storm forking short-lived children at the storm rate. The
// gap between forks is uniform in [period/2, 3 period/2] (mean: the period),
// sampled at run time.
void add_storm(Builder& b, const StormParams& p) {
  b.cgroup("/storm");
  const std::uint64_t forks = p.rate_per_s * p.length_ns / kSec;
  ProcessSpec& parent = b.process("/storm", "storm", p.start_ns);
  if (forks == 0 || p.rate_per_s == 0) {
    parent.ops = {run(fixed(kMs))};
    return;
  }
  const std::uint64_t period = std::max<std::uint64_t>(1, kSec / p.rate_per_s);
  parent.ops = {repeat(static_cast<std::uint32_t>(std::min<std::uint64_t>(forks, 1000000000)),
                       {fork_child("storm-child", {run(p.child_run)}), sleep_op(uniform(period / 2, period + period / 2))}),
                simple(OpKind::kWait)};
}

struct IoParams {
  std::uint64_t tasks;
  Value run_ns;
  Value wait_ns;
  std::uint64_t duration_ns;
};

void add_io(Builder& b, sim::RandomStream& rng, const IoParams& p) {
  b.cgroup("/io");
  const double cycle = p.run_ns.mean() + p.wait_ns.mean();
  const std::uint32_t count = clamp_count(static_cast<double>(p.duration_ns) / std::max(cycle, 1.0) * 1.2 + 1.0);
  for (std::uint64_t i = 0; i < p.tasks; ++i) {
    // Start offsets spread the tasks' phases (structure, from the seed).
    b.process("/io", "io-" + std::to_string(i), rng.below(kMs)).ops = {repeat(count, {run(p.run_ns), io(p.wait_ns)})};
  }
}

void add_batch(Builder& b, std::uint64_t hogs, std::uint64_t duration_ns) {
  if (hogs == 0) return;
  b.cgroup("/batch");
  for (std::uint64_t i = 0; i < hogs; ++i) b.process("/batch", "batch", 0).ops = {run(fixed(duration_ns))};
}

// The interactive victim of fork-storm: each step's tool call forks
// `workers` CPU-bound workers of tool_cpu_ns each, then waits.
void add_victim(Builder& b, std::uint64_t workers, std::uint64_t tool_cpu_ns, const Value& think,
                std::uint64_t duration_ns) {
  b.cgroup("/victim");
  ProcessSpec& agent = b.process("/victim", "agent", 0);
  agent.agent = AgentInfo{"victim"};
  const double step_ns = static_cast<double>(tool_cpu_ns) + think.mean();
  const std::uint32_t steps = clamp_count(static_cast<double>(duration_ns) / std::max(step_ns, 1.0) * 1.1 + 1.0);
  agent.ops.push_back(mem(fixed(185 * kMiB)));
  for (std::uint32_t s = 1; s <= steps; ++s) {
    agent.ops.push_back(step(s));
    agent.ops.push_back(sleep_op(think));
    agent.ops.push_back(named(OpKind::kToolBegin, "Bash"));
    agent.ops.push_back(repeat(static_cast<std::uint32_t>(workers), {fork_child("worker", {run(fixed(tool_cpu_ns))})}));
    agent.ops.push_back(simple(OpKind::kWait));
    agent.ops.push_back(named(OpKind::kToolEnd, ""));
  }
}

struct AgentParams {
  std::uint64_t sessions;
  std::uint64_t duration_ns;
  std::uint64_t stagger_ns;
  Value think;
  std::optional<std::uint64_t> memory_high;
  std::optional<std::uint64_t> memory_max;
  std::uint64_t baseline_bytes;
};

// One tool call: the tool's name, the bash-like process it forks, and the
// expected wall time used to decide how many steps fill the duration.
struct ToolCall {
  std::string tool;
  std::vector<Op> bash_ops;
  double expected_wall_ns;
};

ToolCall make_tool_call(sim::RandomStream& rng) {
  // Tool mix: 30 % Read, 20 % Edit, 30 % test run, 20 % build.
  const std::uint64_t pick = rng.below(100);
  const Value bash_start = lognormal(4 * kMs, 0.5);
  std::vector<Op> ops{mem(fixed(8 * kMiB)), run(bash_start)};
  if (pick < 30) {
    ops.push_back(repeat(4, {run(lognormal(3 * kMs, 0.6)), io(expo(60 * kMs))}));
    return {"Read", std::move(ops), 0.26 * kSec};
  }
  if (pick < 50) {
    ops.push_back(io(expo(100 * kMs)));
    return {"Edit", std::move(ops), 0.1 * kSec};
  }
  const std::uint32_t children = 1 + static_cast<std::uint32_t>(rng.below(4));
  if (pick < 80) {
    // A test run: long, mostly waiting on I/O and subprocess output, with
    // short CPU bursts; a 1-2 s memory burst near the end (fixtures, data).
    std::vector<Op> child{mem(lognormal(120 * kMiB, 0.4, 1 * kGiB)),
                          repeat(40, {run(lognormal(10 * kMs, 0.8)), io(expo(400 * kMs))}),
                          mem(lognormal(400 * kMiB, 0.7, 2560 * kMiB)),
                          run(lognormal(200 * kMs, 0.5)),
                          io(uniform(800 * kMs, 1500 * kMs)),
                          mem(fixed(120 * kMiB))};
    ops.push_back(repeat(children, {fork_child("pytest", std::move(child))}));
    ops.push_back(simple(OpKind::kWait));
    return {"Bash", std::move(ops), 18.0 * kSec};
  }
  // A build: parallel compiler jobs with CPU bursts, then a link step whose
  // memory bursts for ~1 s.
  std::vector<Op> child{mem(lognormal(80 * kMiB, 0.5, 1 * kGiB)),
                        repeat(4, {run(lognormal(120 * kMs, 0.7)), io(expo(400 * kMs))}),
                        mem(lognormal(300 * kMiB, 0.7, 2 * kGiB)),
                        run(lognormal(300 * kMs, 0.5)),
                        io(uniform(300 * kMs, 800 * kMs))};
  ops.push_back(repeat(children, {fork_child("cc1", std::move(child))}));
  ops.push_back(simple(OpKind::kWait));
  return {"Bash", std::move(ops), 3.3 * kSec};
}

void add_agents(Builder& b, sim::RandomStream& rng, const AgentParams& p) {
  b.cgroup("/agents");
  const double think_mean = p.think.mean();
  for (std::uint64_t s = 0; s < p.sessions; ++s) {
    const std::string session = "session-" + std::to_string(s);
    const std::string path = "/agents/" + session;
    b.cgroup(path, 100, std::nullopt, p.memory_high, p.memory_max);
    const std::uint64_t slot = p.stagger_ns / std::max<std::uint64_t>(p.sessions, 1);
    const std::uint64_t start = slot * s + rng.below(slot / 2 + 1);
    ProcessSpec& agent = b.process(path, "claude", start);
    agent.agent = AgentInfo{session};
    agent.ops.push_back(mem(fixed(p.baseline_bytes)));
    // Steps until the expected time covers the rest of the run, plus one.
    double t = static_cast<double>(start);
    for (std::uint64_t n = 1; t < static_cast<double>(p.duration_ns) && n <= 100000; ++n) {
      ToolCall call = make_tool_call(rng);
      agent.ops.push_back(step(n));
      agent.ops.push_back(sleep_op(p.think));
      agent.ops.push_back(named(OpKind::kToolBegin, call.tool));
      agent.ops.push_back(fork_child("bash", std::move(call.bash_ops)));
      agent.ops.push_back(simple(OpKind::kWait));
      agent.ops.push_back(named(OpKind::kToolEnd, ""));
      t += think_mean + call.expected_wall_ns;
    }
  }
}

// An interactive task (a shell behind sshd): a keystroke's or a short
// command's CPU burst after a long sleep, in its own cgroup /interactive.
// Its wakeup latency is what a person at the terminal feels; results.json
// reports it as `interactive` (sim/cpu/cpu_model.cc).
void add_interactive(Builder& b, std::uint64_t tasks, std::uint64_t duration_ns) {
  if (tasks == 0) return;
  b.cgroup("/interactive");
  const Value think = lognormal(400 * kMs, 0.7, 5 * kSec);
  const double cycle = think.mean() + 3.0 * kMs;
  const std::uint32_t count = clamp_count(static_cast<double>(duration_ns) / cycle * 1.2 + 1.0);
  for (std::uint64_t i = 0; i < tasks; ++i)
    b.process("/interactive", "shell-" + std::to_string(i), 0).ops = {
        mem(fixed(4 * kMiB)),
        repeat(count, {sleep_op(think), run(lognormal(300 * kUs, 0.5, 5 * kMs)), io(expo(2 * kMs, 20 * kMs)),
                       run(lognormal(200 * kUs, 0.5, 5 * kMs))})};
}

// Tool calls of a session that builds and tests: 40 % short (Read/Edit),
// 35 % `make -j JOBS` (waves of JOBS compiler children, then a link), 25 %
// a test suite run by `pytest -n WORKERS` (workers alternating CPU bursts
// and short I/O waits).
ToolCall make_build_call(sim::RandomStream& rng, std::uint32_t jobs, std::uint32_t workers) {
  const std::uint64_t pick = rng.below(100);
  std::vector<Op> ops{mem(fixed(8 * kMiB)), run(lognormal(4 * kMs, 0.5))};
  if (pick < 40) {
    ops.push_back(repeat(2, {run(lognormal(3 * kMs, 0.6)), io(expo(40 * kMs))}));
    return {pick < 25 ? "Read" : "Edit", std::move(ops), 0.1 * kSec};
  }
  if (pick < 75) {
    const std::uint32_t units = 8 + static_cast<std::uint32_t>(rng.below(25));
    const std::uint32_t waves = (units + jobs - 1) / jobs;
    std::vector<Op> make{mem(fixed(20 * kMiB)),
                         repeat(waves, {repeat(jobs, {fork_child("cc1", {mem(lognormal(120 * kMiB, 0.5, 1 * kGiB)),
                                                                         run(lognormal(150 * kMs, 0.6, 3 * kSec))})}),
                                        simple(OpKind::kWait)}),
                         run(lognormal(300 * kMs, 0.5))};
    ops.push_back(fork_child("make", std::move(make)));
    ops.push_back(simple(OpKind::kWait));
    return {"Bash", std::move(ops), static_cast<double>(waves) * 0.2 * kSec + 0.3 * kSec};
  }
  const std::uint32_t tests = 20 + static_cast<std::uint32_t>(rng.below(40));
  std::vector<Op> pytest{mem(fixed(60 * kMiB)), run(lognormal(200 * kMs, 0.4)),
                         repeat(workers, {fork_child("pytest-worker", {mem(lognormal(100 * kMiB, 0.4, 1 * kGiB)),
                                                                       repeat(tests, {run(lognormal(20 * kMs, 0.8)),
                                                                                      io(expo(10 * kMs))})})}),
                         simple(OpKind::kWait)};
  ops.push_back(fork_child("pytest", std::move(pytest)));
  ops.push_back(simple(OpKind::kWait));
  return {"Bash", std::move(ops), static_cast<double>(tests) * 0.045 * kSec + 0.2 * kSec};
}

void add_build_sessions(Builder& b, sim::RandomStream& rng, const AgentParams& p, std::uint32_t jobs,
                        std::uint32_t workers) {
  b.cgroup("/agents");
  const double think_mean = p.think.mean();
  for (std::uint64_t s = 0; s < p.sessions; ++s) {
    const std::string session = "session-" + std::to_string(s);
    const std::string path = "/agents/" + session;
    b.cgroup(path, 100, std::nullopt, p.memory_high, p.memory_max);
    const std::uint64_t slot = p.stagger_ns / std::max<std::uint64_t>(p.sessions, 1);
    const std::uint64_t start = slot * s + rng.below(slot / 2 + 1);
    ProcessSpec& agent = b.process(path, "claude", start);
    agent.agent = AgentInfo{session};
    agent.ops.push_back(mem(fixed(p.baseline_bytes)));
    double t = static_cast<double>(start);
    for (std::uint64_t n = 1; t < static_cast<double>(p.duration_ns) && n <= 100000; ++n) {
      ToolCall call = make_build_call(rng, jobs, workers);
      agent.ops.push_back(step(n));
      agent.ops.push_back(sleep_op(p.think));
      agent.ops.push_back(named(OpKind::kToolBegin, call.tool));
      agent.ops.push_back(fork_child("bash", std::move(call.bash_ops)));
      agent.ops.push_back(simple(OpKind::kWait));
      agent.ops.push_back(named(OpKind::kToolEnd, ""));
      t += think_mean + call.expected_wall_ns;
    }
  }
}

// --- the kinds ---------------------------------------------------------------

const std::uint64_t kMaxDuration = 100000 * kSec;

Trace finish(Builder& b, const Options& o, const std::string& kind, std::uint64_t seed, std::uint32_t cpus,
             std::uint64_t duration_ns, const std::string& description) {
  b.t.name = kind;
  b.t.description = description;
  b.t.machine.cpus = cpus;
  b.t.duration_ns = duration_ns;
  b.t.generator = nlohmann::json{{"kind", kind}, {"seed", seed}, {"options", o.effective()}};
  b.t.source = "<generated " + kind + ">";
  // The order parse_trace gives: parents first, stable by depth.
  const auto depth = [](const CgroupSpec& c) { return std::count(c.path.begin(), c.path.end(), '/'); };
  std::stable_sort(b.t.cgroups.begin(), b.t.cgroups.end(),
                   [&](const CgroupSpec& x, const CgroupSpec& y) { return depth(x) < depth(y); });
  validate(b.t);
  return std::move(b.t);
}

const std::vector<OptSpec> kHogsSpec = {
    {"cpus", "2", "CPUs of the machine"},
    {"duration", "10s", "length of the run; each hog runs this much CPU"},
    {"weights", "100,200,300", "cpu.weight of /hog-0, /hog-1, ..."},
    {"tasks-per-group", "", "hogs per group (default: cpus)"},
    {"cpu-max", "max", "QUOTA_US,PERIOD_US applied to every group, or max"}};

Trace gen_hogs(std::uint64_t seed, const std::map<std::string, std::string>& given) {
  Options o("hogs", kHogsSpec, given);
  const auto cpus = static_cast<std::uint32_t>(o.count("cpus", 1, 4096));
  const std::uint64_t duration = o.duration("duration", kMs, kMaxDuration);
  HogParams p{o.weights("weights"), o.count("tasks-per-group", 1, 100000, cpus), o.cpu_max("cpu-max"), duration,
              "/hog-"};
  Builder b;
  add_hogs(b, p);
  return finish(b, o, "hogs", seed, cpus, duration,
                "CPU-bound hogs in sibling cgroups with different cpu.weight: checks proportional sharing");
}

const std::vector<OptSpec> kStormSpec = {
    {"cpus", "4", "CPUs of the machine"},
    {"duration", "10s", "length of the run"},
    {"storm-rate", "500", "forks per second during the storm"},
    {"storm-start", "2s", "when the storm starts"},
    {"storm-length", "5s", "how long the storm lasts"},
    {"child-run", "lognormal:8ms:0.5", "CPU time of each storm child"},
    {"victim-tool-ms", "150", "CPU ms of each of the victim's workers per tool call"},
    {"victim-workers", "", "workers the victim forks per tool call (default: cpus)"},
    {"victim-think", "uniform:50ms:200ms", "the victim's think time between tool calls"}};

Trace gen_fork_storm(std::uint64_t seed, const std::map<std::string, std::string>& given) {
  Options o("fork-storm", kStormSpec, given);
  const auto cpus = static_cast<std::uint32_t>(o.count("cpus", 1, 4096));
  const std::uint64_t duration = o.duration("duration", kMs, kMaxDuration);
  StormParams sp{o.count("storm-rate", 0, 1000000), o.duration("storm-start", 0, kMaxDuration),
                 o.duration("storm-length", 0, kMaxDuration), o.dist("child-run")};
  const std::uint64_t tool_ms = o.count("victim-tool-ms", 1, 3600 * 1000);
  const std::uint64_t workers = o.count("victim-workers", 1, 100000, cpus);
  const Value think = o.dist("victim-think");
  Builder b;
  add_victim(b, workers, tool_ms * kMs, think, duration);
  add_storm(b, sp);
  return finish(b, o, "fork-storm", seed, cpus, duration,
                "an interactive agent in /victim (tool calls fork one CPU-bound worker per CPU) while /storm forks "
                "short-lived children at a high rate; equal cpu.weight");
}

const std::vector<OptSpec> kIoSpec = {
    {"cpus", "2", "CPUs of the machine"},
    {"duration", "10s", "length of the run"},
    {"io-tasks", "4", "I/O-bound tasks in /io"},
    {"hogs", "", "CPU hogs in /batch (default: 2 x cpus)"},
    {"io-run", "uniform:200us:400us", "CPU burst between I/Os"},
    {"io-wait", "exp:4ms", "I/O wait"}};

Trace gen_io(std::uint64_t seed, const std::map<std::string, std::string>& given) {
  Options o("io", kIoSpec, given);
  const auto cpus = static_cast<std::uint32_t>(o.count("cpus", 1, 4096));
  const std::uint64_t duration = o.duration("duration", kMs, kMaxDuration);
  IoParams p{o.count("io-tasks", 0, 100000), Value{}, Value{}, duration};
  const std::uint64_t hogs = o.count("hogs", 0, 100000, 2ull * cpus);
  p.run_ns = o.dist("io-run");
  p.wait_ns = o.dist("io-wait");
  sim::RandomStream rng(seed, "io");
  Builder b;
  add_io(b, rng, p);
  add_batch(b, hogs, duration);
  return finish(b, o, "io", seed, cpus, duration,
                "I/O-bound tasks in /io (short CPU bursts between I/O waits) against CPU hogs in /batch: checks "
                "wakeup latency of I/O-bound groups");
}

const std::vector<OptSpec> kAgentSpec = {
    {"cpus", "4", "CPUs of the machine"},
    {"duration", "60s", "length of the run"},
    {"sessions", "8", "agent sessions, each in /agents/session-N"},
    {"stagger", "10s", "session starts are spread over this window"},
    {"think", "lognormal:3s:0.5", "LLM think time before each tool call"},
    {"memory-high", "1GiB", "memory.high of each session (or max)"},
    {"memory-max", "4GiB", "memory.max of each session (or max)"},
    {"baseline-mem", "185MiB", "the agent process's own memory"}};

AgentParams agent_params(Options& o, std::uint64_t duration, std::uint64_t derived_sessions) {
  AgentParams p;
  p.duration_ns = duration;
  p.sessions = o.count("sessions", 0, 100000, derived_sessions);
  p.stagger_ns = o.duration("stagger", 0, kMaxDuration);
  p.think = o.dist("think");
  p.memory_high = o.size("memory-high");
  p.memory_max = o.size("memory-max");
  const auto base = o.size("baseline-mem");
  p.baseline_bytes = base.value_or(185 * kMiB);
  if (p.memory_high && p.memory_max && *p.memory_high > *p.memory_max)
    bad_option(o.kind(), "memory-high", o.raw("memory-high"), "a size <= --memory-max (" + o.raw("memory-max") + ")");
  return p;
}

Trace gen_agent(std::uint64_t seed, const std::map<std::string, std::string>& given) {
  Options o("agent", kAgentSpec, given);
  const auto cpus = static_cast<std::uint32_t>(o.count("cpus", 1, 4096));
  const std::uint64_t duration = o.duration("duration", kMs, kMaxDuration);
  const AgentParams p = agent_params(o, duration, 8);
  sim::RandomStream rng(seed, "agent");
  Builder b;
  add_agents(b, rng, p);
  return finish(b, o, "agent", seed, cpus, duration,
                "AI coding-agent sessions: think (LLM) sleeps, then tool calls that fork bash and its children "
                "(reads, edits, test runs, builds) with CPU, I/O and memory bursts");
}

const std::vector<OptSpec> kMixedSpec = {
    {"cpus", "8", "CPUs of the machine"},
    {"duration", "30s", "length of the run"},
    {"sessions", "", "agent sessions (default: cpus / 2)"},
    {"stagger", "5s", "session starts are spread over this window"},
    {"think", "lognormal:3s:0.5", "LLM think time before each tool call"},
    {"memory-high", "1GiB", "memory.high of each session (or max)"},
    {"memory-max", "4GiB", "memory.max of each session (or max)"},
    {"baseline-mem", "185MiB", "the agent process's own memory"},
    {"storm-rate", "", "forks per second of /storm (default: 25 x cpus)"},
    {"storm-start", "5s", "when the storm starts"},
    {"storm-length", "10s", "how long the storm lasts"},
    {"child-run", "lognormal:8ms:0.5", "CPU time of each storm child"},
    {"io-tasks", "", "I/O-bound tasks in /io (default: cpus / 2)"},
    {"io-run", "uniform:200us:400us", "CPU burst between I/Os"},
    {"io-wait", "exp:4ms", "I/O wait"},
    {"hogs", "", "CPU hogs in /batch (default: cpus / 4)"}};

Trace gen_mixed(std::uint64_t seed, const std::map<std::string, std::string>& given) {
  Options o("mixed", kMixedSpec, given);
  const auto cpus = static_cast<std::uint32_t>(o.count("cpus", 1, 4096));
  const std::uint64_t duration = o.duration("duration", kMs, kMaxDuration);
  const AgentParams ap = agent_params(o, duration, std::max<std::uint64_t>(1, cpus / 2));
  StormParams sp{o.count("storm-rate", 0, 1000000, 25ull * cpus), o.duration("storm-start", 0, kMaxDuration),
                 o.duration("storm-length", 0, kMaxDuration), o.dist("child-run")};
  IoParams ip{o.count("io-tasks", 0, 100000, std::max<std::uint64_t>(1, cpus / 2)), o.dist("io-run"),
              o.dist("io-wait"), duration};
  const std::uint64_t hogs = o.count("hogs", 0, 100000, cpus / 4);
  sim::RandomStream agent_rng(seed, "mixed/agent");
  sim::RandomStream io_rng(seed, "mixed/io");
  Builder b;
  add_agents(b, agent_rng, ap);
  add_storm(b, sp);
  add_io(b, io_rng, ip);
  add_batch(b, hogs, duration);
  return finish(b, o, "mixed", seed, cpus, duration,
                "agent sessions, a fork storm, I/O-bound tasks and CPU hogs on one machine");
}

const std::vector<OptSpec> kCrowdedSpec = {
    {"cpus", "8", "CPUs of the machine"},
    {"duration", "60s", "length of the run"},
    {"sessions", "", "agent sessions, each in /agents/session-N (default: 12 x cpus, a load of ~10x the CPUs)"},
    {"stagger", "10s", "session starts are spread over this window"},
    {"think", "lognormal:3s:0.5", "LLM think time before each tool call"},
    {"memory-high", "1GiB", "memory.high of each session (or max)"},
    {"memory-max", "4GiB", "memory.max of each session (or max)"},
    {"baseline-mem", "185MiB", "the agent process's own memory"},
    {"interactive", "1", "interactive shell tasks in /interactive (short bursts after long sleeps)"}};

Trace gen_crowded(std::uint64_t seed, const std::map<std::string, std::string>& given) {
  Options o("crowded", kCrowdedSpec, given);
  const auto cpus = static_cast<std::uint32_t>(o.count("cpus", 1, 4096));
  const std::uint64_t duration = o.duration("duration", kMs, kMaxDuration);
  const AgentParams p = agent_params(o, duration, 12ull * cpus);
  const std::uint64_t interactive = o.count("interactive", 0, 1000);
  sim::RandomStream rng(seed, "crowded");
  Builder b;
  add_agents(b, rng, p);
  add_interactive(b, interactive, duration);
  return finish(b, o, "crowded", seed, cpus, duration,
                "a crowded machine: many agent sessions (the agent kind's tool mix) on few CPUs, with an interactive "
                "shell beside them");
}

const std::vector<OptSpec> kBuildsSpec = {
    {"cpus", "4", "CPUs of the machine"},
    {"duration", "60s", "length of the run"},
    {"sessions", "4", "agent sessions that build and test, each in /agents/session-N"},
    {"stagger", "4s", "session starts are spread over this window"},
    {"think", "lognormal:1500ms:0.5", "LLM think time before each tool call"},
    {"memory-high", "max", "memory.high of each session (or max)"},
    {"memory-max", "max", "memory.max of each session (or max)"},
    {"baseline-mem", "185MiB", "the agent process's own memory"},
    {"jobs", "", "make -j JOBS: compiler children per wave (default: cpus)"},
    {"workers", "", "pytest -n WORKERS: test workers per suite (default: cpus)"},
    {"interactive", "1", "interactive shell tasks in /interactive (short bursts after long sleeps)"}};

Trace gen_builds(std::uint64_t seed, const std::map<std::string, std::string>& given) {
  Options o("builds", kBuildsSpec, given);
  const auto cpus = static_cast<std::uint32_t>(o.count("cpus", 1, 4096));
  const std::uint64_t duration = o.duration("duration", kMs, kMaxDuration);
  const AgentParams p = agent_params(o, duration, 4);
  const auto jobs = static_cast<std::uint32_t>(o.count("jobs", 1, 1024, cpus));
  const auto workers = static_cast<std::uint32_t>(o.count("workers", 1, 1024, cpus));
  const std::uint64_t interactive = o.count("interactive", 0, 1000);
  sim::RandomStream rng(seed, "builds");
  Builder b;
  add_build_sessions(b, rng, p, jobs, workers);
  add_interactive(b, interactive, duration);
  return finish(b, o, "builds", seed, cpus, duration,
                "agent sessions whose tool calls run builds (make -j fork fans) and test suites (pytest -n workers), "
                "with an interactive shell beside them");
}

struct Kind {
  const char* name;
  Trace (*fn)(std::uint64_t, const std::map<std::string, std::string>&);
  const std::vector<OptSpec>* spec;
  const char* summary;
};

const Kind kKinds[] = {
    {"agent", gen_agent, &kAgentSpec, "AI coding-agent sessions (think, tool calls, forks, memory bursts)"},
    {"fork-storm", gen_fork_storm, &kStormSpec, "a fork storm next to an interactive agent"},
    {"io", gen_io, &kIoSpec, "I/O-bound tasks against CPU hogs"},
    {"hogs", gen_hogs, &kHogsSpec, "CPU hogs in cgroups with different cpu.weight"},
    {"mixed", gen_mixed, &kMixedSpec, "agents + fork storm + I/O + hogs on one machine"},
    {"crowded", gen_crowded, &kCrowdedSpec, "many agent sessions on few CPUs (load ~10x) beside an interactive shell"},
    {"builds", gen_builds, &kBuildsSpec, "agent sessions running make -j and test suites beside an interactive shell"},
};

}  // namespace

Trace generate(const std::string& kind, std::uint64_t seed, const std::map<std::string, std::string>& options) {
  for (const Kind& k : kKinds)
    if (kind == k.name) return k.fn(seed, options);
  if (kind.rfind("gpu-", 0) == 0) {
    return gpu::generate_gpu_trace(kind, seed, options);
  }
  std::string list;
  std::vector<std::string> names;
  for (const Kind& k : kKinds) {
    list += std::string(list.empty() ? "" : ", ") + k.name;
    names.push_back(k.name);
  }
  list += ", gpu-* (see --help)";
  throw std::invalid_argument("unknown generator kind \"" + kind + "\"" + cli::did_you_mean(kind, names) +
                              "; expected one of: " + list);
}

std::vector<GeneratorKind> generator_kinds() {
  std::vector<GeneratorKind> out;
  for (const Kind& k : kKinds) {
    GeneratorKind g{k.name, k.summary, {}};
    for (const OptSpec& s : *k.spec) g.options.push_back({s.key, s.def, s.help});
    out.push_back(std::move(g));
  }
  for (GeneratorKind& g : gpu::gpu_generator_kinds()) out.push_back(std::move(g));
  return out;
}

std::string generator_help() {
  std::string out;
  for (const Kind& k : kKinds) {
    out += k.name;
    out += ": ";
    out += k.summary;
    out += "\n";
    for (const OptSpec& s : *k.spec) {
      out += "  --";
      out += s.key;
      out += " (default ";
      out += *s.def ? s.def : "derived";
      out += "): ";
      out += s.help;
      out += "\n";
    }
  }
  out +=
      "Durations: a number with a unit ns, us, ms, s, m or h (10s, 500ms, 2.5s). Distributions: a duration, or "
      "uniform:MIN:MAX, exp:MEAN[:CAP], lognormal:MEDIAN:SIGMA[:CAP]. Sizes: bytes, K/M/G/T or KiB/MiB/GiB/TiB "
      "(binary), kB/MB/GB/TB (SI), or max.\n";
  out += gpu::gpu_generator_help();
  return out;
}

}  // namespace agentcg::trace
