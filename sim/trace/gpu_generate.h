// SPDX-License-Identifier: GPL-2.0-only
// Generators of synthetic GPU workloads (the trace's "gpu" section, see
// sim/gpu/README.md). trace::generate() (sim/trace/generate.cc) dispatches
// every "gpu-*" kind here. Kinds:
//   gpu-oversub  N jobs whose memory together exceeds the GPU (thrashing
//                when co-run; defaults 4 x 12 GiB on 16 GiB)
//   gpu-fit      N jobs that fit together (defaults 4 x 3 GiB on 16 GiB),
//                with host work between iterations so co-running pays off
//   gpu-quota    one long job per compute limit (--limits 25,50,75), all
//                running at once, for compute-limit accuracy
// Deterministic: same kind, seed and options -> the same trace. The seed
// only jitters arrivals (--arrival-spread-ms, default 0 = all at time 0).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/trace/trace.h"

namespace agentcg::trace::gpu {

// Throws std::invalid_argument naming an unknown kind or option, or a bad value.
trace::Trace generate_gpu_trace(const std::string& kind, std::uint64_t seed,
                                const std::map<std::string, std::string>& options);
// One block per kind with its options and defaults, for --help.
std::string gpu_generator_help();
// The GPU kinds and their options (for trace::generator_kinds()).
std::vector<GeneratorKind> gpu_generator_kinds();

}  // namespace agentcg::trace::gpu
