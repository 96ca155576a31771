// SPDX-License-Identifier: GPL-2.0-only
/*
 * libagentcg-cuda.so: the LD_PRELOAD entry points. Everything here is symbol
 * plumbing; the scheduling logic is in client.cc.
 *
 * Three ways an application reaches the driver, all served from the one list
 * in hooks.h:
 *  1. direct calls to exported symbols (apps linked against libcuda.so.1):
 *     each hooked symbol is exported from this library as a trampoline that
 *     jumps to the hook instantiated for it (so one template serves every
 *     signature, typed by decltype from cuda.h; see "exported symbols");
 *  2. dlsym(handle, "cuXxx") (the CUDA runtime before 11.3 resolves the driver
 *     this way): dlsym itself is interposed, exported at both glibc versions
 *     (GLIBC_2.2.5 for binaries built before glibc 2.34 moved dlsym into libc,
 *     GLIBC_2.34 for newer ones; see glibc NEWS for 2.34);
 *  3. cuGetProcAddress / cuGetProcAddress_v2 (the CUDA runtime since 11.3 /
 *     12.5): the real driver resolves the symbol for the requested cudaVersion
 *     and flags; when the answer is a symbol we hook (the base name's entry
 *     with the highest first-version <= cudaVersion, and the per-thread twin
 *     when the flags ask for CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
 *     the real pointer is remembered in that variant's slot and our hook for
 *     that variant is returned, so the hook calls exactly what the driver
 *     would have given the caller.
 *
 * The real driver is dlopen("libcuda.so.1")'d at first use, never linked.
 * Invariants: no exit()/abort(); no logging on hot paths; when the driver
 * lacks a symbol the shim needs, hooks pass work through unscheduled.
 */
#include <cuda.h>
#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "cuda-shim/client.h"
#include "cuda-shim/driver_table.h"
#include "cuda-shim/hooks.h"

// cuda.h (CUDA 13) maps cuGetProcAddress to cuGetProcAddress_v2 by macro and
// no longer declares the 4-argument original that older runtimes resolve.
#undef cuGetProcAddress
extern "C" CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                     cuuint64_t flags);

#define AGENTCG_VISIBLE __attribute__((visibility("default")))

// Code that runs before the sanitizers' runtime has initialised in a process
// this library is preloaded into: libasan resolves its interceptors with
// dlsym() while it initialises, and dlsym is ours. Instrumented code would
// read shadow memory that is not mapped yet (the sanitize preset's shim
// tests crashed there), so that path is built without instrumentation.
#if defined(__SANITIZE_ADDRESS__)
#define AGENTCG_BEFORE_SANITIZER_INIT __attribute__((no_sanitize("address", "undefined")))
#else
#define AGENTCG_BEFORE_SANITIZER_INIT
#endif

namespace agentcg::shim {
namespace {

enum HookId : int {
#define AGENTCG_X(kind, sym, base, ver) kHook_##sym,
#define AGENTCG_XP(kind, sym, base, ver, ptds) kHook_##sym,
  AGENTCG_HOOKS(AGENTCG_X, AGENTCG_XP)
#undef AGENTCG_X
#undef AGENTCG_XP
  kHookCount
};

struct HookInfo {
  const char* symbol;
  const char* ptds_symbol;  // nullptr when there is no per-thread twin
  const char* base;
  int first_version;
};

constexpr HookInfo kHooks[kHookCount] = {
#define AGENTCG_X(kind, sym, base, ver) {#sym, nullptr, base, ver},
#define AGENTCG_XP(kind, sym, base, ver, ptds) {#sym, #ptds, base, ver},
    AGENTCG_HOOKS(AGENTCG_X, AGENTCG_XP)
#undef AGENTCG_X
#undef AGENTCG_XP
};

using DlsymFn = void* (*)(void*, const char*);

AGENTCG_BEFORE_SANITIZER_INIT DlsymFn find_real_dlsym() {
  // dlvsym is not interposed, so this cannot recurse into our dlsym.
  void* p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (p == nullptr) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  return reinterpret_cast<DlsymFn>(p);
}

AGENTCG_BEFORE_SANITIZER_INIT DlsymFn real_dlsym() {
  static const DlsymFn fn = find_real_dlsym();
  return fn;
}

void* driver_handle() {
  static void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  return h;
}

// Real pointers per hook and variant (0 = legacy stream, 1 = per-thread).
std::atomic<void*> g_real[kHookCount][2];

void* lookup_real(int id, bool ptds) {
  void* p = g_real[id][ptds].load(std::memory_order_acquire);
  if (p != nullptr) return p;
  void* h = driver_handle();
  DlsymFn ds = real_dlsym();
  if (h == nullptr || ds == nullptr) return nullptr;
  const char* name = ptds ? kHooks[id].ptds_symbol : kHooks[id].symbol;
  if (name == nullptr) return nullptr;
  p = ds(h, name);
  if (p != nullptr) g_real[id][ptds].store(p, std::memory_order_release);
  return p;
}

const DriverTable& driver() {
  static DriverTable* t = [] {
    auto* table = new DriverTable();
    if (void* h = driver_handle(); h != nullptr && real_dlsym() != nullptr) {
      load_driver_table(h, real_dlsym(), *table);
    }
    return table;
  }();
  return *t;
}

// The process's client, or nullptr when the driver lacks what scheduling
// needs (then hooks pass through). Never destroyed: it must outlive every
// application thread, including those still running at exit.
Client* client() {
  static Client* c = [] () -> Client* {
    const DriverTable& d = driver();
    if (!d.has_required()) return nullptr;
    return new Client(d, options_from_env());
  }();
  return c;
}

template <bool IsLaunch, typename... A>
CUresult gated_call(CUresult (*fn)(A...), A... a) {
  if (fn == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  Client* c = client();
  if (c == nullptr) return fn(a...);
  c->before_work();
  CUresult r = fn(a...);
  c->after_work(IsLaunch);
  return r;
}

template <int Id, bool Ptds, bool IsLaunch, typename Fn>
struct Gated;
template <int Id, bool Ptds, bool IsLaunch, typename... A>
struct Gated<Id, Ptds, IsLaunch, CUresult (*)(A...)> {
  static CUresult call(A... a) {
    auto fn = reinterpret_cast<CUresult (*)(A...)>(lookup_real(Id, Ptds));
    return gated_call<IsLaunch, A...>(fn, a...);
  }
};

template <int Id, bool Ptds>
struct Custom;

void* hook_for(int id, bool ptds);

// True when `p` points into this library (our trampolines or hooks): such a
// pointer must never be remembered as the driver's.
bool is_ours(void* p) {
  static void* self_base = [] {
    Dl_info info{};
    return dladdr(reinterpret_cast<void*>(&is_ours), &info) != 0 ? info.dli_fbase : nullptr;
  }();
  Dl_info info{};
  return p != nullptr && self_base != nullptr && dladdr(p, &info) != 0 && info.dli_fbase == self_base;
}

// Replaces a resolved driver pointer by our hook when `symbol` at
// `cuda_version` is one we hook (see the header comment, point 3).
void substitute(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags) {
  if (symbol == nullptr || pfn == nullptr || *pfn == nullptr) return;
  int best = -1;
  for (int i = 0; i < kHookCount; ++i) {
    if (std::strcmp(kHooks[i].base, symbol) != 0 || kHooks[i].first_version > cuda_version) continue;
    if (best < 0 || kHooks[i].first_version > kHooks[best].first_version) best = i;
  }
  if (best < 0) return;
  const bool ptds = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0 &&
                    kHooks[best].ptds_symbol != nullptr;
  void* hook = hook_for(best, ptds);
  if (!is_ours(*pfn)) g_real[best][ptds].store(*pfn, std::memory_order_release);
  *pfn = hook;
}

template <bool P>
struct Custom<kHook_cuInit, P> {
  static CUresult call(unsigned int flags) {
    auto fn = reinterpret_cast<decltype(&::cuInit)>(lookup_real(kHook_cuInit, false));
    if (fn == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(flags);
    if (r == CUDA_SUCCESS) {
      if (Client* c = client()) c->ensure_started();
    }
    return r;
  }
};

// Live placement (client.h, placed_device()): the process sees the GPU the
// daemon chose as its only device, ordinal 0, as under CUDA_VISIBLE_DEVICES.
template <bool P>
struct Custom<kHook_cuDeviceGetCount, P> {
  static CUresult call(int* count) {
    auto fn = reinterpret_cast<decltype(&::cuDeviceGetCount)>(lookup_real(kHook_cuDeviceGetCount, false));
    if (fn == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = fn(count);
    if (r == CUDA_SUCCESS && count != nullptr) {
      if (Client* c = client(); c && c->placed_device()) *count = 1;
    }
    return r;
  }
};

template <bool P>
struct Custom<kHook_cuDeviceGet, P> {
  static CUresult call(CUdevice* device, int ordinal) {
    auto fn = reinterpret_cast<decltype(&::cuDeviceGet)>(lookup_real(kHook_cuDeviceGet, false));
    if (fn == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
    if (Client* c = client()) {
      if (auto placed = c->placed_device()) {
        if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
        return fn(device, static_cast<int>(*placed));
      }
    }
    return fn(device, ordinal);
  }
};

template <bool P>
struct Custom<kHook_cuGetProcAddress, P> {
  static CUresult call(const char* symbol, void** pfn, int ver, cuuint64_t flags) {
    auto fn = reinterpret_cast<CUresult (*)(const char*, void**, int, cuuint64_t)>(
        lookup_real(kHook_cuGetProcAddress, false));
    if (fn == nullptr) return CUDA_ERROR_NOT_FOUND;
    CUresult r = fn(symbol, pfn, ver, flags);
    if (r == CUDA_SUCCESS) substitute(symbol, pfn, ver, flags);
    return r;
  }
};

template <bool P>
struct Custom<kHook_cuGetProcAddress_v2, P> {
  static CUresult call(const char* symbol, void** pfn, int ver, cuuint64_t flags,
                       CUdriverProcAddressQueryResult* status) {
    auto fn = reinterpret_cast<decltype(&::cuGetProcAddress_v2)>(
        lookup_real(kHook_cuGetProcAddress_v2, false));
    if (fn == nullptr) return CUDA_ERROR_NOT_FOUND;
    CUresult r = fn(symbol, pfn, ver, flags, status);
    if (r == CUDA_SUCCESS) substitute(symbol, pfn, ver, flags);
    return r;
  }
};

template <bool P>
struct Custom<kHook_cuMemAlloc_v2, P> {
  static CUresult call(CUdeviceptr* dptr, size_t bytes) {
    if (Client* c = client()) return c->mem_alloc(dptr, bytes);
    auto fn = reinterpret_cast<decltype(&::cuMemAlloc_v2)>(lookup_real(kHook_cuMemAlloc_v2, P));
    return fn ? fn(dptr, bytes) : CUDA_ERROR_NOT_INITIALIZED;
  }
};

template <bool P>
struct Custom<kHook_cuMemAllocPitch_v2, P> {
  static CUresult call(CUdeviceptr* dptr, size_t* pitch, size_t w, size_t h, unsigned int e) {
    if (Client* c = client()) return c->mem_alloc_pitch(dptr, pitch, w, h, e);
    auto fn = reinterpret_cast<decltype(&::cuMemAllocPitch_v2)>(
        lookup_real(kHook_cuMemAllocPitch_v2, P));
    return fn ? fn(dptr, pitch, w, h, e) : CUDA_ERROR_NOT_INITIALIZED;
  }
};

template <bool P>
struct Custom<kHook_cuMemAllocManaged, P> {
  static CUresult call(CUdeviceptr* dptr, size_t bytes, unsigned int flags) {
    if (Client* c = client()) return c->mem_alloc_managed(dptr, bytes, flags);
    auto fn = reinterpret_cast<decltype(&::cuMemAllocManaged)>(
        lookup_real(kHook_cuMemAllocManaged, P));
    return fn ? fn(dptr, bytes, flags) : CUDA_ERROR_NOT_INITIALIZED;
  }
};

// Stream-ordered allocations become ordinary managed allocations (available
// at once, which is a valid schedule of the stream order); the pool is not
// used, so pool attributes and limits do not apply (cuda-shim/README.md).
template <bool P>
struct Custom<kHook_cuMemAllocAsync, P> {
  static CUresult call(CUdeviceptr* dptr, size_t bytes, CUstream stream) {
    if (Client* c = client()) return c->mem_alloc(dptr, bytes);
    auto fn = reinterpret_cast<decltype(&::cuMemAllocAsync)>(lookup_real(kHook_cuMemAllocAsync, P));
    return fn ? fn(dptr, bytes, stream) : CUDA_ERROR_NOT_INITIALIZED;
  }
};

template <bool P>
struct Custom<kHook_cuMemAllocFromPoolAsync, P> {
  static CUresult call(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool, CUstream stream) {
    if (Client* c = client()) return c->mem_alloc(dptr, bytes);
    auto fn = reinterpret_cast<decltype(&::cuMemAllocFromPoolAsync)>(
        lookup_real(kHook_cuMemAllocFromPoolAsync, P));
    return fn ? fn(dptr, bytes, pool, stream) : CUDA_ERROR_NOT_INITIALIZED;
  }
};

template <bool P>
struct Custom<kHook_cuMemFree_v2, P> {
  static CUresult call(CUdeviceptr dptr) {
    if (Client* c = client()) {
      if (auto r = c->mem_free(dptr, nullptr, false)) return *r;
    }
    auto fn = reinterpret_cast<decltype(&::cuMemFree_v2)>(lookup_real(kHook_cuMemFree_v2, P));
    return fn ? fn(dptr) : CUDA_ERROR_NOT_INITIALIZED;
  }
};

template <bool P>
struct Custom<kHook_cuMemFreeAsync, P> {
  static CUresult call(CUdeviceptr dptr, CUstream stream) {
    if (Client* c = client()) {
      if (auto r = c->mem_free(dptr, stream, true)) return *r;
    }
    auto fn = reinterpret_cast<decltype(&::cuMemFreeAsync)>(lookup_real(kHook_cuMemFreeAsync, P));
    return fn ? fn(dptr, stream) : CUDA_ERROR_NOT_INITIALIZED;
  }
};

template <bool P>
struct Custom<kHook_cuMemGetInfo_v2, P> {
  static CUresult call(size_t* free_bytes, size_t* total_bytes) {
    if (Client* c = client()) return c->mem_get_info(free_bytes, total_bytes);
    auto fn = reinterpret_cast<decltype(&::cuMemGetInfo_v2)>(lookup_real(kHook_cuMemGetInfo_v2, P));
    return fn ? fn(free_bytes, total_bytes) : CUDA_ERROR_NOT_INITIALIZED;
  }
};

template <bool P>
struct Custom<kHook_cuMemCreate, P> {
  static CUresult call(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                       unsigned long long flags) {
    if (Client* c = client()) return c->vmm_create(handle, size, prop, flags);
    auto fn = reinterpret_cast<decltype(&::cuMemCreate)>(lookup_real(kHook_cuMemCreate, P));
    return fn ? fn(handle, size, prop, flags) : CUDA_ERROR_NOT_INITIALIZED;
  }
};

template <bool P>
struct Custom<kHook_cuMemRelease, P> {
  static CUresult call(CUmemGenericAllocationHandle handle) {
    if (Client* c = client()) {
      if (auto r = c->vmm_release(handle)) return *r;
    }
    auto fn = reinterpret_cast<decltype(&::cuMemRelease)>(lookup_real(kHook_cuMemRelease, P));
    return fn ? fn(handle) : CUDA_ERROR_NOT_INITIALIZED;
  }
};

#define AGENTCG_IMPL_Custom(sym, P) &Custom<kHook_##sym, P>::call
#define AGENTCG_IMPL_Gate(sym, P) &Gated<kHook_##sym, P, false, decltype(&::sym)>::call
#define AGENTCG_IMPL_Launch(sym, P) &Gated<kHook_##sym, P, true, decltype(&::sym)>::call


// Type check: every hook has exactly the driver's signature.
#define AGENTCG_X(kind, sym, base, ver)                                             \
  static_assert(std::is_same_v<decltype(AGENTCG_IMPL_##kind(sym, false)), decltype(&::sym)>, \
                #sym " hook signature differs from cuda.h");
#define AGENTCG_XP AGENTCG_X_P
#define AGENTCG_X_P(kind, sym, base, ver, ptds) AGENTCG_X(kind, sym, base, ver)
AGENTCG_HOOKS(AGENTCG_X, AGENTCG_XP)
#undef AGENTCG_X
#undef AGENTCG_XP
#undef AGENTCG_X_P

void* hook_for(int id, bool ptds) {
  switch (id) {
#define AGENTCG_X(kind, sym, base, ver) \
  case kHook_##sym:                     \
    return reinterpret_cast<void*>(AGENTCG_IMPL_##kind(sym, false));
#define AGENTCG_XP(kind, sym, base, ver, ptds_sym)                             \
  case kHook_##sym:                                                           \
    return ptds ? reinterpret_cast<void*>(AGENTCG_IMPL_##kind(sym, true))     \
                : reinterpret_cast<void*>(AGENTCG_IMPL_##kind(sym, false));
    AGENTCG_HOOKS(AGENTCG_X, AGENTCG_XP)
#undef AGENTCG_X
#undef AGENTCG_XP
  }
  return nullptr;
}

// dlsym interposition: a hooked name resolves to our hook; the real answer is
// remembered as that variant's driver pointer. Other names (all that
// libasan asks for while it initialises) take only uninstrumented code.
void* interpose_hooked_dlsym(const char* name, void* real);

AGENTCG_BEFORE_SANITIZER_INIT void* interpose_dlsym(void* handle, const char* name) {
  DlsymFn ds = real_dlsym();
  if (ds == nullptr) return nullptr;
  void* real = ds(handle, name);
  if (real == nullptr || name == nullptr || name[0] != 'c' || name[1] != 'u') return real;
  return interpose_hooked_dlsym(name, real);
}

void* interpose_hooked_dlsym(const char* name, void* real) {
  for (int i = 0; i < kHookCount; ++i) {
    bool ptds;
    if (std::strcmp(kHooks[i].symbol, name) == 0) {
      ptds = false;
    } else if (kHooks[i].ptds_symbol != nullptr && std::strcmp(kHooks[i].ptds_symbol, name) == 0) {
      ptds = true;
    } else {
      continue;
    }
    void* hook = hook_for(i, ptds);
    // RTLD_DEFAULT finds our own export (a trampoline to the hook); the
    // driver pointer then comes from libcuda.so.1 itself in lookup_real().
    if (!is_ours(real)) g_real[i][ptds].store(real, std::memory_order_release);
    return hook;
  }
  return real;
}

}  // namespace
}  // namespace agentcg::shim

// ---- exported symbols ----------------------------------------------------
//
// Each hooked symbol is exported as a two-instruction trampoline that jumps
// through a read-only pointer to the hook instantiated for it. The pointer
// is a constant initialiser (a RELATIVE relocation, applied before any code
// of ours or of others runs), so unlike GNU ifuncs there is no resolver that
// ld.so might have to call before this library is relocated (glibc prints
// "Relink ... for IFUNC symbol" and calls it anyway when a library loaded
// before us, such as a directly linked libcuda.so.1, refers to the symbol).

#if defined(__x86_64__)
#define AGENTCG_TRAMPOLINE(name)                                      \
  __asm__(".text\n.globl " #name "\n.type " #name ",@function\n"     \
          ".p2align 4\n" #name ":\n\tendbr64\n"                        \
          "\tjmp *agentcg_ptr_" #name "(%rip)\n"                       \
          ".size " #name ", .-" #name "\n");
#elif defined(__aarch64__)
#define AGENTCG_TRAMPOLINE(name)                                      \
  __asm__(".text\n.globl " #name "\n.type " #name ",%function\n"     \
          ".p2align 4\n" #name ":\n\tbti c\n"                          \
          "\tadrp x16, agentcg_ptr_" #name "\n"                        \
          "\tldr x16, [x16, :lo12:agentcg_ptr_" #name "]\n"            \
          "\tbr x16\n.size " #name ", .-" #name "\n");
#else
#error "libagentcg-cuda.so: add a trampoline for this architecture"
#endif

using namespace agentcg::shim;  // the hooks live in its anonymous namespace

extern "C" {

#define AGENTCG_EXPORT(kind, sym, P, name)                                        \
  extern __attribute__((visibility("hidden"))) decltype(&::sym) const agentcg_ptr_##name; \
  __attribute__((used)) decltype(&::sym) const agentcg_ptr_##name =                       \
      AGENTCG_IMPL_##kind(sym, P);                                                \
  AGENTCG_TRAMPOLINE(name)
#define AGENTCG_X(kind, sym, base, ver) AGENTCG_EXPORT(kind, sym, false, sym)
#define AGENTCG_XP(kind, sym, base, ver, ptds) \
  AGENTCG_EXPORT(kind, sym, false, sym)        \
  AGENTCG_EXPORT(kind, sym, true, ptds)
AGENTCG_HOOKS(AGENTCG_X, AGENTCG_XP)
#undef AGENTCG_X
#undef AGENTCG_XP

// Both glibc versions of dlsym; the version script declares the nodes.
AGENTCG_VISIBLE AGENTCG_BEFORE_SANITIZER_INIT void* agentcg_dlsym_234(void* handle, const char* name) {
  return agentcg::shim::interpose_dlsym(handle, name);
}
AGENTCG_VISIBLE AGENTCG_BEFORE_SANITIZER_INIT void* agentcg_dlsym_225(void* handle, const char* name) {
  return agentcg::shim::interpose_dlsym(handle, name);
}
__asm__(".symver agentcg_dlsym_234, dlsym@@GLIBC_2.34");
__asm__(".symver agentcg_dlsym_225, dlsym@GLIBC_2.2.5");

}  // extern "C"
