// SPDX-License-Identifier: GPL-2.0-only
// agentcg-monitor: the scheduler monitor on its own, without agentcgroupd:
// loads bpf/monitor.bpf.c, prints "agentcg-monitor: ready", waits for
// SIGINT/SIGTERM (or --seconds S), then prints the Prometheus text of the
// monitor (--print) and, with --prog-stats (kernel.bpf_stats_enabled=1), a
// line "agentcg-monitor: progstat RUN_CNT RUN_TIME_NS" summed over its BPF
// programs: the monitor's own CPU cost. Used by live/monitor/bench_hackbench.sh (overhead with
// and without the monitor) and for debugging on a node.
// Exit codes: 0 ok (and --help, --version), 2 bad command line, 3 the monitor
// could not load.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "config/cli.h"
#include "live/monitor/sched_monitor.h"

namespace {
volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }
}  // namespace

int main(int argc, char** argv) {
  long seconds = -1;
  bool print = false;
  bool prog_stats = false;
  CLI::App app{"The scheduler monitor on its own (bpf/monitor.bpf.c), without agentcgroupd.", "agentcg-monitor"};
  agentcg::cli::setup(app);
  app.add_option("--seconds", seconds, "stop after S seconds (default: at SIGINT/SIGTERM)")
      ->check(CLI::Range(0L, 31536000L))
      ->type_name("S");
  app.add_flag("--print", print, "print the monitor's Prometheus text at the end");
  app.add_flag("--prog-stats", prog_stats, "print the monitor's BPF run count and time (kernel.bpf_stats_enabled=1)");
  if (auto rc = agentcg::cli::parse(app, argc, argv)) return *rc;
  agentcg::monitor::SchedMonitor mon;
  if (!mon.start()) {
    std::fprintf(stderr, "agentcg-monitor: %s\n", mon.why().c_str());
    return 3;
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  std::printf("agentcg-monitor: ready (cgroup v2 at %s)\n", mon.cgroup2_root().c_str());
  std::fflush(stdout);
  for (long t = 0; !g_stop && (seconds < 0 || t < seconds * 10); t++) usleep(100000);
  if (print) {
    const agentcg::monitor::PodDirectory none;
    std::fputs(agentcg::monitor::render_monitor_metrics(mon.snapshot(), none).c_str(), stdout);
  }
  if (prog_stats) {
    const auto ps = mon.prog_stats();
    std::printf("agentcg-monitor: progstat %llu %llu\n", static_cast<unsigned long long>(ps.first),
                static_cast<unsigned long long>(ps.second));
  }
  return 0;
}
