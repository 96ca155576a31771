// SPDX-License-Identifier: GPL-2.0-only
// See cgroupfs.h.
#include "live/cgroupfs/cgroupfs.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace agentcg::live {

namespace {

constexpr int kMaxDepth = 32;

void walk(const std::filesystem::path& root, const std::filesystem::path& dir, int depth,
          std::vector<CgroupEntry>& out) {
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
  // Lexical, not std::filesystem::relative(): that one resolves the path
  // on disk and throws when the cgroup is removed between the stat() above
  // and this line (seen in the VM: a fork-storm scenario's cgroup removed
  // while /metrics walked the tree, and the sanitized agentcgroupd died of
  // the uncaught filesystem_error). `dir` is `root` joined with the names
  // directory_iterator gave, symlinks skipped, so lexical is the same path.
  std::string rel = "/" + dir.lexically_relative(root).generic_string();
  if (rel == "/.") rel = "/";
  out.push_back({rel, static_cast<std::uint64_t>(st.st_ino)});
  if (depth >= kMaxDepth) return;
  std::error_code ec;
  std::vector<std::filesystem::path> kids;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    std::error_code ec2;
    if (e.is_directory(ec2) && !e.is_symlink(ec2)) kids.push_back(e.path());
  }
  std::sort(kids.begin(), kids.end());
  for (const auto& k : kids) walk(root, k, depth + 1, out);
}

}  // namespace

std::vector<CgroupEntry> walk_cgroups(const std::string& root) {
  std::vector<CgroupEntry> out;
  walk(std::filesystem::path(root), std::filesystem::path(root), 0, out);
  std::sort(out.begin(), out.end(),
            [](const CgroupEntry& a, const CgroupEntry& b) { return a.path < b.path; });
  return out;
}

std::optional<std::string> read_small_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string escape_label(const std::string& v) {
  std::string o;
  o.reserve(v.size());
  for (const char c : v) {
    if (c == '\\') o += "\\\\";
    else if (c == '"') o += "\\\"";
    else if (c == '\n') o += "\\n";
    else o += c;
  }
  return o;
}

}  // namespace agentcg::live
