// SPDX-License-Identifier: GPL-2.0-only
// See supervisor.h.
#include "live/agentcgroupd/supervisor.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace agentcg::live {

namespace {
constexpr std::uint64_t kMaxBackoffNs = 60000000000ULL;
}

ScxSupervisor::ScxSupervisor(std::string dir, std::string name, bool watchdog, std::uint32_t max_time_sec,
                             std::string sysfs)
    : dir_(std::move(dir)),
      name_(std::move(name)),
      watchdog_(watchdog),
      max_time_ns_(static_cast<std::uint64_t>(max_time_sec) * 1000000000ULL),
      sysfs_(std::move(sysfs)) {}

ScxSupervisor::~ScxSupervisor() { stop(); }

std::string ScxSupervisor::check() const {
  char dir_real[PATH_MAX], bin_real[PATH_MAX];
  if (!realpath(dir_.c_str(), dir_real)) return "scheduler.scx_dir " + dir_ + ": " + std::strerror(errno);
  const std::string p = path();
  if (!realpath(p.c_str(), bin_real)) return p + ": " + std::strerror(errno);
  const std::string d = std::string(dir_real) + "/";
  if (std::string(bin_real).compare(0, d.size(), d) != 0)
    return p + " resolves to " + bin_real + ", outside the allow-listed scheduler.scx_dir " + dir_real;
  struct stat st{};
  if (::stat(bin_real, &st) != 0 || !S_ISREG(st.st_mode)) return p + ": not a regular file";
  if (!(st.st_mode & S_IXUSR)) return p + ": not executable";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return p + ": writable by group or others (expected mode 0755 or stricter)";
  return "";
}

bool ScxSupervisor::attached() const {
  std::ifstream in(sysfs_ + "/state");
  std::string s;
  in >> s;
  return s == "enabled";
}

bool ScxSupervisor::start(std::uint64_t now_ns) {
  why_ = check();
  if (!why_.empty()) return false;
  const std::string p = path();
  const pid_t pid = fork();
  if (pid < 0) {
    why_ = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);  // the daemon blocks its signals for signalfd
    execl(p.c_str(), p.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  pid_ = pid;
  started_ns_ = now_ns;
  seen_attached_ = false;
  restart_at_ns_ = 0;
  return true;
}

void ScxSupervisor::kill_child() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < 20; i++) {  // 2 s for a clean detach
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    usleep(100000);
  }
  ::kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void ScxSupervisor::tick(std::uint64_t now_ns) {
  if (pid_ > 0) {
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) == pid_) {
      pid_ = -1;
      why_ = WIFEXITED(st) ? "exited with status " + std::to_string(WEXITSTATUS(st))
                           : "killed by signal " + std::to_string(WTERMSIG(st));
      restart_at_ns_ = now_ns + backoff_ns_;
      backoff_ns_ = std::min(backoff_ns_ * 2, kMaxBackoffNs);
      return;
    }
    if (!watchdog_) return;
    const bool att = attached();
    if (att) {
      if (!seen_attached_) backoff_ns_ = 1000000000ULL;  // a good start resets the back-off
      seen_attached_ = true;
      return;
    }
    // Not attached: never within max_time, or ejected by the kernel after.
    if (!seen_attached_ && now_ns - started_ns_ < max_time_ns_) return;
    why_ = seen_attached_ ? "the kernel detached it (sched_ext state not enabled)"
                          : "not attached within scheduler.max_time_sec";
    watchdog_kills_++;
    kill_child();
    restart_at_ns_ = now_ns + backoff_ns_;
    backoff_ns_ = std::min(backoff_ns_ * 2, kMaxBackoffNs);
    return;
  }
  if (restart_at_ns_ && now_ns >= restart_at_ns_) {
    restarts_++;
    if (!start(now_ns)) restart_at_ns_ = now_ns + backoff_ns_;
  }
}

void ScxSupervisor::stop() {
  kill_child();
  restart_at_ns_ = 0;
}

}  // namespace agentcg::live
