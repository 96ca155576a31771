// SPDX-License-Identifier: GPL-2.0-only
/*
 * The one duration grammar and the one size grammar of every agentcg program
 * (simulator CLI, trace generators, importers, player, recorder, gpud,
 * gpuctl, the CUDA shim's environment). python/agentcg/units.py accepts the
 * same language; core/units/units_table.json lists accepted and rejected
 * forms and both units_test.cc and tests/python/test_units.py read it.
 *
 * duration := NUMBER UNIT          UNIT: ns us ms s m (minutes) h
 * size     := NUMBER [UNIT]        no unit or B: bytes
 *                                  K M G T P (any case), KiB MiB GiB TiB PiB: 2^10..2^50
 *                                  kB KB MB GB TB PB: 10^3..10^15 (SI)
 * NUMBER   := DIGITS [ "." DIGITS ]   at most 9 fractional digits
 *
 * Invariants: no sign, no white space, no exponent; a duration needs its
 * unit (a bare "10" was 10 ns to one tool and 10 s to another); the value
 * must be a whole number of ns / bytes ("1.5ns", "0.5B" are rejected, not
 * rounded) and fit in u64. The arithmetic is exact (integers only), so the
 * result never depends on floating point. Callers check ranges and give
 * kDurationForms / kSizeForms in their error message.
 *
 * Header-only and free of I/O so the LD_PRELOAD shim can use it without
 * linking a library.
 */
#pragma once

#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <string_view>

namespace agentcg::units {

// For "expected ..." in error messages.
inline constexpr const char* kDurationForms = "a duration with a unit: ns, us, ms, s, m or h (e.g. 500ms, 2.5s, 10s)";
inline constexpr const char* kSizeForms =
    "a size: bytes, or a number with K/M/G/T (binary), KiB/MiB/GiB/TiB (binary) or kB/MB/GB/TB (10^3..) "
    "(e.g. 4096, 512MiB, 16G, 1.5GiB)";

namespace detail {

// NUMBER x mult, exactly; nullopt when not a NUMBER, not whole or too large.
inline std::optional<std::uint64_t> scaled(std::string_view num, std::uint64_t mult) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t whole = 0, frac = 0, frac_div = 1;
  std::size_t i = 0, int_digits = 0, frac_digits = 0;
  for (; i < num.size() && num[i] >= '0' && num[i] <= '9'; ++i, ++int_digits) {
    const std::uint64_t d = static_cast<std::uint64_t>(num[i] - '0');
    if (whole > (kMax - d) / 10) return std::nullopt;
    whole = whole * 10 + d;
  }
  if (int_digits == 0) return std::nullopt;
  if (i < num.size()) {
    if (num[i] != '.') return std::nullopt;
    for (++i; i < num.size(); ++i, ++frac_digits) {
      if (num[i] < '0' || num[i] > '9' || frac_digits == 9) return std::nullopt;
      frac = frac * 10 + static_cast<std::uint64_t>(num[i] - '0');
      frac_div *= 10;
    }
    if (frac_digits == 0) return std::nullopt;
  }
  if (whole > kMax / mult) return std::nullopt;
  // frac / frac_div x mult with g = gcd(mult, frac_div): frac x (mult / g)
  // < frac_div x mult / g <= max(mult, 10^9), so it cannot overflow.
  const std::uint64_t g = std::gcd(mult, frac_div);
  const std::uint64_t num_part = frac * (mult / g), den = frac_div / g;
  if (num_part % den != 0) return std::nullopt;  // not a whole ns / byte
  const std::uint64_t add = num_part / den;
  if (whole * mult > kMax - add) return std::nullopt;
  return whole * mult + add;
}

// Splits "2.5GiB" into "2.5" and "GiB".
inline std::size_t number_end(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
  return i;
}

}  // namespace detail

inline std::optional<std::uint64_t> parse_duration_ns(std::string_view text) {
  const std::size_t n = detail::number_end(text);
  const std::string_view unit = text.substr(n);
  std::uint64_t mult = 0;
  if (unit == "ns") mult = 1;
  else if (unit == "us") mult = 1000ULL;
  else if (unit == "ms") mult = 1000000ULL;
  else if (unit == "s") mult = 1000000000ULL;
  else if (unit == "m") mult = 60000000000ULL;
  else if (unit == "h") mult = 3600000000000ULL;
  else return std::nullopt;
  return detail::scaled(text.substr(0, n), mult);
}

inline std::optional<std::uint64_t> parse_size_bytes(std::string_view text) {
  const std::size_t n = detail::number_end(text);
  const std::string_view unit = text.substr(n);
  struct Unit {
    std::string_view name;
    std::uint64_t mult;
  };
  static constexpr Unit kUnits[] = {
      {"", 1},        {"B", 1},
      {"K", 1ULL << 10}, {"k", 1ULL << 10}, {"KiB", 1ULL << 10},
      {"M", 1ULL << 20}, {"m", 1ULL << 20}, {"MiB", 1ULL << 20},
      {"G", 1ULL << 30}, {"g", 1ULL << 30}, {"GiB", 1ULL << 30},
      {"T", 1ULL << 40}, {"t", 1ULL << 40}, {"TiB", 1ULL << 40},
      {"P", 1ULL << 50}, {"p", 1ULL << 50}, {"PiB", 1ULL << 50},
      {"kB", 1000ULL},   {"KB", 1000ULL},   {"MB", 1000000ULL},
      {"GB", 1000000000ULL}, {"TB", 1000000000000ULL}, {"PB", 1000000000000000ULL},
  };
  for (const Unit& u : kUnits)
    if (unit == u.name) return detail::scaled(text.substr(0, n), u.mult);
  return std::nullopt;
}

}  // namespace agentcg::units
