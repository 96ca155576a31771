// SPDX-License-Identifier: GPL-2.0-only
/*
 * agentcg-gpuctl: the control CLI of agentcg-gpud (nvsharectl's role, plus
 * the run-time limit updates of seed 003 that Kubernetes annotations drive):
 *   agentcg-gpuctl [--socket PATH] list
 *   agentcg-gpuctl [--socket PATH] set-quantum MS
 *   agentcg-gpuctl [--socket PATH] set-mode on|off
 *   agentcg-gpuctl [--socket PATH] set-core-limit CLIENT PCT
 *   agentcg-gpuctl [--socket PATH] set-memory-limit CLIENT SIZE
 *   agentcg-gpuctl --help
 * Exit status: 0 ok (and --help), 1 the daemon refused or is unreachable,
 * 2 bad usage.
 */
#include <errno.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/gpu/protocol/bytes.h"
#include "core/gpu/protocol/protocol.h"

namespace proto = agentcg::gpu::proto;

namespace {

const char* kUsage =
    "usage: agentcg-gpuctl [--socket PATH] COMMAND\n"
    "  list                          clients: id, pid, name, gpu, memory, state, share, limits\n"
    "  set-quantum MS                time quantum in ms\n"
    "  set-mode on|off               scheduler on (serialise) or off (everyone runs)\n"
    "  set-core-limit CLIENT PCT     compute limit 1..100 % of a client (takes effect at once)\n"
    "  set-memory-limit CLIENT SIZE  memory limit of a client (e.g. 4G; 0 = none)\n";

[[noreturn]] void usage(const std::string& msg) {
  std::fprintf(stderr, "agentcg-gpuctl: %s\n%s", msg.c_str(), kUsage);
  std::exit(2);
}

bool read_full(int fd, void* buf, std::size_t n) {
  auto* p = static_cast<unsigned char*>(buf);
  while (n > 0) {
    ssize_t r = recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

std::uint64_t number(const std::string& what, const char* s, std::uint64_t min, std::uint64_t max) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s || *end != '\0' || v < min || v > max) {
    usage(what + " '" + s + "': expected an integer " + std::to_string(min) + ".." + std::to_string(max));
  }
  return v;
}

std::string human(std::uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2fG", static_cast<double>(b) / (1ull << 30));
  else if (b >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.1fM", static_cast<double>(b) / (1ull << 20));
  else std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(b));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  std::string sock = "/run/agentcg/gpud.sock";
  if (const char* s = std::getenv("AGENTCG_GPU_SOCKET"); s && *s) sock = s;
  int i = 1;
  if (i + 1 < argc && std::strcmp(argv[i], "--socket") == 0) {
    sock = argv[i + 1];
    i += 2;
  }
  if (i >= argc) usage("no command");
  if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const std::string cmd = argv[i++];
  const int rest = argc - i;

  unsigned char msg[proto::kMaxFixedMessage];
  std::size_t n = 0;
  if (cmd == "list") {
    if (rest != 0) usage("list takes no arguments");
    n = proto::encode(proto::MsgType::kCtlList, proto::CtlListMsg{0}, msg);
  } else {
    proto::CtlSetMsg m{};
    if (cmd == "set-quantum") {
      if (rest != 1) usage("set-quantum needs MS");
      m.knob = static_cast<std::uint32_t>(proto::CtlKnob::kQuantumMs);
      m.value = number("quantum", argv[i], 1, 86400000);
    } else if (cmd == "set-mode") {
      if (rest != 1 || (std::strcmp(argv[i], "on") != 0 && std::strcmp(argv[i], "off") != 0)) {
        usage("set-mode needs on or off");
      }
      m.knob = static_cast<std::uint32_t>(proto::CtlKnob::kMode);
      m.value = std::strcmp(argv[i], "on") == 0 ? 1 : 0;
    } else if (cmd == "set-core-limit") {
      if (rest != 2) usage("set-core-limit needs CLIENT PCT");
      m.knob = static_cast<std::uint32_t>(proto::CtlKnob::kCoreLimit);
      m.client_id = number("client", argv[i], 1, UINT64_MAX);
      m.value = number("core limit", argv[i + 1], 1, 100);
    } else if (cmd == "set-memory-limit") {
      if (rest != 2) usage("set-memory-limit needs CLIENT SIZE");
      m.knob = static_cast<std::uint32_t>(proto::CtlKnob::kMemoryLimit);
      m.client_id = number("client", argv[i], 1, UINT64_MAX);
      auto b = agentcg::gpu::parse_bytes(argv[i + 1]);
      if (!b) usage(std::string("memory limit '") + argv[i + 1] + "': expected a size such as 4G");
      m.value = *b;
    } else {
      usage("unknown command '" + cmd + "'");
    }
    n = proto::encode(proto::MsgType::kCtlSet, m, msg);
  }

  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (sock.size() >= sizeof addr.sun_path) usage("socket path too long");
  std::memcpy(addr.sun_path, sock.c_str(), sock.size() + 1);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::fprintf(stderr, "agentcg-gpuctl: cannot connect to %s: %s\n", sock.c_str(), std::strerror(errno));
    return 1;
  }
  if (::send(fd, msg, n, MSG_NOSIGNAL) != static_cast<ssize_t>(n)) {
    std::fprintf(stderr, "agentcg-gpuctl: send failed: %s\n", std::strerror(errno));
    return 1;
  }
  proto::Header h{};
  if (!read_full(fd, &h, sizeof h) || proto::check_header(h) != proto::HeaderError::kOk ||
      !proto::ctl_accepts(h.type)) {
    std::fprintf(stderr, "agentcg-gpuctl: bad or no reply from %s\n", sock.c_str());
    return 1;
  }
  std::vector<unsigned char> payload(h.length);
  if (!read_full(fd, payload.data(), payload.size())) {
    std::fprintf(stderr, "agentcg-gpuctl: truncated reply\n");
    return 1;
  }
  close(fd);
  if (h.type == static_cast<std::uint16_t>(proto::MsgType::kListReply)) {
    std::printf("%-6s %-8s %-16s %-4s %-10s %-14s %-6s %-6s %-10s\n", "ID", "PID", "NAME", "GPU", "MEMORY",
                "STATE", "SHARE", "CORE%", "MEMLIMIT");
    for (std::size_t off = 0; off + sizeof(proto::ClientInfo) <= payload.size(); off += sizeof(proto::ClientInfo)) {
      proto::ClientInfo c;
      std::memcpy(&c, payload.data() + off, sizeof c);
      std::string name(c.name, strnlen(c.name, sizeof c.name));
      std::printf("%-6llu %-8u %-16s %-4u %-10s %-14s %5.1f%% %-6u %-10s\n",
                  static_cast<unsigned long long>(c.client_id), c.pid, name.c_str(), c.device,
                  human(c.memory_bytes).c_str(), proto::client_state_name(c.state), c.share_permille / 10.0,
                  c.core_limit_pct, c.memory_limit_bytes ? human(c.memory_limit_bytes).c_str() : "-");
    }
    return 0;
  }
  if (h.type == static_cast<std::uint16_t>(proto::MsgType::kCtlAck)) {
    proto::CtlAckMsg a;
    std::memcpy(&a, payload.data(), sizeof a);
    if (a.status != 0) {
      std::fprintf(stderr, "agentcg-gpuctl: refused: %s\n", a.message);
      return 1;
    }
    return 0;
  }
  std::fprintf(stderr, "agentcg-gpuctl: unexpected reply type %u\n", h.type);
  return 1;
}
