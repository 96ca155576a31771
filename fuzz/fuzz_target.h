// SPDX-License-Identifier: GPL-2.0-only
// The one entry point every fuzz target defines (libFuzzer's), and the check
// that turns a broken invariant into a crash the fuzzer or the replay driver
// reports. Targets: trace_fuzz.cc, import_*_fuzz.cc, config_fuzz.cc; drivers:
// libFuzzer (AGENTCG_FUZZ=ON, clang) or replay_main.cc (every other build).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

// abort() with a message: a finding, whichever driver runs the target.
#define AGENTCG_FUZZ_CHECK(cond, msg)                                              \
  do {                                                                            \
    if (!(cond)) {                                                                \
      std::fprintf(stderr, "fuzz invariant broken: %s (%s:%d)\n", msg, __FILE__, __LINE__); \
      std::abort();                                                               \
    }                                                                             \
  } while (0)
