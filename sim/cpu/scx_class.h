// SPDX-License-Identifier: GPL-2.0-only
// The flatcg and agentcg scheduling classes of the CPU model: thin glue from
// the sched_ext-like SchedClass callbacks (sim/cpu/sched_class.h) to the
// policy in core/include/agentcg/{flatcg,agentcg,bandwidth}.h, written the
// way bpf/agentcg.bpf.c glues the same headers to the kernel, so the
// simulator runs exactly the decisions the live scheduler makes.
//
// Dispatch model (scx_flatcg): the group with the smallest effective cvtime
// among groups with queued tasks (and no throttled ancestor) is picked, then
// its task with the smallest task vtime. agentcg = flatcg + the features of
// agentcg_tunables.features; flatcg = the same class with features = 0.
//
// Who calls it: sim/api.cc through make_scx_class(); tests.
#pragma once

#include <memory>
#include <string>

#include "agentcg/tunables.h"
#include "sim/cpu/sched_class.h"

namespace agentcg::sim {

// How often the class polls memory.events "high" (agentcgroupd's
// monitor.poll_interval_ms default) and ages fork-storm state.
inline constexpr Time kScxPollInterval = Time::from_ms(10);

// flatcg: hierarchical weights flattened into cgroup vtime; no agentcg feature.
std::unique_ptr<SchedClass> make_flatcg_class(const agentcg_tunables& tunables);
// agentcg: flatcg plus the features enabled in tunables.features.
std::unique_ptr<SchedClass> make_agentcg_class(const agentcg_tunables& tunables);
// "flatcg" or "agentcg" -> the class; any other name -> nullptr.
std::unique_ptr<SchedClass> make_scx_class(const std::string& policy,
                                           const agentcg_tunables& tunables);

}  // namespace agentcg::sim
