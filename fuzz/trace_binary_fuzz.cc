// SPDX-License-Identifier: GPL-2.0-only
// Fuzz target: the binary trace reader (sim/trace/binary.cc, then
// validate.cc). Invariants: any input either loads or throws TraceError (no
// other exception, no crash, memory bounded by the file's size: every count
// is checked against the bytes left and a file-wide budget, nesting is
// capped); the file reader (read_binary_trace(), through a 7-byte window so
// that reads cross window ends) gives the same trace or the same error; a
// loaded trace written again is a fixed point of the binary form, and its
// JSON text parses back to the same JSON text.
#include <stdio.h>  // fmemopen

#include <memory>
#include <string>

#include "fuzz/fuzz_target.h"
#include "sim/trace/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace agentcg::trace;
  // What the file reader makes of the same bytes: to_binary() of its trace, or its error.
  std::string from_file;
  if (size > 0) {  // (fmemopen takes no empty buffer)
    std::unique_ptr<FILE, int (*)(FILE*)> f(fmemopen(const_cast<std::uint8_t*>(data), size, "rb"), &fclose);
    AGENTCG_FUZZ_CHECK(f != nullptr, "fmemopen failed");
    try {
      from_file = to_binary(read_binary_trace(f.get(), size, "fuzz.agtb", 7));
    } catch (const TraceError& e) {
      from_file = e.what();
    }
  }
  Trace t;
  try {
    t = parse_binary_trace(reinterpret_cast<const char*>(data), size, "fuzz.agtb");
  } catch (const TraceError& e) {
    AGENTCG_FUZZ_CHECK(size == 0 || from_file == e.what(), "the file reader gives another error than the bytes' one");
    return 0;  // rejected with file/byte/pointer: the expected outcome for most inputs
  }
  const std::string bin = to_binary(t);
  AGENTCG_FUZZ_CHECK(size == 0 || from_file == bin, "the file reader gives another trace than the bytes' one");
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
