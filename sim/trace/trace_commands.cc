// SPDX-License-Identifier: GPL-2.0-only
// `trace generate` / `trace validate`: argument handling around generate(),
// write_trace_file() and load_trace_file(). Errors become messages and exit
// codes here (the CLI's edge), never exceptions. Called through
// sim/cli/trace_cmd.h by agentcg-sim and directly by trace_commands_test.cc.
#include "sim/trace/trace_commands.h"

#include <map>

#include "config/did_you_mean.h"
#include "sim/trace/trace.h"

namespace agentcg::trace {
namespace {

constexpr const char* kGenerateUsage =
    "usage: agentcg trace generate KIND [--seed N] -o FILE|- [--OPTION VALUE ...]\n"
    "       agentcg trace generate --help   (kinds and their options)\n";
constexpr const char* kValidateUsage =
    "usage: agentcg trace validate [--policy NAME] FILE...\n"
    "  every check `run` makes before simulating (the gpu section included);\n"
    "  --policy adds that policy's own limits (flatcg/agentcg: cgroups <= 15 deep)\n";

}  // namespace

int generate_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string kind, path;
  std::uint64_t seed = 1;
  bool have_out = false;
  std::map<std::string, std::string> options;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      out << kGenerateUsage << "\n" << generator_help();
      return 0;
    }
    if (a == "-o" || a == "--out" || a.rfind("--out=", 0) == 0) {
      if (a.rfind("--out=", 0) == 0) {
        path = a.substr(6);
      } else {
        if (i + 1 >= args.size()) {
          err << "agentcg trace generate: " << a << " needs a file name\n" << kGenerateUsage;
          return 2;
        }
        path = args[++i];
      }
      have_out = true;
      continue;
    }
    if (a.size() > 2 && a.rfind("--", 0) == 0) {
      std::string key = a.substr(2), value;
      const auto eq = key.find('=');
      if (eq != std::string::npos) {
        value = key.substr(eq + 1);
        key = key.substr(0, eq);
      } else {
        if (i + 1 >= args.size()) {
          err << "agentcg trace generate: option --" << key << " needs a value\n" << kGenerateUsage;
          return 2;
        }
        value = args[++i];
      }
      if (key == "seed") {
        std::size_t used = 0;
        try {
          if (value.empty() || value[0] == '-') throw std::invalid_argument("negative");
          seed = std::stoull(value, &used, 10);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != value.size()) {
          err << "agentcg trace generate: --seed \"" << value << "\": expected a non-negative integer\n";
          return 2;
        }
        continue;
      }
      if (!options.emplace(key, value).second) {
        err << "agentcg trace generate: option --" << key << " given twice\n";
        return 2;
      }
      continue;
    }
    if (!kind.empty()) {
      err << "agentcg trace generate: unexpected argument \"" << a << "\" (the kind is already " << kind << ")\n"
          << kGenerateUsage;
      return 2;
    }
    kind = a;
  }
  if (kind.empty() || !have_out) {
    err << "agentcg trace generate: " << (kind.empty() ? "missing KIND" : "missing -o FILE") << "\n"
        << kGenerateUsage;
    return 2;
  }
  Trace t;
  try {
    t = generate(kind, seed, options);
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
  if (args.empty()) {
    err << "agentcg trace validate: no files given\n" << kValidateUsage;
    return 2;
  }
  std::vector<std::string> files;
  std::string policy;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      out << kValidateUsage;
      return 0;
    }
    if (a == "--policy" || a.rfind("--policy=", 0) == 0) {
      if (a == "--policy" && i + 1 >= args.size()) {
        err << "agentcg trace validate: --policy needs a policy name\n" << kValidateUsage;
        return 2;
      }
      policy = a == "--policy" ? args[++i] : a.substr(9);
      continue;
    }
    if (a.size() > 1 && a[0] == '-') {
      err << "agentcg trace validate: unknown option " << a << cli::did_you_mean(a, {"--policy", "--help"}) << "\n"
          << kValidateUsage;
      return 2;
    }
    files.push_back(a);
  }
  if (files.empty()) {
    err << "agentcg trace validate: no files given\n" << kValidateUsage;
    return 2;
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

}  // namespace agentcg::trace
