// SPDX-License-Identifier: GPL-2.0-only
// Trace format v1: semantic checks across elements.
//
// validate() accepts exactly the traces the replay can run: every process
// starts once (start_ns, or one fork op of a process that itself starts),
// every cgroup and pid named exists, parent links form a forest, times and
// sizes stay far below u64 overflow (kMaxQuantity = 2^62, ~146 years in ns)
// even when repeats multiply them, and tool_begin/tool_end pair up.
// parse_trace() runs it after the typed parse; generators' tests run it on
// traces built in code (their SourceLoc line is 0, the pointer still says
// where). Cgroups may be listed in any order here (parse_trace sorts them
// parents first; the generators emit them parents first).
//
// One validation path (issue 13): validate() also parses the "gpu" section
// with the GPU section's parser (sim/trace/gpu_trace.h), so `trace validate`
// rejects every trace `run` would; validate_for_policy() adds what only some
// policies require (the sched_ext classes' cgroup depth) and is called by
// sim::run() and by `trace validate --policy`. Importers call validate() on
// what they build before writing it.
// Also bounded here: pids fit the kernel's pid_t (1..2^31-1), names are
// valid UTF-8 (JSON text is), and duration_ns x cpus stays within
// kMaxCpuMs, so a run's event count (about one tick per busy CPU per few ms)
// cannot reach the billions that would look like a hang.
#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "agentcg/flatcg.h"  // AGENTCG_MAX_DEPTH
#include "sim/trace/gpu_trace.h"
#include "sim/trace/trace.h"

namespace agentcg::trace {
namespace {

constexpr std::uint64_t kMaxQuantity = std::uint64_t{1} << 62;

std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) {
  return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max() : a + b;
}
std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > std::numeric_limits<std::uint64_t>::max() / b ? std::numeric_limits<std::uint64_t>::max() : a * b;
}

// CPU-milliseconds of simulated time a trace may ask for (duration_ns x
// cpus): 2^34 ms is ~199 CPU-days, e.g. 3 days on 64 CPUs; about 4e9 tick
// events at most, minutes of run time rather than the years that
// duration_ns = 2^62 used to mean.
constexpr std::uint64_t kMaxCpuMs = std::uint64_t{1} << 34;
constexpr std::int64_t kMaxPid = std::numeric_limits<std::int32_t>::max();

}  // namespace

// RFC 3629 UTF-8 (no overlongs, no surrogates, at most U+10FFFF).
bool valid_utf8(const std::string& s) {
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) { ++i; continue; }
    if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
    else return false;
    if (i + len > n) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
      return false;
    i += len;
  }
  return true;
}

namespace {

std::string parent_path(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == 0 ? std::string("/") : path.substr(0, slash);
}

class Validator {
 public:
  explicit Validator(const Trace& t) : t_(t) {}

  void run() {
    if (t_.version != kFormatVersion)
      fail(SourceLoc{line_of(t_, "/version"), "/version"},
           "unsupported version " + std::to_string(t_.version) + "; expected " + std::to_string(kFormatVersion));
    check_machine();
    if (t_.duration_ns && (*t_.duration_ns == 0 || *t_.duration_ns > kMaxQuantity))
      fail(at("/duration_ns"), "expected a duration in 1..2^62 ns, got " + std::to_string(*t_.duration_ns));
    if (t_.duration_ns && *t_.duration_ns / 1000000 > kMaxCpuMs / t_.machine.cpus)
      fail(at("/duration_ns"), "duration_ns " + std::to_string(*t_.duration_ns) + " on " +
                                   std::to_string(t_.machine.cpus) + " CPUs is more than the simulator's cap of " +
                                   std::to_string(kMaxCpuMs) + " CPU-ms (duration x cpus); expected at most " +
                                   std::to_string(kMaxCpuMs / t_.machine.cpus * 1000000) + " ns");
    check_text(t_.name, at("/name"));
    check_text(t_.description, at("/description"));
    check_cgroups();
    check_processes();
    // The gpu section, parsed by the GPU model's parser exactly as run()
    // parses it (it throws TraceError with file, line and pointer).
    if (t_.extra.is_object() && t_.extra.contains("gpu")) (void)gpu::parse_gpu_section(t_);
  }

 private:
  // The line is looked up only here, when an error is reported: inside a
  // process it may take a rescan of the text (sim/trace/parse.cc), far too
  // slow for every field of every op on the path where nothing fails.
  [[noreturn]] void fail(const SourceLoc& loc, const std::string& message) const {
    const std::uint32_t l = loc.pointer.empty() ? 0 : line_of(t_, loc.pointer);
    throw TraceError(t_.source, l != 0 ? l : loc.line, loc.pointer, message);
  }
  SourceLoc at(const std::string& ptr) const { return SourceLoc{line_of(t_, ptr), ptr}; }
  void check_text(const std::string& s, const SourceLoc& loc) const {
    if (!valid_utf8(s)) fail(loc, "not valid UTF-8; expected UTF-8 text (JSON strings are UTF-8)");
  }
  void check_pid(std::int64_t pid, const SourceLoc& loc) const {
    if (pid <= 0 || pid > kMaxPid)
      fail(loc, "expected a pid in 1..2147483647 (a kernel pid_t), got " + std::to_string(pid));
  }
  // A child element's location: fail() looks up the parsed line of
  // ptr + suffix, falling back to the element's own line.
  SourceLoc sub(const SourceLoc& loc, const std::string& suffix) const {
    return SourceLoc{loc.line, loc.pointer + suffix};
  }

  void check_machine() const {
    const Machine& m = t_.machine;
    if (m.cpus < 1 || m.cpus > 4096)
      fail(at("/machine/cpus"), "expected a CPU count in 1..4096, got " + std::to_string(m.cpus));
    if (m.context_switch_ns && *m.context_switch_ns > 1000000000)
      fail(at("/machine/context_switch_ns"), "expected at most 1 s (1000000000 ns), got " + std::to_string(*m.context_switch_ns));
    if (m.wakeup_overhead_ns && *m.wakeup_overhead_ns > 1000000000)
      fail(at("/machine/wakeup_overhead_ns"), "expected at most 1 s (1000000000 ns), got " + std::to_string(*m.wakeup_overhead_ns));
  }

  void check_cgroups() {
    if (t_.cgroups.size() > kMaxCgroups)
      fail(t_.cgroups[kMaxCgroups].loc, "more than " + std::to_string(kMaxCgroups) + " cgroups; expected at most that many");
    known_cgroups_.insert("/");
    for (const CgroupSpec& c : t_.cgroups) {
      const std::string& p = c.path;
      check_text(p, sub(c.loc, "/path"));
      bool ok = !p.empty() && p[0] == '/' && (p == "/" || p.back() != '/') && p.find("//") == std::string::npos;
      for (std::size_t i = 0; ok && i < p.size();) {
        const auto next = p.find('/', i + 1);
        const std::string comp = p.substr(i + 1, next == std::string::npos ? std::string::npos : next - i - 1);
        if (p != "/" && (comp == "." || comp == ".." || comp.find_first_of("\n\t ") != std::string::npos)) ok = false;
        if (next == std::string::npos) break;
        i = next;
      }
      if (!ok)
        fail(sub(c.loc, "/path"), "bad cgroup path \"" + p +
                                      "\"; expected an absolute path like /a/b (no trailing or double slash, no . or ..)");
      if (p == "/") {
        if (c.cpu_weight != 100 || c.cpu_max || c.memory_high || c.memory_max)
          fail(c.loc, "the root cgroup \"/\" cannot be configured; expected only {\"path\":\"/\"}");
      }
      if (!known_cgroups_.insert(p).second && p != "/") fail(sub(c.loc, "/path"), "duplicate cgroup \"" + p + "\"");
      if (c.cpu_weight < 1 || c.cpu_weight > 10000)
        fail(sub(c.loc, "/cpu_weight"), "expected cpu.weight in 1..10000, got " + std::to_string(c.cpu_weight));
      if (c.cpu_max) {
        if (c.cpu_max->quota_us < 1000)
          fail(sub(c.loc, "/cpu_max/quota_us"),
               "expected a quota of at least 1000 us (the kernel's minimum), got " + std::to_string(c.cpu_max->quota_us));
        if (c.cpu_max->quota_us > kMaxQuantity / 1000)
          fail(sub(c.loc, "/cpu_max/quota_us"), "quota too large: " + std::to_string(c.cpu_max->quota_us));
        if (c.cpu_max->period_us < 1000 || c.cpu_max->period_us > 1000000)
          fail(sub(c.loc, "/cpu_max/period_us"),
               "expected a period in 1000..1000000 us, got " + std::to_string(c.cpu_max->period_us));
      }
      if (c.memory_high && c.memory_max && *c.memory_high > *c.memory_max)
        fail(sub(c.loc, "/memory_high"), "expected memory_high <= memory_max (" + std::to_string(*c.memory_max) +
                                             "), got " + std::to_string(*c.memory_high));
    }
    for (const CgroupSpec& c : t_.cgroups) {
      if (c.path == "/") continue;
      const std::string parent = parent_path(c.path);
      if (known_cgroups_.count(parent) == 0)
        fail(sub(c.loc, "/path"), "parent cgroup \"" + parent + "\" of \"" + c.path + "\" is not listed; expected it in /cgroups");
    }
  }

  void check_cgroup_ref(const std::string& cg, const SourceLoc& loc, bool templ) const {
    if (templ && cg.empty()) return;
    if (known_cgroups_.count(cg) == 0)
      fail(sub(loc, "/cgroup"), "unknown cgroup \"" + cg + "\"; expected \"/\" or a path listed in /cgroups");
  }

  struct Forker {
    std::int64_t pid;  // the listed process whose op forks
    SourceLoc loc;     // the fork op
  };

  void check_processes() {
    for (const ProcessSpec& p : t_.processes) {
      check_pid(p.pid, sub(p.loc, "/pid"));
      if (!pids_.emplace(p.pid, &p).second)
        fail(sub(p.loc, "/pid"), "duplicate pid " + std::to_string(p.pid) + "; expected each listed pid once");
    }
    for (const ProcessSpec& p : t_.processes) {
      check_cgroup_ref(p.cgroup, p.loc, false);
      check_text(p.comm, sub(p.loc, "/comm"));
      if (p.agent) check_text(p.agent->session, sub(p.loc, "/agent/session"));
      if (p.parent) {
        check_pid(*p.parent, sub(p.loc, "/parent"));
        if (*p.parent == p.pid) fail(sub(p.loc, "/parent"), "a process cannot be its own parent");
        if (pids_.count(*p.parent) == 0)
          fail(sub(p.loc, "/parent"), "unknown parent pid " + std::to_string(*p.parent) + "; expected a listed pid");
      }
      if (p.start_ns && *p.start_ns > kMaxQuantity)
        fail(sub(p.loc, "/start_ns"), "expected a time in 0..2^62 ns, got " + std::to_string(*p.start_ns));
      if (p.agent && p.agent->session.empty()) fail(sub(p.loc, "/agent/session"), "expected a non-empty session id");
      bool tool_open = false;
      const std::uint64_t total = check_ops(p.ops, p.loc.pointer + "/ops", p.loc, p.pid, false, 1, tool_open);
      if (sat_add(total, p.start_ns.value_or(0)) > kMaxQuantity)
        fail(p.loc, "start_ns plus the fixed durations of the ops overflow 2^62 ns");
      // Without duration_ns the run lasts as long as the CPU work: cap its
      // sum as duration x cpus is capped (about one tick event per busy
      // CPU per few ms), so a huge run op is an error, not an endless run.
      if (!t_.duration_ns && run_ns_ / 1000000 > kMaxCpuMs)
        fail(p.loc, "the fixed run ops of the processes up to this one add up to more than the simulator's cap of " +
                        std::to_string(kMaxCpuMs) + " CPU-ms; expected less CPU work or a duration_ns");
    }
    // Parent links form a forest.
    for (const ProcessSpec& p : t_.processes) {
      std::set<std::int64_t> seen{p.pid};
      const ProcessSpec* q = &p;
      while (q->parent) {
        if (!seen.insert(*q->parent).second)
          fail(sub(p.loc, "/parent"), "cycle in parent links through pid " + std::to_string(p.pid));
        q = pids_.at(*q->parent);
      }
    }
    // Every listed process starts exactly once.
    for (const ProcessSpec& p : t_.processes) {
      auto f = forked_by_.find(p.pid);
      if (!p.start_ns && f == forked_by_.end())
        fail(p.loc, "process " + std::to_string(p.pid) + " never starts; expected start_ns or a fork op naming it");
      if (p.start_ns && f != forked_by_.end())
        fail(f->second.loc, "fork of pid " + std::to_string(p.pid) +
                                " which already has start_ns; expected either start_ns or one fork op");
      if (f != forked_by_.end() && p.parent && *p.parent != f->second.pid)
        fail(sub(p.loc, "/parent"), "parent " + std::to_string(*p.parent) + " differs from the forking process " +
                                        std::to_string(f->second.pid));
    }
    // Forks must lead back to a process with start_ns (no fork cycles).
    for (const ProcessSpec& p : t_.processes) {
      std::set<std::int64_t> seen{p.pid};
      std::int64_t cur = p.pid;
      for (auto f = forked_by_.find(cur); f != forked_by_.end(); f = forked_by_.find(cur)) {
        cur = f->second.pid;
        if (!seen.insert(cur).second)
          fail(f->second.loc, "cycle of fork ops through pid " + std::to_string(p.pid) + ": none of them ever starts");
      }
    }
  }

  void check_value(const Value& v, const SourceLoc& loc, const char* unit) const {
    const auto bad = [&](const std::string& what) { fail(loc, what); };
    switch (v.dist) {
      case Value::Dist::kConst:
        if (v.a > kMaxQuantity) bad(std::string("expected at most 2^62 ") + unit + ", got " + std::to_string(v.a));
        break;
      case Value::Dist::kUniform:
        if (v.b < v.a) bad("uniform: expected max >= min");
        if (v.b > kMaxQuantity) bad(std::string("uniform: expected max at most 2^62 ") + unit);
        break;
      case Value::Dist::kExponential:
      case Value::Dist::kLogNormal:
        if (v.a == 0) bad("expected a positive mean/median");
        if (v.a > kMaxQuantity) bad(std::string("expected a mean/median at most 2^62 ") + unit);
        if (!(v.sigma >= 0.0 && v.sigma <= 10.0)) bad("expected sigma in 0..10");
        break;
    }
    if (v.max > kMaxQuantity) bad(std::string("expected a cap at most 2^62 ") + unit);
  }

  // Checks ops; returns the saturated sum of their fixed durations. `pid` is
  // the listed process running them (0 inside templates), `multiplicity` how
  // many times they run (product of enclosing repeat counts).
  std::uint64_t check_ops(const std::vector<Op>& ops, const std::string& base, const SourceLoc& owner, std::int64_t pid,
                          bool templ, std::uint64_t multiplicity, bool& tool_open) {
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      // Parsed ops keep their line but no pointer (parse.cc); the pointer
      // is rebuilt here from the index.
      SourceLoc loc = op.loc;
      if (loc.pointer.empty()) loc.pointer = base + "/" + std::to_string(i);
      if (loc.line == 0) loc.line = owner.line;
      switch (op.kind) {
        case OpKind::kRun:
        case OpKind::kSleep:
        case OpKind::kIo:
          check_value(op.amount, sub(loc, "/ns"), "ns");
          if (op.kind != OpKind::kRun && op.waker() != 0) {
            check_pid(op.waker(), sub(loc, "/waker"));
            if (pids_.count(op.waker()) == 0)
              fail(sub(loc, "/waker"), "unknown waker pid " + std::to_string(op.waker()) + "; expected a listed pid");
          }
          if (!op.amount.is_random()) total = sat_add(total, op.amount.a);
          if (op.kind == OpKind::kRun && !op.amount.is_random())
            run_ns_ = sat_add(run_ns_, sat_mul(op.amount.a, multiplicity));
          break;
        case OpKind::kMem:
          check_value(op.amount, sub(loc, "/bytes"), "bytes");
          break;
        case OpKind::kFork:
          if (op.child() && op.pid() != 0) fail(loc, "expected exactly one of pid or child");
          if (op.child()) {
            const ProcessSpec& c = *op.child();
            SourceLoc cloc = c.loc.pointer.empty() ? sub(loc, "/child") : c.loc;
            if (c.pid != 0 || c.parent || c.start_ns)
              fail(cloc, "an inline child template takes no pid, parent or start_ns");
            check_cgroup_ref(c.cgroup, cloc, true);
            check_text(c.comm, sub(cloc, "/comm"));
            bool child_tool_open = false;
            const int saved_depth = repeat_depth_;  // a template's repeats nest from 0, as in the parser
            repeat_depth_ = 0;
            check_ops(c.ops, cloc.pointer + "/ops", cloc, 0, true, multiplicity, child_tool_open);
            repeat_depth_ = saved_depth;
          } else {
            check_pid(op.pid(), sub(loc, "/pid"));
            if (pids_.count(op.pid()) == 0)
              fail(sub(loc, "/pid"), "fork of unknown pid " + std::to_string(op.pid()) + "; expected a listed pid");
            if (templ)
              fail(sub(loc, "/pid"), "fork of listed pid " + std::to_string(op.pid()) +
                                         " from an inline template (which may run many times); expected an inline child");
            if (multiplicity > 1)
              fail(sub(loc, "/pid"), "fork of listed pid " + std::to_string(op.pid()) +
                                         " inside a repeat would start it more than once; expected an inline child");
            if (op.pid() == pid) fail(sub(loc, "/pid"), "a process cannot fork itself");
            auto [it, inserted] = forked_by_.emplace(op.pid(), Forker{pid, loc});
            if (!inserted)
              fail(loc, "pid " + std::to_string(op.pid()) + " is forked twice (first at " + it->second.loc.pointer +
                            "); expected one fork op per listed process");
          }
          break;
        case OpKind::kExec:
          if (op.name().empty()) fail(sub(loc, "/comm"), "expected a non-empty comm");
          check_text(op.name(), sub(loc, "/comm"));
          break;
        case OpKind::kWait:
        case OpKind::kExit:
        case OpKind::kStep:
          break;
        case OpKind::kToolBegin:
          if (op.name().empty()) fail(sub(loc, "/tool"), "expected a non-empty tool name");
          check_text(op.name(), sub(loc, "/tool"));
          if (tool_open) fail(loc, "tool_begin while a tool call is open; expected tool_end first");
          tool_open = true;
          break;
        case OpKind::kToolEnd:
          if (!tool_open) fail(loc, "tool_end without tool_begin");
          tool_open = false;
          break;
        case OpKind::kRepeat: {
          if (op.count() < 1) fail(sub(loc, "/count"), "expected a repeat count >= 1");
          if (++repeat_depth_ > 8) fail(loc, "repeat nested more than 8 deep");
          const bool before = tool_open;
          const std::uint64_t body = check_ops(op.body(), loc.pointer + "/body", loc, pid, templ,
                                               sat_mul(multiplicity, op.count()), tool_open);
          if (op.count() > 1 && tool_open != before)
            fail(loc, "the repeat body leaves a tool call open/closed differently than it found it; "
                      "expected tool_begin and tool_end paired inside the body");
          --repeat_depth_;
          total = sat_add(total, sat_mul(body, op.count()));
          break;
        }
      }
    }
    return total;
  }

  const Trace& t_;
  std::set<std::string> known_cgroups_;
  std::map<std::int64_t, const ProcessSpec*> pids_;
  std::map<std::int64_t, Forker> forked_by_;
  int repeat_depth_ = 0;
  std::uint64_t run_ns_ = 0;  // fixed run ns of all processes so far, repeats multiplied
};

}  // namespace

void validate(const Trace& trace) { Validator(trace).run(); }

void validate_for_policy(const Trace& trace, const std::string& policy) {
  // flatcg and agentcg walk at most AGENTCG_MAX_DEPTH ancestors (the BPF
  // verifier needs the bound): their cgroup_init() refuses deeper cgroups,
  // without a file or line; here the error names the cgroup's line.
  if (policy != "flatcg" && policy != "agentcg") return;
  for (const CgroupSpec& c : trace.cgroups) {
    const auto depth = c.path == "/" ? 0 : static_cast<std::size_t>(std::count(c.path.begin(), c.path.end(), '/'));
    if (depth + 1 > AGENTCG_MAX_DEPTH) {
      const std::string ptr = c.loc.pointer.empty() ? std::string("/cgroups") : c.loc.pointer + "/path";
      const std::uint32_t line = c.loc.pointer.empty() ? 0 : line_of(trace, ptr);
      throw TraceError(trace.source, line != 0 ? line : c.loc.line, ptr,
                       "cgroup \"" + c.path + "\" is " + std::to_string(depth) + " levels deep; policy " + policy +
                           " supports at most " + std::to_string(AGENTCG_MAX_DEPTH - 1) +
                           " (cfs, eevdf and fifo have no limit)");
    }
  }
}

}  // namespace agentcg::trace
