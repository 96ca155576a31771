// SPDX-License-Identifier: GPL-2.0-only
// Reading the cgroup v2 file system and writing Prometheus label values:
// what agentcgroupd (live/agentcgroupd) and the scheduler monitor
// (live/monitor) both need. Below both, so the monitor no longer includes
// the daemon. No BPF, no root needed (tests: agentcgroupd_logic_test).
//
// Invariant: walk_cgroups() is ordered by path and bounded in depth (32),
// so /metrics is stable between scrapes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace agentcg::live {

struct CgroupEntry {
  std::string path;  // relative to the cgroup root, "/" for the root itself
  std::uint64_t id;  // cgroup id = inode number of the directory (kernfs id)
};

// All cgroups under `root` (directories, recursively, bounded depth),
// sorted by path. A missing root gives an empty list.
std::vector<CgroupEntry> walk_cgroups(const std::string& root);

// Reads a whole small file (cgroup attribute); nullopt if it cannot.
std::optional<std::string> read_small_file(const std::string& path);

// A Prometheus label value with \, " and newline escaped.
std::string escape_label(const std::string& v);

}  // namespace agentcg::live
