// SPDX-License-Identifier: GPL-2.0-only
// Importer for recordings of live/recorder/agentcg-record: a folder with
//   ftrace.txt   tracefs text of the sched tracepoints (trace_clock mono)
//   members.tsv  mono_ns tid tgid kthread cgroup comm   (task first seen / moved)
//   cgroups.tsv  mono_ns path cpu.weight cpu.max memory.high memory.max
//   memory.tsv   mono_ns path memory.current
//   meta.json    {"format": "agentcg-recording", "version": 1, "cpus", ...}
//
// The process tree and the run/sleep phases come from the ftrace importer
// (ftrace.cc, through FtraceDetail: the clock origin and each pid's recorded
// tid). On top of it:
// - each process goes to its recorded cgroup: the last members.tsv row of
//   its tid inside its lifetime (a process moved between cgroups, like
//   `sh -c 'echo $$ > cgroup.procs; exec work'`, ends where it worked; the
//   move itself is counted as not represented); a task never sampled (it
//   lived less than one interval) takes its parent's cgroup;
// - kernel threads (kthread flag in members.tsv; unsampled tasks forked by a
//   kernel thread or named like kworker/N) are dropped, and with
//   `--only-cgroup PATH` every process outside PATH's subtree too. A kept
//   process whose parent was dropped becomes a root starting at its fork
//   time; fork ops of dropped children are removed;
// - the cgroup tree with cpu.weight, cpu.max, memory.high and memory.max
//   (the last recorded value; changes during the recording are counted);
// - memory: each cgroup's memory.current sample is given as a `mem` op to
//   the oldest imported process alive in that cgroup at the sample's time
//   (the others hold 0), so the sum over a cgroup's processes follows
//   memory.current. The op goes where the sample falls in the process's
//   recorded lifetime, mapped proportionally onto its ops (which leave out
//   the time it waited runnable, so a contended process's ops are shorter
//   than its life). What memory.current charges (page cache, kernel memory)
//   is not split per process; samples of a cgroup with no imported process
//   alive are counted as not represented;
// - machine.cpus from meta.json (`--cpus` overrides).
// Side files are read line by line; a malformed row is skipped and counted,
// or raised with DIR/FILE:LINE under --strict; a missing or wrong header or
// meta.json is always an error.
//
// Who calls it: import_any() / `trace import --from agentcg-record`, trace stats.
#include <algorithm>
#include <charconv>
#include <fstream>
#include <set>

#include "sim/import/builder.h"
#include "sim/import/import.h"

namespace agentcg::import {

namespace {

using json = nlohmann::json;

constexpr const char* kMembersHeader = "mono_ns\ttid\ttgid\tkthread\tcgroup\tcomm";
constexpr const char* kCgroupsHeader = "mono_ns\tpath\tcpu.weight\tcpu.max\tmemory.high\tmemory.max";
constexpr const char* kMemoryHeader = "mono_ns\tpath\tmemory.current";
// Slack when matching sampled times (ns) against the microsecond timestamps
// of the tracefs text.
constexpr std::uint64_t kSlackNs = 1000000;

struct MemberRow {
  std::uint64_t t;
  std::string cgroup;
  bool kthread;
};

struct Settings {
  std::optional<std::uint32_t> weight;
  std::optional<trace::CpuMax> cpu_max;  // nullopt = "max" or absent
  std::optional<std::uint64_t> memory_high;
  std::optional<std::uint64_t> memory_max;
  bool operator==(const Settings& o) const {
    auto cm = [](const std::optional<trace::CpuMax>& a, const std::optional<trace::CpuMax>& b) {
      return a.has_value() == b.has_value() && (!a || (a->quota_us == b->quota_us && a->period_us == b->period_us));
    };
    return weight == o.weight && cm(cpu_max, o.cpu_max) && memory_high == o.memory_high &&
           memory_max == o.memory_max;
  }
};

std::vector<std::string_view> split_tabs(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  for (;;) {
    const auto tab = s.find('\t', pos);
    out.push_back(s.substr(pos, tab == std::string_view::npos ? std::string_view::npos : tab - pos));
    if (tab == std::string_view::npos) break;
    pos = tab + 1;
  }
  return out;
}

std::optional<std::uint64_t> to_u64(std::string_view s) {
  std::uint64_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

bool valid_cgroup_path(std::string_view p) {
  if (p.empty() || p[0] != '/') return false;
  if (p == "/") return true;
  if (p.back() == '/' || p.find("//") != std::string_view::npos) return false;
  return p.find("/./") == std::string_view::npos && p.find("/../") == std::string_view::npos;
}

bool under(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          path[root.size()] == '/');
}

bool kernel_thread_name(const std::string& comm) {
  for (const char* p : {"kworker/", "ksoftirqd/", "migration/", "cpuhp/", "rcu_", "rcuo", "irq/", "idle_inject/",
                        "watchdog/", "kthreadd", "kcompactd", "kswapd", "khugepaged", "jbd2/", "writeback"})
    if (comm.rfind(p, 0) == 0) return true;
  return false;
}

class RecordImporter {
 public:
  RecordImporter(const std::string& dir, const Options& opts) : dir_(dir), opts_(opts) {
    while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  }

  Result run() {
    if (opts_.cgroup != "/")
      throw std::invalid_argument(
          "option --cgroup does not apply to agentcg-record (processes keep their recorded cgroups); "
          "use --only-cgroup PATH to keep one subtree");
    read_meta();
    read_members();
    read_cgroups();
    read_memory();
    Options fo = opts_;
    fo.cpus = opts_.cpus != 0 ? opts_.cpus : meta_cpus_;
    fo.cgroup = "/";
    const std::string ftrace_path = path("ftrace.txt");
    std::ifstream in(ftrace_path);
    if (!in) throw ImportError(ftrace_path, 0, "cannot open file (expected the recorder's tracefs text)");
    FtraceDetail detail;
    Result r = import_ftrace(in, ftrace_path, fo, &detail);
    if (in.bad()) throw ImportError(ftrace_path, 0, "read error");
    merge_reports(std::move(r.report));
    t0_ = detail.t0_ns.value_or(meta_start_ns_);
    assemble(r.trace, detail);
    finish_trace(r.trace, report_, opts_,
                 "per-task run and sleep phases from sched_switch/wakeup with fork, exec and exit, "
                 "recorded cgroups with their settings, memory.current as mem ops");
    r.report = std::move(report_);
    return r;
  }

 private:
  std::string path(const char* file) const { return dir_ + "/" + file; }

  // report_ holds what the side files gave; add the ftrace import's report.
  void merge_reports(Report&& f) {
    Report side = std::move(report_);
    report_ = std::move(f);
    report_.format = "agentcg-record";
    report_.input = dir_;
    report_.lines += side_lines_;
    report_.malformed += side.malformed;
    side.malformed_examples.insert(side.malformed_examples.end(), report_.malformed_examples.begin(),
                                   report_.malformed_examples.end());
    if (side.malformed_examples.size() > 5) side.malformed_examples.resize(5);
    report_.malformed_examples = std::move(side.malformed_examples);
    for (const auto& [k, v] : side.unrepresented) report_.note_unrepresented(k, v);
    if (!scheduler_.empty()) report_.counters["recorded under scheduler " + scheduler_] = 1;
  }
  std::uint64_t rel(std::uint64_t mono) const { return mono > t0_ ? mono - t0_ : 0; }

  void read_meta() {
    const std::string p = path("meta.json");
    std::ifstream in(p);
    if (!in) throw ImportError(p, 0, "cannot open file (expected a folder written by agentcg-record)");
    json m;
    try {
      m = json::parse(in);
    } catch (const json::parse_error& e) {
      throw ImportError(p, 0, std::string("not JSON: ") + e.what());
    } catch (const json::exception& e) {
      // e.g. out_of_range 406 for a number like 1e400 (fuzz/import_record_fuzz.cc)
      throw ImportError(p, 0, std::string("invalid JSON value: ") + e.what());
    }
    // Types are checked before each read: json::value() throws type_error
    // on a present key of another type, which named no file (fuzz finding).
    if (!m.is_object() || !m.contains("format") || !m["format"].is_string() ||
        m["format"].get<std::string>() != "agentcg-recording")
      throw ImportError(p, 0, "format: expected \"agentcg-recording\"");
    if (!m.contains("version") || !m["version"].is_number_integer() || m["version"].get<int>() != 1)
      throw ImportError(p, 0, "version: expected 1 (this reader knows version 1 only)");
    if (!m.contains("cpus") || !m["cpus"].is_number_unsigned() || m["cpus"].get<std::uint64_t>() < 1 ||
        m["cpus"].get<std::uint64_t>() > 4096)
      throw ImportError(p, 0, "cpus: expected an integer 1..4096");
    meta_cpus_ = m["cpus"].get<std::uint32_t>();
    if (m.contains("start_ns") && m["start_ns"].is_number_unsigned()) meta_start_ns_ = m["start_ns"].get<std::uint64_t>();
    if (m.contains("lost_events") && m["lost_events"].is_number_unsigned() && m["lost_events"].get<std::uint64_t>() > 0)
      report_.note_unrepresented("events lost by the recorder's ring buffer (phases around them are approximate)",
                                 m["lost_events"].get<std::uint64_t>());
    if (m.contains("complete") && !m["complete"].is_boolean())
      throw ImportError(p, 0, "complete: expected true or false");
    if (m.contains("complete") && !m["complete"].get<bool>())
      report_.note_unrepresented("recording not completed (recorder killed): meta.json has no end");
    if (m.contains("scheduler") && m["scheduler"].is_string()) scheduler_ = m["scheduler"].get<std::string>();
  }

  // Calls row(fields, line) for each data line after checking the header.
  template <typename F>
  void read_tsv(const char* file, const char* header, std::size_t nfields, F&& row) {
    const std::string p = path(file);
    std::ifstream in(p);
    if (!in) throw ImportError(p, 0, "cannot open file (expected a folder written by agentcg-record)");
    std::string line;
    std::uint64_t n = 0;
    bool too_long = false;
    while (read_bounded_line(in, line, too_long)) {
      ++n;
      ++side_lines_;
      if (too_long) {
        malformed(report_, opts_, p, n, "line longer than " + std::to_string(kMaxLineBytes) + " bytes");
        continue;
      }
      const std::string_view text = rstrip(line);
      if (n == 1) {
        if (text != header) throw ImportError(p, 1, "expected the header '" + std::string(header) + "' (tab-separated)");
        continue;
      }
      if (text.empty()) continue;
      const auto f = split_tabs(text);
      if (f.size() != nfields) {
        malformed(report_, opts_, p, n,
                  "expected " + std::to_string(nfields) + " tab-separated fields, got " + std::to_string(f.size()));
        continue;
      }
      const auto t = to_u64(f[0]);
      if (!t) {
        malformed(report_, opts_, p, n, "mono_ns: expected a non-negative integer, got '" + std::string(f[0]) + "'");
        continue;
      }
      std::string why = row(*t, f);
      if (!why.empty()) malformed(report_, opts_, p, n, why);
    }
    if (in.bad()) throw ImportError(p, 0, "read error");
    if (n == 0) throw ImportError(p, 0, "empty file (expected the header '" + std::string(header) + "')");
  }

  void read_members() {
    read_tsv("members.tsv", kMembersHeader, 6, [&](std::uint64_t t, const std::vector<std::string_view>& f) {
      const auto tid = to_u64(f[1]);
      if (!tid || *tid == 0) return "tid: expected a positive integer, got '" + std::string(f[1]) + "'";
      if (!to_u64(f[2])) return "tgid: expected a positive integer, got '" + std::string(f[2]) + "'";
      if (f[3] != "0" && f[3] != "1") return "kthread: expected 0 or 1, got '" + std::string(f[3]) + "'";
      if (!valid_cgroup_path(f[4])) return "cgroup: expected an absolute cgroup path, got '" + std::string(f[4]) + "'";
      members_[static_cast<std::int64_t>(*tid)].push_back(MemberRow{t, std::string(f[4]), f[3] == "1"});
      return std::string();
    });
  }

  void read_cgroups() {
    read_tsv("cgroups.tsv", kCgroupsHeader, 6, [&](std::uint64_t t, const std::vector<std::string_view>& f) {
      (void)t;
      if (!valid_cgroup_path(f[1]) || f[1] == "/")
        return "path: expected an absolute non-root cgroup path, got '" + std::string(f[1]) + "'";
      Settings s;
      if (f[2] != "-") {
        const auto w = to_u64(f[2]);
        if (!w || *w < 1 || *w > 10000) return "cpu.weight: expected 1..10000 or -, got '" + std::string(f[2]) + "'";
        s.weight = static_cast<std::uint32_t>(*w);
      }
      if (f[3] != "-") {
        const auto sp = f[3].find(' ');
        const std::string_view q = f[3].substr(0, sp);
        const auto period = sp == std::string_view::npos ? std::nullopt : to_u64(f[3].substr(sp + 1));
        const auto quota = to_u64(q);
        if (!period || (q != "max" && !quota))
          return "cpu.max: expected 'max PERIOD' or 'QUOTA PERIOD' (microseconds) or -, got '" + std::string(f[3]) + "'";
        if (quota) s.cpu_max = trace::CpuMax{*quota, *period};
      }
      for (int i = 0; i < 2; ++i) {
        const std::string_view v = f[4 + i];
        if (v == "-" || v == "max") continue;
        const auto b = to_u64(v);
        if (!b)
          return std::string(i == 0 ? "memory.high" : "memory.max") + ": expected bytes, max or -, got '" +
                 std::string(v) + "'";
        (i == 0 ? s.memory_high : s.memory_max) = *b;
      }
      auto& hist = settings_[std::string(f[1])];
      hist.push_back(s);
      return std::string();
    });
  }

  void read_memory() {
    read_tsv("memory.tsv", kMemoryHeader, 3, [&](std::uint64_t t, const std::vector<std::string_view>& f) {
      if (!valid_cgroup_path(f[1])) return "path: expected an absolute cgroup path, got '" + std::string(f[1]) + "'";
      const auto b = to_u64(f[2]);
      if (!b) return "memory.current: expected bytes, got '" + std::string(f[2]) + "'";
      memory_[std::string(f[1])].emplace_back(t, *b);
      return std::string();
    });
  }

  struct Info {
    std::uint64_t start = 0;
    std::uint64_t end = 0;     // exit, or the recording's end
    std::uint64_t ops_ns = 0;  // sum of the timed ops
    std::string cgroup = "/";
    bool kthread = false;
    bool keep = true;
    std::optional<std::int64_t> parent;
  };

  void assemble(trace::Trace& t, const FtraceDetail& detail) {
    std::vector<trace::ProcessSpec>& procs = t.processes;
    std::map<std::int64_t, Info> info;  // by trace pid
    // Recorded lifetimes (wall clock, trace time) and the ops' own duration
    // (shorter when the process waited runnable: waits are not ops).
    for (const trace::ProcessSpec& p : procs) {
      Info& in = info[p.pid];
      in.parent = p.parent;
      for (const trace::Op& op : p.ops)
        if (op.kind == trace::OpKind::kRun || op.kind == trace::OpKind::kSleep || op.kind == trace::OpKind::kIo)
          in.ops_ns += op.amount.a;
      if (auto l = detail.lifetime.find(p.pid); l != detail.lifetime.end()) {
        in.start = l->second.first;
        in.end = std::max(l->second.first, l->second.second);
      } else {
        in.start = p.start_ns.value_or(0);
        in.end = in.start + in.ops_ns;
      }
    }
    // Cgroups and kernel threads (creation order: parents first).
    std::uint64_t moved = 0, unsampled = 0;
    for (const trace::ProcessSpec& p : procs) {
      Info& in = info[p.pid];
      const auto tid_it = detail.recorded_tid.find(p.pid);
      const std::int64_t tid = tid_it == detail.recorded_tid.end() ? p.pid : tid_it->second;
      const bool forked_here = !p.start_ns || tid != p.pid;  // a reuse or a fork: rows must follow its start
      const MemberRow* last = nullptr;
      std::set<std::string> seen;
      if (auto m = members_.find(tid); m != members_.end()) {
        for (const MemberRow& row : m->second) {
          const std::uint64_t rt = rel(row.t);
          if (rt > in.end + kSlackNs) break;
          if (forked_here && rt + kSlackNs < in.start) continue;
          last = &row;
          seen.insert(row.cgroup);
        }
      }
      const Info* parent = in.parent ? &info[*in.parent] : nullptr;
      if (last != nullptr) {
        in.cgroup = last->cgroup;
        in.kthread = last->kthread;
        if (seen.size() > 1) ++moved;
      } else {
        ++unsampled;
        if (parent != nullptr) {
          in.cgroup = parent->cgroup;
          in.kthread = parent->kthread;
        }
        if (p.pid == 2 || kernel_thread_name(p.comm)) in.kthread = true;
      }
    }
    if (moved != 0) report_.note_unrepresented("processes moved between cgroups (placed in their last one)", moved);
    report_.counters["tasks never sampled (cgroup of the parent)"] = unsampled;
    // Which processes stay.
    std::uint64_t kthreads = 0, outside = 0;
    for (const trace::ProcessSpec& p : procs) {
      Info& in = info[p.pid];
      if (in.kthread) {
        in.keep = false;
        ++kthreads;
      } else if (!opts_.only_cgroup.empty() && !under(in.cgroup, opts_.only_cgroup)) {
        in.keep = false;
        ++outside;
      }
    }
    report_.counters["kernel threads dropped"] = kthreads;
    if (!opts_.only_cgroup.empty()) report_.counters["processes outside --only-cgroup dropped"] = outside;
    std::vector<trace::ProcessSpec> kept;
    for (trace::ProcessSpec& p : procs) {
      const Info& in = info[p.pid];
      if (!in.keep) continue;
      if (p.parent && !info[*p.parent].keep) {
        p.parent.reset();
        p.start_ns = in.start;
      }
      p.cgroup = in.cgroup;
      std::erase_if(p.ops, [&](const trace::Op& op) {
        return op.kind == trace::OpKind::kFork && op.pid() != 0 && !info[op.pid()].keep;
      });
      // a sleep woken by a dropped task (a kernel thread): as a timer's
      for (trace::Op& op : p.ops)
        if ((op.kind == trace::OpKind::kSleep || op.kind == trace::OpKind::kIo) && op.waker() != 0 &&
            !info[op.waker()].keep)
          op.set_waker(0);
      kept.push_back(std::move(p));
    }
    procs = std::move(kept);
    report_.counters["processes"] = procs.size();
    // Wakeup latencies of the kept processes only.
    report_.wakeup_latency_ns.clear();
    for (const FtraceDetail::Wakeup& w : detail.wakeups)
      if (info[w.pid].keep) report_.wakeup_latency_ns.push_back(w.ns);
    report_.counters["wakeup_latency_samples"] = report_.wakeup_latency_ns.size();
    // The cgroup tree.
    t.cgroups.clear();
    std::set<std::string> paths;
    for (const trace::ProcessSpec& p : procs) paths.insert(p.cgroup);
    for (const std::string& c : paths) add_cgroup_chain(t, c);
    std::uint64_t changed = 0, clamped = 0;
    for (trace::CgroupSpec& c : t.cgroups) {
      auto it = settings_.find(c.path);
      if (it == settings_.end() || it->second.empty()) {
        report_.note_unrepresented("cgroups without recorded settings (defaults used)");
        continue;
      }
      const Settings& s = it->second.back();
      for (const Settings& o : it->second)
        if (!(o == s)) {
          ++changed;
          break;
        }
      if (s.weight) c.cpu_weight = *s.weight;
      if (s.cpu_max) {
        trace::CpuMax cm = *s.cpu_max;
        if (cm.period_us < 1000 || cm.period_us > 1000000 || cm.quota_us < 1000) {
          report_.note_unrepresented("cpu.max outside the trace format's range (dropped)");
        } else {
          c.cpu_max = cm;
        }
      }
      c.memory_high = s.memory_high;
      c.memory_max = s.memory_max;
      if (c.memory_high && c.memory_max && *c.memory_high > *c.memory_max) {
        c.memory_high = c.memory_max;
        ++clamped;
      }
    }
    if (changed != 0) report_.note_unrepresented("cgroup settings changed during the recording (last value used)", changed);
    if (clamped != 0) report_.note_unrepresented("memory.high above memory.max (clamped to memory.max)", clamped);
    add_memory(procs, info);
  }

  // mem ops: a cgroup's memory.current goes to its oldest live process.
  void add_memory(std::vector<trace::ProcessSpec>& procs, std::map<std::int64_t, Info>& info) {
    std::map<std::string, std::vector<std::size_t>> by_cgroup;  // creation order
    for (std::size_t i = 0; i < procs.size(); ++i) by_cgroup[procs[i].cgroup].push_back(i);
    std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> samples(procs.size());
    std::uint64_t orphan = 0, placed = 0;
    for (const auto& [cg, rows] : memory_) {
      auto it = by_cgroup.find(cg);
      for (const auto& [mono, bytes] : rows) {
        const std::uint64_t t = rel(mono);
        std::optional<std::size_t> holder;
        if (it != by_cgroup.end()) {
          std::uint64_t best = UINT64_MAX;
          for (std::size_t i : it->second) {
            const Info& in = info[procs[i].pid];
            if (in.start <= t && t < in.end && in.start < best) {
              best = in.start;
              holder = i;
            }
          }
        }
        if (!holder) {
          if (it != by_cgroup.end()) ++orphan;
          continue;
        }
        // Wall time -> position along the ops, proportionally over the
        // lifetime (the ops leave out runnable waits).
        const Info& hi = info[procs[*holder].pid];
        const std::uint64_t span = hi.end - hi.start;
        const std::uint64_t at =
            span == 0 ? 0
                      : static_cast<std::uint64_t>(static_cast<double>(t - hi.start) / static_cast<double>(span) *
                                                   static_cast<double>(hi.ops_ns));
        samples[*holder].emplace_back(at, bytes);
        ++placed;
      }
    }
    if (orphan != 0)
      report_.note_unrepresented("memory.current samples with no imported process alive in the cgroup", orphan);
    report_.counters["memory samples as mem ops"] = placed;
    for (std::size_t i = 0; i < procs.size(); ++i)
      if (!samples[i].empty()) insert_mem(procs[i], 0, samples[i]);
  }

  // Inserts mem ops at their positions (ns of timed ops from `start`),
  // splitting the timed op that spans one.
  static void insert_mem(trace::ProcessSpec& p, std::uint64_t start,
                         const std::vector<std::pair<std::uint64_t, std::uint64_t>>& samples) {
    std::vector<trace::Op> out;
    std::size_t k = 0;
    std::uint64_t cur = start;
    std::optional<std::uint64_t> last;
    auto emit_mem = [&](std::uint64_t bytes) {
      if (last && *last == bytes) return;
      trace::Op op;
      op.kind = trace::OpKind::kMem;
      op.amount = trace::Value::fixed(bytes);
      out.push_back(std::move(op));
      last = bytes;
    };
    for (trace::Op& op : p.ops) {
      const bool timed =
          op.kind == trace::OpKind::kRun || op.kind == trace::OpKind::kSleep || op.kind == trace::OpKind::kIo;
      if (op.kind == trace::OpKind::kExit) {
        out.push_back(std::move(op));
        continue;
      }
      if (timed) {
        std::uint64_t left = op.amount.a;
        while (k < samples.size() && samples[k].first < cur + left) {
          const std::uint64_t at = std::max(samples[k].first, cur);
          if (at > cur) {
            trace::Op part = op;
            part.amount = trace::Value::fixed(at - cur);
            out.push_back(std::move(part));
            left -= at - cur;
            cur = at;
          }
          emit_mem(samples[k].second);
          ++k;
        }
        if (left > 0) {
          op.amount = trace::Value::fixed(left);
          cur += left;
          out.push_back(std::move(op));
        }
        continue;
      }
      while (k < samples.size() && samples[k].first <= cur) emit_mem(samples[k++].second);
      out.push_back(std::move(op));
    }
    p.ops = std::move(out);
  }

  std::string dir_;
  Options opts_;
  Report report_;
  std::uint32_t meta_cpus_ = 1;
  std::uint64_t meta_start_ns_ = 0;
  std::uint64_t t0_ = 0;
  std::uint64_t side_lines_ = 0;
  std::string scheduler_;
  std::map<std::int64_t, std::vector<MemberRow>> members_;  // by tid, file order (time order)
  std::map<std::string, std::vector<Settings>> settings_;
  std::map<std::string, std::vector<std::pair<std::uint64_t, std::uint64_t>>> memory_;
};

}  // namespace

Result import_agentcg_record_dir(const std::string& dir, const Options& opts) {
  RecordImporter imp(dir, opts);
  return imp.run();
}

}  // namespace agentcg::import
