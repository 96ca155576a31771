// SPDX-License-Identifier: GPL-2.0-only
// Trace loading cost (issue 21): wall time, CPU time and peak RSS of
// load_trace_file() on one file, median of N loads in one process (the
// first load's RSS peak is the one that counts: later loads reuse the freed
// heap). CPU time is the figure to compare on a shared machine (wall time
// there includes waiting for a core). Prints figures; asserts nothing about
// speed. FILE may be JSON or the binary form (load_trace_file() takes
// either; the first line printed says which).
//   trace_load_bench FILE [REPEATS]
// e.g. agentcg trace generate agent --sessions 10000 --cpus 64 --duration 30s -o agent10k.json
//      agentcg trace convert agent10k.json agent10k.agtb
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/trace/trace.h"

namespace {

long rss_kb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(std::string(field).size()));
  return -1;
}

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TRACE.json|TRACE.agtb [REPEATS]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
  const double file_mb = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
  bool binary = false;
  {
    std::ifstream f(path, std::ios::binary);
    char c = 0;
    binary = f.get(c) && agentcg::trace::looks_binary(&c, 1);
  }
  const long before_kb = rss_kb("VmRSS:");
  std::vector<double> secs;
  std::vector<double> cpu;
  long peak_kb = 0;
  std::size_t processes = 0;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_seconds();
    {
      const agentcg::trace::Trace t = agentcg::trace::load_trace_file(path);
      processes = t.processes.size();
      secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      cpu.push_back(cpu_seconds() - c0);
    }
    if (i == 0) peak_kb = rss_kb("VmHWM:");
  }
  std::sort(secs.begin(), secs.end());
  std::sort(cpu.begin(), cpu.end());
  const double peak_mb = static_cast<double>(peak_kb - before_kb) / 1024.0;
  std::printf("file %s (%s): %.1f MB, %zu processes\n", path.c_str(), binary ? "binary" : "JSON", file_mb,
              processes);
  std::printf("load: median %.3f s (min %.3f, max %.3f, %d runs)\n", secs[secs.size() / 2], secs.front(),
              secs.back(), repeats);
  std::printf("load CPU time: median %.3f s (min %.3f, max %.3f)\n", cpu[cpu.size() / 2], cpu.front(), cpu.back());
  std::printf("sizeof(Op) %zu bytes\n", sizeof(agentcg::trace::Op));
  std::printf("peak RSS above start: %.0f MB = %.1fx the file\n", peak_mb, peak_mb / file_mb);
  return 0;
}
