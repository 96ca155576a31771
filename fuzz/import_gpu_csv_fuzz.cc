// SPDX-License-Identifier: GPL-2.0-only
// Fuzz target: the GPU job CSV importer (sim/import/gpu_csv_import.cc). It
// reads a path, so the input goes to an anonymous memory file (memfd) read
// through /proc/self/fd/N: no disk I/O per input. Invariant: a non-strict
// import either throws trace::TraceError (file, line, column) or returns a
// trace whose text parses back (parse_trace runs the gpu section's checks);
// nothing else escapes.
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "fuzz/fuzz_target.h"
#include "sim/import/gpu_csv_import.h"
#include "sim/trace/trace.h"

namespace {

int memfd() {
  static const int fd = memfd_create("fuzz-gpu-csv", 0);
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = memfd();
  AGENTCG_FUZZ_CHECK(fd >= 0, "memfd_create failed");
  AGENTCG_FUZZ_CHECK(ftruncate(fd, 0) == 0, "ftruncate failed");
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    AGENTCG_FUZZ_CHECK(n > 0, "pwrite to the memfd failed");
    done += static_cast<std::size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  agentcg::trace::Trace t;
  try {
    t = agentcg::sim::gpu::import_gpu_csv(path, agentcg::sim::gpu::ImportOptions{});
  } catch (const agentcg::trace::TraceError&) {
    return 0;
  }
  try {
    (void)agentcg::trace::parse_trace(agentcg::trace::to_json_text(t), "imported.json");
  } catch (const agentcg::trace::TraceError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    AGENTCG_FUZZ_CHECK(false, "a gpu-csv import produced a trace that the parser rejects");
  }
  return 0;
}
