// SPDX-License-Identifier: GPL-2.0-only
// Shared pieces of the importers: errors, the malformed-line policy, the
// report (stderr summary + provenance), number/time parsing without floating
// point, and dispatch by format name.
//
// Invariant: nothing here reads a clock; ISO dates are converted with the
// proleptic Gregorian calendar arithmetic (days_from_civil), not with the
// C library's time zone machinery, so results do not depend on TZ.
// Who calls it: the importers and sim/import/commands.cc.
#include <algorithm>
#include <charconv>
#include <sstream>

#include "sim/import/builder.h"
#include "sim/import/import.h"

namespace agentcg::import {

namespace {
constexpr std::size_t kMaxMalformedExamples = 5;

std::string where(const std::string& file, std::uint64_t line) {
  return line == 0 ? file : file + ":" + std::to_string(line);
}

// Days since 1970-01-01 of a civil date (H. Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool digits(std::string_view s, std::size_t pos, std::size_t n, unsigned& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + static_cast<unsigned>(s[i] - '0');
  }
  return true;
}
}  // namespace

ImportError::ImportError(const std::string& file, std::uint64_t line, const std::string& message)
    : std::runtime_error(where(file, line) + ": " + message), file_(file), line_(line) {}

void malformed(Report& report, const Options& opts, const std::string& file, std::uint64_t line,
               const std::string& why) {
  if (opts.strict) throw ImportError(file, line, why + " (--strict)");
  ++report.malformed;
  if (report.malformed_examples.size() < kMaxMalformedExamples)
    report.malformed_examples.push_back(where(file, line) + ": " + why);
}

std::string Report::summary() const {
  std::ostringstream s;
  s << "import " << format << " " << input << ": " << lines << " lines, " << events
    << " events used";
  if (malformed != 0) s << ", " << malformed << " malformed lines skipped";
  s << "\n";
  for (const std::string& m : malformed_examples) s << "  malformed: " << m << "\n";
  for (const auto& [k, v] : counters) s << "  " << k << ": " << v << "\n";
  for (const auto& [k, v] : unrepresented) s << "  not represented: " << k << " (" << v << ")\n";
  return s.str();
}

nlohmann::json Report::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  j["format"] = format;
  j["lines"] = lines;
  j["events"] = events;
  j["malformed"] = malformed;
  j["malformed_examples"] = malformed_examples;
  j["counters"] = nlohmann::json::object();
  for (const auto& [k, v] : counters) j["counters"][k] = v;
  j["not_represented"] = nlohmann::json::object();
  for (const auto& [k, v] : unrepresented) j["not_represented"][k] = v;
  return j;
}

std::string stem(const std::string& path) {
  std::string base = path;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  const auto slash = base.find_last_of('/');
  if (slash != std::string::npos) base = base.substr(slash + 1);
  const auto dot = base.find_last_of('.');
  if (dot != std::string::npos && dot != 0) base = base.substr(0, dot);
  return base;
}

void finish_trace(trace::Trace& t, const Report& report, const Options& opts,
                  const std::string& what) {
  t.name = opts.name.empty() ? stem(report.input) : opts.name;
  std::ostringstream d;
  d << "Imported from a " << report.format << " recording (" << stem(report.input) << "): "
    << what << ".";
  if (!report.unrepresented.empty()) {
    d << " Not represented:";
    bool first = true;
    for (const auto& [k, v] : report.unrepresented) {
      d << (first ? " " : "; ") << k << " (" << v << ")";
      first = false;
    }
    d << ".";
  }
  if (report.malformed != 0) d << " " << report.malformed << " malformed lines skipped.";
  t.description = d.str();
  nlohmann::json g = nlohmann::json::object();
  g["kind"] = "import";
  g["format"] = report.format;
  // The file's base name only: provenance must not leak this machine's paths.
  const auto slash = report.input.find_last_of('/');
  g["input"] = slash == std::string::npos ? report.input : report.input.substr(slash + 1);
  g["report"] = report.to_json();
  t.generator = g;
  t.source = report.input;
  // Every importer ends here: what it built must be a trace `run` accepts
  // (the one validate()), or the import fails naming the file, never later.
  // Bad lines are skipped per line before this; what is left to fail here is
  // whole-recording limits such as the simulator's cap on CPU work.
  try {
    trace::validate(t);
  } catch (const trace::TraceError& e) {
    throw ImportError(report.input, 0,
                      "the imported trace is not one the simulator accepts: " + e.pointer() + ": " + e.message());
  }
}

void add_cgroup_chain(trace::Trace& t, const std::string& path) {
  if (path.empty() || path == "/") return;
  auto add = [&t](const std::string& p) {
    for (const trace::CgroupSpec& c : t.cgroups)
      if (c.path == p) return;
    trace::CgroupSpec c;
    c.path = p;
    t.cgroups.push_back(c);
  };
  std::size_t pos = 0;
  while ((pos = path.find('/', pos + 1)) != std::string::npos) add(path.substr(0, pos));
  add(path);
}

bool read_bounded_line(std::istream& in, std::string& line, bool& too_long) {
  line.clear();
  too_long = false;
  std::streambuf* sb = in.rdbuf();
  if (sb == nullptr || !in.good()) return false;
  bool any = false;
  for (;;) {
    const int c = sb->sbumpc();
    if (c == std::char_traits<char>::eof()) {
      in.setstate(std::ios::eofbit);
      return any;
    }
    any = true;
    if (c == '\n') return true;
    if (line.size() < kMaxLineBytes) line.push_back(static_cast<char>(c));
    else too_long = true;
  }
}

std::string utf8_or_replace(const std::string& s) {
  if (trace::valid_utf8(s)) return s;
  // Decode greedily: keep each valid sequence, replace each other byte.
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    std::size_t len = 1;
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3;
    else if (c >= 0xF0 && c <= 0xF4) len = 4;
    if (c < 0x80) {
      out += s[i++];
      continue;
    }
    if (c >= 0xC2 && c <= 0xF4 && i + len <= s.size() && trace::valid_utf8(s.substr(i, len))) {
      out.append(s, i, len);
      i += len;
    } else {
      out += '?';
      ++i;
    }
  }
  return out;
}

std::optional<std::uint64_t> parse_seconds_ns(std::string_view s) {
  if (s.empty()) return std::nullopt;
  const auto dot = s.find('.');
  const std::string_view whole = s.substr(0, dot);
  if (whole.empty()) return std::nullopt;
  std::uint64_t sec = 0;
  auto [p, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), sec);
  if (ec != std::errc() || p != whole.data() + whole.size()) return std::nullopt;
  if (sec > 18000000000ULL) return std::nullopt;  // > 570 years: not a timestamp
  std::uint64_t frac = 0;
  if (dot != std::string_view::npos) {
    const std::string_view f = s.substr(dot + 1);
    if (f.empty()) return std::nullopt;
    std::size_t n = 0;
    for (char c : f) {
      if (c < '0' || c > '9') return std::nullopt;
      if (n < 9) frac = frac * 10 + static_cast<std::uint64_t>(c - '0');
      ++n;
    }
    for (std::size_t i = n; i < 9; ++i) frac *= 10;
  }
  return sec * 1000000000ULL + frac;
}

std::optional<std::uint64_t> parse_iso8601_utc_ns(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS[.fff...][Z]
  unsigned y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0;
  if (s.size() < 19 || !digits(s, 0, 4, y) || s[4] != '-' || !digits(s, 5, 2, mo) ||
      s[7] != '-' || !digits(s, 8, 2, d) || (s[10] != 'T' && s[10] != ' ') ||
      !digits(s, 11, 2, h) || s[13] != ':' || !digits(s, 14, 2, mi) || s[16] != ':' ||
      !digits(s, 17, 2, se))
    return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60 || y < 1970)
    return std::nullopt;
  std::size_t pos = 19;
  std::uint64_t frac = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    std::size_t n = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (n < 9) frac = frac * 10 + static_cast<std::uint64_t>(s[pos] - '0');
      ++n;
      ++pos;
    }
    if (n == 0) return std::nullopt;
    for (std::size_t i = n; i < 9; ++i) frac *= 10;
  }
  if (pos < s.size() && s[pos] == 'Z') ++pos;
  else if (pos + 6 == s.size() && (s.substr(pos) == "+00:00" || s.substr(pos) == "-00:00"))
    pos += 6;
  if (pos != s.size()) return std::nullopt;
  const std::int64_t days = days_from_civil(y, mo, d);
  const std::uint64_t secs = static_cast<std::uint64_t>(days) * 86400ULL + h * 3600ULL +
                             mi * 60ULL + se;
  return secs * 1000000000ULL + frac;
}

std::string formats() { return "agentcgroup-ebpf, agentcgroup-task, ftrace, perf, agentcg-record, gpu-csv"; }

Result import_any(const std::string& format, const std::string& path, const Options& opts) {
  if (format == "agentcgroup-ebpf") return import_agentcgroup_ebpf_file(path, opts);
  if (format == "agentcgroup-task") return import_agentcgroup_task_dir(path, opts);
  if (format == "ftrace" || format == "perf") return import_ftrace_file(path, opts);
  if (format == "agentcg-record") return import_agentcg_record_dir(path, opts);
  throw std::invalid_argument("unknown format '" + format + "' (expected one of: " + formats() +
                              ")");
}

}  // namespace agentcg::import
