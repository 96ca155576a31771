// SPDX-License-Identifier: GPL-2.0-only
// The GPU policy interface of the one core: who may run on which GPU, when.
//
// Event-driven and pure: every entry point takes the current time (u64 ns,
// monotonic, never decreasing between calls) and returns the decisions the
// caller must apply; nothing here reads a clock, does I/O or keeps a global.
// Callers: the simulator (sim/gpu/gpu_sim.cc) and the live GPU daemon
// (live/gpud), which turns decisions into wire messages to the CUDA shim.
//
// Protocol (one client = one CUDA context of one process):
//   register_client  -> the client exists (its context costs memory on its GPU)
//   memory_update    -> it now has `allocated` managed bytes (after each alloc/free)
//   lock_request     -> it wants to launch work (nvshare REQ_LOCK)
//   release          -> it gave the GPU back (after a DROP, or an idle release);
//                       `generation` is that of the grant being released
//   disconnect       -> it is gone (counts as a release)
//   tick             -> call at (or after) Decisions::next_tick_ns
//   set_limits / set_quantum / set_mode -> run-time control (the CLI)
// Decisions:
//   kGrant(client, gpu, generation, max_queued_ns): run on `gpu`; keep at most
//       max_queued_ns of kernels queued (0 = no bound). The first grant fixes
//       the client's GPU when it registered without a hint.
//   kDrop(client, generation): finish queued work, then release(generation).
//   kWaitForMemory(client): the request is queued because it does not fit.
//   kWake(client): a client told kWaitForMemory may proceed (a kGrant follows).
//   kPrefetch(client, bytes): before running, prefetch `bytes` of the pages it
//       touched when it last ran (first runs get none: untouched pages do not
//       exist yet, so prefetching right after allocation is a no-op).
//   kMemoryLimit(client, bytes): the client's allocation cap (0 = none); the
//       shim fails allocations beyond it.
// Every grant carries a fresh generation (nvshare's scheduling_round); a
// release with a stale generation is ignored, so a late LOCK_RELEASED can
// never release a newer grant.
//
// Worked example (nvshare, TQ 30 s, one GPU): A requests at 0 -> kGrant(A,0,1),
// next tick 30 s. B requests at 1 s -> nothing (queued). tick(30 s) ->
// kDrop(A,1). release(A,1) at 30.2 s -> kGrant(B,0,2). A requests again ->
// queued behind B (round robin).
//
// Admission (when GpuCapacity::context_overhead_bytes is set, i.e. the
// caller models context creation): a client's context is created on its GPU
// at its first grant; a first grant is given only if the GPU's contexts, this one included,
// fit its memory (less the reserve), so context memory is never
// overcommitted: the client waits instead (every policy; kWaitForMemory).
//
// Limitations: a client lives on one GPU (a CUDA context cannot move);
// placement happens at its first lock request, by config placement:
// spread (idle GPU first, then the least memory in use), pack (the GPU
// with the most memory in use that it fits on) or first-fit (the lowest
// GPU that is idle or that it fits on); memory fit counts under
// memory-aware only. Memory is what clients report
// (the seed's conservative "logical allocation" rule, memory-aware GPU design §10.4).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "agentcg/gpu/gpu_config.h"

namespace agentcg::gpu {

using ClientId = std::uint64_t;
using GpuIndex = std::uint32_t;

// What the policy knows about each GPU.
struct GpuCapacity {
  std::uint64_t memory_bytes = 0;      // device memory
  std::uint64_t swap_bytes_per_s = 0;  // effective PCIe bandwidth of a switch (auto quantum)
  // Memory one CUDA context takes on this GPU. Non-zero: the caller models
  // context creation at a client's first grant and the policy admits
  // contexts (the simulator, with its model's figure). 0: contexts exist
  // before clients ask (the live daemon): no context admission, and the
  // config's context_overhead_mb is used for memory-aware's safe limit.
  std::uint64_t context_overhead_bytes = 0;
};

struct ClientLimits {
  std::uint32_t compute_pct = 100;     // 1..100; 100 = unlimited
  std::uint64_t memory_bytes = 0;      // 0 = no cap
};

enum class DecisionKind : std::uint8_t {
  kGrant = 1,
  kDrop = 2,
  kWaitForMemory = 3,
  kWake = 4,
  kPrefetch = 5,
  kMemoryLimit = 6,
};

struct Decision {
  DecisionKind kind = DecisionKind::kGrant;
  ClientId client = 0;
  GpuIndex gpu = 0;                    // kGrant
  std::uint64_t generation = 0;        // kGrant, kDrop
  std::uint64_t bytes = 0;             // kPrefetch, kMemoryLimit
  std::uint64_t max_queued_ns = 0;     // kGrant: 0 = unbounded
};

struct Decisions {
  std::vector<Decision> list;
  // Absolute time at which tick() must be called next; none = no timer needed.
  std::optional<std::uint64_t> next_tick_ns;
};

// Policy errors from run-time control (bad limit, unknown client).
class PolicyError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class GpuPolicy {
 public:
  virtual ~GpuPolicy() = default;
  // The policy's name as given to make_gpu_policy().
  virtual std::string name() const = 0;

  // gpu_hint: the GPU the client's context lives on; none = policy places it.
  [[nodiscard]] virtual Decisions register_client(std::uint64_t now_ns, ClientId client,
                                                  std::optional<GpuIndex> gpu_hint,
                                                  const ClientLimits& limits) = 0;
  [[nodiscard]] virtual Decisions memory_update(std::uint64_t now_ns, ClientId client,
                                                std::uint64_t allocated_bytes) = 0;
  [[nodiscard]] virtual Decisions lock_request(std::uint64_t now_ns, ClientId client) = 0;
  [[nodiscard]] virtual Decisions release(std::uint64_t now_ns, ClientId client,
                                          std::uint64_t generation) = 0;
  [[nodiscard]] virtual Decisions disconnect(std::uint64_t now_ns, ClientId client) = 0;
  [[nodiscard]] virtual Decisions tick(std::uint64_t now_ns) = 0;
  // Throws PolicyError for compute_pct outside 1..100 or an unknown client.
  [[nodiscard]] virtual Decisions set_limits(std::uint64_t now_ns, ClientId client,
                                             const ClientLimits& limits) = 0;
  // nvshare TQ (also the memory-aware fixed quantum); 0 is rejected.
  [[nodiscard]] virtual Decisions set_quantum(std::uint64_t now_ns, std::uint64_t quantum_ns) = 0;
  // on = serialise (nvshare SCHED_ON); off = everyone runs at once (SCHED_OFF).
  [[nodiscard]] virtual Decisions set_mode(std::uint64_t now_ns, bool on) = 0;

  // Introspection for metrics and tests.
  struct ClientView {
    ClientId client = 0;
    std::optional<GpuIndex> gpu;
    bool running = false;          // holds a grant (including a dropped one not yet released)
    bool waiting = false;          // has a request that is not granted
    bool throttled = false;        // compute quota used up in this window
    std::uint64_t allocated_bytes = 0;
    std::uint64_t window_used_ns = 0;  // billed GPU time in the current window
    std::uint32_t compute_pct = 100;
  };
  virtual std::vector<ClientView> clients() const = 0;  // ordered by client id
  // The GPU a new client with `bytes` allocated would be placed on now
  // (the placement rule below), for a daemon that must fix a process's
  // device before its first CUDA context exists (live placement).
  virtual GpuIndex choose_gpu(std::uint64_t bytes) const = 0;
};

// kind: "none" (nvshare with the scheduler off), "nvshare", "memory-aware",
// "compute-limit", "memory-aware+compute-limit". Throws PolicyError for an
// unknown kind, no GPUs, or a GPU with zero memory.
std::unique_ptr<GpuPolicy> make_gpu_policy(const std::string& kind, const config::GpuConfig& config,
                                           const std::vector<GpuCapacity>& gpus);
// The kinds, in display order.
std::vector<std::string> gpu_policy_kinds();

}  // namespace agentcg::gpu
