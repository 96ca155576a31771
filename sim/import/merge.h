// SPDX-License-Identifier: GPL-2.0-only
// `trace merge`: packs several recorded sessions onto one machine. Single
// agent sessions use little CPU (7-13 % of a core on average in the
// AgentCgroup study), so contention comes from many of them at once.
//
// Session N (1-based, in input order) gets its own cgroup /session-N; the
// input's cgroups move below it ("/" -> /session-N, "/a" -> /session-N/a,
// the root's limits become /session-N's), its pids are renumbered from 1 up
// across all sessions in input order (parents and fork ops follow), and its
// start times are shifted by (N - 1) x stagger. Processes without an agent
// session get the input trace's name (or session-N).
// Invariant: deterministic: output depends only on the inputs and options.
// Who calls it: sim/import/commands.cc, tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/trace/trace.h"

namespace agentcg::import {

struct MergeOptions {
  std::uint64_t stagger_ns = 0;
  std::uint32_t cpus = 0;   // 0 = the largest machine among the inputs
  std::string name = "merged";
};

// `warnings` receives what could not be carried over (e.g. "gpu" sections).
trace::Trace merge_sessions(const std::vector<trace::Trace>& inputs, const MergeOptions& opts,
                            std::vector<std::string>* warnings = nullptr);

// The duration grammar lives with the trace format (sim/trace/trace.h), so
// that the live player reads --duration without linking the importers.
using trace::parse_duration_ns;

}  // namespace agentcg::import
