// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests of the shim's logic (client.cc) through a DriverTable of test
 * functions, without LD_PRELOAD or a driver: allocation conversion and
 * tracking, memory limits and cuMemGetInfo, pitch, and the lock protocol
 * against a scripted daemon on a real Unix socket (grant, drop -> drain ->
 * release with the grant's generation).
 */
#include "cuda-shim/client.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/gpu/protocol/protocol.h"

namespace agentcg::shim {
namespace {

namespace proto = agentcg::gpu::proto;

std::atomic<unsigned> g_last_flags{0};
std::atomic<int> g_syncs{0};
std::atomic<CUdeviceptr> g_next{0x1000};

CUresult t_alloc_managed(CUdeviceptr* p, size_t n, unsigned int flags) {
  g_last_flags = flags;
  *p = g_next.fetch_add(n);
  return CUDA_SUCCESS;
}
CUresult t_free(CUdeviceptr) { return CUDA_SUCCESS; }
CUresult t_init(unsigned int) { return CUDA_SUCCESS; }
CUresult t_get_current(CUcontext* c) {
  *c = reinterpret_cast<CUcontext>(0x10);
  return CUDA_SUCCESS;
}
CUresult t_set_current(CUcontext) { return CUDA_SUCCESS; }
CUresult t_sync() {
  ++g_syncs;
  return CUDA_SUCCESS;
}
CUresult t_info(size_t* f, size_t* t) {
  *f = 7ull << 30;
  *t = 8ull << 30;
  return CUDA_SUCCESS;
}

// The virtual-memory API of the test driver: handles count up, release
// checks the handle.
std::atomic<CUmemGenericAllocationHandle> g_next_handle{100};
std::atomic<int> g_vmm_released{0};
CUresult t_mem_create(CUmemGenericAllocationHandle* h, size_t, const CUmemAllocationProp*, unsigned long long) {
  *h = g_next_handle.fetch_add(1);
  return CUDA_SUCCESS;
}
CUresult t_mem_release(CUmemGenericAllocationHandle) {
  ++g_vmm_released;
  return CUDA_SUCCESS;
}

// Contexts: the test sets the calling thread's current context; every
// synchronize records the context it ran in.
thread_local CUcontext t_current = reinterpret_cast<CUcontext>(0x10);
std::mutex g_synced_mu;
std::vector<CUcontext> g_synced;
CUresult t_get_current_tl(CUcontext* c) {
  *c = t_current;
  return CUDA_SUCCESS;
}
CUresult t_set_current_tl(CUcontext c) {
  t_current = c;
  return CUDA_SUCCESS;
}
CUresult t_sync_tl() {
  std::lock_guard<std::mutex> lk(g_synced_mu);
  g_synced.push_back(t_current);
  ++g_syncs;
  return CUDA_SUCCESS;
}

DriverTable table() {
  DriverTable d;
  d.cuInit = t_init;
  d.cuMemAllocManaged = t_alloc_managed;
  d.cuMemFree_v2 = t_free;
  d.cuCtxGetCurrent = t_get_current;
  d.cuCtxSetCurrent = t_set_current;
  d.cuCtxSynchronize = t_sync;
  d.cuMemGetInfo_v2 = t_info;
  d.cuMemCreate = t_mem_create;
  d.cuMemRelease = t_mem_release;
  return d;
}

ClientOptions offline() {
  ClientOptions o;
  o.connect = false;
  return o;
}

TEST(shim_client, AllocationsBecomeManagedAndAreTracked) {
  DriverTable d = table();
  ASSERT_TRUE(d.has_required());
  Client c(d, offline());
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(c.mem_alloc(&a, 1000), CUDA_SUCCESS);
  EXPECT_EQ(g_last_flags.load(), static_cast<unsigned>(CU_MEM_ATTACH_GLOBAL));
  ASSERT_EQ(c.mem_alloc(&b, 500), CUDA_SUCCESS);
  EXPECT_EQ(c.tracked_bytes(), 1500u);
  auto r = c.mem_free(a, nullptr, false);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, CUDA_SUCCESS);
  EXPECT_EQ(c.tracked_bytes(), 500u);
  EXPECT_FALSE(c.mem_free(0xdead, nullptr, false).has_value()) << "foreign pointers pass through";
  EXPECT_FALSE(c.mem_free(a, nullptr, false).has_value()) << "double free is not ours any more";
}

TEST(shim_client, MemoryLimitRefusesAndShapesMemGetInfo) {
  DriverTable d = table();
  ClientOptions o = offline();
  o.memory_limit_bytes = 1ull << 30;
  Client c(d, o);
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(c.mem_alloc(&a, 768ull << 20), CUDA_SUCCESS);
  EXPECT_EQ(c.mem_alloc(&b, 512ull << 20), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(c.tracked_bytes(), 768ull << 20) << "a refused allocation leaves no reservation";
  size_t f = 0, t = 0;
  ASSERT_EQ(c.mem_get_info(&f, &t), CUDA_SUCCESS);
  EXPECT_EQ(t, 1ull << 30);
  EXPECT_EQ(f, 256ull << 20);
}

// VMM (cuMemCreate/cuMemRelease): counted, limited and released like any
// allocation; a handle the shim did not create passes through.
TEST(shim_client, VirtualMemoryApiIsCountedAndLimited) {
  DriverTable d = table();
  ClientOptions o = offline();
  o.memory_limit_bytes = 1ull << 30;
  Client c(d, o);
  CUmemGenericAllocationHandle h1 = 0, h2 = 0, h3 = 0;
  CUmemAllocationProp prop{};
  ASSERT_EQ(c.vmm_create(&h1, 512ull << 20, &prop, 0), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  ASSERT_EQ(c.mem_alloc(&p, 256ull << 20), CUDA_SUCCESS);
  EXPECT_EQ(c.tracked_bytes(), 768ull << 20);
  EXPECT_EQ(c.vmm_create(&h2, 512ull << 20, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY) << "over the 1 GiB limit";
  EXPECT_EQ(c.tracked_bytes(), 768ull << 20);
  const int released = g_vmm_released.load();
  auto r = c.vmm_release(h1);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, CUDA_SUCCESS);
  EXPECT_EQ(g_vmm_released.load(), released + 1);
  EXPECT_EQ(c.tracked_bytes(), 256ull << 20);
  EXPECT_FALSE(c.vmm_release(h1).has_value()) << "released twice";
  ASSERT_EQ(c.vmm_create(&h3, 512ull << 20, &prop, 0), CUDA_SUCCESS) << "room again after the release";
  EXPECT_FALSE(c.vmm_release(0xdead).has_value());
}

TEST(shim_client, MemGetInfoPassesThroughWithoutLimitOrDaemon) {
  DriverTable d = table();
  Client c(d, offline());
  size_t f = 0, t = 0;
  ASSERT_EQ(c.mem_get_info(&f, &t), CUDA_SUCCESS);
  EXPECT_EQ(t, 8ull << 30);
  EXPECT_EQ(f, 7ull << 30);
}

TEST(shim_client, PitchPadsRowsTo512Bytes) {
  DriverTable d = table();
  Client c(d, offline());
  CUdeviceptr p = 0;
  size_t pitch = 0;
  ASSERT_EQ(c.mem_alloc_pitch(&p, &pitch, 1000, 3, 4), CUDA_SUCCESS);
  EXPECT_EQ(pitch, 1024u);
  EXPECT_EQ(c.tracked_bytes(), 3072u);
  EXPECT_EQ(c.mem_alloc_pitch(&p, &pitch, 1000, 3, 3), CUDA_ERROR_INVALID_VALUE);
}

TEST(shim_client, WithoutDaemonWorkRunsUnscheduled) {
  DriverTable d = table();
  Client c(d, offline());
  c.before_work();
  c.after_work(true);
  EXPECT_EQ(c.state(), LockState::kUnscheduled);
}

bool read_msg(int fd, proto::Header& h, unsigned char* payload) {
  if (recv(fd, &h, sizeof h, MSG_WAITALL) != static_cast<ssize_t>(sizeof h)) return false;
  if (proto::check_header(h) != proto::HeaderError::kOk) return false;
  return recv(fd, payload, h.length, MSG_WAITALL) == static_cast<ssize_t>(h.length);
}

TEST(shim_client, GrantDropReleaseCarriesTheGeneration) {
  char dir[] = "/tmp/agentcg-client-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/s.sock";
  int ls = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(ls, 1), 0);

  std::atomic<std::uint64_t> released_gen{0};
  std::atomic<std::uint32_t> reg_limit{0};
  std::thread daemon([&] {
    int fd = accept(ls, nullptr, nullptr);
    proto::Header h{};
    unsigned char p[128];
    unsigned char out[64];
    // Register -> Registered
    if (!read_msg(fd, h, p) || h.type != static_cast<std::uint16_t>(proto::MsgType::kRegister)) return;
    proto::RegisterMsg reg;
    std::memcpy(&reg, p, sizeof reg);
    reg_limit = reg.core_limit_pct;
    (void)!write(fd, out, proto::encode(proto::MsgType::kRegistered, proto::RegisteredMsg{1, 4ull << 30, 0, 0}, out));
    // ReqLock -> LockOk(gen 7)
    do {
      if (!read_msg(fd, h, p)) return;
    } while (h.type != static_cast<std::uint16_t>(proto::MsgType::kReqLock));
    (void)!write(fd, out, proto::encode(proto::MsgType::kLockOk, proto::LockOkMsg{7, 0, 0, 0}, out));
    usleep(50000);
    (void)!write(fd, out, proto::encode(proto::MsgType::kDropLock, proto::DropLockMsg{7}, out));
    do {
      if (!read_msg(fd, h, p)) return;
    } while (h.type != static_cast<std::uint16_t>(proto::MsgType::kLockReleased));
    proto::LockReleasedMsg rel;
    std::memcpy(&rel, p, sizeof rel);
    released_gen = rel.generation;
    close(fd);
  });

  DriverTable d = table();
  ClientOptions o;
  o.socket_path = path;
  o.core_limit_pct = 40;
  {
    Client c(d, o);
    c.ensure_started();
    const int syncs_before = g_syncs.load();
    c.before_work();  // blocks until LOCK_OK
    EXPECT_EQ(c.state(), LockState::kHeld);
    EXPECT_EQ(c.generation(), 7u);
    c.after_work(true);
    for (int i = 0; i < 200 && released_gen.load() == 0; ++i) usleep(10000);
    EXPECT_EQ(released_gen.load(), 7u) << "LOCK_RELEASED must carry the dropped grant's generation";
    EXPECT_GT(g_syncs.load(), syncs_before) << "the drop must drain queued work";
    EXPECT_EQ(c.capacity_bytes(), 4ull << 30);
    EXPECT_EQ(c.drops(), 1u);
  }
  daemon.join();
  EXPECT_EQ(reg_limit.load(), 40u);
  close(ls);
  unlink(path.c_str());
  rmdir(dir);
}

// A process that worked in two contexts has both drained on DROP_LOCK
// before it releases (not only the last one it used).
TEST(shim_client, DropDrainsEveryContext) {
  char dir[] = "/tmp/agentcg-client-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/s.sock";
  int ls = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(ls, 1), 0);
  std::atomic<bool> released{false};
  std::thread daemon([&] {
    int fd = accept(ls, nullptr, nullptr);
    proto::Header h{};
    unsigned char p[128];
    unsigned char out[64];
    if (!read_msg(fd, h, p)) return;
    (void)!write(fd, out, proto::encode(proto::MsgType::kRegistered, proto::RegisteredMsg{1, 4ull << 30, 0, 0}, out));
    do {
      if (!read_msg(fd, h, p)) return;
    } while (h.type != static_cast<std::uint16_t>(proto::MsgType::kReqLock));
    (void)!write(fd, out, proto::encode(proto::MsgType::kLockOk, proto::LockOkMsg{3, 0, 0, 0}, out));
    usleep(100000);
    (void)!write(fd, out, proto::encode(proto::MsgType::kDropLock, proto::DropLockMsg{3}, out));
    do {
      if (!read_msg(fd, h, p)) return;
    } while (h.type != static_cast<std::uint16_t>(proto::MsgType::kLockReleased));
    released = true;
    close(fd);
  });
  DriverTable d = table();
  d.cuCtxGetCurrent = t_get_current_tl;
  d.cuCtxSetCurrent = t_set_current_tl;
  d.cuCtxSynchronize = t_sync_tl;
  ClientOptions o;
  o.socket_path = path;
  const auto ctx_a = reinterpret_cast<CUcontext>(0xa0);
  const auto ctx_b = reinterpret_cast<CUcontext>(0xb0);
  {
    Client c(d, o);
    c.ensure_started();
    {
      std::lock_guard<std::mutex> lk(g_synced_mu);
      g_synced.clear();
    }
    t_current = ctx_a;
    c.before_work();
    c.after_work(false);
    t_current = ctx_b;
    c.before_work();
    c.after_work(false);
    for (int i = 0; i < 300 && !released.load(); ++i) usleep(10000);
    EXPECT_TRUE(released.load());
  }
  daemon.join();
  std::lock_guard<std::mutex> lk(g_synced_mu);
  EXPECT_NE(std::find(g_synced.begin(), g_synced.end(), ctx_a), g_synced.end()) << "context A not drained";
  EXPECT_NE(std::find(g_synced.begin(), g_synced.end(), ctx_b), g_synced.end()) << "context B not drained";
  close(ls);
  unlink(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace agentcg::shim
