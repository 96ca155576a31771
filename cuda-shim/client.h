// SPDX-License-Identifier: GPL-2.0-only
/*
 * The scheduling client inside the user's process: the shim's logic, apart
 * from symbol interposition (shim.cc). It
 *  - turns device allocations into managed memory and tracks them, reporting
 *    the total to agentcg-gpud after every change (memory-aware GPU design: self-report);
 *  - gates GPU work on the daemon's lock: before_work() blocks until the
 *    client holds a grant (or runs unscheduled); a DROP_LOCK drains queued
 *    work (context synchronise) and answers LOCK_RELEASED with the grant's
 *    generation;
 *  - bounds queued launches with a window: nvshare's adaptive window (1 ..
 *    2048) when the grant is unbounded; when the grant bounds queued work
 *    (max_queued_ns, a limited client) the window is max_queued_ns divided
 *    by the measured time per launch, because kernels queued after a DROP
 *    run past the quota (docs/sources.md);
 *  - prefetches its allocations when a grant says so.
 *
 * Invariants: never exits or aborts the process; one warning when the daemon
 * is absent, then runs unscheduled and re-registers when it returns; no
 * logging on the hot paths (before_work/after_work/alloc/free). Lock order:
 * mu_ before send_mu_ (send_mu_ is innermost); mem_mu_ is never held with mu_.
 *
 * Called by shim.cc (the exported CUDA entry points) and by
 * tests/shim/client_test.cc with a DriverTable of test functions.
 */
#pragma once

#include <cuda.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>
#include <thread>

#include "cuda-shim/driver_table.h"

namespace agentcg::shim {

struct ClientOptions {
  std::string socket_path = "/run/agentcg/gpud.sock";
  std::uint32_t core_limit_pct = 100;
  std::uint64_t memory_limit_bytes = 0;  // 0 = none
  // AGENTCG_GPU_DEVICE: the process's own choice of GPU (no remapping).
  // Unset: the daemon places the process at registration and the shim shows
  // it that GPU as its only device, ordinal 0 (as CUDA_VISIBLE_DEVICES
  // would), before the first context exists (live placement).
  std::optional<std::uint32_t> device;
  std::uint32_t idle_release_ms = 5000;  // nvshare: release after 5 s without work
  std::uint32_t reconnect_ms = 500;
  bool connect = true;                   // false: never talk to a daemon (tests)
  // When the daemon is unreachable (not running, restarting, or it refused
  // this client): false (default, "closed") = GPU work waits until it is
  // back, so a client cannot escape its limits by making the daemon
  // unreachable (multi-tenant hosts); true ("open") = run unscheduled.
  // AGENTCG_GPU_ON_UNREACHABLE=closed|open.
  bool fail_open = false;
  std::string name;
};

// Parses "4096", "512K", "4G", "1.5G" is rejected (integers only). Returns
// nullopt on a malformed value.
std::optional<std::uint64_t> parse_bytes(const char* text);

// Reads AGENTCG_GPU_SOCKET, AGENTCG_GPU_CORE_LIMIT (1..100),
// AGENTCG_GPU_MEMORY_LIMIT, AGENTCG_GPU_DEVICE, AGENTCG_GPU_IDLE_RELEASE_MS,
// AGENTCG_GPU_ON_UNREACHABLE (closed | open).
// A malformed value is ignored with one warning naming the variable.
ClientOptions options_from_env();

enum class LockState : int {
  kConnecting,   // first connection attempt in progress: work waits
  kUnscheduled,  // no daemon, fail-open: work runs freely
  kBlocked,      // no daemon, fail-closed: work waits until it is back
  kIdle,         // registered, no grant, nothing requested
  kRequested,    // REQ_LOCK sent, waiting for LOCK_OK
  kHeld,         // grant held
  kDraining,     // DROP_LOCK received: new work waits, queued work drains
};

class Client {
 public:
  Client(const DriverTable& driver, ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Starts the daemon link (thread) once; cheap when already started, and
  // restarts it in a forked child.
  void ensure_started();

  // Hot path: gate a unit of GPU work. before_work() blocks until allowed.
  void before_work();
  void after_work(bool is_launch);

  // Allocation hooks (return the driver's result).
  CUresult mem_alloc(CUdeviceptr* dptr, std::size_t bytes);
  CUresult mem_alloc_pitch(CUdeviceptr* dptr, std::size_t* pitch, std::size_t width_bytes,
                           std::size_t height, unsigned int element_bytes);
  CUresult mem_alloc_managed(CUdeviceptr* dptr, std::size_t bytes, unsigned int flags);
  // Frees a tracked pointer; nullopt when `dptr` is not ours (caller passes through).
  std::optional<CUresult> mem_free(CUdeviceptr dptr, CUstream stream_or_null, bool async);
  CUresult mem_get_info(std::size_t* free_bytes, std::size_t* total_bytes);
  // The virtual-memory API (PyTorch expandable segments, inference-server
  // allocators): physical memory is counted on cuMemCreate (and refused
  // beyond the memory limit, CUDA_ERROR_OUT_OF_MEMORY) and released on
  // cuMemRelease; cuMemAddressReserve/cuMemMap need no hook (no memory of
  // their own), and work on mapped ranges goes through the gated launch and
  // copy hooks like any other. These pages cannot be made managed: they are
  // reported to the daemon as memory like the rest.
  CUresult vmm_create(CUmemGenericAllocationHandle* handle, std::size_t bytes, const CUmemAllocationProp* prop,
                      unsigned long long flags);
  // nullopt when `handle` is not ours (the caller passes through).
  std::optional<CUresult> vmm_release(CUmemGenericAllocationHandle handle);

  // Introspection (tests, gpuctl-free debugging).
  std::uint64_t tracked_bytes() const;
  LockState state() const;
  std::uint64_t generation() const;
  std::uint32_t window() const;
  std::uint64_t prefetched_bytes() const { return prefetched_bytes_.load(); }
  std::uint64_t drops() const { return drops_.load(); }
  std::uint64_t capacity_bytes() const;
  std::uint64_t launch_ns_estimate() const;
  // The GPU the daemon placed this process on, when the shim remaps device
  // ordinals (AGENTCG_GPU_DEVICE unset and a daemon answered); nullopt = no
  // remapping (the driver's ordinals pass through).
  std::optional<std::uint32_t> placed_device() const;

 private:
  void run_link();
  bool connect_and_register();
  void disconnect_locked(std::unique_lock<std::mutex>& lk);
  LockState unreachable_state() const { return opt_.fail_open ? LockState::kUnscheduled : LockState::kBlocked; }
  bool send_raw(const void* data, std::size_t n);
  template <typename T>
  bool send(int type, const T& payload);
  void handle_message(std::uint16_t type, const unsigned char* payload);
  void drain_and_release(std::uint64_t generation, bool from_drop);
  void prefetch_allocations();
  void report_memory();
  CUresult track_new(CUresult r, CUdeviceptr* dptr, std::size_t bytes);
  void sync_context(CUcontext ctx);
  std::uint64_t effective_memory_limit() const;

  const DriverTable& driver_;
  ClientOptions opt_;
  std::uint64_t session_token_;

  // Link and lock state (mu_).
  mutable std::mutex mu_;
  std::condition_variable cv_;
  LockState state_ = LockState::kConnecting;
  std::uint64_t generation_ = 0;
  std::uint64_t max_queued_ns_ = 0;    // grant's bound on queued kernel time (0 = none)
  std::uint64_t launch_ns_est_ = 0;    // measured GPU time per launch (EWMA), 0 = unknown
  std::uint64_t last_sync_ns_ = 0;     // end of the previous window sync (or the grant)
  std::uint32_t window_ = 1;           // current window (launches between syncs)
  std::uint32_t launches_since_sync_ = 0;
  std::uint32_t inflight_ = 0;
  std::uint64_t last_work_ns_ = 0;
  CUcontext ctx_ = nullptr;            // last context seen in before_work (prefetch target)
  // Every context the process did GPU work in (a process may use several,
  // e.g. one per device or cuCtxCreate'd ones): all are drained on DROP.
  // Bounded: a process with more than kMaxContexts forgets the oldest.
  static constexpr std::size_t kMaxContexts = 64;
  std::vector<CUcontext> contexts_;
  std::uint64_t capacity_bytes_ = 0;   // scheduled capacity from the daemon (0 = unknown)
  std::uint64_t daemon_memory_limit_ = 0;
  bool warned_absent_ = false;
  bool stop_ = false;
  int pid_ = 0;
  std::thread link_;
  int wake_pipe_[2] = {-1, -1};

  // Socket (send_mu_ serialises writers; the link thread is the only reader).
  std::mutex send_mu_;
  std::atomic<int> fd_{-1};

  // Allocations (mem_mu_).
  mutable std::mutex mem_mu_;
  std::map<CUdeviceptr, std::size_t> allocs_;  // pointer -> bytes
  std::map<CUmemGenericAllocationHandle, std::uint64_t> vmm_;  // under mem_mu_: handle -> bytes
  std::optional<std::uint32_t> placed_device_;  // under mu_; fixed once set
  std::uint64_t total_bytes_ = 0;

  std::atomic<std::uint64_t> prefetched_bytes_{0};
  std::atomic<std::uint64_t> drops_{0};
};

std::uint64_t monotonic_ns();

}  // namespace agentcg::shim
