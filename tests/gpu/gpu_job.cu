// SPDX-License-Identifier: GPL-2.0-only
/*
 * A real-GPU job for the live GPU backend check (tests/gpu/run_gpu.py): it
 * allocates --memory-mb with cudaMalloc (the shim turns it into managed
 * memory), then runs --iters iterations of a kernel that touches every 4 KiB
 * page of the footprint and spins for --kernel-ms on the GPU clock, and
 * prints one JSON line {"pid","start_ns","end_ns","iters","kernel_ns",
 * "gpu_ns"}: kernel_ns is the time CUDA events saw around each launch (the
 * wait for the scheduler's lock included), gpu_ns the kernels' own time on
 * the GPU clock (page faults included: the first iteration creates every
 * page on the GPU, unless --prefetch 1 created them there first, before
 * start_ns). Exit status 3 on a CUDA error.
 * Built with nvcc when present (tests/gpu/CMakeLists.txt); run under
 * LD_PRELOAD=libagentcg-cuda.so with agentcg-gpud serving AGENTCG_GPU_SOCKET.
 */
#include <cuda_runtime.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

unsigned long long now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<unsigned long long>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

void ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "gpu_job: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(3);
  }
}

// Touches one word of every 4 KiB page of the footprint, then each block's
// thread 0 spins until spin_ns after the block started, on the GPU clock.
// span[0] / span[1] take the earliest start and latest end over the
// blocks (the GPU clock), so the kernel's own time, page faults included,
// is span[1] - span[0]: CUDA events
// around the launch would also count the time the launch waited for the
// scheduler's lock.
__global__ void touch_and_spin(unsigned int* buf, size_t words, unsigned long long spin_ns,
                               unsigned long long* span) {
  unsigned long long t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  if (threadIdx.x == 0) atomicMin(&span[0], t0);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  constexpr size_t kWordsPerPage = 4096 / sizeof(unsigned int);
  for (size_t i = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) * kWordsPerPage; i < words;
       i += stride * kWordsPerPage) {
    buf[i] += 1;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long t = t0;
    while (t - t0 < spin_ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    atomicMax(&span[1], t);
  }
}

}  // namespace

int main(int argc, char** argv) {
  size_t memory_mb = 1024;
  unsigned long long kernel_ms = 50;
  int iters = 100;
  bool prefetch = false;  // create the pages on the GPU before the first kernel, as loading data would
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--memory-mb")) memory_mb = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--kernel-ms")) kernel_ms = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--iters")) iters = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--prefetch")) prefetch = std::atoi(argv[i + 1]) != 0;
    else {
      std::fprintf(stderr, "gpu_job: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  const size_t bytes = memory_mb << 20;
  unsigned int* buf = nullptr;
  ok(cudaMalloc(&buf, bytes), "cudaMalloc");
  if (prefetch) {
    int dev = 0;
    ok(cudaGetDevice(&dev), "cudaGetDevice");
    cudaMemLocation loc{};
    loc.type = cudaMemLocationTypeDevice;
    loc.id = dev;
    ok(cudaMemPrefetchAsync(buf, bytes, loc, 0), "cudaMemPrefetchAsync");
    ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  unsigned long long* span = nullptr;  // [earliest start, latest end] of one kernel
  ok(cudaMalloc(&span, 2 * sizeof(unsigned long long)), "cudaMalloc");
  const unsigned long long span_init[2] = {~0ull, 0};
  unsigned long long spans_ns = 0;
  cudaEvent_t a, b;
  ok(cudaEventCreate(&a), "cudaEventCreate");
  ok(cudaEventCreate(&b), "cudaEventCreate");
  const unsigned long long start = now_ns();
  double gpu_ms = 0;
  for (int it = 0; it < iters; ++it) {
    ok(cudaEventRecord(a), "cudaEventRecord");
    ok(cudaMemcpy(span, span_init, sizeof(span_init), cudaMemcpyHostToDevice), "cudaMemcpy");
    touch_and_spin<<<1024, 256>>>(buf, bytes / sizeof(unsigned int), kernel_ms * 1000000ull, span);
    ok(cudaGetLastError(), "launch");
    ok(cudaEventRecord(b), "cudaEventRecord");
    ok(cudaEventSynchronize(b), "cudaEventSynchronize");
    float t = 0;
    ok(cudaEventElapsedTime(&t, a, b), "cudaEventElapsedTime");
    gpu_ms += t;
    unsigned long long got[2] = {0, 0};
    ok(cudaMemcpy(got, span, sizeof(got), cudaMemcpyDeviceToHost), "cudaMemcpy");
    spans_ns += got[1] - got[0];
  }
  ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const unsigned long long end = now_ns();
  ok(cudaFree(buf), "cudaFree");
  ok(cudaFree(span), "cudaFree");
  std::printf("{\"pid\":%d,\"start_ns\":%llu,\"end_ns\":%llu,\"iters\":%d,\"kernel_ns\":%llu,\"gpu_ns\":%llu}\n",
              getpid(), start, end, iters, static_cast<unsigned long long>(gpu_ms * 1e6), spans_ns);
  return 0;
}
