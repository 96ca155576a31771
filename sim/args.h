// SPDX-License-Identifier: GPL-2.0-only
// A small, strict argument parser for agentcg-sim's subcommands: --key
// value and --key=value for declared options, declared --flags,
// positionals; anything else is a UsageError naming the argument. Below
// sim/cli/ (which dispatches) and the libraries that parse their own
// subcommand's arguments (sim/import/commands.cc, sim/calibrate), so their
// includes point down. The other C++ binaries use CLI11 (config/cli.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace agentcg::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  Args(const std::vector<std::string>& argv, std::set<std::string> options, std::set<std::string> flags) {
    for (std::size_t i = 0; i < argv.size(); ++i) {
      const std::string& a = argv[i];
      if (a.size() > 2 && a.rfind("--", 0) == 0) {
        std::string key = a.substr(2), value;
        const auto eq = key.find('=');
        bool inline_value = eq != std::string::npos;
        if (inline_value) {
          value = key.substr(eq + 1);
          key = key.substr(0, eq);
        }
        if (flags.count(key) && !inline_value) {
          flags_.insert(key);
          continue;
        }
        if (!options.count(key)) throw UsageError("unknown option --" + key);
        if (!inline_value) {
          if (i + 1 >= argv.size()) throw UsageError("option --" + key + " needs a value");
          value = argv[++i];
        }
        if (values_.count(key)) throw UsageError("option --" + key + " given twice");
        values_[key] = value;
      } else if (a == "-o" && options.count("out")) {
        if (i + 1 >= argv.size()) throw UsageError("option -o needs a value");
        values_["out"] = argv[++i];
      } else {
        positional_.push_back(a);
      }
    }
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
