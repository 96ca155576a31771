// SPDX-License-Identifier: GPL-2.0-only
// Fuzz target: the AgentCgroup eBPF JSON-lines importer
// (sim/import/agentcgroup_ebpf.cc).
#include <sstream>

#include "fuzz/import_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  agentcg::fuzz::check_import([&]() {
    std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
    return agentcg::import::import_agentcgroup_ebpf(in, "fuzz.jsonl", agentcg::import::Options{});
  });
  return 0;
}
