// SPDX-License-Identifier: GPL-2.0-only
// `trace mix`: a crowded machine built from recorded sessions. One session
// of the AgentCgroup study uses 7-23 % of a core, so real contention comes
// from many sessions at once: mix imports each recording once (an
// AgentCgroup task folder, an AgentCgroup eBPF .jsonl, or an agentcg trace)
// and lays out `sessions` copies on one machine, session i (0-based) taking
// the recordings in a seeded order (each used in turn before any repeats)
// and starting at i x stagger plus a seeded jitter of up to stagger / 2;
// each copy gets its own cgroup /session-N (trace merge's layout) and pids
// renumbered. Optionally an interactive shell in /interactive (the crowded
// generator's), and a stop time.
// Invariant: deterministic: output depends only on the inputs and options.
// Who calls it: sim/import/commands.cc (`trace mix`), tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/trace/trace.h"

namespace agentcg::import {

struct MixOptions {
  std::uint32_t sessions = 40;
  std::uint32_t cpus = 8;
  std::uint64_t stagger_ns = 2000000000ULL;
  std::optional<std::uint64_t> duration_ns;  // stop time; absent = until all exit
  std::uint64_t seed = 1;
  std::uint32_t interactive = 1;  // interactive shells in /interactive
  std::string name = "mix";
};

// `inputs`: imported recordings (at least one). Throws std::invalid_argument
// on an empty input list or zero sessions.
trace::Trace mix_sessions(const std::vector<trace::Trace>& inputs, const MixOptions& opts,
                          std::vector<std::string>* warnings = nullptr);

// Loads one recording for mix: a folder = agentcgroup-task, *.jsonl =
// agentcgroup-ebpf, anything else = an agentcg trace (JSON). Throws
// ImportError / TraceError naming the file.
trace::Trace load_recording(const std::string& path);

}  // namespace agentcg::import
