// SPDX-License-Identifier: GPL-2.0-only
// Replay-and-mutate driver for the fuzz targets in builds without libFuzzer
// (gcc, the `ci` preset that `./agentcg selftest` runs): runs every file of
// the corpus folder through LLVMFuzzerTestOneInput, then a bounded number of
// mutated inputs (bit flips, byte sets, interesting tokens inserted, ranges
// deleted or duplicated, corpus splices) from a fixed seed, so a CI run is
// repeatable. It is the smoke test, not the fuzzer: coverage-guided runs use
// libFuzzer (fuzz/README.md). A broken invariant aborts (test fails); the
// last input is written to $AGENTCG_FUZZ_CRASH_FILE first when that is set.
//
// usage: fuzz_X CORPUS_DIR [--mutations N] [--seconds S] [--seed N] [--max-len BYTES]
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/fuzz_target.h"

namespace {

// splitmix64: a fixed, library-independent stream (std distributions differ
// between standard libraries).
struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(next() % n); }
};

// Tokens that reach the parsers' edge cases: structure, huge and negative
// numbers, bad UTF-8, YAML's complex keys and anchors.
const char* const kTokens[] = {
    "[", "]", "{", "}", "\"", ",", ":", "\n", "0", "-1", "1e400", "4294967296", "2147483648",
    "18446744073709551615", "4611686018427387904", "\xff", "\xc3\xa9", "\\u0000", "null", "true",
    "? ", "&a ", "*a", "- ", "  ", "[20000]", "prev_pid=-3", "filename= ", "pid=", "==>",
    "sched_switch: ", "sched_process_fork: ", "\"pid\":", "\"op\":", "\"repeat\"", "\"gpu\":",
};

std::string mutate(const std::string& in, const std::vector<std::string>& corpus, Rng& rng, std::size_t max_len) {
  std::string s = in;
  const int rounds = 1 + static_cast<int>(rng.below(4));
  for (int r = 0; r < rounds; ++r) {
    switch (rng.below(7)) {
      case 0:  // flip a bit
        if (!s.empty()) s[rng.below(s.size())] ^= static_cast<char>(1u << rng.below(8));
        break;
      case 1:  // set a byte
        if (!s.empty()) s[rng.below(s.size())] = static_cast<char>(rng.below(256));
        break;
      case 2: {  // insert a token
        const char* tok = kTokens[rng.below(std::size(kTokens))];
        s.insert(rng.below(s.size() + 1), tok);
        break;
      }
      case 3:  // delete a range
        if (!s.empty()) {
          const std::size_t at = rng.below(s.size());
          s.erase(at, 1 + rng.below(std::min<std::size_t>(64, s.size() - at)));
        }
        break;
      case 4:  // duplicate a range
        if (!s.empty()) {
          const std::size_t at = rng.below(s.size());
          const std::size_t n = 1 + rng.below(std::min<std::size_t>(256, s.size() - at));
          s.insert(rng.below(s.size() + 1), s.substr(at, n));
        }
        break;
      case 5: {  // splice with another corpus entry
        const std::string& o = corpus[rng.below(corpus.size())];
        if (!o.empty()) s = s.substr(0, rng.below(s.size() + 1)) + o.substr(rng.below(o.size()));
        break;
      }
      case 6: {  // replace a digit run with a huge number
        const std::size_t at = s.find_first_of("0123456789", rng.below(s.size() + 1));
        if (at != std::string::npos) {
          const std::size_t end = s.find_first_not_of("0123456789", at);
          s.replace(at, (end == std::string::npos ? s.size() : end) - at, "99999999999999999999");
        }
        break;
      }
    }
  }
  if (s.size() > max_len) s.resize(max_len);
  return s;
}

const std::string* g_current = nullptr;

void on_abort(int) {
  if (const char* path = std::getenv("AGENTCG_FUZZ_CRASH_FILE"); path != nullptr && g_current != nullptr) {
    std::ofstream(path, std::ios::binary) << *g_current;
  }
  std::signal(SIGABRT, SIG_DFL);
  std::raise(SIGABRT);
}

int run_one(const std::string& s) {
  g_current = &s;
  return LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " CORPUS_DIR [--mutations N] [--seconds S] [--seed N] [--max-len BYTES]\n";
    return 2;
  }
  std::uint64_t mutations = 10000, seed = 1;
  double seconds = 10;
  std::size_t max_len = 65536;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    try {
      if (k == "--mutations") mutations = std::stoull(v);
      else if (k == "--seconds") seconds = std::stod(v);
      else if (k == "--seed") seed = std::stoull(v);
      else if (k == "--max-len") max_len = std::stoull(v);
      else throw std::invalid_argument(k);
    } catch (const std::exception&) {
      std::cerr << argv[0] << ": bad option " << k << " " << v << "\n";
      return 2;
    }
  }
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(argv[1], ec))
    if (e.is_regular_file()) files.push_back(e.path());
  if (ec || files.empty()) {
    std::cerr << argv[0] << ": no corpus files in " << argv[1] << "\n";
    return 2;
  }
  std::sort(files.begin(), files.end());  // directory order is not deterministic
  std::vector<std::string> corpus;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    corpus.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::signal(SIGABRT, on_abort);
  for (const std::string& c : corpus) run_one(c);
  Rng rng{seed};
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t done = 0;
  for (; done < mutations; ++done) {
    // The wall-clock box keeps a slow machine's CI bounded; the count keeps
    // the inputs the same from run to run otherwise.
    if ((done & 63) == 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > seconds)
      break;
    const std::string m = mutate(corpus[rng.below(corpus.size())], corpus, rng, max_len);
    run_one(m);
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << argv[0] << ": " << corpus.size() << " corpus inputs + " << done << " mutations in " << took
            << " s, no findings\n";
  return 0;
}
