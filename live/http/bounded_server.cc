// SPDX-License-Identifier: GPL-2.0-only
// See bounded_server.h. The keep-alive loop and the stream mirror
// cpp-httplib 0.11.4's own (process_server_socket_core and SocketStream in
// its httplib.cc): poll for the next request up to the keep-alive timeout,
// per-read and per-write timeouts, MSG_NOSIGNAL sends, one read buffer per
// connection so the library's one-byte line reads cost no syscall each.
#include "live/http/bounded_server.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

namespace agentcg::live {
namespace {

std::uint64_t steady_ms() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

int poll_one(int fd, short events, std::uint64_t timeout_ms) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int r = ::poll(&p, 1, static_cast<int>(std::min<std::uint64_t>(timeout_ms, 1u << 30)));
    if (r >= 0 || errno != EINTR) return r;
  }
}

std::uint64_t to_ms(time_t sec, time_t usec) {
  return static_cast<std::uint64_t>(sec) * 1000 + static_cast<std::uint64_t>(usec) / 1000;
}

void ip_and_port(const sockaddr_storage& ss, socklen_t len, std::string& ip, int& port) {
  char host[NI_MAXHOST] = "";
  if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6) return;  // AF_UNIX: no address
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&ss), len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0)
    return;
  ip = host;
  port = ntohs(ss.ss_family == AF_INET ? reinterpret_cast<const sockaddr_in*>(&ss)->sin_port
                                       : reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port);
}

// One connection's socket, counting each request's head (see the header).
class GuardedStream final : public httplib::Stream {
 public:
  GuardedStream(int sock, const HeadLimits& limits, std::uint64_t read_timeout_ms, std::uint64_t write_timeout_ms)
      : sock_(sock), limits_(limits), read_timeout_ms_(read_timeout_ms), write_timeout_ms_(write_timeout_ms) {}

  // Called before each request of the connection: the limits are per request.
  void start_request() {
    head_done_ = false;
    head_bytes_ = head_lines_ = line_len_ = 0;
    head_started_ = false;
  }
  bool tripped() const { return tripped_; }

  // True when a request's first byte is there (buffered or readable) within
  // timeout_ms; false on timeout, EOF-ready errors aside, or once the server
  // stops (svr_sock becomes INVALID_SOCKET: checked every 100 ms, so stop()
  // does not wait out a keep-alive timeout).
  bool wait_request(std::uint64_t timeout_ms, const std::atomic<socket_t>& svr_sock) const {
    if (off_ < len_) return true;
    const std::uint64_t end_ms = steady_ms() + timeout_ms;
    while (svr_sock != INVALID_SOCKET) {
      const std::uint64_t now_ms = steady_ms();
      if (now_ms >= end_ms) return false;
      const int r = poll_one(sock_, POLLIN, std::min<std::uint64_t>(end_ms - now_ms, 100));
      if (r != 0) return r > 0;
    }
    return false;
  }

  bool is_readable() const override { return off_ < len_ || poll_one(sock_, POLLIN, read_timeout_ms_) > 0; }
  bool is_writable() const override { return poll_one(sock_, POLLOUT, write_timeout_ms_) > 0; }

  ssize_t read(char* ptr, size_t size) override {
    if (tripped_) return -1;
    if (off_ == len_) {
      std::uint64_t wait_ms = read_timeout_ms_;
      if (!head_done_) {
        const std::uint64_t now_ms = steady_ms();
        if (!head_started_) {
          head_started_ = true;
          head_start_ms_ = now_ms;
        }
        const std::uint64_t spent_ms = now_ms - head_start_ms_;
        if (spent_ms >= limits_.max_head_ms) return trip();
        wait_ms = std::min(wait_ms, limits_.max_head_ms - spent_ms);
      }
      const int r = poll_one(sock_, POLLIN, wait_ms);
      if (r <= 0) return (r == 0 && !head_done_ && steady_ms() - head_start_ms_ >= limits_.max_head_ms) ? trip() : -1;
      ssize_t n;
      do n = ::recv(sock_, buf_, sizeof buf_, 0);
      while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      off_ = 0;
      len_ = static_cast<std::size_t>(n);
    }
    std::size_t n = std::min(size, len_ - off_);
    if (!head_done_) {
      for (std::size_t i = 0; i < n; ++i) {
        if (++head_bytes_ > limits_.max_bytes) return trip();
        const char c = buf_[off_ + i];
        if (c == '\r') continue;
        if (c != '\n') {
          ++line_len_;
          continue;
        }
        if (line_len_ == 0 && head_lines_ > 0) {  // the blank line: the body (if any) follows, uncounted
          head_done_ = true;
          n = i + 1;
          break;
        }
        if (++head_lines_ > limits_.max_lines) return trip();
        line_len_ = 0;
      }
    }
    std::memcpy(ptr, buf_ + off_, n);
    off_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (getpeername(sock_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) ip_and_port(ss, len, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (getsockname(sock_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) ip_and_port(ss, len, ip, port);
  }
  socket_t socket() const override { return sock_; }

 private:
  ssize_t trip() {
    tripped_ = true;
    return -1;
  }

  int sock_;
  HeadLimits limits_;
  std::uint64_t read_timeout_ms_, write_timeout_ms_;
  char buf_[4096];
  std::size_t off_ = 0, len_ = 0;
  bool head_done_ = false, head_started_ = false, tripped_ = false;
  std::size_t head_bytes_ = 0, head_lines_ = 0, line_len_ = 0;
  std::uint64_t head_start_ms_ = 0;
};

// The connection being served on this worker thread, for the error handler
// (called synchronously inside process_request on the same thread).
thread_local const GuardedStream* t_stream = nullptr;

}  // namespace

BoundedServer::BoundedServer(HeadLimits limits) : limits_(limits) {
  // httplib answers 400 when reading the headers fails; a failure of ours
  // is the more precise 431 (RFC 6585), and it says which limit.
  set_error_handler(HandlerWithResponse([this](const httplib::Request&, httplib::Response& res) {
    if (t_stream == nullptr || !t_stream->tripped()) return HandlerResponse::Unhandled;
    res.status = 431;
    res.set_content("request head over the limit (" + std::to_string(limits_.max_lines) + " lines, " +
                        std::to_string(limits_.max_bytes) + " bytes, " + std::to_string(limits_.max_head_ms) +
                        " ms)\n",
                    "text/plain");
    res.set_header("Connection", "close");
    return HandlerResponse::Handled;
  }));
}

std::uint64_t BoundedServer::refused_heads() const { return refused_heads_.load(std::memory_order_relaxed); }

bool BoundedServer::process_and_close_socket(socket_t sock) {
  GuardedStream strm(sock, limits_, to_ms(read_timeout_sec_, read_timeout_usec_),
                     to_ms(write_timeout_sec_, write_timeout_usec_));
  bool ret = false;
  for (std::size_t left = keep_alive_max_count_; left > 0; --left) {
    if (svr_sock_ == INVALID_SOCKET || !strm.wait_request(to_ms(keep_alive_timeout_sec_, 0), svr_sock_)) break;
    strm.start_request();
    bool connection_closed = false;
    t_stream = &strm;
    ret = process_request(strm, left == 1, connection_closed, nullptr);
    t_stream = nullptr;
    if (strm.tripped()) {
      refused_heads_.fetch_add(1, std::memory_order_relaxed);
      ret = false;
    }
    if (!ret || connection_closed) break;
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ret;
}

}  // namespace agentcg::live
