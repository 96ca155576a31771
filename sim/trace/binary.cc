// SPDX-License-Identifier: GPL-2.0-only
// Trace format v1, binary form: Trace <-> bytes (issue 21: traces that load
// at disk speed). trace.h documents the layout and why it exists; this file
// is the writer (to_binary) and the reader (parse_binary_trace of bytes in
// memory; read_binary_trace of a file, which load_trace_file() calls for a
// regular file whose first byte is the magic's).
//
// The binary form holds exactly what the canonical JSON holds (a Value is
// stored as value_json() writes it, a template without pid/parent/start_ns,
// `generator` and the "gpu" section as their JSON text), plus the lines of
// the JSON text it was converted from. Hence binary -> Trace -> JSON gives
// the bytes of to_json_text() of the JSON's Trace, and a run from either
// file gives the same results.
//
// Reader invariants (hostile input): one forward pass over the bytes (from
// a file: through a 1 MiB window, so the file is not resident beside the
// Trace; the size is known first, so the checks and errors are those of the
// same bytes in memory), every read checked against the end first; every count is checked against the
// bytes left (each element takes at least a known number of bytes) and
// against one budget of elements for the whole file, so the vectors reserved
// from stored counts total at most a constant times the file size; strings
// are no longer than the bytes left; repeat bodies and fork templates nest
// at most kMaxBinaryNesting deep and embedded JSON texts kMaxJsonDepth deep,
// so nothing recursive (this reader, validate(), the replay) goes deeper.
// Every error is a TraceError: file, the JSON pointer of the element being
// read, "binary trace, byte N:", what was found and what was expected. What
// the bytes say is then checked by validate(), as for a parsed JSON trace;
// the per-element checks the JSON parser makes that validate() does not
// (nice in -20..19, a real-time priority in 0..99 and its policy) are made here.
// Called by load_trace_file() (parse.cc), `trace convert`, the tests and
// fuzz/trace_binary_fuzz.cc.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

#include "sim/trace/trace.h"

namespace agentcg::trace {

using nlohmann::json;

namespace {

// Flags bytes: which optional fields follow.
enum TopFlags : std::uint8_t { kHasDuration = 1, kHasGenerator = 2, kHasContextSwitch = 4, kHasWakeupOverhead = 8 };
// kHasRt: a real-time priority (svarint, 0..99), then kRtRoundRobin says SCHED_RR
enum ProcessFlags : std::uint8_t {
  kHasParent = 1,
  kHasStart = 2,
  kHasNice = 4,
  kHasAgent = 8,
  kHasRt = 16,
  kRtRoundRobin = 32
};
enum CgroupFlags : std::uint8_t { kHasCpuMax = 1, kHasMemoryHigh = 2, kHasMemoryMax = 4 };
enum ForkTarget : std::uint8_t { kForkPid = 0, kForkChild = 1 };

// Fewest bytes each listed element can take (a count larger than the bytes
// left divided by these is an error before anything is reserved).
constexpr std::size_t kMinOpBytes = 2;       // kind, line
constexpr std::size_t kMinProcessBytes = 7;  // flags, pid, cgroup, comm, loc (2), op count
constexpr std::size_t kMinCgroupBytes = 5;   // path, weight, flags, loc (2)
constexpr std::size_t kMinLineBytes = 2;     // pointer (may be empty), line

std::string dump_text(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

class Writer {
 public:
  std::string out;

  void u8(std::uint8_t v) { out.push_back(static_cast<char>(v)); }
  void varint(std::uint64_t v) {
    while (v >= 0x80) {
      out.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<char>(v));
  }
  void svarint(std::int64_t v) {
    varint((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
  }
  void str(const std::string& s) {
    varint(s.size());
    out += s;
  }
  void f64(double d) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &d, sizeof bits);
    for (int i = 0; i < 8; ++i) u8(static_cast<std::uint8_t>(bits >> (8 * i)));
  }
  void loc(const SourceLoc& l) {
    varint(l.line);
    str(l.pointer);
  }

  // As value_json() writes it (write.cc), so the two forms hold the same.
  void value(const Value& v) {
    u8(static_cast<std::uint8_t>(v.dist));
    varint(v.a);
    switch (v.dist) {
      case Value::Dist::kConst:
        break;
      case Value::Dist::kUniform:
        varint((v.max != 0 && v.max < v.b) ? v.max : v.b);
        break;
      case Value::Dist::kExponential:
        varint(v.max);
        break;
      case Value::Dist::kLogNormal:
        f64(v.sigma);
        varint(v.max);
        break;
    }
  }

  void process(const ProcessSpec& p, bool templ) {
    std::uint8_t flags = 0;
    if (!templ && p.parent) flags |= kHasParent;
    if (!templ && p.start_ns) flags |= kHasStart;
    if (p.nice) flags |= kHasNice;
    if (p.agent) flags |= kHasAgent;
    if (p.rt_priority) flags |= kHasRt;
    if (p.rt_round_robin) flags |= kRtRoundRobin;
    u8(flags);
    if (!templ) svarint(p.pid);
    if (flags & kHasParent) svarint(*p.parent);
    if (flags & kHasStart) varint(*p.start_ns);
    str(p.cgroup);
    str(p.comm);
    if (flags & kHasNice) svarint(*p.nice);
    if (flags & kHasRt) svarint(*p.rt_priority);
    if (flags & kHasAgent) str(p.agent->session);
    loc(p.loc);
    ops(p.ops);
  }

  void ops(const std::vector<Op>& list) {
    varint(list.size());
    for (const Op& op : list) {
      u8(static_cast<std::uint8_t>(op.kind));
      varint(op.loc.line);
      switch (op.kind) {
        case OpKind::kRun:
        case OpKind::kMem:
          value(op.amount);
          break;
        case OpKind::kSleep:
        case OpKind::kIo:
          value(op.amount);
          svarint(op.waker());
          break;
        case OpKind::kFork:
          if (op.child()) {
            u8(kForkChild);
            process(*op.child(), true);
          } else {
            u8(kForkPid);
            svarint(op.pid());
          }
          break;
        case OpKind::kExec:
        case OpKind::kToolBegin:
          str(op.name());
          break;
        case OpKind::kRepeat:
          varint(op.count());
          ops(op.body());
          break;
        case OpKind::kStep:
          varint(op.step());
          break;
        case OpKind::kWait:
        case OpKind::kExit:
        case OpKind::kToolEnd:
          break;
      }
    }
  }
};

// Where the reader is, as a JSON pointer, built only for an error.
struct PathSegment {
  const char* key;    // null: an array index
  std::size_t index;  // for an index
};

class Reader {
 public:
  // All the bytes in memory.
  Reader(const char* data, std::size_t size, const std::string& source)
      : p_(reinterpret_cast<const std::uint8_t*>(data)),
        lim_(p_ + size),
        lim_pos_(size),
        size_(size),
        source_(source),
        budget_(size) {}
  // `size` bytes of `file`, read `window` bytes at a time when the bytes in
  // hand run out.
  Reader(std::FILE* file, std::size_t size, std::size_t window, const std::string& source)
      : size_(size), source_(source), budget_(size), file_(file), window_(std::max<std::size_t>(1, std::min(size, window))) {}

  Trace read() {
    header();
    Trace t;
    t.source = source_;
    t.version = static_cast<int>(bounded("the trace format version", std::numeric_limits<std::int32_t>::max()));
    t.name = str("the name");
    t.description = str("the description");
    const std::uint8_t flags = flags_byte("the trace's flags", kHasDuration | kHasGenerator | kHasContextSwitch |
                                                                   kHasWakeupOverhead);
    if (flags & kHasDuration) t.duration_ns = varint("duration_ns");
    if (flags & kHasGenerator) {
      Enter e(this, "generator");
      t.generator = embedded_json("the generator object");
      if (!t.generator.is_object()) fail(mark_, "expected the generator as a JSON object, got " + t.generator.dump());
    }
    {
      Enter e(this, "machine");
      t.machine.cpus = static_cast<std::uint32_t>(bounded("the CPU count", std::numeric_limits<std::uint32_t>::max()));
      if (flags & kHasContextSwitch) t.machine.context_switch_ns = varint("context_switch_ns");
      if (flags & kHasWakeupOverhead) t.machine.wakeup_overhead_ns = varint("wakeup_overhead_ns");
    }
    extra(t);
    lines(t);
    cgroups(t);
    processes(t);
    if (left() != 0)
      fail(pos(), std::to_string(left()) + " bytes after the end of the trace; expected the file to end there");
    validate(t);
    return t;
  }

 private:
  class Enter {
   public:
    Enter(Reader* r, const char* key) : r_(r) { r_->path_.push_back({key, 0}); }
    Enter(Reader* r, std::size_t index) : r_(r) { r_->path_.push_back({nullptr, index}); }
    ~Enter() { r_->path_.pop_back(); }
    Enter(const Enter&) = delete;
    Enter& operator=(const Enter&) = delete;

   private:
    Reader* r_;
  };

  std::size_t pos() const { return lim_pos_ - static_cast<std::size_t>(lim_ - p_); }
  std::size_t left() const { return size_ - pos(); }

  // The bytes in hand are used up: read the next window of the file; false
  // at the end of the bytes. A file that ends before `size_` bytes (or fails
  // to read) is a read error, as for a JSON file.
  bool more() {
    if (lim_pos_ == size_ || file_ == nullptr) return false;
    const std::size_t want = std::min(window_.size(), size_ - lim_pos_);
    if (std::fread(window_.data(), 1, want, file_) != want) throw TraceError(source_, 0, "", "read error");
    p_ = window_.data();
    lim_ = p_ + want;
    lim_pos_ += want;
    return true;
  }
  bool at_end() { return p_ == lim_ && !more(); }
  // The next byte, which the caller knows is there (left() > 0).
  std::uint8_t byte() {
    if (p_ == lim_) more();
    return *p_++;
  }

  std::string pointer() const {
    std::string out;
    for (const PathSegment& s : path_) {
      out += '/';
      out += s.key != nullptr ? std::string(s.key) : std::to_string(s.index);
    }
    return out;
  }

  [[noreturn]] void fail(std::size_t at, const std::string& what) const {
    throw TraceError(source_, 0, pointer(), "binary trace, byte " + std::to_string(at) + ": " + what);
  }
  [[noreturn]] void truncated(std::size_t at, const char* what) const {
    fail(at, std::string("the file ends inside ") + what + "; expected more bytes (a truncated file?)");
  }

  void header() {
    const std::size_t n = std::min(left(), sizeof kBinaryMagic);
    for (std::size_t i = 0; i < n; ++i)
      if (byte() != static_cast<std::uint8_t>(kBinaryMagic[i]))
        fail(i, "not an agentcg binary trace; expected the magic bytes 89 41 47 54 42 0d 0a 1a (\\x89AGTB\\r\\n\\x1a) "
                "at the start, or JSON text");
    if (n < sizeof kBinaryMagic) truncated(n, "the magic bytes");
    if (left() < 4) truncated(pos(), "the format version");
    const std::size_t at = pos();
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(byte()) << (8 * i);
    if (v < kBinaryVersionOldest || v > kBinaryVersion)
      fail(at, "binary format version " + std::to_string(v) + "; this build reads versions " +
                   std::to_string(kBinaryVersionOldest) + ".." + std::to_string(kBinaryVersion) +
                   " only (convert the JSON trace again with its trace convert)");
    file_version_ = v;
  }

  std::uint8_t u8(const char* what) {
    if (at_end()) truncated(pos(), what);
    return *p_++;
  }
  std::uint8_t flags_byte(const char* what, std::uint8_t allowed) {
    const std::size_t at = pos();
    const std::uint8_t f = u8(what);
    if ((f & ~allowed) != 0)
      fail(at, std::string("expected ") + what + " (bits " + std::to_string(allowed) + " at most), got " +
                   std::to_string(f));
    return f;
  }
  std::uint64_t varint(const char* what) {
    const std::size_t at = pos();
    std::uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
      if (at_end()) truncated(at, what);
      const std::uint8_t b = *p_++;
      if (shift == 63 && b > 1) fail(at, std::string("expected ") + what + " (a number below 2^64), got more");
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
  }
  std::uint64_t bounded(const char* what, std::uint64_t max) {
    const std::size_t at = pos();
    const std::uint64_t v = varint(what);
    if (v > max) fail(at, std::string("expected ") + what + " at most " + std::to_string(max) + ", got " + std::to_string(v));
    return v;
  }
  std::int64_t svarint(const char* what) {
    const std::uint64_t z = varint(what);
    return static_cast<std::int64_t>(z >> 1) ^ -static_cast<std::int64_t>(z & 1);
  }
  double f64(const char* what) {
    if (left() < 8) truncated(pos(), what);
    std::uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits |= static_cast<std::uint64_t>(byte()) << (8 * i);
    double d = 0;
    std::memcpy(&d, &bits, sizeof d);
    return d;
  }
  // A length or count, checked against the bytes left before anything is
  // allocated for it.
  std::size_t length(const char* what, std::size_t min_bytes_each) {
    const std::size_t at = pos();
    const std::uint64_t n = varint(what);
    if (n > left() / min_bytes_each)
      fail(at, std::string(what) + " of " + std::to_string(n) + " takes at least " + std::to_string(min_bytes_each) +
                   " bytes each, more than the " + std::to_string(left()) +
                   " bytes left; expected a count that fits the file (a truncated or corrupt file?)");
    return static_cast<std::size_t>(n);
  }
  // A count of elements to reserve: also charged to the budget of the
  // whole file, so nested lists cannot each claim the rest of the file.
  std::size_t count(const char* what, std::size_t min_bytes_each) {
    const std::size_t at = pos();
    const std::size_t n = length(what, min_bytes_each);
    if (n > budget_ / min_bytes_each)
      fail(at, std::string(what) + " of " + std::to_string(n) +
                   ": with the lists before it, more elements than the file's bytes can hold; expected a "
                   "count that fits the file (a corrupt file?)");
    budget_ -= n * min_bytes_each;
    return n;
  }
  std::string str(const char* what) {
    const std::size_t len_at = pos();
    const std::uint64_t n = varint(what);
    if (n > left())
      fail(len_at, std::string(what) + " of " + std::to_string(n) + " bytes runs past the end of the file (" +
                       std::to_string(left()) + " bytes left); expected a string that fits (a truncated file?)");
    const std::size_t at = pos();
    std::string s;
    s.reserve(n);
    while (s.size() < n) {
      if (p_ == lim_) more();
      const std::size_t k = std::min(n - s.size(), static_cast<std::size_t>(lim_ - p_));
      s.append(reinterpret_cast<const char*>(p_), k);
      p_ += k;
    }
    if (!valid_utf8(s)) fail(at, std::string(what) + ": not valid UTF-8; expected UTF-8 text");
    return s;
  }
  // A JSON text embedded in the file: parsed with the JSON parser's depth cap.
  json embedded_json(const char* what) {
    mark_ = pos();
    const std::string text = str(what);
    try {
      return json::parse(text, [&](int depth, json::parse_event_t, json&) {
        if (depth >= static_cast<int>(kMaxJsonDepth))
          fail(mark_, std::string(what) + ": nested more than " + std::to_string(kMaxJsonDepth) +
                          " arrays/objects deep; expected at most that depth");
        return true;
      });
    } catch (const json::exception& e) {
      fail(mark_, std::string(what) + ": not JSON (" + e.what() + ")");
    }
  }
  SourceLoc loc() {
    SourceLoc l;
    l.line = static_cast<std::uint32_t>(bounded("a line number", std::numeric_limits<std::uint32_t>::max()));
    l.pointer = str("a JSON pointer");
    return l;
  }

  void extra(Trace& t) {
    Enter e(this, "gpu");
    const std::size_t at = pos();
    if (!at_end() && *p_ == 0) {  // the empty string: no carried sections
      ++p_;
      return;
    }
    json x = embedded_json("the carried sections (gpu)");
    if (!x.is_object()) fail(at, "expected the carried sections as a JSON object, got " + x.dump().substr(0, 60));
    for (auto it = x.begin(); it != x.end(); ++it)
      if (it.key() != "gpu")
        fail(at, "unknown carried section \"" + it.key() + "\"; expected only \"gpu\"");
    t.extra = std::move(x);
  }

  void lines(Trace& t) {
    auto index = std::make_shared<LineIndex>();
    const std::size_t n = count("a count of located pointers", kMinLineBytes);
    for (std::size_t i = 0; i < n; ++i) {
      std::string ptr = str("a located JSON pointer");
      const auto line =
          static_cast<std::uint32_t>(bounded("a line number", std::numeric_limits<std::uint32_t>::max()));
      index->lines.emplace_hint(index->lines.end(), std::move(ptr), line);
    }
    t.lines = std::move(index);
  }

  void cgroups(Trace& t) {
    Enter e(this, "cgroups");
    const std::size_t n = count("a cgroup count", kMinCgroupBytes);
    t.cgroups.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      Enter at(this, i);
      CgroupSpec c;
      c.path = str("a cgroup path");
      c.cpu_weight =
          static_cast<std::uint32_t>(bounded("cpu_weight", std::numeric_limits<std::uint32_t>::max()));
      const std::uint8_t flags = flags_byte("a cgroup's flags", kHasCpuMax | kHasMemoryHigh | kHasMemoryMax);
      if (flags & kHasCpuMax) {
        CpuMax m;
        m.quota_us = varint("cpu_max quota_us");
        m.period_us = varint("cpu_max period_us");
        c.cpu_max = m;
      }
      if (flags & kHasMemoryHigh) c.memory_high = varint("memory_high");
      if (flags & kHasMemoryMax) c.memory_max = varint("memory_max");
      c.loc = loc();
      t.cgroups.push_back(std::move(c));
    }
    // Parents first, as parse_trace() leaves them (the simulator relies on it).
    const auto depth = [](const CgroupSpec& c) {
      return c.path == "/" ? std::size_t{0} : static_cast<std::size_t>(std::count(c.path.begin(), c.path.end(), '/'));
    };
    const auto shallower = [&](const CgroupSpec& a, const CgroupSpec& b) { return depth(a) < depth(b); };
    if (!std::is_sorted(t.cgroups.begin(), t.cgroups.end(), shallower))
      std::stable_sort(t.cgroups.begin(), t.cgroups.end(), shallower);
  }

  void processes(Trace& t) {
    Enter e(this, "processes");
    const std::size_t n = count("a process count", kMinProcessBytes);
    t.processes.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      Enter at(this, i);
      t.processes.push_back(process(false, 0));
    }
  }

  ProcessSpec process(bool templ, int nesting) {
    ProcessSpec p;
    const std::uint8_t rt = file_version_ >= 3 ? (kHasRt | kRtRoundRobin) : 0;
    const std::uint8_t flags =
        flags_byte(templ ? "a template's flags" : "a process's flags",
                   static_cast<std::uint8_t>(templ ? (kHasNice | kHasAgent | rt)
                                                   : (kHasParent | kHasStart | kHasNice | kHasAgent | rt)));
    if (!templ) p.pid = svarint("a pid");
    if (flags & kHasParent) p.parent = svarint("a parent pid");
    if (flags & kHasStart) p.start_ns = varint("start_ns");
    p.cgroup = str("a cgroup path");
    p.comm = str("a comm");
    if (flags & kHasNice) {
      const std::size_t at = pos();
      const std::int64_t nice = svarint("a nice value");
      if (nice < -20 || nice > 19)
        fail(at, "expected a nice value (an integer in -20..19), got " + std::to_string(nice));
      p.nice = static_cast<std::int32_t>(nice);
    }
    if (flags & kHasRt) {
      const std::size_t at = pos();
      const std::int64_t prio = svarint("a real-time priority");
      if (prio < 0 || prio > 99)
        fail(at, "expected a real-time priority (an integer in 1..99, or 0 for the fair class), got " +
                     std::to_string(prio));
      p.rt_priority = static_cast<std::int32_t>(prio);
    }
    if (flags & kRtRoundRobin) {
      if (!p.rt_priority || *p.rt_priority == 0)
        fail(pos(), "a real-time policy (SCHED_RR) without a real-time priority 1..99");
      p.rt_round_robin = true;
    }
    if (flags & kHasAgent) p.agent = AgentInfo{str("an agent session")};
    p.loc = loc();
    Enter e(this, "ops");
    ops(p.ops, nesting);
    return p;
  }

  void ops(std::vector<Op>& out, int nesting) {
    const std::size_t n = count("an op count", kMinOpBytes);
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      Enter at(this, i);
      out.emplace_back();
      op(out.back(), nesting);
    }
  }

  void nest(int nesting) const {
    if (nesting + 1 > kMaxBinaryNesting)
      fail(pos(), "repeat bodies and fork templates nested more than " + std::to_string(kMaxBinaryNesting) +
                      " deep; expected a trace of at most that depth");
  }

  void op(Op& op, int nesting) {
    const std::size_t at = pos();
    const std::uint8_t kind = u8("an op kind");
    if (kind > static_cast<std::uint8_t>(OpKind::kStep))
      fail(at, "expected an op kind (0..11), got " + std::to_string(kind));
    op.kind = static_cast<OpKind>(kind);
    op.loc.line = static_cast<std::uint32_t>(bounded("a line number", std::numeric_limits<std::uint32_t>::max()));
    switch (op.kind) {
      case OpKind::kRun:
      case OpKind::kMem:
        op.amount = value();
        break;
      case OpKind::kSleep:
      case OpKind::kIo:
        op.amount = value();
        if (file_version_ >= 2) op.set_waker(svarint("a sleep's waker"));
        break;
      case OpKind::kFork: {
        const std::size_t t_at = pos();
        const std::uint8_t target = u8("a fork's target");
        if (target == kForkPid) {
          op.set_pid(svarint("a forked pid"));
        } else if (target == kForkChild) {
          nest(nesting);
          Enter e(this, "child");
          op.set_child(std::make_shared<const ProcessSpec>(process(true, nesting + 1)));
        } else {
          fail(t_at, "expected a fork's target (0: a listed pid, 1: a child template), got " + std::to_string(target));
        }
        break;
      }
      case OpKind::kExec:
      case OpKind::kToolBegin:
        op.set_name(str(op.kind == OpKind::kExec ? "an exec comm" : "a tool name"));
        break;
      case OpKind::kRepeat: {
        op.set_count(static_cast<std::uint32_t>(bounded("a repeat count", std::numeric_limits<std::uint32_t>::max())));
        nest(nesting);
        Enter e(this, "body");
        std::vector<Op> body;
        ops(body, nesting + 1);
        op.set_body(std::move(body));
        break;
      }
      case OpKind::kStep:
        op.set_step(varint("a step number"));
        break;
      case OpKind::kWait:
      case OpKind::kExit:
      case OpKind::kToolEnd:
        break;
    }
  }

  Value value() {
    const std::size_t at = pos();
    const std::uint8_t dist = u8("a value's distribution");
    Value v;
    v.a = varint("a value");
    switch (dist) {
      case static_cast<std::uint8_t>(Value::Dist::kConst):
        break;
      case static_cast<std::uint8_t>(Value::Dist::kUniform):
        v.dist = Value::Dist::kUniform;
        v.b = varint("a uniform's max");
        break;
      case static_cast<std::uint8_t>(Value::Dist::kExponential):
        v.dist = Value::Dist::kExponential;
        v.max = varint("a cap");
        break;
      case static_cast<std::uint8_t>(Value::Dist::kLogNormal):
        v.dist = Value::Dist::kLogNormal;
        v.sigma = f64("a sigma");
        v.max = varint("a cap");
        break;
      default:
        fail(at, "expected a distribution (0: fixed, 1: uniform, 2: exponential, 3: lognormal), got " +
                     std::to_string(dist));
    }
    return v;
  }

  // The bytes in hand: [p_, lim_), the window ending at byte lim_pos_ of
  // the size_ bytes (all of them when read from memory).
  const std::uint8_t* p_ = nullptr;
  const std::uint8_t* lim_ = nullptr;
  std::size_t lim_pos_ = 0;
  std::size_t size_;
  const std::string& source_;
  std::size_t budget_;        // bytes the remaining reserved elements may still claim
  std::uint32_t file_version_ = kBinaryVersion;  // 1: sleep and io ops carry no waker
  std::size_t mark_ = 0;      // where the embedded JSON text being parsed starts
  std::vector<PathSegment> path_;
  std::FILE* file_ = nullptr;         // null: every byte is in memory
  std::vector<std::uint8_t> window_;  // the bytes read from file_
};

}  // namespace

bool looks_binary(const char* head, std::size_t size) { return size > 0 && head[0] == kBinaryMagic[0]; }

std::string to_binary(const Trace& t) {
  Writer w;
  w.out.append(kBinaryMagic, sizeof kBinaryMagic);
  for (int i = 0; i < 4; ++i) w.u8(static_cast<std::uint8_t>(kBinaryVersion >> (8 * i)));
  w.varint(static_cast<std::uint64_t>(t.version));
  w.str(t.name);
  w.str(t.description);
  std::uint8_t flags = 0;
  if (t.duration_ns) flags |= kHasDuration;
  if (!t.generator.is_null()) flags |= kHasGenerator;
  if (t.machine.context_switch_ns) flags |= kHasContextSwitch;
  if (t.machine.wakeup_overhead_ns) flags |= kHasWakeupOverhead;
  w.u8(flags);
  if (t.duration_ns) w.varint(*t.duration_ns);
  if (!t.generator.is_null()) w.str(dump_text(t.generator));
  w.varint(t.machine.cpus);
  if (t.machine.context_switch_ns) w.varint(*t.machine.context_switch_ns);
  if (t.machine.wakeup_overhead_ns) w.varint(*t.machine.wakeup_overhead_ns);
  w.str(t.extra.is_object() && !t.extra.empty() ? dump_text(t.extra) : std::string());
  if (t.lines) {
    w.varint(t.lines->lines.size());
    for (const auto& [ptr, line] : t.lines->lines) {
      w.str(ptr);
      w.varint(line);
    }
  } else {
    w.varint(0);
  }
  w.varint(t.cgroups.size());
  for (const CgroupSpec& c : t.cgroups) {
    w.str(c.path);
    w.varint(c.cpu_weight);
    std::uint8_t cf = 0;
    if (c.cpu_max) cf |= kHasCpuMax;
    if (c.memory_high) cf |= kHasMemoryHigh;
    if (c.memory_max) cf |= kHasMemoryMax;
    w.u8(cf);
    if (c.cpu_max) {
      w.varint(c.cpu_max->quota_us);
      w.varint(c.cpu_max->period_us);
    }
    if (c.memory_high) w.varint(*c.memory_high);
    if (c.memory_max) w.varint(*c.memory_max);
    w.loc(c.loc);
  }
  w.varint(t.processes.size());
  for (const ProcessSpec& p : t.processes) w.process(p, false);
  return std::move(w.out);
}

Trace parse_binary_trace(const char* data, std::size_t size, const std::string& source) {
  return Reader(data, size, source).read();
}

Trace read_binary_trace(std::FILE* file, std::size_t size, const std::string& source, std::size_t window) {
  return Reader(file, size, window, source).read();
}

void write_binary_trace_file(const Trace& trace, const std::string& path) {
  const std::string bytes = to_binary(trace);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error(path + ": cannot open for writing");
  f << bytes;
  f.flush();
  if (!f) throw std::runtime_error(path + ": write error");
}

}  // namespace agentcg::trace
