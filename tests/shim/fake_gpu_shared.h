// SPDX-License-Identifier: GPL-2.0-only
/*
 * The process-shared state of the fake GPU (tests only, never installed):
 * one POSIX shared-memory segment per test (/dev/shm/<AGENTCG_FAKE_GPU_SHM>)
 * holding a device-memory budget, the timeline of each fake GPU and a log of
 * who ran when. Several client processes that load the fake libcuda.so.1
 * map it, so they really contend for one GPU: a kernel starts when the GPU's
 * timeline is free and the process's previous work is done, and occupies the
 * timeline for its duration (plus the cost of paging in managed memory that
 * is not resident). Synchronising sleeps until the process's work ends.
 *
 * Invariant: every field is changed under `mu` (a robust process-shared
 * mutex: a client killed while holding it does not wedge the others).
 * Callers: tests/shim/fake_cuda.cc (the library), tests/shim/fake_gpu_dump.cc.
 */
#pragma once

#include <pthread.h>

#include <cstdint>

namespace agentcg::fakegpu {

inline constexpr std::uint32_t kMagic = 0x46475055u;  // "FGPU"
inline constexpr int kMaxGpus = 4;
inline constexpr int kMaxProcs = 64;
inline constexpr int kMaxSegments = 16384;

struct Proc {
  std::int32_t pid;              // 0 = free slot
  std::uint32_t device;
  std::uint64_t managed_bytes;   // managed allocations
  std::uint64_t device_bytes;    // plain device allocations (budgeted)
  std::uint64_t resident_bytes;  // managed bytes resident on the device
  std::uint64_t last_run_ns;     // LRU for eviction
  std::uint64_t busy_ns;         // kernel time executed
  std::uint64_t kernels;
  std::uint64_t paged_in_bytes;  // demand-paged (faulted) bytes
  std::uint64_t prefetched_bytes;
  std::uint32_t alloc_devices;   // bit d: allocated on device d
  std::uint32_t launch_devices;  // bit d: launched work on device d
};

// A maximal run of one process's work on one GPU's timeline.
struct Segment {
  std::int32_t pid;
  std::uint32_t device;
  std::uint64_t start_ns;  // CLOCK_MONOTONIC
  std::uint64_t end_ns;
};

struct Shared {
  std::uint32_t magic;
  std::uint32_t gpus;
  pthread_mutex_t mu;
  std::uint64_t memory_bytes;          // per GPU
  std::uint64_t fault_bytes_per_s;     // demand paging
  std::uint64_t copy_bytes_per_s;      // memcpy and prefetch
  std::uint64_t device_used[kMaxGpus]; // plain device allocations
  std::uint64_t busy_until_ns[kMaxGpus];
  Proc procs[kMaxProcs];
  std::uint32_t nsegments;
  std::uint32_t segments_dropped;
  Segment segments[kMaxSegments];
};

}  // namespace agentcg::fakegpu
