// SPDX-License-Identifier: GPL-2.0-only
// The config keys of the strategies design: daemon.mode none/monitor/scx,
// scheduler.scheduler_name/scx_dir/max_time_watchdog/max_time_sec (beside
// the tunables, not in them), monitor.sched_monitor, the api section; each
// bad value names file, line and key.
#include <gtest/gtest.h>

#include "config/config.h"

namespace agentcg::config {
namespace {

void expect_error(const std::string& yaml, const std::string& needle) {
  try {
    load_string(yaml, "c.yaml");
    FAIL() << "accepted: " << yaml;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Seed001Config, ModesAndSupervision) {
  EXPECT_EQ(load_string("daemon:\n  mode: monitor\n", "c").daemon.mode, "none");
  EXPECT_EQ(load_string("daemon:\n  mode: none\n", "c").daemon.mode, "none");
  const Config c = load_string(
      "daemon:\n  mode: scx\nscheduler:\n  scheduler_name: scx_bpfland\n  max_time_watchdog: false\n"
      "  max_time_sec: 20\n  base_slice_ms: 5\n",
      "c");
  EXPECT_EQ(c.daemon.mode, "scx");
  EXPECT_EQ(c.supervisor.scheduler_name, "scx_bpfland");
  EXPECT_FALSE(c.supervisor.max_time_watchdog);
  EXPECT_EQ(c.supervisor.max_time_sec, 20u);
  EXPECT_EQ(c.scheduler.base_slice_ms, 5u);  // tunables still parsed
  expect_error("daemon:\n  mode: gthulhu\n", "c.yaml:2: key 'daemon.mode': expected agentcg, flatcg, scx, none or monitor");
  expect_error("daemon:\n  mode: scx\n", "scheduler.scheduler_name");
  expect_error("scheduler:\n  scheduler_name: ../bin/sh\n", "c.yaml:2: key 'scheduler.scheduler_name': expected a file name");
  expect_error("scheduler:\n  max_time_sec: 0\n", "c.yaml:2: key 'scheduler.max_time_sec'");
  expect_error("scheduler:\n  scheduler_name: x\n  base_slice_ms: 0\n", "c.yaml:3: key 'scheduler.base_slice_ms'");
  expect_error("scheduler:\n  max_time_watchdog: sometimes\n", "expected true or false");
}

TEST(Seed001Config, ApiAndMonitor) {
  const Config c = load_string(
      "api:\n  listen: 127.0.0.1:9191\n  token_file: /t\n  state_file: /s\nmonitor:\n  sched_monitor: false\n", "c");
  EXPECT_EQ(c.api.listen, "127.0.0.1:9191");
  EXPECT_EQ(c.api.token_file, "/t");
  EXPECT_FALSE(c.monitor.sched_monitor);
  expect_error("api:\n  listen: 0.0.0.0:9191\n", "c.yaml:2: key 'api.listen': expected unix:/absolute/path or 127.0.0.1:PORT");
  expect_error("api:\n  token_file: tokens\n", "api.token_file': expected an absolute path");
  expect_error("api:\n  port: 1\n", "api.port");
}

}  // namespace
}  // namespace agentcg::config
