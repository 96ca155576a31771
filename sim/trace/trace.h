// SPDX-License-Identifier: GPL-2.0-only
// Trace format v1: the in-memory form of a workload trace (traces/README.md
// documents the JSON; traces/schema/trace-v1.schema.json is its schema).
//
// A trace holds the machine, the cgroup tree (cpu.weight, cpu.max,
// memory.high/max), and processes with their behaviour as a list of ops
// (run N ns of CPU, sleep, block on I/O, fork, exec, wait for children, exit,
// set memory use, repeat a body), with agent annotations (session, step,
// tool call begin/end) so that tool-call latency can be measured. Durations
// and sizes are fixed numbers or distributions sampled at simulation time
// from the run's seed: the trace is data, the randomness is the run's.
//
// Who uses it: sim/trace/parse.cc (JSON -> Trace with located errors),
// sim/trace/generate.cc (generators), the workload replay in sim/cpu/, the
// live player, the Python bindings, and the importers. sim/trace/ is a
// library of its own (agentcg_trace, sim/trace/CMakeLists.txt) below both
// the simulator and the player: nothing here includes the rest of sim/
// except the header-only sim/random.h.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/random.h"

namespace agentcg::trace {

inline constexpr int kFormatVersion = 1;
// The most cgroups a trace may list: the simulator keeps ~1.3 KB per cgroup
// (1e6 cost 1.3 GB), so a file of 100 M tiny cgroup objects is refused
// while it streams instead of exhausting memory. 2^20 is 64x the 16,384
// cgroups the live scheduler is tested with.
inline constexpr std::size_t kMaxCgroups = std::size_t{1} << 20;
inline constexpr const char* kFormatName = "agentcg-trace";
// Deepest nesting of JSON objects and arrays accepted (parse.cc; binary.cc
// for the JSON texts it embeds). A valid trace needs about 2 per repeat
// level (at most 8), 3 per nested fork template and a few for the top-level
// structure: 128 leaves room for any hand-written trace while keeping every
// recursive walk shallow.
inline constexpr std::size_t kMaxJsonDepth = 128;

// Where an element came from, for errors found after parsing.
struct SourceLoc {
  std::uint32_t line = 0;   // 1-based; 0 = unknown (built in code)
  std::string pointer;      // RFC 6901 JSON pointer, e.g. /processes/3/ops/0/ns
};

// A non-negative integer quantity (ns or bytes): fixed, or drawn at run time.
struct Value {
  enum class Dist : std::uint8_t { kConst, kUniform, kExponential, kLogNormal };
  Dist dist = Dist::kConst;
  std::uint64_t a = 0;   // const: the value; uniform: min; exponential: mean; lognormal: median
  std::uint64_t b = 0;   // uniform: max (inclusive)
  double sigma = 0.0;    // lognormal: shape
  std::uint64_t max = 0; // 0 = no cap; else samples are clamped to it

  static Value fixed(std::uint64_t v) { return Value{Dist::kConst, v, 0, 0.0, 0}; }
  bool is_random() const { return dist != Dist::kConst; }
  std::uint64_t sample(sim::RandomStream& rng) const;
  // Mean of the distribution (for entitlement and summaries).
  double mean() const;
};


struct ProcessSpec;

enum class OpKind : std::uint8_t {
  kRun,        // amount: CPU time to consume in ns (runnable until done)
  kSleep,      // amount: voluntary sleep in ns (e.g. waiting for an LLM response)
  kIo,         // amount: block on I/O for ns (wakes with the I/O-wakeup flag)
  kFork,       // pid (a listed process) or child (an inline template)
  kExec,       // name: new comm
  kWait,       // wait until all children forked so far have exited
  kExit,       // exit now (the end of ops exits too)
  kMem,        // amount: set this process's memory use (RSS) in bytes
  kRepeat,     // count x body
  kToolBegin,  // name: tool name (agent annotation)
  kToolEnd,    //
  kStep,       // step: agent step number (annotation; starts a new step)
};

// An op's location: its line only (an op's pointer string cost more than
// the rest of the op; validate() rebuilds the pointer from the op's index).
// Converts to a SourceLoc with an empty pointer where one is expected.
struct OpLoc {
  std::uint32_t line = 0;  // 1-based; 0 = unknown (built in code)
  operator SourceLoc() const { return SourceLoc{line, std::string()}; }  // NOLINT: implicit by design
};

// 96 bytes (was 144 with separate `name`, `body`, `child`, `pid`, `step`
// and `count` members, 184 with separate `ns` and `bytes` Values, 224 with a
// SourceLoc; 500,418 ops in a 10,000-session trace). No op uses more than
// one of name / body / child, nor more than one of pid / step / count, so
// each group shares one member, read and written through the accessors
// below (a setter replaces whatever else of its group the op held). An
// accessor of a field the op does not hold reads as the old member's
// default: "", an empty body, a null child; pid(), count() and step() all
// read the one number word, so each means something on its own kind only.
struct Op {
  // The op's quantity: run, sleep and io: ns (the JSON key "ns"); mem:
  // bytes (the JSON key "bytes"). No op has both, so they share one Value.
  Value amount;
  OpLoc loc;  // the op's line in the parsed text
  OpKind kind = OpKind::kExit;

  // exec: the new comm; tool_begin: the tool name. "" when the op has none.
  const std::string& name() const;
  void set_name(std::string name) { payload_ = std::move(name); }
  // repeat: the ops repeated count() times. Empty when the op has none.
  const std::vector<Op>& body() const;
  // The body to change in place; null when the op has none.
  std::vector<Op>* mutable_body() { return std::get_if<std::vector<Op>>(&payload_); }
  void set_body(std::vector<Op> body) { payload_ = std::move(body); }
  // fork of an inline template: the template. Null when the op has none.
  const std::shared_ptr<const ProcessSpec>& child() const;
  void set_child(std::shared_ptr<const ProcessSpec> child) { payload_ = std::move(child); }

  // fork of a listed process: its pid (0 = none: a fork of child()).
  std::int64_t pid() const { return static_cast<std::int64_t>(number_); }
  void set_pid(std::int64_t pid) { number_ = static_cast<std::uint64_t>(pid); }
  // repeat: how many times body() runs.
  std::uint32_t count() const { return static_cast<std::uint32_t>(number_); }
  void set_count(std::uint32_t count) { number_ = count; }
  // step: the agent step number.
  std::uint64_t step() const { return number_; }
  void set_step(std::uint64_t step) { number_ = step; }
  // sleep, io: the listed process whose action ended it (a pipe write, a
  // futex wake, a child's exit: recorded captures, from the waking event's
  // task), 0 = none (a timer or an interrupt: the default).
  std::int64_t waker() const { return static_cast<std::int64_t>(number_); }
  void set_waker(std::int64_t pid) { number_ = static_cast<std::uint64_t>(pid); }

 private:
  // name (string), body (vector) or child (shared_ptr); monostate: none.
  std::variant<std::monostate, std::string, std::vector<Op>, std::shared_ptr<const ProcessSpec>> payload_;
  std::uint64_t number_ = 0;  // pid (fork), count (repeat), step (step) or waker (sleep, io)
};
// Every byte of an op counts 500,000 times in a large trace (issue 21).
static_assert(sizeof(Op) <= 96, "Op grew: see the comment above it");

inline const std::string& Op::name() const {
  static const std::string kNone;
  const auto* p = std::get_if<std::string>(&payload_);
  return p != nullptr ? *p : kNone;
}
inline const std::vector<Op>& Op::body() const {
  static const std::vector<Op> kNone;
  const auto* p = std::get_if<std::vector<Op>>(&payload_);
  return p != nullptr ? *p : kNone;
}
inline const std::shared_ptr<const ProcessSpec>& Op::child() const {
  static const std::shared_ptr<const ProcessSpec> kNone;
  const auto* p = std::get_if<std::shared_ptr<const ProcessSpec>>(&payload_);
  return p != nullptr ? *p : kNone;
}

struct AgentInfo {
  std::string session;  // agent session id (several processes may share one)
};

struct ProcessSpec {
  std::int64_t pid = 0;                 // > 0, unique among listed processes; 0 in templates
  std::optional<std::int64_t> parent;   // a listed pid
  std::string cgroup = "/";             // templates: empty = the parent's cgroup
  std::optional<std::uint64_t> start_ns;  // required unless a fork op starts it
  std::string comm;
  std::optional<AgentInfo> agent;
  // nice -20..19 (the kernel's task weight, sched_prio_to_weight); absent =
  // the parent's (fork inherits it) or 0. Recorded captures carry it (the
  // ftrace importer reads prio from sched_switch).
  std::optional<std::int32_t> nice;
  // The real-time class (SCHED_FIFO, or SCHED_RR with rt_round_robin):
  // priority 1..99 (99 the highest), above every fair or sched_ext task;
  // 0 = SCHED_OTHER (the fair class) explicitly; absent = the parent's
  // policy (fork inherits it), else SCHED_OTHER. Recorded captures carry it
  // (sched_switch's prio below 100 is 99 - rt_priority).
  std::optional<std::int32_t> rt_priority;
  bool rt_round_robin = false;
  std::vector<Op> ops;
  SourceLoc loc;
};

struct CpuMax {
  std::uint64_t quota_us = 0;
  std::uint64_t period_us = 100000;
};

struct CgroupSpec {
  std::string path;                   // "/a/b"; "/" is the root
  std::uint32_t cpu_weight = 100;     // cpu.weight, 1..10000
  std::optional<CpuMax> cpu_max;      // absent = "max"
  std::optional<std::uint64_t> memory_high;  // bytes; absent = "max"
  std::optional<std::uint64_t> memory_max;   // bytes; absent = "max"
  SourceLoc loc;
};

struct Machine {
  std::uint32_t cpus = 1;
  // Optional per-trace overrides of the CPU model's costs (ns); absent =
  // the simulator's defaults (sim/cpu/cpu_model.h).
  std::optional<std::uint64_t> context_switch_ns;
  std::optional<std::uint64_t> wakeup_overhead_ns;
};

struct LineIndex;

struct Trace {
  int version = kFormatVersion;
  std::string name;
  std::string description;
  Machine machine;
  std::vector<CgroupSpec> cgroups;     // parents before children after validate()
  std::vector<ProcessSpec> processes;
  std::optional<std::uint64_t> duration_ns;  // stop time; absent = until all exit
  nlohmann::json generator;            // provenance: {"kind":..., "seed":..., "options":{...}}
  // Sections owned by other parts (e.g. "gpu"), carried through unchanged by
  // parse and write until a typed form exists for them.
  nlohmann::json extra = nlohmann::json::object();
  std::string source;                  // file name, for run-time error messages
  // Lines of the parsed text (null for traces built in code); parsers of
  // sections in `extra` (e.g. the GPU model's "gpu") locate their errors
  // with line_of(). Shared so that copies stay cheap.
  std::shared_ptr<const LineIndex> lines;
};

// Where the JSON pointers of a parsed trace are. The streaming parser keeps
// the line of every pointer outside the process and cgroup elements; inside
// them, a cgroup's, a process's and an op's line is in its SourceLoc (ops
// keep no pointer string: validate() rebuilds it), and any other line is
// found by rescanning the text, which is possible only while parse_trace() runs
// (`text` is null afterwards, and such a pointer then gets line 0: callers
// fall back to the element's SourceLoc line).
struct LineIndex {
  std::map<std::string, std::uint32_t> lines;
  // While parse_trace() / load_trace_file() run: the text, or the file to
  // read it from on the first rescan (then kept in `loaded`).
  const std::string* text = nullptr;
  std::string path;
  mutable std::string loaded;
  // Line of `pointer` or of its nearest enclosing pointer that has one.
  std::uint32_t line_of(const std::string& pointer) const;
};

// Line of `pointer` in the text `trace` was parsed from: the line of the
// nearest enclosing pointer that has one ("/gpu/jobs/3/mem" falls back to
// "/gpu/jobs/3", then "/gpu", ...); 0 when unknown.
std::uint32_t line_of(const Trace& trace, const std::string& pointer);

// An invalid trace: what, where and what was expected.
class TraceError : public std::runtime_error {
 public:
  TraceError(std::string file, std::uint32_t line, std::string pointer, std::string message);
  const std::string& file() const { return file_; }
  std::uint32_t line() const { return line_; }
  const std::string& pointer() const { return pointer_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  std::uint32_t line_;
  std::string pointer_;
  std::string message_;
};

// JSON text -> validated Trace. `source` names the input in errors.
Trace parse_trace(const std::string& text, const std::string& source);
// A trace file, JSON or binary (see to_binary()): told apart by the first
// byte, so every command that loads a trace takes either.
Trace load_trace_file(const std::string& path);
// Semantic checks on a Trace built in code (parse_trace calls it too):
// unknown cgroups, duplicate pids, parent cycles, missing start times, ...
void validate(const Trace& trace);
// RFC 3629 UTF-8 (what JSON strings hold): validate() checks every name
// with it; importers repair raw kernel names with it.
bool valid_utf8(const std::string& s);

// What only some policies require of a trace (today: flatcg and agentcg take
// cgroups at most AGENTCG_MAX_DEPTH - 1 = 15 levels deep). sim::run() calls
// it before building the model; `trace validate --policy P` calls it too, so
// validate and run agree. Throws TraceError naming the cgroup's line.
void validate_for_policy(const Trace& trace, const std::string& policy);
// Trace -> JSON (deterministic: fixed key order, no floats except sigma).
nlohmann::json to_json(const Trace& trace);
// The canonical text of a trace (what write_trace_file writes): 1-space
// indent, containers that fit in one short line kept on one line (one op per
// line), trailing newline. Same Trace -> same bytes.
std::string to_json_text(const Trace& trace);
void write_trace_file(const Trace& trace, const std::string& path);

// The binary form of a trace (sim/trace/binary.cc; `trace convert`): the
// same data as the canonical JSON, plus the lines of the JSON it was
// converted from (every SourceLoc and op line, and the pointer -> line map
// of LineIndex), so an error found later still names a line of that JSON
// file. It loads in one pass over the file, read through a 1 MiB window,
// with nothing allocated beyond that window and the Trace itself.
// load_trace_file() recognises it by its magic (never by its name); `.agtb`
// is the extension `trace convert` writes it under. The layout:
//   magic (8 bytes: 0x89 "AGTB" CR LF 0x1A), format version (u32 LE),
//   then the trace: unsigned LEB128 numbers, zigzag for signed ones,
//   strings as length + bytes, sigma as an IEEE double (8 bytes LE), every
//   list as count + elements; `generator` and `gpu` as their JSON text.
// A file that is cut short, corrupt or hostile gives a TraceError naming
// the byte offset, the element being read and what was expected; every
// count and length is bounded by the bytes left, and repeat bodies and fork
// templates nest at most kMaxBinaryNesting deep. What it holds is then
// checked by validate(), as a parsed JSON trace is.
inline constexpr char kBinaryMagic[8] = {'\x89', 'A', 'G', 'T', 'B', '\r', '\n', '\x1a'};
// Version 2 (2026-11-30) adds a sleep's and an io op's waker (a signed
// number after its ns); version 1 files still load (no waker). Version 3
// (2026-12-01) adds a process's real-time priority and policy (process
// flags 16 and 32); versions 1 and 2 files still load (none).
inline constexpr std::uint32_t kBinaryVersion = 3;
inline constexpr std::uint32_t kBinaryVersionOldest = 1;
inline constexpr const char* kBinaryExtension = ".agtb";
// Repeat bodies plus fork templates, nested: the JSON parser's depth cap
// allows at most (128 - 5) / 2 = 61 of them (2 JSON levels per repeat, 3 per
// template), so every trace that parses as JSON converts.
inline constexpr int kMaxBinaryNesting = 64;
// True when `head` (the first bytes of a file) starts like a binary trace:
// its first byte is the magic's 0x89, which no JSON text starts with.
bool looks_binary(const char* head, std::size_t size);
// Trace -> its binary form (deterministic: same Trace, same bytes).
std::string to_binary(const Trace& trace);
// Binary form -> validated Trace. `source` names the input in errors.
Trace parse_binary_trace(const char* data, std::size_t size, const std::string& source);
// The same from a file: its next `size` bytes, read `window` bytes at a
// time (load_trace_file() passes a regular file and its size). Gives what
// parse_binary_trace() gives for those bytes, errors included; a file that
// ends early or fails to read is a TraceError "read error".
inline constexpr std::size_t kBinaryReadWindow = std::size_t{1} << 20;
Trace read_binary_trace(std::FILE* file, std::size_t size, const std::string& source,
                        std::size_t window = kBinaryReadWindow);
void write_binary_trace_file(const Trace& trace, const std::string& path);

// Generators: KIND in agent, fork-storm, io, hogs, mixed (and GPU kinds added
// by the GPU model). Options are the CLI's --key value pairs without dashes;
// unknown keys and bad values throw std::invalid_argument naming the key.
Trace generate(const std::string& kind, std::uint64_t seed,
               const std::map<std::string, std::string>& options);
// One line per kind with its options and defaults, for --help.
std::string generator_help();

// Every generator kind with its options (CPU kinds, then the GPU ones), the
// table `trace generate` declares its per-kind command lines from.
struct GeneratorOption {
  std::string key;  // without dashes
  std::string def;  // "" = derived from other options
  std::string help;
};
struct GeneratorKind {
  std::string name;
  std::string summary;
  std::vector<GeneratorOption> options;
};
std::vector<GeneratorKind> generator_kinds();

}  // namespace agentcg::trace
