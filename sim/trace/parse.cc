// SPDX-License-Identifier: GPL-2.0-only
// Trace format v1: JSON text -> Trace, with errors that say where.
//
// nlohmann::json keeps no source positions, so the text is first run through
// nlohmann::json::sax_parse over an iterator that counts newlines; a SAX
// handler records the line of every JSON pointer (the line of an object
// member's key, of an array element's first token). That map travels in
// Trace::lines so that later checks (validate(), the GPU model's parser of
// the "gpu" section) can still name the line. A second, ordinary parse builds
// the DOM that the typed parser below walks.
//
// Nesting is capped at kMaxJsonDepth containers, checked in the SAX pass
// before the DOM exists: a hostile 100k-deep `[[[...]]]` used to cost memory
// quadratic in depth (a pointer string per frame and per value) and a stack
// overflow in the recursive dump() of the error path; now it is one error
// naming the line where the limit was crossed, and nothing recursive below
// (the typed walk, show(), validate()) ever sees more than that depth.
//
// Invariants: every error is a TraceError naming file, line, JSON pointer,
// what was found and what was expected; unknown keys are errors (so a typo
// never passes silently); "gpu" is the only section kept untyped (in
// Trace::extra). Cgroups come out parents first (stable by depth).
// Called by load_trace_file(), the CLI (`trace validate`), Python bindings.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>

#include "sim/trace/trace.h"

namespace agentcg::trace {

using nlohmann::json;

namespace {

std::string format_error(const std::string& file, std::uint32_t line, const std::string& pointer,
                         const std::string& message) {
  std::string out = file.empty() ? std::string("<trace>") : file;
  if (line != 0) out += ":" + std::to_string(line);
  out += ": ";
  out += pointer.empty() ? std::string("/") : pointer;
  out += ": " + message;
  return out;
}

}  // namespace

TraceError::TraceError(std::string file, std::uint32_t line, std::string pointer, std::string message)
    : std::runtime_error(format_error(file, line, pointer, message)),
      file_(std::move(file)),
      line_(line),
      pointer_(std::move(pointer)),
      message_(std::move(message)) {}

namespace {

// Nearest enclosing pointer's line in `lines` (0 when none).
std::uint32_t line_in(const std::map<std::string, std::uint32_t>* lines, const std::string& pointer) {
  if (lines == nullptr) return 0;
  std::string p = pointer;
  while (true) {
    auto it = lines->find(p);
    if (it != lines->end()) return it->second;
    if (p.empty()) return 0;
    const auto slash = p.rfind('/');
    p = slash == std::string::npos ? std::string() : p.substr(0, slash);
  }
}

}  // namespace

std::uint32_t line_of(const Trace& trace, const std::string& pointer) { return line_in(trace.lines.get(), pointer); }

namespace {

// RFC 6901 escaping of one reference token.
std::string escape_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

// Deepest nesting of objects and arrays accepted. A valid trace needs about
// 2 per repeat level (at most 8), 3 per nested fork template and a few for
// the top-level structure: 128 leaves room for any hand-written trace while
// keeping every recursive walk shallow.
constexpr std::size_t kMaxJsonDepth = 128;

// Shared newline counter for the iterator below. `line_before_last` is the
// line before the most recently consumed character: nlohmann's lexer reads
// one character past a number before it reports it, so a number's line is
// the line before that look-ahead.
struct LineCounter {
  std::uint32_t line = 1;
  std::uint32_t line_before_last = 1;
};

// Input iterator over the text that counts the newlines it steps over.
class CountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator() = default;
  CountingIterator(const char* p, LineCounter* counter) : p_(p), counter_(counter) {}
  reference operator*() const { return *p_; }
  CountingIterator& operator++() {
    counter_->line_before_last = counter_->line;
    if (*p_ == '\n') ++counter_->line;
    ++p_;
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const CountingIterator& o) const { return p_ == o.p_; }
  bool operator!=(const CountingIterator& o) const { return p_ != o.p_; }

 private:
  const char* p_ = nullptr;
  LineCounter* counter_ = nullptr;
};

// SAX handler recording pointer -> line, and duplicate keys (which
// nlohmann::json would silently collapse to the last one).
class LineMapHandler : public nlohmann::json_sax<json> {
 public:
  explicit LineMapHandler(const LineCounter* counter) : counter_(counter) {}

  std::map<std::string, std::uint32_t> lines;
  std::string duplicate_pointer;  // first duplicate key found, if any
  std::uint32_t duplicate_line = 0;
  std::string error_pointer;      // where a syntax error happened
  std::size_t error_byte = 0;
  std::string error_message;

  bool null() override { return scalar(false); }
  bool boolean(bool) override { return scalar(false); }
  bool number_integer(number_integer_t) override { return scalar(true); }
  bool number_unsigned(number_unsigned_t) override { return scalar(true); }
  bool number_float(number_float_t, const string_t&) override { return scalar(true); }
  bool string(string_t&) override { return scalar(false); }
  bool binary(binary_t&) override { return scalar(false); }
  bool start_object(std::size_t) override {
    if (!enter()) return false;
    begin_value(false);
    frames_.push_back(Frame{false, 0, current_path(), {}, {}});
    return true;
  }
  bool key(string_t& k) override {
    Frame& f = frames_.back();
    f.key = k;
    const std::string ptr = f.path + "/" + escape_token(k);
    if (!f.keys.insert(k).second && duplicate_pointer.empty()) {
      duplicate_pointer = ptr;
      duplicate_line = counter_->line;
    }
    lines[ptr] = counter_->line;
    return true;
  }
  bool end_object() override {
    frames_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    if (!enter()) return false;
    begin_value(false);
    frames_.push_back(Frame{true, 0, current_path(), {}, {}});
    return true;
  }
  bool end_array() override {
    frames_.pop_back();
    return true;
  }
  std::string depth_pointer;  // the container that crossed kMaxJsonDepth
  std::uint32_t depth_line = 0;
  bool too_deep = false;

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    error_byte = position;
    error_pointer = frames_.empty() ? std::string() : element_path();
    error_message = ex.what();
    return false;
  }

 private:
  struct Frame {
    bool is_array;
    std::size_t next_index;
    std::string path;   // pointer of this container
    std::string key;    // objects: the current member's key
    std::set<std::string> keys;
  };

  // Refuses a container past kMaxJsonDepth (the caller then stops the
  // parse: sax_parse returns false without calling parse_error).
  bool enter() {
    if (frames_.size() < kMaxJsonDepth) return true;
    too_deep = true;
    depth_pointer = element_path();
    // "/a/0/0/0/..." 128 levels deep: keep the head, enough to find it.
    if (depth_pointer.size() > 64) depth_pointer = depth_pointer.substr(0, 60) + "/...";
    depth_line = counter_->line;
    return false;
  }

  // Pointer of the element being parsed in the innermost container.
  std::string element_path() const {
    const Frame& f = frames_.back();
    if (f.is_array) return f.next_index == 0 ? f.path : f.path + "/" + std::to_string(f.next_index - 1);
    return f.key.empty() ? f.path : f.path + "/" + escape_token(f.key);
  }
  std::string current_path() const { return current_; }

  // Called at the start of every value: records array elements' lines and
  // sets current_ to the value's pointer.
  void begin_value(bool number) {
    const std::uint32_t line = number ? counter_->line_before_last : counter_->line;
    if (frames_.empty()) {
      current_.clear();
      lines[""] = line;
      return;
    }
    Frame& f = frames_.back();
    if (f.is_array) {
      current_ = f.path + "/" + std::to_string(f.next_index++);
      lines[current_] = line;
    } else {
      current_ = f.path + "/" + escape_token(f.key);
    }
  }
  bool scalar(bool number) {
    begin_value(number);
    return true;
  }

  const LineCounter* counter_;
  std::vector<Frame> frames_;
  std::string current_;
};

std::uint32_t line_at_byte(const std::string& text, std::size_t byte) {
  // nlohmann reports the count of characters read, so the offending
  // character is at byte - 1. At the end of input, blame the last line that
  // has content rather than the empty line after a final newline.
  std::size_t end = std::min(byte == 0 ? 0 : byte - 1, text.size());
  if (end >= text.size()) {
    while (end > 0 && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
    if (end > 0) --end;
  }
  return 1 + static_cast<std::uint32_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
}

// Strip nlohmann's "[json.exception.parse_error.101] parse error at line 3,
// column 1: " prefix: our own prefix already says where.
std::string syntax_message(const std::string& what) {
  auto pos = what.find("column ");
  if (pos != std::string::npos) {
    pos = what.find(": ", pos);
    if (pos != std::string::npos) return what.substr(pos + 2);
  }
  pos = what.find("] ");
  return pos == std::string::npos ? what : what.substr(pos + 2);
}

std::string show(const json& j) {
  std::string s = j.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

const char* type_name(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a fractional number";
    case json::value_t::binary: return "binary data";
    case json::value_t::discarded: return "nothing";
  }
  return "something else";
}

constexpr int kMaxRepeatDepth = 8;

// The typed walk over the DOM. Every check that needs only one element lives
// here; checks across elements live in validate().
class Parser {
 public:
  Parser(std::string file, std::shared_ptr<const std::map<std::string, std::uint32_t>> lines)
      : file_(std::move(file)), lines_(std::move(lines)) {}

  Trace parse(const json& root) {
    Trace t;
    t.source = file_;
    t.lines = lines_;
    expect_object(root, "", "the trace object {\"format\":\"agentcg-trace\",\"version\":1,...}");
    check_keys(root, "",
               {"format", "version", "name", "description", "duration_ns", "generator", "machine", "cgroups",
                "processes", "gpu"});
    const json& format = require(root, "", "format");
    if (!format.is_string() || format.get<std::string>() != kFormatName)
      fail("/format", std::string("expected \"") + kFormatName + "\", got " + show(format));
    const json& version = require(root, "", "version");
    if (!version.is_number_integer() || version.get<std::int64_t>() != kFormatVersion)
      fail("/version", "unsupported version " + show(version) + "; expected " + std::to_string(kFormatVersion) +
                           " (this build reads trace format v1 only)");
    t.version = kFormatVersion;
    if (root.contains("name")) t.name = get_string(root["name"], "/name", false);
    if (root.contains("description")) t.description = get_string(root["description"], "/description", false);
    if (root.contains("duration_ns")) {
      t.duration_ns = get_u64(root["duration_ns"], "/duration_ns");
      if (*t.duration_ns == 0) fail("/duration_ns", "expected a positive duration in ns, got 0");
    }
    if (root.contains("generator")) {
      expect_object(root["generator"], "/generator", "an object (provenance: kind, seed, options)");
      t.generator = root["generator"];
    }
    t.machine = parse_machine(require(root, "", "machine"), "/machine");
    if (root.contains("cgroups")) {
      const json& cgs = root["cgroups"];
      expect_array(cgs, "/cgroups", "an array of cgroup objects");
      for (std::size_t i = 0; i < cgs.size(); ++i)
        t.cgroups.push_back(parse_cgroup(cgs[i], "/cgroups/" + std::to_string(i)));
      // Parents first: a stable sort by depth keeps the listed order otherwise.
      std::stable_sort(t.cgroups.begin(), t.cgroups.end(), [](const CgroupSpec& a, const CgroupSpec& b) {
        return depth(a.path) < depth(b.path);
      });
    }
    const json& procs = require(root, "", "processes");
    expect_array(procs, "/processes", "an array of process objects");
    for (std::size_t i = 0; i < procs.size(); ++i)
      t.processes.push_back(parse_process(procs[i], "/processes/" + std::to_string(i), false));
    if (root.contains("gpu")) t.extra["gpu"] = root["gpu"];
    return t;
  }

 private:
  static std::size_t depth(const std::string& path) {
    return path == "/" ? 0 : static_cast<std::size_t>(std::count(path.begin(), path.end(), '/'));
  }

  std::uint32_t line(const std::string& ptr) const { return line_in(lines_.get(), ptr); }
  SourceLoc loc(const std::string& ptr) const { return SourceLoc{line(ptr), ptr}; }

  [[noreturn]] void fail(const std::string& ptr, const std::string& message) const {
    throw TraceError(file_, line(ptr), ptr, message);
  }

  void expect_object(const json& j, const std::string& ptr, const std::string& what) const {
    if (!j.is_object()) fail(ptr, "expected " + what + ", got " + type_name(j) + " " + show(j));
  }
  void expect_array(const json& j, const std::string& ptr, const std::string& what) const {
    if (!j.is_array()) fail(ptr, "expected " + what + ", got " + type_name(j) + " " + show(j));
  }
  void check_keys(const json& j, const std::string& ptr, std::initializer_list<const char*> allowed) const {
    for (auto it = j.begin(); it != j.end(); ++it) {
      bool ok = false;
      for (const char* a : allowed) ok = ok || it.key() == a;
      if (!ok) {
        std::string list;
        for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
        fail(ptr + "/" + escape_token(it.key()), "unknown key \"" + it.key() + "\"; expected one of: " + list);
      }
    }
  }
  const json& require(const json& j, const std::string& ptr, const char* key) const {
    if (!j.contains(key)) fail(ptr, std::string("missing required key \"") + key + "\"");
    return j.at(key);
  }
  std::uint64_t get_u64(const json& j, const std::string& ptr) const {
    if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<std::int64_t>() >= 0))
      fail(ptr, "expected a non-negative integer, got " + show(j));
    return j.get<std::uint64_t>();
  }
  std::uint64_t get_u64_range(const json& j, const std::string& ptr, std::uint64_t lo, std::uint64_t hi) const {
    if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<std::int64_t>() >= 0))
      fail(ptr, "expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + show(j));
    const auto v = j.get<std::uint64_t>();
    if (v < lo || v > hi)
      fail(ptr, "expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + show(j));
    return v;
  }
  std::int64_t get_pid(const json& j, const std::string& ptr) const {
    if (!j.is_number_integer() || j.get<std::int64_t>() <= 0 ||
        j.get<std::int64_t>() > std::numeric_limits<std::int32_t>::max())
      fail(ptr, "expected a pid (an integer in 1..2147483647), got " + show(j));
    return j.get<std::int64_t>();
  }
  std::string get_string(const json& j, const std::string& ptr, bool non_empty) const {
    if (!j.is_string()) fail(ptr, std::string("expected a string, got ") + type_name(j) + " " + show(j));
    std::string s = j.get<std::string>();
    if (non_empty && s.empty()) fail(ptr, "expected a non-empty string, got \"\"");
    return s;
  }

  Value parse_value(const json& j, const std::string& ptr, const char* unit) const {
    const std::string expected =
        std::string("expected a non-negative integer (") + unit +
        ") or a distribution object ({\"dist\":\"uniform\",\"min\":..,\"max\":..}, "
        "{\"dist\":\"exponential\",\"mean\":..}, {\"dist\":\"lognormal\",\"median\":..,\"sigma\":..})";
    if (j.is_number_unsigned() || (j.is_number_integer() && j.get<std::int64_t>() >= 0))
      return Value::fixed(j.get<std::uint64_t>());
    if (!j.is_object()) fail(ptr, expected + ", got " + show(j));
    if (!j.contains("dist")) fail(ptr, "missing required key \"dist\" (uniform, exponential or lognormal)");
    const std::string dist = get_string(j["dist"], ptr + "/dist", true);
    Value v;
    if (dist == "uniform") {
      check_keys(j, ptr, {"dist", "min", "max"});
      v.dist = Value::Dist::kUniform;
      v.a = get_u64(require(j, ptr, "min"), ptr + "/min");
      v.b = get_u64(require(j, ptr, "max"), ptr + "/max");
      if (v.b < v.a) fail(ptr + "/max", "expected max >= min (" + std::to_string(v.a) + "), got " + std::to_string(v.b));
    } else if (dist == "exponential") {
      check_keys(j, ptr, {"dist", "mean", "max"});
      v.dist = Value::Dist::kExponential;
      v.a = get_u64(require(j, ptr, "mean"), ptr + "/mean");
      if (v.a == 0) fail(ptr + "/mean", "expected a positive mean, got 0");
      if (j.contains("max")) v.max = cap(j["max"], ptr + "/max");
    } else if (dist == "lognormal") {
      check_keys(j, ptr, {"dist", "median", "sigma", "max"});
      v.dist = Value::Dist::kLogNormal;
      v.a = get_u64(require(j, ptr, "median"), ptr + "/median");
      if (v.a == 0) fail(ptr + "/median", "expected a positive median, got 0");
      const json& s = require(j, ptr, "sigma");
      if (!s.is_number() || s.get<double>() < 0.0 || s.get<double>() > 10.0)
        fail(ptr + "/sigma", "expected a number in 0..10 (the shape of the log-normal), got " + show(s));
      v.sigma = s.get<double>();
      if (j.contains("max")) v.max = cap(j["max"], ptr + "/max");
    } else {
      fail(ptr + "/dist", "unknown distribution " + show(j["dist"]) + "; expected \"uniform\", \"exponential\" or \"lognormal\"");
    }
    return v;
  }
  std::uint64_t cap(const json& j, const std::string& ptr) const {
    const std::uint64_t c = get_u64(j, ptr);
    if (c == 0) fail(ptr, "expected a positive cap (omit \"max\" for no cap), got 0");
    return c;
  }

  Machine parse_machine(const json& j, const std::string& ptr) const {
    expect_object(j, ptr, "an object {\"cpus\":N,...}");
    check_keys(j, ptr, {"cpus", "context_switch_ns", "wakeup_overhead_ns"});
    Machine m;
    m.cpus = static_cast<std::uint32_t>(get_u64_range(require(j, ptr, "cpus"), ptr + "/cpus", 1, 4096));
    if (j.contains("context_switch_ns")) m.context_switch_ns = get_u64(j["context_switch_ns"], ptr + "/context_switch_ns");
    if (j.contains("wakeup_overhead_ns"))
      m.wakeup_overhead_ns = get_u64(j["wakeup_overhead_ns"], ptr + "/wakeup_overhead_ns");
    return m;
  }

  CgroupSpec parse_cgroup(const json& j, const std::string& ptr) const {
    expect_object(j, ptr, "a cgroup object {\"path\":\"/a\",...}");
    check_keys(j, ptr, {"path", "cpu_weight", "cpu_max", "memory_high", "memory_max"});
    CgroupSpec c;
    c.loc = loc(ptr);
    c.path = get_string(require(j, ptr, "path"), ptr + "/path", true);
    if (j.contains("cpu_weight"))
      c.cpu_weight = static_cast<std::uint32_t>(get_u64_range(j["cpu_weight"], ptr + "/cpu_weight", 1, 10000));
    if (j.contains("cpu_max")) {
      const std::string p = ptr + "/cpu_max";
      const json& m = j["cpu_max"];
      expect_object(m, p, "an object {\"quota_us\":N,\"period_us\":N} (omit cpu_max for \"max\")");
      check_keys(m, p, {"quota_us", "period_us"});
      CpuMax cm;
      cm.quota_us = get_u64(require(m, p, "quota_us"), p + "/quota_us");
      if (m.contains("period_us")) cm.period_us = get_u64(m["period_us"], p + "/period_us");
      c.cpu_max = cm;
    }
    if (j.contains("memory_high")) c.memory_high = get_u64(j["memory_high"], ptr + "/memory_high");
    if (j.contains("memory_max")) c.memory_max = get_u64(j["memory_max"], ptr + "/memory_max");
    return c;
  }

  // Listed processes (template = false) and inline fork templates.
  ProcessSpec parse_process(const json& j, const std::string& ptr, bool templ) const {
    ProcessSpec p;
    p.loc = loc(ptr);
    if (templ) {
      expect_object(j, ptr, "a process template object {\"comm\":..,\"ops\":[..]}");
      check_keys(j, ptr, {"comm", "cgroup", "agent", "ops"});
      p.cgroup.clear();  // empty = the parent's cgroup
    } else {
      expect_object(j, ptr, "a process object {\"pid\":N,\"ops\":[..],...}");
      check_keys(j, ptr, {"pid", "parent", "cgroup", "start_ns", "comm", "agent", "ops"});
      p.pid = get_pid(require(j, ptr, "pid"), ptr + "/pid");
      if (j.contains("parent")) p.parent = get_pid(j["parent"], ptr + "/parent");
      if (j.contains("start_ns")) p.start_ns = get_u64(j["start_ns"], ptr + "/start_ns");
    }
    if (j.contains("cgroup")) p.cgroup = get_string(j["cgroup"], ptr + "/cgroup", true);
    if (j.contains("comm")) p.comm = get_string(j["comm"], ptr + "/comm", false);
    if (j.contains("agent")) {
      const std::string ap = ptr + "/agent";
      const json& a = j["agent"];
      expect_object(a, ap, "an object {\"session\":\"...\"}");
      check_keys(a, ap, {"session"});
      p.agent = AgentInfo{get_string(require(a, ap, "session"), ap + "/session", true)};
    }
    const json& ops = require(j, ptr, "ops");
    p.ops = parse_ops(ops, ptr + "/ops", 0);
    return p;
  }

  std::vector<Op> parse_ops(const json& j, const std::string& ptr, int repeat_depth) const {
    expect_array(j, ptr, "an array of ops");
    std::vector<Op> out;
    out.reserve(j.size());
    for (std::size_t i = 0; i < j.size(); ++i) out.push_back(parse_op(j[i], ptr + "/" + std::to_string(i), repeat_depth));
    return out;
  }

  Op parse_op(const json& j, const std::string& ptr, int repeat_depth) const {
    static const char* kOps =
        "run, sleep, io, fork, exec, wait, exit, mem, repeat, tool_begin, tool_end or step";
    expect_object(j, ptr, "an op object {\"op\":..}");
    Op op;
    op.loc = loc(ptr);
    if (!j.contains("op")) fail(ptr, std::string("missing required key \"op\" (") + kOps + ")");
    const json& kind = j["op"];
    if (!kind.is_string()) fail(ptr + "/op", std::string("expected an op name (") + kOps + "), got " + show(kind));
    const std::string k = kind.get<std::string>();
    if (k == "run" || k == "sleep" || k == "io") {
      check_keys(j, ptr, {"op", "ns"});
      op.kind = k == "run" ? OpKind::kRun : k == "sleep" ? OpKind::kSleep : OpKind::kIo;
      op.ns = parse_value(require(j, ptr, "ns"), ptr + "/ns", "ns");
    } else if (k == "fork") {
      check_keys(j, ptr, {"op", "pid", "child"});
      op.kind = OpKind::kFork;
      if (j.contains("pid") == j.contains("child"))
        fail(ptr, "expected exactly one of \"pid\" (a listed process) or \"child\" (an inline process template)");
      if (j.contains("pid")) {
        op.pid = get_pid(j["pid"], ptr + "/pid");
      } else {
        op.child = std::make_shared<const ProcessSpec>(parse_process(j["child"], ptr + "/child", true));
      }
    } else if (k == "exec") {
      check_keys(j, ptr, {"op", "comm"});
      op.kind = OpKind::kExec;
      op.name = get_string(require(j, ptr, "comm"), ptr + "/comm", true);
    } else if (k == "wait" || k == "exit" || k == "tool_end") {
      check_keys(j, ptr, {"op"});
      op.kind = k == "wait" ? OpKind::kWait : k == "exit" ? OpKind::kExit : OpKind::kToolEnd;
    } else if (k == "mem") {
      check_keys(j, ptr, {"op", "bytes"});
      op.kind = OpKind::kMem;
      op.bytes = parse_value(require(j, ptr, "bytes"), ptr + "/bytes", "bytes");
    } else if (k == "repeat") {
      check_keys(j, ptr, {"op", "count", "body"});
      op.kind = OpKind::kRepeat;
      if (repeat_depth + 1 > kMaxRepeatDepth)
        fail(ptr, "repeat nested more than " + std::to_string(kMaxRepeatDepth) + " deep");
      op.count = static_cast<std::uint32_t>(
          get_u64_range(require(j, ptr, "count"), ptr + "/count", 1, std::numeric_limits<std::uint32_t>::max()));
      op.body = parse_ops(require(j, ptr, "body"), ptr + "/body", repeat_depth + 1);
    } else if (k == "tool_begin") {
      check_keys(j, ptr, {"op", "tool"});
      op.kind = OpKind::kToolBegin;
      op.name = get_string(require(j, ptr, "tool"), ptr + "/tool", true);
    } else if (k == "step") {
      check_keys(j, ptr, {"op", "step"});
      op.kind = OpKind::kStep;
      op.step = get_u64(require(j, ptr, "step"), ptr + "/step");
    } else {
      fail(ptr + "/op", "unknown op \"" + k + "\"; expected " + kOps);
    }
    return op;
  }

  std::string file_;
  std::shared_ptr<const std::map<std::string, std::uint32_t>> lines_;
};

}  // namespace

Trace parse_trace(const std::string& text, const std::string& source) {
  LineCounter counter;
  LineMapHandler handler(&counter);
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  const bool ok = json::sax_parse(CountingIterator(begin, &counter), CountingIterator(end, &counter), &handler);
  if (!ok && handler.too_deep)
    throw TraceError(source, handler.depth_line, handler.depth_pointer,
                     "nested more than " + std::to_string(kMaxJsonDepth) +
                         " arrays/objects deep; expected a trace of at most that depth");
  if (!ok) {
    const std::uint32_t line = line_at_byte(text, handler.error_byte);
    throw TraceError(source, line, handler.error_pointer, "invalid JSON: " + syntax_message(handler.error_message));
  }
  if (!handler.duplicate_pointer.empty())
    throw TraceError(source, handler.duplicate_line, handler.duplicate_pointer,
                     "duplicate key; expected each key at most once per object");
  const json root = json::parse(text);
  auto lines = std::make_shared<const std::map<std::string, std::uint32_t>>(std::move(handler.lines));
  Trace t = Parser(source, lines).parse(root);
  validate(t);
  return t;
}

Trace load_trace_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path, 0, "", "cannot open the file for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw TraceError(path, 0, "", "read error");
  return parse_trace(ss.str(), path);
}

}  // namespace agentcg::trace
