// SPDX-License-Identifier: GPL-2.0-only
// agentcg-sim: the simulator's command line (the ./agentcg launcher runs it
// when the Python extension is not built; the Python CLI wraps the same
// entry points). Parsed with CLI11 through config/cli.h, as every agentcg
// C++ binary: `--help` on every (sub)command, `--version`, exit 2 on a
// usage error naming the flag, a did-you-mean for unknown options,
// commands and policy names.
//   run TRACE [--policy P] [--gpu-policy G] [--config F] [--machine PROFILE] [--seed N] --out DIR [--perfetto F] [--json]
//   compare TRACE [--policies a,b,c] [--gpu-policy G] [--config F] [--machine PROFILE] [--seed N] --out DIR [--json]
//   trace generate|validate|convert|import|stats|merge|mix ...   calibrate ...   policies
// run and compare write DIR[/POLICY]/results.json and, beside it,
// histograms.json (sim/metrics.h dump_histograms: the machine's and every
// cgroup's latency histograms, the samples behind the CDF plots).
// The trace subcommands and calibrate keep their argument handling in the
// libraries (sim/trace/trace_commands.cc, sim/import/commands.cc,
// sim/calibrate), which the Python CLI calls too; CLI11 here lists them and
// hands them everything after their name.
// eevdf (the kernel's default since 6.6) is the default and the baseline;
// cfs is the pre-6.6 reference. This binary is the engine: it prints no
// table of its own. The one definition of the results table is
// python/agentcg/table.py (pure Python, no extension needed): the ./agentcg
// launcher pipes `run|compare --json` into `python3 -m agentcg.table -`
// when the extension is not built, and the Python CLI prints it otherwise.
// Exit codes: 0 ok, 1 invalid input (trace, config), 2 usage error.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
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

// The results table is python/agentcg/table.py's (see the top comment).
constexpr const char* kTableHint = "the table: PYTHONPATH=python python3 -m agentcg.table ";

// What run and compare share on their command lines.
struct RunArgs {
  std::string trace, out, config, machine, strategies, gpu_policy = "none";
  std::uint64_t seed = 1;
  bool json = false, quiet = false;
};

void add_run_options(CLI::App& c, RunArgs& a) {
  c.add_option("TRACE", a.trace, "the trace (agentcg JSON or its binary form; see trace generate / trace import / trace convert)")
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
    std::cout << "wrote " << (out / "results.json").string() << " and histograms.json\n"
              << kTableHint << out.string() << "\n";
  }
  return 0;
}

int cmd_compare(const RunArgs& a, const std::vector<std::string>& policies) {
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
  for (const auto& p : policies) std::cout << "wrote " << (out / p / "results.json").string() << " and histograms.json\n";
  std::cout << kTableHint << out.string() << "\n";
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
  CLI::App* compare = app.add_subcommand(
      "compare", "simulate TRACE under several policies; writes DIR/POLICY/results.json (./agentcg compare prints the table)");
  add_run_options(*compare, cmp_args);
  compare->add_option("--policies", policies, "comma-separated CPU policies (eevdf is the baseline)")
      ->delimiter(',')
      ->type_name("LIST")
      ->check(agentcg::cli::one_of("CPU policy", cpu_policies))
      ->capture_default_str();

  CLI::App* trace = app.add_subcommand("trace", "make, import, check and describe traces");
  trace->require_subcommand(1);
  std::vector<std::string> rest;
  CLI::App* generate = pass_through(*trace, "generate", "KIND --seed N -o FILE [--OPTION VALUE ...]: a synthetic trace "
                                                        "(trace generate --help: the kinds)", rest);
  CLI::App* validate = pass_through(*trace, "validate", "[--policy P] FILE...: every check run makes", rest);
  CLI::App* convert = pass_through(*trace, "convert", "IN OUT: JSON <-> the binary form (loads faster)", rest);
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
    if (*compare) return cmd_compare(cmp_args, policies);
    if (*generate) return trace_generate_main(rest);
    if (*validate) return trace_validate_main(rest);
    if (*convert) return trace_convert_main(rest);
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
