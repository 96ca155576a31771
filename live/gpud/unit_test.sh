#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Checks the configured agentcg-gpud.service: `systemd-analyze verify`
# accepts it and `systemd-analyze security` rates its exposure at most 4.
# The ExecStart path is pointed at the built binary (verify checks that it
# exists). Exit 0 pass, 1 fail, 77 skip (no systemd-analyze).
# Usage: unit_test.sh CONFIGURED_UNIT GPUD_BINARY   (CTest: gpud_unit_verify)
set -u
unit=$1 bin=$2
command -v systemd-analyze >/dev/null 2>&1 || { echo "SKIP: systemd-analyze not installed"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
sed "s#^ExecStart=[^ ]*agentcg-gpud#ExecStart=$bin#" "$unit" > "$dir/agentcg-gpud.service"
if ! systemd-analyze verify "$dir/agentcg-gpud.service"; then
  echo "FAIL: systemd-analyze verify"; exit 1
fi
out=$(systemd-analyze security --offline=yes "$dir/agentcg-gpud.service" 2>&1)
level=$(printf '%s\n' "$out" | sed -n 's/.*Overall exposure level for agentcg-gpud.service: \([0-9.]*\).*/\1/p')
[ -n "$level" ] || { printf '%s\n' "$out" | tail -5; echo "FAIL: no exposure level"; exit 1; }
echo "exposure $level"
awk -v l="$level" 'BEGIN { exit !(l <= 4.0) }' || { echo "FAIL: exposure $level > 4"; exit 1; }
echo PASS
