// SPDX-License-Identifier: GPL-2.0-only
// agentcg-work: calibrated workload primitives for the live tests and the
// live comparison, run inside the test VM (a static binary: the initramfs
// has no shared libraries for it).
//
//   spin SECONDS                 burn CPU until the deadline
//   mem MB SECONDS               keep MB of anonymous memory and rewrite
//                                every page in a loop (memory.high pressure)
//   touch MB                     map MB of anonymous memory and write one byte
//                                of every page once, as agentcg-player's mem op
//                                does; prints "touch mb M pages P fault_us F
//                                free_us U": the CPU time (user + system,
//                                getrusage) of the touching and of the munmap
//   forkstorm N [PARALLEL] [MB]  fork N children that exit at once, at most
//                                PARALLEL alive, from a process holding MB
//                                (0) of memory written once; prints "forks N
//                                elapsed_ms T failed F parent_us P
//                                children_us C mb M": the CPU time of the
//                                forker (fork, wait, reap; the writing of
//                                its memory left out) and of its children
//                                (their exits), getrusage(2)
//   wakelat PERIOD_US SECONDS    periodic sleeper: wakeup latency (actual -
//                                intended wakeup) as "wakelat_us p50 p90 p99 max n"
//
// Times are CLOCK_MONOTONIC; results go to stdout as one line each so the
// guest scripts can parse them with awk. Bad arguments exit 2 with a message
// (CLI11 via config/cli.h; --help, --version).
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "config/cli.h"

namespace {

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "agentcg-work: error: %s\nRun agentcg-work --help for the commands.\n", why);
  std::exit(agentcg::cli::kUsageExit);
}

volatile std::uint64_t g_sink;

int spin(std::uint64_t secs) {
  const std::uint64_t end = now_ns() + secs * 1000000000ULL;
  std::uint64_t x = 0;
  while (now_ns() < end)
    for (int i = 0; i < 10000; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  g_sink = x;
  return 0;
}

// MB of private anonymous memory, not yet touched; nullptr (said on
// stderr, for the subcommand WHAT) when the mapping fails.
volatile unsigned char* map_anon(std::uint64_t mb, const char* what) {
  void* p = mmap(nullptr, static_cast<std::size_t>(mb) << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  if (p != MAP_FAILED) return static_cast<volatile unsigned char*>(p);
  std::fprintf(stderr, "agentcg-work: %s: mmap %llu MB: %s\n", what, static_cast<unsigned long long>(mb),
               std::strerror(errno));
  return nullptr;
}

// Write one byte of every page of MB of memory at B: each page faulted in
// (allocated and zeroed), as agentcg-player's mem op does.
void write_pages(volatile unsigned char* b, std::uint64_t mb) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  for (std::size_t off = 0; off < (static_cast<std::size_t>(mb) << 20); off += page) b[off] = 1;
}

int mem(std::uint64_t mb, std::uint64_t secs) {
  const std::size_t len = static_cast<std::size_t>(mb) << 20;
  volatile unsigned char* b = map_anon(mb, "mem");
  if (b == nullptr) return 1;
  const long page = sysconf(_SC_PAGESIZE);
  const std::uint64_t end = now_ns() + secs * 1000000000ULL;
  std::uint64_t rounds = 0;
  while (now_ns() < end) {
    for (std::size_t off = 0; off < len; off += static_cast<std::size_t>(page)) b[off] = static_cast<unsigned char>(rounds + off);
    rounds++;
    // Release half of it so that the kernel has to fault it in again: keeps
    // the cgroup hovering over memory.high instead of settling.
    madvise(const_cast<unsigned char*>(b), len / 2, MADV_DONTNEED);
  }
  std::printf("mem rounds %llu\n", static_cast<unsigned long long>(rounds));
  return 0;
}

// CPU time (the scheduler's runtime, user + system) of `who` so far.
unsigned long long cpu_us(int who) {
  rusage ru{};
  getrusage(who, &ru);
  return static_cast<unsigned long long>((ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL + ru.ru_utime.tv_usec +
                                         ru.ru_stime.tv_usec);
}

// What agentcg-player's mem op costs the CPU: the page faults (a page
// allocated and zeroed each) of memory written once, then its release
// (`agentcg fidelity`'s machine.mem_fault_ns_per_mib).
int touch(std::uint64_t mb) {
  const std::size_t len = static_cast<std::size_t>(mb) << 20;
  const unsigned long long t0 = cpu_us(RUSAGE_SELF);
  volatile unsigned char* b = map_anon(mb, "touch");
  if (b == nullptr) return 1;
  write_pages(b, mb);
  const unsigned long long t1 = cpu_us(RUSAGE_SELF);
  munmap(const_cast<unsigned char*>(b), len);
  const unsigned long long t2 = cpu_us(RUSAGE_SELF);
  std::printf("touch mb %llu pages %llu fault_us %llu free_us %llu\n", static_cast<unsigned long long>(mb),
              static_cast<unsigned long long>(len / static_cast<std::size_t>(sysconf(_SC_PAGESIZE))), t1 - t0, t2 - t1);
  return 0;
}

int forkstorm(std::uint64_t n, std::uint64_t parallel, std::uint64_t mb) {
  if (mb > 0) {  // the forker's memory, whose page tables each fork copies
    volatile unsigned char* b = map_anon(mb, "forkstorm");
    if (b == nullptr) return 1;
    write_pages(b, mb);
  }
  const unsigned long long self0 = cpu_us(RUSAGE_SELF);
  const std::uint64_t t0 = now_ns();
  std::uint64_t started = 0, alive = 0, failed = 0;
  while (started < n || alive) {
    while (started < n && alive < parallel) {
      const pid_t pid = fork();
      if (pid == 0) _exit(0);
      if (pid < 0) {
        failed++;
        break;
      }
      started++;
      alive++;
    }
    if (alive) {
      int st = 0;
      if (wait(&st) > 0) alive--;
    } else if (started < n) {
      usleep(1000);  // fork failed (EAGAIN): back off
      if (failed > n) break;
    }
  }
  // CPU time (the scheduler's runtime, user + system) of this process since
  // its memory was written and of its reaped children: the fork path and
  // the exit path of each cycle, apart.
  std::printf("forks %llu elapsed_ms %llu failed %llu parent_us %llu children_us %llu mb %llu\n",
              static_cast<unsigned long long>(started), static_cast<unsigned long long>((now_ns() - t0) / 1000000ULL),
              static_cast<unsigned long long>(failed), cpu_us(RUSAGE_SELF) - self0, cpu_us(RUSAGE_CHILDREN),
              static_cast<unsigned long long>(mb));
  return started == n ? 0 : 1;
}

int wakelat(std::uint64_t period_us, std::uint64_t secs) {
  std::vector<std::uint64_t> lat;
  const std::uint64_t period = period_us * 1000ULL;
  const std::uint64_t end = now_ns() + secs * 1000000000ULL;
  std::uint64_t next = now_ns() + period;
  while (next < end) {
    timespec ts{static_cast<time_t>(next / 1000000000ULL), static_cast<long>(next % 1000000000ULL)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
    const std::uint64_t now = now_ns();
    lat.push_back(now > next ? now - next : 0);
    next += period;
    if (next < now) next = now + period;  // overran: restart the grid
  }
  if (lat.empty()) usage("wakelat: SECONDS too short for one period");
  std::sort(lat.begin(), lat.end());
  auto q = [&](double f) { return lat[std::min(lat.size() - 1, static_cast<std::size_t>(f * static_cast<double>(lat.size())))] / 1000; };
  std::printf("wakelat_us %llu %llu %llu %llu %zu\n", static_cast<unsigned long long>(q(0.5)),
              static_cast<unsigned long long>(q(0.9)), static_cast<unsigned long long>(q(0.99)),
              static_cast<unsigned long long>(lat.back() / 1000), lat.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Calibrated workload primitives for the live tests and the live comparison.", "agentcg-work"};
  agentcg::cli::setup(app);
  app.require_subcommand(1);
  std::uint64_t a = 0, b = 0;
  auto* sp = app.add_subcommand("spin", "burn CPU for SECONDS");
  sp->add_option("SECONDS", a)->required();
  auto* me = app.add_subcommand("mem", "keep MB of anonymous memory and rewrite every page for SECONDS");
  me->add_option("MB", a)->required()->check(agentcg::cli::positive_integer());
  me->add_option("SECONDS", b)->required();
  auto* to = app.add_subcommand("touch", "write one byte of every page of MB of new memory once: its CPU time");
  to->add_option("MB", a)->required()->check(agentcg::cli::positive_integer());
  auto* fs = app.add_subcommand("forkstorm",
                                "fork N children that exit at once, at most PARALLEL (64) alive, from a process "
                                "holding MB (0) of memory");
  fs->add_option("N", a)->required();
  b = 64;
  fs->add_option("PARALLEL", b)->check(agentcg::cli::positive_integer());
  std::uint64_t fork_mb = 0;
  fs->add_option("MB", fork_mb);
  auto* wl = app.add_subcommand("wakelat", "periodic sleeper every PERIOD_US for SECONDS: wakeup latency");
  wl->add_option("PERIOD_US", a)->required()->check(agentcg::cli::positive_integer());
  wl->add_option("SECONDS", b)->required();
  if (auto rc = agentcg::cli::parse(app, argc, argv)) return *rc;
  if (sp->parsed()) return spin(a);
  if (me->parsed()) return mem(a, b);
  if (to->parsed()) return touch(a);
  if (fs->parsed()) return forkstorm(a, b, fork_mb);
  return wakelat(a, b);
}
