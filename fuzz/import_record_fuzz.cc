// SPDX-License-Identifier: GPL-2.0-only
// Fuzz target: the agentcg-record folder importer
// (sim/import/agentcg_record.cc). The input is the folder's five files
// separated by NUL bytes, in the order meta.json, members.tsv, cgroups.tsv,
// memory.tsv, ftrace.txt; a file the input does not reach is written with
// just its header (meta.json: a minimal valid one), so short inputs still
// get past the side files into the ftrace part. The folder is a private
// temporary one (in /dev/shm when it exists), rewritten for each input and
// removed at exit. Invariant: as the other importers (import_fuzz_common.h).
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz/import_fuzz_common.h"

namespace {

constexpr std::array<const char*, 5> kFiles = {"meta.json", "members.tsv", "cgroups.tsv", "memory.tsv",
                                               "ftrace.txt"};
constexpr std::array<const char*, 5> kDefaults = {
    "{\"format\": \"agentcg-recording\", \"version\": 1, \"cpus\": 2}\n",
    "mono_ns\ttid\ttgid\tkthread\tcgroup\tcomm\n",
    "mono_ns\tpath\tcpu.weight\tcpu.max\tmemory.high\tmemory.max\n",
    "mono_ns\tpath\tmemory.current\n",
    "",
};

struct Folder {
  std::string dir;
  Folder() {
    std::string tmpl = (std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path().string()) +
                       "/agentcg-fuzz-record-XXXXXX";
    AGENTCG_FUZZ_CHECK(mkdtemp(tmpl.data()) != nullptr, "mkdtemp failed");
    dir = tmpl;
  }
  ~Folder() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Folder folder;
  const std::string all(reinterpret_cast<const char*>(data), size);
  std::size_t at = 0;
  for (std::size_t i = 0; i < kFiles.size(); ++i) {
    std::string part = kDefaults[i];
    if (at <= all.size()) {
      const auto nul = all.find('\0', at);
      part = all.substr(at, nul == std::string::npos ? std::string::npos : nul - at);
      at = nul == std::string::npos ? all.size() + 1 : nul + 1;
    }
    std::ofstream out(folder.dir + "/" + kFiles[i], std::ios::binary | std::ios::trunc);
    out << part;
    AGENTCG_FUZZ_CHECK(static_cast<bool>(out), "cannot write the temporary recording folder");
  }
  agentcg::fuzz::check_import([&]() {
    return agentcg::import::import_agentcg_record_dir(folder.dir, agentcg::import::Options{});
  });
  return 0;
}
