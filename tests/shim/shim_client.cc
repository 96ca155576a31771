// SPDX-License-Identifier: GPL-2.0-only
/*
 * A CUDA driver-API client for the shim tests: run under LD_PRELOAD of
 * libagentcg-cuda.so against the fake libcuda.so.1 (tests/shim/fake_cuda.cc).
 * It resolves the driver the three ways real programs do (--resolve direct:
 * linked calls; procaddr: dlopen + cuGetProcAddress_v2 like the CUDA
 * runtime since 12.5; dlsym: dlopen + dlsym like older runtimes), allocates
 * memory with cuMemAlloc, launches fake kernels of --kernel-us for
 * --duration-ms of wall time (or --iters launches) and prints one JSON line:
 *   {"pid":..,"start_ns":..,"end_ns":..,"kernels":..,"busy_ns":..,"alloc":..}
 * Exit status: 0 ok, 3 a driver call failed (the message names it).
 * Called by tests/shim/shim_scenarios.py.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#undef cuGetProcAddress

namespace {

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

struct Api {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) retain = nullptr;
  decltype(&::cuCtxSetCurrent) set_current = nullptr;
  decltype(&::cuCtxSynchronize) sync = nullptr;
  decltype(&::cuMemAlloc_v2) alloc = nullptr;
  decltype(&::cuMemFree_v2) free = nullptr;
  decltype(&::cuMemGetInfo_v2) info = nullptr;
  decltype(&::cuMemcpyHtoD_v2) htod = nullptr;
  decltype(&::cuLaunchKernel) launch = nullptr;
  decltype(&::cuDeviceGetCount) dev_count = nullptr;
  decltype(&::cuDeviceGet) dev_get = nullptr;
};

Api direct_api() {
  Api a;
  a.init = &::cuInit;
  a.retain = &::cuDevicePrimaryCtxRetain;
  a.set_current = &::cuCtxSetCurrent;
  a.sync = &::cuCtxSynchronize;
  a.alloc = &::cuMemAlloc_v2;
  a.free = &::cuMemFree_v2;
  a.info = &::cuMemGetInfo_v2;
  a.htod = &::cuMemcpyHtoD_v2;
  a.launch = &::cuLaunchKernel;
  a.dev_count = &::cuDeviceGetCount;
  a.dev_get = &::cuDeviceGet;
  return a;
}

template <typename F>
bool resolve_proc(decltype(&::cuGetProcAddress_v2) gpa, const char* name, F& out, bool ptds) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult st{};
  const cuuint64_t flags = ptds ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
  if (gpa(name, &p, CUDA_VERSION, flags, &st) != CUDA_SUCCESS || p == nullptr) return false;
  out = reinterpret_cast<F>(p);
  return true;
}

bool load_api(const std::string& how, Api& a, bool ptds) {
  if (how == "direct") {
    a = direct_api();
    return true;
  }
  void* h = dlopen("libcuda.so.1", RTLD_NOW);
  if (h == nullptr) return false;
  if (how == "dlsym") {
    a.init = reinterpret_cast<decltype(a.init)>(dlsym(h, "cuInit"));
    a.retain = reinterpret_cast<decltype(a.retain)>(dlsym(h, "cuDevicePrimaryCtxRetain"));
    a.set_current = reinterpret_cast<decltype(a.set_current)>(dlsym(h, "cuCtxSetCurrent"));
    a.sync = reinterpret_cast<decltype(a.sync)>(dlsym(h, "cuCtxSynchronize"));
    a.alloc = reinterpret_cast<decltype(a.alloc)>(dlsym(h, "cuMemAlloc_v2"));
    a.free = reinterpret_cast<decltype(a.free)>(dlsym(h, "cuMemFree_v2"));
    a.info = reinterpret_cast<decltype(a.info)>(dlsym(h, "cuMemGetInfo_v2"));
    a.htod = reinterpret_cast<decltype(a.htod)>(dlsym(h, ptds ? "cuMemcpyHtoD_v2_ptds" : "cuMemcpyHtoD_v2"));
    a.launch = reinterpret_cast<decltype(a.launch)>(dlsym(h, ptds ? "cuLaunchKernel_ptsz" : "cuLaunchKernel"));
    a.dev_count = reinterpret_cast<decltype(a.dev_count)>(dlsym(h, "cuDeviceGetCount"));
    a.dev_get = reinterpret_cast<decltype(a.dev_get)>(dlsym(h, "cuDeviceGet"));
  } else if (how == "procaddr") {
    // The runtime's way: get cuGetProcAddress_v2 with dlsym, everything else through it.
    auto gpa = reinterpret_cast<decltype(&::cuGetProcAddress_v2)>(dlsym(h, "cuGetProcAddress_v2"));
    if (gpa == nullptr) return false;
    // Also resolve cuGetProcAddress through itself, as the runtime does.
    if (!resolve_proc(gpa, "cuGetProcAddress", gpa, false)) return false;
    bool ok = resolve_proc(gpa, "cuInit", a.init, false) &&
              resolve_proc(gpa, "cuDevicePrimaryCtxRetain", a.retain, false) &&
              resolve_proc(gpa, "cuCtxSetCurrent", a.set_current, false) &&
              resolve_proc(gpa, "cuCtxSynchronize", a.sync, false) &&
              resolve_proc(gpa, "cuMemAlloc", a.alloc, false) && resolve_proc(gpa, "cuMemFree", a.free, false) &&
              resolve_proc(gpa, "cuMemGetInfo", a.info, false) &&
              resolve_proc(gpa, "cuMemcpyHtoD", a.htod, ptds) &&
              resolve_proc(gpa, "cuDeviceGetCount", a.dev_count, false) &&
              resolve_proc(gpa, "cuDeviceGet", a.dev_get, false) &&
              resolve_proc(gpa, "cuLaunchKernel", a.launch, ptds);
    if (!ok) return false;
  } else {
    return false;
  }
  return a.init && a.retain && a.set_current && a.sync && a.alloc && a.free && a.info && a.htod && a.launch &&
         a.dev_count && a.dev_get;
}

[[noreturn]] void die(const char* what, int r) {
  std::fprintf(stderr, "shim_client: %s failed (%d)\n", what, r);
  std::exit(3);
}

}  // namespace

int main(int argc, char** argv) {
  std::string resolve = "direct";
  bool ptds = false;
  std::uint64_t alloc_bytes = 0, kernel_us = 1000, duration_ms = 1000, iters = 0;
  std::uint64_t free_after_ms = 0, idle_after_ms = 0, idle_ms = 0;
  bool meminfo = false;
  int device = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto num = [&]() -> std::uint64_t {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "shim_client: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::strtoull(argv[++i], nullptr, 10);
    };
    if (a == "--resolve") resolve = argv[++i];
    else if (a == "--ptds") ptds = true;
    else if (a == "--alloc-mb") alloc_bytes = num() << 20;
    else if (a == "--kernel-us") kernel_us = num();
    else if (a == "--duration-ms") duration_ms = num();
    else if (a == "--iters") iters = num();
    else if (a == "--free-after-ms") free_after_ms = num();
    else if (a == "--idle-after-ms") idle_after_ms = num();
    else if (a == "--idle-ms") idle_ms = num();
    else if (a == "--meminfo") meminfo = true;
    else if (a == "--device") device = static_cast<int>(num());
    else {
      std::fprintf(stderr, "shim_client: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  Api api;
  if (!load_api(resolve, api, ptds)) {
    std::fprintf(stderr, "shim_client: cannot resolve the driver API via %s\n", resolve.c_str());
    return 3;
  }
  int r;
  if ((r = api.init(0)) != CUDA_SUCCESS) die("cuInit", r);
  // As real programs do: count the devices, take ordinal --device (the shim
  // may remap it: live placement), make its primary context current.
  int ndev = 0;
  if ((r = api.dev_count(&ndev)) != CUDA_SUCCESS) die("cuDeviceGetCount", r);
  CUdevice dev = 0;
  if ((r = api.dev_get(&dev, device)) != CUDA_SUCCESS) die("cuDeviceGet", r);
  CUcontext ctx = nullptr;
  if ((r = api.retain(&ctx, dev)) != CUDA_SUCCESS) die("cuDevicePrimaryCtxRetain", r);
  if ((r = api.set_current(ctx)) != CUDA_SUCCESS) die("cuCtxSetCurrent", r);
  CUdeviceptr buf = 0;
  if (alloc_bytes != 0) {
    if ((r = api.alloc(&buf, alloc_bytes)) != CUDA_SUCCESS) die("cuMemAlloc", r);
  }
  if (meminfo) {
    size_t f = 0, t = 0;
    if ((r = api.info(&f, &t)) != CUDA_SUCCESS) die("cuMemGetInfo", r);
    std::printf("{\"pid\":%d,\"free\":%zu,\"total\":%zu}\n", getpid(), f, t);
    if (buf != 0) (void)api.free(buf);
    return 0;
  }
  char host[4096] = {};
  if (buf != 0 && (r = api.htod(buf, host, sizeof host)) != CUDA_SUCCESS) die("cuMemcpyHtoD", r);
  const std::uint64_t kernel_ns = kernel_us * 1000;
  void* params[] = {const_cast<std::uint64_t*>(&kernel_ns)};
  CUfunction fn = reinterpret_cast<CUfunction>(static_cast<std::uintptr_t>(0x5a5a));
  const std::uint64_t start = now_ns();
  std::uint64_t kernels = 0;
  bool freed = false, idled = false;
  for (;;) {
    const std::uint64_t t = now_ns();
    if (iters != 0 ? kernels >= iters : t - start >= duration_ms * 1000000ull) break;
    if (free_after_ms != 0 && !freed && t - start >= free_after_ms * 1000000ull) {
      if ((r = api.sync()) != CUDA_SUCCESS) die("cuCtxSynchronize", r);
      if ((r = api.free(buf)) != CUDA_SUCCESS) die("cuMemFree", r);
      buf = 0;
      freed = true;
    }
    if (idle_after_ms != 0 && !idled && t - start >= idle_after_ms * 1000000ull) {
      if ((r = api.sync()) != CUDA_SUCCESS) die("cuCtxSynchronize", r);
      usleep(static_cast<useconds_t>(idle_ms * 1000));
      idled = true;
    }
    if ((r = api.launch(fn, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr)) != CUDA_SUCCESS) die("cuLaunchKernel", r);
    ++kernels;
  }
  if ((r = api.sync()) != CUDA_SUCCESS) die("cuCtxSynchronize", r);
  const std::uint64_t end = now_ns();
  if (buf != 0 && (r = api.free(buf)) != CUDA_SUCCESS) die("cuMemFree", r);
  std::printf("{\"pid\":%d,\"devices\":%d,\"device\":%d,\"start_ns\":%llu,\"end_ns\":%llu,\"kernels\":%llu,"
              "\"busy_ns\":%llu,\"alloc\":%llu}\n",
              getpid(), ndev, static_cast<int>(dev), static_cast<unsigned long long>(start), static_cast<unsigned long long>(end),
              static_cast<unsigned long long>(kernels), static_cast<unsigned long long>(kernels * kernel_ns),
              static_cast<unsigned long long>(alloc_bytes));
  return 0;
}
