// SPDX-License-Identifier: GPL-2.0-only
// Seeded random streams with the project's own distribution code.
// std:: distributions are implementation-defined (libstdc++ and libc++ give
// different numbers for the same engine), so none are used: the same seed
// gives the same numbers on every standard library. Each component takes its
// own stream, derived from (run seed, stream key), so adding a draw in one
// component never shifts another's numbers.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

namespace agentcg::sim {

__extension__ typedef unsigned __int128 uint128_t;  // GCC/Clang builtin, for Lemire's method

inline std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// FNV-1a: a stable hash for stream names (std::hash is not stable).
constexpr std::uint64_t stable_hash(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

// xoshiro256** (Blackman & Vigna), seeded through splitmix64.
class RandomStream {
 public:
  RandomStream(std::uint64_t seed, std::uint64_t stream) {
    std::uint64_t x = seed ^ (stream * 0xd1342543de82ef95ULL + 0x2545f4914f6cdd1dULL);
    for (auto& w : s_) w = splitmix64(x);
  }
  RandomStream(std::uint64_t seed, std::string_view stream) : RandomStream(seed, stable_hash(stream)) {}

  std::uint64_t next_u64() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform01() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, bound) without modulo bias (Lemire).
  std::uint64_t below(std::uint64_t bound) {
    if (bound == 0) return 0;
    uint128_t m = static_cast<uint128_t>(next_u64()) * bound;
    auto lo = static_cast<std::uint64_t>(m);
    if (lo < bound) {
      const std::uint64_t threshold = -bound % bound;
      while (lo < threshold) {
        m = static_cast<uint128_t>(next_u64()) * bound;
        lo = static_cast<std::uint64_t>(m);
      }
    }
    return static_cast<std::uint64_t>(m >> 64);
  }
  // Uniform integer in [lo, hi] (inclusive).
  std::uint64_t uniform(std::uint64_t lo, std::uint64_t hi) { return hi <= lo ? lo : lo + below(hi - lo + 1); }
  double exponential(double mean) { return -mean * std::log1p(-uniform01()); }
  // Standard normal by Box-Muller (no cached second value: simpler to reason
  // about stream positions).
  double normal() {
    double u1 = uniform01();
    double u2 = uniform01();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  // Log-normal with the given median and shape sigma.
  double lognormal(double median, double sigma) { return median * std::exp(sigma * normal()); }
  bool bernoulli(double p) { return uniform01() < p; }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

}  // namespace agentcg::sim
