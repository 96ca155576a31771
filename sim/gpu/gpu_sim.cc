// SPDX-License-Identifier: GPL-2.0-only
// The GPU + PCIe model and its driver: GPU jobs (sim/trace/gpu_trace.h) run
// as nvshare-like clients of a core/ GPU policy (core/include/agentcg/gpu/
// policy.h) on the shared sim::Simulator.
//
// Model (event-driven, no per-page events):
//  - Memory: per GPU, capacity minus one context overhead per placed job;
//    each job has a resident byte count (at most its working set =
//    memory_bytes x touched_fraction). Eviction is LRU across jobs: the
//    job whose pages were touched longest ago loses pages first (NVIDIA's
//    UVM evicts LRU across all contexts; prefetch evicts too). Each GPU
//    keeps the running total of its jobs' resident bytes (integers: every
//    change is a whole number of bytes) and its jobs in LRU order (an
//    intrusive list by last touch, then job index), so a fault costs the
//    evictions it makes, not a scan and sort of every job.
//  - Demand paging: a kernel touches working_set / kernels_per_iteration
//    bytes; the part not resident (random access: hit ratio = resident /
//    working set) faults in at the link's fault bandwidth plus a latency per
//    2 MB VA block, before the kernel computes. When co-running working sets
//    exceed memory, each kernel evicts the other jobs' pages and they fault
//    them back: throughput collapses (thrashing).
//  - Prefetch (a kPrefetch decision): the missing part of the working set,
//    in 2 MB chunks, at copy bandwidth, before the job's kernels run.
//  - Pages never created (a job's working set is created in sweep order)
//    are created on the GPU at PcieSpec's first_touch / create rates where
//    the preset has them (gen5), not copied.
//  - One page-migration server per GPU: a kernel's faults and a prefetch
//    are served after those queued before them (kPrefetchDone); a
//    faulting kernel holds its share of the GPU while it waits and
//    computes once its own are served (no event of its own: its finish is
//    projected through the wait, Gpu::InService::ready_ns).
//  - Kernels: each job's stream runs one kernel at a time; kernels of
//    co-running jobs share the GPU (processor sharing: each of n gets 1/n,
//    slowed further by corun_interference_pct). A job keeps up to
//    sync_every kernels queued (or the grant's max_queued_ns of work), then
//    syncs; host_ns of CPU work follows each iteration.
//  - Client protocol, as nvshare's: a job asks for the lock before it
//    launches; on DROP it drains its queued kernels, releases, and asks
//    again if work is left (round robin); after idle_release_ms of host work
//    it releases early; finishing = disconnect.
// Invariants: resident bytes on a GPU never exceed its data capacity; time
// only moves forward; all iteration is over vectors in job order.
//
// With a ScheduleLog (a Perfetto/ftrace export or the GPU timeline plot was
// asked for) the model records each lock hold (grant -> DROP -> release as
// a hold slice then a drain slice) and each job's resident bytes whenever
// they moved by 1/256 of the GPU's memory or to/from zero (bounded: at most
// ~512 samples per job and fill-and-empty cycle, not one per kernel).
#include "sim/gpu/gpu_sim.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "agentcg/gpu/policy.h"
#include "sim/trace/gpu_trace.h"
#include "sim/schedule_log.h"

namespace agentcg::sim::gpu {
// The trace's GPU section types are the trace library's (sim/trace/gpu_trace.h).
using trace::gpu::GpuJob;
using trace::gpu::GpuSpec;
using trace::gpu::PcieSpec;
using trace::gpu::GpuWorkload;
using trace::gpu::parse_gpu_section;

bool trace_has_gpu(const trace::Trace& trace) { return trace.extra.contains("gpu"); }

namespace {

using agentcg::gpu::Decision;
using agentcg::gpu::DecisionKind;
using agentcg::gpu::Decisions;

constexpr std::uint64_t kChunk = 2ull << 20;  // 2 MB VA blocks (open UVM driver)
constexpr std::uint32_t kNoJob = ~std::uint32_t{0};  // the end of a GPU's LRU list

enum EventKind : std::uint32_t {
  kArrival = 1,
  kKernelDone = 2,   // arg: gpu
  kTick = 3,
  kHostDone = 4,     // arg: job
  kPrefetchDone = 5, // arg: job
  kLimitChange = 6,  // arg: job | change << 32
  kIdleRelease = 7,  // arg: job
};

enum class JobState { kPending, kActive, kHost, kDone };

struct Job {
  GpuJob spec;
  JobState state = JobState::kPending;
  std::optional<std::uint32_t> gpu;
  std::uint64_t ws = 0;            // working set bytes
  std::uint64_t slice = 0;         // bytes of it one kernel touches: ceil(ws / kernels_per_iteration)
  std::uint64_t total_kernels = 0;
  std::uint64_t done_kernels = 0;
  std::uint64_t submitted = 0;
  std::uint64_t barrier_at = 0;  // GpuSim::barrier()'s memo: valid while done_kernels < it
  std::uint64_t host_done = 0;     // host phases finished
  bool granted = false;
  bool dropped = false;
  bool requested = false;
  bool prefetching = false;
  std::uint64_t pending_prefetch = 0;
  std::uint64_t generation = 0;
  std::uint64_t max_queued_ns = 0;
  std::uint64_t depth = ~0ull;     // kernels it may have queued: from max_queued_ns, set with it
  // start_kernel()'s memo of the demand-paging time of its last fault
  // (thrashing, every kernel faults its same slice)
  std::uint64_t memo_fault = 0;
  double memo_fault_ns = 0;
  // Bytes of the working set that exist (were resident once): a kernel
  // sweeps in order, so the rest is created by the next touch, not copied
  // (PcieSpec::first_touch_bytes_per_s, create_bytes_per_s).
  std::uint64_t created = 0;
  bool in_service = false;         // its head kernel is executing (in its GPU's `active`)
  std::uint64_t host_started = 0;
  // stats
  std::uint64_t start_ns = 0;
  bool started = false;
  std::uint64_t finish_ns = 0;
  std::uint64_t wait_ns = 0, run_ns = 0;
  std::uint64_t wait_since = 0, run_since = 0;
  double gpu_time_ns = 0;          // of its finished kernels (one in service: see Gpu::share)
  std::uint64_t fault_bytes = 0, prefetch_bytes = 0;
  std::uint64_t drops = 0, grants = 0, wait_for_memory = 0;
  std::uint32_t limit_pct = 100;
  // ScheduleLog bookkeeping: the open hold/drain slice, the last logged bytes
  std::optional<std::size_t> log_slice;
  std::optional<std::uint64_t> logged_resident;
};

// A job's resident bytes and its place in its GPU's LRU list: what the
// eviction walk and a kernel start read, kept apart from Job (32 bytes a
// job, in GpuSim::lru_ by job index: a walk reads a few adjacent lines, not
// one ~400-byte Job per step; issue 21).
struct LruNode {
  std::uint64_t resident = 0;  // bytes on its GPU (set_resident keeps the GPU's total)
  std::uint64_t last_touch = 0;
  // linked from place() until finish(), or until its last resident byte is
  // evicted; a touch links it again
  std::uint32_t prev = kNoJob, next = kNoJob;
  std::uint32_t gpu = 0;  // Job::gpu, once placed (its list's GPU)
  bool linked = false;
};

struct Gpu {
  GpuSpec spec;
  double demand_ns_per_byte = 0;  // spec.pcie.demand_ns_per_byte(), once
  std::uint64_t contexts = 0;
  std::uint64_t resident = 0;  // sum of its jobs' resident bytes
  std::uint32_t lru_head = kNoJob, lru_tail = kNoJob;  // least recently touched first
  // Processor sharing in virtual time: `vt` is the solo work (ns) each
  // kernel in service has received, `share` the GPU time (ns) each has had;
  // both advance with real time at rates that depend only on the kernels in
  // service (their number and sm_pct: refresh_rate()). A kernel finishes
  // when vt reaches its finish_vt, so an update is O(1), not one pass over
  // every kernel (issue 21).
  // A kernel whose faults are still being served (ready_ns > last_ns)
  // makes no progress until ready_ns; its finish_vt is projected through
  // the wait at the present rate, (ready_ns - last_ns) x rate + its work,
  // and projected again whenever the rate changes (refresh_rate()). So a
  // faulting kernel costs one event, its end, not a second one when its
  // faults are served (issue 21: that event doubled a thrashing run).
  struct InService {
    std::size_t job;
    double finish_vt;    // vt at which this kernel's work is done
    double share_start;  // `share` when it started
    std::uint32_t sm_pct;  // its job's
    std::uint64_t ready_ns;  // its faults served (its start if it had none)
  };
  std::vector<InService> active;  // kernels in service, in the order they started
  double vt = 0, share = 0;
  std::uint64_t sm_pct_sum = 0;  // the sm_pct of the kernels in `active`
  double load = 1.0, rate = 1.0;  // GpuSim::refresh_rate() of them
  double inv_load = 1.0, inv_rate = 1.0;
  // refresh_rate()'s memo of load and rate by sm_pct_sum (> 100), direct
  // mapped (sum % kRateMemo; 7 is prime, so sums of 100s spread)
  struct RateMemo {
    std::uint64_t sum = 0;  // 0: empty
    double load = 1.0, rate = 1.0, inv_load = 1.0, inv_rate = 1.0;
  };
  static constexpr std::size_t kRateMemo = 7;
  std::array<RateMemo, kRateMemo> rate_memo{};
  std::uint64_t last_ns = 0;  // kernels in service progressed up to here (update())
  // Page faults are served one kernel's after another (one fault buffer
  // and service thread per GPU in NVIDIA's UVM driver): the server is busy
  // until here. A faulting kernel holds its share meanwhile (InService).
  std::uint64_t faults_free_ns = 0;
  // No kernel in `active` waits for its faults past this (the latest
  // ready_ns given: refresh_rate() skips its pass once it is behind now)
  std::uint64_t stalled_until = 0;
  bool dirty = false;         // its kernels in service changed in this event (GpuSim::mark_dirty)
  EventId done_event;
  std::uint64_t done_at = 0;
  std::uint64_t busy_ns = 0;
  std::uint64_t bytes_migrated = 0;
  std::uint64_t bytes_evicted = 0;
  std::optional<std::size_t> last_released;
  std::uint64_t switches = 0;
  std::uint64_t capacity = 0;  // data_capacity(), kept by set_contexts()
  std::uint64_t data_capacity() const {
    const std::uint64_t o = contexts * spec.context_overhead_bytes;
    return spec.memory_bytes > o ? spec.memory_bytes - o : 0;
  }
  void set_contexts(std::uint64_t n) {
    contexts = n;
    capacity = data_capacity();
  }
};

class GpuSim final : public GpuSimulation, public EventHandler {
 public:
  GpuSim(Simulator& sim, const trace::Trace& trace, const std::string& policy,
         const config::GpuConfig& cfg, ScheduleLog* log)
      : sim_(sim), cfg_(cfg), policy_name_(policy), log_(log) {
    GpuWorkload w = parse_gpu_section(trace);
    // Machine profile (config gpu.gpus / gpu.gpu_memory_mb): the trace's
    // first GPU, replicated; a job pinned beyond it is an error.
    if (cfg.machine_gpus) {
      GpuSpec proto = w.gpus.empty() ? GpuSpec{} : w.gpus.front();
      w.gpus.assign(cfg.machine_gpus, proto);
      for (const auto& j : w.jobs)
        if (j.gpu && *j.gpu >= cfg.machine_gpus)
          throw std::invalid_argument("gpu job at " + j.pointer + " is pinned to GPU " + std::to_string(*j.gpu) +
                                      " but the machine profile has " + std::to_string(cfg.machine_gpus) +
                                      " GPU(s) (config gpu.gpus)");
    }
    if (cfg.machine_gpu_memory_mb)
      for (auto& g : w.gpus) g.memory_bytes = cfg.machine_gpu_memory_mb << 20;
    std::vector<agentcg::gpu::GpuCapacity> caps;
    for (const auto& g : w.gpus) {
      gpus_.push_back(Gpu{g});
      gpus_.back().demand_ns_per_byte = g.pcie.demand_ns_per_byte();
      gpus_.back().set_contexts(0);
      caps.push_back({g.memory_bytes, g.pcie.swap_bytes_per_s(), g.context_overhead_bytes});
    }
    try {
      policy_ = agentcg::gpu::make_gpu_policy(policy, cfg, caps);
    } catch (const agentcg::gpu::PolicyError& e) {
      throw std::invalid_argument(e.what());
    }
    for (auto& s : w.jobs) {
      Job j;
      j.spec = std::move(s);
      j.ws = static_cast<std::uint64_t>(static_cast<double>(j.spec.memory_bytes) * j.spec.touched_ppm / 1e6);
      j.total_kernels = j.spec.iterations * j.spec.kernels_per_iteration;
      j.slice = static_cast<std::uint64_t>(std::ceil(static_cast<double>(j.ws) / j.spec.kernels_per_iteration));
      j.limit_pct = j.spec.limit_pct.value_or(100);
      jobs_.push_back(std::move(j));
    }
    if (jobs_.size() >= kNoJob)
      throw std::invalid_argument("the trace has " + std::to_string(jobs_.size()) + " GPU jobs; at most " +
                                  std::to_string(kNoJob - 1) + " are supported");
    lru_.resize(jobs_.size());
    if (log_) {
      log_->nr_gpus = static_cast<std::uint32_t>(gpus_.size());
      log_->gpu_jobs.clear();
      for (const auto& j : jobs_) log_->gpu_jobs.push_back(j.spec.id);
    }
  }

  void start() override {
    for (std::size_t i = 0; i < jobs_.size(); ++i) {
      sim_.schedule(Time::from_ns(jobs_[i].spec.arrival_ns), this, kArrival, i);
      for (std::size_t k = 0; k < jobs_[i].spec.limit_changes.size(); ++k)
        sim_.schedule(Time::from_ns(jobs_[i].spec.limit_changes[k].at_ns), this, kLimitChange,
                      i | (static_cast<std::uint64_t>(k) << 32));
    }
  }

  bool done() const override { return jobs_done_ == jobs_.size(); }

  void on_event(Simulator&, std::uint32_t kind, std::uint64_t arg) override {
    const std::uint64_t now = sim_.now().ns();
    switch (static_cast<EventKind>(kind)) {
      case kArrival: arrive(arg, now); break;
      case kKernelDone: kernel_done(static_cast<std::uint32_t>(arg), now); break;
      case kTick:
        tick_event_ = EventId{};
        tick_at_.reset();
        apply(policy_->tick(now));
        break;
      case kHostDone: {
        Job& j = jobs_[arg];
        j.host_done++;
        j.state = JobState::kActive;
        work_.push_back(arg);
        break;
      }
      case kPrefetchDone: {
        Job& j = jobs_[arg];
        j.prefetching = false;
        work_.push_back(arg);
        break;
      }
      case kLimitChange: {
        const std::size_t i = arg & 0xffffffffu;
        const auto& ch = jobs_[i].spec.limit_changes[arg >> 32];
        jobs_[i].limit_pct = ch.limit_pct;
        if (jobs_[i].state != JobState::kPending && jobs_[i].state != JobState::kDone)
          apply(policy_->set_limits(now, client(i), {ch.limit_pct, 0}));
        break;
      }
      case kIdleRelease: {
        Job& j = jobs_[arg];
        if (j.state == JobState::kHost && j.granted && !j.dropped &&
            now >= j.host_started + cfg_.idle_release_ms * 1000000) {
          do_release(arg, now);
        }
        break;
      }
    }
    drain(now);
    // Only a GPU whose kernels in service changed needs a new done event:
    // the others' stands (progress is linear between changes), and their
    // progress is brought up to date at their next change (issue 21: every
    // event used to walk every kernel of every GPU).
    // Ascending GPU order, as a scan of every GPU gave: the done events'
    // sequence numbers (ties at one instant) stay as they were.
    if (dirty_.size() > 1) std::sort(dirty_.begin(), dirty_.end());
    for (std::uint32_t g : dirty_) reschedule(g, now);
    dirty_.clear();
    last_event_ns_ = now;
    if (log_) log_residency(now);
  }

  nlohmann::json results() const override {
    using nlohmann::json;
    const std::uint64_t now = sim_.now().ns();
    std::uint64_t first = ~0ull, last = 0, finished = 0;
    json jobs = json::object(), clients = json::object();
    std::uint64_t migrated = 0, evicted = 0, switches = 0, drops = 0, grants = 0, busy = 0;
    // The GPUs' progress up to the last event, as update() would bring it.
    std::vector<double> gpu_time(jobs_.size());
    for (std::size_t i = 0; i < jobs_.size(); ++i) gpu_time[i] = jobs_[i].gpu_time_ns;
    std::vector<std::uint64_t> gpu_busy(gpus_.size());
    for (std::size_t g = 0; g < gpus_.size(); ++g) {
      const Gpu& G = gpus_[g];
      gpu_busy[g] = G.busy_ns;
      const bool behind = !G.active.empty() && last_event_ns_ > G.last_ns;
      if (behind) gpu_busy[g] += last_event_ns_ - G.last_ns;
      const double pending =
          behind ? static_cast<double>(last_event_ns_ - G.last_ns) / load(G) : 0.0;
      for (const Gpu::InService& k : G.active) gpu_time[k.job] += G.share + pending - k.share_start;
    }
    for (std::size_t ji = 0; ji < jobs_.size(); ++ji) {
      const Job& j = jobs_[ji];
      first = std::min(first, j.spec.arrival_ns);
      const bool fin = j.state == JobState::kDone;
      const std::uint64_t end = fin ? j.finish_ns : std::max(now, j.spec.arrival_ns);
      last = std::max(last, end);
      finished += fin;
      std::uint64_t wait = j.wait_ns, run = j.run_ns;
      if (!fin && j.requested && !j.granted) wait += now - j.wait_since;
      if (!fin && j.granted) run += now - j.run_since;
      json o = json::object();
      o["gpu"] = j.gpu ? json(*j.gpu) : json(nullptr);
      o["arrival_ns"] = j.spec.arrival_ns;
      o["start_ns"] = j.started ? json(j.start_ns) : json(nullptr);
      o["finish_ns"] = fin ? json(j.finish_ns) : json(nullptr);
      o["jct_ns"] = fin ? json(j.finish_ns - j.spec.arrival_ns) : json(nullptr);
      o["wait_ns"] = wait;
      o["run_ns"] = run;
      o["gpu_time_ns"] = static_cast<std::uint64_t>(gpu_time[ji]);
      o["kernels_done"] = j.done_kernels;
      o["bytes_migrated"] = j.fault_bytes + j.prefetch_bytes;
      o["fault_bytes"] = j.fault_bytes;
      o["prefetch_bytes"] = j.prefetch_bytes;
      o["drops"] = j.drops;
      o["grants"] = j.grants;
      o["wait_for_memory"] = j.wait_for_memory;
      jobs[j.spec.id] = o;
      json c = json::object();
      c["limit_pct"] = j.limit_pct;
      const std::uint64_t span = end > j.spec.arrival_ns ? end - j.spec.arrival_ns : 0;
      c["achieved_share"] = span ? gpu_time[ji] / static_cast<double>(span) : 0.0;
      c["gpu_time_ns"] = static_cast<std::uint64_t>(gpu_time[ji]);
      c["bytes_migrated"] = j.fault_bytes + j.prefetch_bytes;
      c["drops"] = j.drops;
      clients[j.spec.id] = c;
      drops += j.drops;
      grants += j.grants;
    }
    if (jobs_.empty()) first = 0;
    json gpus = json::array();
    for (std::size_t gi = 0; gi < gpus_.size(); ++gi) {
      const Gpu& g = gpus_[gi];
      migrated += g.bytes_migrated;
      evicted += g.bytes_evicted;
      switches += g.switches;
      busy += gpu_busy[gi];
      gpus.push_back({{"memory_bytes", g.spec.memory_bytes},
                      {"pcie", g.spec.pcie.name},
                      {"busy_ns", gpu_busy[gi]},
                      {"bytes_migrated", g.bytes_migrated},
                      {"bytes_evicted", g.bytes_evicted},
                      {"switches", g.switches}});
    }
    const std::uint64_t makespan = last > first ? last - first : 0;
    json r = json::object();
    r["policy"] = policy_name_;
    r["gpus"] = gpus;
    r["makespan_ns"] = makespan;
    r["busy_fraction"] = makespan ? static_cast<double>(busy) / (static_cast<double>(makespan) * gpus_.size()) : 0.0;
    r["bytes_migrated"] = migrated;
    r["bytes_evicted"] = evicted;
    r["switches"] = switches;
    r["drops"] = drops;
    r["grants"] = grants;
    r["jobs_total"] = jobs_.size();
    r["jobs_finished"] = finished;
    r["jobs"] = jobs;
    r["clients"] = clients;
    return r;
  }

 private:
  static agentcg::gpu::ClientId client(std::size_t i) { return i + 1; }

  // ScheduleLog: close job i's open slice at now; open a new one of `kind`.
  // A slice still open when the run stops keeps end_ns = ~0 and the writer
  // ends it at the log's end (sim/perfetto.cc).
  void log_close(std::size_t i, std::uint64_t now) {
    Job& j = jobs_[i];
    if (!log_ || !j.log_slice) return;
    log_->gpu_slices[*j.log_slice].end_ns = now;
    j.log_slice.reset();
  }
  void log_open(std::size_t i, GpuSliceKind kind, std::uint64_t now) {
    if (!log_) return;
    log_close(i, now);
    jobs_[i].log_slice = log_->gpu_slices.size();
    log_->gpu_slices.push_back({*jobs_[i].gpu, static_cast<std::uint32_t>(i), kind, now, ~0ull});
  }
  void log_residency(std::uint64_t now) {
    for (std::size_t i = 0; i < jobs_.size(); ++i) {
      Job& j = jobs_[i];
      if (!j.gpu) continue;
      const std::uint64_t bytes = lru_[i].resident;
      const std::uint64_t step = std::max<std::uint64_t>(1, gpus_[*j.gpu].spec.memory_bytes / 256);
      const std::uint64_t last = j.logged_resident.value_or(~0ull);
      const bool moved = !j.logged_resident || (bytes == 0) != (last == 0) ||
                         (bytes > last ? bytes - last : last - bytes) >= step;
      if (!moved) continue;
      j.logged_resident = bytes;
      log_->gpu_residency.push_back({*j.gpu, static_cast<std::uint32_t>(i), now, bytes});
    }
  }

  void arrive(std::size_t i, std::uint64_t now) {
    Job& j = jobs_[i];
    j.state = JobState::kActive;
    // The context is created at the first grant (place() in apply()), as
    // the policy's admission assumes.
    std::optional<agentcg::gpu::GpuIndex> hint;
    if (j.spec.gpu) hint = *j.spec.gpu;
    // Limit changes before arrival take effect at registration.
    apply(policy_->register_client(now, client(i), hint, {j.limit_pct, 0}));
    apply(policy_->memory_update(now, client(i), j.spec.memory_bytes));
    if (j.total_kernels == 0) {
      finish(i, now);
      return;
    }
    work_.push_back(i);
  }

  void place(std::size_t i, std::uint32_t g) {
    Job& j = jobs_[i];
    if (j.gpu) return;
    j.gpu = g;
    lru_[i].gpu = g;
    gpus_[g].set_contexts(gpus_[g].contexts + 1);
    lru_link(i);
    make_room(g, 0, kNoJob);
  }

  // Job i's resident bytes become `bytes` (it is placed): its GPU's total follows.
  void set_resident(std::size_t i, std::uint64_t bytes) { set_resident(gpus_[lru_[i].gpu], lru_[i], bytes); }
  // The same where the caller holds the job's node and its GPU (the
  // eviction walk and the kernel start: no second lookup of the job's GPU).
  static void set_resident(Gpu& G, LruNode& n, std::uint64_t bytes) {
    G.resident = G.resident - n.resident + bytes;
    n.resident = bytes;
  }

  // Whether job a comes after job b in LRU order: touched later, or at the
  // same time with a higher index (the order a stable sort by last touch
  // of the jobs in index order gives).
  bool lru_after(std::uint32_t a, std::uint32_t b) const {
    return lru_[a].last_touch > lru_[b].last_touch || (lru_[a].last_touch == lru_[b].last_touch && a > b);
  }

  // Links placed job i into its GPU's list at its place. Touches move a
  // job to the tail (time only grows), so the walk back passes only the
  // jobs touched at the same instant with a higher index; a job's first
  // link (at place()) may walk the whole list, once.
  void lru_link(std::uint32_t i) {
    LruNode& n = lru_[i];
    if (n.linked) return;
    Gpu& G = gpus_[n.gpu];
    std::uint32_t before = G.lru_tail;
    while (before != kNoJob && lru_after(before, i)) before = lru_[before].prev;
    n.prev = before;
    n.next = before == kNoJob ? G.lru_head : lru_[before].next;
    (before == kNoJob ? G.lru_head : lru_[before].next) = i;
    (n.next == kNoJob ? G.lru_tail : lru_[n.next].prev) = i;
    n.linked = true;
  }

  void lru_unlink(std::uint32_t i) { lru_unlink(gpus_[lru_[i].gpu], i); }
  void lru_unlink(Gpu& G, std::uint32_t i) {
    LruNode& n = lru_[i];
    if (!n.linked) return;
    (n.prev == kNoJob ? G.lru_head : lru_[n.prev].next) = n.next;
    (n.next == kNoJob ? G.lru_tail : lru_[n.next].prev) = n.prev;
    n.prev = n.next = kNoJob;
    n.linked = false;
  }

  // Job i touched its pages at `now`: the most recently used of its GPU.
  void touch(std::uint32_t i, std::uint64_t now) {
    LruNode& n = lru_[i];
    Gpu& G = gpus_[n.gpu];
    // Already the most recently used: it stays so (every other job was
    // touched earlier, or at `now` with a lower index, or it would follow).
    if (n.linked && G.lru_tail == i) {
      n.last_touch = now;
      return;
    }
    lru_unlink(G, i);
    n.last_touch = now;
    lru_link(i);
  }

  // Evicts LRU pages (other jobs first by last touch; `self` last) until
  // `need` more bytes fit; returns how many bytes may be added. `self`:
  // the job that needs them, or kNoJob.
  std::uint64_t make_room(std::uint32_t g, std::uint64_t need, std::uint32_t self) {
    Gpu& G = gpus_[g];
    const std::uint64_t cap = G.capacity;
    if (G.resident + need <= cap) return need;
    std::uint64_t over = G.resident + need - cap;
    for (std::uint32_t k = G.lru_head; k != kNoJob;) {
      LruNode& victim = lru_[k];
      const std::uint32_t next = victim.next;
      if (k != self && victim.resident > 0) {
        const std::uint64_t take = std::min(over, victim.resident);
        set_resident(G, victim, victim.resident - take);
        G.bytes_evicted += take;
        over -= take;
        if (victim.resident == 0) lru_unlink(G, k);  // nothing left to evict: out of the walk
        if (over == 0) return need;
      }
      k = next;
    }
    // Only `self` is left: it cannot hold more than the capacity.
    return need > over ? need - over : 0;
  }

  void apply(const Decisions& d) {
    const std::uint64_t now = sim_.now().ns();
    for (const Decision& x : d.list) {
      const std::size_t i = x.client - 1;
      if (i >= jobs_.size()) continue;
      Job& j = jobs_[i];
      switch (x.kind) {
        case DecisionKind::kGrant:
          place(i, x.gpu);
          j.granted = true;
          j.dropped = false;
          j.requested = false;
          j.generation = x.generation;
          j.max_queued_ns = x.max_queued_ns;
          j.depth = j.max_queued_ns ? std::max<std::uint64_t>(1, j.max_queued_ns / j.spec.kernel_ns) : ~0ull;
          j.grants++;
          j.wait_ns += now - j.wait_since;
          j.run_since = now;
          if (!j.started) {
            j.started = true;
            j.start_ns = now;
          }
          // A switch: the GPU is handed from a client that released it to another.
          if (gpus_[x.gpu].last_released && *gpus_[x.gpu].last_released != i) gpus_[x.gpu].switches++;
          gpus_[x.gpu].last_released.reset();
          log_open(i, GpuSliceKind::kHold, now);
          if (j.pending_prefetch) start_prefetch(i, now);
          work_.push_back(i);
          break;
        case DecisionKind::kDrop:
          if (j.granted && j.generation == x.generation && !j.dropped) {
            j.dropped = true;
            j.drops++;
            log_open(i, GpuSliceKind::kDrain, now);
            work_.push_back(i);
          }
          break;
        case DecisionKind::kPrefetch:
          j.pending_prefetch = x.bytes;
          break;
        case DecisionKind::kWaitForMemory:
          j.wait_for_memory++;
          break;
        case DecisionKind::kWake:
        case DecisionKind::kMemoryLimit:
          break;
      }
    }
    if (d.next_tick_ns) {
      const std::uint64_t t = std::max(*d.next_tick_ns, now);
      if (!tick_at_ || *tick_at_ != t) {
        if (tick_event_.valid()) sim_.cancel(tick_event_);
        tick_event_ = sim_.schedule(Time::from_ns(t), this, kTick);
        tick_at_ = t;
      }
    }
  }

  // Of `bytes` about to become resident, the part never created before
  // (counted as created from now on).
  static std::uint64_t take_fresh(Job& j, std::uint64_t bytes) {
    const std::uint64_t fresh = std::min(bytes, j.ws > j.created ? j.ws - j.created : 0);
    j.created += fresh;
    return fresh;
  }

  void start_prefetch(std::size_t i, std::uint64_t now) {
    Job& j = jobs_[i];
    const std::uint32_t g = *j.gpu;
    const std::uint64_t want = std::min(j.pending_prefetch, j.ws);
    const std::uint64_t resident = lru_[i].resident;
    const std::uint64_t missing = want > resident ? want - resident : 0;
    j.pending_prefetch = 0;
    if (missing == 0) return;
    std::uint64_t bytes = (missing + kChunk - 1) / kChunk * kChunk;
    bytes = std::min<std::uint64_t>(bytes, j.ws - resident);
    bytes = make_room(g, bytes, static_cast<std::uint32_t>(i));
    if (bytes == 0) return;
    set_resident(i, resident + bytes);
    touch(i, now);
    j.prefetch_bytes += bytes;
    gpus_[g].bytes_migrated += bytes;
    const PcieSpec& pcie = gpus_[g].spec.pcie;
    const std::uint64_t fresh = pcie.create_bytes_per_s ? take_fresh(j, bytes) : 0;
    const std::uint64_t ns = static_cast<std::uint64_t>(
        std::ceil(static_cast<double>(bytes - fresh) * 1e9 / static_cast<double>(pcie.copy_bytes_per_s) +
                  (fresh ? static_cast<double>(fresh) * 1e9 / static_cast<double>(pcie.create_bytes_per_s) : 0.0)));
    j.prefetching = true;
    // through the GPU's page-migration server, after the faults and
    // prefetches before it
    Gpu& G = gpus_[g];
    G.faults_free_ns = std::max(now, G.faults_free_ns) + ns;
    sim_.schedule(Time::from_ns(G.faults_free_ns), this, kPrefetchDone, i);
  }

  // The next sync point after done_kernels: end of the iteration or the next
  // multiple of sync_every within it.
  // It depends only on done_kernels (the least sync point above it), which
  // only grows: kept in Job::barrier_at until done_kernels reaches it.
  static std::uint64_t barrier(Job& j) {
    if (j.done_kernels < j.barrier_at) return j.barrier_at;
    j.barrier_at = compute_barrier(j);
    return j.barrier_at;
  }
  static std::uint64_t compute_barrier(const Job& j) {
    const std::uint64_t k = j.spec.kernels_per_iteration;
    const std::uint64_t it = j.done_kernels / k;
    const std::uint64_t within = j.done_kernels % k;
    const std::uint64_t se = j.spec.sync_every ? j.spec.sync_every : k;
    const std::uint64_t next = std::min(k, (within / se + 1) * se);
    return std::min(j.total_kernels, it * k + next);
  }

  void do_release(std::size_t i, std::uint64_t now) {
    Job& j = jobs_[i];
    j.granted = false;
    j.dropped = false;
    j.run_ns += now - j.run_since;
    log_close(i, now);
    gpus_[*j.gpu].last_released = i;
    apply(policy_->release(now, client(i), j.generation));
  }

  void request(std::size_t i, std::uint64_t now) {
    Job& j = jobs_[i];
    j.requested = true;
    j.wait_since = now;
    apply(policy_->lock_request(now, client(i)));
  }

  // Advances job i as far as it can go without time passing.
  void pump(std::size_t i, std::uint64_t now) {
    Job& j = jobs_[i];
    if (j.state == JobState::kHost && j.granted && j.dropped) {
      do_release(i, now);  // nothing queued: release at once
      return;
    }
    if (j.state != JobState::kActive) return;
    if (j.prefetching) return;
    if (!j.granted) {
      if (!j.requested) request(i, now);
      return;
    }
    if (j.dropped) {
      // Drain what is queued (no new submissions), then release.
      if (j.submitted > j.done_kernels && !j.in_service) start_kernel(i, now);
      if (j.submitted == j.done_kernels) {
        do_release(i, now);
        if (j.done_kernels < j.total_kernels && !j.granted && !j.requested) request(i, now);
      }
      return;
    }
    // Iteration boundary: host work (the job keeps the lock, as nvshare's
    // client does, until idle_release_ms passes).
    const std::uint64_t k = j.spec.kernels_per_iteration;
    if (j.spec.host_ns > 0 && j.submitted == j.done_kernels && j.done_kernels > 0 && j.done_kernels % k == 0 &&
        j.host_done < j.done_kernels / k && j.done_kernels < j.total_kernels) {
      j.state = JobState::kHost;
      j.host_started = now;
      sim_.schedule_in(Time::from_ns(j.spec.host_ns), this, kHostDone, i);
      const std::uint64_t idle = cfg_.idle_release_ms * 1000000;
      if (j.spec.host_ns > idle) sim_.schedule_in(Time::from_ns(idle), this, kIdleRelease, i);
      return;
    }
    const std::uint64_t limit = barrier(j);
    const std::uint64_t depth = j.depth;
    // Submit up to the barrier, at most `depth` queued: the closed form of
    // `while (submitted < limit && submitted - done < depth) ++submitted`
    // (that loop was the GPU model's hottest line, issue 21).
    if (j.submitted < limit && j.submitted - j.done_kernels < depth)
      j.submitted = limit - j.done_kernels <= depth ? limit : j.done_kernels + depth;
    if (j.submitted > j.done_kernels && !j.in_service) start_kernel(i, now);
  }

  void start_kernel(std::size_t i, std::uint64_t now) {
    Job& j = jobs_[i];
    const std::uint32_t g = *j.gpu;
    Gpu& G = gpus_[g];
    update(g, now);
    // Demand paging: a kernel sweeps its slice of the working set in order,
    // so with LRU eviction the pages it needs next are those evicted first:
    // it faults min(slice, missing). Co-running sets that exceed memory
    // make every kernel fault its whole slice (the LRU cliff: thrashing).
    LruNode& n = lru_[i];
    const std::uint64_t missing = j.ws > n.resident ? j.ws - n.resident : 0;
    const std::uint64_t fault = std::min(j.slice, missing);
    double fault_ns = 0;
    // Touched first: make_room() passes over job i wherever it is in the
    // list, so the other jobs' order, and what it evicts, are the same;
    // with i at the tail its walk does not step over it at the head (the
    // kernel that finishes first started first: its job was the LRU).
    touch(i, now);
    if (fault > 0) {
      const std::uint64_t room = make_room(g, fault, static_cast<std::uint32_t>(i));
      set_resident(G, n, std::min(j.ws, n.resident + room));
      j.fault_bytes += fault;
      G.bytes_migrated += fault;
      const std::uint64_t fresh = G.spec.pcie.first_touch_bytes_per_s ? take_fresh(j, fault) : 0;
      if (fresh != 0) {  // the first sweeps: pages created, the rest paged in
        fault_ns = static_cast<double>(fresh) * 1e9 / static_cast<double>(G.spec.pcie.first_touch_bytes_per_s) +
                   (fault > fresh ? G.spec.pcie.demand_ns(fault - fresh, G.demand_ns_per_byte) : 0.0);
      } else {
        if (fault != j.memo_fault) {
          j.memo_fault = fault;
          j.memo_fault_ns = G.spec.pcie.demand_ns(fault, G.demand_ns_per_byte);
        }
        fault_ns = j.memo_fault_ns;
      }
    }
    j.in_service = true;
    // A faulting kernel holds its SMs (its warps stall) but makes no
    // progress until the GPU's page-migration server has served its faults,
    // after those queued before them.
    std::uint64_t ready = now;
    if (fault_ns > 0) {
      G.faults_free_ns = std::max(now, G.faults_free_ns) + ceil_ns(fault_ns);
      ready = G.faults_free_ns;
      G.stalled_until = std::max(G.stalled_until, ready);
    }
    const auto work = static_cast<double>(j.spec.kernel_ns);
    G.active.push_back(Gpu::InService{i, project(G, ready, now) + work, G.share, j.spec.sm_pct, ready});
    G.sm_pct_sum += j.spec.sm_pct;
    mark_dirty(g);
  }

  // vt at `ready` (>= now, G's progress brought to now) if the rate stays
  // as it is until then.
  static double project(const Gpu& G, std::uint64_t ready, std::uint64_t now) {
    return ready > now ? G.vt + static_cast<double>(ready - now) * rate(G) : G.vt;
  }

  // GPU g's kernels in service changed in this event: its rate is refreshed
  // and its done event set once, at the event's end (reschedule()), however
  // many kernels started or finished (a `none` event ends ~4 and starts as
  // many). Time does not pass within an event, so update() never runs on a
  // stale rate.
  void mark_dirty(std::uint32_t g) {
    if (gpus_[g].dirty) return;
    gpus_[g].dirty = true;
    dirty_.push_back(g);
  }

  // Co-running kernels: while the SMs they occupy (the jobs' sm_pct) add up
  // to the GPU or less, each runs at full speed, side by side; beyond, the
  // GPU is shared as a processor (each of n full kernels at 1/n), slowed by
  // corun_interference_pct. A job's sm_pct defaults to 100 (it fills the
  // GPU): then this is plain processor sharing.
  // Kept in G.load / G.rate, recomputed once at the end of an event in
  // which the kernels in service changed (reschedule()), not on every
  // update nor on every kernel start (the GPU model's per-event cost,
  // issue 21).
  // The two divisions are memoised per sum (Gpu::RateMemo): a kernel
  // finishing and the next one starting move the sum between the same two
  // values, and the divisions were the GPU model's costliest lines.
  // The kernels still waiting for their faults at `now` are projected
  // again when the rate changes (InService::ready_ns).
  void refresh_rate(Gpu& G, std::uint64_t now) {
    const double before = G.rate;
    set_rate(G);
    if (G.rate == before || G.stalled_until <= now) return;
    for (Gpu::InService& k : G.active)
      if (k.ready_ns > now)
        k.finish_vt = project(G, k.ready_ns, now) + static_cast<double>(jobs_[k.job].spec.kernel_ns);
  }
  static void set_rate(Gpu& G) {
    if (G.sm_pct_sum <= 100) {
      G.load = 1.0;
      G.rate = 1.0;
      G.inv_load = 1.0;
      G.inv_rate = 1.0;
      return;
    }
    Gpu::RateMemo& m = G.rate_memo[G.sm_pct_sum % Gpu::kRateMemo];
    if (m.sum != G.sm_pct_sum) {
      m.sum = G.sm_pct_sum;
      m.load = static_cast<double>(G.sm_pct_sum) / 100.0;
      m.rate = 1.0 / (m.load * G.spec.corun_interference_pct / 100.0);
      m.inv_load = 1.0 / m.load;
      m.inv_rate = m.load * G.spec.corun_interference_pct / 100.0;
    }
    G.load = m.load;
    G.inv_load = m.inv_load;
    G.rate = G.active.size() <= 1 ? 1.0 : m.rate;
    G.inv_rate = G.active.size() <= 1 ? 1.0 : m.inv_rate;
  }
  static double load(const Gpu& G) { return G.load; }
  static double rate(const Gpu& G) { return G.rate; }

  // Processor sharing: progress every kernel in service to `now`.
  void update(std::uint32_t g, std::uint64_t now) {
    Gpu& G = gpus_[g];
    if (now <= G.last_ns) return;
    const double dt = static_cast<double>(now - G.last_ns);
    if (!G.active.empty()) {
      G.vt += dt * rate(G);
      G.share += dt * G.inv_load;
      G.busy_ns += now - G.last_ns;
    }
    G.last_ns = now;
  }

  // max(0, ceil(x)) as a whole number of ns, in integer instructions: the
  // baseline x86-64 has no rounding instruction, and std::ceil's emulation
  // was a `none` event's costliest line (issue 21). Exact for x < 2^63.
  static std::uint64_t ceil_ns(double x) {
    if (!(x > 0.0)) return 0;
    const auto u = static_cast<std::uint64_t>(x);
    return u + (static_cast<double>(u) < x);
  }

  void reschedule(std::uint32_t g, std::uint64_t now) {
    Gpu& G = gpus_[g];
    G.dirty = false;
    update(g, now);
    refresh_rate(G, now);
    if (G.active.empty()) {
      if (G.done_event.valid()) sim_.cancel(G.done_event);
      G.done_event = EventId{};
      return;
    }
    // The soonest kernel's solo work left, times the slowdown (1 / rate, kept with
    // the rate): a multiplication, where a division by the rate was the
    // costliest instruction of a `none` event.
    double m = G.active.front().finish_vt;
    for (const Gpu::InService& k : G.active) m = std::min(m, k.finish_vt);
    m -= G.vt;
    const auto at = now + ceil_ns(m * G.inv_rate);
    if (G.done_event.valid() && sim_.is_pending(G.done_event) && G.done_at == at) return;
    if (G.done_event.valid()) sim_.cancel(G.done_event);
    G.done_event = sim_.schedule(Time::from_ns(at), this, kKernelDone, g);
    G.done_at = at;
  }

  void kernel_done(std::uint32_t g, std::uint64_t now) {
    Gpu& G = gpus_[g];
    G.done_event = EventId{};
    mark_dirty(g);
    update(g, now);
    std::vector<std::size_t>& finished = finished_;  // reused: no allocation per event
    finished.clear();
    std::size_t kept = 0;
    for (const Gpu::InService& k : G.active) {
      if (k.finish_vt - G.vt <= 0.5) {
        finished.push_back(k.job);
        jobs_[k.job].gpu_time_ns += G.share - k.share_start;
        G.sm_pct_sum -= k.sm_pct;
      } else {
        G.active[kept++] = k;
      }
    }
    G.active.resize(kept);
    // The finished jobs go on in job order (`active` is in start order,
    // which a thrashing `none` GPU's restarts keep in job order: no sort).
    if (finished.size() > 1 && !std::is_sorted(finished.begin(), finished.end()))
      std::sort(finished.begin(), finished.end());
    for (std::size_t i : finished) {
      Job& j = jobs_[i];
      j.in_service = false;
      j.done_kernels++;
      if (j.done_kernels == j.total_kernels) {
        finish(i, now);
        continue;
      }
      work_.push_back(i);
    }
  }

  void finish(std::size_t i, std::uint64_t now) {
    Job& j = jobs_[i];
    if (j.granted) j.run_ns += now - j.run_since;
    log_close(i, now);
    j.granted = false;
    j.state = JobState::kDone;
    ++jobs_done_;
    j.finish_ns = now;
    if (j.gpu) {
      gpus_[*j.gpu].set_contexts(gpus_[*j.gpu].contexts - 1);
      set_resident(i, 0);
      lru_unlink(i);
    }
    apply(policy_->disconnect(now, client(i)));
  }

  void drain(std::uint64_t now) {
    // Worklist in FIFO order; pump() may add more.
    for (std::size_t n = 0; n < work_.size(); ++n) pump(work_[n], now);
    work_.clear();
  }

  Simulator& sim_;
  config::GpuConfig cfg_;
  std::string policy_name_;
  ScheduleLog* log_;  // nullptr: nothing recorded
  std::unique_ptr<agentcg::gpu::GpuPolicy> policy_;
  std::vector<Gpu> gpus_;
  std::vector<Job> jobs_;
  std::vector<LruNode> lru_;  // by job index
  std::vector<std::size_t> work_;
  std::vector<std::size_t> finished_;  // kernel_done()'s scratch list
  std::vector<std::uint32_t> dirty_;   // the GPUs with Gpu::dirty set, for on_event()'s end
  EventId tick_event_;
  std::optional<std::uint64_t> tick_at_;
  std::size_t jobs_done_ = 0;         // jobs in JobState::kDone (done() in O(1))
  std::uint64_t last_event_ns_ = 0;   // the last event this model handled
};

}  // namespace

std::unique_ptr<GpuSimulation> make_gpu_simulation(Simulator& sim, const trace::Trace& trace,
                                                   const std::string& policy,
                                                   const config::GpuConfig& config,
                                                   std::uint64_t /*seed: the model draws no random numbers*/,
                                                   ScheduleLog* log) {
  return std::make_unique<GpuSim>(sim, trace, policy, config, log);
}

}  // namespace agentcg::sim::gpu
