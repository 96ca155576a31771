// SPDX-License-Identifier: GPL-2.0-only
/*
 * Prints the fake GPU's shared state (tests/shim/fake_gpu_shared.h) as one
 * JSON object: per-process counters and the timeline segments (who ran
 * when), for tests/shim/shim_scenarios.py to analyse; `--unlink` removes
 * the segment afterwards. Usage: fake_gpu_dump NAME [--unlink].
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "tests/shim/fake_gpu_shared.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fake_gpu_dump NAME [--unlink]\n");
    return 2;
  }
  int fd = shm_open(argv[1], O_RDWR, 0600);
  if (fd < 0) {
    std::fprintf(stderr, "fake_gpu_dump: no segment %s\n", argv[1]);
    return 1;
  }
  auto* s = static_cast<agentcg::fakegpu::Shared*>(
      mmap(nullptr, sizeof(agentcg::fakegpu::Shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  close(fd);
  if (s == MAP_FAILED) return 1;
  pthread_mutex_lock(&s->mu);
  std::printf("{\"memory_bytes\":%llu,\"procs\":[", static_cast<unsigned long long>(s->memory_bytes));
  bool first = true;
  for (const auto& p : s->procs) {
    if (p.pid == 0) continue;
    std::printf("%s{\"pid\":%d,\"busy_ns\":%llu,\"kernels\":%llu,\"paged_in\":%llu,\"prefetched\":%llu,"
                "\"managed\":%llu,\"device\":%llu,\"alloc_devices\":%u,\"launch_devices\":%u}",
                first ? "" : ",", p.pid, static_cast<unsigned long long>(p.busy_ns),
                static_cast<unsigned long long>(p.kernels), static_cast<unsigned long long>(p.paged_in_bytes),
                static_cast<unsigned long long>(p.prefetched_bytes), static_cast<unsigned long long>(p.managed_bytes),
                static_cast<unsigned long long>(p.device_bytes), p.alloc_devices, p.launch_devices);
    first = false;
  }
  std::printf("],\"dropped\":%u,\"segments\":[", s->segments_dropped);
  for (std::uint32_t i = 0; i < s->nsegments; ++i) {
    const auto& g = s->segments[i];
    std::printf("%s[%d,%u,%llu,%llu]", i ? "," : "", g.pid, g.device, static_cast<unsigned long long>(g.start_ns),
                static_cast<unsigned long long>(g.end_ns));
  }
  std::printf("]}\n");
  pthread_mutex_unlock(&s->mu);
  if (argc > 2 && std::strcmp(argv[2], "--unlink") == 0) shm_unlink(argv[1]);
  return 0;
}
