// SPDX-License-Identifier: GPL-2.0-only
// The argument reader of the library commands that the Python CLI calls
// too (sim/import/commands.cc: trace import/stats/merge/mix;
// sim/calibrate: calibrate), on CLI11 like every agentcg C++ command line
// (config/cli.h): --key value and --key=value for declared options, -o for
// --out, declared --flags, positionals; anything else is a UsageError
// naming the argument, with the closest declared option (did-you-mean).
// Kept as a small class because these commands take a vector of strings
// from two front ends (agentcg-sim, the Python extension) and print their
// own usage; below sim/cli/ so their includes point down.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/did_you_mean.h"

namespace agentcg::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  Args(const std::vector<std::string>& argv, const std::set<std::string>& options,
       const std::set<std::string>& flags) {
    CLI::App app;
    app.set_help_flag();  // the commands print their own usage
    std::map<std::string, CLI::Option*> given;
    std::vector<std::string> known;
    for (const std::string& o : options) {
      // one value each: a second --key is an error, not a silent override
      given[o] = app.add_option(o == "out" ? "-o,--out" : "--" + o, values_[o])
                     ->multi_option_policy(CLI::MultiOptionPolicy::Throw);
      known.push_back("--" + o);
    }
    std::map<std::string, CLI::Option*> flag_opts;
    for (const std::string& f : flags) {
      flag_opts[f] = app.add_flag("--" + f);
      known.push_back("--" + f);
    }
    app.add_option("ARGS", positional_);
    std::vector<std::string> reversed(argv.rbegin(), argv.rend());  // CLI11 takes them last-first
    try {
      app.parse(reversed);
    } catch (const CLI::ExtrasError&) {
      std::string msg;
      for (const std::string& a : app.remaining()) {
        const std::string name = a.substr(0, a.find('='));
        msg += (msg.empty() ? "" : "; ") + std::string("unknown option ") + name + did_you_mean(name, known);
      }
      throw UsageError(msg);
    } catch (const CLI::ParseError& e) {
      throw UsageError(e.what());
    }
    for (const auto& [key, opt] : given)
      if (opt->count() == 0) values_.erase(key);
    for (const auto& [key, opt] : flag_opts)
      if (opt->count() > 0) flags_.insert(key);
  }
  std::optional<std::string> get(const std::string& key) const {
    const auto it = values_.find(key);
    if (it == values_.end()) return std::nullopt;
    return it->second;
  }
  std::string require(const std::string& key) const {
    auto v = get(key);
    if (!v) throw UsageError("missing required option --" + key);
    return *v;
  }
  std::uint64_t get_u64(const std::string& key, std::uint64_t def) const {
    auto v = get(key);
    if (!v) return def;
    if (v->empty() || v->find_first_not_of("0123456789") != std::string::npos)
      throw UsageError("option --" + key + ": expected a non-negative integer, got '" + *v + "'");
    try {
      return std::stoull(*v);
    } catch (const std::exception&) {
      throw UsageError("option --" + key + ": integer out of range: '" + *v + "'");
    }
  }
  bool flag(const std::string& f) const { return flags_.count(f) > 0; }
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> flags_;
  std::vector<std::string> positional_;
};

}  // namespace agentcg::cli
