// SPDX-License-Identifier: GPL-2.0-only
// Supervises an external sched_ext scheduler for daemon.mode scx (seed
// 001's scheduler.mode scx + scheduler_name): runs
// `scheduler.scx_dir/<scheduler_name>` only if it resolves inside that
// allow-listed directory to a regular, executable file that is not
// writable by group or others; with scheduler.max_time_watchdog it must be
// attached (the kernel's /sys/kernel/sched_ext/state says "enabled") within
// scheduler.max_time_sec of its start and stay attached, otherwise it is
// stopped (SIGTERM, SIGKILL after 2 s) and started again after a back-off
// (1 s doubling to 60 s); an exited child is restarted the same way. The
// kernel's default scheduler runs whenever none is attached.
//
// Invariants: one child at a time; tick() is called from the daemon's loop
// (never blocks); the sysfs root is a parameter so tests can point it at a
// directory they write (a test double of the kernel's sched_ext files).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace agentcg::live {

class ScxSupervisor {
 public:
  ScxSupervisor(std::string dir, std::string name, bool watchdog, std::uint32_t max_time_sec,
                std::string sched_ext_sysfs = "/sys/kernel/sched_ext");
  ~ScxSupervisor();

  // Checks the allow-list; "" when the binary may run, else why not.
  std::string check() const;
  // Starts the child (after check()); false with why() when it cannot.
  bool start(std::uint64_t now_ns);
  // Reaps, runs the watchdog, restarts after the back-off.
  void tick(std::uint64_t now_ns);
  void stop();

  bool running() const { return pid_ > 0; }
  bool attached() const;  // the kernel says a sched_ext scheduler is enabled
  std::uint64_t restarts() const { return restarts_; }
  std::uint64_t watchdog_kills() const { return watchdog_kills_; }
  const std::string& why() const { return why_; }
  std::string path() const { return dir_ + "/" + name_; }

 private:
  void kill_child();

  std::string dir_, name_;
  bool watchdog_;
  std::uint64_t max_time_ns_;
  std::string sysfs_;
  pid_t pid_ = -1;
  std::uint64_t started_ns_ = 0;
  bool seen_attached_ = false;
  std::uint64_t restart_at_ns_ = 0;  // 0 = no restart pending
  std::uint64_t backoff_ns_ = 1000000000ULL;
  std::uint64_t restarts_ = 0, watchdog_kills_ = 0;
  std::string why_;
};

}  // namespace agentcg::live
