// SPDX-License-Identifier: GPL-2.0-only
// Importer for AgentCgroup task folders: resources.json (whole-container CPU %
// and memory about every second) + tool_calls.json (the agent's tool calls
// with ISO start/end times); see ../shared/traces/README.md.
//
// Model: one agent process (pid 1) per session. Tool calls that overlap in
// time form a cluster = one agent step: the agent marks `step N`, forks one
// child per tool call at its start (the child carries `tool_begin NAME` ...
// `tool_end`, so tool latency is measured per call), and `wait`s for them; it
// resumes at the cluster's end. A sample's CPU (cpu_percent x the interval
// since the previous sample) is spread uniformly over that interval and
// given, piece by piece, to whoever is active: the running tool children
// (shared equally) or the agent. Memory: the agent holds the container's
// memory outside tool calls; during a call the first running child holds
// what exceeds the agent's last value (tool bursts such as pytest).
// Worked example: samples at 0 s (10 MB), 1 s (20%, 20 MB), 2 s (50%, 120 MB);
// a Bash call from 1.5 s to 2 s -> agent: mem 10MB, run 200ms, sleep 800ms,
// mem 20MB, step 1, fork tool, wait; tool: tool_begin Bash, run 250ms,
// sleep 250ms, mem 100MB, tool_end, exit.
//
// Corrections to the recording's shape: resources.json `timestamp` is local
// time without a zone (8 h off the tool calls' UTC in the samples), so the
// `epoch` field is used instead; cpu_percent is the average over the interval
// ending at its sample (docker/podman stats semantics), so the first sample
// only gives memory.
//
// Limitations (counted): CPU above one core per process (the process lags);
// which process inside the container used the CPU (attributed by time);
// LLM think time is the agent's sleep; tool input/output text is dropped.
//
// Streaming: tool_calls.json is read first, keeping only (start, end, tool)
// per call; resources.json samples are processed one by one through the
// parser callback and discarded.
//
// Who calls it: import_any() / `trace import --from agentcgroup-task DIR`.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>

#include "sim/import/builder.h"
#include "sim/import/import.h"
#include "sim/trace/line_iterator.h"

namespace agentcg::import {

namespace {

using json = nlohmann::json;

using StreamIterator = trace::LineCountingIterator<trace::StreamSource>;

struct Call {
  std::uint64_t start_ns = 0;  // epoch ns
  std::uint64_t end_ns = 0;
  std::string tool;
  std::size_t cluster = 0;
};

struct Boundary {
  std::uint64_t t = 0;
  bool is_end = false;
  std::size_t call = 0;
};

// "62.21%" -> hundredths of a percent.
std::optional<std::uint64_t> parse_percent(std::string_view s) {
  if (!s.empty() && s.back() == '%') s.remove_suffix(1);
  const auto ns = parse_seconds_ns(s);  // same decimal grammar; 1 "s" = 1e9
  if (!ns) return std::nullopt;
  return *ns / 10000000;  // x.yy -> xyy
}

// "185.3MB / 134.5GB" -> bytes of the first figure.
std::optional<std::uint64_t> parse_mem(std::string_view s) {
  const auto slash = s.find('/');
  if (slash != std::string_view::npos) s = s.substr(0, slash);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  std::size_t n = 0;
  while (n < s.size() && ((s[n] >= '0' && s[n] <= '9') || s[n] == '.')) ++n;
  const auto value_e9 = parse_seconds_ns(s.substr(0, n));  // value x 1e9
  if (!value_e9) return std::nullopt;
  const std::string_view unit = s.substr(n);
  std::uint64_t mult = 0;
  if (unit == "B") mult = 1;
  else if (unit == "kB" || unit == "KB") mult = 1000;
  else if (unit == "MB") mult = 1000000;
  else if (unit == "GB") mult = 1000000000;
  else if (unit == "KiB") mult = 1024;
  else if (unit == "MiB") mult = 1024 * 1024;
  else if (unit == "GiB") mult = 1024ULL * 1024 * 1024;
  else return std::nullopt;
  const long double bytes = static_cast<long double>(*value_e9) * static_cast<long double>(mult) / 1e9L;
  if (bytes > static_cast<long double>(std::uint64_t{1} << 50)) return std::nullopt;  // > 1 PiB: not a reading
  return static_cast<std::uint64_t>(std::llround(bytes));
}

// Bounds found by fuzz/import_task_fuzz.cc, so every produced time stays far
// below the trace format's 2^62 ns: samples and calls within 2^50 ns (13
// days) of the recording's first time, CPU at most 1024 cores' worth, epochs
// before the year 2286 (their ns fit in u64).
constexpr std::uint64_t kMaxSpanNs = std::uint64_t{1} << 50;
constexpr std::uint64_t kMaxPctHundredths = 1024ULL * 100 * 100;
constexpr double kMaxEpochS = 1e10;

std::uint64_t distance(std::uint64_t a, std::uint64_t b) { return a > b ? a - b : b - a; }

// The message of a syntax error; a run of blanks cut short by the line
// iterator (trace::LineCounter::kMaxBlankRun) says so instead.
std::string invalid_json(const trace::LineCounter& lines, const json::parse_error& e) {
  if (lines.blank_run_too_long) return trace::LineCounter::blank_run_message();
  return std::string("invalid JSON: ") + e.what();
}

class TaskImporter {
 public:
  TaskImporter(const std::string& source, const Options& opts) : source_(source), opts_(opts) {
    report_.format = "agentcgroup-task";
    report_.input = source;
  }

  void read_calls(std::istream& in, const std::string& name) {
    trace::LineCounter lines;
    const std::uint32_t& line = lines.line;  // the line being read, for errors
    trace::StreamSource src(in);
    std::uint64_t index = 0;
    json::parser_callback_t cb = [&](int depth, json::parse_event_t ev, json& parsed) -> bool {
      if (ev == json::parse_event_t::key && depth == 2 && parsed.is_string()) {
        const auto& k = parsed.get_ref<const std::string&>();
        if (k == "input" || k == "result_preview") {
          report_.note_unrepresented("tool call input/result text");
          return false;  // not kept: the value is discarded as it is parsed
        }
      }
      if (ev == json::parse_event_t::object_end && depth == 1) {
        ++index;
        ++report_.lines;
        const auto start = parsed.contains("timestamp") && parsed["timestamp"].is_string()
                               ? parse_iso8601_utc_ns(parsed["timestamp"].get<std::string>())
                               : std::nullopt;
        // A non-string tool is a skipped call, not a type_error losing the import.
        const std::string tool =
            parsed.contains("tool") && parsed["tool"].is_string() ? parsed["tool"].get<std::string>() : std::string();
        if (!start || tool.empty()) {
          malformed(report_, opts_, name, line,
                    "tool call " + std::to_string(index) +
                        ": expected 'timestamp' (ISO 8601 UTC) and 'tool'");
          return false;
        }
        if (!first_ns_) first_ns_ = *start;
        if (distance(*start, *first_ns_) > kMaxSpanNs) {
          malformed(report_, opts_, name, line,
                    "tool call " + std::to_string(index) + ": more than 13 days from the first tool call");
          return false;
        }
        std::optional<std::uint64_t> end;
        if (parsed.contains("end_timestamp") && parsed["end_timestamp"].is_string())
          end = parse_iso8601_utc_ns(parsed["end_timestamp"].get<std::string>());
        if (end && *end - std::min(*end, *start) > kMaxSpanNs) end.reset();
        if (!end || *end < *start) {
          report_.note_unrepresented("tool calls without a valid end (zero length)");
          end = start;
        }
        calls_.push_back(Call{*start, *end, tool, 0});
        return false;
      }
      return true;
    };
    try {
      json top = json::parse(StreamIterator(&src, &lines), StreamIterator(), cb);
      if (!top.is_array() && !top.is_discarded())
        throw ImportError(name, 1, "expected a JSON array of tool calls");
    } catch (const json::parse_error& e) {
      throw ImportError(name, line, invalid_json(lines, e));
    } catch (const json::exception& e) {
      // e.g. out_of_range 406 for a number like 1e400 (found by fuzz/import_task_fuzz.cc)
      throw ImportError(name, line, std::string("invalid JSON value: ") + e.what());
    }
    std::stable_sort(calls_.begin(), calls_.end(), [](const Call& a, const Call& b) {
      return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns < b.end_ns;
    });
    // Clusters: maximal groups of overlapping calls.
    std::uint64_t cluster_end = 0;
    std::size_t cluster = 0;
    for (std::size_t i = 0; i < calls_.size(); ++i) {
      if (i == 0 || calls_[i].start_ns >= cluster_end) {
        ++cluster;
        cluster_last_call_.push_back(i);
        cluster_end_.push_back(calls_[i].end_ns);
        cluster_end = calls_[i].end_ns;
      }
      calls_[i].cluster = cluster - 1;
      cluster_last_call_[cluster - 1] = i;
      cluster_end = std::max(cluster_end, calls_[i].end_ns);
      cluster_end_[cluster - 1] = cluster_end;
      bounds_.push_back(Boundary{calls_[i].start_ns, false, i});
      bounds_.push_back(Boundary{calls_[i].end_ns, true, i});
    }
    // Starts before ends at the same instant (a zero-length call starts
    // before it ends); then by call order.
    std::stable_sort(bounds_.begin(), bounds_.end(), [](const Boundary& a, const Boundary& b) {
      if (a.t != b.t) return a.t < b.t;
      if (a.is_end != b.is_end) return !a.is_end;
      return a.call < b.call;
    });
    children_.assign(calls_.size(), nullptr);
    report_.counters["tool_calls"] = calls_.size();
    report_.counters["steps"] = cluster;
  }

  void read_samples(std::istream& in, const std::string& name) {
    trace::LineCounter lines;
    const std::uint32_t& line = lines.line;  // the line being read, for errors
    trace::StreamSource src(in);
    std::string top_key;
    json::parser_callback_t cb = [&](int depth, json::parse_event_t ev, json& parsed) -> bool {
      if (ev == json::parse_event_t::key && depth == 1 && parsed.is_string())
        top_key = parsed.get<std::string>();
      if (ev == json::parse_event_t::object_end && depth == 2 && top_key == "samples") {
        ++report_.lines;
        sample(parsed, name, line);
        return false;
      }
      return true;
    };
    try {
      json top = json::parse(StreamIterator(&src, &lines), StreamIterator(), cb);
      if (!top.is_object()) throw ImportError(name, 1, "expected an object with 'samples'");
    } catch (const json::parse_error& e) {
      throw ImportError(name, line, invalid_json(lines, e));
    } catch (const json::exception& e) {
      // e.g. out_of_range 406 for a number like 1e400 (found by fuzz/import_task_fuzz.cc)
      throw ImportError(name, line, std::string("invalid JSON value: ") + e.what());
    }
  }

  Result finish() {
    // Tool calls after the last sample: played without CPU.
    if (!t0_ && !calls_.empty()) origin(calls_.front().start_ns);
    if (t0_) {
      std::uint64_t end = last_ns_;
      if (!bounds_.empty()) end = std::max(end, rel(bounds_.back().t));
      advance(last_ns_, end, 0);
    }
    Result r;
    r.trace.machine.cpus = opts_.cpus != 0 ? opts_.cpus : 4;
    add_cgroup_chain(r.trace, opts_.cgroup);
    r.trace.processes = table_.take();
    const std::string session = opts_.name.empty() ? stem(source_) : opts_.name;
    for (trace::ProcessSpec& p : r.trace.processes) p.agent = trace::AgentInfo{session};
    report_.counters["cpu_ms_total"] = cpu_ns_total_ / 1000000;
    finish_trace(r.trace, report_, opts_,
                 "an agent process with one step per group of overlapping tool calls, a child per "
                 "tool call, CPU and memory from whole-container samples");
    r.report = std::move(report_);
    return r;
  }

 private:
  void origin(std::uint64_t epoch_ns) {
    t0_ = epoch_ns;
    if (!calls_.empty()) t0_ = std::min(*t0_, calls_.front().start_ns);
    agent_ = &table_.create(1, "claude", opts_.cgroup, 0);
    agent_->spec->start_ns = 0;
  }
  std::uint64_t rel(std::uint64_t epoch_ns) const { return epoch_ns > *t0_ ? epoch_ns - *t0_ : 0; }

  void sample(const json& s, const std::string& name, std::uint64_t line) {
    std::optional<std::uint64_t> epoch_ns;
    if (auto it = s.find("epoch");
        it != s.end() && it->is_number() && it->get<double>() > 0 && it->get<double>() < kMaxEpochS)
      epoch_ns = static_cast<std::uint64_t>(std::llround(it->get<double>() * 1e6)) * 1000;
    std::optional<std::uint64_t> pct, mem;
    if (auto it = s.find("cpu_percent"); it != s.end() && it->is_string())
      pct = parse_percent(it->get<std::string>());
    if (auto it = s.find("mem_usage"); it != s.end() && it->is_string())
      mem = parse_mem(it->get<std::string>());
    if (!epoch_ns || !pct || !mem) {
      malformed(report_, opts_, name, line,
                "sample: expected 'epoch' (seconds), 'cpu_percent' (\"N.NN%\") and 'mem_usage' "
                "(\"N.NMB / N.NGB\")");
      return;
    }
    if (!first_ns_) first_ns_ = *epoch_ns;
    if (distance(*epoch_ns, *first_ns_) > kMaxSpanNs || *pct > kMaxPctHundredths) {
      malformed(report_, opts_, name, line,
                "sample: epoch more than 13 days from the recording's first time, or cpu_percent above 102400%");
      return;
    }
    if (!t0_) origin(*epoch_ns);
    const std::uint64_t t = rel(*epoch_ns);
    if (have_sample_ && t <= last_ns_) {
      malformed(report_, opts_, name, line, "sample: epoch does not increase");
      return;
    }
    ++report_.events;
    if (!have_sample_) {
      report_.note_unrepresented("CPU of the first sample (its interval precedes the recording)");
      advance(0, t, 0);
    } else {
      const std::uint64_t dt = t - last_ns_;
      const std::uint64_t cpu = static_cast<std::uint64_t>(
          std::llround(static_cast<long double>(*pct) * static_cast<long double>(dt) / 10000.0L));
      cpu_ns_total_ += cpu;
      advance(last_ns_, t, cpu);
    }
    have_sample_ = true;
    last_ns_ = t;
    set_mem(*mem);
  }

  void set_mem(std::uint64_t bytes) {
    if (!active_.empty()) {
      children_[active_.front()]->builder.mem(bytes > agent_mem_ ? bytes - agent_mem_ : 0);
    } else {
      agent_->builder.mem(bytes);
      agent_mem_ = bytes;
    }
  }

  // Plays (a, b]: `cpu` ns spread uniformly, tool boundaries applied in order.
  void advance(std::uint64_t a, std::uint64_t b, std::uint64_t cpu) {
    std::uint64_t x = a;
    std::uint64_t given = 0;
    const long double dt = static_cast<long double>(b > a ? b - a : 1);
    auto cpu_until = [&](std::uint64_t y) {
      if (y >= b) return cpu;
      return static_cast<std::uint64_t>(
          std::llround(static_cast<long double>(cpu) * static_cast<long double>(y - a) / dt));
    };
    while (next_bound_ < bounds_.size() && rel(bounds_[next_bound_].t) <= b) {
      const Boundary& bd = bounds_[next_bound_];
      const std::uint64_t y = std::max(x, rel(bd.t));
      if (y > x) {
        const std::uint64_t c = cpu_until(y) - given;
        segment(y, c);
        given += c;
        x = y;
      }
      apply(bd);
      ++next_bound_;
    }
    if (b > x || cpu > given) segment(b, cpu - given);
  }

  // CPU `c` used up to time y by whoever is active, then idle until y.
  void segment(std::uint64_t y, std::uint64_t c) {
    if (!active_.empty()) {
      const std::uint64_t k = active_.size();
      for (std::size_t i = 0; i < active_.size(); ++i) {
        ProcessBuilder& b = children_[active_[i]]->builder;
        run_checked(b, c / k + (i < c % k ? 1 : 0), y);
        b.sleep_until(y);
      }
    } else if (!in_cluster_) {
      run_checked(agent_->builder, c, y);
      agent_->builder.sleep_until(y);
    } else {
      report_.note_unrepresented("CPU between a cluster's calls given to no one");
    }
  }

  void run_checked(ProcessBuilder& b, std::uint64_t c, std::uint64_t y) {
    const std::uint64_t before = b.cursor_ns();
    b.run(c);
    if (c != 0 && before <= y && before + c > y)
      report_.note_unrepresented("ms of CPU above one core per process", (before + c - y) / 1000000);
  }

  void apply(const Boundary& bd) {
    const Call& call = calls_[bd.call];
    const std::uint64_t t = rel(bd.t);
    if (!bd.is_end) {
      ProcessBuilder& ag = agent_->builder;
      if (!in_cluster_) {
        ag.sleep_until(t);
        ag.simple(trace::OpKind::kStep, {}, ++step_);
        in_cluster_ = true;
      }
      ag.sleep_until(t);
      const std::int64_t pid = next_pid_++;
      ProcessTable::Entry& child = table_.create(pid, call.tool, opts_.cgroup, t);
      ag.fork(pid);
      child.spec->parent = 1;
      child.builder.simple(trace::OpKind::kToolBegin, call.tool);
      children_[bd.call] = &child;
      active_.push_back(bd.call);
      if (cluster_last_call_[call.cluster] == bd.call) ag.simple(trace::OpKind::kWait);
      return;
    }
    ProcessTable::Entry* child = children_[bd.call];
    child->builder.sleep_until(t);
    child->builder.simple(trace::OpKind::kToolEnd);
    child->builder.exit();
    table_.retire(child->recorded_pid);
    active_.erase(std::find(active_.begin(), active_.end(), bd.call));
    if (active_.empty()) {
      in_cluster_ = false;
      // The agent's wait returns when the last child exits: its timeline
      // resumes at the cluster's end without an op of its own.
      agent_->builder.blocked_until(rel(cluster_end_[call.cluster]));
    }
  }

  std::string source_;
  Options opts_;
  Report report_;
  ProcessTable table_;
  ProcessTable::Entry* agent_ = nullptr;
  std::vector<Call> calls_;
  std::vector<Boundary> bounds_;
  std::vector<std::size_t> cluster_last_call_;
  std::vector<std::uint64_t> cluster_end_;
  std::vector<ProcessTable::Entry*> children_;
  std::vector<std::size_t> active_;
  std::size_t next_bound_ = 0;
  std::optional<std::uint64_t> first_ns_;  // first time read (calls, then samples): the span bounds
  std::optional<std::uint64_t> t0_;
  std::uint64_t last_ns_ = 0;
  bool have_sample_ = false;
  bool in_cluster_ = false;
  std::uint64_t step_ = 0;
  std::int64_t next_pid_ = 2;
  std::uint64_t agent_mem_ = 0;
  std::uint64_t cpu_ns_total_ = 0;
};

}  // namespace

Result import_agentcgroup_task(std::istream& resources, const std::string& resources_name,
                               std::istream& tool_calls, const std::string& tool_calls_name,
                               const Options& opts) {
  std::string dir = resources_name;
  if (auto slash = dir.find_last_of('/'); slash != std::string::npos) dir = dir.substr(0, slash);
  TaskImporter imp(dir, opts);
  imp.read_calls(tool_calls, tool_calls_name);
  imp.read_samples(resources, resources_name);
  return imp.finish();
}

Result import_agentcgroup_task_dir(const std::string& dir, const Options& opts) {
  const std::string res = dir + "/resources.json";
  const std::string calls = dir + "/tool_calls.json";
  std::ifstream r(res);
  if (!r) throw ImportError(res, 0, "cannot open (expected a task folder with resources.json)");
  std::ifstream c(calls);
  if (!c) throw ImportError(calls, 0, "cannot open (expected a task folder with tool_calls.json)");
  return import_agentcgroup_task(r, res, c, calls, opts);
}

}  // namespace agentcg::import
