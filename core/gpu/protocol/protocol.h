// SPDX-License-Identifier: GPL-2.0-only
/*
 * The wire protocol between libagentcg-cuda.so (the shim, cuda-shim/), the
 * GPU scheduler daemon agentcg-gpud and the control CLI agentcg-gpuctl, over
 * one Unix stream socket (default /run/agentcg/gpud.sock).
 *
 * Every message is a 12-byte header {magic, version, type, length} followed
 * by exactly `length` payload bytes whose layout is fixed per type (packed by
 * construction: only naturally aligned fixed-width fields, checked by the
 * static_asserts below). Host byte order: both ends run on the same machine.
 * The golden files tests/shim/golden/<type>.bin pin these layouts byte for
 * byte (tests/shim/protocol_test.cc), so a change here that changes the bytes
 * must bump kProtocolVersion.
 *
 * Invariants: a receiver rejects (and the daemon disconnects) a message with a
 * wrong magic or version, an unknown type, or a length different from the
 * type's fixed size (kListReply is the one variable-length type: a multiple
 * of sizeof(ClientInfo), at most kMaxListEntries entries). Every grant carries
 * the daemon's generation counter; a client answers DROP_LOCK with
 * LOCK_RELEASED carrying the same generation, and the daemon ignores stale
 * releases (nvshare's `scheduling_round`).
 *
 * Unlike nvshare (one 537-byte packed struct without a version), the header
 * is versioned and each type has its own payload.
 *
 * It lives below both ends (core/gpu/protocol/, header-only, no I/O): the
 * shim and the daemon include it, neither includes the other. Each type's
 * direction is declared once, in the X-macro below; the daemon's and the
 * shim's acceptance checks (accepted_by()) are derived from it.
 *
 * Callers: cuda-shim/client.cc (shim side), live/gpud/daemon.cc and
 * live/gpud/gpuctl.cc, tests/shim/protocol_test.cc, the wire fuzzer.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>

namespace agentcg::gpu::proto {

inline constexpr std::uint32_t kMagic = 0x47434741u;  // "AGCG" in little-endian memory
inline constexpr std::uint16_t kProtocolVersion = 1;
inline constexpr std::uint32_t kMaxListEntries = 1024;
inline constexpr std::size_t kNameLen = 32;

// Who sends a message (its receiver accepts nothing else).
enum class Direction : std::uint8_t {
  kToDaemon = 1,  // shim -> daemon
  kToShim = 2,    // daemon -> shim
  kCtlToDaemon = 3,
  kToCtl = 4,     // daemon -> gpuctl
};

// One X-macro list of message types with explicit numbers (STYLE.md).
// X(Name, number, payload struct, direction, doc)
#define AGENTCG_GPU_MSG_TYPES(X)                                                              \
  X(Register, 1, RegisterMsg, kToDaemon, "hello, limits, current memory")                     \
  X(Registered, 2, RegisteredMsg, kToShim, "client id, scheduled capacity, assigned device")  \
  X(MemUpdate, 3, MemUpdateMsg, kToDaemon, "total managed bytes now")                         \
  X(ReqLock, 4, ReqLockMsg, kToDaemon, "wants the GPU")                                       \
  X(LockOk, 5, LockOkMsg, kToShim, "grant with generation")                                   \
  X(DropLock, 6, DropLockMsg, kToShim, "drain and release")                                   \
  X(LockReleased, 7, LockReleasedMsg, kToDaemon, "released generation")                       \
  X(WaitMem, 8, WaitMemMsg, kToShim, "queued until memory fits")                              \
  X(Prefetched, 9, PrefetchedMsg, kToDaemon, "bytes prefetched on grant")                     \
  X(SetLimits, 10, SetLimitsMsg, kToShim, "limits changed at run time")                       \
  X(CtlList, 20, CtlListMsg, kCtlToDaemon, "list clients")                                    \
  X(ListReply, 21, ClientInfo, kToCtl, "N x ClientInfo (variable)")                           \
  X(CtlSet, 22, CtlSetMsg, kCtlToDaemon, "set a knob")                                        \
  X(CtlAck, 23, CtlAckMsg, kToCtl, "result of CtlSet")

enum class MsgType : std::uint16_t {
#define AGENTCG_X(name, num, payload, dir, doc) k##name = num,
  AGENTCG_GPU_MSG_TYPES(AGENTCG_X)
#undef AGENTCG_X
};

struct Header {
  std::uint32_t magic;
  std::uint16_t version;
  std::uint16_t type;    // MsgType
  std::uint32_t length;  // payload bytes after the header
};

// RegisterMsg::device when the process did not choose a GPU: the daemon
// places it (RegisteredMsg::device says where) and the shim shows the
// process that GPU as its only device, ordinal 0 (as CUDA_VISIBLE_DEVICES).
inline constexpr std::uint32_t kAnyDevice = 0xffffffffu;

struct RegisterMsg {
  std::uint64_t session_token;     // random per process; kept across re-registration
  std::uint64_t memory_bytes;      // managed bytes already allocated
  std::uint64_t memory_limit_bytes;  // 0 = none (AGENTCG_GPU_MEMORY_LIMIT)
  std::uint32_t device;            // CUDA ordinal the client uses, or kAnyDevice
  std::uint32_t core_limit_pct;    // 1..100 (AGENTCG_GPU_CORE_LIMIT), 100 = none
  char name[kNameLen];             // program name, NUL-padded
};

struct RegisteredMsg {
  std::uint64_t client_id;
  std::uint64_t capacity_bytes;    // scheduled capacity of the device (cuMemGetInfo)
  std::uint32_t device;            // the device the daemon accounts the client on
  std::uint32_t reserved;
};

struct MemUpdateMsg {
  std::uint64_t memory_bytes;
};

struct ReqLockMsg {
  std::uint64_t reserved;
};

// LockOk flags.
inline constexpr std::uint32_t kGrantPrefetch = 1u << 0;  // prefetch the allocations now

struct LockOkMsg {
  std::uint64_t generation;
  std::uint64_t max_queued_ns;  // bound on queued kernel time; 0 = unbounded
  std::uint32_t gpu;            // the GPU the grant is for
  std::uint32_t flags;          // kGrant*
};

struct DropLockMsg {
  std::uint64_t generation;
};

struct LockReleasedMsg {
  std::uint64_t generation;
};

struct WaitMemMsg {
  std::uint64_t generation;
};

struct PrefetchedMsg {
  std::uint64_t bytes;
};

struct SetLimitsMsg {
  std::uint64_t memory_limit_bytes;  // 0 = none
  std::uint32_t core_limit_pct;      // 1..100
  std::uint32_t reserved;
};

struct CtlListMsg {
  std::uint64_t reserved;
};

// Client states as reported by CtlList (X-macro shared with metrics).
#define AGENTCG_GPU_CLIENT_STATES(X) \
  X(Idle, 0, "idle")                 \
  X(Waiting, 1, "waiting")           \
  X(WaitingMemory, 2, "waiting-memory") \
  X(Running, 3, "running")           \
  X(Draining, 4, "draining")         \
  X(Throttled, 5, "throttled")

enum class ClientState : std::uint32_t {
#define AGENTCG_X(name, num, str) k##name = num,
  AGENTCG_GPU_CLIENT_STATES(AGENTCG_X)
#undef AGENTCG_X
};

inline const char* client_state_name(std::uint32_t s) {
  switch (s) {
#define AGENTCG_X(name, num, str) \
  case num:                       \
    return str;
    AGENTCG_GPU_CLIENT_STATES(AGENTCG_X)
#undef AGENTCG_X
  }
  return "unknown";
}

struct ClientInfo {
  std::uint64_t client_id;
  std::uint64_t memory_bytes;
  std::uint64_t memory_limit_bytes;
  std::uint64_t run_ns;            // time holding the GPU since registration
  std::uint64_t registered_ns;     // age (now - registration)
  std::uint32_t pid;
  std::uint32_t uid;
  std::uint32_t device;
  std::uint32_t state;             // ClientState
  std::uint32_t core_limit_pct;
  std::uint32_t share_permille;    // achieved share of GPU time (run_ns / age)
  char name[kNameLen];
};

// CtlSet knobs.
#define AGENTCG_GPU_CTL_KNOBS(X)                                     \
  X(QuantumMs, 1, "quantum", "time quantum in ms (0 = auto)")        \
  X(Mode, 2, "mode", "0 = scheduler off, 1 = on")                     \
  X(CoreLimit, 3, "core-limit", "client's compute limit, 1..100 %")   \
  X(MemoryLimit, 4, "memory-limit", "client's memory limit, bytes")

enum class CtlKnob : std::uint32_t {
#define AGENTCG_X(name, num, str, doc) k##name = num,
  AGENTCG_GPU_CTL_KNOBS(AGENTCG_X)
#undef AGENTCG_X
};

struct CtlSetMsg {
  std::uint64_t client_id;  // 0 for global knobs
  std::uint64_t value;
  std::uint32_t knob;       // CtlKnob
  std::uint32_t reserved;
};

struct CtlAckMsg {
  std::int32_t status;      // 0 = ok, else an errno value
  std::uint32_t reserved;
  char message[64];         // NUL-terminated reason
};

static_assert(sizeof(Header) == 12 && offsetof(Header, type) == 6 && offsetof(Header, length) == 8);
static_assert(sizeof(RegisterMsg) == 64 && offsetof(RegisterMsg, name) == 32);
static_assert(sizeof(RegisteredMsg) == 24);
static_assert(sizeof(MemUpdateMsg) == 8 && sizeof(ReqLockMsg) == 8);
static_assert(sizeof(LockOkMsg) == 24 && offsetof(LockOkMsg, flags) == 20);
static_assert(sizeof(DropLockMsg) == 8 && sizeof(LockReleasedMsg) == 8 && sizeof(WaitMemMsg) == 8);
static_assert(sizeof(PrefetchedMsg) == 8 && sizeof(CtlListMsg) == 8);
static_assert(sizeof(SetLimitsMsg) == 16);
static_assert(sizeof(ClientInfo) == 96 && offsetof(ClientInfo, name) == 64);
static_assert(sizeof(CtlSetMsg) == 24 && sizeof(CtlAckMsg) == 72);
#define AGENTCG_X(name, num, payload, dir, doc)                                       \
  static_assert(std::is_trivially_copyable_v<payload> && alignof(payload) <= 8, \
                #payload " must be a plain fixed layout");
AGENTCG_GPU_MSG_TYPES(AGENTCG_X)
#undef AGENTCG_X

// Fixed payload size of a type, 0 for an unknown type. ListReply: the entry size.
inline std::size_t payload_size(std::uint16_t type) {
  switch (type) {
#define AGENTCG_X(name, num, payload, dir, doc) \
  case num:                                \
    return sizeof(payload);
    AGENTCG_GPU_MSG_TYPES(AGENTCG_X)
#undef AGENTCG_X
  }
  return 0;
}

inline const char* type_name(std::uint16_t type) {
  switch (type) {
#define AGENTCG_X(name, num, payload, dir, doc) \
  case num:                                \
    return #name;
    AGENTCG_GPU_MSG_TYPES(AGENTCG_X)
#undef AGENTCG_X
  }
  return "unknown";
}

// The direction of a type; nullopt for an unknown type.
inline std::optional<Direction> direction_of(std::uint16_t type) {
  switch (type) {
#define AGENTCG_X(name, num, payload, dir, doc) \
  case num:                                     \
    return Direction::dir;
    AGENTCG_GPU_MSG_TYPES(AGENTCG_X)
#undef AGENTCG_X
  }
  return std::nullopt;
}

// Whether the daemon accepts `type` from a peer (a shim or gpuctl).
inline bool daemon_accepts(std::uint16_t type) {
  const auto d = direction_of(type);
  return d && (*d == Direction::kToDaemon || *d == Direction::kCtlToDaemon);
}
// Whether a shim accepts `type` from the daemon.
inline bool shim_accepts(std::uint16_t type) { return direction_of(type) == Direction::kToShim; }
// Whether gpuctl accepts `type` from the daemon.
inline bool ctl_accepts(std::uint16_t type) { return direction_of(type) == Direction::kToCtl; }

// Why a header is rejected; kOk when it is acceptable.
enum class HeaderError { kOk, kBadMagic, kBadVersion, kBadType, kBadLength };

inline HeaderError check_header(const Header& h) {
  if (h.magic != kMagic) return HeaderError::kBadMagic;
  if (h.version != kProtocolVersion) return HeaderError::kBadVersion;
  const std::size_t size = payload_size(h.type);
  if (size == 0) return HeaderError::kBadType;
  if (h.type == static_cast<std::uint16_t>(MsgType::kListReply)) {
    if (h.length % size != 0 || h.length / size > kMaxListEntries) return HeaderError::kBadLength;
    return HeaderError::kOk;
  }
  if (h.length != size) return HeaderError::kBadLength;
  return HeaderError::kOk;
}

inline const char* header_error_name(HeaderError e) {
  switch (e) {
    case HeaderError::kOk: return "ok";
    case HeaderError::kBadMagic: return "bad magic";
    case HeaderError::kBadVersion: return "unsupported protocol version";
    case HeaderError::kBadType: return "unknown message type";
    case HeaderError::kBadLength: return "length does not match the type";
  }
  return "?";
}

// Serialises one message (header + fixed payload) into `out` (at least
// sizeof(Header) + sizeof(T) bytes); returns the number of bytes.
template <typename T>
inline std::size_t encode(MsgType type, const T& payload, unsigned char* out) {
  Header h{kMagic, kProtocolVersion, static_cast<std::uint16_t>(type),
           static_cast<std::uint32_t>(sizeof(T))};
  std::memcpy(out, &h, sizeof h);
  std::memcpy(out + sizeof h, &payload, sizeof(T));
  return sizeof h + sizeof(T);
}

inline constexpr std::size_t kMaxFixedMessage = sizeof(Header) + 96;

// The one frame decoder of a receiving end: the next frame at the start of
// `data` (n bytes). kNeedMore: not a whole frame yet (a header that is
// already known to be bad is reported at once, so a 2^32-1 length is never
// waited for); kFrame: `header`, `payload` (header.length bytes) and
// `frame_bytes` are set; kError: `error` says why (kBadType also for a type
// that `accepts` refuses, e.g. a daemon->shim type sent to the daemon).
// Pure (no I/O, no allocation): the daemon's read loop and the wire fuzzer
// (tests/shim/wire_fuzz.cc) call it.
enum class FrameStatus { kNeedMore, kFrame, kError };
struct Frame {
  Header header{};
  const unsigned char* payload = nullptr;
  std::size_t frame_bytes = 0;
  HeaderError error = HeaderError::kOk;
};
inline FrameStatus next_frame(const unsigned char* data, std::size_t n, bool (*accepts)(std::uint16_t),
                              Frame& f) {
  if (n < sizeof(Header)) return FrameStatus::kNeedMore;
  std::memcpy(&f.header, data, sizeof(Header));
  f.error = check_header(f.header);
  if (f.error == HeaderError::kOk && accepts != nullptr && !accepts(f.header.type)) f.error = HeaderError::kBadType;
  if (f.error != HeaderError::kOk) return FrameStatus::kError;
  if (n - sizeof(Header) < f.header.length) return FrameStatus::kNeedMore;
  f.payload = data + sizeof(Header);
  f.frame_bytes = sizeof(Header) + f.header.length;
  return FrameStatus::kFrame;
}

}  // namespace agentcg::gpu::proto
