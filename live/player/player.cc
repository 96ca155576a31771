// SPDX-License-Identifier: GPL-2.0-only
// agentcg-player: re-enacts a trace (format v1, traces/README.md) as REAL
// processes in REAL cgroups and writes a results.json with the simulator's
// keys (README "results.json"), so live and simulated runs compare directly.
// Called by `agentcg live compare` / `agentcg fidelity` inside the test VM
// (under EEVDF, flatcg and agentcg) and by the plug-in scenario
// live/vm/guest/scenarios.d/player.sh; tests/live/player_test.sh runs it on
// the host with --no-cgroups.
//
//   agentcg-player TRACE -o RESULTS.json [--label NAME] [--seed N]
//                  [--cgroup-root DIR | --no-cgroups] [--mem-scale F] [--duration DUR]
//                  [--version] [--help]   (CLI11 via config/cli.h; usage errors exit 2)
//
// Semantics (how each trace element becomes real work):
// - One real process per trace process. Listed processes with start_ns are
//   forked by the supervisor (this program's main process) at that time; a
//   fork op fork()s from the trace process itself. Each process first moves
//   itself into its cgroup (writes "0" to cgroup.procs), sets
//   PR_SET_TIMERSLACK 1 ns, its nice and its real-time policy
//   (sched_setscheduler: SCHED_FIFO / SCHED_RR at rt_priority; 0 SCHED_OTHER)
//   when the trace gives them, and its comm, then runs its ops.
// - run N: burns N ns of CPU as measured by CLOCK_THREAD_CPUTIME_ID (the
//   process gets exactly that CPU, whatever the machine speed), in
//   calibrated spin chunks of ~50 us between clock reads.
// - sleep/io N: clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) to now + N;
//   wakeup-latency sample = resume time - deadline.
// - fork: new-task latency sample = the child's first timestamp - the
//   parent's timestamp just before fork().
// - wait: waitpid() on every child forked so far; when the process really
//   blocked (the last child exited after the wait began), sample = resume
//   time - the last child's exit timestamp (children record it in shared
//   memory just before _exit).
// - mem B: grows/shrinks one anonymous mapping to B x --mem-scale bytes and
//   writes one byte per new page (so it is RSS); exec: PR_SET_NAME; step:
//   counts agent_steps; tool_begin/tool_end: tool-call latency (wall time)
//   in the process's cgroup; exit/end of ops: _exit (children are not
//   waited for, as in the simulator).
// - Values with distributions: sim/random.h RandomStream(seed, pid) per
//   process and trace::Value::sample(), the simulator's code and keying.
//   Listed processes draw the same sequence as the simulator; inline
//   templates get pids from a shared counter in real fork order, so their
//   draws can differ from the simulator's (another draw order).
// - Samples go to one MAP_SHARED anonymous region created before any fork
//   (fixed capacity, atomic indices; overflow counted as
//   live.samples_dropped). Each process adds getrusage() ru_nvcsw+ru_nivcsw
//   to context_switches before it exits; processes still alive at the stop
//   are stopped (SIGSTOP), read from /proc/PID/status, then killed.
// - Stop: at the trace's duration_ns (or --duration), as the simulator
//   stops; without one, when every process has exited.
// - cgroups: DIR/<trace path> with cpu.weight, cpu.max, memory.high/max
//   (x mem-scale); a trace cgroup that has both child cgroups and processes
//   puts its processes in a leaf DIR/<path>/.tasks (cgroup v2's
//   no-internal-processes rule). Everything is removed at the end.
//   --no-cgroups: every process stays in the player's cgroup and per-cgroup
//   CPU is the processes' own CPU time (live.notes says so).
//
// Limits: single-threaded processes only; the supervisor samples cgroup
// files every 100 ms (series); at most kMaxProcs processes per run.
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agentcg/counters.h"
#include "config/cli.h"
#include "sim/metrics.h"
#include "sim/random.h"
#include "sim/results.h"
#include "sim/trace/cgroup_tree.h"
#include "sim/trace/trace.h"

namespace {

using agentcg::trace::CgroupId;
using agentcg::trace::CgroupTree;
using agentcg::trace::kRootCgroup;
namespace trace = agentcg::trace;
using json = nlohmann::json;

constexpr std::size_t kMaxSamples = 1u << 20;  // 16 MiB of samples
constexpr std::size_t kMaxProcs = 1u << 16;
constexpr std::uint64_t kTickNs = 100'000'000;  // series bin (100 ms)
constexpr std::uint64_t kChunkNs = 50'000;      // spin chunk between clock reads

class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::uint64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}
std::uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}
timespec to_ts(std::uint64_t ns) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(ns / 1000000000ULL);
  ts.tv_nsec = static_cast<long>(ns % 1000000000ULL);
  return ts;
}

// ---- shared memory --------------------------------------------------------

enum SampleKind : std::uint32_t { kWakeup = 0, kTool = 1 };
struct Sample {
  std::uint32_t kind;
  std::uint32_t cgroup;
  std::uint64_t value;
};
struct ProcSlot {
  std::atomic<pid_t> pid;                // real pid (written by parent and child)
  std::atomic<std::uint64_t> exit_ns;    // monotonic time just before _exit; 0 = not yet
  std::atomic<std::uint64_t> cpu_added;  // CPU ns already added to its cgroup (no-cgroups mode)
  std::atomic<std::uint32_t> counted;    // 1 once its context switches were added
  std::atomic<std::uint32_t> reaped;     // 1 once waited for: the pid may be reused, never signal it
  std::uint32_t cgroup;
};
struct CgShared {
  std::atomic<std::uint64_t> tasks, forks, cpu_ns, mem_usage, mem_peak;
};
struct Shared {
  std::atomic<std::uint64_t> nsamples, dropped, agent_steps, ops, ctx_switches, nprocs, next_pid;
  std::atomic<std::uint32_t> stop;
  std::atomic<std::uint32_t> overflow_procs;
};

struct Options {
  std::string trace_path, out, label = "live", cgroup_root = "/sys/fs/cgroup/agentcg-player";
  std::uint64_t seed = 1;
  bool no_cgroups = false;
  double mem_scale = 1.0;
  std::optional<std::uint64_t> duration_ns;
};

// Everything a forked trace process needs, set up before the first fork.
struct World {
  const trace::Trace* tr = nullptr;
  const CgroupTree* tree = nullptr;
  Options opt;
  Shared* sh = nullptr;
  Sample* samples = nullptr;
  ProcSlot* slots = nullptr;
  CgShared* cgs = nullptr;
  std::vector<std::string> procs_file;  // per cgroup id: the cgroup.procs to join ("" = none)
  std::map<std::int64_t, std::size_t> listed;  // pid -> index in tr->processes
  std::uint64_t spin_per_us = 100;      // calibrated loop iterations per microsecond
  sigset_t orig_mask{};
};
World W;

void add_sample(SampleKind kind, CgroupId cg, std::uint64_t v) {
  const std::uint64_t i = W.sh->nsamples.fetch_add(1);
  if (i >= kMaxSamples) {
    W.sh->dropped.fetch_add(1);
    return;
  }
  W.samples[i] = Sample{kind, static_cast<std::uint32_t>(cg), v};
}

void atomic_max(std::atomic<std::uint64_t>& a, std::uint64_t v) {
  std::uint64_t cur = a.load();
  while (cur < v && !a.compare_exchange_weak(cur, v)) {
  }
}

volatile std::uint64_t g_sink;
void spin_iters(std::uint64_t n) {
  std::uint64_t x = g_sink;
  for (std::uint64_t i = 0; i < n; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  g_sink = x;
}

// Iterations of spin_iters per microsecond of thread CPU time.
std::uint64_t calibrate_spin() {
  std::uint64_t n = 1000;
  for (int round = 0; round < 20; ++round) {
    const std::uint64_t c0 = thread_cpu_ns();
    spin_iters(n);
    const std::uint64_t dt = thread_cpu_ns() - c0;
    if (dt >= 2'000'000) return std::max<std::uint64_t>(1, n * 1000 / dt);
    n *= 2;
  }
  return 100;
}

// ---- the trace process ----------------------------------------------------

struct Proc {
  std::int64_t pid = 0;         // trace pid (listed, or from next_pid)
  std::size_t slot = 0;
  CgroupId cg = kRootCgroup;
  agentcg::sim::RandomStream rng{1, 1};
  std::vector<std::size_t> children;  // slots of children not yet waited for
  std::optional<std::uint64_t> tool_start;
  char* mem = nullptr;
  std::uint64_t mem_len = 0;   // bytes mapped and touched
  std::uint64_t mem_model = 0; // model bytes (for no-cgroups accounting)
  bool exited = false;
  std::uint64_t cpu_seen = 0;  // thread CPU already added to cgs (no-cgroups)
};

[[noreturn]] void proc_exit(Proc& p, int code);

void account_cpu(Proc& p) {
  if (!W.opt.no_cgroups) return;
  const std::uint64_t now = thread_cpu_ns();
  const std::uint64_t d = now - p.cpu_seen;
  p.cpu_seen = now;
  W.cgs[p.cg].cpu_ns.fetch_add(d);
  W.slots[p.slot].cpu_added.fetch_add(d);
}

void do_run(Proc& p, std::uint64_t ns) {
  const std::uint64_t end = thread_cpu_ns() + ns;
  std::uint64_t last_acct = 0;
  for (;;) {
    const std::uint64_t now = thread_cpu_ns();
    if (now >= end) break;
    const std::uint64_t left = end - now;
    const std::uint64_t chunk = std::min(left, kChunkNs);
    spin_iters(std::max<std::uint64_t>(1, chunk * W.spin_per_us / 1000));
    if (now - last_acct > 1'000'000) {
      account_cpu(p);
      last_acct = now;
    }
  }
  account_cpu(p);
}

void do_sleep(std::uint64_t ns, CgroupId cg) {
  const std::uint64_t deadline = mono_ns() + ns;
  const timespec ts = to_ts(deadline);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
  const std::uint64_t now = mono_ns();
  add_sample(kWakeup, cg, now > deadline ? now - deadline : 0);
}

void set_mem(Proc& p, std::uint64_t bytes) {
  // Model accounting up the tree (used for peak_bytes without cgroups).
  const std::uint64_t old = p.mem_model;
  p.mem_model = bytes;
  for (CgroupId c = p.cg;; c = W.tree->info(c).parent) {
    auto& u = W.cgs[c].mem_usage;
    if (bytes >= old) {
      atomic_max(W.cgs[c].mem_peak, u.fetch_add(bytes - old) + (bytes - old));
    } else {
      u.fetch_sub(old - bytes);
    }
    if (c == kRootCgroup) break;
  }
  const long page = sysconf(_SC_PAGESIZE);
  const auto want = static_cast<std::uint64_t>(std::llround(static_cast<double>(bytes) * W.opt.mem_scale));
  const std::uint64_t len = (want + static_cast<std::uint64_t>(page) - 1) / static_cast<std::uint64_t>(page) *
                            static_cast<std::uint64_t>(page);
  if (len == p.mem_len) return;
  if (len == 0) {
    munmap(p.mem, p.mem_len);
    p.mem = nullptr;
    p.mem_len = 0;
    return;
  }
  void* m = p.mem ? mremap(p.mem, p.mem_len, len, MREMAP_MAYMOVE)
                  : mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    std::fprintf(stderr, "agentcg-player: pid %lld: cannot map %llu bytes: %s\n", static_cast<long long>(p.pid),
                 static_cast<unsigned long long>(len), std::strerror(errno));
    return;
  }
  char* c = static_cast<char*>(m);
  for (std::uint64_t off = p.mem_len; off < len; off += static_cast<std::uint64_t>(page)) c[off] = 1;
  p.mem = c;
  p.mem_len = len;
}

void do_wait(Proc& p, CgroupId cg) {
  const std::uint64_t began = mono_ns();
  std::uint64_t last_exit = 0;
  for (std::size_t s : p.children) {
    const pid_t pid = W.slots[s].pid.load();
    if (pid > 0) {
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      W.slots[s].reaped.store(1);
    }
    last_exit = std::max(last_exit, W.slots[s].exit_ns.load());
  }
  p.children.clear();
  const std::uint64_t now = mono_ns();
  if (last_exit > began) add_sample(kWakeup, cg, now > last_exit ? now - last_exit : 0);
}

[[noreturn]] void run_process(const trace::ProcessSpec& spec, std::int64_t pid, CgroupId cg, std::size_t slot,
                              std::uint64_t parent_ts);

void do_fork(Proc& p, const trace::Op& op) {
  const trace::ProcessSpec* spec;
  std::int64_t pid;
  CgroupId cg;
  if (op.child()) {
    spec = op.child().get();
    pid = static_cast<std::int64_t>(W.sh->next_pid.fetch_add(1));
    cg = spec->cgroup.empty() ? p.cg : W.tree->find(spec->cgroup);
  } else {
    spec = &W.tr->processes.at(W.listed.at(op.pid()));
    pid = op.pid();
    cg = W.tree->find(spec->cgroup);
  }
  const std::uint64_t slot = W.sh->nprocs.fetch_add(1);
  if (slot >= kMaxProcs) {
    W.sh->overflow_procs.store(1);
    return;
  }
  W.slots[slot].cgroup = static_cast<std::uint32_t>(cg);
  W.cgs[cg].forks.fetch_add(1);
  const std::uint64_t t0 = mono_ns();
  const pid_t c = fork();
  if (c == 0) run_process(*spec, pid, cg, slot, t0);
  if (c < 0) {
    std::fprintf(stderr, "agentcg-player: pid %lld: fork: %s\n", static_cast<long long>(p.pid), std::strerror(errno));
    W.slots[slot].exit_ns.store(mono_ns());
    return;
  }
  W.slots[slot].pid.store(c);
  p.children.push_back(slot);
}

void run_ops(Proc& p, const std::vector<trace::Op>& ops, int depth) {
  for (const trace::Op& op : ops) {
    if (p.exited) return;
    if (W.sh->stop.load()) proc_exit(p, 0);
    if (op.kind != trace::OpKind::kRepeat) W.sh->ops.fetch_add(1, std::memory_order_relaxed);
    switch (op.kind) {
      case trace::OpKind::kRun: {
        const std::uint64_t ns = op.amount.sample(p.rng);
        if (ns > 0) do_run(p, ns);
        break;
      }
      case trace::OpKind::kSleep:
      case trace::OpKind::kIo: {
        const std::uint64_t ns = op.amount.sample(p.rng);
        if (ns > 0) do_sleep(ns, p.cg);
        break;
      }
      case trace::OpKind::kWait:
        do_wait(p, p.cg);
        break;
      case trace::OpKind::kExit:
        p.exited = true;
        return;
      case trace::OpKind::kFork:
        do_fork(p, op);
        break;
      case trace::OpKind::kExec:
        prctl(PR_SET_NAME, op.name().c_str(), 0, 0, 0);
        break;
      case trace::OpKind::kMem:
        set_mem(p, op.amount.sample(p.rng));
        break;
      case trace::OpKind::kRepeat:
        for (std::uint32_t i = 0; i < op.count() && !p.exited; ++i) run_ops(p, op.body(), depth + 1);
        break;
      case trace::OpKind::kToolBegin:
        p.tool_start = mono_ns();
        break;
      case trace::OpKind::kToolEnd:
        if (p.tool_start) {
          add_sample(kTool, p.cg, mono_ns() - *p.tool_start);
          p.tool_start.reset();
        }
        break;
      case trace::OpKind::kStep:
        W.sh->agent_steps.fetch_add(1);
        break;
    }
  }
}

[[noreturn]] void proc_exit(Proc& p, int code) {
  account_cpu(p);
  if (W.slots[p.slot].counted.exchange(1) == 0) {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    W.sh->ctx_switches.fetch_add(static_cast<std::uint64_t>(ru.ru_nvcsw + ru.ru_nivcsw));
  }
  // Model memory is freed on exit (for the no-cgroups peak accounting).
  if (p.mem_model) {
    for (CgroupId c = p.cg;; c = W.tree->info(c).parent) {
      W.cgs[c].mem_usage.fetch_sub(p.mem_model);
      if (c == kRootCgroup) break;
    }
  }
  W.slots[p.slot].exit_ns.store(mono_ns());
  _exit(code);
}

[[noreturn]] void run_process(const trace::ProcessSpec& spec, std::int64_t pid, CgroupId cg, std::size_t slot,
                              std::uint64_t parent_ts) {
  const std::uint64_t first = mono_ns();
  W.slots[slot].pid.store(getpid());
  sigprocmask(SIG_SETMASK, &W.orig_mask, nullptr);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  Proc p;
  p.pid = pid;
  p.slot = slot;
  p.cg = cg;
  p.rng = agentcg::sim::RandomStream(W.opt.seed, static_cast<std::uint64_t>(pid));
  p.cpu_seen = thread_cpu_ns();
  if (W.sh->stop.load()) _exit(0);
  add_sample(kWakeup, cg, first > parent_ts ? first - parent_ts : 0);
  W.cgs[cg].tasks.fetch_add(1);
  if (!W.procs_file[cg].empty()) {
    const int fd = open(W.procs_file[cg].c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "0", 1) != 1) {
      std::fprintf(stderr, "agentcg-player: pid %lld: cannot join %s: %s\n", static_cast<long long>(pid),
                   W.procs_file[cg].c_str(), std::strerror(errno));
    }
    if (fd >= 0) close(fd);
  }
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  // the trace's nice (absent: inherited from the forking process, as the
  // simulator does); a failure (no CAP_SYS_NICE for a negative one) is said
  if (spec.nice && setpriority(PRIO_PROCESS, 0, *spec.nice) != 0) {
    std::fprintf(stderr, "agentcg-player: pid %lld: cannot set nice %d: %s\n", static_cast<long long>(pid),
                 *spec.nice, std::strerror(errno));
  }
  // the trace's real-time policy (absent: inherited, as the simulator
  // does; 0: back to SCHED_OTHER); a failure (no CAP_SYS_NICE, an
  // RLIMIT_RTPRIO, a cgroup without real-time runtime under
  // CONFIG_RT_GROUP_SCHED) is said and the process runs on as it is
  if (spec.rt_priority) {
    sched_param sp{};
    sp.sched_priority = *spec.rt_priority;
    const int policy = *spec.rt_priority == 0 ? SCHED_OTHER : spec.rt_round_robin ? SCHED_RR : SCHED_FIFO;
    if (sched_setscheduler(0, policy, &sp) != 0) {
      std::fprintf(stderr, "agentcg-player: pid %lld: cannot set real-time priority %d (%s): %s\n",
                   static_cast<long long>(pid), *spec.rt_priority,
                   policy == SCHED_RR ? "SCHED_RR" : policy == SCHED_FIFO ? "SCHED_FIFO" : "SCHED_OTHER",
                   std::strerror(errno));
    }
  }
  const std::string comm = spec.comm.empty() ? "pid" + std::to_string(pid) : spec.comm;
  prctl(PR_SET_NAME, comm.c_str(), 0, 0, 0);
  run_ops(p, spec.ops, 0);
  proc_exit(p, 0);
}

// ---- cgroup files ---------------------------------------------------------

// One read(2) of a small kernel file (cgroup and /proc files), no iostreams:
// the supervisor reads these every 100 ms and must stay cheap under qemu TCG.
std::string read_small(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char buf[4096];
  const ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}
// The value of "key N" in a flat-keyed file's text; 0 when absent.
std::uint64_t kv_value(const std::string& text, const char* key) {
  const std::size_t klen = std::strlen(key);
  for (std::size_t pos = 0; pos < text.size();) {
    if (text.compare(pos, klen, key) == 0 && pos + klen < text.size() && text[pos + klen] == ' ')
      return std::strtoull(text.c_str() + pos + klen + 1, nullptr, 10);
    const std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return 0;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return "";
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}
void write_file(const std::string& path, const std::string& value) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw RuntimeError("cannot open " + path + ": " + std::strerror(errno));
  const ssize_t n = write(fd, value.data(), value.size());
  const int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(value.size()))
    throw RuntimeError("cannot write '" + value + "' to " + path + ": " + std::strerror(err));
}
// "key value" lines -> map.
std::map<std::string, std::uint64_t> read_kv(const std::string& path) {
  std::map<std::string, std::uint64_t> m;
  std::istringstream in(read_file(path));
  std::string k;
  std::uint64_t v;
  while (in >> k >> v) m[k] = v;
  return m;
}
std::uint64_t read_u64(const std::string& path, std::uint64_t def = 0) {
  const std::string s = trim(read_file(path));
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return def;
  return std::stoull(s);
}

// Kills what is left in a cgroup subtree and removes it, children first.
void remove_cgroup_tree(const std::string& dir) {
  struct stat st{};
  if (stat(dir.c_str(), &st) != 0) return;
  if (access((dir + "/cgroup.kill").c_str(), W_OK) == 0) {
    try {
      write_file(dir + "/cgroup.kill", "1");
    } catch (const RuntimeError&) {
    }
  }
  std::istringstream procs(read_file(dir + "/cgroup.procs"));
  for (pid_t pid; procs >> pid;) kill(pid, SIGKILL);
  std::vector<std::string> subs;
  if (auto* d = opendir(dir.c_str())) {
    while (auto* e = readdir(d)) {
      if (e->d_type == DT_DIR && std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        subs.push_back(dir + "/" + e->d_name);
    }
    closedir(d);
  }
  for (const auto& s : subs) remove_cgroup_tree(s);
  for (int i = 0; i < 100; ++i) {
    if (rmdir(dir.c_str()) == 0 || errno == ENOENT) return;
    usleep(10000);
  }
  std::fprintf(stderr, "agentcg-player: warning: cannot remove %s: %s\n", dir.c_str(), std::strerror(errno));
}

struct CgStat {
  std::uint64_t usage_us = 0, throttled_us = 0, nr_throttled = 0, nr_periods = 0;
  std::uint64_t ev_high = 0, ev_max = 0, ev_oom_kill = 0, mem_current = 0;
};

class Player {
 public:
  Player(const trace::Trace& tr, Options opt) : tr_(tr), tree_(tr), opt_(std::move(opt)) {}
  int run();

 private:
  int play();
  void setup_shared();
  void setup_cgroups();
  CgStat read_stat(CgroupId id) const;
  std::vector<std::uint64_t> cpu_now() const;  // per cgroup, ns, hierarchical
  void start_listed(std::size_t idx);
  void stop_all();
  void reap_nohang();
  json results(std::uint64_t wall_ns);

  const trace::Trace& tr_;
  CgroupTree tree_;
  Options opt_;
  std::vector<std::string> dirs_;  // per cgroup id: the cgroup's directory
  std::vector<std::string> created_;
  bool cg_created_ = false;
  std::vector<CgStat> stat0_, stat1_;
  // Per cgroup: CPU ns per 100 ms bin of the run. Each reading's delta is
  // spread over the bins its interval covers, so a late reading (the
  // supervisor delayed) does not pile CPU into one bin.
  std::vector<std::vector<std::uint64_t>> bins_;
  void add_reading(std::uint64_t from, std::uint64_t to, const std::vector<std::uint64_t>& delta);
  std::vector<std::uint64_t> mem_peak_sampled_;
  std::vector<std::string> notes_;
  std::uint64_t proc_busy0_ = 0, proc_total0_ = 0, proc_busy1_ = 0, proc_total1_ = 0;
  std::size_t live_children_ = 0;
};

void read_proc_stat(std::uint64_t& busy, std::uint64_t& total) {
  std::istringstream in(read_file("/proc/stat"));
  std::string cpu;
  in >> cpu;
  std::uint64_t v[10] = {};
  for (auto& x : v) in >> x;
  total = 0;
  for (int i = 0; i < 8; ++i) total += v[i];  // guest time is inside user/nice
  busy = total - v[3] - v[4];
}

void Player::setup_shared() {
  const std::size_t n = tree_.size();
  const std::size_t bytes = sizeof(Shared) + kMaxSamples * sizeof(Sample) + kMaxProcs * sizeof(ProcSlot) +
                            n * sizeof(CgShared) + 256;
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw RuntimeError(std::string("cannot map the shared sample region: ") + std::strerror(errno));
  auto* base = static_cast<char*>(m);  // zero-filled: atomics start at 0
  W.sh = new (base) Shared();
  base += (sizeof(Shared) + 63) / 64 * 64;
  W.samples = reinterpret_cast<Sample*>(base);
  base += kMaxSamples * sizeof(Sample);
  W.slots = reinterpret_cast<ProcSlot*>(base);
  base += kMaxProcs * sizeof(ProcSlot);
  W.cgs = reinterpret_cast<CgShared*>(base);
  std::int64_t next = 1;
  for (std::size_t i = 0; i < tr_.processes.size(); ++i) {
    next = std::max(next, tr_.processes[i].pid + 1);
    W.listed[tr_.processes[i].pid] = i;
  }
  W.sh->next_pid.store(static_cast<std::uint64_t>(next));
}

void Player::setup_cgroups() {
  const std::size_t n = tree_.size();
  dirs_.assign(n, "");
  W.procs_file.assign(n, "");
  if (opt_.no_cgroups) return;
  const std::string root = opt_.cgroup_root;
  const std::string parent = root.substr(0, root.find_last_of('/'));
  if (access((parent + "/cgroup.controllers").c_str(), R_OK) != 0 || access(parent.c_str(), W_OK) != 0) {
    throw RuntimeError("cgroup v2 is not writable at " + parent + " (no " + parent +
                       "/cgroup.controllers or no write access): run as root on a cgroup v2 host, pick another "
                       "--cgroup-root, or use --no-cgroups");
  }
  remove_cgroup_tree(root);  // a leftover of an interrupted run
  try {
    write_file(parent + "/cgroup.subtree_control", "+cpu +memory");
  } catch (const RuntimeError& e) {
    const std::string have = read_file(parent + "/cgroup.subtree_control");
    if (have.find("cpu") == std::string::npos || have.find("memory") == std::string::npos)
      throw RuntimeError(std::string(e.what()) + " (the cpu and memory controllers are needed below " + parent + ")");
  }
  if (mkdir(root.c_str(), 0755) != 0) throw RuntimeError("cannot create " + root + ": " + std::strerror(errno));
  cg_created_ = true;
  // Which cgroups hold processes directly (listed or templates, which default
  // to their parent's cgroup: any cgroup may then hold some).
  std::vector<bool> has_children(n, false);
  for (std::size_t i = 1; i < n; ++i) has_children[tree_.info(static_cast<CgroupId>(i)).parent] = true;
  for (std::size_t i = 0; i < n; ++i) {
    const auto id = static_cast<CgroupId>(i);
    const std::string& path = tree_.path(id);
    dirs_[i] = path == "/" ? root : root + path;
    if (i != kRootCgroup) {
      if (mkdir(dirs_[i].c_str(), 0755) != 0)
        throw RuntimeError("cannot create " + dirs_[i] + ": " + std::strerror(errno));
      const auto& spec = tree_.spec(id);
      write_file(dirs_[i] + "/cpu.weight", std::to_string(spec.cpu_weight));
      if (spec.cpu_max)
        write_file(dirs_[i] + "/cpu.max",
                   std::to_string(spec.cpu_max->quota_us) + " " + std::to_string(spec.cpu_max->period_us));
      auto scaled = [&](std::uint64_t b) {
        return std::to_string(static_cast<std::uint64_t>(std::llround(static_cast<double>(b) * opt_.mem_scale)));
      };
      if (spec.memory_max) write_file(dirs_[i] + "/memory.max", scaled(*spec.memory_max));
      if (spec.memory_high) write_file(dirs_[i] + "/memory.high", scaled(*spec.memory_high));
    }
    bool needs_leaf = has_children[i] || i == kRootCgroup;
    if (needs_leaf) {
      write_file(dirs_[i] + "/cgroup.subtree_control", "+cpu +memory");
      const std::string leaf = dirs_[i] + "/.tasks";
      if (mkdir(leaf.c_str(), 0755) != 0) throw RuntimeError("cannot create " + leaf + ": " + std::strerror(errno));
      W.procs_file[i] = leaf + "/cgroup.procs";
    } else {
      W.procs_file[i] = dirs_[i] + "/cgroup.procs";
    }
  }
}

CgStat Player::read_stat(CgroupId id) const {
  CgStat s;
  if (opt_.no_cgroups) return s;
  const std::string& d = dirs_[id];
  auto cpu = read_kv(d + "/cpu.stat");
  s.usage_us = cpu["usage_usec"];
  s.throttled_us = cpu["throttled_usec"];
  s.nr_throttled = cpu["nr_throttled"];
  s.nr_periods = cpu["nr_periods"];
  auto ev = read_kv(d + "/memory.events");
  s.ev_high = ev["high"];
  s.ev_max = ev["max"];
  s.ev_oom_kill = ev["oom_kill"];
  s.mem_current = read_u64(d + "/memory.current");
  return s;
}

std::vector<std::uint64_t> Player::cpu_now() const {
  const std::size_t n = tree_.size();
  std::vector<std::uint64_t> v(n, 0);
  if (!opt_.no_cgroups) {
    for (std::size_t i = 0; i < n; ++i) v[i] = kv_value(read_small(dirs_[i] + "/cpu.stat"), "usage_usec") * 1000;
    return v;
  }
  for (std::size_t i = 0; i < n; ++i) v[i] = W.cgs[i].cpu_ns.load();
  for (std::size_t i = n; i-- > 1;) v[tree_.info(static_cast<CgroupId>(i)).parent] += v[i];
  return v;
}

void Player::start_listed(std::size_t idx) {
  const auto& spec = tr_.processes[idx];
  const CgroupId cg = tree_.find(spec.cgroup);
  const std::uint64_t slot = W.sh->nprocs.fetch_add(1);
  if (slot >= kMaxProcs) {
    W.sh->overflow_procs.store(1);
    return;
  }
  W.slots[slot].cgroup = static_cast<std::uint32_t>(cg);
  std::fflush(nullptr);
  const std::uint64_t t0 = mono_ns();
  const pid_t c = fork();
  if (c == 0) run_process(spec, spec.pid, cg, slot, t0);
  if (c < 0) throw RuntimeError(std::string("fork: ") + std::strerror(errno));
  W.slots[slot].pid.store(c);
  ++live_children_;
}

void Player::reap_nohang() {
  for (;;) {
    const pid_t r = waitpid(-1, nullptr, WNOHANG);
    if (r <= 0) break;
    // Mark the slot so that the stop sweep never signals a reused pid.
    for (std::uint64_t i = std::min<std::uint64_t>(W.sh->nprocs.load(), kMaxProcs); i-- > 0;) {
      if (W.slots[i].pid.load() == r && !W.slots[i].reaped.load()) {
        W.slots[i].reaped.store(1);
        break;
      }
    }
  }
}

// Reads a stopped process's context switches and CPU time from /proc.
void account_from_proc(ProcSlot& s, bool no_cgroups) {
  const pid_t pid = s.pid.load();
  if (pid <= 0) return;
  if (s.counted.exchange(1) == 0) {
    const std::string st = read_file("/proc/" + std::to_string(pid) + "/status");
    std::istringstream in(st);
    std::string line;
    std::uint64_t cs = 0;
    while (std::getline(in, line)) {
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0 || line.rfind("nonvoluntary_ctxt_switches:", 0) == 0)
        cs += std::strtoull(line.substr(line.find(':') + 1).c_str(), nullptr, 10);
    }
    W.sh->ctx_switches.fetch_add(cs);
    if (no_cgroups && s.exit_ns.load() == 0) {
      std::istringstream ss(read_file("/proc/" + std::to_string(pid) + "/schedstat"));
      std::uint64_t run_ns = 0;
      if (ss >> run_ns && run_ns > s.cpu_added.load()) W.cgs[s.cgroup].cpu_ns.fetch_add(run_ns - s.cpu_added.load());
    }
  }
}

void Player::stop_all() {
  W.sh->stop.store(1);
  // Stop first so that the counters read below are final, then kill.
  for (int round = 0; round < 3; ++round) {
    const std::uint64_t n = std::min<std::uint64_t>(W.sh->nprocs.load(), kMaxProcs);
    for (std::uint64_t i = 0; i < n; ++i) {
      const pid_t pid = W.slots[i].pid.load();
      if (pid > 0 && !W.slots[i].reaped.load()) kill(pid, SIGSTOP);
    }
    for (std::uint64_t i = 0; i < n; ++i)
      if (W.slots[i].exit_ns.load() == 0 && !W.slots[i].reaped.load())
        account_from_proc(W.slots[i], opt_.no_cgroups);
    for (std::uint64_t i = 0; i < n; ++i) {
      const pid_t pid = W.slots[i].pid.load();
      if (pid > 0 && !W.slots[i].reaped.load()) kill(pid, SIGKILL);
    }
  }
  if (!opt_.no_cgroups && access((opt_.cgroup_root + "/cgroup.kill").c_str(), W_OK) == 0) {
    try {
      write_file(opt_.cgroup_root + "/cgroup.kill", "1");
    } catch (const RuntimeError&) {
    }
  }
  // We are the subreaper: every descendant ends up here.
  while (waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
  }
}

int Player::run() {
  try {
    return play();
  } catch (...) {
    // Leave nothing behind: processes, then cgroups.
    if (W.sh) stop_all();
    if (cg_created_) remove_cgroup_tree(opt_.cgroup_root);
    throw;
  }
}

int Player::play() {
  {
    const std::string dir = opt_.out.find('/') == std::string::npos ? "." : opt_.out.substr(0, opt_.out.find_last_of('/') + 1);
    if (access(dir.c_str(), W_OK) != 0)
      throw RuntimeError("cannot write " + opt_.out + ": directory " + dir + ": " + std::strerror(errno));
  }
  setup_shared();
  W.tr = &tr_;
  W.tree = &tree_;
  W.opt = opt_;
  W.spin_per_us = calibrate_spin();
  setup_cgroups();
  prctl(PR_SET_CHILD_SUBREAPER, 1UL, 0, 0, 0);
  // The supervisor only samples and starts processes: as SCHED_FIFO its
  // ticks and start times stay on time even when the trace saturates the
  // CPUs (and it stays outside sched_ext's and the cgroups' scheduling).
  // SCHED_RESET_ON_FORK: the trace processes are SCHED_OTHER.
  {
    sched_param sp{};
    sp.sched_priority = 1;
    if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) != 0)
      notes_.push_back(std::string("supervisor not real-time (") + std::strerror(errno) +
                       "): its 100 ms samples and start times may be late under load");
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigprocmask(SIG_BLOCK, &set, &W.orig_mask);

  const std::size_t n = tree_.size();
  std::optional<std::uint64_t> dur = opt_.duration_ns ? opt_.duration_ns : tr_.duration_ns;
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < tr_.processes.size(); ++i)
    if (tr_.processes[i].start_ns) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return *tr_.processes[a].start_ns < *tr_.processes[b].start_ns; });

  stat0_.resize(n);
  for (std::size_t i = 0; i < n; ++i) stat0_[i] = read_stat(static_cast<CgroupId>(i));
  bins_.assign(n, {});
  std::uint64_t prev_t = 0;  // relative to t0
  mem_peak_sampled_.assign(n, 0);
  std::vector<std::uint64_t> cpu_prev = cpu_now();
  // memory.peak (Linux >= 5.19) makes sampling memory.current unnecessary.
  const bool have_mem_peak = !opt_.no_cgroups && access((dirs_[kRootCgroup] + "/memory.peak").c_str(), R_OK) == 0;
  read_proc_stat(proc_busy0_, proc_total0_);
  const std::uint64_t sup_cpu0 = thread_cpu_ns();
  const std::uint64_t t0 = mono_ns();
  std::size_t next_start = 0;
  std::uint64_t next_tick = t0 + kTickNs;
  bool interrupted = false;
  std::uint64_t end = 0;
  auto tick = [&]() {
    std::vector<std::uint64_t> c = cpu_now();
    const std::uint64_t t = mono_ns() - t0;
    std::vector<std::uint64_t> d(n);
    for (std::size_t i = 0; i < n; ++i) d[i] = c[i] >= cpu_prev[i] ? c[i] - cpu_prev[i] : 0;
    add_reading(prev_t, t, d);
    prev_t = t;
    for (std::size_t i = 0; i < n; ++i) {
      if (!opt_.no_cgroups && !have_mem_peak)
        mem_peak_sampled_[i] = std::max(mem_peak_sampled_[i], read_u64(dirs_[i] + "/memory.current"));
    }
    cpu_prev = std::move(c);
  };
  for (;;) {
    std::uint64_t now = mono_ns();
    while (next_start < order.size() && t0 + *tr_.processes[order[next_start]].start_ns <= now) {
      start_listed(order[next_start++]);
      now = mono_ns();
    }
    if (dur && now >= t0 + *dur) {
      end = now;  // the wall time actually played (the deadline + the wakeup delay)
      break;
    }
    if (now >= next_tick) {
      tick();
      while (next_tick <= now) next_tick += kTickNs;
    }
    reap_nohang();
    if (!dur && next_start == order.size()) {
      errno = 0;
      if (waitpid(-1, nullptr, WNOHANG) < 0 && errno == ECHILD) {
        end = mono_ns();
        break;
      }
    }
    std::uint64_t wake = next_tick;
    if (next_start < order.size()) wake = std::min(wake, t0 + *tr_.processes[order[next_start]].start_ns);
    if (dur) wake = std::min(wake, t0 + *dur);
    now = mono_ns();
    if (wake > now) {
      const timespec ts = to_ts(wake - now);
      siginfo_t si{};
      const int sig = sigtimedwait(&set, &si, &ts);
      if (sig == SIGINT || sig == SIGTERM) {
        interrupted = true;
        end = mono_ns();
        break;
      }
    }
  }
  stop_all();
  // The last, partial bin.
  {
    std::vector<std::uint64_t> c = cpu_now();
    std::vector<std::uint64_t> d(n);
    for (std::size_t i = 0; i < n; ++i) d[i] = c[i] >= cpu_prev[i] ? c[i] - cpu_prev[i] : 0;
    add_reading(prev_t, std::min(mono_ns() - t0, end - t0), d);
  }
  read_proc_stat(proc_busy1_, proc_total1_);
  stat1_.resize(n);
  for (std::size_t i = 0; i < n; ++i) stat1_[i] = read_stat(static_cast<CgroupId>(i));
  std::vector<std::uint64_t> peak(n, 0);
  for (std::size_t i = 0; i < n && !opt_.no_cgroups; ++i) {
    const std::uint64_t p = read_u64(dirs_[i] + "/memory.peak", 0);
    peak[i] = p ? p : mem_peak_sampled_[i];
  }
  mem_peak_sampled_ = peak;
  if (interrupted) notes_.push_back("interrupted by a signal before the end of the trace");
  {
    const std::uint64_t run_cpu = thread_cpu_ns() - sup_cpu0;
    notes_.push_back("the supervisor (outside the trace's cgroups) used " + std::to_string(run_cpu / 1000000) +
                     " ms of CPU while the trace played (starting processes, sampling every 100 ms), " +
                     std::to_string(sup_cpu0 / 1000000) + " ms before (loading, calibration, cgroup setup)");
  }
  json r = results(end - t0);
  if (cg_created_) remove_cgroup_tree(opt_.cgroup_root);
  const std::string text = agentcg::sim::dump_results(r);
  std::ofstream out(opt_.out);
  if (!out || !(out << text) || !out.flush()) throw RuntimeError("cannot write " + opt_.out);
  return interrupted ? 1 : 0;
}

void Player::add_reading(std::uint64_t from, std::uint64_t to, const std::vector<std::uint64_t>& delta) {
  if (to <= from) to = from + 1;
  const std::size_t last = static_cast<std::size_t>((to - 1) / kTickNs);
  for (auto& b : bins_)
    if (b.size() <= last) b.resize(last + 1, 0);
  for (std::size_t i = 0; i < delta.size(); ++i) {
    std::uint64_t given = 0;
    for (std::size_t k = static_cast<std::size_t>(from / kTickNs); k <= last; ++k) {
      const std::uint64_t lo = std::max<std::uint64_t>(from, k * kTickNs);
      const std::uint64_t hi = std::min<std::uint64_t>(to, (k + 1) * kTickNs);
      std::uint64_t part = k == last ? delta[i] - given
                                     : static_cast<std::uint64_t>(static_cast<long double>(delta[i]) * (hi - lo) / (to - from));
      part = std::min(part, delta[i] - given);
      bins_[i][k] += part;
      given += part;
    }
  }
}

json Player::results(std::uint64_t wall) {
  using agentcg::sim::latency_summary;
  const std::size_t n = tree_.size();
  const long ncpu_l = sysconf(_SC_NPROCESSORS_ONLN);
  const std::uint32_t ncpu = ncpu_l > 0 ? static_cast<std::uint32_t>(ncpu_l) : 1;

  std::vector<std::vector<std::uint64_t>> wake(n), tool(n);
  std::vector<std::uint64_t> wake_all, tool_all;
  const std::uint64_t ns = std::min<std::uint64_t>(W.sh->nsamples.load(), kMaxSamples);
  for (std::uint64_t i = 0; i < ns; ++i) {
    const Sample& s = W.samples[i];
    if (s.cgroup >= n) continue;
    (s.kind == kWakeup ? wake : tool)[s.cgroup].push_back(s.value);
    (s.kind == kWakeup ? wake_all : tool_all).push_back(s.value);
  }
  for (std::size_t i = n; i-- > 1;) {
    const std::size_t p = tree_.info(static_cast<CgroupId>(i)).parent;
    wake[p].insert(wake[p].end(), wake[i].begin(), wake[i].end());
    tool[p].insert(tool[p].end(), tool[i].begin(), tool[i].end());
  }
  std::vector<std::uint32_t> tasks(n);
  std::uint64_t all_tasks = 0;
  for (std::size_t i = 0; i < n; ++i) {
    tasks[i] = static_cast<std::uint32_t>(W.cgs[i].tasks.load());
    all_tasks += tasks[i];
  }
  const std::vector<double> entitled = tree_.entitled_shares(ncpu, tasks);

  std::vector<std::uint64_t> cpu_ns(n, 0);
  if (opt_.no_cgroups) {
    for (std::size_t i = 0; i < n; ++i) cpu_ns[i] = W.cgs[i].cpu_ns.load();
    for (std::size_t i = n; i-- > 1;) cpu_ns[tree_.info(static_cast<CgroupId>(i)).parent] += cpu_ns[i];
  } else {
    for (std::size_t i = 0; i < n; ++i) cpu_ns[i] = (stat1_[i].usage_us - stat0_[i].usage_us) * 1000;
  }

  // Everything derived (shares, series, Jain's index) is computed by the
  // one results.json builder (sim/results.h), as for the simulator.
  agentcg::sim::CpuResultsInput in;
  in.cpus = ncpu;
  in.duration_ns = wall;
  in.series_bin_ns = kTickNs;
  in.cgroups.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    agentcg::sim::CgroupResultsInput& c = in.cgroups[i];
    const CgStat& a = stat0_[i];
    const CgStat& b = stat1_[i];
    c.path = tree_.path(static_cast<CgroupId>(i));
    c.cpu_time_ns = cpu_ns[i];
    c.entitled_share = entitled[i];
    c.tasks = tasks[i];
    c.forks = W.cgs[i].forks.load();
    c.wakeup_latency_ns = latency_summary(wake[i]);
    c.tool_call_latency_ns = latency_summary(tool[i]);
    c.throttled_ns = (b.throttled_us - a.throttled_us) * 1000;
    c.nr_throttled = b.nr_throttled - a.nr_throttled;
    c.nr_periods = b.nr_periods - a.nr_periods;
    c.mem_peak_bytes = opt_.no_cgroups ? W.cgs[i].mem_peak.load() : mem_peak_sampled_[i];
    c.mem_events_high = b.ev_high - a.ev_high;
    c.mem_events_max = b.ev_max - a.ev_max;
    c.mem_oom_kill = b.ev_oom_kill - a.ev_oom_kill;
    c.series_ns = bins_[i];
  }
  std::uint64_t max_wait = 0;
  for (auto v : wake_all) max_wait = std::max(max_wait, v);
  in.tasks = all_tasks;
  in.wakeup_latency_ns = latency_summary(wake_all);
  in.tool_call_latency_ns = latency_summary(tool_all);
  in.tool_calls_completed = tool_all.size();
  // The simulator scores its new-step detector against the trace's step
  // annotations; live, the detector runs in BPF and its detections are not
  // time-stamped here, so only the annotated count is known (same keys).
  in.new_step_detection = {{"annotated", W.sh->agent_steps.load()}, {"detected", nullptr},
                           {"matched", nullptr},  {"unannotated", nullptr},
                           {"tolerance_ns", nullptr}, {"precision", nullptr},
                           {"recall", nullptr}};
  in.context_switches = W.sh->ctx_switches.load();
  in.max_runnable_wait_ns = max_wait;
  const std::uint64_t dt = proc_total1_ - proc_total0_;
  in.cpu_utilization = dt > 0 ? static_cast<double>(proc_busy1_ - proc_busy0_) / static_cast<double>(dt) : 0.0;
  if (auto s = W.sh->agent_steps.load())
    in.counters.emplace_back(agentcg_workload_counter_name(AGENTCG_W_agent_steps), s);
  const std::uint64_t ooms = opt_.no_cgroups ? 0 : stat1_[kRootCgroup].ev_oom_kill - stat0_[kRootCgroup].ev_oom_kill;
  if (ooms) in.counters.emplace_back(agentcg_workload_counter_name(AGENTCG_W_oom_kills), ooms);

  agentcg::sim::RunIdentity id;
  id.trace = tr_.name;
  id.policy = opt_.label;
  id.gpu_policy = "none";
  id.seed = opt_.seed;
  id.config = {{"machine", {{"cpus", ncpu}, {"trace_cpus", tr_.machine.cpus}}}};
  id.events = W.sh->ops.load();
  json r = agentcg::sim::results_json(id, in);

  utsname u{};
  uname(&u);
  std::string sched = "default";
  if (trim(read_file("/sys/kernel/sched_ext/state")) == "enabled") sched = trim(read_file("/sys/kernel/sched_ext/root/ops"));
  std::vector<std::string> notes = notes_;
  notes.push_back("events = trace ops executed (the simulator counts its discrete events)");
  notes.push_back("cpus, cpu_share and entitled_share use this machine's online CPUs (" + std::to_string(ncpu) +
                  "); the trace asks for " + std::to_string(tr_.machine.cpus));
  if (opt_.no_cgroups) {
    notes.push_back("--no-cgroups: every process ran in the player's cgroup; per-cgroup CPU is the processes' own "
                    "CPU time; throttling and memory events are 0; peak_bytes is the sum of mem ops (model)");
  } else {
    notes.push_back("cgroups under " + opt_.cgroup_root + "; a cgroup with child cgroups keeps its processes in a leaf .tasks");
  }
  notes.push_back("distribution draws: RandomStream(seed, pid) per process as in the simulator; template children "
                  "get pids in real fork order, so their draw order can differ");
  if (W.sh->overflow_procs.load()) notes.push_back("more than " + std::to_string(kMaxProcs) + " processes: later forks were skipped");
  r["live"] = {{"kernel", u.release},
               {"scheduler", sched},
               {"notes", notes},
               {"samples_dropped", W.sh->dropped.load()},
               {"mem_scale", opt_.mem_scale}};
  return r;
}

// nullopt: run with `o`; else the exit code (--help/--version 0, usage 2).
std::optional<int> parse_options(int argc, char** argv, Options& o) {
  CLI::App app{"Re-enacts a trace as real processes in real cgroups and writes a results.json with the "
               "simulator's keys.",
               "agentcg-player"};
  agentcg::cli::setup(app);
  app.add_option("TRACE", o.trace_path, "the trace (format v1, traces/README.md)")->required()->type_name("FILE");
  app.add_option("-o,--out", o.out, "where results.json is written")->required()->type_name("RESULTS.json");
  app.add_option("--label", o.label, "results.json policy (default live)")
      ->type_name("NAME")
      ->check(CLI::Validator([](std::string& v) { return v.empty() ? std::string("expected a non-empty name") : ""; },
                             ""));
  app.add_option("--seed", o.seed, "seeds the distribution draws (default 1)")->type_name("N");
  auto* no_cg = app.add_flag("--no-cgroups", o.no_cgroups, "run every process in the player's own cgroup");
  app.add_option("--cgroup-root", o.cgroup_root,
                 "where the trace's cgroups are created (default /sys/fs/cgroup/agentcg-player)")
      ->excludes(no_cg)
      ->type_name("DIR")
      ->check(CLI::Validator(
          [](std::string& v) {
            return (v.empty() || v[0] != '/' || v.back() == '/' || v.find_last_of('/') == 0)
                       ? "expected an absolute directory below a cgroup v2 mount, got '" + v + "'"
                       : std::string();
          },
          ""));
  app.add_option("--mem-scale", o.mem_scale, "scale every memory size (mem ops, memory.high/max), default 1.0")
      ->type_name("F")
      ->check(CLI::Validator(
          [](std::string& v) {
            char* end = nullptr;
            const double f = std::strtod(v.c_str(), &end);
            return (v.empty() || *end != '\0' || !(f > 0) || !std::isfinite(f))
                       ? "expected a positive number, got '" + v + "'"
                       : std::string();
          },
          ""));
  std::uint64_t duration_ns = 0;
  auto* dur = agentcg::cli::add_duration(
      app, "--duration", duration_ns, "stop after DURATION (e.g. 20s, 500ms), overriding the trace's duration_ns", 1);
  if (auto rc = agentcg::cli::parse(app, argc, argv)) return rc;
  if (dur->count() > 0) o.duration_ns = duration_ns;
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (auto rc = parse_options(argc, argv, opt)) return *rc;
  try {
    const trace::Trace tr = trace::load_trace_file(opt.trace_path);
    Player player(tr, opt);
    return player.run();
  } catch (const trace::TraceError& e) {
    std::cerr << "agentcg-player: " << e.what() << "\n";
    return 1;
  } catch (const RuntimeError& e) {
    std::cerr << "agentcg-player: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "agentcg-player: " << opt.trace_path << ": " << e.what() << "\n";
    return 1;
  }
}
