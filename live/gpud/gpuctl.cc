// SPDX-License-Identifier: GPL-2.0-only
/*
 * agentcg-gpuctl: the control CLI of agentcg-gpud (nvsharectl's role, plus
 * the run-time limit updates of the compute-limit GPU design that Kubernetes annotations drive):
 *   agentcg-gpuctl [--socket PATH] list
 *   agentcg-gpuctl [--socket PATH] set-quantum MS
 *   agentcg-gpuctl [--socket PATH] set-mode on|off
 *   agentcg-gpuctl [--socket PATH] set-core-limit CLIENT PCT
 *   agentcg-gpuctl [--socket PATH] set-memory-limit CLIENT SIZE
 *   agentcg-gpuctl --help | --version   (CLI11 via config/cli.h)
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

#include "config/cli.h"
#include "core/gpu/protocol/protocol.h"

namespace proto = agentcg::gpu::proto;

namespace {

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
  CLI::App app{"The control CLI of agentcg-gpud.", "agentcg-gpuctl"};
  agentcg::cli::setup(app);
  app.require_subcommand(1);
  app.add_option("--socket", sock, "the daemon's socket (default /run/agentcg/gpud.sock; env AGENTCG_GPU_SOCKET)")
      ->type_name("PATH");
  proto::CtlSetMsg m{};
  std::string mode;
  app.add_subcommand("list", "clients: id, pid, name, gpu, memory, state, share, limits");
  auto* quantum = app.add_subcommand("set-quantum", "time quantum in ms");
  quantum->add_option("MS", m.value, "milliseconds")
      ->required()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{86400000}));
  auto* set_mode = app.add_subcommand("set-mode", "scheduler on (serialise) or off (everyone runs)");
  set_mode->add_option("MODE", mode, "on or off")->required()->check(CLI::IsMember({"on", "off"}));
  auto* core = app.add_subcommand("set-core-limit", "compute limit 1..100 % of a client (takes effect at once)");
  core->add_option("CLIENT", m.client_id, "client id (see list)")
      ->required()
      ->check(agentcg::cli::positive_integer());
  core->add_option("PCT", m.value, "percent")->required()->check(CLI::Range(std::uint64_t{1}, std::uint64_t{100}));
  auto* mem = app.add_subcommand("set-memory-limit", "memory limit of a client (e.g. 4G; 0 = none)");
  mem->add_option("CLIENT", m.client_id, "client id (see list)")
      ->required()
      ->check(agentcg::cli::positive_integer());
  std::uint64_t mem_bytes = 0;
  agentcg::cli::add_size(*mem, "SIZE", mem_bytes, "bytes or a size such as 4G")->required();
  if (auto rc = agentcg::cli::parse(app, argc, argv)) return *rc;

  unsigned char msg[proto::kMaxFixedMessage];
  std::size_t n = 0;
  if (app.got_subcommand("list")) {
    n = proto::encode(proto::MsgType::kCtlList, proto::CtlListMsg{0}, msg);
  } else {
    if (quantum->parsed()) {
      m.knob = static_cast<std::uint32_t>(proto::CtlKnob::kQuantumMs);
    } else if (set_mode->parsed()) {
      m.knob = static_cast<std::uint32_t>(proto::CtlKnob::kMode);
      m.value = mode == "on" ? 1 : 0;
    } else if (core->parsed()) {
      m.knob = static_cast<std::uint32_t>(proto::CtlKnob::kCoreLimit);
    } else {
      m.knob = static_cast<std::uint32_t>(proto::CtlKnob::kMemoryLimit);
      m.value = mem_bytes;
    }
    n = proto::encode(proto::MsgType::kCtlSet, m, msg);
  }

  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (sock.size() >= sizeof addr.sun_path) {
    std::fprintf(stderr, "agentcg-gpuctl: error: --socket: path longer than %zu bytes\n", sizeof addr.sun_path - 1);
    return agentcg::cli::kUsageExit;
  }
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
