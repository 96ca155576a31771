// SPDX-License-Identifier: GPL-2.0-only
// live/http: an httplib::Server that bounds what a client can make it hold
// before a request's handler runs (issue 17, hostile clients).
//
// cpp-httplib 0.11 (Debian bookworm) caps each header line at 8 KiB but not
// the number of header lines: a client that sends "X: y\r\n" forever makes
// the server store every line in Request::headers (memory without bound),
// and a client that sends one byte every few seconds holds a worker thread
// forever (its read timeout is per read). The library has no option for
// either, and its implementation lives in the shared library, so its macros
// cannot be changed here. BoundedServer replaces the one per-connection
// entry point the library lets a subclass replace (the private virtual
// process_and_close_socket; overriding a private virtual is legal C++) with
// the same keep-alive loop over its own socket stream, which counts the
// bytes and lines of each request's head (request line + header lines, up
// to the blank line) and fails the read once a limit is passed; httplib then
// answers 400, which the error handler installed here turns into
// 431 Request Header Fields Too Large, and the connection is closed.
//
// Invariants: per request, at most HeadLimits::max_bytes of head are handed
// to the library (so its header map holds at most that much), at most
// max_lines lines, and the head completes within max_head_ms of its first
// read; the body is not counted here (set_payload_max_length bounds it).
// The limits reset at each request of a keep-alive connection.
// Callers: agentcgroupd (metrics and the strategies API, via
// live/strategy/api.cc's limit_scrape_server and extensions.cc) and
// agentcg-gpud (metrics). Do not replace the error handler of a
// BoundedServer (set_error_handler): it is what turns the failure into 431.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <httplib.h>

namespace agentcg::live {

struct HeadLimits {
  std::size_t max_bytes = 16 * 1024;  // request line + headers; 2x httplib's one-line cap
  std::size_t max_lines = 100;        // curl and Prometheus send < 10
  std::uint64_t max_head_ms = 10000;  // whole head, against one-byte-per-read trickles
};

class BoundedServer : public httplib::Server {
 public:
  explicit BoundedServer(HeadLimits limits = {});
  const HeadLimits& head_limits() const { return limits_; }
  // Requests refused for a head over a limit since start (all connections).
  std::uint64_t refused_heads() const;

 private:
  bool process_and_close_socket(socket_t sock) override;

  HeadLimits limits_;
  std::atomic<std::uint64_t> refused_heads_{0};
};

}  // namespace agentcg::live
