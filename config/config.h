// SPDX-License-Identifier: GPL-2.0-only
// The one configuration file of agentcg (the seed's /etc/agentcg/config.yaml
// extended): sections `daemon`, `scheduler`, `monitor` (as in the design),
// `gpu` (GPU policies), and the simulator-only `machine` and `cfs`. The
// simulator, agentcgroupd and agentcg-gpud all load it with this code, so a
// key means the same everywhere. Unknown keys and out-of-range values are
// rejected with file, line, key and the expected range; nothing is applied
// from a file that fails.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "agentcg/tunables.h"      // struct agentcg_tunables (core, C99)
#include "agentcg/gpu/gpu_config.h"  // struct GpuConfig (core GPU policies)

namespace YAML { class Node; }

namespace agentcg::config {

class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& what) : std::runtime_error(what) {}
};

struct DaemonConfig {
  std::string log_level = "info";     // debug, info, warn, error
  // 0 = no metrics endpoint. 9402, not 9090 (Prometheus's own UI/API port,
  // taken on any host that runs Prometheus): beside agentcg-gpud's 9401 so
  // the project's two endpoints share one firewall/scrape rule, outside
  // Prometheus's own 9090-9094, and clear of the exporters most often found
  // on a GPU node (node 9100, NVIDIA DCGM 9400). The exporter range
  // 9100-9999 is fully claimed on Prometheus's port list, so no port there
  // is unclaimed; this one is just not a common one.
  std::uint32_t metrics_port = 9402;
  std::string metrics_address = "127.0.0.1";
  // agentcg, flatcg, scx (a named sched_ext binary, see SupervisorConfig),
  // or none (alias monitor: no scheduler, the kernel's own; the monitor runs
  // in every mode). "monitor" is stored as "none".
  std::string mode = "agentcg";
  bool reattach_on_eject = false;
};

// Scheduler supervision (the strategies design's scheduler.scheduler_name and
// scheduler.max_time_watchdog; read from the `scheduler:` section beside
// the tunables): mode scx runs `scx_dir/<scheduler_name>`, only from that
// allow-listed directory. max_time_watchdog: the supervised scheduler must
// be attached (sched_ext state "enabled") within max_time_sec of its start
// and stay attached; otherwise the daemon stops it and starts it again
// with back-off (the kernel's default scheduler runs meanwhile).
struct SupervisorConfig {
  std::string scheduler_name;                 // required for mode scx
  std::string scx_dir = "/usr/lib/agentcg/scx";
  bool max_time_watchdog = true;
  std::uint32_t max_time_sec = 10;
};

// The local strategies API of agentcgroupd (live/strategy/): `listen` is
// "unix:/path" or "127.0.0.1:PORT" (empty = off); bearer tokens, one a
// line, from token_file (must be mode 0600, owned by the daemon's user);
// strategies persisted in state_file.
struct ApiConfig {
  std::string listen;
  std::string token_file = "/etc/agentcg/api-tokens";
  std::string state_file = "/var/lib/agentcg/strategies.json";
};

struct MonitorConfig {
  std::string cgroup_root = "/sys/fs/cgroup";
  std::uint32_t poll_interval_ms = 10;
  bool sched_monitor = true;  // the scheduler-tracepoint monitor (live/monitor/)
};

// Costs of the modelled CPU (simulator only; calibrated by `agentcg fidelity`).
// Precedence: a config file's `machine:` keys (e.g. a calibrated machine
// profile) > the trace's `machine` > these defaults.
struct MachineConfig {
  std::uint64_t context_switch_ns = 2000;  // direct cost of a switch between tasks
  std::uint64_t wakeup_overhead_ns = 1000;  // ttwu path: wakeup event -> enqueue
  std::uint32_t speed_pct = 100;           // CPU speed vs the trace's machine (ns of CPU scale by 100/speed)
  std::uint32_t cpus = 0;                  // 0 = the trace's machine.cpus; else run on this many CPUs
  bool context_switch_ns_set = false;      // given by a config file: wins over the trace's value
  bool wakeup_overhead_ns_set = false;
  // Run queues (sim/cpu/cfs.h): kPerCpu = one queue hierarchy per CPU with
  // the kernel's placement (select_task_rq_fair, simplified), newidle and
  // periodic balancing; kGlobal = one machine-wide queue (ideal balancing,
  // the model before per-CPU queues). Classes without per-CPU queues (fifo,
  // flatcg, agentcg) ignore it.
  enum class Runqueues { kPerCpu, kGlobal };
  Runqueues runqueues = Runqueues::kGlobal;
  // Waking an idle CPU (IPI + leaving its idle state): a kick to a CPU idle
  // for at least idle_exit_after_ns dispatches idle_exit_ns later (deep
  // C-state); a CPU idle for less pays nothing (it is still polling/in WFI).
  std::uint64_t idle_exit_ns = 0;
  std::uint64_t idle_exit_after_ns = 0;
  // An IPI to an idle CPU: a wakeup or a new task placed on an idle CPU
  // other than the one the wakeup runs on (a fork's child sent to the idle
  // CPU, a timer wakeup moved off its CPU) dispatches ipi_idle_ns later. In
  // a KVM guest the halted vCPU is woken by the host (the 2-vCPU guest of
  // tests/data/recordings/kvm2cpu: a wakeup sent to the other, idle vCPU
  // 16-20 us from its wake event to the switch-in at the p50, one on the
  // waker's own CPU 4-8 us; README, Fidelity). A CPU woken by its own timer pays nothing here (its
  // interrupt already woke it): idle_exit_ns is the cost of any kick. 0:
  // none.
  std::uint64_t ipi_idle_ns = 0;
  // A wakeup run by another task from its own system call (a pipe write, a
  // futex wake: a recorded sleep's `waker`, traces/README.md) reaches the
  // class task_wakeup_ns after the sleep's end, from the waker's CPU (so
  // ipi_idle_ns applies when it goes to another, idle CPU), instead of
  // wakeup_overhead_ns (the timer or interrupt path, on the sleeper's CPU,
  // with timer_busy_ns and wakeup_work_ns). A child's exit waking its
  // waiting parent stays synchronous. Not set (task_wakeup_ns_set false):
  // wakeup_overhead_ns's value (a profile fitted before the key existed
  // keeps its cost per wakeup; only the waker's CPU is new); 0: at once.
  std::uint64_t task_wakeup_ns = 0;
  bool task_wakeup_ns_set = false;
  // Where the fair class's per-CPU placement puts a new task
  // (wake_up_new_task, select_task_rq_fair with WF_FORK): kIdlest, the
  // idlest CPU (fork balancing, SD_BALANCE_FORK: an idle one if there is
  // one); kLocal, the forker's CPU, where the child waits until the
  // forker blocks or is preempted. Recorded on the 2-vCPU KVM guest of
  // tests/data/recordings/kvm2cpu (a kernel that packs work on few vCPUs):
  // 111 of 152 children of a fork loop started on the forker's CPU with
  // the other one idle, and waited for the forker's wait() (p50 35 us).
  enum class ForkPlacement { kIdlest, kLocal };
  ForkPlacement fork_placement = ForkPlacement::kIdlest;
  // Where the fair class's per-CPU placement puts a woken task
  // (select_task_rq_fair with WF_TTWU). kSpread: an idle CPU, else its
  // previous one (select_idle_sibling; every x86 machine). kEnergyAware:
  // the kernel's energy-aware scheduling (EAS: arm64 with an energy model,
  // big.LITTLE phones and boards) while no CPU is overutilized: the task
  // stays on a busy CPU rather than waking an idle one. Simplified from
  // find_energy_efficient_cpu() and Android's sync hint: a wakeup by a
  // task goes to the waker's CPU when the waker is alone there; else to
  // the task's previous CPU; each only where the task fits (CPU
  // utilization with the task's below 80 % of the CPU's capacity, PELT
  // averages with a 32 ms half-life); else the fitting CPU of the smallest
  // capacity with the most room; else kSpread's choice, which is also
  // taken while any CPU is over 80 % of its capacity (overutilized).
  // Recorded on an Arm Juno board (tests/data/recordings/public/): 643 of
  // 1,066 wakeups went to the waker's busy CPU with CPUs idle.
  enum class WakePlacement { kSpread, kEnergyAware };
  WakePlacement wake_placement = WakePlacement::kSpread;
  // When the fair class's per-CPU load balancer (periodic and newidle)
  // moves tasks. kAlways. kWhenOverutilized: under kEnergyAware placement,
  // only while some CPU is overutilized, as EAS kernels gate it
  // (find_busiest_group() gives up when sched_energy_enabled() and the
  // root domain is not overutilized): a task woken behind a running one on
  // its CPU waits there. Recorded on an Android phone
  // (tests/data/recordings/public/android_b.txt): kernel threads woken onto
  // CPU 0 waited 2.2-2.6 ms behind a running task there with CPUs idle,
  // and 1 of 257 wakeups ran on another CPU than the one it was sent to.
  // The capture fit chooses between the two (python/agentcg/fidelity.py).
  enum class Balance { kAlways, kWhenOverutilized };
  Balance balance = Balance::kAlways;
  // Each CPU's capacity (1024 = the fastest; a Juno's Cortex-A53 446):
  // what kEnergyAware's fits and utilization compare against. Empty: 1024
  // each. Run times are not scaled by it (a recorded run replays its
  // recorded length wherever it runs).
  std::vector<std::uint32_t> cpu_capacity;
  // A preempting kick of a CPU that runs a task (a wakeup that preempts it,
  // sched_ext's SCX_KICK_PREEMPT, eevdf's wakeup preemption) takes effect
  // kick_busy_ns later: under single-threaded TCG a busy vCPU notices an
  // interrupt ~0.3-0.5 ms later than a halted one (README, Live, v15). 0:
  // at once.
  std::uint64_t kick_busy_ns = 0;
  // A timer wakeup (the end of a sleep or I/O wait) whose timer fires on a
  // CPU that runs a task is delivered timer_busy_ns later: the timer is the
  // CPU the sleeper last ran on, and under TCG a busy vCPU takes its timer
  // interrupt late (recorded, README "Fidelity": agentcg-player's 1 ms
  // sleeps beside CPU hogs end 1.25 ms late at the p50 under EEVDF, against
  // 0.1 ms on an idle guest). ext_timer_busy_ns is added under a sched_ext
  // class (no HRTICK: fewer timer interrupts, each expired timer served
  // later; 2.37 ms late under agentcg in the same recording). 0: at once.
  std::uint64_t timer_busy_ns = 0;
  std::uint64_t ext_timer_busy_ns = 0;
  // Extra CPU work a task does when it runs on a CPU other than the one it
  // last ran on (cache refill), charged to the task's cgroup.
  std::uint64_t migration_cost_ns = 0;
  // CPU used outside the trace's cgroups (daemons, a player's supervisor),
  // in percent of one CPU: background tasks in the root cgroup that run
  // this much in every 10 ms (one task per started 100 %). Their wakeups
  // are not in the latency figures.
  std::uint32_t background_cpu_pct = 0;
  // CPU work of one fork (copy_process: page tables, files, the new
  // task's setup; the child's later exit teardown folded in unless
  // exit_cost_ns gives it), done by the forking task before the child
  // exists and charged to its cgroup. The child's new-task latency counts
  // from the start of the fork, as the player measures it (live/player:
  // the parent's timestamp before fork()). Large under emulation (~10 ms
  // per fork+exit under qemu TCG), where it throttles a fork storm's rate;
  // 0 = forks are free.
  std::uint64_t fork_cost_ns = 0;
  // CPU work of a process's exit (do_exit in the exiting task: the address
  // space's teardown, files, the task's release), done by the exiting task
  // after its last op and charged to its cgroup; a parent waiting for it
  // wakes after. With it (and fork_after_ns), fork_cost_ns is the fork path
  // alone (copy_process and the parent's reaping); without it (0), the
  // exit's work is folded into fork_cost_ns, as a fork rate measures the
  // whole cycle.
  std::uint64_t exit_cost_ns = 0;
  // CPU work of the forker right after a fork, once the child exists: the
  // copy-on-write faults on the pages both processes still map (each fork
  // write-protects the forker's pages; while the child lives, the forker's
  // next writes copy them). Charged to the forker's cgroup; it delays the
  // forker's next op, not the child's start. Under TCG a concurrent fork
  // loop (stress-ng) costs 10.7 ms of CPU per cycle against 2.1 ms for a
  // serial one whose child exits at once: this is most of the difference.
  std::uint64_t fork_after_ns = 0;
  // CPU work of a new child before its first op, once it runs: its own
  // copy-on-write faults on the pages it still shares with the forker and
  // the rest of its start in user space. Charged to the child's cgroup; it
  // delays the child's first op, not its start (its new-task latency ends
  // when it first runs, as the player measures it). Under TCG a fork
  // storm's child spends ~3.7 ms more CPU before its exit than its own
  // work, and its forker 2.9 ms per fork, where a serial fork cycle costs
  // the forker 0.6 ms (fidelity measures both in a recording of the storm).
  std::uint64_t fork_child_ns = 0;
  // sched_ext's own kernel cost on this machine, over the kernel's own
  // scheduler: applied only when the modelled class runs under sched_ext
  // (flatcg, agentcg, fifo: SchedClass::sched_ext()). ext_busy_pct is the
  // part of a busy CPU's time that sched_ext's own work takes (the BPF
  // callbacks, the ext core, what runs beside the BPF program), charged to
  // the CPU and to no trace cgroup: a task's work goes that much slower and
  // its cgroup is charged only the work (live, the hogs trace's cgroups get
  // 85 % of a 2-vCPU TCG guest under either BPF policy against 93 % under
  // EEVDF, at the same 99.8 % utilisation). It is a cost per busy time, not
  // per switch: live, the io trace switches 4.5x as often as the hogs trace
  // under the same policies and loses a sixth as much. ext_wakeup_ns is
  // added to wakeup_overhead_ns (select_cpu, enqueue and dispatch on the
  // ttwu path). ext_fork_ns is added to fork_cost_ns (the BPF program's
  // init_task with its task storage, and enable; 0 measured under TCG:
  // the forker's CPU per fork is EEVDF's plus ext_busy_pct). Measured by
  // `agentcg fidelity` from the live results (python/agentcg/fidelity.py
  // ext_cost_from_live, ext_fork_from_benchmarks).
  std::uint32_t ext_busy_pct = 0;
  std::uint64_t ext_wakeup_ns = 0;
  std::uint64_t ext_fork_ns = 0;
  // CPU work of a mem op that grows a process's memory, per MiB of growth:
  // the page faults of memory written for the first time (each new page
  // allocated and zeroed; agentcg-player's mem op writes one byte of every
  // page it adds). Run by the process right after the op, before its next
  // one, charged to its cgroup; memory given back costs nothing (its
  // munmap: 5-15 % of the faults, measured). A machine constant, measured
  // by live compare's `agentcg-work touch` (fidelity reads it from
  // benchmarks.json): 0.6-1.0 ms per MiB under qemu TCG.
  // 0 (the default): memory is free, as before.
  std::uint64_t mem_fault_ns_per_mib = 0;
  // CPU work of a fork per MiB of the forker's memory: its page tables
  // and mappings copied by copy_process (and torn down at the child's
  // exit), on top of fork_cost_ns, which is measured with a small forker.
  // Charged to the forker with fork_cost_ns, before the child exists: an
  // agent process holding hundreds of MiB pays it at every tool it forks.
  // Measured by live compare's `agentcg-work forkstorm 20 1 32` against
  // the plain serial cycles (fidelity reads it from benchmarks.json).
  // 0 (the default): a fork costs the same whatever the forker holds.
  std::uint64_t fork_ns_per_mib = 0;
  // CPU work of a timer wakeup (try_to_wake_up in the timer interrupt),
  // done on the CPU the sleeper last ran on and charged to the cgroup of
  // the task running there (the kernel accounts interrupt work to the
  // interrupted task); nobody's on an idle CPU. Apart from
  // wakeup_overhead_ns, which is latency only.
  std::uint64_t wakeup_work_ns = 0;
  // CPU work of a task's own around each sleep or I/O op: the blocking
  // system call, schedule() out and back in, the timer it arms, and what
  // the task does between the wakeup and its next op (the player takes the
  // time and records a sample). Run when it wakes, before its next op,
  // charged to its cgroup, as kernel work. 0 = none (the model before
  // this key); under the VM's emulation ~0.2 ms per cycle (the io trace's
  // live CPU share against its ops' run time).
  std::uint64_t sleep_cost_ns = 0;
  // The scheduler tick (1 s / CONFIG_HZ): a slice that runs out is noticed
  // at the next tick, so a slice ends on the tick grid (the kernel's
  // HRTICK, which would end it on time, is off by default). 0 = slices end
  // exactly (the model before this key). The VM's Debian kernel has
  // CONFIG_HZ=250: 4 ms.
  std::uint64_t tick_ns = 0;
  // The kernel's preemption model for the fair class (cfs, eevdf): kFull
  // preempts a running task as soon as a wakeup should (the model before
  // this key; PREEMPT_NONE/VOLUNTARY/FULL act alike on user-space tasks:
  // the IPI's return to user reschedules); kLazy (PREEMPT_LAZY, the
  // default of kernels since 6.13 built with it: the VM's Debian 7.2) only
  // flags the running task (TIF_NEED_RESCHED_LAZY), which then switches at
  // its next return to user space (the end of a syscall: a fork, an exec;
  // the end of an interrupt) or at the next tick, whichever comes first.
  // So it matters for a wakeup whose ttwu runs on another CPU than the
  // wakee's (a child's exit waking its parent elsewhere, a timer that fired
  // on the sleeper's old CPU while it is placed on another): the kernel
  // enqueues it there directly (CPUs sharing an LLC) and sends no IPI; on
  // the ttwu's own CPU the interrupt's or syscall's return switches at
  // once. Needs tick_ns. sched_ext's kicks (SCX_KICK_PREEMPT) preempt at
  // once either way.
  enum class Preempt { kFull, kLazy };
  Preempt preempt = Preempt::kFull;
};

// The CFS/EEVDF baseline's knobs (kernel defaults for a machine with >= 8
// CPUs; scaled like the kernel's sched_tunable_scaling=log when 0).
struct CfsConfig {
  std::uint64_t latency_ns = 0;          // sysctl_sched_latency; 0 = 6 ms x (1 + ilog2(min(cpus, 8)))
  std::uint64_t min_granularity_ns = 0;  // 0 = 0.75 ms x factor
  std::uint64_t wakeup_granularity_ns = 0;  // 0 = 1 ms x factor
  std::uint64_t bandwidth_slice_ns = 5000000;  // sched_cfs_bandwidth_slice_us = 5000
  // Period of the per-CPU queues' load balancer (rebalance_domains(); the
  // newidle pull of a CPU that goes idle happens at once).
  std::uint64_t balance_interval_ns = 4000000;
  // eevdf: the kernel's RUN_TO_PARITY feature (on by default since 6.6): an
  // eligible running task is not preempted by a wakeup before the deadline
  // it was picked with.
  bool run_to_parity = true;
};

struct Config {
  DaemonConfig daemon;
  agentcg_tunables scheduler;  // defaults from agentcg_tunables_default()
  SupervisorConfig supervisor;  // scheduler.scheduler_name etc. (not tunables)
  ApiConfig api;
  MonitorConfig monitor;
  GpuConfig gpu;
  MachineConfig machine;
  CfsConfig cfs;
  Config();
};

// Loads and validates a file; throws ConfigError("FILE:LINE: key 'a.b': ...").
Config load_file(const std::string& path);
Config load_string(const std::string& yaml, const std::string& source);

// Helpers for section parsers (scheduler_yaml.cc, gpu_yaml.cc): read a
// scalar key with a range check, or throw ConfigError naming file, line, key.
struct Reader {
  std::string source;
  std::uint64_t u64(const YAML::Node& section, const std::string& section_name,
                    const std::string& key, std::uint64_t min, std::uint64_t max) const;
  // The same for a value already in hand (a list's element), named `full`.
  std::uint64_t u64_value(const YAML::Node& value, const std::string& full, std::uint64_t min,
                          std::uint64_t max) const;
  double f64(const YAML::Node& section, const std::string& section_name, const std::string& key,
             double min, double max) const;
  bool boolean(const YAML::Node& section, const std::string& section_name,
               const std::string& key) const;
  std::string str(const YAML::Node& section, const std::string& section_name,
                  const std::string& key) const;
  // Throws if `section` has a key not in `allowed` (comma-separated).
  void only_keys(const YAML::Node& section, const std::string& section_name,
                 const std::string& allowed) const;
  [[noreturn]] void fail(const YAML::Node& at, const std::string& key, const std::string& why) const;
};

// Section parsers, each owned beside what it configures.
void parse_scheduler_section(const YAML::Node& node, const Reader& r, agentcg_tunables& out);
void parse_gpu_section(const YAML::Node& node, const Reader& r, GpuConfig& out);

}  // namespace agentcg::config
