// SPDX-License-Identifier: GPL-2.0-only
// Trace format v1: JSON text -> Trace, with errors that say where.
//
// One streaming pass (issue 21): nlohmann::json::sax_parse runs over an
// iterator that counts newlines, and a SAX handler (StreamHandler) builds a
// small DOM of everything except the elements of /processes; each process
// element is built into a DOM of its own, handed to the typed parser as soon
// as it closes, and dropped. So the whole file never exists as a DOM, and no
// map from JSON pointer to line is kept for the (many) values inside the
// processes: a process's, an op's and a fork template's line is stored in
// its own DOM object under the hidden key kLineKey (a byte sequence the
// lexer rejects in JSON text, so no real key can collide) and kept in its
// SourceLoc; ops keep their line but not their pointer string (validate()
// rebuilds the pointer from the op's index). Any other line inside a process
// (an error's field, e.g. /processes/3/ops/5/ns) is found on demand by
// rescanning the text for that one pointer (rescan_line), which happens only
// when an error is reported; the answer is the one the former full map gave
// (the line of the nearest enclosing pointer that exists). The elements of
// /cgroups are kept in the DOM (validate() needs them all) but located the
// same way: a line in each object, none in the pointer map.
//
// Nesting is capped at kMaxJsonDepth containers, checked in the SAX pass
// before the DOM exists: a hostile 100k-deep `[[[...]]]` used to cost memory
// quadratic in depth (a pointer string per frame and per value) and a stack
// overflow in the recursive dump() of the error path; now it is one error
// naming the line where the limit was crossed, and nothing recursive below
// (the typed walk, show(), validate()) ever sees more than that depth.
//
// Invariants: every error is a TraceError naming file, line, JSON pointer,
// what was found and what was expected; errors come in the order of the
// former two-pass parser (syntax, depth and duplicate keys anywhere first;
// then the typed checks in the order of Parser::parse(), a process's error
// held back until the keys before "processes" were checked); unknown keys
// are errors (so a typo never passes silently); "gpu" is the only section
// kept untyped (in Trace::extra). Cgroups come out parents first (stable by
// depth). Called by load_trace_file(), the CLI (`trace validate`), Python
// bindings.
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <sstream>

#include "sim/trace/line_iterator.h"
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
std::uint32_t line_in(const std::map<std::string, std::uint32_t>& lines, const std::string& pointer) {
  std::string p = pointer;
  while (true) {
    auto it = lines.find(p);
    if (it != lines.end()) return it->second;
    if (p.empty()) return 0;
    const auto slash = p.rfind('/');
    p = slash == std::string::npos ? std::string() : p.substr(0, slash);
  }
}

std::uint32_t rescan_line(const std::string& text, const std::string& pointer);

// The whole text of `path` ("" when it cannot be read): error paths only.
std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The text the index describes: the parsed string, or the file read once.
const std::string* source_text(const LineIndex& index) {
  if (index.text != nullptr) return index.text;
  if (index.path.empty()) return nullptr;
  if (index.loaded.empty()) index.loaded = read_whole_file(index.path);
  return &index.loaded;
}

}  // namespace

std::uint32_t LineIndex::line_of(const std::string& pointer) const {
  if (pointer.rfind("/processes/", 0) == 0 || pointer.rfind("/cgroups/", 0) == 0) {
    const std::string* t = source_text(*this);
    return t != nullptr ? rescan_line(*t, pointer) : 0;
  }
  return line_in(lines, pointer);
}

std::uint32_t line_of(const Trace& trace, const std::string& pointer) {
  return trace.lines ? trace.lines->line_of(pointer) : 0;
}

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

using TextIterator = LineCountingIterator<TextSource>;
using FileIterator = LineCountingIterator<FileChunks>;

// The hidden member that carries an object's line inside a process DOM.
// 0xFF never occurs in UTF-8, and the lexer rejects ill-formed UTF-8 in
// strings, so no key of the text can be equal to it.
const std::string kLineKey = "\xff";

// The pointer -> line bookkeeping of both SAX handlers below: a stack of
// container frames (reused, so a steady pass allocates nothing per value),
// each pointer built only when it is needed. Pointers and lines follow one
// rule: an object member's line is its key's line, an array element's line
// is the line of its first token, the root's is "".
class PointerTracker {
 protected:
  struct Frame {
    bool is_array = false;
    std::size_t next_index = 0;      // arrays: index of the next element
    std::string key;                 // objects: the current member's key
    std::uint32_t key_line = 0;      // objects: the line of that key
    std::vector<std::string> keys;   // objects: keys seen (duplicate check)
  };

  explicit PointerTracker(const LineCounter* counter) : counter_(counter) {}

  // Pointer of the first n frames' current elements ("" for n = 0).
  std::string pointer_of(std::size_t n) const {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) {
      const Frame& f = frames_[i];
      out += '/';
      if (f.is_array) out += std::to_string(f.next_index - 1);
      else out += escape_token(f.key);
    }
    return out;
  }
  // Pointer of the element being parsed in the innermost container.
  std::string element_path() const {
    if (depth_ == 0) return std::string();
    const Frame& f = frames_[depth_ - 1];
    if (f.is_array) return f.next_index == 0 ? pointer_of(depth_ - 1) : pointer_of(depth_);
    return f.key.empty() ? pointer_of(depth_ - 1) : pointer_of(depth_);
  }
  // The start of a value: counts array elements; returns the line the
  // value's pointer has (for object members: the key's line).
  std::uint32_t begin_value(bool number) {
    const std::uint32_t line = number ? counter_->line_before_last : counter_->line;
    if (depth_ == 0) return line;
    Frame& f = frames_[depth_ - 1];
    if (f.is_array) {
      ++f.next_index;
      return line;
    }
    return f.key_line;
  }
  // A key: returns false for a duplicate within its object.
  bool note_key(const std::string& k) {
    Frame& f = frames_[depth_ - 1];
    f.key = k;
    f.key_line = counter_->line;
    for (const std::string& seen : f.keys)
      if (seen == k) return false;
    f.keys.push_back(k);
    return true;
  }
  // Refuses a container past kMaxJsonDepth (the caller then stops the
  // parse: sax_parse returns false without calling parse_error).
  bool enter() {
    if (depth_ < kMaxJsonDepth) return true;
    too_deep = true;
    depth_pointer = element_path();
    // "/a/0/0/0/..." 128 levels deep: keep the head, enough to find it.
    if (depth_pointer.size() > 64) depth_pointer = depth_pointer.substr(0, 60) + "/...";
    depth_line = counter_->line;
    return false;
  }
  void push(bool is_array) {
    if (depth_ == frames_.size()) frames_.emplace_back();
    Frame& f = frames_[depth_++];
    f.is_array = is_array;
    f.next_index = 0;
    f.key.clear();
    f.key_line = 0;
    f.keys.clear();
  }
  void pop() { --depth_; }

 public:
  std::string depth_pointer;  // the container that crossed kMaxJsonDepth
  std::uint32_t depth_line = 0;
  bool too_deep = false;

 protected:
  const LineCounter* counter_;
  std::vector<Frame> frames_;
  std::size_t depth_ = 0;
};

// Finds the line of one pointer by a pass over the text: the line of the
// pointer itself if it exists, else of its nearest enclosing pointer (0 if
// none). Used only on error paths (a failing field inside a process).
class RescanHandler : public nlohmann::json_sax<json>, private PointerTracker {
 public:
  RescanHandler(const LineCounter* counter, const std::string& target)
      : PointerTracker(counter), target_(target) {}
  std::uint32_t line() const { return best_line_; }

  bool null() override { return scalar(false); }
  bool boolean(bool) override { return scalar(false); }
  bool number_integer(number_integer_t) override { return scalar(true); }
  bool number_unsigned(number_unsigned_t) override { return scalar(true); }
  bool number_float(number_float_t, const string_t&) override { return scalar(true); }
  bool string(string_t&) override { return scalar(false); }
  bool binary(binary_t&) override { return scalar(false); }
  bool start_object(std::size_t) override { return container(false); }
  bool start_array(std::size_t) override { return container(true); }
  bool key(string_t& k) override {
    (void)note_key(k);
    consider(pointer_of(depth_), counter_->line);
    return true;
  }
  bool end_object() override {
    pop();
    return true;
  }
  bool end_array() override {
    pop();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  bool container(bool is_array) {
    if (!enter()) return false;
    value_start(false);
    push(is_array);
    return true;
  }
  bool scalar(bool number) {
    value_start(number);
    return true;
  }
  // Array elements and the root have a line of their own; object members
  // were considered at their key.
  void value_start(bool number) {
    const bool own_line = depth_ == 0 || frames_[depth_ - 1].is_array;
    const std::uint32_t line = begin_value(number);
    if (own_line) consider(pointer_of(depth_), line);
  }
  void consider(const std::string& ptr, std::uint32_t line) {
    if (ptr.size() < best_size_ && best_size_ != kNone) return;
    const bool self = ptr == target_;
    const bool ancestor = ptr.size() < target_.size() && target_.compare(0, ptr.size(), ptr) == 0 &&
                          target_[ptr.size()] == '/';
    if (!self && !ancestor) return;
    best_size_ = ptr.size();
    best_line_ = line;
  }
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  const std::string& target_;
  std::size_t best_size_ = kNone;
  std::uint32_t best_line_ = 0;
};

std::uint32_t rescan_line(const std::string& text, const std::string& pointer) {
  LineCounter counter;
  RescanHandler handler(&counter, pointer);
  TextSource src(text.data(), text.data() + text.size());
  (void)json::sax_parse(TextIterator(&src, &counter), TextIterator(), &handler);
  return handler.line();
}

// The one pass: syntax, depth and duplicate-key errors; the lines of every
// pointer outside the process elements; a DOM of everything but the process
// elements; each process element's DOM handed to `on_process` when it
// closes (then dropped). Once `skip_processes` is set (a process failed),
// later process elements are scanned but not built.
class StreamHandler : public nlohmann::json_sax<json>, private PointerTracker {
 public:
  using ProcessSink = std::function<void(json& element, std::size_t index)>;
  StreamHandler(const LineCounter* counter, ProcessSink on_process)
      : PointerTracker(counter), on_process_(std::move(on_process)) {}

  json root;
  std::map<std::string, std::uint32_t> lines;  // pointers outside /processes/N
  std::string duplicate_pointer;  // first duplicate key found, if any
  std::uint32_t duplicate_line = 0;
  std::string error_pointer;      // where a syntax error happened
  std::size_t error_byte = 0;
  std::string error_message;
  bool skip_processes = false;
  std::uint32_t too_many_cgroups_line = 0;  // nonzero: /cgroups had more than kMaxCgroups elements
  using PointerTracker::depth_line;
  using PointerTracker::depth_pointer;
  using PointerTracker::too_deep;

  bool null() override { return scalar(json(nullptr), false); }
  bool boolean(bool v) override { return scalar(json(v), false); }
  bool number_integer(number_integer_t v) override { return scalar(json(v), true); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(json(v), true); }
  bool number_float(number_float_t v, const string_t&) override { return scalar(json(v), true); }
  bool string(string_t& v) override { return scalar(json(std::move(v)), false); }
  bool binary(binary_t& v) override { return scalar(json::binary(std::move(v)), false); }
  bool start_object(std::size_t) override { return container(false); }
  bool start_array(std::size_t) override { return container(true); }
  bool key(string_t& k) override {
    if (!note_key(k) && duplicate_pointer.empty()) {
      duplicate_pointer = pointer_of(depth_);
      duplicate_line = counter_->line;
    }
    if (!located(depth_)) lines[pointer_of(depth_)] = counter_->line;
    return true;
  }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    error_byte = position;
    error_pointer = element_path();
    error_message = ex.what();
    return false;
  }

 private:
  // The DOM node each open container is filled into (null: not built).
  std::vector<json*> nodes_;
  json process_;                 // the process element being built
  std::size_t processes_depth_ = 0;  // depth_ inside the root's "processes" array; 0 = not in it
  std::size_t cgroups_depth_ = 0;    // the same for the root's "cgroups" array

  // True when the values of frame depth `d` lie inside a process element:
  // frame 0 is the root object, frame 1 its "processes" array.
  bool inside_process(std::size_t d) const { return processes_depth_ != 0 && d > processes_depth_; }
  // The value starting now is an element of the root's "processes" array.
  bool at_process_element() const { return processes_depth_ != 0 && depth_ == processes_depth_; }
  bool inside_cgroup(std::size_t d) const { return cgroups_depth_ != 0 && d > cgroups_depth_; }
  bool at_cgroup_element() const { return cgroups_depth_ != 0 && depth_ == cgroups_depth_; }
  // Values whose lines are not kept in `lines`: those inside a process or a
  // cgroup element (a trace of 1e6 cgroups kept 3e6 pointer strings, 247 MB,
  // for the whole run). Their objects carry kLineKey; any other line is
  // found by rescan_line on an error path.
  bool located(std::size_t d) const { return inside_process(d) || inside_cgroup(d); }
  // False (the parse stops) at the element of /cgroups past kMaxCgroups.
  bool cgroup_count_ok(std::uint32_t line) {
    if (!at_cgroup_element() || frames_[depth_ - 1].next_index <= kMaxCgroups) return true;
    too_many_cgroups_line = line;
    return false;
  }

  // Places a new value into the DOM of its container; returns its node or
  // null when that container is not built.
  json* place(json&& v) {
    if (depth_ == 0) {
      root = std::move(v);
      return &root;
    }
    if (at_process_element()) {
      if (skip_processes) return nullptr;
      process_ = std::move(v);
      return &process_;
    }
    json* parent = nodes_[depth_ - 1];
    if (parent == nullptr) return nullptr;
    const Frame& f = frames_[depth_ - 1];
    if (f.is_array) {
      parent->push_back(std::move(v));
      return &parent->back();
    }
    json& slot = (*parent)[f.key];
    slot = std::move(v);
    return &slot;
  }

  bool scalar(json&& v, bool number) {
    const bool element = at_process_element();
    const bool outside = !located(depth_) && !element && !at_cgroup_element();
    const bool own_line = depth_ == 0 || frames_[depth_ - 1].is_array;
    const std::uint32_t line = begin_value(number);
    if (!cgroup_count_ok(line)) return false;
    if (outside && own_line) lines[pointer_of(depth_)] = line;
    (void)place(std::move(v));
    if (element && !skip_processes) finish_process();
    return true;
  }

  bool container(bool is_array) {
    if (!enter()) return false;
    const bool element = at_process_element();
    const bool in_proc = located(depth_) || element || at_cgroup_element();
    const bool own_line = depth_ == 0 || frames_[depth_ - 1].is_array;
    // The root's "processes" array: its elements are streamed.
    const bool is_processes = is_array && depth_ == 1 && processes_depth_ == 0 && !frames_[0].is_array &&
                              frames_[0].key == "processes";
    const bool is_cgroups = is_array && depth_ == 1 && cgroups_depth_ == 0 && !frames_[0].is_array &&
                            frames_[0].key == "cgroups";
    const std::uint32_t line = begin_value(false);
    if (!cgroup_count_ok(line)) return false;
    if (!in_proc && own_line) lines[pointer_of(depth_)] = line;
    json* node = place(is_array ? json::array() : json::object());
    if (node != nullptr && in_proc && !is_array) (*node)[kLineKey] = line;
    push(is_array);
    if (nodes_.size() < depth_) nodes_.resize(depth_);
    nodes_[depth_ - 1] = node;
    if (is_processes) processes_depth_ = depth_;
    if (is_cgroups) cgroups_depth_ = depth_;
    return true;
  }

  bool close() {
    const bool was_processes = processes_depth_ != 0 && depth_ == processes_depth_;
    const bool was_cgroups = cgroups_depth_ != 0 && depth_ == cgroups_depth_;
    pop();
    if (was_processes) processes_depth_ = 0;
    else if (was_cgroups) cgroups_depth_ = 0;
    else if (at_process_element() && !skip_processes) finish_process();
    return true;
  }

  void finish_process() {
    const std::size_t index = frames_[depth_ - 1].next_index - 1;
    on_process_(process_, index);
    process_ = json();
  }

  ProcessSink on_process_;
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

// A copy of `j` without the hidden line members (error messages only).
json without_lines(const json& j) {
  if (j.is_object()) {
    json out = json::object();
    for (auto it = j.begin(); it != j.end(); ++it)
      if (it.key() != kLineKey) out[it.key()] = without_lines(it.value());
    return out;
  }
  if (j.is_array()) {
    json out = json::array();
    for (const json& e : j) out.push_back(without_lines(e));
    return out;
  }
  return j;
}

std::string show(const json& j) {
  std::string s = j.is_structured() ? without_lines(j).dump() : j.dump();
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
  Parser(std::string file, std::shared_ptr<const LineIndex> lines)
      : file_(std::move(file)), lines_(std::move(lines)) {}

  // One element of /processes, as the stream hands it over.
  ProcessSpec parse_listed_process(const json& j, std::size_t index) const {
    return parse_process(j, "/processes/" + std::to_string(index), false);
  }

  // The document without its process elements (`root`'s "processes" is an
  // empty array when the text's was an array); `processes` are the ones the
  // stream parsed, `process_error` the first process's error if one failed.
  Trace parse(const json& root, std::vector<ProcessSpec> processes, const std::optional<TraceError>& process_error) {
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
      t.cgroups.reserve(cgs.size());  // growth by doubling left up to half of it unused (1e6 cgroups: 150 MB)
      for (std::size_t i = 0; i < cgs.size(); ++i)
        t.cgroups.push_back(parse_cgroup(cgs[i], "/cgroups/" + std::to_string(i)));
      // Parents first: a stable sort by depth keeps the listed order otherwise
      // (skipped when already so: its buffer is a second copy of the list).
      const auto shallower = [](const CgroupSpec& a, const CgroupSpec& b) { return depth(a.path) < depth(b.path); };
      if (!std::is_sorted(t.cgroups.begin(), t.cgroups.end(), shallower))
        std::stable_sort(t.cgroups.begin(), t.cgroups.end(), shallower);
    }
    const json& procs = require(root, "", "processes");
    expect_array(procs, "/processes", "an array of process objects");
    if (process_error) throw *process_error;
    t.processes = std::move(processes);
    if (root.contains("gpu")) t.extra["gpu"] = root["gpu"];
    return t;
  }

 private:
  static std::size_t depth(const std::string& path) {
    return path == "/" ? 0 : static_cast<std::size_t>(std::count(path.begin(), path.end(), '/'));
  }

  std::uint32_t line(const std::string& ptr) const { return lines_ ? lines_->line_of(ptr) : 0; }
  SourceLoc loc(const std::string& ptr) const { return SourceLoc{line(ptr), ptr}; }
  // Inside a process: the line the stream stored in the object itself;
  // `keep_pointer` false leaves the pointer empty (ops and fork templates:
  // validate() rebuilds it from the index, saving a string per op).
  SourceLoc element_loc(const json& j, const std::string& ptr, bool keep_pointer) const {
    std::uint32_t l = 0;
    if (j.is_object()) {
      auto it = j.find(kLineKey);
      if (it != j.end() && it->is_number_unsigned()) l = it->get<std::uint32_t>();
    }
    if (l == 0) l = line(ptr);
    return SourceLoc{l, keep_pointer ? ptr : std::string()};
  }

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
      if (it.key() == kLineKey) continue;
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
  std::int32_t get_nice(const json& j, const std::string& ptr) const {
    if (!j.is_number_integer() || j.get<std::int64_t>() < -20 || j.get<std::int64_t>() > 19)
      fail(ptr, "expected a nice value (an integer in -20..19), got " + show(j));
    return static_cast<std::int32_t>(j.get<std::int64_t>());
  }
  std::int32_t get_rt_priority(const json& j, const std::string& ptr) const {
    if (!j.is_number_integer() || j.get<std::int64_t>() < 0 || j.get<std::int64_t>() > 99)
      fail(ptr, "expected a real-time priority (an integer in 1..99, or 0 for the fair class), got " + show(j));
    return static_cast<std::int32_t>(j.get<std::int64_t>());
  }
  // rt_policy "fifo" (SCHED_FIFO, the default) or "rr" (SCHED_RR): true for rr
  bool get_rt_policy(const json& j, const std::string& ptr) const {
    if (!j.is_string() || (j.get<std::string>() != "fifo" && j.get<std::string>() != "rr"))
      fail(ptr, "expected a real-time policy (\"fifo\" or \"rr\"), got " + show(j));
    return j.get<std::string>() == "rr";
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
    c.loc = element_loc(j, ptr, true);
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
    p.loc = element_loc(j, ptr, !templ);
    if (templ) {
      expect_object(j, ptr, "a process template object {\"comm\":..,\"ops\":[..]}");
      check_keys(j, ptr, {"comm", "cgroup", "nice", "rt_priority", "rt_policy", "agent", "ops"});
      p.cgroup.clear();  // empty = the parent's cgroup
    } else {
      expect_object(j, ptr, "a process object {\"pid\":N,\"ops\":[..],...}");
      check_keys(j, ptr,
                 {"pid", "parent", "cgroup", "start_ns", "comm", "nice", "rt_priority", "rt_policy", "agent", "ops"});
      p.pid = get_pid(require(j, ptr, "pid"), ptr + "/pid");
      if (j.contains("parent")) p.parent = get_pid(j["parent"], ptr + "/parent");
      if (j.contains("start_ns")) p.start_ns = get_u64(j["start_ns"], ptr + "/start_ns");
    }
    if (j.contains("cgroup")) p.cgroup = get_string(j["cgroup"], ptr + "/cgroup", true);
    if (j.contains("comm")) p.comm = get_string(j["comm"], ptr + "/comm", false);
    if (j.contains("nice")) p.nice = get_nice(j["nice"], ptr + "/nice");
    if (j.contains("rt_priority")) p.rt_priority = get_rt_priority(j["rt_priority"], ptr + "/rt_priority");
    if (j.contains("rt_policy")) {
      p.rt_round_robin = get_rt_policy(j["rt_policy"], ptr + "/rt_policy");
      if (!p.rt_priority || *p.rt_priority == 0)
        fail(ptr + "/rt_policy", "a real-time policy needs a real-time priority (rt_priority 1..99) beside it");
    }
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
    op.loc.line = element_loc(j, ptr, false).line;
    if (!j.contains("op")) fail(ptr, std::string("missing required key \"op\" (") + kOps + ")");
    const json& kind = j["op"];
    if (!kind.is_string()) fail(ptr + "/op", std::string("expected an op name (") + kOps + "), got " + show(kind));
    const std::string k = kind.get<std::string>();
    if (k == "run") {
      check_keys(j, ptr, {"op", "ns"});
      op.kind = OpKind::kRun;
      op.amount = parse_value(require(j, ptr, "ns"), ptr + "/ns", "ns");
    } else if (k == "sleep" || k == "io") {
      check_keys(j, ptr, {"op", "ns", "waker"});
      op.kind = k == "sleep" ? OpKind::kSleep : OpKind::kIo;
      op.amount = parse_value(require(j, ptr, "ns"), ptr + "/ns", "ns");
      if (j.contains("waker")) op.set_waker(get_pid(j["waker"], ptr + "/waker"));
    } else if (k == "fork") {
      check_keys(j, ptr, {"op", "pid", "child"});
      op.kind = OpKind::kFork;
      if (j.contains("pid") == j.contains("child"))
        fail(ptr, "expected exactly one of \"pid\" (a listed process) or \"child\" (an inline process template)");
      if (j.contains("pid")) {
        op.set_pid(get_pid(j["pid"], ptr + "/pid"));
      } else {
        op.set_child(std::make_shared<const ProcessSpec>(parse_process(j["child"], ptr + "/child", true)));
      }
    } else if (k == "exec") {
      check_keys(j, ptr, {"op", "comm"});
      op.kind = OpKind::kExec;
      op.set_name(get_string(require(j, ptr, "comm"), ptr + "/comm", true));
    } else if (k == "wait" || k == "exit" || k == "tool_end") {
      check_keys(j, ptr, {"op"});
      op.kind = k == "wait" ? OpKind::kWait : k == "exit" ? OpKind::kExit : OpKind::kToolEnd;
    } else if (k == "mem") {
      check_keys(j, ptr, {"op", "bytes"});
      op.kind = OpKind::kMem;
      op.amount = parse_value(require(j, ptr, "bytes"), ptr + "/bytes", "bytes");
    } else if (k == "repeat") {
      check_keys(j, ptr, {"op", "count", "body"});
      op.kind = OpKind::kRepeat;
      if (repeat_depth + 1 > kMaxRepeatDepth)
        fail(ptr, "repeat nested more than " + std::to_string(kMaxRepeatDepth) + " deep");
      op.set_count(static_cast<std::uint32_t>(
          get_u64_range(require(j, ptr, "count"), ptr + "/count", 1, std::numeric_limits<std::uint32_t>::max())));
      op.set_body(parse_ops(require(j, ptr, "body"), ptr + "/body", repeat_depth + 1));
    } else if (k == "tool_begin") {
      check_keys(j, ptr, {"op", "tool"});
      op.kind = OpKind::kToolBegin;
      op.set_name(get_string(require(j, ptr, "tool"), ptr + "/tool", true));
    } else if (k == "step") {
      check_keys(j, ptr, {"op", "step"});
      op.kind = OpKind::kStep;
      op.set_step(get_u64(require(j, ptr, "step"), ptr + "/step"));
    } else {
      fail(ptr + "/op", "unknown op \"" + k + "\"; expected " + kOps);
    }
    return op;
  }

  std::string file_;
  std::shared_ptr<const LineIndex> lines_;
};

}  // namespace

namespace {

// The one pass and the typed parse, over the text between begin and end.
// `index` says where the text can be found again for error lines.
template <typename Iterator>
Trace parse_stream(Iterator begin, Iterator end, LineCounter& counter, const std::string& source,
                   const std::shared_ptr<LineIndex>& index) {
  Parser parser(source, index);
  std::vector<ProcessSpec> processes;
  std::optional<TraceError> process_error;
  StreamHandler* handler_ptr = nullptr;
  StreamHandler handler(&counter, [&](json& element, std::size_t i) {
    try {
      processes.push_back(parser.parse_listed_process(element, i));
    } catch (const TraceError& e) {
      process_error = e;
      handler_ptr->skip_processes = true;
    }
  });
  handler_ptr = &handler;
  const bool ok = json::sax_parse(begin, end, &handler);
  if (!ok && counter.blank_run_too_long)
    throw TraceError(source, counter.line, handler.error_pointer, LineCounter::blank_run_message());
  if (!ok && handler.too_many_cgroups_line != 0)
    throw TraceError(source, handler.too_many_cgroups_line, "/cgroups/" + std::to_string(kMaxCgroups),
                     "more than " + std::to_string(kMaxCgroups) + " cgroups; expected at most that many");
  if (!ok && handler.too_deep)
    throw TraceError(source, handler.depth_line, handler.depth_pointer,
                     "nested more than " + std::to_string(kMaxJsonDepth) +
                         " arrays/objects deep; expected a trace of at most that depth");
  if (!ok) {
    const std::string* text = source_text(*index);
    const std::uint32_t line = text != nullptr ? line_at_byte(*text, handler.error_byte) : 0;
    throw TraceError(source, line, handler.error_pointer, "invalid JSON: " + syntax_message(handler.error_message));
  }
  if (!handler.duplicate_pointer.empty())
    throw TraceError(source, handler.duplicate_line, handler.duplicate_pointer,
                     "duplicate key; expected each key at most once per object");
  index->lines = std::move(handler.lines);
  Trace t = parser.parse(handler.root, std::move(processes), process_error);
  validate(t);
  return t;
}

// After parsing, the text may be gone: lines inside processes are then
// those of the SourceLocs (LineIndex::line_of answers 0).
struct ForgetText {
  LineIndex* index;
  ~ForgetText() {
    index->text = nullptr;
    index->path.clear();
    index->loaded.clear();
    index->loaded.shrink_to_fit();
  }
};

}  // namespace

Trace parse_trace(const std::string& text, const std::string& source) {
  auto index = std::make_shared<LineIndex>();
  index->text = &text;
  ForgetText forget{index.get()};
  LineCounter counter;
  TextSource src(text.data(), text.data() + text.size());
  return parse_stream(TextIterator(&src, &counter), TextIterator(), counter, source, index);
}

namespace {

// A binary trace file whose first byte `first` has been read: a regular
// file from its start through read_binary_trace()'s window (its size from
// fstat), anything else (a pipe) read whole in 64 KiB chunks.
Trace load_binary(std::FILE* file, char first, const std::string& path) {
  struct stat st {};
  if (fstat(fileno(file), &st) == 0 && S_ISREG(st.st_mode) && std::fseek(file, 0, SEEK_SET) == 0)
    return read_binary_trace(file, static_cast<std::size_t>(st.st_size), path);
  std::string bytes(1, first);
  const std::size_t chunk = std::size_t{1} << 16;
  while (true) {
    const std::size_t had = bytes.size();
    bytes.resize(had + chunk);
    const std::size_t n = std::fread(bytes.data() + had, 1, chunk, file);
    bytes.resize(had + n);
    if (n < chunk) break;
  }
  if (std::ferror(file) != 0) throw TraceError(path, 0, "", "read error");
  return parse_binary_trace(bytes.data(), bytes.size(), path);
}

}  // namespace

Trace load_trace_file(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw TraceError(path, 0, "", "cannot open the file for reading");
  // The first byte tells a binary trace (binary.cc) from JSON text.
  const int first = std::fgetc(file.get());
  if (first != EOF) {
    const char c = static_cast<char>(first);
    if (looks_binary(&c, 1)) return load_binary(file.get(), c, path);
    std::ungetc(first, file.get());
  }
  if (std::ferror(file.get()) != 0) throw TraceError(path, 0, "", "read error");
  auto index = std::make_shared<LineIndex>();
  index->path = path;
  ForgetText forget{index.get()};
  FileChunks chunks(file.get());
  LineCounter counter;
  Trace t = [&] {
    try {
      return parse_stream(FileIterator(&chunks, &counter), FileIterator(), counter, path, index);
    } catch (const TraceError&) {
      // A read error that cut the text short reads as a syntax error: say so.
      if (chunks.failed()) throw TraceError(path, 0, "", "read error");
      throw;
    }
  }();
  if (chunks.failed()) throw TraceError(path, 0, "", "read error");
  return t;
}

}  // namespace agentcg::trace
