// SPDX-License-Identifier: GPL-2.0-only
/*
 * agentcg-gpud: the GPU scheduler daemon. Parses the command line and the
 * shared YAML config (gpu: section), detects GPU capacities through the
 * driver (or takes --gpu-memory), starts the Prometheus endpoint on
 * 127.0.0.1 and runs the event loop (daemon.cc) until SIGINT/SIGTERM.
 * Exit status: 0 after a signal, 1 on a run-time error, 2 on bad usage or
 * configuration (the message says what, where and what was expected).
 */
#include <signal.h>

#include <httplib.h>
#ifdef AGENTCG_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "config/cli.h"
#include "config/config.h"
#include "core/gpu/protocol/bytes.h"
#include "live/gpud/daemon.h"
#include "live/http/bounded_server.h"

namespace {

agentcg::gpud::Daemon* g_daemon = nullptr;

void on_signal(int) {
  if (g_daemon != nullptr) g_daemon->stop();
}

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "agentcg-gpud: error: %s\nRun agentcg-gpud --help for the options.\n", msg.c_str());
  std::exit(agentcg::cli::kUsageExit);
}

std::uint64_t parse_u64(const std::string& flag, const char* v, std::uint64_t min, std::uint64_t max) {
  char* end = nullptr;
  errno = 0;
  unsigned long long x = std::strtoull(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x < min || x > max) {
    usage_error(flag + " '" + v + "': expected an integer " + std::to_string(min) + ".." + std::to_string(max));
  }
  return x;
}

// AGENTCG_GPU_* environment overrides of the file (core/include/agentcg/gpu/gpu_config.h).
void env_overrides(agentcg::config::GpuConfig& g) {
  struct U64 {
    const char* name;
    std::uint64_t* field;
    std::uint64_t min, max;
  };
  const U64 vars[] = {
      {"AGENTCG_GPU_TIME_QUANTUM_MS", &g.time_quantum_ms, 1, 86400000},
      {"AGENTCG_GPU_SWITCH_TIME_FIXED_S", &g.switch_time_fixed_s, 1, 86400},
      {"AGENTCG_GPU_SWITCH_TIME_MULTIPLIER", &g.switch_time_multiplier, 1, 1000},
      {"AGENTCG_GPU_COMPUTE_WINDOW_MS", &g.compute_window_ms, 10, 86400000},
      {"AGENTCG_GPU_CARRYOVER_PCT", &g.carryover_pct, 0, 100},
      {"AGENTCG_GPU_DROP_TAIL_BILLING_PCT", &g.drop_tail_billing_pct, 0, 100},
  };
  for (const auto& v : vars) {
    if (const char* s = std::getenv(v.name); s && *s) *v.field = parse_u64(std::string("env ") + v.name, s, v.min, v.max);
  }
  if (const char* s = std::getenv("AGENTCG_GPU_SWITCH_TIME_MODE"); s && *s) {
    if (std::strcmp(s, "auto") != 0 && std::strcmp(s, "fixed") != 0) {
      usage_error(std::string("env AGENTCG_GPU_SWITCH_TIME_MODE '") + s + "': expected auto or fixed");
    }
    g.switch_time_mode = s;
  }
}

}  // namespace

int main(int argc, char** argv) {
  agentcg::gpud::DaemonOptions opt;
  opt.metrics_port = 9401;
  if (const char* s = std::getenv("AGENTCG_GPU_SOCKET"); s && *s) opt.socket_path = s;
  std::string config_path, gpu_memory;
  std::optional<std::uint64_t> window_ms;
  std::uint64_t swap_bps = 3000000000ull;
  {
    CLI::App app{"The GPU scheduler daemon: grants the GPU to the CUDA shim's clients by a policy of core/.",
                 "agentcg-gpud"};
    agentcg::cli::setup(app);
    app.add_option("--socket", opt.socket_path, "Unix socket (default /run/agentcg/gpud.sock; env AGENTCG_GPU_SOCKET)")
        ->type_name("PATH");
    app.add_option("--policy", opt.policy,
                   "none | nvshare | memory-aware | compute-limit | memory-aware+compute-limit (default nvshare)")
        ->type_name("KIND");
    app.add_option("--config", config_path, "YAML config; its gpu: section sets the policy knobs")->type_name("FILE");
    app.add_option("--gpu-memory", gpu_memory,
                   "scheduled capacity per GPU (e.g. 16G), below the real one to test safely on a large GPU; "
                   "default: detected")
        ->type_name("SIZE[,SIZE]");
    app.add_option_function<std::uint64_t>(
           "--quantum-ms", [&](std::uint64_t v) { opt.quantum_ms = v; }, "time quantum (nvshare TQ, memory-aware fixed quantum)")
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{86400000}))
        ->type_name("MS");
    app.add_option_function<std::uint64_t>(
           "--compute-window-ms", [&](std::uint64_t v) { window_ms = v; }, "compute-limit window")
        ->check(CLI::Range(std::uint64_t{10}, std::uint64_t{86400000}))
        ->type_name("MS");
    agentcg::cli::add_size(app, "--swap-bandwidth", swap_bps,
                           "effective switch bandwidth per second for the auto quantum (default 3G)")
        ->type_name("BYTES/S")
        ->check(CLI::Validator([](std::string& v) { return v == "0" ? "expected a bandwidth above 0" : ""; }, ""));
    app.add_option("--metrics-port", opt.metrics_port, "Prometheus endpoint on 127.0.0.1 (default 9401, 0 = off)")
        ->check(CLI::Range(0u, 65535u))
        ->type_name("PORT");
    app.add_option("--metrics-address", opt.metrics_address, "address of the endpoint (default 127.0.0.1)")
        ->type_name("ADDR");
    app.add_option_function<std::uint64_t>(
           "--release-timeout-ms", [&](std::uint64_t v) { opt.release_timeout_ms = v; },
           "disconnect a holder that ignores DROP_LOCK this long; default max(10000, 2 x quantum) ms "
                   "(hung or SIGSTOPped holders); 0 = never")
        ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{86400000}))
        ->type_name("MS");
    app.add_option("--max-connections", opt.max_connections,
                   "connection limit (default 1024, at most RLIMIT_NOFILE - 32)")
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1000000}))
        ->type_name("N");
    app.add_option("--handshake-timeout-ms", opt.handshake_timeout_ms,
                   "close a connection that sends no complete first message (5000)")
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{3600000}))
        ->type_name("MS");
    app.add_option("--max-clients-per-uid", opt.max_clients_per_uid,
                   "registered clients per uid, root exempt (default 64, 0 = no limit)")
        ->check(CLI::Range(0u, 1000000u))
        ->type_name("N");
    app.add_flag("--verbose", opt.verbose, "log every grant and drop");
    if (auto rc = agentcg::cli::parse(app, argc, argv)) return *rc;
  }
  try {
    if (!config_path.empty()) opt.gpu = agentcg::config::load_file(config_path).gpu;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "agentcg-gpud: %s\n", e.what());
    return 2;
  }
  env_overrides(opt.gpu);
  if (window_ms) opt.gpu.compute_window_ms = *window_ms;

  // Capacities: --gpu-memory wins (one value for every detected GPU, or one
  // per GPU); otherwise what the driver reports.
  std::string detect_error;
  std::vector<agentcg::gpu::GpuCapacity> detected;
  std::vector<std::uint64_t> sizes;
  if (!gpu_memory.empty()) {
    std::size_t pos = 0;
    while (pos <= gpu_memory.size()) {
      std::size_t comma = gpu_memory.find(',', pos);
      std::string item = gpu_memory.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      auto b = agentcg::gpu::parse_bytes(item.c_str());
      if (!b || *b == 0)
        usage_error("--gpu-memory: expected " + std::string(agentcg::units::kSizeForms) + " above 0, got '" + item +
                    "'");
      sizes.push_back(*b);
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }
  if (sizes.size() != 1 || gpu_memory.empty()) detected = agentcg::gpud::detect_gpus(detect_error);
  if (sizes.size() == 1 && detected.size() > 1) sizes.assign(detected.size(), sizes[0]);
  if (sizes.empty()) {
    if (detected.empty()) {
      std::fprintf(stderr, "agentcg-gpud: no GPU capacity: %s; pass --gpu-memory SIZE\n", detect_error.c_str());
      return 2;
    }
    for (const auto& d : detected) sizes.push_back(d.memory_bytes);
  } else if (!detected.empty()) {
    for (std::size_t i = 0; i < sizes.size() && i < detected.size(); ++i) {
      if (sizes[i] > detected[i].memory_bytes) {
        std::fprintf(stderr, "agentcg-gpud: warning: --gpu-memory for GPU %zu exceeds its %llu bytes\n", i,
                     static_cast<unsigned long long>(detected[i].memory_bytes));
      }
    }
  }
  for (std::uint64_t s : sizes) {
    agentcg::gpu::GpuCapacity c;
    c.memory_bytes = s;
    c.swap_bytes_per_s = swap_bps;
    opt.gpus.push_back(c);
  }

  std::unique_ptr<agentcg::gpud::Daemon> daemon;
  try {
    daemon = std::make_unique<agentcg::gpud::Daemon>(opt);
    daemon->listen();
  } catch (const agentcg::gpu::PolicyError& e) {
    std::fprintf(stderr, "agentcg-gpud: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "agentcg-gpud: %s\n", e.what());
    return 1;
  }
  g_daemon = daemon.get();
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // Bounded request heads (live/http/bounded_server.h): cpp-httplib 0.11
  // does not bound the number of header lines.
  agentcg::live::BoundedServer http;
  std::thread http_thread;
  if (opt.metrics_port != 0) {
    // GET only: a request body over 4 KiB is answered 413 at once, never
    // buffered (cpp-httplib's default limit is SIZE_MAX).
    http.set_payload_max_length(4096);
    http.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
      res.set_content(daemon->render_metrics(), "text/plain; version=0.0.4");
    });
    if (!http.bind_to_port(opt.metrics_address.c_str(), static_cast<int>(opt.metrics_port))) {
      std::fprintf(stderr, "agentcg-gpud: cannot listen for metrics on %s:%u\n", opt.metrics_address.c_str(),
                   opt.metrics_port);
      return 1;
    }
    http_thread = std::thread([&] { http.listen_after_bind(); });
  }
  std::fprintf(stderr,
               "agentcg-gpud: policy %s, %zu GPU(s), socket %s, release timeout %llu ms%s, max %zu connections\n",
               opt.policy.c_str(), opt.gpus.size(), opt.socket_path.c_str(),
               static_cast<unsigned long long>(daemon->release_timeout_ms()),
               opt.release_timeout_ms ? "" : " (from the quantum)", daemon->max_connections());
#ifdef AGENTCG_HAVE_SYSTEMD
  // Type=notify: ready once the socket listens and metrics are bound.
  (void)sd_notify(0, "READY=1");
#endif
  int rc = 0;
  try {
    daemon->run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "agentcg-gpud: %s\n", e.what());
    rc = 1;
  }
#ifdef AGENTCG_HAVE_SYSTEMD
  (void)sd_notify(0, "STOPPING=1");
#endif
  if (http_thread.joinable()) {
    http.stop();
    http_thread.join();
  }
  g_daemon = nullptr;
  return rc;
}
