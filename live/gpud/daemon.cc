// SPDX-License-Identifier: GPL-2.0-only
/*
 * agentcg-gpud's event loop (see daemon.h). Every policy call is followed by
 * apply(), which turns decisions into messages; the policy never sees a
 * socket and the loop never decides who runs.
 */
#include "live/gpud/daemon.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace agentcg::gpud {

std::uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

namespace {

void log_line(const char* level, const std::string& msg) {
  std::fprintf(stderr, "agentcg-gpud: %s: %s\n", level, msg.c_str());
}

void mkdir_p(const std::string& dir) {
  if (dir.empty()) return;
  std::string cur;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    cur = dir.substr(0, pos);
    if (cur.empty()) continue;
    if (mkdir(cur.c_str(), 0750) != 0 && errno != EEXIST) {
      throw std::runtime_error("cannot create socket directory " + cur + ": " + std::strerror(errno));
    }
  }
}

}  // namespace

Daemon::Daemon(DaemonOptions options) : opt_(std::move(options)) {
  if (opt_.quantum_ms) opt_.gpu.time_quantum_ms = *opt_.quantum_ms;
  release_timeout_ms_ = opt_.release_timeout_ms
                            ? *opt_.release_timeout_ms
                            : std::max<std::uint64_t>(kMinReleaseTimeoutMs, 2 * opt_.gpu.time_quantum_ms);
  policy_ = gpu::make_gpu_policy(opt_.policy, opt_.gpu, opt_.gpus);
  if (opt_.quantum_ms) {
    // Also the memory-aware fixed quantum (policy.h: set_quantum).
    apply(policy_->set_quantum(monotonic_ns(), *opt_.quantum_ms * 1000000ull), monotonic_ns());
  }
  if (pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
}

Daemon::~Daemon() {
  for (auto& [fd, c] : conns_) close(fd);
  if (spare_fd_ >= 0) close(spare_fd_);
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    unlink(opt_.socket_path.c_str());
  }
  for (int p : wake_pipe_) {
    if (p >= 0) close(p);
  }
}

void Daemon::listen() {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (opt_.socket_path.empty() || opt_.socket_path.size() >= sizeof addr.sun_path) {
    throw std::runtime_error("socket path '" + opt_.socket_path + "' is empty or longer than " +
                             std::to_string(sizeof addr.sun_path - 1) + " bytes");
  }
  const auto slash = opt_.socket_path.rfind('/');
  if (slash != std::string::npos && slash > 0) mkdir_p(opt_.socket_path.substr(0, slash));
  std::memcpy(addr.sun_path, opt_.socket_path.c_str(), opt_.socket_path.size() + 1);
  // Refuse to steal the socket of a running daemon; remove a stale one.
  {
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      close(probe);
      throw std::runtime_error("another agentcg-gpud is serving " + opt_.socket_path);
    }
    if (probe >= 0) close(probe);
    struct stat st{};
    if (lstat(opt_.socket_path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) unlink(opt_.socket_path.c_str());
  }
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    throw std::runtime_error("bind " + opt_.socket_path + ": " + std::strerror(errno));
  }
  if (chmod(opt_.socket_path.c_str(), 0660) != 0) {
    throw std::runtime_error("chmod " + opt_.socket_path + ": " + std::strerror(errno));
  }
  if (::listen(listen_fd_, 128) != 0) throw std::runtime_error(std::string("listen: ") + std::strerror(errno));
  // The connection limit stays below the fd limit, so that the daemon's own
  // fds (metrics, driver) never run out because of clients.
  max_conns_ = opt_.max_connections;
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    const std::size_t cap = rl.rlim_cur > kReservedFds ? rl.rlim_cur - kReservedFds : 1;
    max_conns_ = std::min(max_conns_, cap);
  }
  max_conns_ = std::max<std::size_t>(max_conns_, 1);
  spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

void Daemon::stop() {
  const char c = 'x';
  (void)!write(wake_pipe_[1], &c, 1);
}

Daemon::Conn* Daemon::by_id(gpu::ClientId id) {
  auto it = fd_of_.find(id);
  if (it == fd_of_.end()) return nullptr;
  auto c = conns_.find(it->second);
  return c == conns_.end() ? nullptr : c->second.get();
}

template <typename T>
void Daemon::send(Conn& c, proto::MsgType type, const T& payload) {
  unsigned char buf[sizeof(proto::Header) + sizeof(T)];
  const std::size_t n = proto::encode(type, payload, buf);
  if (c.doomed != nullptr) return;
  if (c.out.size() - c.out_off + n > opt_.max_output_bytes) {
    // A client that does not read its replies is dropped, not buffered.
    c.doomed = "does not read its replies (output buffer full)";
    ++slow_clients_;
    return;
  }
  c.out.insert(c.out.end(), buf, buf + n);
  flush(c);
}

void Daemon::flush(Conn& c) {
  while (c.out_off < c.out.size()) {
    ssize_t r = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;  // EAGAIN: POLLOUT later; an error shows up as POLLHUP/ERR on the next poll
    }
    c.out_off += static_cast<std::size_t>(r);
  }
  // Compact lazily: a front erase per partial send would be O(n) each time.
  if (c.out_off == c.out.size()) {
    c.out.clear();
    c.out_off = 0;
  } else if (c.out_off >= 65536 && c.out_off * 2 >= c.out.size()) {
    c.out.erase(c.out.begin(), c.out.begin() + static_cast<std::ptrdiff_t>(c.out_off));
    c.out_off = 0;
  }
}

void Daemon::apply(const gpu::Decisions& d, std::uint64_t now) {
  for (const gpu::Decision& x : d.list) {
    if (x.kind != gpu::DecisionKind::kPrefetch) continue;
    if (Conn* c = by_id(x.client)) c->pending_prefetch = x.bytes > 0;
  }
  for (const gpu::Decision& x : d.list) {
    Conn* c = by_id(x.client);
    if (c == nullptr) continue;
    switch (x.kind) {
      case gpu::DecisionKind::kGrant: {
        proto::LockOkMsg m{x.generation, x.max_queued_ns, x.gpu,
                           c->pending_prefetch ? proto::kGrantPrefetch : 0u};
        c->pending_prefetch = false;
        if (!c->holding) c->run_start_ns = now;
        c->holding = true;
        c->dropped = false;
        c->requested = false;
        c->wait_memory = false;
        c->generation = x.generation;
        c->device = x.gpu;
        ++c->grants;
        ++grants_;
        send(*c, proto::MsgType::kLockOk, m);
        if (opt_.verbose) log_line("debug", "grant client " + std::to_string(c->id) + " gen " + std::to_string(x.generation));
        break;
      }
      case gpu::DecisionKind::kDrop: {
        proto::DropLockMsg m{x.generation};
        c->dropped = true;
        c->drop_sent_ns = now;
        ++c->drops;
        ++drops_;
        send(*c, proto::MsgType::kDropLock, m);
        if (opt_.verbose) log_line("debug", "drop client " + std::to_string(c->id) + " gen " + std::to_string(x.generation));
        break;
      }
      case gpu::DecisionKind::kWaitForMemory: {
        proto::WaitMemMsg m{0};
        c->wait_memory = true;
        send(*c, proto::MsgType::kWaitMem, m);
        break;
      }
      case gpu::DecisionKind::kWake:
        c->wait_memory = false;
        break;
      case gpu::DecisionKind::kPrefetch:
        break;  // folded into the grant above
      case gpu::DecisionKind::kMemoryLimit: {
        c->memory_limit = x.bytes;
        proto::SetLimitsMsg m{x.bytes, c->core_limit, 0};
        send(*c, proto::MsgType::kSetLimits, m);
        break;
      }
    }
  }
  next_tick_ns_ = d.next_tick_ns;
  // Switches: a grant that changes the set of clients holding a GPU while
  // another client held or had just held it (a forced or voluntary switch).
  std::uint64_t h = 0;
  for (const auto& [fd, c] : conns_) {
    if (c->holding) h = h * 1000003ull + c->id;
  }
  bool granted = false;
  for (const gpu::Decision& x : d.list) granted = granted || x.kind == gpu::DecisionKind::kGrant;
  if (granted && h != last_holder_set_ && last_holder_set_ != 0) ++switches_;
  if (h != 0) last_holder_set_ = h;
  // Throttles: a limited client's quota ran out (the policy's view flips).
  for (const auto& v : policy_->clients()) {
    Conn* c = by_id(v.client);
    if (c == nullptr) continue;
    if (v.throttled && !c->was_throttled) ++c->throttles;
    c->was_throttled = v.throttled;
  }
}

// At the connection limit: evict the oldest connection that has not
// registered (a client registers in its first message, so a legitimate one
// is rarely the oldest); false when every connection is a registered client.
bool Daemon::make_room_for_connection(std::uint64_t now) {
  if (conns_.size() < max_conns_) return true;
  int victim = -1;
  std::uint64_t oldest = ~0ull;
  for (const auto& [fd, c] : conns_) {
    if (!c->registered && c->accepted_ns < oldest) {
      oldest = c->accepted_ns;
      victim = fd;
    }
  }
  if (victim < 0) return false;
  close_conn(victim, now, nullptr);
  return true;
}

void Daemon::accept_clients(std::uint64_t now) {
  if (now < accept_paused_until_ns_) return;
  for (int accepted = 0; accepted < 256; ++accepted) {  // bounded: serve the others too
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno == EMFILE || errno == ENFILE) {
        // Out of fds: the pending connection would make poll() report the
        // listening socket readable forever (a busy loop). Accept it with
        // the spare fd and close it, then stop accepting for 100 ms.
        ++accept_errors_;
        if (spare_fd_ >= 0) {
          close(spare_fd_);
          int tmp = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
          if (tmp >= 0) close(tmp);
          spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
        }
        accept_paused_until_ns_ = now + 100000000ull;
        log_line("warn", std::string("accept: ") + std::strerror(errno) + "; refusing connections for 100 ms");
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNABORTED) {
        ++accept_errors_;
        accept_paused_until_ns_ = now + 100000000ull;
      }
      return;
    }
    if (!make_room_for_connection(now)) {
      ++refused_connections_;
      close(fd);
      continue;
    }
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      c->pid = cred.pid;
      c->uid = cred.uid;
    }
    c->registered_ns = now;
    c->accepted_ns = now;
    conns_[fd] = std::move(c);
  }
}

void Daemon::close_conn(int fd, std::uint64_t now, const char* why) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  std::unique_ptr<Conn> c = std::move(it->second);
  conns_.erase(it);
  close(fd);
  if (!c->registered) return;
  fd_of_.erase(c->id);
  if (c->holding) {
    c->run_ns += now - c->run_start_ns;
    ++reclaimed_;
  }
  if (why != nullptr) {
    log_line("warn", "client " + std::to_string(c->id) + " (pid " + std::to_string(c->pid) + ", " + c->name +
                         ") dropped: " + why);
  } else if (opt_.verbose) {
    log_line("debug", "client " + std::to_string(c->id) + " disconnected");
  }
  apply(policy_->disconnect(now, c->id), now);
}

void Daemon::read_conn(Conn& c, std::uint64_t now) {
  const int fd = c.fd;
  unsigned char buf[4096];
  // At most 64 KiB per wake-up: one flooding client cannot starve the others.
  for (int reads = 0; reads < 16; ++reads) {
    ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (r == 0) {
      close_conn(fd, now, nullptr);
      return;
    }
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      close_conn(fd, now, errno == ECONNRESET ? nullptr : "read error");
      return;
    }
    c.in.insert(c.in.end(), buf, buf + r);
    if (static_cast<std::size_t>(r) < sizeof buf) break;
  }
  std::size_t off = 0;
  for (;;) {
    proto::Frame f;
    const proto::FrameStatus st = proto::next_frame(c.in.data() + off, c.in.size() - off, proto::daemon_accepts, f);
    if (st == proto::FrameStatus::kNeedMore) break;
    if (st == proto::FrameStatus::kError) {
      ++protocol_errors_;
      close_conn(fd, now, proto::header_error_name(f.error));
      return;
    }
    if (!handle(c, f.header, f.payload, now)) {
      ++protocol_errors_;
      close_conn(fd, now, "message out of sequence");
      return;
    }
    if (conns_.find(fd) == conns_.end()) return;
    off += f.frame_bytes;
    if (c.doomed != nullptr) break;  // closed at the next sweep
  }
  c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(off));
}

bool Daemon::handle(Conn& c, const proto::Header& h, const unsigned char* p, std::uint64_t now) {
  switch (static_cast<proto::MsgType>(h.type)) {
    case proto::MsgType::kRegister: {
      if (c.registered || c.is_ctl) return false;
      proto::RegisterMsg m;
      std::memcpy(&m, p, sizeof m);
      if (m.core_limit_pct < 1 || m.core_limit_pct > 100) return false;
      if (m.device != proto::kAnyDevice && m.device >= opt_.gpus.size()) return false;
      if (opt_.max_clients_per_uid != 0 && c.uid != 0) {
        std::uint32_t mine = 0;
        for (const auto& [fd, o] : conns_) mine += o->registered && o->uid == c.uid;
        if (mine >= opt_.max_clients_per_uid) {
          ++uid_limit_refusals_;
          c.doomed = "uid has too many clients registered (max_clients_per_uid)";
          log_line("warn", "refused a registration of uid " + std::to_string(c.uid) + " (pid " +
                               std::to_string(c.pid) + "): " + std::to_string(mine) + " clients registered, limit " +
                               std::to_string(opt_.max_clients_per_uid));
          return true;
        }
      }
      c.registered = true;
      c.id = next_id_++;
      c.name.assign(m.name, strnlen(m.name, sizeof m.name));
      // Live placement: a process that did not choose a GPU is placed now,
      // before its first context exists (idle first, then the least memory
      // in use, by the policy's rule); the shim remaps its ordinal 0.
      c.device = m.device == proto::kAnyDevice ? policy_->choose_gpu(m.memory_bytes) : m.device;
      c.core_limit = m.core_limit_pct;
      c.memory_limit = m.memory_limit_bytes;
      c.registered_ns = now;
      fd_of_[c.id] = c.fd;
      ++registrations_;
      if (opt_.verbose) log_line("debug", "client " + std::to_string(c.id) + " registered (pid " + std::to_string(c.pid) + ")");
      gpu::ClientLimits lim;
      lim.compute_pct = m.core_limit_pct;
      lim.memory_bytes = m.memory_limit_bytes;
      proto::RegisteredMsg r{c.id, opt_.gpus[c.device].memory_bytes, c.device, 0};
      send(c, proto::MsgType::kRegistered, r);
      apply(policy_->register_client(now, c.id, c.device, lim), now);
      if (m.memory_bytes != 0 && by_id(c.id) != nullptr) {
        c.memory_bytes = m.memory_bytes;
        apply(policy_->memory_update(now, c.id, m.memory_bytes), now);
      }
      return true;
    }
    case proto::MsgType::kMemUpdate: {
      if (!c.registered) return false;
      proto::MemUpdateMsg m;
      std::memcpy(&m, p, sizeof m);
      c.memory_bytes = m.memory_bytes;
      apply(policy_->memory_update(now, c.id, m.memory_bytes), now);
      return true;
    }
    case proto::MsgType::kReqLock: {
      if (!c.registered) return false;
      c.requested = true;
      apply(policy_->lock_request(now, c.id), now);
      return true;
    }
    case proto::MsgType::kLockReleased: {
      if (!c.registered) return false;
      proto::LockReleasedMsg m;
      std::memcpy(&m, p, sizeof m);
      if (c.holding && m.generation == c.generation) {
        c.holding = false;
        c.dropped = false;
        c.run_ns += now - c.run_start_ns;
      }
      apply(policy_->release(now, c.id, m.generation), now);
      return true;
    }
    case proto::MsgType::kPrefetched: {
      if (!c.registered) return false;
      proto::PrefetchedMsg m;
      std::memcpy(&m, p, sizeof m);
      c.prefetched_bytes += m.bytes;
      prefetched_ += m.bytes;
      return true;
    }
    case proto::MsgType::kCtlList: {
      if (c.registered) return false;
      c.is_ctl = true;
      send_list(c, now);
      return true;
    }
    case proto::MsgType::kCtlSet: {
      if (c.registered) return false;
      c.is_ctl = true;
      proto::CtlSetMsg m;
      std::memcpy(&m, p, sizeof m);
      handle_ctl_set(c, m, now);
      return true;
    }
    case proto::MsgType::kRegistered:
    case proto::MsgType::kLockOk:
    case proto::MsgType::kDropLock:
    case proto::MsgType::kWaitMem:
    case proto::MsgType::kSetLimits:
    case proto::MsgType::kListReply:
    case proto::MsgType::kCtlAck:
      return false;
  }
  return false;
}

void Daemon::handle_ctl_set(Conn& c, const proto::CtlSetMsg& m, std::uint64_t now) {
  proto::CtlAckMsg ack{};
  auto fail = [&](int err, const std::string& why) {
    ack.status = err;
    std::strncpy(ack.message, why.c_str(), sizeof ack.message - 1);
  };
  if (c.uid != 0 && c.uid != getuid()) {
    fail(EPERM, "only root or the daemon's user may change settings");
    send(c, proto::MsgType::kCtlAck, ack);
    return;
  }
  try {
    switch (static_cast<proto::CtlKnob>(m.knob)) {
      case proto::CtlKnob::kQuantumMs:
        if (m.value == 0 || m.value > 86400000ull) {
          fail(EINVAL, "quantum must be 1..86400000 ms");
          break;
        }
        apply(policy_->set_quantum(now, m.value * 1000000ull), now);
        break;
      case proto::CtlKnob::kMode:
        apply(policy_->set_mode(now, m.value != 0), now);
        break;
      case proto::CtlKnob::kCoreLimit:
      case proto::CtlKnob::kMemoryLimit: {
        Conn* t = by_id(m.client_id);
        if (t == nullptr) {
          fail(ENOENT, "no client " + std::to_string(m.client_id));
          break;
        }
        gpu::ClientLimits lim;
        lim.compute_pct = t->core_limit;
        lim.memory_bytes = t->memory_limit;
        if (static_cast<proto::CtlKnob>(m.knob) == proto::CtlKnob::kCoreLimit) {
          if (m.value < 1 || m.value > 100) {
            fail(EINVAL, "core limit must be 1..100");
            break;
          }
          lim.compute_pct = static_cast<std::uint32_t>(m.value);
        } else {
          lim.memory_bytes = m.value;
        }
        gpu::Decisions d = policy_->set_limits(now, t->id, lim);
        t->core_limit = lim.compute_pct;
        t->memory_limit = lim.memory_bytes;
        proto::SetLimitsMsg sl{lim.memory_bytes, lim.compute_pct, 0};
        send(*t, proto::MsgType::kSetLimits, sl);
        apply(d, now);
        break;
      }
      default:
        fail(EINVAL, "unknown knob " + std::to_string(m.knob));
        break;
    }
  } catch (const gpu::PolicyError& e) {
    fail(EINVAL, e.what());
  }
  send(c, proto::MsgType::kCtlAck, ack);
}

void Daemon::send_list(Conn& c, std::uint64_t now) {
  update_snapshot(now);
  std::vector<proto::ClientInfo> list;
  {
    // Per-uid visibility: a user sees only its own processes (pid, uid,
    // program) unless it is root or the daemon's user.
    const bool all = c.uid == 0 || c.uid == getuid();
    std::lock_guard<std::mutex> lk(metrics_mu_);
    for (const auto& ci : snap_.clients)
      if (all || ci.uid == c.uid) list.push_back(ci);
  }
  proto::Header h{proto::kMagic, proto::kProtocolVersion,
                  static_cast<std::uint16_t>(proto::MsgType::kListReply),
                  static_cast<std::uint32_t>(list.size() * sizeof(proto::ClientInfo))};
  if (c.doomed != nullptr) return;
  if (c.out.size() - c.out_off + sizeof h + h.length > opt_.max_output_bytes) {
    c.doomed = "does not read its replies (output buffer full)";
    ++slow_clients_;
    return;
  }
  const auto* hb = reinterpret_cast<const unsigned char*>(&h);
  c.out.insert(c.out.end(), hb, hb + sizeof h);
  const auto* lb = reinterpret_cast<const unsigned char*>(list.data());
  c.out.insert(c.out.end(), lb, lb + list.size() * sizeof(proto::ClientInfo));
  flush(c);
}

void Daemon::update_snapshot(std::uint64_t now) {
  Snapshot s;
  std::map<gpu::ClientId, gpu::GpuPolicy::ClientView> views;
  for (const auto& v : policy_->clients()) views[v.client] = v;
  std::vector<const Conn*> cs;
  for (const auto& [fd, c] : conns_) {
    if (c->registered) cs.push_back(c.get());
  }
  std::sort(cs.begin(), cs.end(), [](const Conn* a, const Conn* b) { return a->id < b->id; });
  for (const Conn* c : cs) {
    proto::ClientInfo ci{};
    ci.client_id = c->id;
    ci.memory_bytes = c->memory_bytes;
    ci.memory_limit_bytes = c->memory_limit;
    ci.run_ns = c->run_ns + (c->holding ? now - c->run_start_ns : 0);
    ci.registered_ns = now - c->registered_ns;
    ci.pid = static_cast<std::uint32_t>(c->pid);
    ci.uid = static_cast<std::uint32_t>(c->uid);
    ci.device = c->device;
    ci.core_limit_pct = c->core_limit;
    ci.share_permille =
        ci.registered_ns == 0 ? 0 : static_cast<std::uint32_t>(ci.run_ns * 1000 / ci.registered_ns);
    proto::ClientState st = proto::ClientState::kIdle;
    auto v = views.find(c->id);
    const bool throttled = v != views.end() && v->second.throttled;
    if (c->holding) {
      st = c->dropped ? proto::ClientState::kDraining : proto::ClientState::kRunning;
    } else if (throttled) {
      st = proto::ClientState::kThrottled;
    } else if (c->wait_memory) {
      st = proto::ClientState::kWaitingMemory;
    } else if (c->requested) {
      st = proto::ClientState::kWaiting;
    }
    ci.state = static_cast<std::uint32_t>(st);
    std::strncpy(ci.name, c->name.c_str(), sizeof ci.name - 1);
    s.clients.push_back(ci);
    s.client_grants.push_back(c->grants);
    s.client_drops.push_back(c->drops);
    s.client_throttles.push_back(c->throttles);
    s.client_prefetched.push_back(c->prefetched_bytes);
  }
  s.switches = switches_;
  s.grants = grants_;
  s.drops = drops_;
  s.prefetched_bytes = prefetched_;
  s.protocol_errors = protocol_errors_;
  s.registrations = registrations_;
  s.reclaimed = reclaimed_;
  s.release_timeouts = release_timeouts_;
  s.slow_clients = slow_clients_;
  s.refused_connections = refused_connections_;
  s.uid_limit_refusals = uid_limit_refusals_;
  s.accept_errors = accept_errors_;
  s.connections = conns_.size();
  std::lock_guard<std::mutex> lk(metrics_mu_);
  snap_ = std::move(s);
}

std::string Daemon::render_metrics() const {
  std::lock_guard<std::mutex> lk(metrics_mu_);
  std::ostringstream o;
  auto head = [&](const char* name, const char* type, const char* help) {
    o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
  };
  head("agentcg_gpu_capacity_bytes", "gauge", "Scheduled memory capacity of each GPU.");
  for (std::size_t g = 0; g < opt_.gpus.size(); ++g)
    o << "agentcg_gpu_capacity_bytes{gpu=\"" << g << "\"} " << opt_.gpus[g].memory_bytes << '\n';
  head("agentcg_gpu_clients", "gauge", "Registered clients.");
  o << "agentcg_gpu_clients " << snap_.clients.size() << '\n';
  auto labels = [&](const proto::ClientInfo& c) {
    std::ostringstream l;
    std::string name(c.name, strnlen(c.name, sizeof c.name));
    for (char& ch : name) {
      if (ch == '"' || ch == '\\' || ch == '\n') ch = '_';
    }
    l << "client=\"" << c.client_id << "\",pid=\"" << c.pid << "\",name=\"" << name << "\",gpu=\"" << c.device
      << '"';
    return l.str();
  };
  head("agentcg_gpu_client_memory_bytes", "gauge", "Managed memory a client reported.");
  for (const auto& c : snap_.clients) o << "agentcg_gpu_client_memory_bytes{" << labels(c) << "} " << c.memory_bytes << '\n';
  head("agentcg_gpu_client_state_code", "gauge",
       "Client state: 0 idle, 1 waiting, 2 waiting-memory, 3 running, 4 draining, 5 throttled.");
  for (const auto& c : snap_.clients)
    o << "agentcg_gpu_client_state_code{" << labels(c) << ",state=\"" << proto::client_state_name(c.state)
      << "\"} " << c.state << '\n';
  head("agentcg_gpu_client_share_ratio", "gauge", "Achieved share: time holding the GPU over time registered.");
  for (const auto& c : snap_.clients)
    o << "agentcg_gpu_client_share_ratio{" << labels(c) << "} " << c.share_permille / 1000.0 << '\n';
  head("agentcg_gpu_client_core_limit_ratio", "gauge", "Compute limit of a client (1 = none).");
  for (const auto& c : snap_.clients)
    o << "agentcg_gpu_client_core_limit_ratio{" << labels(c) << "} " << c.core_limit_pct / 100.0 << '\n';
  head("agentcg_gpu_client_run_seconds_total", "counter", "Time a client held the GPU.");
  for (const auto& c : snap_.clients)
    o << "agentcg_gpu_client_run_seconds_total{" << labels(c) << "} " << c.run_ns / 1e9 << '\n';
  auto per_client = [&](const char* name, const char* help, const std::vector<std::uint64_t>& v) {
    head(name, "counter", help);
    for (std::size_t i = 0; i < snap_.clients.size(); ++i)
      o << name << '{' << labels(snap_.clients[i]) << "} " << v[i] << '\n';
  };
  per_client("agentcg_gpu_client_grants_total", "Grants a client received.", snap_.client_grants);
  per_client("agentcg_gpu_client_drops_total", "DROP_LOCKs a client received.", snap_.client_drops);
  per_client("agentcg_gpu_client_throttles_total", "Times a client's compute quota ran out.", snap_.client_throttles);
  per_client("agentcg_gpu_client_prefetched_bytes_total", "Bytes a client prefetched on switch-in.",
             snap_.client_prefetched);
  head("agentcg_gpu_switches_total", "counter", "Grants that changed which clients hold a GPU.");
  o << "agentcg_gpu_switches_total " << snap_.switches << '\n';
  head("agentcg_gpu_grants_total", "counter", "Grants sent.");
  o << "agentcg_gpu_grants_total " << snap_.grants << '\n';
  head("agentcg_gpu_drops_total", "counter", "DROP_LOCKs sent.");
  o << "agentcg_gpu_drops_total " << snap_.drops << '\n';
  head("agentcg_gpu_prefetched_bytes_total", "counter", "Bytes prefetched on switch-in, all clients.");
  o << "agentcg_gpu_prefetched_bytes_total " << snap_.prefetched_bytes << '\n';
  head("agentcg_gpu_protocol_errors_total", "counter", "Clients dropped for malformed messages.");
  o << "agentcg_gpu_protocol_errors_total " << snap_.protocol_errors << '\n';
  head("agentcg_gpu_registrations_total", "counter", "Client registrations (re-registrations included).");
  o << "agentcg_gpu_registrations_total " << snap_.registrations << '\n';
  head("agentcg_gpu_reclaimed_locks_total", "counter", "Grants reclaimed from clients that died holding them.");
  o << "agentcg_gpu_reclaimed_locks_total " << snap_.reclaimed << '\n';
  head("agentcg_gpu_release_timeouts_total", "counter",
       "Holders disconnected for not releasing within the release timeout after DROP_LOCK.");
  o << "agentcg_gpu_release_timeouts_total " << snap_.release_timeouts << '\n';
  head("agentcg_gpu_release_timeout_seconds", "gauge", "The hung-holder release timeout in force (0 = never).");
  o << "agentcg_gpu_release_timeout_seconds " << release_timeout_ms_ / 1e3 << '\n';
  head("agentcg_gpu_slow_clients_total", "counter", "Connections dropped for not reading their replies.");
  o << "agentcg_gpu_slow_clients_total " << snap_.slow_clients << '\n';
  head("agentcg_gpu_refused_connections_total", "counter", "Connections refused at the connection limit.");
  o << "agentcg_gpu_refused_connections_total " << snap_.refused_connections << '\n';
  head("agentcg_gpu_uid_limit_refusals_total", "counter", "Registrations refused by the per-uid client limit.");
  o << "agentcg_gpu_uid_limit_refusals_total " << snap_.uid_limit_refusals << '\n';
  head("agentcg_gpu_accept_errors_total", "counter", "accept() failures (EMFILE/ENFILE included).");
  o << "agentcg_gpu_accept_errors_total " << snap_.accept_errors << '\n';
  head("agentcg_gpu_connections", "gauge", "Open connections (clients, gpuctl, unregistered).");
  o << "agentcg_gpu_connections " << snap_.connections << '\n';
  return o.str();
}

void Daemon::check_release_timeouts(std::uint64_t now) {
  if (release_timeout_ms_ == 0) return;
  std::vector<int> late;
  for (const auto& [fd, c] : conns_) {
    if (c->holding && c->dropped && now - c->drop_sent_ns >= release_timeout_ms_ * 1000000ull) {
      late.push_back(fd);
    }
  }
  for (int fd : late) {
    ++release_timeouts_;
    const std::string why = "did not release within " + std::to_string(release_timeout_ms_) +
                            " ms of DROP_LOCK (hung or stopped holder); lock taken back";
    close_conn(fd, now, why.c_str());
  }
}

void Daemon::sweep(std::uint64_t now) {
  std::vector<std::pair<int, const char*>> gone;
  for (const auto& [fd, c] : conns_) {
    if (c->doomed != nullptr) {
      gone.emplace_back(fd, c->doomed);
    } else if (!c->registered && !c->is_ctl && now - c->accepted_ns >= opt_.handshake_timeout_ms * 1000000ull) {
      gone.emplace_back(fd, nullptr);  // connected and said nothing
    }
  }
  for (const auto& [fd, why] : gone) close_conn(fd, now, why);
}

void Daemon::run() {
  if (listen_fd_ < 0) throw std::runtime_error("Daemon::run() before listen()");
  std::uint64_t last_snapshot = 0;
  for (;;) {
    std::uint64_t now = monotonic_ns();
    if (next_tick_ns_ && now >= *next_tick_ns_) {
      next_tick_ns_.reset();
      apply(policy_->tick(now), now);
    }
    check_release_timeouts(now);
    sweep(now);
    if (now - last_snapshot >= 100000000ull) {
      update_snapshot(now);
      last_snapshot = now;
    }
    std::vector<pollfd> fds;
    fds.push_back({wake_pipe_[0], POLLIN, 0});
    // While accept is paused (out of fds), do not poll the listening socket:
    // its pending connection would wake poll() at once, forever.
    fds.push_back({now < accept_paused_until_ns_ ? -1 : listen_fd_, POLLIN, 0});
    for (const auto& [fd, c] : conns_) {
      fds.push_back({fd, static_cast<short>(POLLIN | (c->out_off < c->out.size() ? POLLOUT : 0)), 0});
    }
    std::uint64_t wait_ns = 100000000ull;  // refresh the metrics snapshot at least every 100 ms
    if (next_tick_ns_) wait_ns = std::min(wait_ns, *next_tick_ns_ > now ? *next_tick_ns_ - now : 0);
    if (now < accept_paused_until_ns_) wait_ns = std::min(wait_ns, accept_paused_until_ns_ - now);
    timespec ts{static_cast<time_t>(wait_ns / 1000000000ull), static_cast<long>(wait_ns % 1000000000ull)};
    int n = ppoll(fds.data(), fds.size(), &ts, nullptr);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("ppoll: ") + std::strerror(errno));
    }
    now = monotonic_ns();
    if (fds[0].revents & POLLIN) return;  // stop()
    if (fds[1].revents & POLLIN) accept_clients(now);
    for (std::size_t i = 2; i < fds.size(); ++i) {
      auto it = conns_.find(fds[i].fd);
      if (it == conns_.end()) continue;  // closed while handling an earlier one
      Conn& c = *it->second;
      if (fds[i].revents & POLLOUT) flush(c);
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) read_conn(c, now);
    }
  }
}

std::vector<gpu::GpuCapacity> detect_gpus(std::string& error) {
  // Minimal driver prototypes (CUresult is an int-sized enum); the daemon
  // does not need cuda.h, only the driver when it detects capacities.
  using InitFn = int (*)(unsigned int);
  using CountFn = int (*)(int*);
  using GetFn = int (*)(int*, int);
  using TotalFn = int (*)(std::size_t*, int);
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    error = std::string("cannot load libcuda.so.1: ") + (e ? e : "unknown error");
    return {};
  }
  auto init = reinterpret_cast<InitFn>(dlsym(h, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(h, "cuDeviceGetCount"));
  auto get = reinterpret_cast<GetFn>(dlsym(h, "cuDeviceGet"));
  auto total = reinterpret_cast<TotalFn>(dlsym(h, "cuDeviceTotalMem_v2"));
  std::vector<gpu::GpuCapacity> out;
  int n = 0;
  if (init == nullptr || count == nullptr || get == nullptr || total == nullptr) {
    error = "libcuda.so.1 lacks cuInit/cuDeviceGetCount/cuDeviceGet/cuDeviceTotalMem_v2";
  } else if (int r = init(0); r != 0) {
    error = "cuInit failed with CUresult " + std::to_string(r);
  } else if (int r2 = count(&n); r2 != 0 || n <= 0) {
    error = "no CUDA device found";
  } else {
    for (int i = 0; i < n; ++i) {
      int dev = 0;
      std::size_t bytes = 0;
      if (get(&dev, i) != 0 || total(&bytes, dev) != 0) {
        error = "cuDeviceTotalMem failed for device " + std::to_string(i);
        out.clear();
        break;
      }
      gpu::GpuCapacity c;
      c.memory_bytes = bytes;
      out.push_back(c);
    }
  }
  // The driver stays loaded: unloading CUDA inside a process is not supported.
  return out;
}

}  // namespace agentcg::gpud
