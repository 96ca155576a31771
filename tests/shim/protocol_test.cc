// SPDX-License-Identifier: GPL-2.0-only
/*
 * The wire protocol of live/gpud/protocol.h, pinned byte for byte: each
 * message type is encoded from fixed sample values and compared with
 * tests/shim/golden/<type>.bin (regenerate deliberately with
 * AGENTCG_UPDATE_GOLDEN=1 after bumping kProtocolVersion). Also checks that
 * the header check rejects garbage the daemon must drop, and the byte-size
 * parser shared by the shim, the daemon and gpuctl.
 */
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/gpu/protocol/bytes.h"
#include "core/gpu/protocol/protocol.h"

namespace proto = agentcg::gpu::proto;

namespace {

template <typename T>
std::vector<unsigned char> enc(proto::MsgType t, const T& p) {
  std::vector<unsigned char> b(sizeof(proto::Header) + sizeof(T));
  EXPECT_EQ(proto::encode(t, p, b.data()), b.size());
  return b;
}

void check_golden(const std::string& name, const std::vector<unsigned char>& bytes) {
  const std::string path = std::string(AGENTCG_GOLDEN_DIR) + "/" + name + ".bin";
  if (const char* u = std::getenv("AGENTCG_UPDATE_GOLDEN"); u && std::strcmp(u, "1") == 0) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                static_cast<std::streamsize>(bytes.size()));
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in.good()) << "missing golden file " << path;
  std::vector<unsigned char> want((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(want, bytes) << "encoding of " << name << " differs from " << path
                         << " (a wire change needs a new protocol version)";
}

template <typename T>
void fill_name(T& m, const char* s) {
  std::memset(m.name, 0, sizeof m.name);
  std::strncpy(m.name, s, sizeof m.name - 1);
}

}  // namespace

TEST(gpud_protocol, GoldenBytes) {
  proto::RegisterMsg reg{};
  reg.session_token = 0x1122334455667788ull;
  reg.memory_bytes = 12ull << 30;
  reg.memory_limit_bytes = 4ull << 30;
  reg.device = 1;
  reg.core_limit_pct = 40;
  fill_name(reg, "train.py");
  check_golden("register", enc(proto::MsgType::kRegister, reg));
  check_golden("registered", enc(proto::MsgType::kRegistered, proto::RegisteredMsg{7, 16ull << 30, 1, 0}));
  check_golden("mem_update", enc(proto::MsgType::kMemUpdate, proto::MemUpdateMsg{1536ull << 20}));
  check_golden("req_lock", enc(proto::MsgType::kReqLock, proto::ReqLockMsg{0}));
  check_golden("lock_ok", enc(proto::MsgType::kLockOk, proto::LockOkMsg{42, 20000000, 1, proto::kGrantPrefetch}));
  check_golden("drop_lock", enc(proto::MsgType::kDropLock, proto::DropLockMsg{42}));
  check_golden("lock_released", enc(proto::MsgType::kLockReleased, proto::LockReleasedMsg{42}));
  check_golden("wait_mem", enc(proto::MsgType::kWaitMem, proto::WaitMemMsg{0}));
  check_golden("prefetched", enc(proto::MsgType::kPrefetched, proto::PrefetchedMsg{8ull << 30}));
  check_golden("set_limits", enc(proto::MsgType::kSetLimits, proto::SetLimitsMsg{4ull << 30, 75, 0}));
  check_golden("ctl_list", enc(proto::MsgType::kCtlList, proto::CtlListMsg{0}));
  check_golden("ctl_set", enc(proto::MsgType::kCtlSet,
                              proto::CtlSetMsg{7, 75, static_cast<std::uint32_t>(proto::CtlKnob::kCoreLimit), 0}));
  proto::CtlAckMsg ack{};
  ack.status = 22;
  std::strncpy(ack.message, "core limit must be 1..100", sizeof ack.message - 1);
  check_golden("ctl_ack", enc(proto::MsgType::kCtlAck, ack));
  proto::ClientInfo ci{};
  ci.client_id = 7;
  ci.memory_bytes = 12ull << 30;
  ci.run_ns = 1500000000;
  ci.registered_ns = 3000000000;
  ci.pid = 4242;
  ci.uid = 1000;
  ci.device = 0;
  ci.state = static_cast<std::uint32_t>(proto::ClientState::kRunning);
  ci.core_limit_pct = 100;
  ci.share_permille = 500;
  fill_name(ci, "train.py");
  check_golden("list_reply_entry", enc(proto::MsgType::kListReply, ci));
}

TEST(gpud_protocol, HeaderLayoutIsLittleEndianMagicVersionTypeLength) {
  auto b = enc(proto::MsgType::kDropLock, proto::DropLockMsg{1});
  // "AGCG", version 1, type 6, length 8.
  const unsigned char want[12] = {'A', 'G', 'C', 'G', 1, 0, 6, 0, 8, 0, 0, 0};
  EXPECT_EQ(0, std::memcmp(b.data(), want, sizeof want));
}

TEST(gpud_protocol, RejectsGarbageHeaders) {
  proto::Header ok{proto::kMagic, proto::kProtocolVersion, static_cast<std::uint16_t>(proto::MsgType::kReqLock), 8};
  EXPECT_EQ(proto::check_header(ok), proto::HeaderError::kOk);
  auto h = ok;
  h.magic = 0xdeadbeef;
  EXPECT_EQ(proto::check_header(h), proto::HeaderError::kBadMagic);
  h = ok;
  h.version = 2;
  EXPECT_EQ(proto::check_header(h), proto::HeaderError::kBadVersion);
  h = ok;
  h.type = 99;
  EXPECT_EQ(proto::check_header(h), proto::HeaderError::kBadType);
  h = ok;
  h.length = 9;
  EXPECT_EQ(proto::check_header(h), proto::HeaderError::kBadLength);
  h = ok;
  h.type = static_cast<std::uint16_t>(proto::MsgType::kListReply);
  h.length = 2 * sizeof(proto::ClientInfo);
  EXPECT_EQ(proto::check_header(h), proto::HeaderError::kOk);
  h.length = sizeof(proto::ClientInfo) + 1;
  EXPECT_EQ(proto::check_header(h), proto::HeaderError::kBadLength);
  h.length = (proto::kMaxListEntries + 1) * sizeof(proto::ClientInfo);
  EXPECT_EQ(proto::check_header(h), proto::HeaderError::kBadLength);
}

TEST(gpud_protocol, TypeNamesAndSizesComeFromTheOneList) {
  EXPECT_STREQ(proto::type_name(5), "LockOk");
  EXPECT_EQ(proto::payload_size(5), sizeof(proto::LockOkMsg));
  EXPECT_EQ(proto::payload_size(0), 0u);
  EXPECT_STREQ(proto::client_state_name(static_cast<std::uint32_t>(proto::ClientState::kWaitingMemory)),
               "waiting-memory");
}

TEST(gpud_bytes, ParsesSizes) {
  using agentcg::gpu::parse_bytes;
  EXPECT_EQ(parse_bytes("4096"), 4096u);
  EXPECT_EQ(parse_bytes("4G"), 4ull << 30);
  EXPECT_EQ(parse_bytes("4GiB"), 4ull << 30);
  EXPECT_EQ(parse_bytes("16GB"), 16000000000ull);  // SI, as everywhere (core/units/units.h)
  EXPECT_EQ(parse_bytes("512k"), 512ull << 10);
  EXPECT_EQ(parse_bytes("1.5G"), 3ull << 29);
  EXPECT_FALSE(parse_bytes(nullptr));
  EXPECT_FALSE(parse_bytes("G"));
  EXPECT_FALSE(parse_bytes(""));
  EXPECT_FALSE(parse_bytes("-1"));
  EXPECT_FALSE(parse_bytes("99999999999999999999"));
  EXPECT_FALSE(parse_bytes("17179869184T"));
}
