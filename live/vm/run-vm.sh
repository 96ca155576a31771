#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Boots the sched_ext kernel under qemu (software emulation) with an
# initramfs holding the project's binaries, runs the guest scenarios, and
# leaves the serial console log at LOG. Success is decided from the guest's
# markers (AGENTCG-BOOTED ... AGENTCG-DONE), never from qemu's exit code;
# a boot that prints no AGENTCG-BOOTED within the timeout is retried once.
#
# Usage: run-vm.sh BUILD_DIR LOG [SCENARIOS] [TIMEOUT_S]
#   BUILD_DIR  the CMake build dir with live/agentcgroupd/agentcgroupd and
#              live/player/agentcg-work
#   SCENARIOS  comma list for guest/scenarios.sh (default all)
# Exit: 0 the guest ran to AGENTCG-DONE; 77 SKIP (qemu, kernel or binaries
# cannot be obtained; the reason is printed and written to LOG); 1 failure.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$1 log=$2 scen=${3:-all} tmo=${4:-1500}
mkdir -p "$(dirname "$log")"

skip() { echo "SKIP: $*" | tee "$log"; exit 77; }

qemu=$(command -v qemu-system-x86_64 || true)
[ -n "$qemu" ] || skip "qemu-system-x86_64 not installed (scripts/setup.sh live)"
command -v busybox >/dev/null || skip "busybox not installed (scripts/setup.sh live)"
kdir=$("$src/scripts/fetch-kernel.sh" 2>/tmp/agentcg-fetch-kernel.$$) ||
  skip "cannot obtain a sched_ext kernel: $(tail -n1 /tmp/agentcg-fetch-kernel.$$)"
rm -f /tmp/agentcg-fetch-kernel.$$
daemon=$build/live/agentcgroupd/agentcgroupd
work=$build/live/player/agentcg-work
[ -x "$daemon" ] || skip "$daemon not built (live backend disabled? see cmake's 'agentcg live backend' line)"
[ -x "$work" ] || skip "$work not built"

wd=$(mktemp -d); trap 'rm -rf "$wd"' EXIT
extras=(-- "$src/live/agentcgroupd/config.yaml=/etc/agentcg/config.yaml")
for t in "$src"/traces/*.json; do [ -e "$t" ] && extras+=("$t=/traces/$(basename "$t")"); done
[ -x "$build/live/player/agentcg-player" ] && set -- "$build/live/player/agentcg-player" || set --
[ -e "$here/guest/live_compare_guest.sh" ] && extras+=("$here/guest/live_compare_guest.sh=/live_compare_guest.sh")
"$here/mkinitramfs.sh" "$wd/initrd.cpio.gz" "$daemon" "$work" "$@" "${extras[@]}" || skip "cannot build the initramfs"

boot() {
  timeout --kill-after=10 "$tmo" "$qemu" -accel tcg,thread=single -m 2G -smp 2 -nographic \
    -no-reboot -kernel "$kdir/vmlinuz" -initrd "$wd/initrd.cpio.gz" \
    -append "console=ttyS0 panic=-1 quiet agentcg.scenarios=$scen" < /dev/null > "$log" 2>&1
}
for attempt in 1 2; do
  echo "run-vm: boot $attempt: kernel $(cat "$kdir/version"), scenarios $scen, timeout ${tmo}s" >&2
  boot
  tr -d '\r' < "$log" > "$log.tmp" && mv "$log.tmp" "$log"
  if grep -q '^AGENTCG-DONE' "$log"; then
    grep -E '^AGENTCG-(RESULT|BOOTED)' "$log" >&2
    exit 0
  fi
  if grep -q '^AGENTCG-BOOTED' "$log"; then
    echo "run-vm: the guest booted but did not finish (timeout ${tmo}s?); see $log" >&2
    exit 1
  fi
  echo "run-vm: boot $attempt failed (no AGENTCG-BOOTED marker); $( [ $attempt = 1 ] && echo retrying)" >&2
  tail -n 20 "$log" >&2
done
exit 1
