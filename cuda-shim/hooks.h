// SPDX-License-Identifier: GPL-2.0-only
/*
 * The ONE list of CUDA driver symbols the shim hooks. It drives the exported
 * symbols (LD_PRELOAD), the dlsym interposition and cuGetProcAddress(_v2)
 * (shim.cc), so the three cannot drift apart (HAMi-core kept three lists by
 * hand).
 *
 * X(kind, symbol, base name for cuGetProcAddress, first CUDA version that
 *   resolves the base name to this symbol) for symbols without a
 *   per-thread-default-stream twin;
 * XP(kind, symbol, base, version, ptds twin) for symbols that have one (the
 *   twin has the same signature; cuGetProcAddress returns it when the flags
 *   ask for CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM).
 * kind: Gate (waits for the GPU lock), Launch (Gate + counted in the launch
 * window), Custom (hand-written in shim.cc).
 *
 * Versions follow cuda.h: the _v2 memory API since 3.2 (3020), cuLaunchKernel
 * and the unified cuMemcpy since 4.0, cooperative launch 9.0, graphs 10.0,
 * stream-ordered allocation 11.2, cuLaunchKernelEx 11.6 (11060),
 * cuGetProcAddress 11.3 and its _v2 12.5 (12050).
 */
#pragma once

#define AGENTCG_HOOKS(X, XP)                                                          \
  X(Custom, cuInit, "cuInit", 2000)                                                   \
  X(Custom, cuGetProcAddress, "cuGetProcAddress", 11030)                              \
  X(Custom, cuGetProcAddress_v2, "cuGetProcAddress", 12050)                           \
  X(Custom, cuDeviceGetCount, "cuDeviceGetCount", 2000)                               \
  X(Custom, cuDeviceGet, "cuDeviceGet", 2000)                                         \
  X(Custom, cuMemAlloc_v2, "cuMemAlloc", 3020)                                        \
  X(Custom, cuMemAllocPitch_v2, "cuMemAllocPitch", 3020)                              \
  X(Custom, cuMemAllocManaged, "cuMemAllocManaged", 6000)                             \
  XP(Custom, cuMemAllocAsync, "cuMemAllocAsync", 11020, cuMemAllocAsync_ptsz)         \
  XP(Custom, cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020,               \
     cuMemAllocFromPoolAsync_ptsz)                                                    \
  X(Custom, cuMemFree_v2, "cuMemFree", 3020)                                          \
  XP(Custom, cuMemFreeAsync, "cuMemFreeAsync", 11020, cuMemFreeAsync_ptsz)            \
  X(Custom, cuMemGetInfo_v2, "cuMemGetInfo", 3020)                                    \
  X(Custom, cuMemCreate, "cuMemCreate", 10020)                                        \
  X(Custom, cuMemRelease, "cuMemRelease", 10020)                                      \
  XP(Launch, cuLaunchKernel, "cuLaunchKernel", 4000, cuLaunchKernel_ptsz)             \
  XP(Launch, cuLaunchKernelEx, "cuLaunchKernelEx", 11060, cuLaunchKernelEx_ptsz)      \
  XP(Launch, cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel", 9000,            \
     cuLaunchCooperativeKernel_ptsz)                                                  \
  XP(Launch, cuGraphLaunch, "cuGraphLaunch", 10000, cuGraphLaunch_ptsz)               \
  XP(Gate, cuMemcpy, "cuMemcpy", 4000, cuMemcpy_ptds)                                 \
  XP(Gate, cuMemcpyAsync, "cuMemcpyAsync", 4000, cuMemcpyAsync_ptsz)                  \
  XP(Gate, cuMemcpyPeer, "cuMemcpyPeer", 4000, cuMemcpyPeer_ptds)                     \
  XP(Gate, cuMemcpyPeerAsync, "cuMemcpyPeerAsync", 4000, cuMemcpyPeerAsync_ptsz)      \
  XP(Gate, cuMemcpyHtoD_v2, "cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2_ptds)               \
  XP(Gate, cuMemcpyDtoH_v2, "cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2_ptds)               \
  XP(Gate, cuMemcpyDtoD_v2, "cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2_ptds)               \
  XP(Gate, cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2_ptsz) \
  XP(Gate, cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2_ptsz) \
  XP(Gate, cuMemcpyDtoDAsync_v2, "cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2_ptsz) \
  XP(Gate, cuMemcpy2D_v2, "cuMemcpy2D", 3020, cuMemcpy2D_v2_ptds)                     \
  XP(Gate, cuMemcpy2DAsync_v2, "cuMemcpy2DAsync", 3020, cuMemcpy2DAsync_v2_ptsz)      \
  XP(Gate, cuMemcpy3D_v2, "cuMemcpy3D", 3020, cuMemcpy3D_v2_ptds)                     \
  XP(Gate, cuMemcpy3DAsync_v2, "cuMemcpy3DAsync", 3020, cuMemcpy3DAsync_v2_ptsz)      \
  XP(Gate, cuMemsetD8_v2, "cuMemsetD8", 3020, cuMemsetD8_v2_ptds)                     \
  XP(Gate, cuMemsetD16_v2, "cuMemsetD16", 3020, cuMemsetD16_v2_ptds)                  \
  XP(Gate, cuMemsetD32_v2, "cuMemsetD32", 3020, cuMemsetD32_v2_ptds)                  \
  XP(Gate, cuMemsetD8Async, "cuMemsetD8Async", 3020, cuMemsetD8Async_ptsz)            \
  XP(Gate, cuMemsetD16Async, "cuMemsetD16Async", 3020, cuMemsetD16Async_ptsz)         \
  XP(Gate, cuMemsetD32Async, "cuMemsetD32Async", 3020, cuMemsetD32Async_ptsz)
