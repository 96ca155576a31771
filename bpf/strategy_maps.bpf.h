/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The scheduler side of strategies (strategies design, core/include/agentcg/strategy.h):
 * two maps written only by agentcgroupd (live/agentcgroupd/extensions.cc,
 * found by name, so their presence is all the daemon needs) and read on the
 * hot path of bpf/agentcg.bpf.c:
 *   strategy_pid   tgid -> action (a PID rule: the seed's {priority,
 *                  execution_time, pid}, for every thread of the process)
 *   strategy_cgrp  cgroup id -> action
 *   strategy_count [0] = the number of entries in the two maps, written by
 *                  the daemon after each apply: while it is 0 the hot
 *                  path does no hash lookup at all (an array lookup with a
 *                  constant key is inlined by the verifier: no helper call)
 * A PID rule wins over its cgroup's rule. No entry = the default behaviour,
 * so deleting a strategy restores it without detaching the scheduler. A
 * count that lags the maps for an instant only delays a rule by one
 * callback (0: the rule is not looked up yet; > 0: a lookup misses).
 * Included by bpf/agentcg.bpf.c after vmlinux.h and the BPF helpers.
 *
 * Invariants: the daemon never writes the scheduler's own state: these
 * maps are the only channel (as cgrp_ctl for mem_penalty), so there is no
 * read-modify-write race with the scheduler.
 */
#ifndef AGENTCG_STRATEGY_MAPS_BPF_H
#define AGENTCG_STRATEGY_MAPS_BPF_H

#include "agentcg/strategy.h"

#define AGENTCG_STRATEGY_MAX_PIDS 16384

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, AGENTCG_STRATEGY_MAX_PIDS);
	__type(key, u32);
	__type(value, struct agentcg_strategy_action);
} strategy_pid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, u64);
	__type(value, struct agentcg_strategy_action);
} strategy_cgrp SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} strategy_count SEC(".maps");

/* Whether any strategy entry exists (see strategy_count above). */
static __always_inline bool agentcg_strategies_set(void)
{
	u32 zero = 0;
	const u32 *n = bpf_map_lookup_elem(&strategy_count, &zero);

	return n && *n;
}

static __always_inline const struct agentcg_strategy_action *agentcg_strategy_of_cgrp(u64 cgid)
{
	if (!agentcg_strategies_set())
		return NULL;
	return bpf_map_lookup_elem(&strategy_cgrp, &cgid);
}

static __always_inline const struct agentcg_strategy_action *agentcg_strategy_of(struct task_struct *p,
										 u64 cgid)
{
	u32 tgid = p->tgid;
	const struct agentcg_strategy_action *a;

	if (!agentcg_strategies_set())
		return NULL;
	a = bpf_map_lookup_elem(&strategy_pid, &tgid);
	return a ? a : bpf_map_lookup_elem(&strategy_cgrp, &cgid);
}

#endif /* AGENTCG_STRATEGY_MAPS_BPF_H */
