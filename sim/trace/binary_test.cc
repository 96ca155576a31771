// SPDX-License-Identifier: GPL-2.0-only
// Tests of the binary trace form (sim/trace/binary.cc) and `trace convert`:
// JSON -> binary -> JSON is byte for byte on every bundled trace and on
// generated ones (the gpu section included); a binary trace loads into the
// same Trace as its JSON, lines included, and simulates to the same
// results; a truncated, corrupt or hostile file is a TraceError naming the
// byte, never a crash.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "sim/api.h"
#include "sim/trace/trace.h"
#include "sim/trace/trace_commands.h"
#include "tests/support/test_paths.h"

namespace agentcg::trace {
namespace {

const char* const kBundled[] = {"agent", "fork-storm", "hogs", "io", "mixed"};

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("agentcg-binary-test-" + name)).string();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
}

// The TraceError message of parsing `bytes` ("" when it parses).
std::string binary_error(const std::string& bytes) {
  try {
    (void)parse_binary_trace(bytes.data(), bytes.size(), "t.agtb");
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

void expect_same_ops(const std::vector<Op>& a, const std::vector<Op>& b, const std::string& where);

void expect_same_process(const ProcessSpec& a, const ProcessSpec& b, const std::string& where) {
  EXPECT_EQ(a.pid, b.pid) << where;
  EXPECT_EQ(a.parent, b.parent) << where;
  EXPECT_EQ(a.cgroup, b.cgroup) << where;
  EXPECT_EQ(a.start_ns, b.start_ns) << where;
  EXPECT_EQ(a.comm, b.comm) << where;
  EXPECT_EQ(a.nice, b.nice) << where;
  EXPECT_EQ(a.agent.has_value(), b.agent.has_value()) << where;
  EXPECT_EQ(a.loc.line, b.loc.line) << where;
  EXPECT_EQ(a.loc.pointer, b.loc.pointer) << where;
  expect_same_ops(a.ops, b.ops, where + "/ops");
}

// Field by field, locations included (to_json_text() would miss the lines).
void expect_same_ops(const std::vector<Op>& a, const std::vector<Op>& b, const std::string& where) {
  ASSERT_EQ(a.size(), b.size()) << where;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string w = where + "/" + std::to_string(i);
    EXPECT_EQ(a[i].kind, b[i].kind) << w;
    EXPECT_EQ(a[i].loc.line, b[i].loc.line) << w;
    EXPECT_EQ(a[i].amount.dist, b[i].amount.dist) << w;
    EXPECT_EQ(a[i].amount.a, b[i].amount.a) << w;
    EXPECT_EQ(a[i].amount.b, b[i].amount.b) << w;
    EXPECT_EQ(a[i].amount.sigma, b[i].amount.sigma) << w;
    EXPECT_EQ(a[i].amount.max, b[i].amount.max) << w;
    EXPECT_EQ(a[i].pid(), b[i].pid()) << w;
    EXPECT_EQ(a[i].name(), b[i].name()) << w;
    EXPECT_EQ(a[i].step(), b[i].step()) << w;
    EXPECT_EQ(a[i].count(), b[i].count()) << w;
    EXPECT_EQ(a[i].waker(), b[i].waker()) << w;
    ASSERT_EQ(a[i].child() != nullptr, b[i].child() != nullptr) << w;
    if (a[i].child()) expect_same_process(*a[i].child(), *b[i].child(), w + "/child");
    expect_same_ops(a[i].body(), b[i].body(), w + "/body");
  }
}

void expect_same_trace(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.processes.size(), b.processes.size());
  for (std::size_t i = 0; i < a.processes.size(); ++i)
    expect_same_process(a.processes[i], b.processes[i], "/processes/" + std::to_string(i));
  ASSERT_EQ(a.cgroups.size(), b.cgroups.size());
  for (std::size_t i = 0; i < a.cgroups.size(); ++i) {
    EXPECT_EQ(a.cgroups[i].path, b.cgroups[i].path);
    EXPECT_EQ(a.cgroups[i].loc.line, b.cgroups[i].loc.line) << a.cgroups[i].path;
    EXPECT_EQ(a.cgroups[i].loc.pointer, b.cgroups[i].loc.pointer) << a.cgroups[i].path;
  }
  ASSERT_TRUE(a.lines && b.lines);
  EXPECT_EQ(a.lines->lines, b.lines->lines);
  EXPECT_EQ(to_json_text(a), to_json_text(b));
}

TEST(Binary, BundledTracesRoundTripByteForByte) {
  for (const char* kind : kBundled) {
    const std::string path = testing::source_path(std::string("traces/") + kind + ".json");
    if (path.empty()) GTEST_SKIP() << "traces/ not found from the working directory";
    const std::string text = testing::read_file(path);
    const Trace json_trace = parse_trace(text, path);
    const std::string bin = to_binary(json_trace);
    if (text.size() > 10000) {  // (small ones are mostly provenance and lines)
      EXPECT_LT(bin.size(), text.size() / 3) << kind;
    }
    const Trace bin_trace = parse_binary_trace(bin.data(), bin.size(), "x.agtb");
    EXPECT_EQ(to_json_text(bin_trace), text) << kind << ": binary -> JSON differs from the committed file";
    EXPECT_EQ(to_binary(bin_trace), bin) << kind << ": binary -> Trace -> binary is not a fixed point";
    expect_same_trace(json_trace, bin_trace);
    EXPECT_EQ(bin_trace.source, "x.agtb");
  }
}

TEST(Binary, EveryGeneratorRoundTripsByteForByte) {
  // Every kind, the GPU ones (whose "gpu" section is carried as JSON text)
  // included, at small sizes.
  for (const GeneratorKind& k : generator_kinds()) {
    std::map<std::string, std::string> opts;
    if (k.name == "agent") opts = {{"sessions", "40"}, {"cpus", "8"}, {"duration", "5s"}};
    const std::string text = to_json_text(generate(k.name, 3, opts));
    const Trace parsed = parse_trace(text, k.name + ".json");
    const std::string bin = to_binary(parsed);
    const Trace back = parse_binary_trace(bin.data(), bin.size(), k.name + ".agtb");
    EXPECT_EQ(to_json_text(back), text) << k.name;
    expect_same_trace(parsed, back);
    EXPECT_EQ(parsed.extra, back.extra) << k.name;
  }
}

TEST(Binary, HandFormattedJsonConvertsToWhatWriteWouldWrite) {
  // Keys out of the canonical order, odd blanks, a uniform value, nice, a
  // template with its own cgroup: the binary gives to_json_text(parse(text)),
  // and the lines of this text.
  const std::string text = R"({"version":1, "format":"agentcg-trace",
  "machine": {"cpus": 2, "context_switch_ns": 1500},
  "cgroups": [ {"path": "/a/b"}, {"path":"/a", "cpu_weight": 300, "cpu_max": {"quota_us": 50000}} ],
  "processes": [
    {"ops": [ {"op":"run","ns":{"max":9,"min":3,"dist":"uniform"}},
              {"op": "fork",
               "child": {"cgroup": "/a", "ops": [{"op": "exit"}]}},
              {"op":"mem","bytes":{"dist":"lognormal","median":1000,"sigma":0.25,"max":5000}} ],
     "pid": 4, "start_ns": 0, "nice": -3, "cgroup": "/a/b", "agent": {"session": "s"}}
  ]})";
  const Trace t = parse_trace(text, "hand.json");
  const std::string bin = to_binary(t);
  const Trace back = parse_binary_trace(bin.data(), bin.size(), "hand.agtb");
  EXPECT_EQ(to_json_text(back), to_json_text(t));
  expect_same_trace(t, back);
  EXPECT_EQ(back.processes[0].loc.line, 5u);
  EXPECT_EQ(back.processes[0].ops[1].loc.line, 6u);
  EXPECT_EQ(back.processes[0].ops[1].child()->loc.line, 7u);
  EXPECT_EQ(back.cgroups[0].path, "/a");  // parents first, as parsed
  EXPECT_EQ(back.cgroups[0].loc.pointer, "/cgroups/1");
  EXPECT_EQ(line_of(back, "/machine/context_switch_ns"), 2u);
}

TEST(Binary, LaterErrorsNameTheJsonLine) {
  // A 16-deep cgroup is valid for cfs but not for agentcg: the error found
  // after loading names the line of the JSON the binary came from.
  std::string cgroups, path;
  for (int i = 0; i < 16; ++i) {
    path += "/c" + std::to_string(i);
    cgroups += std::string(i ? ",\n" : "") + "  {\"path\": \"" + path + "\"}";
  }
  const std::string text = "{\"format\": \"agentcg-trace\", \"version\": 1,\n \"machine\": {\"cpus\": 1},\n"
                           "\"cgroups\": [\n" + cgroups + "],\n \"processes\": [{\"pid\": 1, \"start_ns\": 0, "
                           "\"ops\": [{\"op\": \"run\", \"ns\": 5}]}]}\n";
  const Trace t = parse_trace(text, "deep.json");
  const std::string bin = to_binary(t);
  const Trace back = parse_binary_trace(bin.data(), bin.size(), "deep.agtb");
  std::string from_json, from_binary;
  try {
    validate_for_policy(t, "agentcg");
  } catch (const TraceError& e) {
    from_json = e.what();
  }
  try {
    validate_for_policy(back, "agentcg");
  } catch (const TraceError& e) {
    from_binary = e.what();
  }
  ASSERT_EQ(from_json.rfind("deep.json:19: /cgroups/15/path: ", 0), 0u) << from_json;
  EXPECT_EQ(from_binary, "deep.agtb" + from_json.substr(std::string("deep.json").size()));
}

TEST(Binary, LoadTraceFileTellsTheFormsApartByTheirBytes) {
  const std::string path = testing::source_path("traces/io.json");
  if (path.empty()) GTEST_SKIP() << "traces/ not found";
  const Trace t = load_trace_file(path);
  // A binary trace under a .json name still loads as binary: the magic decides.
  const std::string bin_path = temp_path("io-as.json");
  write_binary_trace_file(t, bin_path);
  const Trace back = load_trace_file(bin_path);
  expect_same_trace(t, back);
  EXPECT_EQ(back.source, bin_path);
  std::filesystem::remove(bin_path);
}

TEST(Binary, SimulatesToTheSameResults) {
  for (const char* kind : {"agent", "fork-storm", "mixed"}) {
    const std::string path = testing::source_path(std::string("traces/") + kind + ".json");
    if (path.empty()) GTEST_SKIP() << "traces/ not found";
    const Trace t = load_trace_file(path);
    const std::string bin = to_binary(t);
    const Trace back = parse_binary_trace(bin.data(), bin.size(), "x.agtb");
    for (const char* policy : {"eevdf", "agentcg"}) {
      sim::RunOptions o;
      o.policy = policy;
      o.seed = 7;
      EXPECT_EQ(sim::run(t, o).dump(), sim::run(back, o).dump()) << kind << " " << policy;
    }
  }
  // A GPU trace: its section travels as JSON text.
  const Trace gpu = generate("gpu-oversub", 2, {});
  const std::string text = to_json_text(gpu);
  const Trace parsed = parse_trace(text, "gpu.json");
  const std::string bin = to_binary(parsed);
  const Trace back = parse_binary_trace(bin.data(), bin.size(), "gpu.agtb");
  sim::RunOptions o;
  o.gpu_policy = "nvshare";
  EXPECT_EQ(sim::run(parsed, o).dump(), sim::run(back, o).dump());
}

// A small binary trace with a bit of everything.
std::string small_binary() {
  const std::string text = R"({"format": "agentcg-trace", "version": 1, "name": "small", "duration_ns": 1000000000,
 "generator": {"kind": "hand", "seed": 1},
 "machine": {"cpus": 2, "wakeup_overhead_ns": 100},
 "cgroups": [{"path": "/a", "cpu_weight": 200, "memory_max": 1000000}],
 "processes": [{"pid": 1, "start_ns": 0, "cgroup": "/a", "comm": "x", "nice": 2, "agent": {"session": "s"},
   "ops": [{"op": "step", "step": 1}, {"op": "tool_begin", "tool": "Bash"},
     {"op": "fork", "child": {"comm": "c", "ops": [{"op": "run", "ns": {"dist": "exponential", "mean": 5, "max": 9}}]}},
     {"op": "repeat", "count": 1, "body": [{"op": "sleep", "ns": 10}, {"op": "fork", "pid": 2}]},
     {"op": "wait"}, {"op": "tool_end"}, {"op": "exec", "comm": "y"}]},
  {"pid": 2, "parent": 1, "ops": [{"op": "io", "ns": 3, "waker": 1}, {"op": "sleep", "ns": 4}]}]})";
  return to_binary(parse_trace(text, "small.json"));
}

// Version 1 (before a sleep's waker) still loads: the same trace without
// its waker byte. Where that byte is: the only one that differs between a
// sleep woken by pid 1 and one by pid 2.
TEST(Binary, VersionOneWithoutWakersLoads) {
  auto text = [](int waker) {
    return R"({"format": "agentcg-trace", "version": 1, "name": "w", "machine": {"cpus": 1},
 "processes": [{"pid": 1, "start_ns": 0, "ops": [{"op": "run", "ns": 5}]},
  {"pid": 2, "start_ns": 0, "ops": [{"op": "sleep", "ns": 10, "waker": )" + std::to_string(waker) +
           R"(}, {"op": "run", "ns": 7}]}]})";
  };
  const std::string one = to_binary(parse_trace(text(1), "w.json"));
  const std::string two = to_binary(parse_trace(text(2), "w.json"));
  ASSERT_EQ(one.size(), two.size());
  std::size_t at = 0, diffs = 0;
  for (std::size_t i = 0; i < one.size(); ++i)
    if (one[i] != two[i]) ++diffs, at = i;
  ASSERT_EQ(diffs, 1u);
  std::string v1 = one.substr(0, at) + one.substr(at + 1);
  v1[8] = 1;
  const Trace t = parse_binary_trace(v1.data(), v1.size(), "v1.agtb");
  ASSERT_EQ(t.processes.size(), 2u);
  ASSERT_EQ(t.processes[1].ops.size(), 2u);
  EXPECT_EQ(t.processes[1].ops[0].kind, OpKind::kSleep);
  EXPECT_EQ(t.processes[1].ops[0].amount.a, 10u);
  EXPECT_EQ(t.processes[1].ops[0].waker(), 0);
  EXPECT_EQ(t.processes[1].ops[1].amount.a, 7u);
  // and version 2 keeps it
  EXPECT_EQ(parse_binary_trace(one.data(), one.size(), "v2.agtb").processes[1].ops[0].waker(), 1);
}

// A real-time priority and policy (version 3) round-trip, in a listed
// process and a fork template; a version 2 file cannot carry them (its
// process flags stop at 8), and a priority outside 0..99 or SCHED_RR
// without a priority is the reader's error, as the JSON parser's.
TEST(Binary, RealTimePrioritiesRoundTripFromVersionThree) {
  const std::string text = R"({"format": "agentcg-trace", "version": 1, "name": "rt", "machine": {"cpus": 1},
 "processes": [{"pid": 1, "start_ns": 0, "rt_priority": 50, "rt_policy": "rr", "ops": [
  {"op": "fork", "child": {"comm": "w", "rt_priority": 0, "ops": [{"op": "run", "ns": 5}]}}]},
  {"pid": 2, "start_ns": 0, "rt_priority": 7, "ops": [{"op": "run", "ns": 7}]}]})";
  const Trace parsed = parse_trace(text, "rt.json");
  const std::string bin = to_binary(parsed);
  const Trace back = parse_binary_trace(bin.data(), bin.size(), "rt.agtb");
  EXPECT_EQ(to_json_text(back), to_json_text(parsed));
  EXPECT_EQ(back.processes[0].rt_priority, std::optional<std::int32_t>(50));
  EXPECT_TRUE(back.processes[0].rt_round_robin);
  EXPECT_EQ(back.processes[0].ops[0].child()->rt_priority, std::optional<std::int32_t>(0));
  EXPECT_FALSE(back.processes[1].rt_round_robin);
  std::string v2 = bin;
  v2[8] = 2;
  EXPECT_NE(binary_error(v2).find("a process's flags"), std::string::npos) << binary_error(v2);
  Trace t = parsed;
  t.processes[1].rt_priority = 100;
  EXPECT_NE(binary_error(to_binary(t)).find("expected a real-time priority (an integer in 1..99, or 0 for the fair "
                                            "class), got 100"),
            std::string::npos);
  t = parsed;
  t.processes[1].rt_priority.reset();
  t.processes[1].rt_round_robin = true;
  EXPECT_NE(binary_error(to_binary(t)).find("a real-time policy (SCHED_RR) without a real-time priority 1..99"),
            std::string::npos)
      << binary_error(to_binary(t));
}

TEST(Binary, SmallTraceParses) {
  const std::string bin = small_binary();
  EXPECT_EQ(binary_error(bin), "");
}

TEST(Binary, TruncationAtEveryByteIsAnErrorNamingTheByte) {
  const std::string bin = small_binary();
  ASSERT_GT(bin.size(), 100u);
  for (std::size_t n = 0; n < bin.size(); ++n) {
    const std::string cut = bin.substr(0, n);
    const std::string e = binary_error(cut);
    ASSERT_NE(e, "") << "a prefix of " << n << " bytes parsed";
    EXPECT_EQ(e.rfind("t.agtb: /", 0), 0u) << e;
    EXPECT_NE(e.find(": binary trace, byte "), std::string::npos) << e;
  }
  // Through the file loader too, at a few offsets.
  const std::string path = temp_path("cut.agtb");
  for (std::size_t n : {std::size_t{1}, std::size_t{8}, std::size_t{30}, bin.size() - 1}) {
    write_bytes(path, bin.substr(0, n));
    EXPECT_THROW((void)load_trace_file(path), TraceError) << n;
  }
  std::filesystem::remove(path);
  EXPECT_EQ(binary_error(bin + "x"), "t.agtb: /: binary trace, byte " + std::to_string(bin.size()) +
                                          ": 1 bytes after the end of the trace; expected the file to end there");
}

// What read_binary_trace() makes of `bytes` in a file, read `window` bytes
// at a time: to_binary() of its trace, or its error.
std::string read_through_window(const std::string& bytes, std::size_t window) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::tmpfile(), &std::fclose);
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f.get()) != bytes.size()) return "tmpfile failed";
  std::rewind(f.get());
  try {
    return to_binary(read_binary_trace(f.get(), bytes.size(), "t.agtb", window));
  } catch (const TraceError& e) {
    return e.what();
  }
}

TEST(Binary, FileReadThroughAWindowGivesWhatTheBytesGive) {
  // load_trace_file() reads a binary file through a 1 MiB window: through
  // windows of a few bytes, so that reads of every kind cross window ends,
  // the small trace, every prefix of it, every byte of it changed and bytes
  // after its end give the same trace or the same error as in memory.
  const std::string bin = small_binary();
  std::vector<std::string> inputs{bin, bin + "x"};
  for (std::size_t n = 0; n < bin.size(); ++n) inputs.push_back(bin.substr(0, n));
  for (std::size_t i = 0; i < bin.size(); ++i) {
    for (const char flip : {'\x01', '\x80'}) {
      std::string m = bin;
      m[i] = static_cast<char>(m[i] ^ flip);
      inputs.push_back(m);
    }
  }
  for (const std::string& in : inputs) {
    std::string want = binary_error(in);
    if (want.empty()) want = to_binary(parse_binary_trace(in.data(), in.size(), "t.agtb"));
    for (const std::size_t window : {std::size_t{1}, std::size_t{3}, std::size_t{7}, kBinaryReadWindow})
      ASSERT_EQ(read_through_window(in, window), want) << in.size() << " bytes, window " << window;
  }
  // A file shorter than the size it was said to have (changed while read).
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::tmpfile(), &std::fclose);
  ASSERT_TRUE(f);
  ASSERT_EQ(std::fwrite(bin.data(), 1, bin.size(), f.get()), bin.size());
  std::rewind(f.get());
  try {
    (void)read_binary_trace(f.get(), bin.size() + 10, "t.agtb", 16);
    ADD_FAILURE() << "loaded";
  } catch (const TraceError& e) {
    EXPECT_EQ(std::string(e.what()), "t.agtb: /: read error");
  }
}

TEST(Binary, StringPastTheEndSaysWhereAndWhat) {
  std::string bin = small_binary();
  // The tool name's length byte, claiming 100 bytes: the error names the op.
  const std::size_t at = bin.find("Bash");
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bin[at - 1], 4);
  bin[at - 1] = 100;
  const std::string e = binary_error(bin);
  EXPECT_EQ(e.rfind("t.agtb: /processes/0/ops/1: binary trace, byte " + std::to_string(at - 1) +
                        ": a tool name of 100 bytes runs past the end of the file (",
                    0),
            0u)
      << e;
  EXPECT_NE(e.find("bytes left); expected a string that fits (a truncated file?)"), std::string::npos) << e;
}

std::string varint_bytes(std::uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>((v & 0x7f) | 0x80));
  out.push_back(static_cast<char>(v));
  return out;
}

TEST(Binary, LengthsBeyondTheFileAreErrorsBeforeAnyAllocation) {
  const std::string bin = small_binary();
  // The name's length is the byte after the header (12) and the version (1):
  // claim 2^62 bytes.
  ASSERT_EQ(bin[13], 5);  // "small"
  const std::string huge = bin.substr(0, 13) + varint_bytes(std::uint64_t{1} << 62) + bin.substr(14);
  std::string e = binary_error(huge);
  EXPECT_NE(e.find("/: binary trace, byte 13: the name of 4611686018427387904 bytes runs past the end of the file"),
            std::string::npos)
      << e;
  // A process count of 10^12: refused from the bytes left, nothing reserved.
  Trace none = parse_binary_trace(bin.data(), bin.size(), "t.agtb");
  none.processes.clear();
  const std::string head = to_binary(none);
  ASSERT_EQ(head.back(), 0);  // the process count
  const std::string prefix = head.substr(0, head.size() - 1);
  e = binary_error(prefix + varint_bytes(1000000000000ULL));
  EXPECT_NE(e.find("/processes: binary trace, byte " + std::to_string(prefix.size()) +
                   ": a process count of 1000000000000 takes at least 7 bytes each, more than the 0 bytes left"),
            std::string::npos)
      << e;
  // Nested lists that each claim most of the file: a process whose op list
  // claims half the bytes left, its first op a repeat whose body claims the
  // rest. Each fits the bytes left; together they overdraw the file-wide
  // budget, so nested counts cannot multiply what gets reserved.
  const std::string padding(20000, '\0');
  std::string process = "\x01";             // one process
  process += std::string("\x00\x02", 2);     // flags, pid 1
  process += std::string("\x01/\x00", 3);    // cgroup "/", comm ""
  process += std::string("\x00\x00", 2);     // loc: line 0, pointer ""
  const std::string body = varint_bytes(padding.size() / 2);
  const std::string repeat = std::string("\x08\x00\x01", 3) + body;  // kind, line, count 1, body count
  const std::size_t after_ops_count = repeat.size() + padding.size();
  process += varint_bytes(after_ops_count / 2) + repeat + padding;
  e = binary_error(prefix + process);
  EXPECT_NE(e.find("/processes/0/ops/0/body: binary trace, byte "), std::string::npos) << e;
  EXPECT_NE(e.find("an op count of 10000: with the lists before it, more elements than the file's bytes can hold"),
            std::string::npos)
      << e;
}

TEST(Binary, WrongMagicAndVersion) {
  const std::string bin = small_binary();
  std::string m = bin;
  m[2] = 'X';
  EXPECT_EQ(binary_error(m),
            "t.agtb: /: binary trace, byte 2: not an agentcg binary trace; expected the magic bytes 89 41 47 54 42 0d "
            "0a 1a (\\x89AGTB\\r\\n\\x1a) at the start, or JSON text");
  std::string v = bin;
  v[8] = 4;
  EXPECT_EQ(binary_error(v), "t.agtb: /: binary trace, byte 8: binary format version 4; this build reads versions "
                             "1..3 only (convert the JSON trace again with its trace convert)");
  v[8] = 0;
  EXPECT_EQ(binary_error(v), "t.agtb: /: binary trace, byte 8: binary format version 0; this build reads versions "
                             "1..3 only (convert the JSON trace again with its trace convert)");
  EXPECT_EQ(binary_error(std::string("\x89", 1)),
            "t.agtb: /: binary trace, byte 1: the file ends inside the magic bytes; expected more bytes (a "
            "truncated file?)");
  // Through load_trace_file: the first byte picks the binary reader.
  const std::string path = temp_path("magic.agtb");
  write_bytes(path, m);
  try {
    (void)load_trace_file(path);
    ADD_FAILURE() << "loaded";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_NE(e.message().find("not an agentcg binary trace"), std::string::npos);
  }
  std::filesystem::remove(path);
}

TEST(Binary, BadFieldsAreErrors) {
  const std::string bin = small_binary();
  const std::size_t tool = bin.find("Bash");
  // The op kind byte of the op after tool_begin (the fork): kind(1) line(1+).
  const std::size_t fork_at = tool + 4;
  ASSERT_EQ(bin[fork_at], static_cast<char>(OpKind::kFork));
  std::string k = bin;
  k[fork_at] = 42;
  EXPECT_EQ(binary_error(k), "t.agtb: /processes/0/ops/2: binary trace, byte " + std::to_string(fork_at) +
                                 ": expected an op kind (0..11), got 42");
  // Semantic checks are validate()'s, as for JSON: an unknown cgroup.
  Trace t = parse_binary_trace(bin.data(), bin.size(), "t.agtb");
  t.processes[1].cgroup = "/nope";
  const std::string e = binary_error(to_binary(t));
  EXPECT_NE(e.find("/processes/1/cgroup: unknown cgroup \"/nope\""), std::string::npos) << e;
  // nice outside -20..19 (the parser's check, not validate()'s).
  t = parse_binary_trace(bin.data(), bin.size(), "t.agtb");
  t.processes[0].nice = 40;
  EXPECT_NE(binary_error(to_binary(t)).find("/processes/0: binary trace, byte "), std::string::npos);
  EXPECT_NE(binary_error(to_binary(t)).find("expected a nice value (an integer in -20..19), got 40"),
            std::string::npos);
}

TEST(Binary, NestingIsCapped) {
  // Fork templates nested 70 deep (built in code: the JSON parser's depth cap
  // stops them at about 40): refused while reading, before validate().
  Trace t;
  t.name = "deep";
  ProcessSpec p;
  p.pid = 1;
  p.start_ns = 0;
  std::shared_ptr<const ProcessSpec> inner;
  for (int i = 0; i < 70; ++i) {
    ProcessSpec c;
    c.cgroup.clear();
    Op f;
    f.kind = OpKind::kFork;
    if (inner) {
      f.set_child(inner);
      c.ops.push_back(f);
    }
    inner = std::make_shared<const ProcessSpec>(c);
  }
  Op f;
  f.kind = OpKind::kFork;
  f.set_child(inner);
  p.ops.push_back(f);
  t.processes.push_back(p);
  const std::string e = binary_error(to_binary(t));
  EXPECT_NE(e.find("repeat bodies and fork templates nested more than 64 deep"), std::string::npos) << e;
  EXPECT_EQ(e.rfind("t.agtb: /processes/0/ops/0/child/ops/0/child/", 0), 0u) << e;
}

TEST(Binary, ConvertCommand) {
  const std::string src = testing::source_path("traces/hogs.json");
  if (src.empty()) GTEST_SKIP() << "traces/ not found";
  const std::string bin = temp_path("hogs.agtb"), back = temp_path("hogs-back.json");
  std::ostringstream out, err;
  EXPECT_EQ(convert_command({src, bin}, out, err), 0) << err.str();
  EXPECT_NE(out.str().find(bin + ": binary trace, "), std::string::npos) << out.str();
  EXPECT_EQ(convert_command({bin, back}, out, err), 0) << err.str();
  EXPECT_EQ(testing::read_file(back), testing::read_file(src));
  std::ostringstream text, e2;
  EXPECT_EQ(convert_command({bin, "-"}, text, e2), 0);
  EXPECT_EQ(text.str(), testing::read_file(src));
  // The output name must fit the form written.
  std::ostringstream o3, e3;
  EXPECT_EQ(convert_command({src, temp_path("x.json")}, o3, e3), 2);
  EXPECT_NE(e3.str().find("expected an OUT name ending .agtb"), std::string::npos) << e3.str();
  EXPECT_EQ(convert_command({src, "-"}, o3, e3), 2);
  EXPECT_EQ(convert_command({bin, temp_path("x.agtb")}, o3, e3), 2);
  EXPECT_EQ(convert_command({src}, o3, e3), 2);
  // A bad input: the loader's error, exit 1; validate takes binary too.
  const std::string cut = temp_path("cut2.agtb");
  write_bytes(cut, testing::read_file(bin).substr(0, 40));
  std::ostringstream o4, e4;
  EXPECT_EQ(convert_command({cut, back}, o4, e4), 1);
  EXPECT_EQ(e4.str().rfind(cut + ": /", 0), 0u) << e4.str();
  std::ostringstream o5, e5;
  EXPECT_EQ(validate_command({bin}, o5, e5), 0) << e5.str();
  const Trace hogs = load_trace_file(src);
  EXPECT_EQ(o5.str(), bin + ": valid (" + std::to_string(hogs.processes.size()) + " processes, " +
                          std::to_string(hogs.cgroups.size()) + " cgroups)\n");
  for (const std::string& f : {bin, back, cut}) std::filesystem::remove(f);
}

}  // namespace
}  // namespace agentcg::trace
