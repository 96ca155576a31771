// SPDX-License-Identifier: GPL-2.0-only
// The `scheduler:` section of the config: the seed's keys, into
// struct agentcg_tunables (core/include/agentcg/tunables.h).
#include <yaml-cpp/yaml.h>

#include "config/config.h"

namespace agentcg::config {

void parse_scheduler_section(const YAML::Node& n, const Reader& r, agentcg_tunables& t) {
  const char* s = "scheduler";
  r.only_keys(n, s,
              "features,startup_boost_window_ms,startup_boost_vtime_ms,wakeup_boost_vtime_ms,"
              "base_slice_ms,boosted_slice_ms,min_slice_us,fork_window_sec,fork_storm_threshold,"
              "io_bound_wakeup_rate,mem_penalty_max,mem_penalty_decay_sec");
  auto get = [&](const char* key, u32& field, u64 min, u64 max) {
    if (n[key]) field = static_cast<u32>(r.u64(n, s, key, min, max));
  };
  get("startup_boost_window_ms", t.startup_boost_window_ms, 1, 10000);
  get("startup_boost_vtime_ms", t.startup_boost_vtime_ms, 0, 10000);
  get("wakeup_boost_vtime_ms", t.wakeup_boost_vtime_ms, 0, 10000);
  get("base_slice_ms", t.base_slice_ms, 1, 1000);
  get("boosted_slice_ms", t.boosted_slice_ms, 1, 1000);
  get("min_slice_us", t.min_slice_us, 0, 100000);
  get("fork_window_sec", t.fork_window_sec, 1, 3600);
  get("fork_storm_threshold", t.fork_storm_threshold, 1, 1000000);
  get("io_bound_wakeup_rate", t.io_bound_wakeup_rate, 1, 1000000);
  get("mem_penalty_max", t.mem_penalty_max, 0, 4);
  get("mem_penalty_decay_sec", t.mem_penalty_decay_sec, 1, 3600);
  // Point at the key the user wrote: with only base_slice_ms given (below
  // the default boosted_slice_ms) there is no boosted_slice_ms node, and
  // asking an absent key for its position throws YAML::InvalidNode.
  if (t.boosted_slice_ms > t.base_slice_ms) {
    if (n["boosted_slice_ms"])
      r.fail(n["boosted_slice_ms"], "scheduler.boosted_slice_ms",
             "must not exceed scheduler.base_slice_ms (" + std::to_string(t.base_slice_ms) + ")");
    r.fail(n["base_slice_ms"] ? n["base_slice_ms"] : n, "scheduler.base_slice_ms",
           "must be at least scheduler.boosted_slice_ms (" + std::to_string(t.boosted_slice_ms) +
               ", the default; set boosted_slice_ms too)");
  }
  if (n["features"]) {
    const YAML::Node f = n["features"];
    r.only_keys(f, "scheduler.features", "mem_penalty,auto_boost,wakeup_boost,fork_aware,min_slice,latency,retag_stale,victim_preempt,storm_reserve");
    auto flag = [&](const char* key, u32 bit) {
      if (!f[key]) return;
      if (r.boolean(f, "scheduler.features", key)) t.features |= bit; else t.features &= ~bit;
    };
    flag("mem_penalty", AGENTCG_F_MEM_PENALTY);
    flag("auto_boost", AGENTCG_F_AUTO_BOOST);
    flag("wakeup_boost", AGENTCG_F_WAKEUP_BOOST);
    flag("fork_aware", AGENTCG_F_FORK_AWARE);
    flag("min_slice", AGENTCG_F_MIN_SLICE);
    flag("latency", AGENTCG_F_LATENCY);
    flag("retag_stale", AGENTCG_F_RETAG_STALE);
    flag("victim_preempt", AGENTCG_F_VICTIM_PREEMPT);
    flag("storm_reserve", AGENTCG_F_STORM_RESERVE);
  }
}

}  // namespace agentcg::config
