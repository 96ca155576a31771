// SPDX-License-Identifier: GPL-2.0-only
// `trace generate` / `trace validate` / `trace convert`: argument handling
// (CLI11, as every agentcg command line) around generate(),
// write_trace_file(), load_trace_file() and to_binary(). Errors become messages and exit
// codes here (the CLI's edge), never exceptions. Called through
// sim/cli/trace_cmd.h by agentcg-sim and directly by trace_commands_test.cc.
#include "sim/trace/trace_commands.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>

#include <CLI/CLI.hpp>

#include "config/cli.h"
#include "config/did_you_mean.h"
#include "sim/trace/trace.h"

namespace agentcg::trace {
namespace {

constexpr const char* kGenerateUsage =
    "usage: agentcg trace generate KIND [--seed N] -o FILE|- [--OPTION VALUE ...]\n"
    "       agentcg trace generate --help   (kinds and their options)\n";
constexpr const char* kConvertUsage =
    "usage: agentcg trace convert IN OUT\n"
    "  JSON -> binary, or binary -> JSON: the form of IN (told by its first bytes) decides;\n"
    "  OUT is the other form: NAME.agtb for binary, NAME.json (or - for stdout) for JSON.\n"
    "  Every command that reads a trace takes either; the binary form loads several times\n"
    "  faster and converts back to the canonical JSON byte for byte\n";
constexpr const char* kValidateUsage =
    "usage: agentcg trace validate [--policy NAME] FILE...\n"
    "  every check `run` makes before simulating (the gpu section included);\n"
    "  --policy adds that policy's own limits (flatcg/agentcg: cgroups <= 15 deep)\n";

// The index of the first word of `args` that is neither an option nor an
// option's value (`--seed 3 hogs`: 2), or args.size().
std::size_t first_word(const std::vector<std::string>& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() > 1 && a[0] == '-') {
      if (a.find('=') == std::string::npos && a != "-h" && a != "--help") ++i;  // its value
      continue;
    }
    return i;
  }
  return args.size();
}

// Parses `args` (without "trace generate"/"trace validate") with `app`;
// nullopt when the command should run, else the exit code after printing
// help (0) or the error (2: what, with the closest name, and the usage).
std::optional<int> parse(CLI::App& app, const std::vector<std::string>& args, const char* command,
                         const char* usage, std::ostream& err, const std::function<std::string()>& extras) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last-first
  try {
    app.parse(reversed);
    return std::nullopt;
  } catch (const CLI::CallForHelp&) {
    return 0;
  } catch (const CLI::ArgumentMismatch& e) {
    // CLI11 says "--k: At Most 1 required but received 2" / "... received 0"
    const std::string m = e.what(), name = m.substr(0, m.find(':'));
    const std::string what = m.find("received 0") != std::string::npos || m.find(" missing") != std::string::npos
                                 ? (name == "--out" ? std::string("-o needs a file name") : name + " needs a value")
                             : m.find("At Most") != std::string::npos ? name + ": given more than once"
                                                                      : m;
    err << "agentcg trace " << command << ": " << what << "\n" << usage;
    return 2;
  } catch (const CLI::ParseError& e) {
    const bool leftovers = !app.remaining(true).empty();
    const std::string what = leftovers ? extras() : std::string(e.what());
    err << "agentcg trace " << command << ": " << what << "\n" << usage;
    return 2;
  }
}

}  // namespace

// CLI11 (config/cli.h), as every agentcg command line: one subcommand per
// generator kind, declared from generator_kinds(), so `trace generate hogs
// --help` lists that kind's options and a typo gets the closest of them.
// Values are checked by the generator itself (durations, sizes, ranges).
int generate_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const std::vector<GeneratorKind> kinds = generator_kinds();
  CLI::App app{"make a synthetic trace", "agentcg trace generate"};
  app.set_help_flag("-h,--help", "every kind and its options");
  app.require_subcommand(1);
  std::string seed = "1", path;
  std::vector<std::string> names;
  std::map<std::string, std::vector<std::pair<std::string, CLI::Option*>>> declared;
  std::map<std::string, std::map<std::string, std::string>> values;
  for (const GeneratorKind& k : kinds) {
    CLI::App* sub = app.add_subcommand(k.name, k.summary);
    sub->set_help_flag("-h,--help", "this kind's options");
    sub->add_option("--seed", seed, "random seed (same seed, same trace)")
        ->check(cli::non_negative_integer())
        ->capture_default_str()
        ->type_name("N");
    sub->add_option("-o,--out", path, "the trace file to write, or - for stdout")->required()->type_name("FILE");
    for (const GeneratorOption& o : k.options)
      declared[k.name].emplace_back(
          o.key, sub->add_option("--" + o.key, values[k.name][o.key],
                                 o.help.find("default") != std::string::npos
                                     ? o.help
                                     : o.help + " (default " + (o.def.empty() ? "derived" : o.def) + ")")
                     ->multi_option_policy(CLI::MultiOptionPolicy::Throw)
                     ->type_name("VALUE"));
    names.push_back(k.name);
  }
  auto extras = [&]() -> std::string {
    if (app.get_subcommands().empty()) {  // the first word that is no option nor its value is not a kind
      const std::size_t w = first_word(args);
      if (w < args.size()) {
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        return "unknown generator kind \"" + args[w] + "\"" + cli::did_you_mean(args[w], names) +
               "; expected one of: " + list;
      }
      return "missing KIND";
    }
    return cli::extras_message(&app);
  };
  if (args.empty()) {
    err << "agentcg trace generate: missing KIND\n" << kGenerateUsage;
    return 2;
  }
  // The kind may come after options (`--seed 3 hogs -o -`, as before the
  // subcommands): put it first, skipping option values.
  std::vector<std::string> ordered = args;
  const std::size_t w = first_word(args);
  if (w > 0 && w < args.size() && std::find(names.begin(), names.end(), args[w]) != names.end())
    std::rotate(ordered.begin(), ordered.begin() + static_cast<std::ptrdiff_t>(w),
                ordered.begin() + static_cast<std::ptrdiff_t>(w) + 1);
  if (const auto rc = parse(app, ordered, "generate", kGenerateUsage, err, extras)) {
    if (*rc == 0) {
      const auto subs = app.get_subcommands();
      if (subs.empty()) out << kGenerateUsage << "\n" << generator_help();
      else out << subs.front()->help();
    }
    return *rc;
  }
  const std::string kind = app.get_subcommands().front()->get_name();
  std::map<std::string, std::string> options;
  for (const auto& [key, opt] : declared[kind])
    if (opt->count() > 0) options[key] = values[kind][key];
  Trace t;
  try {
    t = generate(kind, std::stoull(seed), options);
  } catch (const std::out_of_range&) {
    err << "agentcg trace generate: --seed " << seed << ": out of range\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    err << "agentcg trace generate: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    // A generator that builds an invalid trace is a bug; say so plainly.
    err << "agentcg trace generate: internal error: " << e.what() << "\n";
    return 1;
  }
  try {
    if (path == "-") out << to_json_text(t);
    else write_trace_file(t, path);
  } catch (const std::exception& e) {
    err << "agentcg trace generate: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

int validate_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"check traces as run does", "agentcg trace validate"};
  app.set_help_flag("-h,--help", "this help");
  std::vector<std::string> files;
  std::string policy;
  app.add_option("--policy", policy, "also that policy's own limits (flatcg/agentcg: cgroups <= 15 deep)")
      ->type_name("NAME");
  app.add_option("FILE", files, "trace files")->required();
  if (args.empty()) {
    err << "agentcg trace validate: no files given\n" << kValidateUsage;
    return 2;
  }
  if (const auto rc = parse(app, args, "validate", kValidateUsage, err, [&] { return cli::extras_message(&app); })) {
    if (*rc == 0) out << kValidateUsage;
    return *rc;
  }
  int rc = 0;
  for (const std::string& path : files) {
    try {
      const Trace t = load_trace_file(path);
      if (!policy.empty()) validate_for_policy(t, policy);
      out << path << ": valid (" << t.processes.size() << " processes, " << t.cgroups.size() << " cgroups)\n";
    } catch (const TraceError& e) {
      err << e.what() << "\n";
      rc = 1;
    } catch (const std::exception& e) {
      err << path << ": " << e.what() << "\n";
      rc = 1;
    }
  }
  return rc;
}

int convert_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"convert a trace between JSON and the binary form", "agentcg trace convert"};
  app.set_help_flag("-h,--help", "this help");
  std::string in_path, out_path;
  app.add_option("IN", in_path, "the trace to read (JSON or binary)")->required();
  app.add_option("OUT", out_path, "the file to write in the other form (JSON: - for stdout)")->required();
  if (args.empty()) {
    err << "agentcg trace convert: no files given\n" << kConvertUsage;
    return 2;
  }
  if (const auto rc = parse(app, args, "convert", kConvertUsage, err, [&] { return cli::extras_message(&app); })) {
    if (*rc == 0) out << kConvertUsage;
    return *rc;
  }
  // The input's form, from its first byte (as load_trace_file tells them).
  bool from_binary = false;
  {
    std::ifstream f(in_path, std::ios::binary);
    char c = 0;
    if (f.get(c)) from_binary = looks_binary(&c, 1);
  }
  const auto ends_with = [&](const std::string& ext) {
    return out_path.size() >= ext.size() && out_path.compare(out_path.size() - ext.size(), ext.size(), ext) == 0;
  };
  if (!from_binary && out_path == "-") {  // binary bytes on a terminal, or through Python's text stdout
    err << "agentcg trace convert: " << in_path << " is JSON, so the output is a binary trace, not for stdout; "
        << "expected an OUT file name ending " << kBinaryExtension << "\n";
    return 2;
  }
  if (!from_binary && ends_with(".json")) {
    err << "agentcg trace convert: " << in_path << " is JSON, so " << out_path
        << " would be a binary trace; expected an OUT name ending " << kBinaryExtension << "\n";
    return 2;
  }
  if (from_binary && ends_with(kBinaryExtension)) {
    err << "agentcg trace convert: " << in_path << " is a binary trace, so " << out_path
        << " would be JSON; expected an OUT name ending .json (or - for stdout)\n";
    return 2;
  }
  try {
    const Trace t = load_trace_file(in_path);
    const std::string bytes = from_binary ? to_json_text(t) : to_binary(t);
    if (out_path == "-") {
      out << bytes;
      return 0;
    }
    std::ofstream f(out_path, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error(out_path + ": cannot open for writing");
    f << bytes;
    f.flush();
    if (!f) throw std::runtime_error(out_path + ": write error");
    out << out_path << ": " << (from_binary ? "JSON" : "binary trace") << ", " << bytes.size() << " bytes, from "
        << in_path << " (" << (from_binary ? "binary" : "JSON") << ", " << std::filesystem::file_size(in_path)
        << " bytes)\n";
  } catch (const TraceError& e) {
    err << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    err << "agentcg trace convert: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace agentcg::trace
