// SPDX-License-Identifier: GPL-2.0-only
// Importer of GPU cluster job traces in CSV (the Tiresias / Philly style
// columns job_id,num_gpu,submit_time,iterations,model_name,duration,interval,
// times in seconds) into a trace with a "gpu" section (sim/gpu/README.md).
// Columns are found by the header, in any order; only `duration` is
// required (the Tiresias sample in ../shared/traces/gpu-jobs/ has just that
// one). The file is streamed line by line. A malformed line is skipped and
// counted (reported in Trace::generator), or with `strict` raised as
// trace::TraceError naming the file, the line and the column.
// Who calls it: the trace CLI's importer dispatch, Python, tests.
#pragma once

#include <cstdint>
#include <string>

#include "sim/trace/trace.h"

namespace agentcg::sim::gpu {

struct ImportOptions {
  bool strict = false;
  std::uint32_t gpus = 1;                   // modelled GPUs
  double gpu_memory_gb = 16;                // GiB each
  std::string pcie = "gen3";
  std::uint64_t interarrival_ns = 60000000000ull;  // when there is no submit_time column: row x this
  std::uint64_t max_iterations = 1000;      // iterations per job are capped (event count)
  std::uint64_t iteration_ns = 1000000000ull;  // when there is no iterations column
  std::uint64_t max_jobs = 0;               // 0 = all rows
  std::uint64_t default_memory_bytes = 4ull << 30;  // unknown or missing model_name
};

// Throws trace::TraceError (file, line, column) for an unreadable file, a
// header without `duration`, or (strict) a malformed line.
trace::Trace import_gpu_csv(const std::string& path, const ImportOptions& options);

// One paragraph for stderr: jobs, GPUs, GPUs asked, what was skipped or
// refused and why (from the trace's generator provenance).
std::string import_summary(const trace::Trace& imported);

// Training-memory footprint of a model name (lower case, as in the traces),
// or 0 when unknown. See the table in gpu_csv_import.cc for sources.
std::uint64_t model_memory_bytes(const std::string& model_name);

}  // namespace agentcg::sim::gpu
