// SPDX-License-Identifier: GPL-2.0-only
// Fuzz target: the binary trace reader (sim/trace/binary.cc, then
// validate.cc). Invariants: any input either loads or throws TraceError (no
// other exception, no crash, memory bounded by the file's size: every count
// is checked against the bytes left and a file-wide budget, nesting is
// capped); a loaded trace written again is a fixed point of the binary form,
// and its JSON text parses back to the same JSON text.
#include <string>

#include "fuzz/fuzz_target.h"
#include "sim/trace/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace agentcg::trace;
  Trace t;
  try {
    t = parse_binary_trace(reinterpret_cast<const char*>(data), size, "fuzz.agtb");
  } catch (const TraceError&) {
    return 0;  // rejected with file/byte/pointer: the expected outcome for most inputs
  }
  const std::string bin = to_binary(t);
  Trace again;
  try {
    again = parse_binary_trace(bin.data(), bin.size(), "again.agtb");
  } catch (const TraceError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    AGENTCG_FUZZ_CHECK(false, "a loaded binary trace, written, does not load again");
  }
  AGENTCG_FUZZ_CHECK(to_binary(again) == bin, "binary(load(binary(t))) differs from binary(t)");
  const std::string text = to_json_text(t);
  try {
    AGENTCG_FUZZ_CHECK(to_json_text(parse_trace(text, "fuzz.json")) == text,
                       "the JSON of a loaded binary trace does not parse back to itself");
  } catch (const TraceError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    AGENTCG_FUZZ_CHECK(false, "the JSON of a loaded binary trace does not parse");
  }
  return 0;
}
