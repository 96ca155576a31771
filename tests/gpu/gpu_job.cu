// SPDX-License-Identifier: GPL-2.0-only
/*
 * A real-GPU job for the live GPU backend check (tests/gpu/run_gpu.py): it
 * allocates --memory-mb with cudaMalloc (the shim turns it into managed
 * memory), then runs --iters iterations of a kernel that touches the whole
 * footprint and spins for --kernel-ms on the GPU clock, and prints one JSON
 * line {"pid","start_ns","end_ns","iters","kernel_ns"} where kernel_ns is the
 * GPU time its kernels took (CUDA events). Exit status 3 on a CUDA error.
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

__global__ void touch_and_spin(unsigned int* buf, size_t words, unsigned long long spin_ns) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < words; i += stride * 1024) {
    buf[i] += 1;  // one word per 4 KiB page: every page is touched
  }
  if (threadIdx.x == 0) {
    unsigned long long t0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    unsigned long long t = t0;
    while (t - t0 < spin_ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  }
}

}  // namespace

int main(int argc, char** argv) {
  size_t memory_mb = 1024;
  unsigned long long kernel_ms = 50;
  int iters = 100;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--memory-mb")) memory_mb = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--kernel-ms")) kernel_ms = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--iters")) iters = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "gpu_job: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  const size_t bytes = memory_mb << 20;
  unsigned int* buf = nullptr;
  ok(cudaMalloc(&buf, bytes), "cudaMalloc");
  cudaEvent_t a, b;
  ok(cudaEventCreate(&a), "cudaEventCreate");
  ok(cudaEventCreate(&b), "cudaEventCreate");
  const unsigned long long start = now_ns();
  double gpu_ms = 0;
  for (int it = 0; it < iters; ++it) {
    ok(cudaEventRecord(a), "cudaEventRecord");
    touch_and_spin<<<1024, 256>>>(buf, bytes / sizeof(unsigned int), kernel_ms * 1000000ull);
    ok(cudaGetLastError(), "launch");
    ok(cudaEventRecord(b), "cudaEventRecord");
    ok(cudaEventSynchronize(b), "cudaEventSynchronize");
    float t = 0;
    ok(cudaEventElapsedTime(&t, a, b), "cudaEventElapsedTime");
    gpu_ms += t;
  }
  ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const unsigned long long end = now_ns();
  ok(cudaFree(buf), "cudaFree");
  std::printf("{\"pid\":%d,\"start_ns\":%llu,\"end_ns\":%llu,\"iters\":%d,\"kernel_ns\":%llu}\n", getpid(), start,
              end, iters, static_cast<unsigned long long>(gpu_ms * 1e6));
  return 0;
}
