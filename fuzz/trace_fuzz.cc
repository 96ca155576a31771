// SPDX-License-Identifier: GPL-2.0-only
// Fuzz target: the trace parser (sim/trace/parse.cc + validate.cc) and the
// writer. Invariants: any input either parses or throws TraceError (no other
// exception, no crash, bounded time and memory: the depth limit); a parsed
// trace written with to_json_text() parses again, and writing that is a
// fixed point (the round trip of traces/README.md).
#include <string>

#include "fuzz/fuzz_target.h"
#include "sim/trace/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace agentcg::trace;
  const std::string text(reinterpret_cast<const char*>(data), size);
  Trace t;
  try {
    t = parse_trace(text, "fuzz.json");
  } catch (const TraceError&) {
    return 0;  // rejected with file/line/pointer: the expected outcome for most inputs
  }
  const std::string once = to_json_text(t);
  Trace again;
  try {
    again = parse_trace(once, "roundtrip.json");
  } catch (const TraceError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    AGENTCG_FUZZ_CHECK(false, "a parsed trace, written, does not parse again");
  }
  AGENTCG_FUZZ_CHECK(to_json_text(again) == once, "write(parse(write(t))) differs from write(t)");
  return 0;
}
