// SPDX-License-Identifier: GPL-2.0-only
// See store.h.
#include "live/strategy/store.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace agentcg::strategy {

std::string StrategyStore::load() {
  std::lock_guard<std::mutex> lock(mu_);
  if (access(state_file_.c_str(), F_OK) != 0) return "";
  try {
    local_ = load_file(state_file_);
  } catch (const StrategyError& e) {
    local_.clear();
    return e.what();
  }
  generation_++;
  return "";
}

std::string StrategyStore::save_locked(const std::vector<Strategy>& next) const {
  const std::string tmp = state_file_ + ".tmp";
  const std::string text = to_json(next).dump(2) + "\n";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot write " + tmp + ": " + std::strerror(errno);
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string err = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return "cannot write " + tmp + ": " + err;
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return "cannot sync " + tmp + ": " + std::strerror(errno);
  }
  if (::rename(tmp.c_str(), state_file_.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    ::unlink(tmp.c_str());
    return "cannot rename " + tmp + " to " + state_file_ + ": " + err;
  }
  return "";
}

StoreResult StrategyStore::create(std::vector<Strategy> batch) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Strategy> next = local_;
  std::set<std::string> names;
  for (const auto& s : local_) names.insert(s.name);
  for (auto& s : batch) {
    if (names.count(s.name)) return {409, "strategy '" + s.name + "' already exists (DELETE it first)"};
    names.insert(s.name);
    next.push_back(std::move(s));
  }
  try {
    normalize(next, "request");
  } catch (const StrategyError& e) {
    return {400, e.what()};
  }
  if (std::string err = save_locked(next); !err.empty()) return {500, err};
  local_ = std::move(next);
  generation_++;
  return {201, ""};
}

StoreResult StrategyStore::remove(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Strategy> next;
  for (const auto& s : local_)
    if (s.name != name) next.push_back(s);
  if (next.size() == local_.size()) return {404, "no strategy named '" + name + "'"};
  normalize(next, "state");
  if (std::string err = save_locked(next); !err.empty()) return {500, err};
  local_ = std::move(next);
  generation_++;
  return {200, ""};
}

void StrategyStore::set_cluster(std::vector<Strategy> all) {
  std::lock_guard<std::mutex> lock(mu_);
  cluster_ = std::move(all);
  generation_++;
}

std::vector<Strategy> StrategyStore::local() const {
  std::lock_guard<std::mutex> lock(mu_);
  return local_;
}

std::vector<Strategy> StrategyStore::cluster() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cluster_;
}

std::vector<Strategy> StrategyStore::effective() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Strategy> all = local_;
  all.insert(all.end(), cluster_.begin(), cluster_.end());
  for (size_t i = 0; i < all.size(); i++) all[i].action.strategy_id = static_cast<std::uint32_t>(i + 1);
  return all;
}

std::uint64_t StrategyStore::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

Resolved resolve(const std::vector<Strategy>& all, const std::vector<CgroupInfo>& cgroups,
                 const std::vector<TaskInfo>& tasks, const monitor::PodDirectory& pods) {
  Resolved r;
  auto target_of = [&](const std::string& path) {
    Target t;
    t.cgroup_path = path;
    if (const auto ref = monitor::pod_of_cgroup_path(path)) {
      if (const monitor::PodInfo* info = pods.find(ref->pod_uid)) {
        t.ns = &info->ns;
        t.labels = &info->labels;
      }
    }
    return t;
  };
  bool any_pid_level = false;
  for (const auto& s : all) any_pid_level = any_pid_level || s.selector.pid_level();
  for (const auto& c : cgroups) {
    const Target t = target_of(c.path);
    for (const auto& s : all) {
      if (s.selector.pid_level() || !matches_cgroup(s.selector, t)) continue;
      r.cgroups[c.id] = {s.action, s.name, c.path};
      break;
    }
  }
  if (!any_pid_level) return r;
  for (const auto& task : tasks) {
    Target t = target_of(task.cgroup_path);
    t.comm = task.comm;
    t.pid = task.tgid;
    for (const auto& s : all) {
      if (!s.selector.pid_level() || !matches_task(s.selector, t)) continue;
      r.pids[task.tgid] = {s.action, s.name, task.comm + " (" + task.cgroup_path + ")"};
      break;
    }
  }
  return r;
}

std::vector<TaskInfo> read_tasks(const std::string& proc_root) {
  std::vector<TaskInfo> out;
  DIR* d = opendir(proc_root.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const unsigned long pid = std::strtoul(e->d_name, &end, 10);
    if (!end || *end || pid == 0) continue;
    const std::string base = proc_root + "/" + e->d_name;
    TaskInfo t;
    t.tgid = static_cast<std::uint32_t>(pid);
    std::ifstream comm(base + "/comm");
    if (!std::getline(comm, t.comm)) continue;  // exited meanwhile
    std::ifstream cg(base + "/cgroup");
    std::string line;
    while (std::getline(cg, line))
      if (line.rfind("0::", 0) == 0) t.cgroup_path = line.substr(3);
    out.push_back(std::move(t));
  }
  closedir(d);
  std::sort(out.begin(), out.end(), [](const TaskInfo& a, const TaskInfo& b) { return a.tgid < b.tgid; });
  return out;
}

}  // namespace agentcg::strategy
