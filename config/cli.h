// SPDX-License-Identifier: GPL-2.0-only
/*
 * What every agentcg C++ binary does the same way with its arguments, on top
 * of CLI11 (Debian libcli11-dev):
 *   - `--version` prints "NAME VERSION" (VERSION = the CMake project version,
 *     AGENTCG_VERSION from the agentcg_cli target) and exits 0;
 *   - `-h/--help` prints the options and exits 0;
 *   - a bad argument prints "NAME: error: WHAT" (which flag, what was
 *     expected, what was given) and "Run NAME --help for the options." on
 *     stderr and exits 2 (the project's usage-error code);
 *   - an unknown option, subcommand or name gets a did-you-mean from the
 *     names the program knows (as the Python CLI's difflib hint);
 *   - durations and sizes use the one grammar of core/units/units.h.
 * Invariant: parse() never exits the process itself; the caller returns its
 * code from main(). Who uses it: agentcg-player, agentcg-record,
 * agentcg-gpud, agentcg-gpuctl, agentcgroupd, agentcg-monitor, agentcg-sim.
 */
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "config/did_you_mean.h"
#include "core/units/units.h"

#ifndef AGENTCG_VERSION
#error "AGENTCG_VERSION is defined by the agentcg_cli CMake target (link it)"
#endif

namespace agentcg::cli {

inline constexpr int kUsageExit = 2;

inline std::string version_line(const std::string& name) { return name + " " + AGENTCG_VERSION; }

// A value that must be one of `known`, with the did-you-mean above.
inline CLI::Validator one_of(const std::string& what, const std::vector<std::string>& known) {
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : "|") + k;
  return CLI::Validator(
      [what, known](std::string& v) {
        return std::find(known.begin(), known.end(), v) != known.end() ? std::string() : unknown_name(what, v, known);
      },
      "{" + list + "}");
}

// The chain of subcommands the command line selected, outermost first.
inline std::vector<const CLI::App*> selected_chain(const CLI::App* app) {
  std::vector<const CLI::App*> chain{app};
  for (;;) {
    const auto subs = chain.back()->get_subcommands();
    if (subs.empty()) return chain;
    chain.push_back(subs.back());
  }
}

// The message for arguments nobody took: each one named, with the closest
// option of the selected (sub)commands, or the closest subcommand.
inline std::string extras_message(const CLI::App* app) {
  const auto chain = selected_chain(app);
  std::vector<std::string> options, subcommands;
  for (const CLI::App* a : chain)
    for (const CLI::Option* o : a->get_options())
      for (const auto& l : o->get_lnames()) options.push_back("--" + l);
  for (const CLI::App* s : chain.back()->get_subcommands([](const CLI::App*) { return true; }))
    subcommands.push_back(s->get_name());
  std::string msg;
  bool after_unknown_option = false;  // the word after it is most likely its value: not an error of its own
  for (const std::string& arg : app->remaining(true)) {
    if (arg.size() > 1 && arg[0] == '-') {
      const std::string name = arg.substr(0, arg.find('='));
      msg += (msg.empty() ? "" : "; ") + std::string("unknown option ") + name + did_you_mean(name, options);
      after_unknown_option = name == arg;
      continue;
    }
    if (after_unknown_option) {
      after_unknown_option = false;
      continue;
    }
    if (!subcommands.empty()) {  // the rest are that command's arguments
      msg += (msg.empty() ? "" : "; ") + std::string("unknown command '") + arg + "'" + did_you_mean(arg, subcommands);
      break;
    }
    msg += (msg.empty() ? "" : "; ") + std::string("unexpected argument '") + arg + "'";
  }
  return msg.empty() ? "unexpected arguments" : msg;
}

// The shared settings; call right after constructing the App.
inline void setup(CLI::App& app) {
  app.set_version_flag("--version", version_line(app.get_name()), "print the version and exit");
  app.set_help_flag("-h,--help", "print this help and exit");
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    // Arguments nobody took explain most errors ("a subcommand is
    // required" after "compar", "--out is required" after "--ot"): name them.
    const bool extras = dynamic_cast<const CLI::ExtrasError*>(&e) ||
                        (dynamic_cast<const CLI::RequiredError*>(&e) && !a->remaining(true).empty());
    const std::string what = extras ? extras_message(a) : std::string(e.what());
    std::string command;  // "agentcg-sim trace import": the help that lists the options in question
    for (const CLI::App* c : selected_chain(a)) command += (command.empty() ? "" : " ") + c->get_name();
    return a->get_name() + ": error: " + what + "\nRun " + command + " --help for the options.\n";
  });
}

// An integer >= 0 (CLI11's own conversion error does not say what was
// expected).
inline CLI::Validator non_negative_integer() {
  return CLI::Validator(
      [](std::string& v) {
        return !v.empty() && v.find_first_not_of("0123456789") == std::string::npos
                   ? std::string()
                   : "expected a non-negative integer, got '" + v + "'";
      },
      "");
}

// nullopt: parsed, go on. Otherwise the exit code for main(): 0 after
// --help/--version, kUsageExit after a bad argument (message printed).
inline std::optional<int> parse(CLI::App& app, int argc, const char* const* argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kUsageExit;
  }
}

// An integer >= 1 (CLI::PositiveNumber would print its range up to DBL_MAX).
inline CLI::Validator positive_integer() {
  return CLI::Validator(
      [](std::string& v) {
        const bool digits = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
        return digits && v.find_first_not_of('0') != std::string::npos
                   ? std::string()
                   : "expected a positive integer, got '" + v + "'";
      },
      "");
}

// --NAME DURATION (core/units grammar) into `ns`; `min_ns` is the smallest
// value accepted.
inline CLI::Option* add_duration(CLI::App& app, const std::string& name, std::uint64_t& ns, const std::string& help,
                                 std::uint64_t min_ns = 0) {
  const std::string flag = name.substr(0, name.find(','));
  return app
      .add_option_function<std::string>(
          name,
          [&ns, flag, min_ns](const std::string& s) {
            const auto v = units::parse_duration_ns(s);
            if (!v || *v < min_ns) {
              const std::string at_least = min_ns == 0   ? ""
                                           : min_ns == 1 ? " above 0"
                                                         : " of at least " + std::to_string(min_ns) + " ns";
              throw CLI::ValidationError(flag, "expected " + std::string(units::kDurationForms) + at_least + ", got '" +
                                                   s + "'");
            }
            ns = *v;
          },
          help)
      ->type_name("DURATION");
}

// --NAME SIZE (core/units grammar) into `bytes`.
inline CLI::Option* add_size(CLI::App& app, const std::string& name, std::uint64_t& bytes, const std::string& help) {
  const std::string flag = name.substr(0, name.find(','));
  return app
      .add_option_function<std::string>(
          name,
          [&bytes, flag](const std::string& s) {
            const auto v = units::parse_size_bytes(s);
            if (!v)
              throw CLI::ValidationError(flag, "expected " + std::string(units::kSizeForms) + ", got '" + s + "'");
            bytes = *v;
          },
          help)
      ->type_name("SIZE");
}

}  // namespace agentcg::cli
