#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# One CTest case per scenario: reads the serial log written by run-vm.sh
# (the `live_vm_boot` fixture) and reports the scenario's verdict.
# Exit 0 PASS, 1 FAIL, 77 SKIP (the boot was skipped: the reason is printed).
# Usage: check-result.sh LOG SCENARIO
log=$1 name=$2
[ -f "$log" ] || { echo "SKIP: no VM log $log (the live_vm_boot fixture did not run)"; exit 77; }
if grep -q '^SKIP:' "$log"; then grep '^SKIP:' "$log"; exit 77; fi
grep "^AGENTCG-DATA $name " "$log"
line=$(grep "^AGENTCG-RESULT $name " "$log" | tail -n1)
[ -n "$line" ] || { echo "FAIL: no result for scenario $name in $log"; exit 1; }
echo "$line"
case "$line" in
  "AGENTCG-RESULT $name PASS"*) exit 0 ;;
  *) # the boot's context (kernel, clocksource, the kernel's TSC and
     # clocksource watchdog messages): what a CI report of a failure
     # otherwise lacks
     grep -E '^AGENTCG-(BOOTED|CLOCK)' "$log"
     exit 1 ;;
esac
