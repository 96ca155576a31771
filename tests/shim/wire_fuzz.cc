// SPDX-License-Identifier: GPL-2.0-only
// libFuzzer target for the GPU wire decoder (core/gpu/protocol/protocol.h,
// next_frame()), as the daemon and the shim run it on untrusted bytes: the
// input is a byte stream cut into frames for each receiving end. Checks, on
// every input: no out-of-bounds read (ASan), a frame never claims more
// bytes than were given, an accepted frame has its type's fixed size (or a
// bounded ListReply), and decoding makes progress (no frame of 0 bytes).
// Built only with -DAGENTCG_FUZZ=ON and clang (tests/shim/CMakeLists.txt);
// CTest gpud_wire_fuzz_smoke runs it for a few seconds on the golden
// messages (tests/shim/golden) as the seed corpus. Longer:
//   mkdir -p /tmp/wire-corpus   # new inputs go to the first folder, never to golden/
//   build/fuzz/tests/shim/gpud_wire_fuzz -max_total_time=600 /tmp/wire-corpus tests/shim/golden
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/gpu/protocol/protocol.h"

namespace proto = agentcg::gpu::proto;

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

void decode_all(const unsigned char* data, std::size_t n, bool (*accepts)(std::uint16_t)) {
  std::size_t off = 0;
  while (off < n) {
    proto::Frame f;
    const auto st = proto::next_frame(data + off, n - off, accepts, f);
    if (st != proto::FrameStatus::kFrame) return;  // need more, or the connection is dropped
    require(f.frame_bytes >= sizeof(proto::Header) && f.frame_bytes <= n - off);
    require(f.payload == data + off + sizeof(proto::Header));
    require(proto::check_header(f.header) == proto::HeaderError::kOk && accepts(f.header.type));
    const std::size_t size = proto::payload_size(f.header.type);
    if (f.header.type == static_cast<std::uint16_t>(proto::MsgType::kListReply)) {
      require(f.header.length % size == 0 && f.header.length / size <= proto::kMaxListEntries);
    } else {
      require(f.header.length == size);
      unsigned char copy[proto::kMaxFixedMessage];
      std::memcpy(copy, f.payload, f.header.length);  // what the receivers do
    }
    off += f.frame_bytes;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  decode_all(data, size, proto::daemon_accepts);
  decode_all(data, size, proto::shim_accepts);
  decode_all(data, size, proto::ctl_accepts);
  return 0;
}
