// SPDX-License-Identifier: GPL-2.0-only
/*
 * The real CUDA driver entry points the shim itself calls, as one table of
 * function pointers typed from cuda.h (CUDA 13 names: the header maps
 * cuMemAlloc to cuMemAlloc_v2 and so on, so the table names the versioned
 * symbols the driver exports). The shim's logic (client.cc) only calls the
 * driver through a DriverTable, so unit tests give it a table of their own
 * functions (tests/shim/client_test.cc), and the LD_PRELOAD build fills it
 * from dlopen("libcuda.so.1") (shim.cc); the shim never links the driver.
 *
 * Invariant: load_driver_table() leaves an entry null when the driver lacks
 * the symbol; callers check `has_required()` before use.
 */
#pragma once

#include <cuda.h>

#include <cstdint>

namespace agentcg::shim {

// X(symbol, required)
#define AGENTCG_DRIVER_FUNCS(X)       \
  X(cuInit, true)                     \
  X(cuMemAllocManaged, true)          \
  X(cuMemAlloc_v2, false)             \
  X(cuMemFree_v2, true)               \
  X(cuMemGetInfo_v2, false)           \
  X(cuCtxGetCurrent, true)            \
  X(cuCtxSetCurrent, true)            \
  X(cuCtxSynchronize, true)           \
  X(cuCtxGetDevice, false)            \
  X(cuStreamSynchronize, false)       \
  X(cuDeviceGetCount, false)          \
  X(cuDeviceGet, false)               \
  X(cuDeviceTotalMem_v2, false)       \
  X(cuMemPrefetchAsync_v2, false)     \
  X(cuMemCreate, false)               \
  X(cuMemRelease, false)

struct DriverTable {
#define AGENTCG_X(sym, required) decltype(&::sym) sym = nullptr;
  AGENTCG_DRIVER_FUNCS(AGENTCG_X)
#undef AGENTCG_X

  bool has_required() const {
#define AGENTCG_X(sym, required) \
  if (required && sym == nullptr) return false;
    AGENTCG_DRIVER_FUNCS(AGENTCG_X)
#undef AGENTCG_X
    return true;
  }
};

// Fills `table` with lookup(handle, "symbol") for every entry; `lookup` is
// the real dlsym (the shim interposes dlsym itself).
using LookupFn = void* (*)(void* handle, const char* name);
void load_driver_table(void* handle, LookupFn lookup, DriverTable& table);

}  // namespace agentcg::shim
