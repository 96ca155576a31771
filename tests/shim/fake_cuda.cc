// SPDX-License-Identifier: GPL-2.0-only
/*
 * A fake libcuda.so.1 for testing the shim without a GPU (never installed).
 * It exports the driver symbols the shim and the test clients use, typed
 * from cuda.h, and models one or more GPUs shared by several processes
 * through tests/shim/fake_gpu_shared.h:
 *  - a kernel's duration is *(uint64_t*)kernelParams[0] nanoseconds (or
 *    gridDimX microseconds without parameters); it runs on the GPU's shared
 *    timeline after the GPU's and the process's previous work, plus the time
 *    to page in the process's managed bytes that are not resident (LRU
 *    eviction of other processes when the GPU's memory is full);
 *  - a launch blocks while more than 50 ms of the process's work is queued
 *    (a real driver's push buffer fills up the same way);
 *  - memcpy/memset cost bytes / copy bandwidth on the timeline; synchronous
 *    ones wait for completion; cuCtxSynchronize/cuStreamSynchronize wait
 *    until the process's work ends (one in-order queue per process), and
 *    return within microseconds of it, as a real driver's polling sync;
 *  - cuMemAlloc_v2 draws on a device-memory budget (fails beyond it);
 *    cuMemAllocManaged never fails (oversubscription pages instead);
 *  - cuMemPrefetchAsync_v2 makes bytes resident at copy speed.
 * Pointers are fake addresses without backing: data is never copied.
 *
 * Environment: AGENTCG_FAKE_GPU_SHM (segment name, e.g. /agentcg-t1; unset =
 * a private GPU), AGENTCG_FAKE_GPU_MEMORY (bytes per GPU, default 16G),
 * AGENTCG_FAKE_GPU_COUNT (default 1), AGENTCG_FAKE_FAULT_BPS and
 * AGENTCG_FAKE_COPY_BPS (bytes/s; default 3 GB/s and 12 GB/s, the Gen3
 * figures of docs/sources.md).
 */
#include <cuda.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "tests/shim/fake_gpu_shared.h"

#undef cuGetProcAddress

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace {

using agentcg::fakegpu::Shared;
using agentcg::fakegpu::Proc;

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

// Waits until the GPU's timeline reaches t, returning within microseconds
// of it on an idle host as a real driver's synchronize does: it sleeps
// until kSpinNs before t, with a 1 ns timer slack, then polls, yielding
// the CPU between polls (CU_CTX_SCHED_AUTO yields when a host has more
// active contexts than cores, as the shim tests' 3 clients on 2 cores do).
// A plain sleep woke 50 us (the default timer slack) to several hundred us
// late; a limited client syncs every max_queued_work_ms of work, so on a
// quiet host its GPU sat idle 4-8 % of each grant (0.7-1.8 % now).
constexpr std::uint64_t kSpinNs = 100000;

void sleep_until(std::uint64_t t) {
  thread_local bool slack_set = false;
  if (!slack_set) {
    slack_set = true;
    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  }
  if (now_ns() + kSpinNs < t) {
    const std::uint64_t w = t - kSpinNs;
    timespec ts{static_cast<time_t>(w / 1000000000ull), static_cast<long>(w % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
  }
  while (now_ns() < t) sched_yield();
}

std::uint64_t env_bytes(const char* name, std::uint64_t def) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return def;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s, &end, 10);
  switch (*end) {
    case 'K': case 'k': v <<= 10; break;
    case 'M': case 'm': v <<= 20; break;
    case 'G': case 'g': v <<= 30; break;
    default: break;
  }
  return v;
}

struct Local {
  std::mutex mu;
  Shared* shm = nullptr;
  int slot = -1;
  int pid = 0;
  std::uint64_t tail_ns = 0;       // end of this process's queued work
  std::uint64_t next_ptr = 0;
  struct Alloc {
    std::size_t bytes;
    bool managed;
  };
  std::map<CUdeviceptr, Alloc> allocs;
};

Local& local() {
  static Local* l = new Local();
  return *l;
}

thread_local CUcontext t_ctx = nullptr;

class ShmLock {
 public:
  explicit ShmLock(Shared* s) : s_(s) {
    int r = pthread_mutex_lock(&s_->mu);
    if (r == EOWNERDEAD) pthread_mutex_consistent(&s_->mu);
  }
  ~ShmLock() { pthread_mutex_unlock(&s_->mu); }
  ShmLock(const ShmLock&) = delete;
  ShmLock& operator=(const ShmLock&) = delete;

 private:
  Shared* s_;
};

void init_shared(Shared* s) {
  std::memset(static_cast<void*>(s), 0, sizeof *s);
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(&s->mu, &a);
  pthread_mutexattr_destroy(&a);
  s->gpus = static_cast<std::uint32_t>(env_bytes("AGENTCG_FAKE_GPU_COUNT", 1));
  if (s->gpus < 1) s->gpus = 1;
  if (s->gpus > static_cast<std::uint32_t>(agentcg::fakegpu::kMaxGpus)) s->gpus = agentcg::fakegpu::kMaxGpus;
  s->memory_bytes = env_bytes("AGENTCG_FAKE_GPU_MEMORY", 16ull << 30);
  s->fault_bytes_per_s = env_bytes("AGENTCG_FAKE_FAULT_BPS", 3000000000ull);
  s->copy_bytes_per_s = env_bytes("AGENTCG_FAKE_COPY_BPS", 12000000000ull);
  __atomic_store_n(&s->magic, agentcg::fakegpu::kMagic, __ATOMIC_RELEASE);
}

bool pid_alive(int pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

// Attaches to (or creates) the shared GPU and takes a process slot.
Shared* attach() {
  Local& l = local();
  std::lock_guard<std::mutex> lk(l.mu);
  const int pid = getpid();
  if (l.shm != nullptr && l.pid == pid) return l.shm;
  Shared* s = nullptr;
  const char* name = std::getenv("AGENTCG_FAKE_GPU_SHM");
  if (name == nullptr || *name == '\0') {
    s = static_cast<Shared*>(mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                                  MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    if (s == MAP_FAILED) return nullptr;
    init_shared(s);
  } else {
    bool creator = true;
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 && errno == EEXIST) {
      creator = false;
      fd = shm_open(name, O_RDWR, 0600);
    }
    if (fd < 0) return nullptr;
    if (creator && ftruncate(fd, sizeof(Shared)) != 0) {
      close(fd);
      return nullptr;
    }
    // A joiner may map before the creator sized the segment: wait for it.
    for (int i = 0; i < 1000 && !creator; ++i) {
      struct stat st{};
      if (fstat(fd, &st) == 0 && static_cast<std::size_t>(st.st_size) >= sizeof(Shared)) break;
      usleep(1000);
    }
    s = static_cast<Shared*>(mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    close(fd);
    if (s == MAP_FAILED) return nullptr;
    if (creator) {
      init_shared(s);
    } else {
      for (int i = 0; i < 1000 && __atomic_load_n(&s->magic, __ATOMIC_ACQUIRE) != agentcg::fakegpu::kMagic; ++i) {
        usleep(1000);
      }
    }
  }
  {
    ShmLock g(s);
    int slot = -1;
    for (int i = 0; i < agentcg::fakegpu::kMaxProcs; ++i) {
      if (s->procs[i].pid == pid) { slot = i; break; }
    }
    for (int i = 0; i < agentcg::fakegpu::kMaxProcs && slot < 0; ++i) {
      if (s->procs[i].pid == 0 || !pid_alive(s->procs[i].pid)) {
        // Reclaim a dead process's slot and its device memory.
        if (s->procs[i].pid != 0) s->device_used[s->procs[i].device] -= s->procs[i].device_bytes;
        std::memset(static_cast<void*>(&s->procs[i]), 0, sizeof(Proc));
        s->procs[i].pid = pid;
        slot = i;
      }
    }
    l.slot = slot;
  }
  l.shm = s;
  l.pid = pid;
  l.tail_ns = 0;
  l.next_ptr = 0x100000000ull;
  return s;
}

int current_device() {
  const auto v = reinterpret_cast<std::uintptr_t>(t_ctx);
  return v >= 0x1000 ? static_cast<int>(v - 0x1000) : 0;
}

void add_segment(Shared* s, int pid, int dev, std::uint64_t start, std::uint64_t end) {
  if (s->nsegments > 0) {
    auto& last = s->segments[s->nsegments - 1];
    if (last.pid == pid && last.device == static_cast<std::uint32_t>(dev) && start <= last.end_ns + 200000) {
      if (end > last.end_ns) last.end_ns = end;
      return;
    }
  }
  if (s->nsegments >= static_cast<std::uint32_t>(agentcg::fakegpu::kMaxSegments)) {
    ++s->segments_dropped;
    return;
  }
  s->segments[s->nsegments++] = {pid, static_cast<std::uint32_t>(dev), start, end};
}

// Makes `want` more bytes of process `p` resident on `dev`, evicting other
// processes least-recently-run first. Returns the bytes actually made resident.
std::uint64_t make_resident(Shared* s, Proc& p, int dev, std::uint64_t want) {
  if (want > p.managed_bytes - p.resident_bytes) want = p.managed_bytes - p.resident_bytes;
  auto used = [&] {
    std::uint64_t u = s->device_used[dev];
    for (auto& q : s->procs) {
      if (q.pid != 0 && q.device == static_cast<std::uint32_t>(dev)) u += q.resident_bytes;
    }
    return u;
  };
  while (used() + want > s->memory_bytes) {
    Proc* victim = nullptr;
    for (auto& q : s->procs) {
      if (&q == &p || q.pid == 0 || q.resident_bytes == 0 || q.device != static_cast<std::uint32_t>(dev)) continue;
      if (!pid_alive(q.pid)) { q.resident_bytes = 0; continue; }
      if (victim == nullptr || q.last_run_ns < victim->last_run_ns) victim = &q;
    }
    if (victim == nullptr) break;
    const std::uint64_t excess = used() + want - s->memory_bytes;
    const std::uint64_t take = excess < victim->resident_bytes ? excess : victim->resident_bytes;
    victim->resident_bytes -= take;
  }
  const std::uint64_t u = used();
  const std::uint64_t room = u >= s->memory_bytes ? 0 : s->memory_bytes - u;
  const std::uint64_t got = want < room ? want : room;
  p.resident_bytes += got;
  return want;  // the process pays for all it needed, resident or not (thrashing)
}

// Enqueues `work_ns` of GPU work for this process; returns its end time.
std::uint64_t enqueue(std::uint64_t work_ns, bool kernel, std::uint64_t prefetch_bytes) {
  Shared* s = attach();
  if (s == nullptr) return now_ns();
  Local& l = local();
  std::lock_guard<std::mutex> lk(l.mu);
  const int dev = current_device();
  ShmLock g(s);
  if (l.slot < 0) return now_ns();
  Proc& p = s->procs[l.slot];
  p.device = static_cast<std::uint32_t>(dev);
  if (kernel) p.launch_devices |= 1u << dev;
  std::uint64_t cost = 0;
  if (prefetch_bytes != 0) {
    const std::uint64_t b = make_resident(s, p, dev, prefetch_bytes);
    p.prefetched_bytes += b;
    cost += b * 1000000000ull / s->copy_bytes_per_s;
  }
  if (kernel && p.managed_bytes > p.resident_bytes) {
    const std::uint64_t need = make_resident(s, p, dev, p.managed_bytes - p.resident_bytes);
    p.paged_in_bytes += need;
    cost += need * 1000000000ull / s->fault_bytes_per_s;
  }
  const std::uint64_t now = now_ns();
  std::uint64_t start = now;
  if (s->busy_until_ns[dev] > start) start = s->busy_until_ns[dev];
  if (l.tail_ns > start) start = l.tail_ns;
  const std::uint64_t end = start + cost + work_ns;
  s->busy_until_ns[dev] = end;
  l.tail_ns = end;
  if (kernel) {
    p.busy_ns += work_ns;
    ++p.kernels;
  }
  p.last_run_ns = end;
  add_segment(s, l.pid, dev, start, end);
  return end;
}

std::uint64_t copy_ns(std::size_t bytes) {
  Shared* s = attach();
  if (s == nullptr) return 0;
  return static_cast<std::uint64_t>(bytes) * 1000000000ull / s->copy_bytes_per_s;
}

CUresult alloc(CUdeviceptr* dptr, std::size_t bytes, bool managed) {
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  Shared* s = attach();
  if (s == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  Local& l = local();
  std::lock_guard<std::mutex> lk(l.mu);
  const int dev = current_device();
  {
    ShmLock g(s);
    if (l.slot < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    Proc& p = s->procs[l.slot];
    p.alloc_devices |= 1u << dev;
    if (managed) {
      p.managed_bytes += bytes;
    } else {
      if (s->device_used[dev] + bytes > s->memory_bytes) return CUDA_ERROR_OUT_OF_MEMORY;
      s->device_used[dev] += bytes;
      p.device_bytes += bytes;
    }
  }
  *dptr = l.next_ptr;
  l.next_ptr += (bytes + 0xfffff) & ~static_cast<std::uint64_t>(0xfffff);
  l.allocs[*dptr] = {bytes, managed};
  return CUDA_SUCCESS;
}

}  // namespace

FAKE_API CUresult cuInit(unsigned int) { return attach() ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE; }
FAKE_API CUresult cuDriverGetVersion(int* v) {
  if (v == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *v = CUDA_VERSION;
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuDeviceGetCount(int* n) {
  Shared* s = attach();
  if (n == nullptr || s == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *n = static_cast<int>(s->gpus);
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuDeviceGet(CUdevice* d, int ordinal) {
  Shared* s = attach();
  if (d == nullptr || s == nullptr || ordinal < 0 || ordinal >= static_cast<int>(s->gpus)) return CUDA_ERROR_INVALID_DEVICE;
  *d = ordinal;
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuDeviceGetName(char* name, int len, CUdevice d) {
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, static_cast<std::size_t>(len), "agentcg fake GPU %d", d);
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice) {
  Shared* s = attach();
  if (bytes == nullptr || s == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *bytes = s->memory_bytes;
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice d) {
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *ctx = reinterpret_cast<CUcontext>(static_cast<std::uintptr_t>(0x1000 + d));
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice) { return CUDA_SUCCESS; }
FAKE_API CUresult cuCtxSetCurrent(CUcontext c) {
  t_ctx = c;
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuCtxGetCurrent(CUcontext* c) {
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *c = t_ctx;
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuCtxGetDevice(CUdevice* d) {
  if (d == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *d = current_device();
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuCtxSynchronize() {
  std::uint64_t t;
  {
    Local& l = local();
    std::lock_guard<std::mutex> lk(l.mu);
    t = l.tail_ns;
  }
  sleep_until(t);
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuStreamSynchronize(CUstream) { return cuCtxSynchronize(); }

FAKE_API CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) { return alloc(dptr, bytes, false); }
FAKE_API CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytes, unsigned int) {
  return alloc(dptr, bytes, true);
}
FAKE_API CUresult cuMemFree_v2(CUdeviceptr ptr) {
  Shared* s = attach();
  if (s == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  Local& l = local();
  std::lock_guard<std::mutex> lk(l.mu);
  auto it = l.allocs.find(ptr);
  if (it == l.allocs.end()) return CUDA_ERROR_INVALID_VALUE;
  ShmLock g(s);
  Proc& p = s->procs[l.slot];
  if (it->second.managed) {
    p.managed_bytes -= it->second.bytes;
    if (p.resident_bytes > p.managed_bytes) p.resident_bytes = p.managed_bytes;
  } else {
    p.device_bytes -= it->second.bytes;
    s->device_used[p.device] -= it->second.bytes;
  }
  l.allocs.erase(it);
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  Shared* s = attach();
  if (s == nullptr || free_bytes == nullptr || total_bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ShmLock g(s);
  const int dev = current_device();
  *total_bytes = s->memory_bytes;
  *free_bytes = s->memory_bytes - s->device_used[dev];
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void*, size_t n) {
  sleep_until(enqueue(copy_ns(n), false, 0));
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr d, const void* h, size_t n) { return cuMemcpyHtoD_v2(d, h, n); }
FAKE_API CUresult cuMemcpyDtoH_v2(void*, CUdeviceptr, size_t n) {
  sleep_until(enqueue(copy_ns(n), false, 0));
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void*, size_t n, CUstream) {
  (void)enqueue(copy_ns(n), false, 0);
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuMemsetD8_v2(CUdeviceptr, unsigned char, size_t n) {
  sleep_until(enqueue(copy_ns(n) / 4, false, 0));
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int, unsigned int, unsigned int,
                                 unsigned int, unsigned int, unsigned int, CUstream, void** params, void**) {
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  std::uint64_t ns = static_cast<std::uint64_t>(gx) * 1000ull;
  if (params != nullptr && params[0] != nullptr) std::memcpy(&ns, params[0], sizeof ns);
  const std::uint64_t end = enqueue(ns, true, 0);
  // A real driver blocks a launch when its push buffer is full; model that
  // as at most kMaxQueuedNs of queued work per process.
  constexpr std::uint64_t kMaxQueuedNs = 50000000;
  if (end > now_ns() + kMaxQueuedNs) sleep_until(end - kMaxQueuedNs);
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                      unsigned int bx, unsigned int by, unsigned int bz, unsigned int sh,
                                      CUstream st, void** params, void** extra) {
  return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, sh, st, params, extra);
}
FAKE_API CUresult cuMemPrefetchAsync_v2(CUdeviceptr ptr, size_t n, CUmemLocation loc, unsigned int, CUstream) {
  if (loc.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_SUCCESS;
  {
    Local& l = local();
    std::lock_guard<std::mutex> lk(l.mu);
    auto it = l.allocs.find(ptr);
    if (it == l.allocs.end() || !it->second.managed) return CUDA_ERROR_INVALID_VALUE;
  }
  (void)enqueue(0, false, n);
  return CUDA_SUCCESS;
}

// cuGetProcAddress: resolve a base name for a CUDA version, as the driver
// does (the _v2 memory API from 3.2 on, and so on).
namespace {
struct ProcEntry {
  const char* base;
  int first_version;
  void* fn;
  void* ptds;
};
#define FAKE_FN(f) reinterpret_cast<void*>(&f)
const ProcEntry kProcs[] = {
    {"cuInit", 2000, FAKE_FN(cuInit), nullptr},
    {"cuDriverGetVersion", 2020, FAKE_FN(cuDriverGetVersion), nullptr},
    {"cuDeviceGetCount", 2000, FAKE_FN(cuDeviceGetCount), nullptr},
    {"cuDeviceGet", 2000, FAKE_FN(cuDeviceGet), nullptr},
    {"cuDeviceTotalMem", 3020, FAKE_FN(cuDeviceTotalMem_v2), nullptr},
    {"cuDevicePrimaryCtxRetain", 7000, FAKE_FN(cuDevicePrimaryCtxRetain), nullptr},
    {"cuCtxSetCurrent", 4000, FAKE_FN(cuCtxSetCurrent), nullptr},
    {"cuCtxGetCurrent", 4000, FAKE_FN(cuCtxGetCurrent), nullptr},
    {"cuCtxSynchronize", 2000, FAKE_FN(cuCtxSynchronize), nullptr},
    {"cuMemAlloc", 3020, FAKE_FN(cuMemAlloc_v2), nullptr},
    {"cuMemAllocManaged", 6000, FAKE_FN(cuMemAllocManaged), nullptr},
    {"cuMemFree", 3020, FAKE_FN(cuMemFree_v2), nullptr},
    {"cuMemGetInfo", 3020, FAKE_FN(cuMemGetInfo_v2), nullptr},
    {"cuMemcpyHtoD", 3020, FAKE_FN(cuMemcpyHtoD_v2), FAKE_FN(cuMemcpyHtoD_v2_ptds)},
    {"cuMemcpyDtoH", 3020, FAKE_FN(cuMemcpyDtoH_v2), nullptr},
    {"cuLaunchKernel", 4000, FAKE_FN(cuLaunchKernel), FAKE_FN(cuLaunchKernel_ptsz)},
    {"cuMemPrefetchAsync", 12020, FAKE_FN(cuMemPrefetchAsync_v2), nullptr},
};
}  // namespace

FAKE_API CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int ver, cuuint64_t flags,
                                      CUdriverProcAddressQueryResult* status);
FAKE_API CUresult cuGetProcAddress(const char* symbol, void** pfn, int ver, cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, ver, flags, nullptr);
}
FAKE_API CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int ver, cuuint64_t flags,
                                      CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  if (std::strcmp(symbol, "cuGetProcAddress") == 0) {
    *pfn = ver >= 12050 ? FAKE_FN(cuGetProcAddress_v2) : FAKE_FN(cuGetProcAddress);
  }
  for (const auto& e : kProcs) {
    if (*pfn == nullptr && std::strcmp(e.base, symbol) == 0 && ver >= e.first_version) {
      *pfn = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && e.ptds ? e.ptds : e.fn;
    }
  }
  if (status != nullptr) *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
