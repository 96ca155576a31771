// SPDX-License-Identifier: GPL-2.0-only
/*
 * Did-you-mean for names a user typed: the closest known names by edit
 * distance (adjacent transpositions count one), and the message the Python
 * CLI's _errors.unknown_name() writes, word for word. No CLI11 here, so
 * that sim/args.h and the trace generators use it without the CLI target.
 * Invariant: pure functions, no I/O. Who uses it: config/cli.h (every C++
 * binary's option and command errors), sim/args.h, sim/trace/generate.cc.
 */
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace agentcg::cli {

// Edit distance with adjacent transpositions (optimal string alignment), so
// "agentgc" is one step from "agentcg".
inline std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1] ? 1 : 0)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The known names close to `given` (at most a third of the longer name
// edited), closest first; empty when none is.
inline std::vector<std::string> close_names(const std::string& given, const std::vector<std::string>& known) {
  std::vector<std::pair<std::size_t, std::string>> scored;
  if (given.size() > 64) return {};  // no name is that long; and the table is |given| x |name|
  for (const auto& k : known) {
    const std::size_t d = edit_distance(given, k);
    if (d > 0 && d * 3 <= std::max(given.size(), k.size())) scored.emplace_back(d, k);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (const auto& s : scored)
    if (out.size() < 3) out.push_back(s.second);
  return out;
}

// " (did you mean X?)", " (did you mean X or Y?)" or "".
inline std::string did_you_mean(const std::string& given, const std::vector<std::string>& known) {
  const auto close = close_names(given, known);
  if (close.empty()) return "";
  std::string s = " (did you mean ";
  for (std::size_t i = 0; i < close.size(); ++i) s += (i ? " or " : "") + close[i];
  return s + "?)";
}

// "unknown WHAT 'NAME' (did you mean ...?); expected one of: A, B" (the
// Python CLI's _errors.unknown_name, word for word).
inline std::string unknown_name(const std::string& what, const std::string& name, const std::vector<std::string>& known) {
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  return "unknown " + what + " '" + name + "'" + did_you_mean(name, known) + "; expected one of: " + list;
}

}  // namespace agentcg::cli
