// SPDX-License-Identifier: GPL-2.0-only
// Fuzz target: the YAML config loader (config/). Invariant: any text
// loads or throws ConfigError; no other exception type escapes (agentcgroupd
// relies on it to keep its old config on SIGHUP), no crash.
#include <string>

#include "config/config.h"
#include "fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)agentcg::config::load_string(text, "fuzz.yaml");
  } catch (const agentcg::config::ConfigError&) {
  }
  return 0;
}
