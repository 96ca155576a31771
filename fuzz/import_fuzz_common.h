// SPDX-License-Identifier: GPL-2.0-only
// Shared check of the importer fuzz targets: a non-strict import of any
// input either succeeds with a trace that validate() accepts and that
// parses back from its text (what `trace import` then `run` do), or throws
// ImportError naming the file; nothing else may escape.
#pragma once

#include <functional>
#include <string>

#include "fuzz/fuzz_target.h"
#include "sim/import/import.h"
#include "sim/trace/trace.h"

namespace agentcg::fuzz {

inline void check_import(const std::function<import::Result()>& run_import) {
  import::Result r;
  try {
    r = run_import();
  } catch (const import::ImportError&) {
    return;
  }
  try {
    trace::validate(r.trace);
    (void)trace::parse_trace(trace::to_json_text(r.trace), "imported.json");
  } catch (const trace::TraceError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    AGENTCG_FUZZ_CHECK(false, "a non-strict import produced a trace that validate() or the parser rejects");
  }
}

}  // namespace agentcg::fuzz
