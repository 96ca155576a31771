// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unified Memory rates of a real GPU, for the GPU model's PCIe parameters
 * (sim/trace/gpu_trace.h, PcieSpec; sim/gpu/README.md). A benchmark: it
 * prints figures, one JSON object per line, and asserts nothing.
 *
 *   pinned_h2d      cudaMemcpy from pinned host memory: the link's copy rate
 *   prefetch_h2d    cudaMemPrefetchAsync of host-written managed memory to the
 *                   GPU (PcieSpec::copy_bytes_per_s)
 *   prefetch_d2h    pages on the GPU back to the host (what an eviction costs)
 *   fault_h2d_after_eviction  those pages demand-paged in again
 *   fault_h2d       a kernel touching one word per 4 KiB page of host-written
 *                   managed memory: demand paging with the driver's density
 *                   prefetcher (PcieSpec::swap_bytes_per_s, the effective rate)
 *   fault_sparse    one word per 2 MiB block of host-written managed memory:
 *                   the time per far fault (PcieSpec::fault_latency_ns)
 *   fault_sparse_64k  one word per 64 KiB of it
 *   prefetch_populate  cudaMemPrefetchAsync of untouched managed memory
 *   first_touch     the same dense kernel on managed memory nobody has
 *                   touched: pages created on the GPU, no copy
 *   resident        the dense kernel again with every page on the GPU: the
 *                   kernel's own time, subtracted from the three above
 *
 * Never asks for more managed memory than the card has free (--gib, default
 * 4, is checked against cudaMemGetInfo). Built with nvcc when present
 * (tests/gpu/CMakeLists.txt); run by hand on a GPU: `um_rates --gib 4
 * --reps 3`. Exit status 3 on a CUDA error, 2 on a bad option or a size that
 * does not fit.
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

void ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "um_rates: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(3);
  }
}

// Touch one word every `stride_words` words: one thread per touched word.
__global__ void touch(unsigned int* buf, size_t words, size_t stride_words) {
  const size_t n = words / stride_words;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    buf[i * stride_words] += 1;
  }
}

struct Timer {
  cudaEvent_t a{}, b{};
  Timer() {
    ok(cudaEventCreate(&a), "cudaEventCreate");
    ok(cudaEventCreate(&b), "cudaEventCreate");
  }
  ~Timer() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  void start() { ok(cudaEventRecord(a), "cudaEventRecord"); }
  double stop_ms() {
    ok(cudaEventRecord(b), "cudaEventRecord");
    ok(cudaEventSynchronize(b), "cudaEventSynchronize");
    float ms = 0;
    ok(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    return ms;
  }
};

double touch_ms(Timer& t, unsigned int* buf, size_t bytes, size_t stride_bytes) {
  t.start();
  touch<<<4096, 256>>>(buf, bytes / sizeof(unsigned int), stride_bytes / sizeof(unsigned int));
  ok(cudaGetLastError(), "launch");
  return t.stop_ms();
}

void print(const char* what, int rep, size_t bytes, double ms, size_t faults = 0) {
  std::printf("{\"what\":\"%s\",\"rep\":%d,\"bytes\":%zu,\"ms\":%.3f,\"gb_per_s\":%.3f", what, rep, bytes, ms,
              ms > 0 ? bytes / (ms * 1e6) : 0.0);
  if (faults) std::printf(",\"blocks\":%zu,\"us_per_block\":%.3f", faults, ms * 1e3 / faults);
  std::printf("}\n");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  size_t gib = 4;
  int reps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--gib")) gib = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "um_rates: unknown option %s (expected --gib N, --reps N)\n", argv[i]);
      return 2;
    }
  }
  const size_t bytes = gib << 30;
  int dev = 0;
  ok(cudaGetDevice(&dev), "cudaGetDevice");
  size_t free_b = 0, total_b = 0;
  ok(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  if (bytes == 0 || bytes > free_b / 2) {
    std::fprintf(stderr, "um_rates: --gib %zu: expected 1 to %zu (half the card's free memory)\n", gib,
                 free_b / 2 >> 30);
    return 2;
  }
  cudaDeviceProp prop{};
  ok(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  std::printf("{\"device\":\"%s\",\"free\":%zu,\"total\":%zu,\"gib\":%zu,\"reps\":%d}\n", prop.name, free_b, total_b,
              gib, reps);
  cudaMemLocation on_gpu{}, on_host{};
  on_gpu.type = cudaMemLocationTypeDevice;
  on_gpu.id = dev;
  on_host.type = cudaMemLocationTypeHost;
  on_host.id = 0;
  Timer t;
  for (int rep = 0; rep < reps; ++rep) {
    {  // the link: pinned host memory to the GPU
      void* host = nullptr;
      void* devbuf = nullptr;
      const size_t n = std::min<size_t>(bytes, 1ull << 30);
      ok(cudaMallocHost(&host, n), "cudaMallocHost");
      ok(cudaMalloc(&devbuf, n), "cudaMalloc");
      std::memset(host, 1, n);
      t.start();
      ok(cudaMemcpy(devbuf, host, n, cudaMemcpyHostToDevice), "cudaMemcpy");
      print("pinned_h2d", rep, n, t.stop_ms());
      ok(cudaFree(devbuf), "cudaFree");
      ok(cudaFreeHost(host), "cudaFreeHost");
    }
    unsigned int* buf = nullptr;
    // Pages nobody has touched, first touched by the GPU; then resident.
    ok(cudaMallocManaged(&buf, bytes), "cudaMallocManaged");
    print("first_touch", rep, bytes, touch_ms(t, buf, bytes, 4096));
    print("resident", rep, bytes, touch_ms(t, buf, bytes, 4096));
    // Back to the host, then demand-paged in again by the dense kernel.
    t.start();
    ok(cudaMemPrefetchAsync(buf, bytes, on_host, 0), "cudaMemPrefetchAsync(host)");
    print("prefetch_d2h", rep, bytes, t.stop_ms());
    print("fault_h2d_after_eviction", rep, bytes, touch_ms(t, buf, bytes, 4096));
    ok(cudaFree(buf), "cudaFree");

    // Host-written pages, demand-paged in by the dense kernel.
    ok(cudaMallocManaged(&buf, bytes), "cudaMallocManaged");
    std::memset(buf, 1, bytes);
    print("fault_h2d", rep, bytes, touch_ms(t, buf, bytes, 4096));
    ok(cudaFree(buf), "cudaFree");

    // Host-written pages, prefetched as a whole.
    ok(cudaMallocManaged(&buf, bytes), "cudaMallocManaged");
    std::memset(buf, 1, bytes);
    t.start();
    ok(cudaMemPrefetchAsync(buf, bytes, on_gpu, 0), "cudaMemPrefetchAsync(gpu)");
    print("prefetch_h2d", rep, bytes, t.stop_ms());
    ok(cudaFree(buf), "cudaFree");

    // Pages nobody has touched, prefetched to the GPU: created there.
    ok(cudaMallocManaged(&buf, bytes), "cudaMallocManaged");
    t.start();
    ok(cudaMemPrefetchAsync(buf, bytes, on_gpu, 0), "cudaMemPrefetchAsync(gpu)");
    print("prefetch_populate", rep, bytes, t.stop_ms());
    ok(cudaFree(buf), "cudaFree");

    // Host-written pages, one word per 2 MiB block: one far fault each.
    ok(cudaMallocManaged(&buf, bytes), "cudaMallocManaged");
    std::memset(buf, 1, bytes);
    print("fault_sparse", rep, bytes, touch_ms(t, buf, bytes, 2u << 20), bytes >> 21);
    ok(cudaFree(buf), "cudaFree");
    // One word per 64 KiB: 32 faults per block, the density prefetcher
    // promoting the rest of a block once half of it is resident.
    ok(cudaMallocManaged(&buf, bytes), "cudaMallocManaged");
    std::memset(buf, 1, bytes);
    print("fault_sparse_64k", rep, bytes, touch_ms(t, buf, bytes, 64u << 10), bytes >> 16);
    ok(cudaFree(buf), "cudaFree");
  }
  return 0;
}
