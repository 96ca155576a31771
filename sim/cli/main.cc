// SPDX-License-Identifier: GPL-2.0-only
// agentcg-sim: the simulator's command line (the ./agentcg launcher runs it
// when the Python extension is not built; the Python CLI wraps the same
// entry points). Parsed with CLI11 through config/cli.h, as every agentcg
// C++ binary: `--help` on every (sub)command, `--version`, exit 2 on a
// usage error naming the flag, a did-you-mean for unknown options,
// commands and policy names.
//   run TRACE [--policy P] [--gpu-policy G] [--config F] [--machine PROFILE] [--seed N] --out DIR [--perfetto F] [--json]
//   compare TRACE [--policies a,b,c] [--gpu-policy G] [--config F] [--machine PROFILE] [--seed N] --out DIR [--json]
//   trace generate|validate|import|stats|merge|mix ...   calibrate ...   policies
// run and compare write DIR[/POLICY]/results.json and, beside it,
// histograms.json (sim/metrics.h dump_histograms: the machine's and every
// cgroup's latency histograms, the samples behind the CDF plots).
// The trace subcommands and calibrate keep their argument handling in the
// libraries (sim/trace/trace_commands.cc, sim/import/commands.cc,
// sim/calibrate), which the Python CLI calls too; CLI11 here lists them and
// hands them everything after their name.
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

#include "config/cli.h"
#include "config/config.h"
#include "sim/api.h"
#include "sim/args.h"
#include "sim/trace/trace.h"
#include "sim/cli/trace_cmd.h"
#include "sim/cli/import_cmd.h"
#include "sim/calibrate/calibrate.h"
#include "sim/calibrate/profile.h"
#include "sim/gpu/gpu_sim.h"

namespace fs = std::filesystem;
using agentcg::cli::UsageError;
using nlohmann::json;

namespace {

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

// What run and compare share on their command lines.
struct RunArgs {
  std::string trace, out, config, machine, strategies, gpu_policy = "none";
  std::uint64_t seed = 1;
  bool json = false, quiet = false;
};

void add_run_options(CLI::App& c, RunArgs& a) {
  c.add_option("TRACE", a.trace, "the trace (agentcg JSON; see trace generate / trace import)")
      ->required()
      ->type_name("FILE");
  c.add_option("-o,--out", a.out, "output directory")->required()->type_name("DIR");
  c.add_option("--gpu-policy", a.gpu_policy, "GPU policy (GPU traces only)")
      ->check(agentcg::cli::one_of("GPU policy", agentcg::sim::gpu_policies()))
      ->type_name("POLICY")
      ->capture_default_str();
  c.add_option("--config", a.config, "YAML config: scheduler, machine, cfs, gpu keys (README.md, \"Configuration\")")
      ->type_name("FILE");
  c.add_option("--machine", a.machine, "a fitted machine profile (calibrate); wins over --config's machine keys")
      ->type_name("PROFILE");
  c.add_option("--strategies", a.strategies, "seed 001 strategies (JSON) for flatcg/agentcg")->type_name("FILE");
  c.add_option("--seed", a.seed, "random seed (same seed, same bytes)")
      ->check(agentcg::cli::non_negative_integer())
      ->capture_default_str();
  c.add_flag("--json", a.json, "print the results as JSON on stdout instead of the table");
  c.add_flag("-q,--quiet", a.quiet, "print nothing (the files are still written)");
}

agentcg::sim::RunOptions options_from(const RunArgs& a, const agentcg::trace::Trace& trace) {
  agentcg::sim::RunOptions o;
  if (!a.config.empty()) o.config = agentcg::config::load_file(a.config);
  // a fitted machine profile (sim/calibrate/profile.h) wins over --config's machine keys
  if (!a.machine.empty())
    agentcg::calibrate::apply_profile(agentcg::calibrate::load_profile(a.machine), o.config.machine);
  if (!a.strategies.empty()) o.strategies = agentcg::strategy::load_file(a.strategies);
  o.seed = a.seed;
  o.gpu_policy = a.gpu_policy;
  // as the Python CLI: a GPU policy on a trace without GPU jobs would do
  // nothing, silently
  if (o.gpu_policy != "none" && !agentcg::sim::gpu::trace_has_gpu(trace))
    throw UsageError("--gpu-policy " + o.gpu_policy + ": " + a.trace +
                     " has no GPU jobs (no 'gpu' section); leave the flag out or use a GPU trace "
                     "(trace generate gpu-oversub ...)");
  o.histograms = true;  // histograms.json
  o.cgroup_histograms = true;
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

// results.json (exact bytes of the Python CLI's) and histograms.json beside it.
json run_and_write(const agentcg::trace::Trace& trace, const agentcg::sim::RunOptions& o, const fs::path& dir) {
  json r = agentcg::sim::run(trace, o);
  const std::string histograms = agentcg::sim::dump_histograms(r["histograms"]);
  r.erase("histograms");
  write_file(dir / "results.json", agentcg::sim::dump_results(r));
  write_file(dir / "histograms.json", histograms);
  return r;
}

int cmd_run(const RunArgs& a, const std::string& policy, const std::string& perfetto) {
  const auto trace = agentcg::trace::load_trace_file(a.trace);
  auto o = options_from(a, trace);
  o.policy = policy;
  o.perfetto_path = perfetto;
  const fs::path out = a.out;
  const json r = run_and_write(trace, o, out);
  if (a.json) {
    std::cout << agentcg::sim::dump_results(r);
  } else if (!a.quiet) {
    print_summary(r);
    std::cout << "wrote " << (out / "results.json").string() << " and histograms.json\n";
  }
  return 0;
}

int cmd_compare(const RunArgs& a, const std::vector<std::string>& policies, bool per_cgroup) {
  const auto trace = agentcg::trace::load_trace_file(a.trace);
  const auto base = options_from(a, trace);
  const fs::path out = a.out;
  std::vector<json> results;
  for (const auto& p : policies) {
    auto o = base;
    o.policy = p;
    results.push_back(run_and_write(trace, o, out / p));
  }
  if (a.json) {  // the results of every policy, keyed by policy
    json doc = {{"format", "agentcg-compare-results"}, {"version", 1}, {"trace", trace.name},
                {"seed", base.seed}, {"policies", policies}, {"results", json::object()}};
    for (std::size_t i = 0; i < policies.size(); ++i) doc["results"][policies[i]] = results[i];
    std::cout << doc.dump(1) << "\n";
    return 0;
  }
  if (a.quiet) return 0;
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
    if (results.front()["cgroups"].size() > 12 && !per_cgroup) break;
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
  std::cout << "wrote " << out.string() << "/<policy>/results.json and histograms.json\n";
  return 0;
}

// A subcommand whose arguments a library parses (the Python CLI calls the
// same function): CLI11 lists it and hands it everything after its name,
// --help included (the library prints its own usage).
CLI::App* pass_through(CLI::App& parent, const std::string& name, const std::string& help,
                       std::vector<std::string>& args) {
  CLI::App* c = parent.add_subcommand(name, help);
  c->set_help_flag();  // the library's --help
  c->prefix_command();
  c->allow_extras();
  c->callback([c, &args] { args = c->remaining(); });
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"agentcg's deterministic scheduling simulator: run a trace under a CPU (and GPU) policy, "
               "compare policies side by side, make, import and check traces.\n"
               "eevdf (Linux's default since 6.6) is the default policy and the baseline; "
               "more with repetitions, verdicts and plots: the Python CLI (./agentcg).",
               "agentcg-sim"};
  agentcg::cli::setup(app);
  app.require_subcommand(1);
  const auto cpu_policies = agentcg::sim::cpu_policies();

  RunArgs run_args;
  std::string policy = "eevdf", perfetto;
  CLI::App* run = app.add_subcommand("run", "simulate TRACE under one policy; writes DIR/results.json, histograms.json");
  add_run_options(*run, run_args);
  run->add_option("--policy", policy,
                  "CPU policy: eevdf (default since Linux 6.6, the baseline), cfs (pre-6.6), fifo, flatcg, agentcg")
      ->check(agentcg::cli::one_of("CPU policy", cpu_policies))
      ->type_name("POLICY")
      ->capture_default_str();
  run->add_option("--perfetto", perfetto,
                  "also write the schedule for ui.perfetto.dev: Chrome trace-event JSON, or for FILE.txt / "
                  "FILE.systrace ftrace text (sched_switch, sched_waking, a GPU track) that Perfetto imports "
                  "as a kernel capture")
      ->type_name("FILE");

  RunArgs cmp_args;
  std::vector<std::string> policies{"eevdf", "flatcg", "agentcg"};
  bool per_cgroup = false;
  CLI::App* compare = app.add_subcommand(
      "compare", "simulate TRACE under several policies, print them side by side; writes DIR/POLICY/results.json");
  add_run_options(*compare, cmp_args);
  compare->add_option("--policies", policies, "comma-separated CPU policies (eevdf is the baseline)")
      ->delimiter(',')
      ->type_name("LIST")
      ->check(agentcg::cli::one_of("CPU policy", cpu_policies))
      ->capture_default_str();
  compare->add_flag("--per-cgroup", per_cgroup, "per-cgroup rows also past 12 cgroups");

  CLI::App* trace = app.add_subcommand("trace", "make, import, check and describe traces");
  trace->require_subcommand(1);
  std::vector<std::string> rest;
  CLI::App* generate = pass_through(*trace, "generate", "KIND --seed N -o FILE [--OPTION VALUE ...]: a synthetic trace "
                                                        "(trace generate --help: the kinds)", rest);
  CLI::App* validate = pass_through(*trace, "validate", "[--policy P] FILE...: every check run makes", rest);
  CLI::App* import = pass_through(*trace, "import", "--from FORMAT INPUT -o OUT: a recording into a trace", rest);
  CLI::App* stats = pass_through(*trace, "stats", "FILE [--from FORMAT] [--replay]: describe a trace or recording",
                                 rest);
  CLI::App* merge = pass_through(*trace, "merge", "A B ... -o OUT: sessions side by side", rest);
  CLI::App* mix = pass_through(*trace, "mix", "RECORDING... -o OUT: many sessions from recordings", rest);
  CLI::App* calibrate = pass_through(app, "calibrate", "MEASUREMENTS.csv -o PROFILE.yaml: fit a machine profile",
                                     rest);
  CLI::App* list = app.add_subcommand("policies", "list the CPU and GPU policies");

  if (argc < 2) {  // no command: the list of commands, as a usage error
    std::cerr << app.help();
    return agentcg::cli::kUsageExit;
  }
  if (auto rc = agentcg::cli::parse(app, argc, argv)) return *rc;
  try {
    if (*run) return cmd_run(run_args, policy, perfetto);
    if (*compare) return cmd_compare(cmp_args, policies, per_cgroup);
    if (*generate) return trace_generate_main(rest);
    if (*validate) return trace_validate_main(rest);
    if (*import) return trace_import_main(rest);
    if (*stats) return trace_stats_main(rest);
    if (*merge) return trace_merge_main(rest);
    if (*mix) return trace_mix_main(rest);
    if (*calibrate) return agentcg::calibrate::calibrate_command(rest, std::cout, std::cerr);
    if (*list) {
      for (const auto& p : cpu_policies) std::cout << "cpu " << p << "\n";
      for (const auto& p : agentcg::sim::gpu_policies()) std::cout << "gpu " << p << "\n";
    }
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "agentcg-sim: error: " << e.what() << "\nRun agentcg-sim --help for the options.\n";
    return agentcg::cli::kUsageExit;
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
