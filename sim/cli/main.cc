// SPDX-License-Identifier: GPL-2.0-only
// agentcg-sim: the simulator's command line (the ./agentcg launcher runs it,
// or the Python CLI that wraps the same entry points).
//   run TRACE [--policy P] [--gpu-policy G] [--config F] [--machine PROFILE] [--seed N] --out DIR [--perfetto F] [--json]
//   compare TRACE [--policies a,b,c] [--gpu-policy G] [--config F] [--machine PROFILE] [--seed N] --out DIR [--json]
//   trace generate|validate|import|stats|merge ...
//   policies, --version
// eevdf (the kernel's default since 6.6) is the default and the baseline;
// cfs is the pre-6.6 reference. The table follows the Python CLI's rules
// (python/agentcg/table.py, the full version with repetitions and
// verdicts): the longest runnable wait always, flagged "!" from 1 s; rows
// that do not apply left out; "-" for a missing value, never 0.
// Exit codes: 0 ok, 1 invalid input (trace, config), 2 usage error.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "config/config.h"
#include "sim/api.h"
#include "sim/args.h"
#include "sim/trace/trace.h"
#include "sim/cli/trace_cmd.h"
#include "sim/cli/import_cmd.h"
#include "sim/calibrate/calibrate.h"
#include "sim/calibrate/profile.h"

#ifndef AGENTCG_VERSION
#define AGENTCG_VERSION "unknown"
#endif

namespace fs = std::filesystem;
using agentcg::cli::Args;
using agentcg::cli::UsageError;
using nlohmann::json;

namespace {

constexpr const char* kUsage =
    "usage: agentcg <command> [options]\n"
    "commands:\n"
    "  run TRACE [--policy eevdf] [--gpu-policy G] [--config FILE] [--machine PROFILE] [--strategies FILE] [--seed N] --out DIR [--perfetto FILE] [--json]\n"
    "  compare TRACE [--policies eevdf,flatcg,agentcg] [--gpu-policy G] [--config FILE] [--machine PROFILE] [--strategies FILE] [--seed N] --out DIR [--json]\n"
    "          [--per-cgroup]   (per-cgroup rows; shown by default up to 12 cgroups)\n"
    "      CPU policies: eevdf (default since Linux 6.6, the baseline), cfs (pre-6.6 reference), fifo,\n"
    "      flatcg, agentcg; repetitions with intervals and verdicts: the Python CLI's compare --seeds\n"
    "  trace generate KIND --seed N -o FILE [--OPTION VALUE ...]\n"
    "  trace validate FILE...\n"
    "  trace import --from FORMAT INPUT -o OUT | trace stats FILE | trace merge A B ... -o OUT\n"
    "  trace mix RECORDING... -o OUT [--sessions N] [--cpus M] [--stagger DUR] [--duration DUR]\n"
    "  calibrate MEASUREMENTS.csv -o PROFILE.yaml [--fix-context-switch-ns N] [--cpus N]\n"
    "  policies            list the CPU and GPU policies\n"
    "  --version           print the version\n";

constexpr std::uint64_t kStarvationNs = 1000000000;  // as table.STARVATION_NS

std::string ms(std::uint64_t ns) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(ns < 10000000 ? 3 : 1) << static_cast<double>(ns) / 1e6;
  return o.str();
}
std::string pct(double v) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(1) << v * 100 << "%";
  return o.str();
}

agentcg::sim::RunOptions options_from(const Args& a) {
  agentcg::sim::RunOptions o;
  if (auto c = a.get("config")) o.config = agentcg::config::load_file(*c);
  // a fitted machine profile (sim/calibrate/profile.h) wins over --config's machine keys
  if (auto m = a.get("machine")) agentcg::calibrate::apply_profile(agentcg::calibrate::load_profile(*m), o.config.machine);
  if (auto s = a.get("strategies")) o.strategies = agentcg::strategy::load_file(*s);
  o.seed = a.get_u64("seed", 1);
  o.gpu_policy = a.get("gpu-policy").value_or("none");
  return o;
}

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  const fs::path tmp = p.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) throw std::runtime_error(p.string() + ": cannot write");
  }
  fs::rename(tmp, p);  // never leave a half-written results file
}

void print_summary(const json& r) {
  std::cout << "trace " << r["trace"].get<std::string>() << "  policy " << r["policy"].get<std::string>()
            << "  cpus " << r["cpus"] << "  simulated " << ms(r["duration_ns"]) << " ms\n";
  const std::uint64_t wait = r.value("max_runnable_wait_ns", std::uint64_t{0});
  std::cout << "  wakeup latency p50 " << ms(r["wakeup_latency_ns"]["p50"]) << " ms  p99 "
            << ms(r["wakeup_latency_ns"]["p99"]) << " ms  max " << ms(r["wakeup_latency_ns"]["max"])
            << " ms;  longest runnable wait " << ms(wait) << " ms" << (wait >= kStarvationNs ? " (starved)" : "");
  if (r["tool_call_latency_ns"].value("count", std::uint64_t{0}) > 0)
    std::cout << ";  tool-call p50 " << ms(r["tool_call_latency_ns"]["p50"]) << " ms  p99 "
              << ms(r["tool_call_latency_ns"]["p99"]) << " ms";
  std::cout << "\n";
  std::cout << "  context switches " << r["context_switches"] << "  utilisation "
            << pct(r["cpu_utilization"]) << "  Jain (vs full entitlement) " << r["jain_fairness"] << "\n";
  std::cout << "  " << std::left << std::setw(28) << "cgroup" << std::right << std::setw(8) << "share"
            << std::setw(10) << "entitled" << std::setw(11) << "wake p50" << std::setw(11) << "wake p99"
            << std::setw(11) << "tool p99" << std::setw(12) << "throttled" << "\n";
  for (const auto& [path, c] : r["cgroups"].items()) {
    if (path != "/" && c["tasks"] == 0 && c["cpu_time_ns"] == 0) continue;
    std::cout << "  " << std::left << std::setw(28) << path << std::right << std::setw(8)
              << pct(c["cpu_share"]) << std::setw(10) << pct(c["entitled_share"]) << std::setw(11)
              << ms(c["wakeup_latency_ns"]["p50"]) << std::setw(11) << ms(c["wakeup_latency_ns"]["p99"])
              << std::setw(11)
              << (c["tool_call_latency_ns"].value("count", std::uint64_t{0}) > 0 ? ms(c["tool_call_latency_ns"]["p99"])
                                                                                  : std::string("-"))
              << std::setw(12)
              << ms(c["throttled_ns"]) << "\n";
  }
  if (r.contains("gpu")) {
    const auto& g = r["gpu"];
    std::cout << "  gpu (" << r["gpu_policy"].get<std::string>() << "): makespan "
              << ms(g.value("makespan_ns", std::uint64_t{0})) << " ms  switches " << g.value("switches", std::uint64_t{0})
              << "  migrated " << g.value("bytes_migrated", std::uint64_t{0}) << " B\n";
  }
}

int cmd_run(const std::vector<std::string>& argv) {
  Args a(argv, {"policy", "gpu-policy", "config", "machine", "seed", "out", "perfetto", "strategies"}, {"quiet", "json"});
  if (a.positional().size() != 1) throw UsageError("run takes exactly one TRACE");
  auto o = options_from(a);
  o.policy = a.get("policy").value_or("eevdf");
  o.perfetto_path = a.get("perfetto").value_or("");
  const fs::path out = a.require("out");
  const auto trace = agentcg::trace::load_trace_file(a.positional()[0]);
  const json r = agentcg::sim::run(trace, o);
  const std::string text = agentcg::sim::dump_results(r);
  write_file(out / "results.json", text);
  if (a.flag("json")) {
    std::cout << text << (text.empty() || text.back() != '\n' ? "\n" : "");
  } else if (!a.flag("quiet")) {
    print_summary(r);
    std::cout << "wrote " << (out / "results.json").string() << "\n";
  }
  return 0;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    if (!x.empty()) v.push_back(x);
  return v;
}

int cmd_compare(const std::vector<std::string>& argv) {
  Args a(argv, {"policies", "gpu-policy", "config", "machine", "seed", "out", "strategies"}, {"quiet", "json", "per-cgroup"});
  if (a.positional().size() != 1) throw UsageError("compare takes exactly one TRACE");
  const auto base = options_from(a);
  const auto policies = split(a.get("policies").value_or("eevdf,flatcg,agentcg"));
  if (policies.empty()) throw UsageError("--policies: expected a comma-separated list");
  const fs::path out = a.require("out");
  const auto trace = agentcg::trace::load_trace_file(a.positional()[0]);
  std::vector<json> results;
  for (const auto& p : policies) {
    auto o = base;
    o.policy = p;
    results.push_back(agentcg::sim::run(trace, o));
    write_file(out / p / "results.json", agentcg::sim::dump_results(results.back()));
  }
  if (a.flag("json")) {  // the results of every policy, keyed by policy
    json doc = {{"format", "agentcg-compare-results"}, {"version", 1}, {"trace", trace.name},
                {"seed", base.seed}, {"policies", policies}, {"results", json::object()}};
    for (std::size_t i = 0; i < policies.size(); ++i) doc["results"][policies[i]] = results[i];
    std::cout << doc.dump(1) << "\n";
    return 0;
  }
  if (a.flag("quiet")) return 0;
  // Side-by-side table: one row per metric, one column per policy.
  std::cout << "trace " << trace.name << " (" << trace.machine.cpus << " CPUs, seed " << base.seed << ")\n";
  std::cout << std::left << std::setw(44) << "metric" << std::right;
  for (const auto& p : policies) std::cout << std::setw(12) << p;
  std::cout << "\n";
  auto row = [&](const std::string& name, auto&& cell) {
    std::cout << std::left << std::setw(44) << name << std::right;
    for (const auto& r : results) std::cout << std::setw(12) << cell(r);
    std::cout << "\n";
  };
  bool cpu = false, tools = false;
  for (const auto& r : results) {
    cpu = cpu || r.value("tasks", std::uint64_t{0}) > 0;
    tools = tools || r["tool_call_latency_ns"].value("count", std::uint64_t{0}) > 0;
  }
  if (!cpu) {  // a GPU-only trace: no CPU rows of zeros
    std::cout << "no CPU tasks in this trace: see DIR/<policy>/results.json \"gpu\" or the Python CLI's table\n";
    return 0;
  }
  row("wakeup p50 (ms)", [](const json& r) { return ms(r["wakeup_latency_ns"]["p50"]); });
  row("wakeup p99 (ms)", [](const json& r) { return ms(r["wakeup_latency_ns"]["p99"]); });
  bool starved = false;
  row("longest runnable wait (ms)", [&](const json& r) {
    const std::uint64_t w = r.value("max_runnable_wait_ns", std::uint64_t{0});
    starved = starved || w >= kStarvationNs;
    return ms(w) + (w >= kStarvationNs ? " !" : "");
  });
  if (tools) {
    row("tool-call p50 (ms)", [](const json& r) { return ms(r["tool_call_latency_ns"]["p50"]); });
    row("tool-call p99 (ms)", [](const json& r) { return ms(r["tool_call_latency_ns"]["p99"]); });
    row("tool calls completed", [](const json& r) { return std::to_string(r.value("tool_calls_completed", std::uint64_t{0})); });
  }
  if (results.front().contains("interactive_wakeup_latency_ns")) {
    row("interactive wakeup p50 (ms)", [](const json& r) { return ms(r["interactive_wakeup_latency_ns"]["p50"]); });
    row("interactive wakeup p99 (ms)", [](const json& r) { return ms(r["interactive_wakeup_latency_ns"]["p99"]); });
  }
  // The policy's new-step detector against the annotated steps ("-": the
  // policy has no detector, or the trace no annotated steps).
  auto frac = [](const json& r, const char* key) -> std::string {
    if (!r.contains("new_step_detection") || r["new_step_detection"][key].is_null()) return "-";
    std::ostringstream o;
    o << std::fixed << std::setprecision(3) << r["new_step_detection"][key].get<double>();
    return o.str();
  };
  row("new-step precision", [&](const json& r) { return frac(r, "precision"); });
  row("new-step recall", [&](const json& r) { return frac(r, "recall"); });
  row("context switches", [](const json& r) { return std::to_string(r["context_switches"].get<std::uint64_t>()); });
  row("Jain (vs full entitlement)", [](const json& r) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(3) << r["jain_fairness"].get<double>();
    return o.str();
  });
  // Aggregate rows over the cgroups that made tool calls (the sessions):
  // the median and the worst of their own tool-call p99 (readable at 100
  // sessions, where per-cgroup rows need --per-cgroup).
  auto session_p99 = [](const json& r) {
    std::vector<std::uint64_t> v;
    for (const auto& [path, c] : r["cgroups"].items())
      if (c["tasks"] != 0 && c["tool_call_latency_ns"]["count"] != 0)
        v.push_back(c["tool_call_latency_ns"]["p99"].get<std::uint64_t>());
    std::sort(v.begin(), v.end());
    return v;
  };
  if (tools && session_p99(results.front()).size() > 1) {
    row("sessions with tool calls", [&](const json& r) { return std::to_string(session_p99(r).size()); });
    row("per-session tool-call p99: median (ms)", [&](const json& r) {
      const auto v = session_p99(r);
      return v.empty() ? std::string("-") : ms(v[v.size() / 2]);
    });
    row("per-session tool-call p99: worst (ms)", [&](const json& r) {
      const auto v = session_p99(r);
      return v.empty() ? std::string("-") : ms(v.back());
    });
  }
  for (const auto& [path, c] : results.front()["cgroups"].items()) {
    if (path == "/" || c["tasks"] == 0) continue;
    // many sessions: per-cgroup rows only on request
    if (results.front()["cgroups"].size() > 12 && !a.flag("per-cgroup")) break;
    row(path + " share / entitled", [&, p = path](const json& r) {
      const auto& x = r["cgroups"][p];
      std::string entitled = pct(x["entitled_share"]);
      entitled.pop_back();  // one "%" per cell is enough
      return pct(x["cpu_share"]) + "/" + entitled;
    });
    row(path + " wakeup p99 (ms)", [&, p = path](const json& r) { return ms(r["cgroups"][p]["wakeup_latency_ns"]["p99"]); });
    if (c["tool_call_latency_ns"]["count"] != 0) {
      row(path + " tool-call p50 (ms)", [&, p = path](const json& r) { return ms(r["cgroups"][p]["tool_call_latency_ns"]["p50"]); });
      row(path + " tool-call p99 (ms)", [&, p = path](const json& r) { return ms(r["cgroups"][p]["tool_call_latency_ns"]["p99"]); });
    }
    if (c["nr_periods"] != 0)
      row(path + " throttled (ms)", [&, p = path](const json& r) { return ms(r["cgroups"][p]["throttled_ns"]); });
  }
  if (starved) std::cout << "! = a task waited runnable 1 s or more (starvation)\n";
  std::cout << "wrote " << out.string() << "/<policy>/results.json\n";
  return 0;
}

int cmd_trace(const std::vector<std::string>& argv) {
  if (argv.empty()) throw UsageError("trace needs a subcommand: generate, validate, import, stats, merge, mix");
  const std::string sub = argv[0];
  const std::vector<std::string> rest(argv.begin() + 1, argv.end());
  if (sub == "generate") return trace_generate_main(rest);
  if (sub == "validate") return trace_validate_main(rest);
  if (sub == "import") return trace_import_main(rest);
  if (sub == "stats") return trace_stats_main(rest);
  if (sub == "merge") return trace_merge_main(rest);
  if (sub == "mix") return trace_mix_main(rest);
  throw UsageError("unknown trace subcommand '" + sub + "'");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    std::cout << "agentcg-sim " << AGENTCG_VERSION << "\n";
    return 0;
  }
  const std::string cmd = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (cmd == "run") return cmd_run(rest);
    if (cmd == "compare") return cmd_compare(rest);
    if (cmd == "trace") return cmd_trace(rest);
    if (cmd == "calibrate") return agentcg::calibrate::calibrate_command(rest, std::cout, std::cerr);
    if (cmd == "policies") {
      for (const auto& p : agentcg::sim::cpu_policies()) std::cout << "cpu " << p << "\n";
      for (const auto& p : agentcg::sim::gpu_policies()) std::cout << "gpu " << p << "\n";
      return 0;
    }
    throw UsageError("unknown command '" + cmd + "'");
  } catch (const UsageError& e) {
    std::cerr << "agentcg: " << e.what() << "\n" << kUsage;
    return 2;
  } catch (const agentcg::trace::TraceError& e) {
    std::cerr << "agentcg: " << e.what() << "\n";
    return 1;
  } catch (const agentcg::config::ConfigError& e) {
    std::cerr << "agentcg: " << e.what() << "\n";
    return 1;
  } catch (const std::invalid_argument& e) {
    std::cerr << "agentcg: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "agentcg: error: " << e.what() << "\n";
    return 1;
  }
}
