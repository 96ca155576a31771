// SPDX-License-Identifier: GPL-2.0-only
/*
 * agentcg-gpud's core: a thin I/O shell around a core/ GPU policy
 * (core/include/agentcg/gpu/policy.h). One poll() event loop on
 * CLOCK_MONOTONIC serves the Unix socket (shim clients and gpuctl), turns
 * wire messages into policy events and the policy's decisions into wire
 * messages, and calls tick() at the deadline the policy asked for. Metrics
 * are kept in a snapshot under metrics_mu_ that the HTTP thread renders.
 *
 * Invariants: every grant carries the policy's generation; a client that
 * sends a malformed message (bad magic/version/type/length, or a second
 * Register) is disconnected (counted as a release by the policy) and the
 * others are served on; no decision is ever applied to a closed connection.
 *
 * Hostile clients (any local user with access to the socket): memory per
 * connection is bounded (unread replies beyond max_output_bytes drop the
 * connection; input is at most one header plus its fixed-size payload
 * beyond what was handled); connections are bounded by max_connections
 * (the oldest connection that has not registered is evicted first) and
 * out-of-fds (EMFILE) is answered by accepting with a spare fd and closing,
 * then pausing accept for 100 ms (no busy loop); a holder that ignores
 * DROP_LOCK (hung, SIGSTOPped) is disconnected after the release timeout
 * (default derived from the quantum; metric and log line); a uid sees only
 * its own clients in `list` unless it is root or the daemon's user, and may
 * register at most max_clients_per_uid clients (so it cannot take every
 * place in the lock queue).
 * Callers: live/gpud/main.cc; the tests in tests/shim drive it as a process.
 */
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agentcg/gpu/policy.h"
#include "agentcg/gpu/gpu_config.h"
#include "core/gpu/protocol/protocol.h"

namespace agentcg::gpud {

namespace proto = gpu::proto;

struct DaemonOptions {
  std::string socket_path = "/run/agentcg/gpud.sock";
  std::string policy = "nvshare";
  config::GpuConfig gpu;                 // from the config file (gpu: section)
  std::vector<gpu::GpuCapacity> gpus;    // detected or --gpu-memory
  std::optional<std::uint64_t> quantum_ms;  // --quantum-ms overrides gpu.time_quantum_ms
  std::string metrics_address = "127.0.0.1";
  std::uint32_t metrics_port = 0;        // 0 = no metrics endpoint
  // Disconnect a holder that has not released this long after DROP_LOCK
  // (hung or SIGSTOPped). none = derived from the quantum:
  // max(kMinReleaseTimeoutMs, 2 x time quantum), so a draining client gets
  // twice as long to drain as it had to run; 0 = never (explicitly).
  std::optional<std::uint64_t> release_timeout_ms;
  // Hostile-client bounds (issue: one client must not exhaust the daemon).
  std::size_t max_connections = 1024;       // also clipped to RLIMIT_NOFILE - kReservedFds
  std::size_t max_output_bytes = 256 << 10; // unread replies per connection before it is dropped
  std::uint32_t max_clients_per_uid = 64;   // registered clients per uid (0 = no limit); root exempt
  std::uint64_t handshake_timeout_ms = 5000;  // a connection that neither registers nor asks is closed
  bool verbose = false;
};

// A legitimate drain after DROP_LOCK can take seconds (nvshare's window
// lets up to 2048 launches queue): the derived default is
// max(kMinReleaseTimeoutMs, 2 x quantum).
inline constexpr std::uint64_t kMinReleaseTimeoutMs = 10000;
inline constexpr std::size_t kReservedFds = 32;  // stdio, metrics thread, driver, the spare fd

class Daemon {
 public:
  explicit Daemon(DaemonOptions options);  // throws gpu::PolicyError / std::runtime_error
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Creates the socket (directory 0750, socket 0660). Throws std::runtime_error.
  void listen();
  // Runs until stop() (async-signal-safe: writes a pipe) is called.
  void run();
  void stop();

  // Prometheus text exposition of the current snapshot.
  std::string render_metrics() const;
  // The hung-holder timeout in force (0 = never) and the connection limit.
  std::uint64_t release_timeout_ms() const { return release_timeout_ms_; }
  std::size_t max_connections() const { return max_conns_; }

 private:
  struct Conn {
    int fd = -1;
    pid_t pid = 0;
    uid_t uid = 0;
    bool registered = false;
    bool is_ctl = false;
    gpu::ClientId id = 0;
    std::string name;
    std::uint32_t device = 0;
    std::vector<unsigned char> in;
    std::vector<unsigned char> out;
    std::size_t out_off = 0;        // bytes of `out` already sent (compacted lazily)
    const char* doomed = nullptr;   // set: close at the next sweep, with this reason
    std::uint64_t accepted_ns = 0;
    // Bookkeeping for listing and metrics.
    std::uint64_t memory_bytes = 0;
    std::uint64_t memory_limit = 0;
    std::uint32_t core_limit = 100;
    bool holding = false;
    bool dropped = false;
    bool wait_memory = false;
    bool requested = false;
    bool pending_prefetch = false;
    std::uint64_t generation = 0;
    std::uint64_t run_start_ns = 0;
    std::uint64_t run_ns = 0;
    std::uint64_t drop_sent_ns = 0;
    std::uint64_t registered_ns = 0;
    std::uint64_t grants = 0;
    std::uint64_t drops = 0;
    std::uint64_t throttles = 0;
    bool was_throttled = false;
    std::uint64_t prefetched_bytes = 0;
  };

  void accept_clients(std::uint64_t now);
  void read_conn(Conn& c, std::uint64_t now);
  bool handle(Conn& c, const proto::Header& h, const unsigned char* payload, std::uint64_t now);
  void handle_ctl_set(Conn& c, const proto::CtlSetMsg& m, std::uint64_t now);
  void send_list(Conn& c, std::uint64_t now);
  void close_conn(int fd, std::uint64_t now, const char* why);
  void apply(const gpu::Decisions& d, std::uint64_t now);
  void flush(Conn& c);
  template <typename T>
  void send(Conn& c, proto::MsgType type, const T& payload);
  Conn* by_id(gpu::ClientId id);
  void update_snapshot(std::uint64_t now);
  void check_release_timeouts(std::uint64_t now);
  void sweep(std::uint64_t now);  // closes doomed and handshake-timed-out connections
  bool make_room_for_connection(std::uint64_t now);

  DaemonOptions opt_;
  std::unique_ptr<gpu::GpuPolicy> policy_;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::map<int, std::unique_ptr<Conn>> conns_;  // by fd (ordered: deterministic iteration)
  std::map<gpu::ClientId, int> fd_of_;
  gpu::ClientId next_id_ = 1;
  std::optional<std::uint64_t> next_tick_ns_;
  std::uint64_t last_holder_set_ = 0;  // hash of holders, to count switches
  std::uint64_t release_timeout_ms_ = 0;
  std::size_t max_conns_ = 0;
  int spare_fd_ = -1;                   // closed to accept-and-close when out of fds (EMFILE)
  std::uint64_t accept_paused_until_ns_ = 0;

  // Counters and the metrics snapshot (metrics_mu_: the HTTP thread reads).
  mutable std::mutex metrics_mu_;
  struct Snapshot {
    std::vector<proto::ClientInfo> clients;
    std::vector<std::uint64_t> client_grants, client_drops, client_throttles, client_prefetched;
    std::uint64_t switches = 0;
    std::uint64_t grants = 0;
    std::uint64_t drops = 0;
    std::uint64_t prefetched_bytes = 0;
    std::uint64_t protocol_errors = 0;
    std::uint64_t registrations = 0;
    std::uint64_t reclaimed = 0;
    std::uint64_t release_timeouts = 0;
    std::uint64_t slow_clients = 0;
    std::uint64_t refused_connections = 0;
    std::uint64_t uid_limit_refusals = 0;
    std::uint64_t accept_errors = 0;
    std::uint64_t connections = 0;
  } snap_;
  std::uint64_t switches_ = 0, grants_ = 0, drops_ = 0, prefetched_ = 0, protocol_errors_ = 0,
                registrations_ = 0, reclaimed_ = 0, release_timeouts_ = 0, slow_clients_ = 0,
                refused_connections_ = 0, uid_limit_refusals_ = 0, accept_errors_ = 0;
};

// Capacities of the machine's GPUs from the driver (dlopen libcuda.so.1,
// cuDeviceTotalMem); empty when no driver or no device. `error` says why.
std::vector<gpu::GpuCapacity> detect_gpus(std::string& error);

// Returns the monotonic clock in ns.
std::uint64_t monotonic_ns();

}  // namespace agentcg::gpud
