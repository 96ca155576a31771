#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# /init of the agentcg test VM (busybox). Mounts the pseudo file systems and
# cgroup v2 with the cpu, memory and pids controllers, prints the boot
# marker, runs /scenarios.sh with the scenarios named on the kernel command
# line (agentcg.scenarios=a,b,...), sends /out to the host when asked,
# prints the done marker and powers off.
# The host decides success from these markers, never from qemu's exit code.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
# fair.c's features as booted (HRTICK: run-vm.sh puts them in kernel.json)
mkdir -p /out && cat /sys/kernel/debug/sched/features > /out/sched_features.txt 2>/dev/null
# and its preemption model as booted, e.g. "none voluntary full (lazy)"
cat /sys/kernel/debug/sched/preempt > /out/sched_preempt.txt 2>/dev/null
# and the CPUs cpu0 shares its last-level cache with (a wakeup on a CPU of
# the same LLC is enqueued there directly, without an IPI: machine preempt)
cat /sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list > /out/llc_cpus.txt 2>/dev/null ||
  cat /sys/devices/system/cpu/cpu0/cache/index2/shared_cpu_list > /out/llc_cpus.txt 2>/dev/null
echo "+cpu +memory +pids +io" > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || \
  echo "+cpu +memory +pids" > /sys/fs/cgroup/cgroup.subtree_control
ip link set lo up 2>/dev/null
echo 1 > /proc/sys/kernel/bpf_stats_enabled 2>/dev/null
echo "AGENTCG-BOOTED kernel $(uname -r) cpus $(grep -c ^processor /proc/cpuinfo) sched_ext $(cat /sys/kernel/sched_ext/state 2>/dev/null || echo missing) clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)"
scen=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^agentcg.scenarios=//p')
sh /scenarios.sh "${scen:-all}"
rc=$?
# The clocksource at the end and the kernel's clock messages (TSC
# calibration, a watchdog marking the TSC unstable): a scenario's
# check-result prints this line with a failure. run-vm.sh boots with
# tsc=reliable: without it the watchdog, misled by TCG's delays, could mark
# the TSC unstable mid-run, and sched_ext tasks' usage_usec then ran ~2.8x
# their CPU time (Live, "A cpu.max failure in CI's sanitized boot").
echo "AGENTCG-CLOCK clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)" \
  "$(dmesg | grep -iE 'tsc:|unstable|Switched to clocksource|skew|Long readout' | tr '\n' ';' | tr -s ' ')"
# Ship /out to the host over the virtio-serial port named agentcg.out (only
# present when run-vm.sh was given an output directory): a tar stream.
for p in /sys/class/virtio-ports/*; do
  [ "$(cat "$p/name" 2>/dev/null)" = agentcg.out ] || continue
  tar -cf - -C /out . > "/dev/$(basename "$p")" && echo "AGENTCG-OUT $(du -sk /out | cut -f1) KiB"
done
echo "AGENTCG-DONE rc=$rc"
sync
poweroff -f
