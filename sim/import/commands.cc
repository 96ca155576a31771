// SPDX-License-Identifier: GPL-2.0-only
// `trace import`, `trace stats`, `trace merge` (see commands.h). Thin: parse
// arguments, call the importers / stats / merge, write the result, map
// errors to exit codes with a message naming file and line.
// Who calls it: sim/cli/import_cmd.cc, tests.
#include "sim/import/commands.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "core/units/units.h"
#include "sim/args.h"
#include "sim/calibrate/profile.h"
#include "sim/import/import.h"
#include "sim/import/merge.h"
#include "sim/import/mix.h"
#include "sim/import/replay_check.h"
#include "sim/import/stats.h"
#include "sim/trace/trace.h"
#include "sim/import/gpu_csv_import.h"

namespace agentcg::import {

namespace {

using cli::Args;
using cli::UsageError;

constexpr const char* kImportUsage =
    "usage: trace import --from FORMAT INPUT -o OUT [--strict] [--name NAME] [--cgroup PATH]\n"
    "                    [--cpus N] [--unsampled-as-run] [--only-cgroup PATH] [--unflagged-wakeups task]\n"
    "                    [--gpus N] [--gpu-mem-gb GIB]   (gpu-csv: the machine, default 1 x 16 GiB)\n"
    "  FORMAT: agentcgroup-ebpf (ebpf_trace.jsonl), agentcgroup-task (folder with resources.json\n"
    "          and tool_calls.json), ftrace (trace-cmd report / tracefs text), perf (perf script),\n"
    "          agentcg-record (folder written by agentcg-record), gpu-csv (GPU job CSV).\n"
    "          OUT '-' writes to stdout. --only-cgroup (agentcg-record): keep one cgroup subtree.\n"
    "  --unflagged-wakeups task (ftrace, perf): a wakeup on a line without latency flags is the\n"
    "          line's task's (default interrupt: nobody named as its waker).\n";
constexpr const char* kStatsUsage =
    "usage: trace stats FILE [--from FORMAT] [--json] [--strict]\n"
    "       trace stats CAPTURE --from ftrace|perf --replay [--policy eevdf] [--config FILE] [--machine PROFILE]\n"
    "                   [--seed N] [--json] [--unflagged-wakeups task] [--perfetto F]\n"
    "  FILE is an agentcg trace, or a recording when --from FORMAT is given. --replay replays a\n"
    "  scheduler capture in the simulator (the machine from --config's machine keys and a fitted\n"
    "  --machine profile, which wins; its CPU count unless machine.cpus is set) and prints the\n"
    "  capture's wakeup latency, task switches and CPU time next to the simulated ones;\n"
    "  --perfetto F also writes the replay's schedule as `run --perfetto` does (F.txt: ftrace\n"
    "  text, to read beside the capture).\n";
constexpr const char* kMergeUsage =
    "usage: trace merge A B ... [--stagger DUR] -o OUT [--cpus N] [--name NAME]\n"
    "  DUR: 5s, 250ms, 100us or ns. Session N goes to cgroup /session-N.\n";
constexpr const char* kMixUsage =
    "usage: trace mix RECORDING... -o OUT [--sessions N] [--cpus M] [--stagger DUR] [--duration DUR]\n"
    "                 [--seed S] [--interactive K] [--name NAME]\n"
    "  RECORDING: an AgentCgroup task folder, an AgentCgroup eBPF .jsonl, or an agentcg trace.\n"
    "  N sessions (default 40) on M CPUs (default 8), session i starting at i x DUR (default 2s)\n"
    "  plus a seeded jitter, recordings taken in a seeded order; K interactive shells (default 1).\n";

Options import_options(const Args& a) {
  Options o;
  o.strict = a.flag("strict");
  if (auto n = a.get("name")) o.name = *n;
  if (auto c = a.get("cgroup")) {
    if (c->empty() || (*c)[0] != '/' || (c->size() > 1 && c->back() == '/'))
      throw UsageError("option --cgroup: expected an absolute path such as /agents, got '" + *c + "'");
    o.cgroup = *c;
  }
  const std::uint64_t cpus = a.get_u64("cpus", 0);
  if (cpus > 4096) throw UsageError("option --cpus: expected 1..4096");
  o.cpus = static_cast<std::uint32_t>(cpus);
  o.unsampled_as_run = a.flag("unsampled-as-run");
  if (auto w = a.get("unflagged-wakeups")) {
    if (*w != "task" && *w != "interrupt")
      throw UsageError("option --unflagged-wakeups: expected task or interrupt, got '" + *w + "'");
    o.unflagged_wakeups_by_task = *w == "task";
  }
  if (auto c = a.get("only-cgroup")) {
    if (c->empty() || (*c)[0] != '/' || (c->size() > 1 && c->back() == '/'))
      throw UsageError("option --only-cgroup: expected an absolute path such as /agents, got '" + *c + "'");
    o.only_cgroup = *c;
  }
  return o;
}

void write(const trace::Trace& t, const std::string& path, std::ostream& out) {
  if (path == "-") {
    out << trace::to_json_text(t);
  } else {
    trace::write_trace_file(t, path);
  }
}

// Runs `body`, mapping exceptions to exit codes.
template <typename F>
int guarded(const char* usage, std::ostream& err, F&& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    err << "agentcg: " << e.what() << "\n" << usage;
    return 2;
  } catch (const ImportError& e) {
    err << "agentcg: " << e.what() << "\n";
    return 1;
  } catch (const trace::TraceError& e) {
    err << "agentcg: " << e.what() << "\n";
    return 1;
  } catch (const std::invalid_argument& e) {
    err << "agentcg: " << e.what() << "\n";
    return 1;
  } catch (const std::runtime_error& e) {
    err << "agentcg: " << e.what() << "\n";
    return 1;
  }
}

// gpu-csv's machine: --gpus N (1..4096), --gpu-mem-gb GiB (> 0).
struct GpuMachine {
  std::uint32_t gpus = 1;
  double memory_gb = 16;
};

GpuMachine gpu_machine(const Args& a) {
  GpuMachine m;
  const std::uint64_t n = a.get_u64("gpus", 1);
  if (n < 1 || n > 4096) throw UsageError("option --gpus: expected 1..4096");
  m.gpus = static_cast<std::uint32_t>(n);
  if (auto v = a.get("gpu-mem-gb")) {
    std::size_t used = 0;
    double x = 0;
    try {
      x = std::stod(*v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != v->size() || !(x > 0) || x > 1048576)
      throw UsageError("option --gpu-mem-gb: expected GiB per GPU such as 16 or 80, got '" + *v + "'");
    m.memory_gb = x;
  }
  return m;
}

Result import_with(const std::string& format, const std::string& input, const Options& o,
                   const GpuMachine& machine = {}) {
  if (format == "gpu-csv") {
    // The GPU model's importer; it reports malformed and refused lines in
    // its own provenance (import_summary()).
    sim::gpu::ImportOptions g;
    g.strict = o.strict;
    g.gpus = machine.gpus;
    g.gpu_memory_gb = machine.memory_gb;
    Result r;
    r.trace = sim::gpu::import_gpu_csv(input, g);
    if (!o.name.empty()) r.trace.name = o.name;
    r.report.format = "gpu-csv";
    r.report.input = input;
    return r;
  }
  return import_any(format, input, o);
}

// An import that yields nothing is an error (exit 1), not an empty trace
// written with exit 0: an empty or wrong-format input, or an --only-cgroup
// that matches no process. For the latter the recording's cgroups are
// listed (a second import without the filter, on this error path only),
// with the closest one first.
void check_not_empty(const std::string& format, const std::string& input, const Options& o, const Result& r) {
  if (format == "gpu-csv") {
    const auto& g = r.trace.extra;
    if (!g.contains("gpu") || !g["gpu"].contains("jobs") || g["gpu"]["jobs"].empty())
      throw ImportError(input, 0, "the import produced no GPU jobs (an empty CSV, or every line refused: see "
                                  "the summary above); nothing written");
    return;
  }
  if (!r.trace.processes.empty()) return;
  if (o.only_cgroup.empty())
    throw ImportError(input, 0, "the import produced no processes (an empty input, or not a " + format +
                                    " recording: see the summary above); nothing written");
  Options all = o;
  all.only_cgroup.clear();
  std::vector<std::string> seen;
  try {
    const Result every = import_any(format, input, all);
    for (const auto& p : every.trace.processes)
      if (std::find(seen.begin(), seen.end(), p.cgroup) == seen.end()) seen.push_back(p.cgroup);
  } catch (const std::exception&) {
    // the listing is a hint only; the error below stands without it
  }
  std::sort(seen.begin(), seen.end());
  std::string have;
  for (std::size_t i = 0; i < seen.size() && i < 12; ++i) have += (i ? ", " : "") + seen[i];
  if (seen.size() > 12) have += ", ... (" + std::to_string(seen.size()) + " in all)";
  throw ImportError(input, 0, "--only-cgroup " + o.only_cgroup + " matched no process; nothing written" +
                                  (seen.empty() ? std::string(" (the recording has no processes at all)")
                                                : " (cgroups with processes: " + have + ")"));
}

}  // namespace

int import_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return guarded(kImportUsage, err, [&]() {
    Args a(args, {"from", "out", "name", "cgroup", "cpus", "only-cgroup", "gpus", "gpu-mem-gb", "unflagged-wakeups"},
           {"strict", "unsampled-as-run"});
    if (a.positional().size() != 1)
      throw UsageError("expected exactly one INPUT, got " + std::to_string(a.positional().size()));
    const std::string format = a.require("from");
    const std::string out_path = a.require("out");
    if (format != "gpu-csv" && (a.get("gpus") || a.get("gpu-mem-gb")))
      throw UsageError("options --gpus and --gpu-mem-gb apply to --from gpu-csv only");
    const Options opts = import_options(a);
    Result r = import_with(format, a.positional()[0], opts, gpu_machine(a));
    if (format == "gpu-csv") err << sim::gpu::import_summary(r.trace);
    if (format != "gpu-csv") err << r.report.summary();
    check_not_empty(format, a.positional()[0], opts, r);
    trace::validate(r.trace);
    write(r.trace, out_path, out);
    if (out_path != "-") {
      if (format == "gpu-csv")
        err << "wrote " << out_path << " (" << r.trace.extra["gpu"]["jobs"].size() << " GPU jobs)\n";
      else
        err << "wrote " << out_path << " (" << r.trace.processes.size() << " processes)\n";
    }
    return 0;
  });
}

int stats_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return guarded(kStatsUsage, err, [&]() {
    Args a(args, {"from", "cpus", "name", "cgroup", "only-cgroup", "policy", "config", "machine", "seed",
                  "unflagged-wakeups", "perfetto"},
           {"json", "strict", "unsampled-as-run", "replay"});
    if (a.positional().size() != 1)
      throw UsageError("expected exactly one FILE, got " + std::to_string(a.positional().size()));
    const std::string file = a.positional()[0];
    if (a.flag("replay")) {
      const auto format = a.get("from");
      if (!format) throw UsageError("--replay needs --from ftrace|perf (a scheduler capture)");
      sim::RunOptions o;
      o.policy = a.get("policy").value_or("eevdf");
      if (auto c = a.get("config")) o.config = config::load_file(*c);
      // a fitted profile (agentcg fidelity, calibrate) wins over --config's machine keys, as for `run`
      if (auto m = a.get("machine")) calibrate::apply_profile(calibrate::load_profile(*m), o.config.machine);
      o.seed = a.get_u64("seed", 1);
      o.perfetto_path = a.get("perfetto").value_or("");
      const ReplayCheck c = replay_check(file, *format, o, import_options(a));
      if (a.flag("json")) out << c.to_json().dump(2) << "\n";
      else out << c.to_text();
      return 0;
    }
    TraceStats s;
    if (auto format = a.get("from")) {
      Result r = import_with(*format, file, import_options(a));
      err << r.report.summary();
      s = compute_stats(r.trace);
      if (!r.report.wakeup_latency_ns.empty() || *format == "ftrace" || *format == "perf" ||
          *format == "agentcg-record")
        s.wakeup_latency_ns = Percentiles::of(r.report.wakeup_latency_ns);
    } else {
      s = compute_stats(trace::load_trace_file(file));
    }
    if (a.flag("json")) {
      out << s.to_json().dump(2) << "\n";
    } else {
      out << s.to_text();
    }
    return 0;
  });
}

int merge_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return guarded(kMergeUsage, err, [&]() {
    Args a(args, {"stagger", "out", "cpus", "name"}, {});
    if (a.positional().empty()) throw UsageError("expected at least one input trace");
    MergeOptions mo;
    if (auto s = a.get("stagger")) {
      auto ns = units::parse_duration_ns(*s);
      if (!ns) throw UsageError("option --stagger: expected " + std::string(units::kDurationForms) + ", got '" + *s + "'");
      mo.stagger_ns = *ns;
    }
    const std::uint64_t cpus = a.get_u64("cpus", 0);
    if (cpus > 4096) throw UsageError("option --cpus: expected 1..4096");
    mo.cpus = static_cast<std::uint32_t>(cpus);
    if (auto n = a.get("name")) mo.name = *n;
    const std::string out_path = a.require("out");
    std::vector<trace::Trace> inputs;
    for (const std::string& p : a.positional()) inputs.push_back(trace::load_trace_file(p));
    std::vector<std::string> warnings;
    trace::Trace merged = merge_sessions(inputs, mo, &warnings);
    for (const std::string& w : warnings) err << "agentcg: warning: " << w << "\n";
    trace::validate(merged);
    write(merged, out_path, out);
    if (out_path != "-")
      err << "wrote " << out_path << " (" << inputs.size() << " sessions, " << merged.processes.size()
          << " processes)\n";
    return 0;
  });
}

int mix_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return guarded(kMixUsage, err, [&]() {
    Args a(args, {"sessions", "cpus", "stagger", "duration", "seed", "interactive", "out", "name"}, {});
    if (a.positional().empty()) throw UsageError("expected at least one recording (task folder, .jsonl or trace)");
    MixOptions mo;
    const std::uint64_t sessions = a.get_u64("sessions", 40);
    if (sessions < 1 || sessions > 100000) throw UsageError("option --sessions: expected 1..100000");
    mo.sessions = static_cast<std::uint32_t>(sessions);
    const std::uint64_t cpus = a.get_u64("cpus", 8);
    if (cpus < 1 || cpus > 4096) throw UsageError("option --cpus: expected 1..4096");
    mo.cpus = static_cast<std::uint32_t>(cpus);
    const std::uint64_t inter = a.get_u64("interactive", 1);
    if (inter > 1000) throw UsageError("option --interactive: expected 0..1000");
    mo.interactive = static_cast<std::uint32_t>(inter);
    mo.seed = a.get_u64("seed", 1);
    for (const char* key : {"stagger", "duration"}) {
      if (auto s = a.get(key)) {
        auto ns = units::parse_duration_ns(*s);
        if (!ns)
          throw UsageError(std::string("option --") + key + ": expected " + units::kDurationForms + ", got '" + *s + "'");
        if (std::string(key) == "stagger") mo.stagger_ns = *ns;
        else mo.duration_ns = *ns;
      }
    }
    if (auto n = a.get("name")) mo.name = *n;
    const std::string out_path = a.require("out");
    std::vector<trace::Trace> inputs;
    for (const std::string& p : a.positional()) inputs.push_back(load_recording(p));
    std::vector<std::string> warnings;
    trace::Trace mixed = mix_sessions(inputs, mo, &warnings);
    for (const std::string& w : warnings) err << "agentcg: warning: " << w << "\n";
    trace::validate(mixed);
    write(mixed, out_path, out);
    if (out_path != "-")
      err << "wrote " << out_path << " (" << mo.sessions << " sessions from " << inputs.size() << " recordings, "
          << mixed.processes.size() << " processes)\n";
    return 0;
  });
}

}  // namespace agentcg::import
