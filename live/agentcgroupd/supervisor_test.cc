// SPDX-License-Identifier: GPL-2.0-only
// The scx supervisor without a kernel: the allow-list (a name that
// escapes the directory through a symlink, a group-writable binary and a
// missing one are refused with the reason), the max_time watchdog (a
// scheduler that never attaches is stopped after max_time_sec and started
// again after the back-off) and the restart of an exited scheduler. The
// kernel's /sys/kernel/sched_ext/state is replaced by a file the test
// writes (a test double, named as such).
#include "live/agentcgroupd/supervisor.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

namespace agentcg::live {
namespace {

constexpr std::uint64_t kSec = 1000000000ULL;

struct Dirs {
  std::string root, scx, sysfs_double;
  Dirs() {
    char tmpl[] = "/tmp/agentcg-scx-XXXXXX";
    root = mkdtemp(tmpl);
    scx = root + "/scx";
    sysfs_double = root + "/sched_ext";
    mkdir(scx.c_str(), 0755);
    mkdir(sysfs_double.c_str(), 0755);
    state("disabled");
  }
  ~Dirs() { std::system(("rm -rf " + root).c_str()); }
  void state(const char* s) const { std::ofstream(sysfs_double + "/state") << s << "\n"; }
  void script(const std::string& name, const std::string& body, mode_t mode = 0755) const {
    const std::string p = scx + "/" + name;
    std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
    chmod(p.c_str(), mode);
  }
};

TEST(ScxSupervisor, AllowList) {
  Dirs d;
  d.script("scx_ok", "sleep 30");
  d.script("scx_gw", "sleep 30", 0775);
  std::ofstream(d.root + "/outside") << "#!/bin/sh\n";
  chmod((d.root + "/outside").c_str(), 0755);
  symlink((d.root + "/outside").c_str(), (d.scx + "/scx_escape").c_str());
  EXPECT_EQ(ScxSupervisor(d.scx, "scx_ok", true, 5, d.sysfs_double).check(), "");
  EXPECT_NE(ScxSupervisor(d.scx, "scx_gw", true, 5, d.sysfs_double).check().find("writable by group"), std::string::npos);
  EXPECT_NE(ScxSupervisor(d.scx, "scx_escape", true, 5, d.sysfs_double).check().find("outside the allow-listed"), std::string::npos);
  EXPECT_NE(ScxSupervisor(d.scx, "scx_missing", true, 5, d.sysfs_double).check().find("No such file"), std::string::npos);
}

TEST(ScxSupervisor, WatchdogStopsASchedulerThatNeverAttaches) {
  Dirs d;
  d.script("scx_slow", "exec sleep 30");
  ScxSupervisor s(d.scx, "scx_slow", true, 2, d.sysfs_double);
  ASSERT_TRUE(s.start(0)) << s.why();
  s.tick(1 * kSec);  // within max_time: left alone
  EXPECT_TRUE(s.running());
  EXPECT_EQ(s.watchdog_kills(), 0u);
  s.tick(3 * kSec);  // past max_time and never attached
  EXPECT_FALSE(s.running());
  EXPECT_EQ(s.watchdog_kills(), 1u);
  EXPECT_NE(s.why().find("not attached within"), std::string::npos);
  s.tick(3 * kSec + kSec / 2);  // back-off (1 s) not over
  EXPECT_FALSE(s.running());
  s.tick(4 * kSec + 1);
  EXPECT_TRUE(s.running());
  EXPECT_EQ(s.restarts(), 1u);
  // Attached (the double says enabled): left alone; then the kernel
  // detaches it: stopped at once.
  d.state("enabled");
  s.tick(10 * kSec);
  EXPECT_TRUE(s.running());
  d.state("disabled");
  s.tick(11 * kSec);
  EXPECT_FALSE(s.running());
  EXPECT_NE(s.why().find("detached"), std::string::npos);
  s.stop();
}

TEST(ScxSupervisor, RestartsAnExitedScheduler) {
  Dirs d;
  d.script("scx_crash", "exit 3");
  ScxSupervisor s(d.scx, "scx_crash", false, 2, d.sysfs_double);
  ASSERT_TRUE(s.start(0));
  for (int i = 0; i < 50 && s.running(); i++) {
    usleep(20000);
    s.tick(0);
  }
  EXPECT_FALSE(s.running());
  EXPECT_EQ(s.why(), "exited with status 3");
  s.tick(2 * kSec);  // after the 1 s back-off
  EXPECT_EQ(s.restarts(), 1u);
  s.stop();
}

}  // namespace
}  // namespace agentcg::live
