/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Fixed-width types for core/ that work in three places: as C++ (the
 * simulator, the daemons), as C99, and under clang -target bpf with the
 * kernel's vmlinux.h (which already defines u8..u64, so it is used when
 * __VMLINUX_H__ is set) or with no system headers at all (the BPF-safety
 * check compiles core/ with only this file).
 */
#ifndef AGENTCG_TYPES_H
#define AGENTCG_TYPES_H

#if defined(__VMLINUX_H__)
/* u8..u64, s32, s64 and bool come from vmlinux.h */
#elif defined(__bpf__)
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef signed int s32;
typedef signed long long s64;
#ifndef __cplusplus
typedef _Bool bool;
#define true 1
#define false 0
#endif
#else
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
typedef int64_t s64;
#endif

/*
 * For a function that BPF must inline wherever it is called: a BPF
 * subprogram takes at most 5 arguments, and clang stops inlining a plain
 * `static inline` once it has several call sites.
 */
#define AGENTCG_ALWAYS_INLINE inline __attribute__((always_inline))

/*
 * The time from `then` to `now` (ns), 0 when `then` is the later one. A
 * live callback reads the clock once, at its start; meanwhile another CPU
 * may store a later timestamp into shared state (a cgroup's fork window,
 * its boost budget's refill time, a throttle's start) that this callback
 * then reads, and an unsigned `now - then` would wrap to ~2^64: a window
 * thought long past (its counts dropped), a budget refilled at once, a
 * throttled time of centuries. Every elapsed time between timestamps that
 * different CPUs may have taken goes through this; in the simulator's one
 * clock `then` is never later, and this is `now - then`.
 */
static AGENTCG_ALWAYS_INLINE u64 agentcg_elapsed(u64 now, u64 then)
{
	return (s64)(now - then) > 0 ? now - then : 0;
}

#endif /* AGENTCG_TYPES_H */
