/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The scheduler side of strategies (strategies design, core/include/agentcg/strategy.h):
 * two maps written only by agentcgroupd (live/agentcgroupd/extensions.cc,
 * found by name, so their presence is all the daemon needs) and read on the
 * hot path of bpf/agentcg.bpf.c:
 *   strategy_pid   tgid -> action (a PID rule: the seed's {priority,
 *                  execution_time, pid}, for every thread of the process)
 *   strategy_cgrp  cgroup id -> action
 * A PID rule wins over its cgroup's rule. No entry = the default behaviour,
 * so deleting a strategy restores it without detaching the scheduler.
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

static __always_inline const struct agentcg_strategy_action *agentcg_strategy_of_cgrp(u64 cgid)
{
	return bpf_map_lookup_elem(&strategy_cgrp, &cgid);
}

static __always_inline const struct agentcg_strategy_action *agentcg_strategy_of(struct task_struct *p,
										 u64 cgid)
{
	u32 tgid = p->tgid;
	const struct agentcg_strategy_action *a = bpf_map_lookup_elem(&strategy_pid, &tgid);

	return a ? a : agentcg_strategy_of_cgrp(cgid);
}

#endif /* AGENTCG_STRATEGY_MAPS_BPF_H */
