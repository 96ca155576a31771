// SPDX-License-Identifier: GPL-2.0-only
// Simulated time: integer nanoseconds in a strong type, so that a duration
// can never be mixed up with a count or with seconds as a double. Everything
// in sim/ keeps time in Time; core/ (C99) takes the raw u64 from .ns().
#pragma once

#include <compare>
#include <cstdint>
#include <limits>

namespace agentcg::sim {

class Time {
 public:
  constexpr Time() = default;
  static constexpr Time from_ns(std::uint64_t ns) { return Time(ns); }
  static constexpr Time from_us(std::uint64_t us) { return Time(us * 1000); }
  static constexpr Time from_ms(std::uint64_t ms) { return Time(ms * 1000000); }
  static constexpr Time from_s(std::uint64_t s) { return Time(s * 1000000000); }
  static constexpr Time max() { return Time(std::numeric_limits<std::uint64_t>::max()); }
  constexpr std::uint64_t ns() const { return ns_; }

  constexpr Time operator+(Time o) const { return Time(ns_ + o.ns_); }
  // Saturates at zero: a negative simulated duration never makes sense.
  constexpr Time operator-(Time o) const { return Time(ns_ > o.ns_ ? ns_ - o.ns_ : 0); }
  constexpr Time& operator+=(Time o) { ns_ += o.ns_; return *this; }
  constexpr Time& operator-=(Time o) { ns_ = ns_ > o.ns_ ? ns_ - o.ns_ : 0; return *this; }
  constexpr Time operator*(std::uint64_t k) const { return Time(ns_ * k); }
  constexpr Time operator/(std::uint64_t k) const { return Time(ns_ / k); }
  constexpr auto operator<=>(const Time&) const = default;

 private:
  constexpr explicit Time(std::uint64_t ns) : ns_(ns) {}
  std::uint64_t ns_ = 0;
};

namespace time_literals {
constexpr Time operator""_ns(unsigned long long v) { return Time::from_ns(v); }
constexpr Time operator""_us(unsigned long long v) { return Time::from_us(v); }
constexpr Time operator""_ms(unsigned long long v) { return Time::from_ms(v); }
constexpr Time operator""_s(unsigned long long v) { return Time::from_s(v); }
}  // namespace time_literals

}  // namespace agentcg::sim
