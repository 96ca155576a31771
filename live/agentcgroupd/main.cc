// SPDX-License-Identifier: GPL-2.0-only
// agentcgroupd: loads and attaches the agentcg sched_ext scheduler
// (bpf/agentcg.bpf.c) through its libbpf skeleton and runs the user-space
// half of the design (CPU design §5): cgroup watcher (inotify over the
// cgroup v2 tree + a periodic rescan), memory monitor (memory.events ->
// mem_penalty with core's agentcg_mem_penalty_update()), Prometheus metrics
// (cpp-httplib), config reload on SIGHUP, clean detach on SIGTERM/SIGINT;
// with AGENTCG_PROG_STATS set, SIGUSR1 prints the callbacks' run counts and
// times so far (print_prog_stats), as detaching does.
//
// One event loop on CLOCK_MONOTONIC: poll() over a signalfd, the inotify
// fd (cgroup directories: created/removed; memory.events files: modified)
// and an eventfd the metrics thread writes to ask for a fresh /metrics
// text. The loop renders it (the metrics thread only waits for and copies
// the text, under metrics_mu, so it never touches libbpf or the monitor
// state). Nothing is read on a timer except what must be (MemReadPlan in
// daemon_logic.h): a memory.events file when it changed, penalties that
// still decay every monitor.poll_interval_ms, and a safety rescan of the
// tree every 30 s. Why: the daemon once read every cgroup's memory.events
// every 10 ms and rendered /metrics every 200 ms; under TCG, in the live
// comparison, the trace's cgroups lost ~15 % of the machine to it (issue 14).
//
// Exit codes: 0 after a clean detach on a signal; 1 when the kernel ejected
// the scheduler (watchdog stall, scx error: the reason from ops.exit is
// logged) and daemon.reattach_on_eject is false; 2 for a bad command line
// or config at start; 3 when loading/attaching fails.
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <httplib.h>

#include "agentcg/tunables.h"
#include "bpf/agentcg_intf.h"
#include "config/cli.h"
#include "config/config.h"
#include "live/agentcgroupd/daemon_logic.h"
#include "live/agentcgroupd/extensions.h"
#include "live/http/bounded_server.h"
#include "live/strategy/api.h"
#include "agentcg.skel.h"

namespace {

using agentcg::config::Config;
using agentcg::config::ConfigError;
namespace live = agentcg::live;

int g_level = 1;  // 0 debug, 1 info, 2 warn, 3 error

int level_of(const std::string& s) {
  if (s == "debug") return 0;
  if (s == "warn") return 2;
  if (s == "error") return 3;
  return 1;
}

#define LOG(lvl, tag, ...)                                   \
  do {                                                       \
    if ((lvl) >= g_level) {                                  \
      std::fprintf(stderr, "agentcgroupd: " tag ": " __VA_ARGS__); \
      std::fputc('\n', stderr);                              \
    }                                                        \
  } while (0)
#define LOGD(...) LOG(0, "debug", __VA_ARGS__)
#define LOGI(...) LOG(1, "info", __VA_ARGS__)
#define LOGW(...) LOG(2, "warn", __VA_ARGS__)
#define LOGE(...) LOG(3, "error", __VA_ARGS__)

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

int libbpf_log(enum libbpf_print_level level, const char* fmt, va_list ap) {
  if (level == LIBBPF_DEBUG && g_level > 0) return 0;
  return std::vfprintf(stderr, fmt, ap);
}

struct Options {
  std::string config_path = "/etc/agentcg/config.yaml";
  bool config_given = false;
  std::string mode_override;  // fifo, flatcg, agentcg, scx, none
  bool check_only = false;
};

class Daemon {
 public:
  Daemon(Options opt, Config cfg) : opt_(std::move(opt)), cfg_(std::move(cfg)) {}
  int run();

 private:
  bool attach();
  void detach();
  void rescan(bool full_check = true);
  void poll_memory();
  void refresh_metrics(bool force);
  void reload();
  void apply_live_cfg();
  bool check_ejected();
  std::string mode_name() const;

  Options opt_;
  Config cfg_;
  agentcg_bpf* skel_ = nullptr;
  bpf_link* link_ = nullptr;
  int inotify_fd_ = -1;
  std::map<std::string, std::uint64_t> cgroups_;  // path -> id
  std::map<int, std::string> watches_;            // inotify wd -> path (directories)
  std::map<int, std::string> mem_watches_;        // inotify wd -> path (memory.events)
  std::map<std::string, int> mem_wd_;             // path -> its current memory.events wd
  live::MemMonitor mem_;
  live::MemReadPlan mem_plan_;
  std::uint64_t penalty_events_[2] = {0, 0};
  std::uint64_t reloads_ = 0, reload_errors_ = 0;
  std::uint64_t last_metrics_ns_ = 0, last_rescan_ns_ = 0;
  std::mutex metrics_mu_;
  std::condition_variable metrics_cv_;
  std::string metrics_text_;        // guarded by metrics_mu_ (read by the HTTP thread)
  std::uint64_t scrape_seq_ = 0;    // scrapes asked for (metrics_mu_)
  std::uint64_t rendered_seq_ = 0;  // scrapes answered by the last render (metrics_mu_)
  bool metrics_final_ = false;      // the loop ended: scrapes take the last text (metrics_mu_)
  int wake_fd_ = -1;                // eventfd: a scrape wants a fresh render
  live::BoundedServer http_;  // bounded request heads (live/http)
  std::thread http_thread_;
  // Seed 001: monitor, strategies API, scx supervision, k8s (extensions.h).
  live::Extensions ext_;
};

std::string Daemon::mode_name() const {
  return opt_.mode_override.empty() ? cfg_.daemon.mode : opt_.mode_override;
}

bool Daemon::attach() {
  if (mode_name() == "none" || mode_name() == "scx") {
    cgroups_.clear();
    return ext_.attach_external(cfg_, mode_name());  // no agentcg scheduler
  }
  skel_ = agentcg_bpf__open();
  if (!skel_) {
    LOGE("opening the BPF skeleton failed: %s", std::strerror(errno));
    return false;
  }
  const std::string mode = mode_name();
  agentcg_tunables t = live::tunables_of(cfg_);
  enum agentcg_mode m = live::mode_of(cfg_);
  if (mode == "fifo") m = AGENTCG_MODE_FIFO;
  if (mode == "flatcg") {
    m = AGENTCG_MODE_FLATCG;
    t.features = 0;
  }
  if (mode == "agentcg") m = AGENTCG_MODE_AGENTCG;
  skel_->rodata->agentcg_mode = m;
  // scheduler.* and the mode live in .data (cfgs[cfg_idx]), rewritten on
  // SIGHUP without detaching (apply_live_cfg).
  for (auto& c : skel_->data->cfgs) {
    c.mode = m;
    c.gen = 0;
    c.tun = t;
  }
  skel_->bss->cfg_idx = 0;
  // Refuse a tree the scheduler cannot give state to (bpf/agentcg_intf.h).
  if (m != AGENTCG_MODE_FIFO) {
    std::error_code ec;
    std::size_t n = 0;
    for (std::filesystem::recursive_directory_iterator it("/sys/fs/cgroup", ec), end; !ec && it != end;
         it.increment(ec))
      if (it->is_directory(ec)) n++;
    if (n + 1 > AGENTCG_MAX_CGRPS) {
      LOGE("refusing to load: %zu cgroups exist, the scheduler keeps state for at most %d "
           "(AGENTCG_MAX_CGRPS); the kernel keeps its default scheduler",
           n + 1, AGENTCG_MAX_CGRPS);
      agentcg_bpf__destroy(skel_);
      skel_ = nullptr;
      return false;
    }
  }
  const int ncpu = libbpf_num_possible_cpus();
  skel_->rodata->nr_cpus = ncpu > 0 ? static_cast<u32>(ncpu) : 1;
  const std::uint64_t load_t0 = now_ns();
  if (int err = agentcg_bpf__load(skel_); err) {
    LOGE("loading the BPF program failed: %s (does this kernel have CONFIG_SCHED_CLASS_EXT?)",
         std::strerror(-err));
    agentcg_bpf__destroy(skel_);
    skel_ = nullptr;
    return false;
  }
  link_ = bpf_map__attach_struct_ops(skel_->maps.agentcg_ops);
  if (!link_) {
    LOGE("attaching the scheduler failed: %s (another sched_ext scheduler attached?)",
         std::strerror(errno));
    agentcg_bpf__destroy(skel_);
    skel_ = nullptr;
    return false;
  }
  // What loading cost (the verifier, mostly: 4-5 s of a TCG guest's time
  // since dispatch's queue walks are global functions, 19-50 s before) and
  // where: the instructions the verifier processed, in all and for the
  // three costliest callbacks (bpf_prog_info.verified_insns, kernel 5.16+;
  // 0 where absent).
  const std::uint64_t load_ns = now_ns() - load_t0;
  unsigned long long insns = 0;
  std::vector<std::pair<unsigned long long, std::string>> per_prog;
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, skel_->obj) {
    bpf_prog_info info{};
    __u32 len = sizeof info;
    if (bpf_prog_get_info_by_fd(bpf_program__fd(prog), &info, &len) != 0) continue;
    insns += info.verified_insns;
    per_prog.emplace_back(info.verified_insns, bpf_program__name(prog));
  }
  // the three costliest callbacks, costliest first
  std::sort(per_prog.begin(), per_prog.end(), std::greater<>());
  std::string most;
  for (std::size_t i = 0; i < per_prog.size() && i < 3; ++i)
    most += (i ? ", " : "") + per_prog[i].second + " " + std::to_string(per_prog[i].first);
  LOGI("attached sched_ext scheduler agentcg, mode %s, features 0x%x, %d CPUs; loaded in %llu ms, "
       "verifier processed %llu instructions (most: %s)",
       mode.c_str(), t.features, ncpu, static_cast<unsigned long long>(load_ns / 1000000), insns,
       most.c_str());
  cgroups_.clear();
  return true;
}

// systemd readiness (Type=notify): one datagram "READY=1" to
// $NOTIFY_SOCKET, the protocol of sd_notify(3), written out so the daemon
// needs no libsystemd. No-op without the variable (started by hand, in the
// VM tests); '@' names an abstract socket.
void notify_systemd(const char* state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (!path || !*path) return;
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  const std::size_t len = std::strlen(path);
  if (len >= sizeof(sa.sun_path)) return;
  std::memcpy(sa.sun_path, path, len);
  if (sa.sun_path[0] == '@') sa.sun_path[0] = '\0';
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  const socklen_t sl = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len);
  if (::sendto(fd, state, std::strlen(state), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&sa), sl) < 0)
    LOGW("sd_notify %s: %s", state, std::strerror(errno));
  ::close(fd);
}

// With AGENTCG_PROG_STATS set (and kernel.bpf_stats_enabled=1), prints each
// callback's run count and total run time since attach, on SIGUSR1 and
// before detaching: the figures of the overhead comparison
// (live/vm/guest/scenarios.sh, which takes one phase's from two dumps).
void print_prog_stats(agentcg_bpf* skel, const std::string& mode) {
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, skel->obj) {
    bpf_prog_info info{};
    __u32 len = sizeof(info);
    const int fd = bpf_program__fd(prog);
    if (fd < 0 || bpf_prog_get_info_by_fd(fd, &info, &len) != 0) continue;
    std::printf("AGENTCG-PROGSTAT %s %s %llu %llu\n", mode.c_str(), bpf_program__name(prog),
                static_cast<unsigned long long>(info.run_cnt),
                static_cast<unsigned long long>(info.run_time_ns));
  }
  std::fflush(stdout);
}

void Daemon::detach() {
  if (skel_ && link_ && std::getenv("AGENTCG_PROG_STATS")) print_prog_stats(skel_, mode_name());
  if (link_) bpf_link__destroy(link_);
  link_ = nullptr;
  if (skel_) agentcg_bpf__destroy(skel_);
  skel_ = nullptr;
}

bool Daemon::check_ejected() {
  if (!skel_) return false;
  const agentcg_exit_info& ei = skel_->bss->exit_info;
  if (__atomic_load_n(&ei.kind, __ATOMIC_ACQUIRE) == 0) return false;
  LOGE("the kernel ejected the scheduler: kind %d, code %lld, reason '%.*s', message '%.*s'", ei.kind,
       static_cast<long long>(ei.exit_code), static_cast<int>(sizeof(ei.reason)), ei.reason,
       static_cast<int>(sizeof(ei.msg)), ei.msg);
  return true;
}

// `full_check`: also re-check, for every cgroup without a memory.events watch,
// whether the file appeared (memory controller enabled later); otherwise
// only new cgroups are checked (a tree event: cheap with 16,384 cgroups).
void Daemon::rescan(bool full_check) {
  const auto list = live::walk_cgroups(cfg_.monitor.cgroup_root);
  std::set<std::string> now_paths, added;
  for (const auto& e : list) {
    now_paths.insert(e.path);
    auto it = cgroups_.find(e.path);
    if (it != cgroups_.end() && it->second == e.id) continue;
    cgroups_[e.path] = e.id;
    added.insert(e.path);
    const std::string full = cfg_.monitor.cgroup_root + (e.path == "/" ? "" : e.path);
    if (inotify_fd_ >= 0) {
      const int wd = inotify_add_watch(inotify_fd_, full.c_str(), IN_CREATE | IN_DELETE | IN_ONLYDIR);
      if (wd >= 0) watches_[wd] = e.path;
    }
    mem_plan_.untrack(e.path);  // a new cgroup at this path: a new baseline
    mem_wd_.erase(e.path);
    if (skel_) {
      agentcg_cgrp_ctl ctl{};
      ctl.mem_penalty = mem_.penalty(e.path);
      bpf_map__update_elem(skel_->maps.cgrp_ctl, &e.id, sizeof(e.id), &ctl, sizeof(ctl), BPF_ANY);
      __atomic_fetch_add(&skel_->bss->ctl_gen, 1u, __ATOMIC_RELEASE);  // stopping re-reads it
    }
    LOGD("cgroup %s (id %llu) watched", e.path.c_str(), static_cast<unsigned long long>(e.id));
  }
  for (auto it = cgroups_.begin(); it != cgroups_.end();) {
    if (now_paths.count(it->first)) {
      ++it;
      continue;
    }
    LOGD("cgroup %s removed", it->first.c_str());
    if (skel_) bpf_map__delete_elem(skel_->maps.cgrp_ctl, &it->second, sizeof(it->second), 0);
    mem_.forget(it->first);
    mem_plan_.untrack(it->first);
    mem_wd_.erase(it->first);
    it = cgroups_.erase(it);
  }
  // memory.events: watched for IN_MODIFY where it exists (the memory
  // controller may be enabled later: re-checked at every rescan)
  for (const auto& [path, id] : cgroups_) {
    if (path == "/" || mem_plan_.tracking(path)) continue;  // the root has no memory.events
    if (!full_check && !added.count(path)) continue;
    const std::string file = cfg_.monitor.cgroup_root + path + "/memory.events";
    if (access(file.c_str(), R_OK) != 0) continue;
    const int wd = inotify_fd_ >= 0 ? inotify_add_watch(inotify_fd_, file.c_str(), IN_MODIFY) : -1;
    if (wd >= 0) {
      mem_watches_[wd] = path;
      mem_wd_[path] = wd;
    }
    mem_plan_.track(path, wd >= 0);
  }
  last_rescan_ns_ = now_ns();
}

void Daemon::poll_memory() {
  const agentcg_tunables t = live::tunables_of(cfg_);
  const std::uint64_t now = now_ns();
  for (const std::string& path : mem_plan_.due(mem_, now, cfg_.monitor.poll_interval_ms * 1000000ULL)) {
    const auto cg = cgroups_.find(path);
    if (cg == cgroups_.end()) continue;
    const std::uint64_t id = cg->second;
    const auto text = live::read_small_file(cfg_.monitor.cgroup_root + path + "/memory.events");
    if (!text) continue;
    const auto high = live::parse_memory_events_high(*text);
    if (!high) continue;
    const std::uint32_t before = mem_.penalty(path);
    std::uint32_t ev = 0;
    const std::uint32_t pen = mem_.poll(path, *high, now, t, &ev);
    if (ev & AGENTCG_EV(penalties_applied)) penalty_events_[0]++;
    if (ev & AGENTCG_EV(penalties_released)) penalty_events_[1]++;
    if (pen != before && skel_) {
      agentcg_cgrp_ctl ctl{};
      ctl.mem_penalty = pen;
      bpf_map__update_elem(skel_->maps.cgrp_ctl, &id, sizeof(id), &ctl, sizeof(ctl), BPF_ANY);
      __atomic_fetch_add(&skel_->bss->ctl_gen, 1u, __ATOMIC_RELEASE);
      LOGI("cgroup %s: mem_penalty %u -> %u (memory.events high %llu)", path.c_str(), before, pen,
           static_cast<unsigned long long>(*high));
    }
  }
}

void Daemon::refresh_metrics(bool force) {
  const std::uint64_t now = now_ns();
  std::uint64_t asked = 0;
  {
    std::lock_guard<std::mutex> lock(metrics_mu_);
    asked = scrape_seq_;
    if (!force && asked == rendered_seq_) return;  // nobody is waiting
  }
  last_metrics_ns_ = now;
  live::MetricsSnapshot s;
  s.attached = link_ != nullptr;
  s.mode = mode_name();
  s.mem_penalty_events[0] = penalty_events_[0];
  s.mem_penalty_events[1] = penalty_events_[1];
  s.config_reloads = reloads_;
  s.config_reload_errors = reload_errors_;
  if (skel_) {
    const int ncpu = libbpf_num_possible_cpus();
    std::vector<std::uint64_t> per(ncpu > 0 ? static_cast<size_t>(ncpu) : 1);
    for (std::uint32_t i = 0; i < AGENTCG_NR_COUNTERS; i++) {
      if (bpf_map__lookup_elem(skel_->maps.stats, &i, sizeof(i), per.data(),
                               per.size() * sizeof(std::uint64_t), 0) == 0)
        for (const auto v : per) s.counters[i] += v;
    }
    for (std::uint32_t i = 0; i < AGENTCG_NR_BPF_STATS; i++) {
      if (bpf_map__lookup_elem(skel_->maps.bpf_stats, &i, sizeof(i), per.data(),
                               per.size() * sizeof(std::uint64_t), 0) == 0)
        for (const auto v : per) s.bpf_stats[i] += v;
    }
  }
  for (const auto& [path, id] : cgroups_) {
    live::CgroupMetrics c;
    c.path = path;
    c.mem_penalty = mem_.penalty(path);
    // cgrp_stat is an array at the slot of the cgroup's state: the slot
    // by id, then the entry, which must still be this cgroup's (a slot is
    // reused after its cgroup is gone)
    std::uint32_t slot = 0;
    if (skel_ &&
        bpf_map__lookup_elem(skel_->maps.cgrp_slots, &id, sizeof(id), &slot, sizeof(slot), 0) == 0)
      c.has_stat = bpf_map__lookup_elem(skel_->maps.cgrp_stat, &slot, sizeof(slot), &c.stat,
                                        sizeof(c.stat), 0) == 0 &&
                   c.stat.cgid == id;
    if (!c.has_stat) c.stat = {};
    s.cgroups.push_back(c);
  }
  std::string text = live::render_metrics(s) + ext_.metrics_text(now);
  std::lock_guard<std::mutex> lock(metrics_mu_);
  metrics_text_ = std::move(text);
  rendered_seq_ = asked;
  metrics_cv_.notify_all();
}

// Writes scheduler.* and the mode into the slot of cfgs the scheduler does
// not read, then flips cfg_idx: the program never sees half a config.
void Daemon::apply_live_cfg() {
  if (!skel_ || !link_) return;
  const std::string mode = mode_name();
  agentcg_tunables t = live::tunables_of(cfg_);
  enum agentcg_mode m = mode == "flatcg" ? AGENTCG_MODE_FLATCG : AGENTCG_MODE_AGENTCG;
  if (m == AGENTCG_MODE_FLATCG) t.features = 0;
  const unsigned cur = skel_->bss->cfg_idx & 1u;
  agentcg_live_cfg& next = skel_->data->cfgs[cur ^ 1u];
  next.mode = m;
  next.tun = t;
  next.gen = skel_->data->cfgs[cur].gen + 1;
  __atomic_store_n(&skel_->bss->cfg_idx, cur ^ 1u, __ATOMIC_RELEASE);
  LOGI("SIGHUP: scheduler config %u live: mode %s, features 0x%x, base_slice_ms %u, min_slice_us %u",
       next.gen, mode.c_str(), t.features, t.base_slice_ms, t.min_slice_us);
}

void Daemon::reload() {
  Config next;
  try {
    next = agentcg::config::load_file(opt_.config_path);
  } catch (const std::exception& e) {
    // load_file() throws only ConfigError; any other type is still caught
    // here: a bad file on SIGHUP must never take the scheduler down.
    reload_errors_++;
    LOGE("SIGHUP: config rejected, keeping the old one: %s", e.what());
    return;
  } catch (...) {
    reload_errors_++;
    LOGE("SIGHUP: config rejected (unknown error), keeping the old one");
    return;
  }
  const bool fifo_change = (next.daemon.mode == "fifo") != (cfg_.daemon.mode == "fifo");
  if (fifo_change) LOGW("SIGHUP: switching to or from mode fifo takes effect on restart");
  if (next.daemon.metrics_port != cfg_.daemon.metrics_port ||
      next.daemon.metrics_address != cfg_.daemon.metrics_address)
    LOGW("SIGHUP: daemon.metrics_port/metrics_address take effect on restart");
  // scheduler.* and agentcg <-> flatcg change now, in the attached program.
  const std::string loaded_mode = cfg_.daemon.mode;
  const auto port = cfg_.daemon.metrics_port;
  const auto addr = cfg_.daemon.metrics_address;
  cfg_ = next;
  if (fifo_change) cfg_.daemon.mode = loaded_mode;
  if (mode_name() != "fifo") apply_live_cfg();
  cfg_.daemon.metrics_port = port;
  cfg_.daemon.metrics_address = addr;
  g_level = level_of(cfg_.daemon.log_level);
  reloads_++;
  LOGI("SIGHUP: config %s reloaded (poll_interval_ms %u, cgroup_root %s)", opt_.config_path.c_str(),
       cfg_.monitor.poll_interval_ms, cfg_.monitor.cgroup_root.c_str());
  rescan();
}

int Daemon::run() {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  sigaddset(&mask, SIGUSR1);
  sigprocmask(SIG_BLOCK, &mask, nullptr);  // before any thread starts, so all inherit it
  const int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    LOGE("signalfd: %s", std::strerror(errno));
    return 3;
  }
  ext_.start(cfg_, opt_.mode_override, opt_.config_path);
  if (!attach()) return 3;
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) LOGW("eventfd: %s: /metrics is re-rendered every second", std::strerror(errno));
  inotify_fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0) LOGW("inotify unavailable (%s): relying on the periodic rescan", std::strerror(errno));
  rescan();
  refresh_metrics(true);
  if (cfg_.daemon.metrics_port) {
    agentcg::strategy::limit_scrape_server(http_);  // a client's body is never buffered
    http_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      std::string body;
      {
        // ask the loop for a fresh render and wait for it (bounded: a busy
        // loop, e.g. a rescan of 16,384 cgroups, answers with the last text)
        std::unique_lock<std::mutex> lock(metrics_mu_);
        const std::uint64_t want = ++scrape_seq_;
        const std::uint64_t one = 1;
        if (!metrics_final_ && wake_fd_ >= 0 && write(wake_fd_, &one, sizeof(one)) == sizeof(one))
          metrics_cv_.wait_for(lock, std::chrono::seconds(2),
                               [&] { return rendered_seq_ >= want || metrics_final_; });
        body = metrics_text_;
      }
      res.set_content(body, "text/plain; version=0.0.4");
    });
    if (!http_.bind_to_port(cfg_.daemon.metrics_address.c_str(), static_cast<int>(cfg_.daemon.metrics_port))) {
      LOGE("cannot listen on %s:%u for /metrics", cfg_.daemon.metrics_address.c_str(), cfg_.daemon.metrics_port);
      detach();
      return 3;
    }
    ext_.add_routes(http_);
    http_thread_ = std::thread([this] { http_.listen_after_bind(); });
    LOGI("metrics on http://%s:%u/metrics", cfg_.daemon.metrics_address.c_str(), cfg_.daemon.metrics_port);
  }
  std::printf("agentcgroupd: ready\n");
  if (skel_ && std::getenv("AGENTCG_PROG_STATS")) std::printf("agentcgroupd: SIGUSR1 prints the callbacks' statistics\n");
  std::fflush(stdout);
  notify_systemd("READY=1");

  int rc = 0;
  for (;;) {
    // wake every poll_interval_ms only while something must be polled
    // (a decaying penalty, a memory.events without a watch); otherwise
    // every kIdleWakeMs, for the ejection check and the extensions' tick
    constexpr int kIdleWakeMs = 250;
    bool sweep = inotify_fd_ < 0;
    for (const auto& [path, st] : mem_.states())
      if (st.penalty > 0) sweep = true;
    const int tmo = sweep ? static_cast<int>(cfg_.monitor.poll_interval_ms)
                          : std::max(kIdleWakeMs, static_cast<int>(cfg_.monitor.poll_interval_ms));
    pollfd fds[3] = {{sfd, POLLIN, 0}, {wake_fd_, POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
    const int n = ::poll(fds, 3, wake_fd_ < 0 ? std::min(tmo, 1000) : tmo);
    if (n < 0 && errno != EINTR) {
      LOGE("poll: %s", std::strerror(errno));
      rc = 3;
      break;
    }
    bool stop = false;
    if (n > 0 && (fds[0].revents & POLLIN)) {
      signalfd_siginfo si{};
      while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo == SIGHUP) {
          reload();
        } else if (si.ssi_signo == SIGUSR1) {
          if (skel_ && link_ && std::getenv("AGENTCG_PROG_STATS")) print_prog_stats(skel_, mode_name());
        } else {
          LOGI("signal %u: detaching", si.ssi_signo);
          stop = true;
        }
      }
    }
    if (stop) break;
    if (n > 0 && inotify_fd_ >= 0 && (fds[2].revents & POLLIN)) {
      alignas(inotify_event) char buf[4096];
      bool dirs = false;
      ssize_t len;
      while ((len = read(inotify_fd_, buf, sizeof(buf))) > 0) {
        for (ssize_t off = 0; off + static_cast<ssize_t>(sizeof(inotify_event)) <= len;) {
          const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
          off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
          const auto mw = mem_watches_.find(ev->wd);
          if (ev->mask & IN_Q_OVERFLOW) {
            mem_plan_.modified_all();
            dirs = true;
          } else if (mw != mem_watches_.end()) {
            if (ev->mask & IN_MODIFY) mem_plan_.modified(mw->second);
            if (ev->mask & IN_IGNORED) {  // the file went with its cgroup
              const auto cur = mem_wd_.find(mw->second);
              if (cur != mem_wd_.end() && cur->second == ev->wd) {  // not a newer cgroup's
                mem_plan_.untrack(mw->second);
                mem_wd_.erase(cur);
              }
              mem_watches_.erase(mw);
            }
          } else if (!(ev->mask & IN_IGNORED)) {
            dirs = true;
          }
        }
      }
      if (dirs) rescan(false);
    }
    if (n > 0 && wake_fd_ >= 0 && (fds[1].revents & POLLIN)) {
      std::uint64_t cnt = 0;
      if (read(wake_fd_, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN) LOGW("eventfd: %s", std::strerror(errno));
    }
    ext_.tick(now_ns(), skel_ ? skel_->obj : nullptr);
    if (check_ejected()) {
      detach();
      if (!cfg_.daemon.reattach_on_eject) {
        rc = 1;
        break;
      }
      LOGI("daemon.reattach_on_eject: re-attaching");
      sleep(1);
      if (!attach()) {
        rc = 3;
        break;
      }
      rescan();
    }
    // the safety rescan (inotify covers the tree; without it, every second)
    // is the only full one: a tree event rescans without re-checking every
    // cgroup's memory.events (16,384 access() calls under TCG)
    if (now_ns() - last_rescan_ns_ > (inotify_fd_ >= 0 ? 30000000000ULL : 1000000000ULL)) rescan();
    poll_memory();
    refresh_metrics(wake_fd_ < 0 && now_ns() - last_metrics_ns_ >= 1000000000ULL);
  }
  detach();
  ext_.stop();
  refresh_metrics(true);
  {
    std::lock_guard<std::mutex> lock(metrics_mu_);
    metrics_final_ = true;
    metrics_cv_.notify_all();
  }
  if (http_thread_.joinable()) {
    http_.stop();
    http_thread_.join();
  }
  if (rc == 0) LOGI("detached cleanly");
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"Loads the agentcg sched_ext scheduler, watches the cgroup tree and exports metrics.", "agentcgroupd"};
  agentcg::cli::setup(app);
  auto* config = app.add_option("--config", opt.config_path,
                                "YAML config (default /etc/agentcg/config.yaml; built-in defaults when the default "
                                "file does not exist)")
                     ->type_name("FILE");
  app.add_option("--mode", opt.mode_override, "override daemon.mode (fifo: trivial baseline scheduler)")
      ->check(CLI::IsMember({"agentcg", "flatcg", "fifo", "scx", "none", "monitor"}))
      ->type_name("MODE");
  app.add_flag("--check-config", opt.check_only, "validate the config and exit (0 ok, 2 bad)");
  if (auto rc = agentcg::cli::parse(app, argc, argv)) return *rc;
  opt.config_given = config->count() > 0;
  if (opt.mode_override == "monitor") opt.mode_override = "none";
  Config cfg;
  if (opt.config_given || access(opt.config_path.c_str(), F_OK) == 0) {
    try {
      cfg = agentcg::config::load_file(opt.config_path);
    } catch (const std::exception& e) {  // ConfigError, or anything unexpected: exit 2, not abort
      std::fprintf(stderr, "agentcgroupd: bad config: %s\n", e.what());
      return 2;
    } catch (...) {
      std::fprintf(stderr, "agentcgroupd: bad config: %s: unknown error\n", opt.config_path.c_str());
      return 2;
    }
  } else {
    std::fprintf(stderr, "agentcgroupd: %s does not exist: using the built-in defaults\n",
                 opt.config_path.c_str());
  }
  if (opt.check_only) {
    std::printf("agentcgroupd: config %s is valid\n", opt.config_path.c_str());
    return 0;
  }
  g_level = level_of(cfg.daemon.log_level);
  libbpf_set_print(libbpf_log);
  Daemon d(std::move(opt), std::move(cfg));
  return d.run();
}
