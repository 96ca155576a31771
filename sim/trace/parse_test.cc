// SPDX-License-Identifier: GPL-2.0-only
// Tests of parse_trace / validate / to_json_text: every field survives a
// round trip, errors carry file, line and pointer, and the "gpu" section is
// carried through untouched with its lines available to its own parser.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "sim/trace/line_iterator.h"
#include "sim/trace/trace.h"

namespace agentcg::trace {
namespace {

// Every field of the format at least once.
const char* kFull = R"({
 "format": "agentcg-trace",
 "version": 1,
 "name": "full",
 "description": "all fields",
 "duration_ns": 5000000000,
 "generator": {"kind": "hand", "seed": 3, "options": {}},
 "machine": {"cpus": 4, "context_switch_ns": 2000, "wakeup_overhead_ns": 1500},
 "cgroups": [
  {"path": "/a/b", "cpu_weight": 50},
  {"path": "/", "cpu_weight": 100},
  {"path": "/a", "cpu_weight": 200, "cpu_max": {"quota_us": 50000, "period_us": 100000},
   "memory_high": 1000000, "memory_max": 2000000}
 ],
 "processes": [
  {"pid": 1, "start_ns": 0, "cgroup": "/a", "comm": "agent", "agent": {"session": "s1"}, "ops": [
   {"op": "step", "step": 1},
   {"op": "sleep", "ns": {"dist": "lognormal", "median": 3000000, "sigma": 0.5, "max": 9000000}},
   {"op": "tool_begin", "tool": "Bash"},
   {"op": "fork", "pid": 2},
   {"op": "fork", "child": {"comm": "cc1", "cgroup": "/a/b", "agent": {"session": "s1"},
     "ops": [{"op": "run", "ns": {"dist": "uniform", "min": 10, "max": 20}}]}},
   {"op": "fork", "child": {"ops": [{"op": "io", "ns": {"dist": "exponential", "mean": 400, "max": 4000}}]}},
   {"op": "wait"},
   {"op": "tool_end"},
   {"op": "repeat", "count": 3, "body": [{"op": "run", "ns": 100}, {"op": "io", "ns": 200}]},
   {"op": "mem", "bytes": {"dist": "lognormal", "median": 1048576, "sigma": 0.25}},
   {"op": "exec", "comm": "node"},
   {"op": "exit"}
  ]},
  {"pid": 2, "parent": 1, "cgroup": "/a/b", "comm": "bash", "ops": [{"op": "mem", "bytes": 4096}]}
 ],
 "gpu": {"gpus": [{"memory_gb": 16}], "jobs": [
  {"id": "j", "memory_bytes": 100, "iterations": 1, "kernel_ns": 1}
 ]}
})";

TEST(Parse, ReadsEveryField) {
  const Trace t = parse_trace(kFull, "full.json");
  EXPECT_EQ(t.name, "full");
  EXPECT_EQ(t.description, "all fields");
  ASSERT_TRUE(t.duration_ns);
  EXPECT_EQ(*t.duration_ns, 5000000000u);
  EXPECT_EQ(t.generator["seed"], 3);
  EXPECT_EQ(t.machine.cpus, 4u);
  EXPECT_EQ(t.machine.context_switch_ns, 2000u);
  EXPECT_EQ(t.machine.wakeup_overhead_ns, 1500u);
  // Parents first, otherwise in the listed order.
  ASSERT_EQ(t.cgroups.size(), 3u);
  EXPECT_EQ(t.cgroups[0].path, "/");
  EXPECT_EQ(t.cgroups[1].path, "/a");
  EXPECT_EQ(t.cgroups[2].path, "/a/b");
  EXPECT_EQ(t.cgroups[1].cpu_weight, 200u);
  ASSERT_TRUE(t.cgroups[1].cpu_max);
  EXPECT_EQ(t.cgroups[1].cpu_max->quota_us, 50000u);
  EXPECT_EQ(t.cgroups[1].memory_high, 1000000u);
  EXPECT_EQ(t.cgroups[1].memory_max, 2000000u);
  EXPECT_EQ(t.cgroups[1].loc.pointer, "/cgroups/2");
  EXPECT_EQ(t.cgroups[1].loc.line, 12u);
  ASSERT_EQ(t.processes.size(), 2u);
  const ProcessSpec& p = t.processes[0];
  EXPECT_EQ(p.pid, 1);
  EXPECT_EQ(p.cgroup, "/a");
  ASSERT_TRUE(p.agent);
  EXPECT_EQ(p.agent->session, "s1");
  ASSERT_EQ(p.ops.size(), 12u);
  EXPECT_EQ(p.ops[0].kind, OpKind::kStep);
  EXPECT_EQ(p.ops[0].step(), 1u);
  EXPECT_EQ(p.ops[1].kind, OpKind::kSleep);
  EXPECT_EQ(p.ops[1].amount.dist, Value::Dist::kLogNormal);
  EXPECT_EQ(p.ops[1].amount.a, 3000000u);
  EXPECT_DOUBLE_EQ(p.ops[1].amount.sigma, 0.5);
  EXPECT_EQ(p.ops[1].amount.max, 9000000u);
  EXPECT_EQ(p.ops[2].name(), "Bash");
  EXPECT_EQ(p.ops[3].pid(), 2);
  ASSERT_TRUE(p.ops[4].child());
  EXPECT_EQ(p.ops[4].child()->cgroup, "/a/b");
  EXPECT_EQ(p.ops[4].child()->ops[0].amount.dist, Value::Dist::kUniform);
  EXPECT_EQ(p.ops[4].child()->ops[0].amount.b, 20u);
  ASSERT_TRUE(p.ops[5].child());
  EXPECT_EQ(p.ops[5].child()->cgroup, "");  // the parent's cgroup
  EXPECT_EQ(p.ops[5].child()->ops[0].amount.dist, Value::Dist::kExponential);
  EXPECT_EQ(p.ops[5].child()->ops[0].amount.max, 4000u);
  EXPECT_EQ(p.ops[8].kind, OpKind::kRepeat);
  EXPECT_EQ(p.ops[8].count(), 3u);
  EXPECT_EQ(p.ops[8].body().size(), 2u);
  EXPECT_EQ(p.ops[9].amount.dist, Value::Dist::kLogNormal);
  EXPECT_EQ(p.ops[10].name(), "node");
  EXPECT_EQ(p.ops[11].kind, OpKind::kExit);
  EXPECT_EQ(p.ops[8].loc.line, 26u);  // ops keep their line, not their pointer
  EXPECT_EQ(p.ops[4].child()->loc.line, 21u);  // a template: the line of its "child" key
  EXPECT_EQ(t.processes[1].loc.pointer, "/processes/1");
  EXPECT_EQ(t.processes[1].loc.line, 31u);
  EXPECT_FALSE(t.processes[1].start_ns);
  EXPECT_EQ(t.processes[1].parent, 1);
  EXPECT_EQ(t.extra["gpu"]["gpus"][0]["memory_gb"], 16);
}

TEST(Parse, LineOfFindsNearestEnclosingPointer) {
  const Trace t = parse_trace(kFull, "full.json");
  ASSERT_TRUE(t.lines);
  EXPECT_EQ(line_of(t, ""), 1u);
  EXPECT_EQ(line_of(t, "/machine/cpus"), 8u);
  EXPECT_EQ(line_of(t, "/gpu"), 33u);
  EXPECT_EQ(line_of(t, "/gpu/jobs/0"), 34u);
  EXPECT_EQ(line_of(t, "/gpu/jobs/0/missing/deeper"), 34u);
  // Inside the processes only parse_trace() itself can find a field's line
  // (by a rescan of the text); afterwards it is unknown and callers use the
  // element's SourceLoc.
  EXPECT_EQ(line_of(t, "/processes/1/ops/0/bytes"), 0u);
  Trace code_built;
  EXPECT_EQ(line_of(code_built, "/gpu"), 0u);
}

// A minimal valid trace with `procs` as its processes and `tail` after them.
std::string small_trace(const std::string& procs, const std::string& tail = "") {
  return "{\n \"format\": \"agentcg-trace\",\n \"version\": 1,\n \"machine\": {\"cpus\": 1},\n \"processes\": [\n" + procs +
         "\n ]" + tail + "\n}\n";
}

std::string error_of(const std::string& text) {
  try {
    (void)parse_trace(text, "t.json");
  } catch (const TraceError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Parse, FieldOnItsOwnLineInsideAProcessIsNamedAtItsLine) {
  // The streaming parser keeps no line map inside processes: the field's
  // line comes from a rescan when the error is reported.
  const std::string procs =
      "  {\"pid\": 1, \"start_ns\": 0, \"ops\": [\n   {\"op\": \"run\",\n    \"ns\": -5}\n  ]}";
  EXPECT_EQ(error_of(small_trace(procs)),
            "t.json:8: /processes/0/ops/0/ns: expected a non-negative integer (ns) or a distribution object "
            "({\"dist\":\"uniform\",\"min\":..,\"max\":..}, {\"dist\":\"exponential\",\"mean\":..}, "
            "{\"dist\":\"lognormal\",\"median\":..,\"sigma\":..}), got -5");
  // A cross-element error (validate) on a field line of its own.
  const std::string fork =
      "  {\"pid\": 1, \"start_ns\": 0, \"ops\": [{\"op\": \"fork\",\n   \"pid\": 7}]}";
  EXPECT_EQ(error_of(small_trace(fork)), "t.json:7: /processes/0/ops/0/pid: fork of unknown pid 7; expected a listed pid");
}

TEST(Parse, ErrorsComeInTheOrderOfTheDocumentChecks) {
  const std::string bad_proc = "  {\"pid\": 1, \"start_ns\": 0, \"ops\": [{\"op\": \"nope\"}]}";
  // A bad process is held back: a bad key of the root (checked first) wins,
  const std::string unknown_root = error_of(small_trace(bad_proc, ",\n \"zzz\": 1"));
  EXPECT_NE(unknown_root.find("/zzz: unknown key"), std::string::npos) << unknown_root;
  // and so does a syntax error or a duplicate key later in the text.
  const std::string syntax = error_of(small_trace(bad_proc, ",\n \"gpu\": [1,]"));
  EXPECT_NE(syntax.find("invalid JSON"), std::string::npos) << syntax;
  const std::string dup = error_of(small_trace(bad_proc, ",\n \"name\": \"a\", \"name\": \"b\""));
  EXPECT_NE(dup.find("/name: duplicate key"), std::string::npos) << dup;
  // Alone, the process's own error is reported with its line.
  EXPECT_EQ(error_of(small_trace(bad_proc)),
            "t.json:6: /processes/0/ops/0/op: unknown op \"nope\"; expected run, sleep, io, fork, exec, wait, exit, "
            "mem, repeat, tool_begin, tool_end or step");
}

TEST(Load, FileAndTextGiveTheSameTraceAndErrors) {
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "/load_good.json";
  const std::string bad = dir + "/load_bad.json";
  {
    std::FILE* f = std::fopen(good.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs(kFull, f);
    std::fclose(f);
    const std::string procs =
        "  {\"pid\": 1, \"start_ns\": 0, \"ops\": [\n   {\"op\": \"run\",\n    \"ns\": -5}\n  ]}";
    f = std::fopen(bad.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs(small_trace(procs).c_str(), f);
    std::fclose(f);
  }
  EXPECT_EQ(to_json_text(load_trace_file(good)), to_json_text(parse_trace(kFull, good)));
  std::string from_file;
  try {
    (void)load_trace_file(bad);
  } catch (const TraceError& e) {
    from_file = e.what();
  }
  const std::string procs =
      "  {\"pid\": 1, \"start_ns\": 0, \"ops\": [\n   {\"op\": \"run\",\n    \"ns\": -5}\n  ]}";
  std::string from_text;
  try {
    (void)parse_trace(small_trace(procs), bad);
  } catch (const TraceError& e) {
    from_text = e.what();
  }
  EXPECT_EQ(from_file, from_text);
  EXPECT_EQ(from_file.find(bad + ":8: /processes/0/ops/0/ns: expected"), 0u) << from_file;
}

TEST(Parse, NumberAtEndOfLineIsOnItsOwnLine) {
  // The lexer reads one character past a number: the newline after it must
  // not push the number onto the next line.
  const char* text = "{\n \"format\": \"agentcg-trace\",\n \"version\": 1,\n \"machine\": {\"cpus\": 1},\n"
                     " \"processes\": [\n  7\n ]\n}\n";
  try {
    parse_trace(text, "n.json");
    FAIL() << "expected a TraceError";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.line(), 6u);
    EXPECT_EQ(e.pointer(), "/processes/0");
  }
}

TEST(Parse, RoundTripIsAFixedPoint) {
  const Trace t = parse_trace(kFull, "full.json");
  const std::string text = to_json_text(t);
  const Trace t2 = parse_trace(text, "again.json");
  EXPECT_EQ(to_json(t2), to_json(t));
  EXPECT_EQ(to_json_text(t2), text);
  EXPECT_EQ(text.back(), '\n');
  // Absent optional fields stay absent; the gpu section is unchanged.
  EXPECT_FALSE(t2.processes[1].start_ns);
  EXPECT_EQ(t2.extra["gpu"], t.extra["gpu"]);
  EXPECT_EQ(t2.processes[0].ops[5].child()->cgroup, "");
}

TEST(Parse, ErrorMessageNamesFileLinePointerAndExpectation) {
  const char* text = "{\n \"format\": \"agentcg-trace\",\n \"version\": 1,\n \"machine\": {\"cpus\": 1},\n"
                     " \"processes\": [{\"pid\": 1, \"start_ns\": 0, \"ops\": [\n  {\"op\": \"run\", \"ns\": -5}\n ]}]\n}\n";
  try {
    parse_trace(text, "bad.json");
    FAIL() << "expected a TraceError";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.file(), "bad.json");
    EXPECT_EQ(e.line(), 6u);
    EXPECT_EQ(e.pointer(), "/processes/0/ops/0/ns");
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("bad.json:6: /processes/0/ops/0/ns: expected a non-negative integer", 0), 0u) << what;
    EXPECT_NE(what.find("got -5"), std::string::npos) << what;
  }
}

// nice: -20..19 on listed processes and templates, written back; out of
// range or not an integer is a located error.
TEST(Parse, NiceIsReadWrittenAndChecked) {
  const char* ok = "{\"format\": \"agentcg-trace\", \"version\": 1, \"machine\": {\"cpus\": 1},\n"
                   " \"processes\": [{\"pid\": 1, \"start_ns\": 0, \"nice\": 10, \"ops\": [\n"
                   "  {\"op\": \"fork\", \"child\": {\"nice\": -5, \"ops\": [{\"op\": \"run\", \"ns\": 5}]}}]}]}\n";
  const Trace t = parse_trace(ok, "nice.json");
  EXPECT_EQ(t.processes[0].nice, std::optional<std::int32_t>(10));
  EXPECT_EQ(t.processes[0].ops[0].child()->nice, std::optional<std::int32_t>(-5));
  EXPECT_EQ(to_json(parse_trace(to_json_text(t), "again.json")), to_json(t));
  for (const char* bad : {"20", "-21", "1.5", "\"low\""}) {
    const std::string text = std::string("{\"format\": \"agentcg-trace\", \"version\": 1, \"machine\": {\"cpus\": 1},\n"
                                         " \"processes\": [{\"pid\": 1, \"start_ns\": 0,\n  \"nice\": ") +
                             bad + ", \"ops\": []}]}\n";
    try {
      parse_trace(text, "bad.json");
      ADD_FAILURE() << "expected a TraceError for nice " << bad;
    } catch (const TraceError& e) {
      EXPECT_EQ(e.line(), 3u) << bad;
      EXPECT_EQ(e.pointer(), "/processes/0/nice") << bad;
      EXPECT_NE(std::string(e.what()).find("-20..19"), std::string::npos) << e.what();
    }
  }
}

TEST(Parse, PointerEscapesSlashAndTilde) {
  const char* text = "{\"format\": \"agentcg-trace\", \"version\": 1, \"machine\": {\"cpus\": 1}, \"processes\": [],\n"
                     " \"a/b~c\": 1}";
  try {
    parse_trace(text, "k.json");
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_EQ(e.pointer(), "/a~1b~0c");
    EXPECT_EQ(e.line(), 2u);
  }
}

TEST(Validate, CodeBuiltTraceErrorsNamePointer) {
  Trace t;
  t.machine.cpus = 2;
  ProcessSpec p;
  p.pid = 1;
  p.start_ns = 0;
  p.cgroup = "/nope";
  t.processes.push_back(p);
  try {
    validate(t);
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_EQ(e.line(), 0u);
    EXPECT_NE(std::string(e.what()).find("unknown cgroup \"/nope\""), std::string::npos);
  }
  t.processes[0].cgroup = "/";
  EXPECT_NO_THROW(validate(t));
  t.machine.cpus = 5000;
  EXPECT_THROW(validate(t), TraceError);
}

TEST(Validate, CgroupsMayBeListedChildFirst) {
  Trace t;
  CgroupSpec child, parent;
  child.path = "/x/y";
  parent.path = "/x";
  t.cgroups = {child, parent};
  EXPECT_NO_THROW(validate(t));
}

TEST(Validate, ForkOfListedPidStartsIt) {
  const char* text = R"({"format": "agentcg-trace", "version": 1, "machine": {"cpus": 1}, "processes": [
    {"pid": 1, "start_ns": 0, "ops": [{"op": "fork", "pid": 2}, {"op": "wait"}]},
    {"pid": 2, "ops": [{"op": "fork", "pid": 3}]},
    {"pid": 3, "parent": 2, "ops": []}]})";
  EXPECT_NO_THROW(parse_trace(text, "ok.json"));
  const char* wrong_parent = R"({"format": "agentcg-trace", "version": 1, "machine": {"cpus": 1}, "processes": [
    {"pid": 1, "start_ns": 0, "ops": [{"op": "fork", "pid": 2}]},
    {"pid": 2, "parent": 3, "ops": []},
    {"pid": 3, "start_ns": 0, "ops": []}]})";
  EXPECT_THROW(parse_trace(wrong_parent, "bad.json"), TraceError);
  const char* started_twice = R"({"format": "agentcg-trace", "version": 1, "machine": {"cpus": 1}, "processes": [
    {"pid": 1, "start_ns": 0, "ops": [{"op": "fork", "pid": 2}]},
    {"pid": 2, "start_ns": 5, "ops": []}]})";
  EXPECT_THROW(parse_trace(started_twice, "bad.json"), TraceError);
}

// Issue 17: a 100k-deep array (200 KB) took 47 s and 13.6 GB before a
// bad_alloc, a 1,000-deep one overflowed the stack in the error path. Now
// both stop at the depth limit with the line where it was crossed.
TEST(Parse, HostileNestingStopsAtTheDepthLimit) {
  for (const std::size_t depth : {std::size_t{1000}, std::size_t{100000}}) {
    const std::string text = "{\"format\": \"agentcg-trace\",\n \"generator\": " + std::string(depth, '[') +
                             std::string(depth, ']') + "}";
    try {
      parse_trace(text, "deep.json");
      FAIL() << depth;
    } catch (const TraceError& e) {
      EXPECT_EQ(e.line(), 2u) << e.what();
      EXPECT_NE(e.message().find("nested more than 128"), std::string::npos) << e.what();
    }
  }
  // 120 levels inside the generator object is still a valid trace.
  const std::string ok = R"({"format": "agentcg-trace", "version": 1, "machine": {"cpus": 1}, "generator": {"a": )" +
                         std::string(120, '[') + std::string(120, ']') + R"(}, "processes": []})";
  EXPECT_NO_THROW(parse_trace(ok, "ok.json"));
}

// Issue 17: a Trace built in code with a non-UTF-8 name was written by
// to_json_text() with an uncaught nlohmann type_error 316; validate()
// rejects it with the pointer, and writing never throws.
TEST(Validate, NonUtf8NameIsAnErrorAndWritingDoesNotThrow) {
  Trace t;
  ProcessSpec p;
  p.pid = 1;
  p.start_ns = 0;
  p.comm = std::string("b\xff" "d");
  t.processes.push_back(p);
  try {
    validate(t);
    FAIL();
  } catch (const TraceError& e) {
    // A Trace built in code has no pointers of its own: the field's name is what is known.
    EXPECT_EQ(e.pointer(), "/comm") << e.what();
    EXPECT_NE(e.message().find("UTF-8"), std::string::npos) << e.what();
  }
  std::string text;
  EXPECT_NO_THROW(text = to_json_text(t));
  EXPECT_NE(text.find("b\xef\xbf\xbd" "d"), std::string::npos);  // U+FFFD in place of the bad byte
  EXPECT_TRUE(valid_utf8("caf\xc3\xa9"));
  EXPECT_FALSE(valid_utf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(valid_utf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(valid_utf8("\xe2\x82"));          // truncated
}

TEST(Validate, PidAboveInt32IsRejectedAsRunWould) {
  Trace t;
  ProcessSpec p;
  p.pid = std::int64_t{1} << 31;
  p.start_ns = 0;
  t.processes.push_back(p);
  EXPECT_THROW(validate(t), TraceError);
  t.processes[0].pid = 2147483647;
  EXPECT_NO_THROW(validate(t));
}

TEST(Validate, DurationTimesCpusIsCapped) {
  Trace t;
  t.machine.cpus = 64;
  t.duration_ns = std::uint64_t{30} * 1000000000;  // 30 s: fine
  EXPECT_NO_THROW(validate(t));
  t.duration_ns = std::uint64_t{1} << 62;
  try {
    validate(t);
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_EQ(e.pointer(), "/duration_ns");
    EXPECT_NE(e.message().find("CPU-ms"), std::string::npos) << e.what();
  }
}

TEST(Validate, PolicyDepthLimitOnlyForScx) {
  Trace t;
  std::string path;
  for (int i = 0; i < 16; ++i) {
    path += "/c" + std::to_string(i);
    CgroupSpec c;
    c.path = path;
    t.cgroups.push_back(c);
  }
  EXPECT_NO_THROW(validate(t));
  EXPECT_NO_THROW(validate_for_policy(t, "cfs"));
  EXPECT_THROW(validate_for_policy(t, "agentcg"), TraceError);
  EXPECT_THROW(validate_for_policy(t, "flatcg"), TraceError);
  t.cgroups.pop_back();  // 15 levels: the deepest flatcg/agentcg take
  EXPECT_NO_THROW(validate_for_policy(t, "agentcg"));
}

// nlohmann's lexer keeps every blank it skips before a token in its error
// buffer: a long run of blanks would be held whole. More than 1 MiB in a row
// is an error at the line where the run passed the limit; less is fine.
// A file of many tiny cgroup objects is refused while it streams, at the
// element past kMaxCgroups (the simulator spends ~1.3 KB on each cgroup);
// exactly kMaxCgroups parse. Every error names the line and the element.
TEST(Parse, MoreThanMaxCgroupsIsAnErrorWhileStreaming) {
  const auto trace_with = [](std::size_t n) {
    std::string text = R"({"format":"agentcg-trace","version":1,"machine":{"cpus":1},"cgroups":[)";
    text.reserve(text.size() + n * 16 + 64);
    for (std::size_t i = 0; i < n; ++i) {
      text += i ? ",\n" : "\n";
      text += R"({"path":"/c)" + std::to_string(i) + R"("})";
    }
    return text + "],\n\"processes\":[]}\n";
  };
  EXPECT_EQ(parse_trace(trace_with(kMaxCgroups), "max.json").cgroups.size(), kMaxCgroups);
  try {
    (void)parse_trace(trace_with(kMaxCgroups + 5), "over.json");
    ADD_FAILURE() << "more than kMaxCgroups cgroups were accepted";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.line(), kMaxCgroups + 2) << e.what();  // the cgroup element's own line
    EXPECT_EQ(e.pointer(), "/cgroups/" + std::to_string(kMaxCgroups)) << e.what();
    EXPECT_NE(std::string(e.what()).find("more than 1048576 cgroups"), std::string::npos) << e.what();
  }
}

TEST(Load, LongRunOfBlanksIsAnErrorNotBuffered) {
  const std::string full = kFull;
  const std::size_t brace = full.find('{');
  ASSERT_NE(brace, std::string::npos);
  const auto with_blanks = [&](std::size_t n) {
    std::string text = full.substr(0, brace + 1);
    text += "\n";
    text.append(n, ' ');
    text += full.substr(brace + 1);
    return text;
  };
  const std::string path = ::testing::TempDir() + "/load_blanks.json";
  const auto load = [&](const std::string& text) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
    return load_trace_file(path);
  };
  EXPECT_NO_THROW((void)load(with_blanks(LineCounter::kMaxBlankRun - 64)));  // kFull indents too
  for (const bool from_file : {true, false}) {
    try {
      const std::string text = with_blanks(3 * LineCounter::kMaxBlankRun);
      (void)(from_file ? load(text) : parse_trace(text, path));
      ADD_FAILURE() << "3 MiB of blanks were accepted";
    } catch (const TraceError& e) {
      EXPECT_EQ(std::string(e.what()).find(path + ":2: "), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find("blanks in a row"), std::string::npos) << e.what();
    }
  }
}

TEST(Load, MissingFileIsATraceError) {
  try {
    load_trace_file("no/such/file.json");
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_EQ(e.file(), "no/such/file.json");
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos);
  }
}

}  // namespace
}  // namespace agentcg::trace
