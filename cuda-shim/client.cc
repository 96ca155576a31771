// SPDX-License-Identifier: GPL-2.0-only
/*
 * The scheduling client (see client.h for the contract). The daemon link is
 * one thread per process that connects, registers, reads the daemon's
 * messages and performs drains; application threads only send (under
 * send_mu_) and wait on cv_.
 *
 * Corrections to the seed pseudo-code (the memory-aware and compute-limit GPU designs and nvshare as described
 * in docs/sources.md):
 *  - the memory-aware GPU design sends MEM_UPDATE and then blocks reading the reply inside
 *    cuMemAlloc; that deadlocks with the reader thread and stalls allocation
 *    on the scheduler. Here MEM_UPDATE is fire-and-forget and the only
 *    blocking point is before GPU work (before_work()).
 *  - the memory-aware GPU design prefetches right after allocation, before
 *    the client holds the GPU, which would move pages onto a GPU another
 *    client is using. Prefetch happens on a grant with the prefetch flag,
 *    of every allocation: pages nobody has touched are then created on the
 *    GPU (180-242 GB/s on an H200) instead of being faulted in by the first
 *    kernel (10-16 GB/s; tests/gpu/um_rates.cu).
 *  - a grant that bounds queued work (a limited client) keeps at most
 *    max_queued_ns of kernels queued, so a DROP_LOCK is not followed by 16-32
 *    queued kernels that overshoot the quota (docs/sources.md).
 */
#include "cuda-shim/client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>

#include "core/gpu/protocol/bytes.h"
#include "core/gpu/protocol/protocol.h"

namespace agentcg::shim {

namespace proto = agentcg::gpu::proto;

std::uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

namespace {

void warn(const char* fmt, const char* a = "", const char* b = "") {
  // Not on a hot path: only at start-up, on bad environment values and when
  // the daemon is absent (once).
  std::fprintf(stderr, "agentcg-cuda: ");
  std::fprintf(stderr, fmt, a, b);
  std::fprintf(stderr, "\n");
}

bool read_full(int fd, void* buf, std::size_t n) {
  auto* p = static_cast<unsigned char*>(buf);
  while (n > 0) {
    ssize_t r = recv(fd, p, n, 0);
    if (r == 0) return false;
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

std::uint64_t random_token() {
  std::uint64_t t = monotonic_ns() ^ (static_cast<std::uint64_t>(getpid()) << 32);
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    std::uint64_t r = 0;
    if (read(fd, &r, sizeof r) == static_cast<ssize_t>(sizeof r)) t ^= r;
    close(fd);
  }
  return t == 0 ? 1 : t;
}

}  // namespace

std::optional<std::uint64_t> parse_bytes(const char* text) { return gpu::parse_bytes(text); }

ClientOptions options_from_env() {
  ClientOptions o;
  if (const char* s = std::getenv("AGENTCG_GPU_SOCKET"); s && *s) o.socket_path = s;
  if (const char* s = std::getenv("AGENTCG_GPU_CORE_LIMIT"); s && *s) {
    auto v = parse_bytes(s);
    if (v && *v >= 1 && *v <= 100) {
      o.core_limit_pct = static_cast<std::uint32_t>(*v);
    } else {
      warn("ignoring AGENTCG_GPU_CORE_LIMIT='%s': expected an integer 1..100%s", s);
    }
  }
  if (const char* s = std::getenv("AGENTCG_GPU_MEMORY_LIMIT"); s && *s) {
    auto v = parse_bytes(s);
    if (v) {
      o.memory_limit_bytes = *v;
    } else {
      warn("ignoring AGENTCG_GPU_MEMORY_LIMIT='%s': expected bytes such as 4294967296 or 4G%s", s);
    }
  }
  if (const char* s = std::getenv("AGENTCG_GPU_DEVICE"); s && *s) {
    auto v = parse_bytes(s);
    if (v && *v < 1024) {
      o.device = static_cast<std::uint32_t>(*v);
    } else {
      warn("ignoring AGENTCG_GPU_DEVICE='%s': expected a device ordinal%s", s);
    }
  }
  if (const char* s = std::getenv("AGENTCG_GPU_IDLE_RELEASE_MS"); s && *s) {
    auto v = parse_bytes(s);
    if (v && *v >= 1 && *v <= 3600000) {
      o.idle_release_ms = static_cast<std::uint32_t>(*v);
    } else {
      warn("ignoring AGENTCG_GPU_IDLE_RELEASE_MS='%s': expected 1..3600000%s", s);
    }
  }
  if (const char* s = std::getenv("AGENTCG_GPU_ON_UNREACHABLE"); s && *s) {
    if (std::strcmp(s, "open") == 0) {
      o.fail_open = true;
    } else if (std::strcmp(s, "closed") == 0) {
      o.fail_open = false;
    } else {
      warn("ignoring AGENTCG_GPU_ON_UNREACHABLE='%s': expected closed or open (default closed)%s", s);
    }
  }
  o.name = program_invocation_short_name;
  return o;
}

std::optional<std::uint32_t> Client::placed_device() const {
  std::lock_guard<std::mutex> lk(mu_);
  return placed_device_;
}

Client::Client(const DriverTable& driver, ClientOptions options)
    : driver_(driver), opt_(std::move(options)), session_token_(random_token()) {}

Client::~Client() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  if (wake_pipe_[1] >= 0) {
    const char c = 'x';
    (void)!write(wake_pipe_[1], &c, 1);
  }
  if (link_.joinable() && pid_ == getpid()) link_.join();
  int fd = fd_.exchange(-1);
  if (fd >= 0) close(fd);
  for (int& p : wake_pipe_) {
    if (p >= 0) close(p);
    p = -1;
  }
}

void Client::ensure_started() {
  const int pid = getpid();
  std::unique_lock<std::mutex> lk(mu_);
  if (pid_ == pid) return;
  if (pid_ != 0) {
    // Forked child: the link thread and the connection belong to the parent.
    // Leak the parent's thread object (joining or detaching a thread that
    // does not exist in this process is undefined) and open our own link.
    new (&link_) std::thread();
    int fd = fd_.exchange(-1);
    if (fd >= 0) close(fd);
    for (int& p : wake_pipe_) {
      if (p >= 0) close(p);
      p = -1;
    }
    session_token_ = random_token();
  }
  pid_ = pid;
  state_ = opt_.connect ? LockState::kConnecting : LockState::kUnscheduled;
  if (!opt_.connect) return;
  if (pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    wake_pipe_[0] = wake_pipe_[1] = -1;
  }
  link_ = std::thread([this] { run_link(); });
  // The first connection attempt decides whether work is scheduled; wait for
  // it (bounded: a local connect either succeeds or fails at once).
  cv_.wait_for(lk, std::chrono::seconds(5), [this] { return state_ != LockState::kConnecting; });
  if (state_ == LockState::kConnecting) state_ = unreachable_state();
}

bool Client::send_raw(const void* data, std::size_t n) {
  std::lock_guard<std::mutex> lk(send_mu_);
  const int fd = fd_.load();
  if (fd < 0) return false;
  const auto* p = static_cast<const unsigned char*>(data);
  while (n > 0) {
    ssize_t r = ::send(fd, p, n, MSG_NOSIGNAL);
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;  // the link thread sees the error on its next read
    }
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

template <typename T>
bool Client::send(int type, const T& payload) {
  unsigned char buf[proto::kMaxFixedMessage];
  static_assert(sizeof(proto::Header) + sizeof(T) <= sizeof buf);
  const std::size_t n = proto::encode(static_cast<proto::MsgType>(type), payload, buf);
  return send_raw(buf, n);
}

bool Client::connect_and_register() {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (opt_.socket_path.size() >= sizeof addr.sun_path) {
    close(fd);
    return false;
  }
  std::memcpy(addr.sun_path, opt_.socket_path.c_str(), opt_.socket_path.size() + 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return false;
  }
  fd_.store(fd);
  proto::RegisterMsg reg{};
  reg.session_token = session_token_;
  {
    std::lock_guard<std::mutex> lk(mem_mu_);
    reg.memory_bytes = total_bytes_;
  }
  reg.memory_limit_bytes = opt_.memory_limit_bytes;
  {
    // Once placed, a re-registration (daemon restart) keeps the device: the
    // process's contexts already live there.
    std::lock_guard<std::mutex> lk(mu_);
    reg.device = opt_.device ? *opt_.device : (placed_device_ ? *placed_device_ : proto::kAnyDevice);
  }
  reg.core_limit_pct = opt_.core_limit_pct;
  std::strncpy(reg.name, opt_.name.c_str(), sizeof reg.name - 1);
  if (!send(static_cast<int>(proto::MsgType::kRegister), reg)) {
    fd_.store(-1);
    close(fd);
    return false;
  }
  // Wait for REGISTERED (the daemon's first message) so that cuMemGetInfo
  // right after cuInit already reports the scheduled capacity.
  pollfd pfd{fd, POLLIN, 0};
  proto::Header h{};
  unsigned char payload[proto::kMaxFixedMessage];
  if (poll(&pfd, 1, 2000) != 1 || !read_full(fd, &h, sizeof h) ||
      proto::check_header(h) != proto::HeaderError::kOk || h.length > sizeof payload ||
      !read_full(fd, payload, h.length)) {
    std::lock_guard<std::mutex> slk(send_mu_);
    fd_.store(-1);
    close(fd);
    return false;
  }
  handle_message(h.type, payload);
  std::lock_guard<std::mutex> lk(mu_);
  state_ = LockState::kIdle;
  launches_since_sync_ = 0;
  window_ = 1;
  cv_.notify_all();
  return true;
}

void Client::disconnect_locked(std::unique_lock<std::mutex>& lk) {
  (void)lk;
  {
    std::lock_guard<std::mutex> slk(send_mu_);
    int fd = fd_.exchange(-1);
    if (fd >= 0) close(fd);
  }
  state_ = unreachable_state();
  cv_.notify_all();
}

void Client::run_link() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      if (stop_) return;
    }
    if (fd_.load() < 0) {
      if (!connect_and_register()) {
        std::unique_lock<std::mutex> lk(mu_);
        if (!warned_absent_) {
          warned_absent_ = true;
          if (opt_.fail_open) {
            warn("GPU scheduler at %s not reachable; running unscheduled until it returns "
                 "(AGENTCG_GPU_ON_UNREACHABLE=open)%s", opt_.socket_path.c_str());
          } else {
            warn("GPU scheduler at %s not reachable; GPU work waits until it returns "
                 "(AGENTCG_GPU_ON_UNREACHABLE=closed; 'open' runs unscheduled)%s", opt_.socket_path.c_str());
          }
        }
        state_ = unreachable_state();
        cv_.notify_all();
        lk.unlock();
        pollfd w{wake_pipe_[0], POLLIN, 0};
        (void)poll(&w, wake_pipe_[0] >= 0 ? 1 : 0, static_cast<int>(opt_.reconnect_ms));
        char buf[16];
        while (wake_pipe_[0] >= 0 && read(wake_pipe_[0], buf, sizeof buf) > 0) {
        }
        continue;
      }
    }
    const int fd = fd_.load();
    pollfd fds[2] = {{fd, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    const int n = poll(fds, wake_pipe_[0] >= 0 ? 2 : 1, 50);
    if (n < 0 && errno != EINTR) continue;
    if (n > 0 && (fds[1].revents & POLLIN)) {
      char buf[16];
      while (read(wake_pipe_[0], buf, sizeof buf) > 0) {
      }
    }
    if (n > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      proto::Header h{};
      unsigned char payload[proto::kMaxFixedMessage];
      bool ok = read_full(fd, &h, sizeof h) && proto::check_header(h) == proto::HeaderError::kOk &&
                proto::shim_accepts(h.type) && h.length <= sizeof payload &&
                read_full(fd, payload, h.length);
      if (!ok) {
        std::unique_lock<std::mutex> lk(mu_);
        disconnect_locked(lk);
        continue;
      }
      handle_message(h.type, payload);
    }
    // Idle release (nvshare): a whole interval without GPU work gives the
    // lock back so others need not wait for the quantum.
    std::uint64_t gen = 0;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (state_ == LockState::kHeld && inflight_ == 0 &&
          monotonic_ns() - last_work_ns_ >= opt_.idle_release_ms * 1000000ull) {
        gen = generation_;
      }
    }
    if (gen != 0) drain_and_release(gen, false);
  }
}

void Client::handle_message(std::uint16_t type, const unsigned char* payload) {
  switch (static_cast<proto::MsgType>(type)) {
    case proto::MsgType::kRegistered: {
      proto::RegisteredMsg m;
      std::memcpy(&m, payload, sizeof m);
      std::lock_guard<std::mutex> lk(mu_);
      capacity_bytes_ = m.capacity_bytes;
      if (!opt_.device && !placed_device_) placed_device_ = m.device;
      return;
    }
    case proto::MsgType::kLockOk: {
      proto::LockOkMsg m;
      std::memcpy(&m, payload, sizeof m);
      if (m.flags & proto::kGrantPrefetch) prefetch_allocations();
      std::lock_guard<std::mutex> lk(mu_);
      if (state_ == LockState::kRequested || state_ == LockState::kIdle ||
          state_ == LockState::kHeld) {
        state_ = LockState::kHeld;
        generation_ = m.generation;
        max_queued_ns_ = m.max_queued_ns;
        window_ = 1;
        if (max_queued_ns_ != 0 && launch_ns_est_ != 0) {
          const std::uint64_t w = max_queued_ns_ / launch_ns_est_;
          window_ = static_cast<std::uint32_t>(w < 1 ? 1 : (w > 2048 ? 2048 : w));
        }
        launches_since_sync_ = 0;
        last_work_ns_ = monotonic_ns();
        last_sync_ns_ = last_work_ns_;
        cv_.notify_all();
      }
      return;
    }
    case proto::MsgType::kDropLock: {
      proto::DropLockMsg m;
      std::memcpy(&m, payload, sizeof m);
      drops_.fetch_add(1);
      drain_and_release(m.generation, true);
      return;
    }
    case proto::MsgType::kWaitMem:
      return;  // stay in kRequested: the grant comes when memory fits
    case proto::MsgType::kSetLimits: {
      proto::SetLimitsMsg m;
      std::memcpy(&m, payload, sizeof m);
      std::lock_guard<std::mutex> lk(mu_);
      daemon_memory_limit_ = m.memory_limit_bytes;
      opt_.core_limit_pct = m.core_limit_pct;
      return;
    }
    case proto::MsgType::kRegister:
    case proto::MsgType::kMemUpdate:
    case proto::MsgType::kReqLock:
    case proto::MsgType::kLockReleased:
    case proto::MsgType::kPrefetched:
    case proto::MsgType::kCtlList:
    case proto::MsgType::kListReply:
    case proto::MsgType::kCtlSet:
    case proto::MsgType::kCtlAck:
      return;  // not sent to shims: rejected above by shim_accepts()
  }
}

void Client::sync_context(CUcontext ctx) {
  if (ctx != nullptr) (void)driver_.cuCtxSetCurrent(ctx);
  (void)driver_.cuCtxSynchronize();
}

void Client::drain_and_release(std::uint64_t generation, bool from_drop) {
  std::unique_lock<std::mutex> lk(mu_);
  if (state_ != LockState::kHeld || generation != generation_) {
    // Stale drop (we already released this grant, e.g. on idle) or a drop
    // for a grant we never saw: the daemon gets our release or none is due.
    (void)from_drop;
    return;
  }
  state_ = LockState::kDraining;
  cv_.wait(lk, [this] { return inflight_ == 0 || state_ != LockState::kDraining; });
  if (state_ != LockState::kDraining) return;  // disconnected meanwhile
  const std::vector<CUcontext> ctxs = contexts_.empty() ? std::vector<CUcontext>{ctx_} : contexts_;
  lk.unlock();
  for (CUcontext ctx : ctxs) sync_context(ctx);  // drain every context's queued work before giving the GPU away
  lk.lock();
  if (state_ != LockState::kDraining) return;
  proto::LockReleasedMsg m{generation};
  (void)send(static_cast<int>(proto::MsgType::kLockReleased), m);
  state_ = LockState::kIdle;
  window_ = 1;  // nvshare: the window restarts at 1 after every drop
  launches_since_sync_ = 0;
  cv_.notify_all();
}

void Client::before_work() {
  ensure_started();
  CUcontext ctx = nullptr;
  (void)driver_.cuCtxGetCurrent(&ctx);
  {
    std::unique_lock<std::mutex> lk(mu_);
    // Remembered before the request: the grant's prefetch (on the link
    // thread) targets this context, the first grant's too.
    if (ctx != nullptr) {
      ctx_ = ctx;
      if (std::find(contexts_.begin(), contexts_.end(), ctx) == contexts_.end()) {
        if (contexts_.size() >= kMaxContexts) contexts_.erase(contexts_.begin());
        contexts_.push_back(ctx);
      }
    }
    for (;;) {
      if (state_ == LockState::kUnscheduled || state_ == LockState::kHeld) break;
      if (state_ == LockState::kIdle) {
        proto::ReqLockMsg m{0};
        if (send(static_cast<int>(proto::MsgType::kReqLock), m)) {
          state_ = LockState::kRequested;
        } else {
          disconnect_locked(lk);  // the link thread reconnects
          break;
        }
        continue;
      }
      cv_.wait(lk);
    }
    ++inflight_;
    last_work_ns_ = monotonic_ns();
  }
}

void Client::after_work(bool is_launch) {
  bool need_sync = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (inflight_ > 0) --inflight_;
    last_work_ns_ = monotonic_ns();
    if (is_launch && (state_ == LockState::kHeld || state_ == LockState::kDraining)) {
      if (++launches_since_sync_ >= window_) need_sync = true;
    }
    if (state_ == LockState::kDraining && inflight_ == 0) cv_.notify_all();
  }
  if (!need_sync) return;
  const std::uint64_t t0 = monotonic_ns();
  (void)driver_.cuCtxSynchronize();
  const std::uint64_t t1 = monotonic_ns();
  const std::uint64_t dt = t1 - t0;
  std::lock_guard<std::mutex> lk(mu_);
  // GPU time per launch: the whole period since the last sync (the client
  // kept the GPU busy in between) over the launches in it.
  if (launches_since_sync_ > 0 && t1 > last_sync_ns_) {
    const std::uint64_t per = (t1 - last_sync_ns_) / launches_since_sync_;
    launch_ns_est_ = launch_ns_est_ == 0 ? per : (3 * launch_ns_est_ + per) / 4;
  }
  last_sync_ns_ = t1;
  launches_since_sync_ = 0;
  if (max_queued_ns_ != 0) {
    const std::uint64_t w = launch_ns_est_ == 0 ? 1 : max_queued_ns_ / launch_ns_est_;
    window_ = static_cast<std::uint32_t>(w < 1 ? 1 : (w > 2048 ? 2048 : w));
  } else if (dt >= 10000000000ull) {  // nvshare: a >= 10 s sync resets the window
    window_ = 1;
  } else if (dt >= 1000000000ull) {   // >= 1 s halves it
    window_ = window_ > 1 ? window_ / 2 : 1;
  } else if (window_ < 2048) {        // fast syncs double it up to 2048
    window_ *= 2;
  }
}

std::uint64_t Client::effective_memory_limit() const {
  std::uint64_t a = opt_.memory_limit_bytes;
  std::uint64_t b = daemon_memory_limit_;
  if (a == 0) return b;
  if (b == 0) return a;
  return a < b ? a : b;
}

void Client::report_memory() {
  proto::MemUpdateMsg m{};
  {
    std::lock_guard<std::mutex> lk(mem_mu_);
    m.memory_bytes = total_bytes_;
  }
  (void)send(static_cast<int>(proto::MsgType::kMemUpdate), m);
}

CUresult Client::track_new(CUresult r, CUdeviceptr* dptr, std::size_t bytes) {
  {
    std::lock_guard<std::mutex> lk(mem_mu_);
    if (r != CUDA_SUCCESS) {
      total_bytes_ -= bytes;  // undo the reservation
      return r;
    }
    allocs_[*dptr] = bytes;
  }
  report_memory();
  return r;
}

CUresult Client::mem_alloc_managed(CUdeviceptr* dptr, std::size_t bytes, unsigned int flags) {
  ensure_started();
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::uint64_t limit;
  {
    std::lock_guard<std::mutex> lk(mu_);
    limit = effective_memory_limit();
  }
  {
    std::lock_guard<std::mutex> lk(mem_mu_);
    if (limit != 0 && total_bytes_ + bytes > limit) return CUDA_ERROR_OUT_OF_MEMORY;
    total_bytes_ += bytes;  // reserve; track_new confirms or undoes
  }
  CUresult r = driver_.cuMemAllocManaged(dptr, bytes, flags);
  return track_new(r, dptr, bytes);
}

CUresult Client::mem_alloc(CUdeviceptr* dptr, std::size_t bytes) {
  return mem_alloc_managed(dptr, bytes, CU_MEM_ATTACH_GLOBAL);
}

CUresult Client::mem_alloc_pitch(CUdeviceptr* dptr, std::size_t* pitch, std::size_t width_bytes,
                                 std::size_t height, unsigned int element_bytes) {
  if (pitch == nullptr || width_bytes == 0 || height == 0 ||
      (element_bytes != 4 && element_bytes != 8 && element_bytes != 16)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // The driver pads rows to its texture pitch alignment; 512 bytes covers
  // every current architecture (cudaDeviceProp::texturePitchAlignment).
  constexpr std::size_t kAlign = 512;
  const std::size_t p = (width_bytes + kAlign - 1) / kAlign * kAlign;
  CUresult r = mem_alloc(dptr, p * height);
  if (r == CUDA_SUCCESS) *pitch = p;
  return r;
}

std::optional<CUresult> Client::mem_free(CUdeviceptr dptr, CUstream stream, bool async) {
  std::size_t bytes = 0;
  {
    std::lock_guard<std::mutex> lk(mem_mu_);
    auto it = allocs_.find(dptr);
    if (it == allocs_.end()) return std::nullopt;
    bytes = it->second;
  }
  // cuMemFreeAsync is stream-ordered: managed memory has no stream-ordered
  // free, so wait for the stream's work before freeing.
  if (async && driver_.cuStreamSynchronize != nullptr) (void)driver_.cuStreamSynchronize(stream);
  CUresult r = driver_.cuMemFree_v2(dptr);
  if (r != CUDA_SUCCESS) return r;
  {
    std::lock_guard<std::mutex> lk(mem_mu_);
    if (allocs_.erase(dptr) != 0) total_bytes_ -= bytes;
  }
  report_memory();
  return r;
}

CUresult Client::vmm_create(CUmemGenericAllocationHandle* handle, std::size_t bytes, const CUmemAllocationProp* prop,
                            unsigned long long flags) {
  ensure_started();
  if (driver_.cuMemCreate == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::uint64_t limit;
  {
    std::lock_guard<std::mutex> lk(mu_);
    limit = effective_memory_limit();
  }
  {
    std::lock_guard<std::mutex> lk(mem_mu_);
    if (limit != 0 && total_bytes_ + bytes > limit) return CUDA_ERROR_OUT_OF_MEMORY;
    total_bytes_ += bytes;  // reserve, confirmed or undone below
  }
  CUresult r = driver_.cuMemCreate(handle, bytes, prop, flags);
  {
    std::lock_guard<std::mutex> lk(mem_mu_);
    if (r != CUDA_SUCCESS) {
      total_bytes_ -= bytes;
      return r;
    }
    vmm_[*handle] = bytes;
  }
  report_memory();
  return r;
}

std::optional<CUresult> Client::vmm_release(CUmemGenericAllocationHandle handle) {
  std::uint64_t bytes = 0;
  {
    std::lock_guard<std::mutex> lk(mem_mu_);
    auto it = vmm_.find(handle);
    if (it == vmm_.end()) return std::nullopt;
    bytes = it->second;
  }
  if (driver_.cuMemRelease == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  CUresult r = driver_.cuMemRelease(handle);
  if (r != CUDA_SUCCESS) return r;
  {
    std::lock_guard<std::mutex> lk(mem_mu_);
    if (vmm_.erase(handle) != 0) total_bytes_ -= bytes;
  }
  report_memory();
  return r;
}

CUresult Client::mem_get_info(std::size_t* free_bytes, std::size_t* total_bytes) {
  ensure_started();
  if (free_bytes == nullptr || total_bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::uint64_t capacity, limit;
  {
    std::lock_guard<std::mutex> lk(mu_);
    capacity = capacity_bytes_;
    limit = effective_memory_limit();
  }
  std::size_t real_free = 0, real_total = 0;
  if (capacity == 0) {
    if (driver_.cuMemGetInfo_v2 == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
    CUresult r = driver_.cuMemGetInfo_v2(&real_free, &real_total);
    if (r != CUDA_SUCCESS) return r;
    if (limit == 0) {
      *free_bytes = real_free;
      *total_bytes = real_total;
      return CUDA_SUCCESS;
    }
    capacity = real_total;
  }
  std::uint64_t total = (limit != 0 && limit < capacity) ? limit : capacity;
  std::uint64_t used;
  {
    std::lock_guard<std::mutex> lk(mem_mu_);
    used = total_bytes_;
  }
  *total_bytes = static_cast<std::size_t>(total);
  *free_bytes = static_cast<std::size_t>(used >= total ? 0 : total - used);
  return CUDA_SUCCESS;
}

void Client::prefetch_allocations() {
  if (driver_.cuMemPrefetchAsync_v2 == nullptr) return;
  std::vector<std::pair<CUdeviceptr, std::size_t>> todo;
  {
    std::lock_guard<std::mutex> lk(mem_mu_);
    todo.assign(allocs_.begin(), allocs_.end());
  }
  if (todo.empty()) return;
  CUcontext ctx;
  {
    std::lock_guard<std::mutex> lk(mu_);
    ctx = ctx_;
  }
  if (ctx == nullptr) return;
  (void)driver_.cuCtxSetCurrent(ctx);
  CUdevice dev = 0;
  if (driver_.cuCtxGetDevice != nullptr) (void)driver_.cuCtxGetDevice(&dev);
  CUmemLocation loc{};
  loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
  loc.id = dev;
  std::uint64_t total = 0;
  for (const auto& [ptr, bytes] : todo) {
    // CUDA 13: cuMemPrefetchAsync_v2(ptr, size, CUmemLocation, flags, stream).
    if (driver_.cuMemPrefetchAsync_v2(ptr, bytes, loc, 0, nullptr) == CUDA_SUCCESS) total += bytes;
  }
  prefetched_bytes_.fetch_add(total);
  proto::PrefetchedMsg m{total};
  (void)send(static_cast<int>(proto::MsgType::kPrefetched), m);
}

std::uint64_t Client::tracked_bytes() const {
  std::lock_guard<std::mutex> lk(mem_mu_);
  return total_bytes_;
}
LockState Client::state() const {
  std::lock_guard<std::mutex> lk(mu_);
  return state_;
}
std::uint64_t Client::generation() const {
  std::lock_guard<std::mutex> lk(mu_);
  return generation_;
}
std::uint32_t Client::window() const {
  std::lock_guard<std::mutex> lk(mu_);
  return window_;
}
std::uint64_t Client::launch_ns_estimate() const {
  std::lock_guard<std::mutex> lk(mu_);
  return launch_ns_est_;
}
std::uint64_t Client::capacity_bytes() const {
  std::lock_guard<std::mutex> lk(mu_);
  return capacity_bytes_;
}

void load_driver_table(void* handle, LookupFn lookup, DriverTable& t) {
#define AGENTCG_X(sym, required) t.sym = reinterpret_cast<decltype(t.sym)>(lookup(handle, #sym));
  AGENTCG_DRIVER_FUNCS(AGENTCG_X)
#undef AGENTCG_X
}

}  // namespace agentcg::shim
