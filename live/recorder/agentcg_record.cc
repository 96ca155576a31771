// SPDX-License-Identifier: GPL-2.0-only
// agentcg-record: records a live run (the whole machine) into a folder that
// `agentcg trace import --from agentcg-record DIR` turns into a trace:
//   ftrace.txt   the scheduler tracepoints of a private tracefs instance
//                (instances/agentcg-record-PID, trace_clock mono), streamed
//                from its trace_pipe by a reader thread while recording
//   members.tsv  "mono_ns tid tgid kthread cgroup comm": a row when a task is
//                first seen or changes cgroup (sampled every --interval-ms
//                from /proc/PID/task/TID/{stat,cgroup}, cgroup v2 "0::" line)
//   cgroups.tsv  "mono_ns path cpu.weight cpu.max memory.high memory.max":
//                a row when a cgroup holding a seen task (or an ancestor) is
//                first seen or one of its settings changes ("-" = no file)
//   memory.tsv   "mono_ns path memory.current": a row when it changes
//   meta.json    format "agentcg-recording" v1: cpus, kernel, scheduler,
//                start/end CLOCK_MONOTONIC ns, command, exit code, lost events
// Usage: agentcg-record -o DIR [--interval-ms 100] [--cgroup-root /sys/fs/cgroup]
//          [--buffer-kb N] (--duration DUR | -- COMMAND [ARGS...])
//          [--version] [--help]   (CLI11 via config/cli.h)
// Exit: the command's exit code (128+signal if it was killed), 0 after
// --duration, 2 on a usage error, 1 on a runtime error (not root, no tracefs).
// The tracing instance is removed on every exit path we control (normal end,
// SIGINT/SIGTERM/SIGHUP, errors after it was created); a SIGKILL leaves it
// behind (remove it with rmdir).
//
// Who calls it: users, live/vm/guest/scenarios.d/record.sh. Limits: tasks
// that live less than one interval are not in members.tsv (the importer
// gives them their parent's cgroup), nor are the tids of kernel threads
// after their first sample (they cannot change cgroup; a reused tid takes
// its parent's cgroup the same way); timestamps in ftrace.txt have the
// microsecond resolution of the tracefs text output; only libc is needed.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string_view>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "config/cli.h"

namespace {

constexpr const char* kEvents[] = {"sched_switch",       "sched_wakeup",       "sched_wakeup_new",
                                   "sched_waking",       "sched_process_fork", "sched_process_exec",
                                   "sched_process_exit", "sched_migrate_task"};

std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};

void on_sigchld(int) {}

void on_signal(int sig) {
  g_signal.store(sig);
  g_stop.store(true);
}

std::uint64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

bool read_file(const std::string& path, std::string& out) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out.clear();
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      close(fd);
      return false;
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  return true;
}

std::string first_line(const std::string& s) {
  const auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

bool write_file(const std::string& path, const std::string& value, std::string* err = nullptr) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    if (err) *err = path + ": " + std::strerror(errno);
    return false;
  }
  const ssize_t n = write(fd, value.data(), value.size());
  const int e = errno;
  close(fd);
  if (n != static_cast<ssize_t>(value.size())) {
    if (err) *err = "write '" + value + "' to " + path + ": " + std::strerror(e);
    return false;
  }
  return true;
}

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o + "\"";
}

// Tabs and newlines would break the TSV columns.
std::string tsv_safe(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

struct Config {
  std::string out_dir;
  unsigned interval_ms = 100;
  std::string cgroup_root = "/sys/fs/cgroup";
  bool cgroups = true;  // --no-cgroups: the scheduler events only, every task in "/"
  unsigned buffer_kb = 0;
  std::uint64_t duration_ns = 0;
  std::vector<std::string> command;
};

// nullopt: record with `c`; else the exit code (--help/--version 0, usage 2).
std::optional<int> parse_args(int argc, char** argv, Config& c) {
  CLI::App app{"Records the scheduler tracepoints (tracefs), cgroup membership, cgroup settings and "
               "memory.current of the whole machine into DIR until COMMAND exits or DURATION passes. "
               "Import: agentcg trace import --from agentcg-record DIR -o trace.json",
               "agentcg-record"};
  agentcg::cli::setup(app);
  app.add_option("-o,--out", c.out_dir, "the recording's folder")->required()->type_name("DIR");
  app.add_option("--interval-ms", c.interval_ms, "cgroup/membership sampling interval (default 100)")
      ->check(CLI::Range(10u, 60000u));
  app.add_option("--cgroup-root", c.cgroup_root, "the cgroup v2 mount (default /sys/fs/cgroup)")->type_name("DIR");
  app.add_flag("--no-cgroups", [&c](std::int64_t) { c.cgroups = false; },
               "the scheduler events only, every task in the root cgroup (a machine without cgroup v2; a "
               "capture for `agentcg fidelity --capture`)");
  app.add_option("--buffer-kb", c.buffer_kb, "per-CPU tracefs buffer")->check(CLI::Range(64u, 4u * 1024 * 1024));
  auto* dur = agentcg::cli::add_duration(app, "--duration", c.duration_ns, "record for DURATION (10s, 500ms, 2m)", 1);
  app.footer("  -- COMMAND [ARGS...]     record until COMMAND exits (instead of --duration)");
  // Everything after "--" is the command, options included.
  std::vector<std::string> command;
  int n = argc;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--") {
      n = i;
      command.assign(argv + i + 1, argv + argc);
      break;
    }
  if (auto rc = agentcg::cli::parse(app, n, argv)) return rc;
  c.command = command;
  const char* bad = nullptr;
  if (n < argc && c.command.empty()) bad = "'--' must be followed by a COMMAND";
  else if ((dur->count() > 0) == !c.command.empty()) bad = "give exactly one of --duration DURATION or -- COMMAND";
  if (bad == nullptr) return std::nullopt;
  std::fprintf(stderr, "agentcg-record: error: %s\nRun agentcg-record --help for the options.\n", bad);
  return agentcg::cli::kUsageExit;
}

// ---- tracefs ---------------------------------------------------------------

class Tracer {
 public:
  // Finds or mounts tracefs, creates the instance and enables the events.
  bool start(const Config& cfg, std::string& err) {
    // /sys/kernel/tracing, mounted there if needed; the debugfs automount
    // (/sys/kernel/debug/tracing) only when mounting fails.
    if (access("/sys/kernel/tracing/instances", F_OK) == 0) {
      base_ = "/sys/kernel/tracing";
    } else if (mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, nullptr) == 0 &&
               access("/sys/kernel/tracing/instances", F_OK) == 0) {
      base_ = "/sys/kernel/tracing";
    } else {
      const int e = errno;
      if (access("/sys/kernel/debug/tracing/instances", F_OK) == 0) {
        base_ = "/sys/kernel/debug/tracing";
      } else {
        err = std::string("no tracefs: /sys/kernel/tracing/instances is missing and mounting tracefs "
                          "there failed (") + std::strerror(e) +
              "); a kernel with CONFIG_FTRACE and tracefs is needed";
        return false;
      }
    }
    inst_ = base_ + "/instances/agentcg-record-" + std::to_string(getpid());
    if (mkdir(inst_.c_str(), 0755) != 0) {
      err = "cannot create the tracing instance " + inst_ + ": " + std::strerror(errno);
      inst_.clear();
      return false;
    }
    if (!write_file(inst_ + "/tracing_on", "0", &err)) return false;
    if (!write_file(inst_ + "/trace_clock", "mono", &err)) {
      err += " (the kernel has no 'mono' trace clock)";
      return false;
    }
    if (cfg.buffer_kb != 0 && !write_file(inst_ + "/buffer_size_kb", std::to_string(cfg.buffer_kb), &err))
      return false;
    for (const char* ev : kEvents) {
      const std::string p = inst_ + "/events/sched/" + ev + "/enable";
      if (access(p.c_str(), F_OK) != 0) {
        missing_events_.push_back(ev);  // e.g. sched_waking on old kernels
        continue;
      }
      if (!write_file(p, "1", &err)) return false;
    }
    pipe_fd_ = open((inst_ + "/trace_pipe").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (pipe_fd_ < 0) {
      err = inst_ + "/trace_pipe: " + std::strerror(errno);
      return false;
    }
    return true;
  }
  bool on(std::string& err) { return write_file(inst_ + "/tracing_on", "1", &err); }
  void off() {
    if (!inst_.empty()) write_file(inst_ + "/tracing_on", "0");
  }
  // Events lost in the ring buffer (overwritten or dropped), per_cpu stats.
  std::uint64_t ring_lost() const {
    std::uint64_t lost = 0;
    DIR* d = opendir((inst_ + "/per_cpu").c_str());
    if (d == nullptr) return 0;
    while (dirent* e = readdir(d)) {
      if (std::strncmp(e->d_name, "cpu", 3) != 0) continue;
      std::string s;
      if (!read_file(inst_ + "/per_cpu/" + e->d_name + "/stats", s)) continue;
      for (const char* key : {"overrun: ", "dropped events: "}) {
        const auto p = s.find(key);
        if (p != std::string::npos) lost += std::strtoull(s.c_str() + p + std::strlen(key), nullptr, 10);
      }
    }
    closedir(d);
    return lost;
  }
  // Disables everything and removes the instance (idempotent).
  void remove() {
    if (inst_.empty()) return;
    write_file(inst_ + "/tracing_on", "0");
    for (const char* ev : kEvents) write_file(inst_ + "/events/sched/" + ev + "/enable", "0");
    if (pipe_fd_ >= 0) close(pipe_fd_);
    pipe_fd_ = -1;
    for (int i = 0; i < 50 && rmdir(inst_.c_str()) != 0 && errno == EBUSY; ++i) usleep(20000);
    if (access(inst_.c_str(), F_OK) == 0)
      std::fprintf(stderr, "agentcg-record: warning: could not remove %s: %s\n", inst_.c_str(),
                   std::strerror(errno));
    inst_.clear();
  }
  int pipe_fd() const { return pipe_fd_; }
  const std::vector<std::string>& missing_events() const { return missing_events_; }
  const std::string& instance() const { return inst_; }

 private:
  std::string base_;
  std::string inst_;
  int pipe_fd_ = -1;
  std::vector<std::string> missing_events_;
};

// Streams trace_pipe into ftrace.txt; counts "[LOST N EVENTS]" markers.
// trace_pipe merges the per-CPU buffers by what is committed when it reads,
// so an event can come out a few ms after later-stamped events of another
// CPU (seen under qemu TCG: up to 2.3 ms). Lines are therefore held in a
// reorder window of kWindowNs of timestamps and written sorted (stable for
// equal stamps), so ftrace.txt is a time-sorted report like `trace`.
class PipeReader {
 public:
  static constexpr std::uint64_t kWindowNs = 500000000;
  static constexpr long kBatchNs = 50000000;

  PipeReader(int in_fd, int out_fd) : in_(in_fd), out_(out_fd) {}
  void start() { thread_ = std::thread([this] { loop(); }); }
  // Stops after draining what the pipe still holds.
  void finish() {
    done_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  std::uint64_t lost() const { return lost_; }
  std::uint64_t bytes() const { return bytes_; }
  std::uint64_t reordered() const { return reordered_; }
  const std::string& error() const { return error_; }

 private:
  // Reads the pipe empty, then sleeps kBatchNs; no poll(): a poller is woken
  // by every new event, its own switch-out included, so it would feed itself
  // (measured in the VM: a wakeup every ~1.3 ms, most of the recording).
  // About 20 wakeups a second instead; the ring buffer holds the batch.
  void loop() {
    std::vector<char> buf(1 << 16);
    for (;;) {
      const bool draining = done_.load();
      const ssize_t n = read(in_, buf.data(), buf.size());
      if (n > 0) {
        bytes_ += static_cast<std::uint64_t>(n);
        scan(buf.data(), static_cast<std::size_t>(n));
        if (!flush(false)) return;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN) {
        error_ = std::string("reading trace_pipe: ") + std::strerror(errno);
        flush(true);
        return;
      }
      if (draining) {
        if (!carry_.empty()) add_line(carry_ + "\n");
        carry_.clear();
        flush(true);
        return;
      }
      timespec ts{0, kBatchNs};
      nanosleep(&ts, nullptr);
    }
  }
  // The timestamp of a tracefs line: the number token ending in ':' before
  // the event name ("  comm-12  [001] d..2.  123.456789: sched_switch: ...").
  static std::optional<std::uint64_t> stamp(std::string_view line) {
    for (std::size_t i = line.find(": "); i != std::string_view::npos; i = line.find(": ", i + 1)) {
      std::size_t b = i;
      while (b > 0 && line[b - 1] != ' ') --b;
      const std::string_view tok = line.substr(b, i - b);
      const auto dot = tok.find('.');
      if (dot == std::string_view::npos || dot == 0 || dot + 1 == tok.size()) continue;
      std::uint64_t sec = 0, frac = 0;
      std::size_t digits = 0;
      bool ok = true;
      for (std::size_t k = 0; k < tok.size() && ok; ++k) {
        if (k == dot) continue;
        if (tok[k] < '0' || tok[k] > '9') ok = false;
        else if (k < dot) sec = sec * 10 + static_cast<std::uint64_t>(tok[k] - '0');
        else if (digits < 9) frac = frac * 10 + static_cast<std::uint64_t>(tok[k] - '0'), ++digits;
      }
      if (!ok) continue;
      for (; digits < 9; ++digits) frac *= 10;
      return sec * 1000000000ULL + frac;
    }
    return std::nullopt;
  }
  void add_line(std::string line) {
    if (const auto p = line.find("[LOST "); p != std::string::npos)
      lost_ += std::strtoull(line.c_str() + p + 6, nullptr, 10);
    const auto ts = stamp(line);
    std::uint64_t key = max_ts_;
    if (ts) {
      if (*ts < max_ts_) ++reordered_;
      key = *ts;
      max_ts_ = std::max(max_ts_, *ts);
    }
    pending_.emplace(key, std::move(line));
  }
  // Splits the chunk into lines (carry_ keeps a partial last line).
  void scan(const char* data, std::size_t n) {
    carry_.append(data, n);
    std::size_t start = 0;
    for (std::size_t nl = carry_.find('\n'); nl != std::string::npos; nl = carry_.find('\n', start)) {
      add_line(carry_.substr(start, nl + 1 - start));
      start = nl + 1;
    }
    carry_.erase(0, start);
  }
  // Writes the lines older than the window (all with `all`).
  bool flush(bool all) {
    std::string out;
    auto it = pending_.begin();
    for (; it != pending_.end(); ++it) {
      if (!all && it->first + kWindowNs >= max_ts_) break;
      out += it->second;
    }
    pending_.erase(pending_.begin(), it);
    std::size_t off = 0;
    while (off < out.size()) {
      const ssize_t w = write(out_, out.data() + off, out.size() - off);
      if (w < 0) {
        if (errno == EINTR) continue;
        error_ = std::string("writing ftrace.txt: ") + std::strerror(errno);
        return false;
      }
      off += static_cast<std::size_t>(w);
    }
    return true;
  }

  int in_;
  int out_;
  std::thread thread_;
  std::atomic<bool> done_{false};
  std::uint64_t lost_ = 0;
  std::uint64_t bytes_ = 0;
  std::uint64_t reordered_ = 0;
  std::uint64_t max_ts_ = 0;
  std::multimap<std::uint64_t, std::string> pending_;  // by timestamp, stable for equal keys
  std::string carry_;
  std::string error_;
};

// ---- /proc and cgroup sampling ---------------------------------------------

class Sampler {
 public:
  Sampler(const Config& cfg, FILE* members, FILE* cgroups, FILE* memory)
      : root_(cfg.cgroup_root), with_cgroups_(cfg.cgroups), members_(members), cgroups_(cgroups), memory_(memory) {
    std::fputs("mono_ns\ttid\ttgid\tkthread\tcgroup\tcomm\n", members_);
    std::fputs("mono_ns\tpath\tcpu.weight\tcpu.max\tmemory.high\tmemory.max\n", cgroups_);
    std::fputs("mono_ns\tpath\tmemory.current\n", memory_);
  }

  void sample() {
    const std::uint64_t t = mono_ns();
    DIR* proc = opendir("/proc");
    if (proc == nullptr) return;
    while (dirent* pe = readdir(proc)) {
      if (pe->d_name[0] < '0' || pe->d_name[0] > '9') continue;
      // Kernel threads never change cgroup: once seen, skipped (a tid reused
      // after one died gets no row; the importer gives it its parent's cgroup).
      if (auto k = tasks_.find(std::atoll(pe->d_name)); k != tasks_.end() && k->second.kthread) continue;
      const std::string pdir = std::string("/proc/") + pe->d_name;
      DIR* tasks = opendir((pdir + "/task").c_str());
      if (tasks == nullptr) continue;
      while (dirent* te = readdir(tasks)) {
        if (te->d_name[0] < '0' || te->d_name[0] > '9') continue;
        task(t, std::atoll(te->d_name), std::atoll(pe->d_name), pdir + "/task/" + te->d_name);
      }
      closedir(tasks);
    }
    closedir(proc);
    for (const std::string& cg : cgroups_seen_) cgroup(t, cg);
    std::fflush(members_);
    std::fflush(cgroups_);
    std::fflush(memory_);
  }

 private:
  struct TaskSeen {
    std::uint64_t starttime = 0;
    std::string cgroup;
    bool kthread = false;
  };
  struct CgroupSeen {
    std::string settings;
    std::string current;
  };

  void task(std::uint64_t t, long long tid, long long tgid, const std::string& dir) {
    std::string stat, cg;
    if (!read_file(dir + "/stat", stat) || !read_file(dir + "/cgroup", cg)) return;  // exited
    const auto lp = stat.find('(');
    const auto rp = stat.rfind(')');
    if (lp == std::string::npos || rp == std::string::npos || rp < lp) return;
    const std::string comm = stat.substr(lp + 1, rp - lp - 1);
    // Fields after ")": 3 state, 4 ppid, ..., 9 flags, ..., 22 starttime.
    std::vector<std::string> f;
    std::size_t i = rp + 2;
    while (i < stat.size() && f.size() < 20) {
      const auto sp = stat.find(' ', i);
      f.push_back(stat.substr(i, sp == std::string::npos ? std::string::npos : sp - i));
      if (sp == std::string::npos) break;
      i = sp + 1;
    }
    if (f.size() < 20) return;
    const unsigned long long flags = std::strtoull(f[6].c_str(), nullptr, 10);
    const bool kthread = (flags & 0x00200000ULL) != 0;  // PF_KTHREAD
    const std::uint64_t starttime = std::strtoull(f[19].c_str(), nullptr, 10);
    std::string path;
    std::size_t pos = 0;
    while (pos < cg.size()) {
      auto nl = cg.find('\n', pos);
      if (nl == std::string::npos) nl = cg.size();
      if (cg.compare(pos, 3, "0::") == 0) path = cg.substr(pos + 3, nl - pos - 3);
      pos = nl + 1;
    }
    if (!with_cgroups_) path = "/";  // --no-cgroups: membership is not recorded
    if (path.empty()) return;      // no cgroup v2 line
    if (path.find('\t') != std::string::npos) return;
    // A path with " (deleted)" appended: the cgroup went away; keep the name.
    if (const auto d = path.find(" (deleted)"); d != std::string::npos) path.erase(d);
    TaskSeen& seen = tasks_[tid];
    if (seen.starttime == starttime && seen.cgroup == path) return;
    seen.starttime = starttime;
    seen.cgroup = path;
    seen.kthread = kthread;
    std::fprintf(members_, "%llu\t%lld\t%lld\t%d\t%s\t%s\n", static_cast<unsigned long long>(t), tid, tgid,
                 kthread ? 1 : 0, path.c_str(), tsv_safe(comm).c_str());
    for (std::string p = path; p != "/" && !p.empty(); p = p.substr(0, std::max<std::size_t>(1, p.rfind('/'))))
      cgroups_seen_.insert(p);
  }

  void cgroup(std::uint64_t t, const std::string& path) {
    const std::string dir = root_ + path;
    std::string settings;
    for (const char* file : {"cpu.weight", "cpu.max", "memory.high", "memory.max"}) {
      std::string v;
      settings += '\t';
      settings += read_file(dir + "/" + file, v) ? tsv_safe(first_line(v)) : "-";
    }
    std::string cur;
    const bool have_cur = read_file(dir + "/memory.current", cur);
    if (access(dir.c_str(), F_OK) != 0) return;  // removed
    CgroupSeen& seen = cgroup_state_[path];
    if (seen.settings != settings) {
      seen.settings = settings;
      std::fprintf(cgroups_, "%llu\t%s%s\n", static_cast<unsigned long long>(t), path.c_str(), settings.c_str());
    }
    if (have_cur && first_line(cur) != seen.current) {
      seen.current = first_line(cur);
      std::fprintf(memory_, "%llu\t%s\t%s\n", static_cast<unsigned long long>(t), path.c_str(),
                   seen.current.c_str());
    }
  }

  std::string root_;
  bool with_cgroups_;
  FILE* members_;
  FILE* cgroups_;
  FILE* memory_;
  std::map<long long, TaskSeen> tasks_;
  std::set<std::string> cgroups_seen_;
  std::map<std::string, CgroupSeen> cgroup_state_;
};

std::string scheduler_in_use() {
  std::string state, ops;
  if (read_file("/sys/kernel/sched_ext/state", state) && first_line(state) == "enabled" &&
      read_file("/sys/kernel/sched_ext/root/ops", ops))
    return "sched_ext:" + first_line(ops);
  return "default";
}

void write_meta(const Config& cfg, const std::string& sched, std::uint64_t start, std::uint64_t end,
                int exit_code, std::uint64_t lost, const std::vector<std::string>& missing, bool complete) {
  utsname u{};
  uname(&u);
  const std::string path = cfg.out_dir + "/meta.json";
  FILE* f = std::fopen((path + ".tmp").c_str(), "w");
  if (f == nullptr) return;
  std::string cmd = "[";
  for (std::size_t i = 0; i < cfg.command.size(); ++i) cmd += (i ? ", " : "") + json_str(cfg.command[i]);
  cmd += "]";
  std::string miss = "[";
  for (std::size_t i = 0; i < missing.size(); ++i) miss += (i ? ", " : "") + json_str(missing[i]);
  miss += "]";
  std::fprintf(f,
               "{\n  \"format\": \"agentcg-recording\",\n  \"version\": 1,\n  \"cpus\": %ld,\n"
               "  \"kernel\": %s,\n  \"scheduler\": %s,\n  \"trace_clock\": \"mono\",\n"
               "  \"interval_ms\": %u,\n  \"cgroup_root\": %s,\n  \"start_ns\": %llu,\n",
               sysconf(_SC_NPROCESSORS_ONLN), json_str(u.release).c_str(), json_str(sched).c_str(),
               cfg.interval_ms, cfg.cgroups ? json_str(cfg.cgroup_root).c_str() : "null",
               static_cast<unsigned long long>(start));
  if (complete) std::fprintf(f, "  \"end_ns\": %llu,\n", static_cast<unsigned long long>(end));
  else std::fputs("  \"end_ns\": null,\n", f);
  std::fprintf(f, "  \"command\": %s,\n", cmd.c_str());
  if (complete && !cfg.command.empty()) std::fprintf(f, "  \"exit_code\": %d,\n", exit_code);
  std::fprintf(f, "  \"lost_events\": %llu,\n  \"missing_events\": %s,\n  \"complete\": %s\n}\n",
               static_cast<unsigned long long>(lost), miss.c_str(), complete ? "true" : "false");
  std::fclose(f);
  std::rename((path + ".tmp").c_str(), path.c_str());
}

FILE* open_out(const std::string& dir, const char* name) {
  FILE* f = std::fopen((dir + "/" + name).c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "agentcg-record: %s/%s: %s\n", dir.c_str(), name, std::strerror(errno));
    return nullptr;
  }
  return f;
}

int run(const Config& cfg) {
  if (geteuid() != 0) {
    std::fprintf(stderr, "agentcg-record: must run as root (tracefs and the cgroup files need it)\n");
    return 1;
  }
  if (mkdir(cfg.out_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "agentcg-record: cannot create %s: %s\n", cfg.out_dir.c_str(), std::strerror(errno));
    return 1;
  }
  if (cfg.cgroups && access((cfg.cgroup_root + "/cgroup.controllers").c_str(), F_OK) != 0) {
    std::fprintf(stderr,
                 "agentcg-record: %s is not a cgroup v2 mount (no cgroup.controllers); --no-cgroups records "
                 "the scheduler events alone\n",
                 cfg.cgroup_root.c_str());
    return 1;
  }
  const int trace_fd = open((cfg.out_dir + "/ftrace.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  FILE* members = open_out(cfg.out_dir, "members.tsv");
  FILE* cgroups = open_out(cfg.out_dir, "cgroups.tsv");
  FILE* memory = open_out(cfg.out_dir, "memory.tsv");
  if (trace_fd < 0 || !members || !cgroups || !memory) {
    if (trace_fd < 0) std::fprintf(stderr, "agentcg-record: %s/ftrace.txt: %s\n", cfg.out_dir.c_str(), std::strerror(errno));
    return 1;
  }

  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &sa, nullptr);
  struct sigaction chld{};
  chld.sa_handler = on_sigchld;  // only to interrupt the main loop's sleep
  sigemptyset(&chld.sa_mask);
  sigaction(SIGCHLD, &chld, nullptr);

  Tracer tracer;
  std::string err;
  if (!tracer.start(cfg, err)) {
    tracer.remove();
    std::fprintf(stderr, "agentcg-record: %s\n", err.c_str());
    return 1;
  }
  for (const std::string& m : tracer.missing_events())
    std::fprintf(stderr, "agentcg-record: warning: the kernel has no sched/%s event\n", m.c_str());
  const std::string sched = scheduler_in_use();
  PipeReader reader(tracer.pipe_fd(), trace_fd);
  reader.start();
  Sampler sampler(cfg, members, cgroups, memory);
  sampler.sample();  // tasks present before the start
  if (!tracer.on(err)) {
    reader.finish();
    tracer.remove();
    std::fprintf(stderr, "agentcg-record: %s\n", err.c_str());
    return 1;
  }
  const std::uint64_t start = mono_ns();
  write_meta(cfg, sched, start, 0, 0, 0, tracer.missing_events(), false);
  std::fprintf(stderr, "agentcg-record: recording into %s (instance %s, scheduler %s)\n", cfg.out_dir.c_str(),
               tracer.instance().c_str(), sched.c_str());

  pid_t child = -1;
  int exit_code = 0;
  if (!cfg.command.empty()) {
    child = fork();
    if (child < 0) {
      std::fprintf(stderr, "agentcg-record: fork: %s\n", std::strerror(errno));
      g_stop.store(true);
      exit_code = 1;
    } else if (child == 0) {
      struct sigaction dfl{};
      dfl.sa_handler = SIG_DFL;
      for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &dfl, nullptr);
      std::vector<char*> argv;
      for (const std::string& a : cfg.command) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execvp(argv[0], argv.data());
      std::fprintf(stderr, "agentcg-record: cannot run %s: %s\n", argv[0], std::strerror(errno));
      _exit(127);
    }
  }

  std::uint64_t next = start + cfg.interval_ms * 1000000ULL;
  bool child_done = child < 0;
  bool forwarded = false;
  for (;;) {
    if (child > 0 && !child_done) {
      int st = 0;
      if (waitpid(child, &st, WNOHANG) == child) {
        child_done = true;
        exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        break;
      }
      if (g_stop.load() && !forwarded) {
        kill(child, g_signal.load() ? g_signal.load() : SIGTERM);  // then wait for it to exit
        forwarded = true;
      }
    } else if (g_stop.load()) {
      exit_code = 128 + g_signal.load();
      break;
    }
    const std::uint64_t now = mono_ns();
    if (cfg.command.empty() && now - start >= cfg.duration_ns) break;
    // A failed reader stops a --duration recording; a command is waited for.
    if (!reader.error().empty() && child < 0) break;
    if (now >= next) {
      sampler.sample();
      next += cfg.interval_ms * 1000000ULL;
      if (next < now) next = now + cfg.interval_ms * 1000000ULL;
    }
    // Sleep to the next sample (or the end); SIGCHLD and the stop signals
    // interrupt it. Few wakeups: each is sched events in the recording.
    std::uint64_t until = next;
    if (cfg.command.empty()) until = std::min(until, start + cfg.duration_ns);
    const std::uint64_t left = until > now ? until - now : 0;
    timespec ts{static_cast<time_t>(left / 1000000000ULL), static_cast<long>(left % 1000000000ULL)};
    if (left > 0) nanosleep(&ts, nullptr);
  }
  sampler.sample();
  const std::uint64_t end = mono_ns();
  tracer.off();
  const std::uint64_t ring_lost = tracer.ring_lost();
  reader.finish();
  tracer.remove();
  close(trace_fd);
  std::fclose(members);
  std::fclose(cgroups);
  std::fclose(memory);
  const std::uint64_t lost = std::max(ring_lost, reader.lost());
  write_meta(cfg, sched, start, end, exit_code, lost, tracer.missing_events(), true);
  std::fprintf(stderr, "agentcg-record: %.3f s, %llu bytes of events (%llu put back in time order), %llu lost events%s\n",
               static_cast<double>(end - start) / 1e9, static_cast<unsigned long long>(reader.bytes()),
               static_cast<unsigned long long>(reader.reordered()), static_cast<unsigned long long>(lost),
               lost ? " (raise --buffer-kb)" : "");
  if (!reader.error().empty()) {
    std::fprintf(stderr, "agentcg-record: %s\n", reader.error().c_str());
    return 1;
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  if (auto rc = parse_args(argc, argv, cfg)) return *rc;
  return run(cfg);
}
