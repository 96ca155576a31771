#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# agentcgroupd --check-config on every bad config fixture (and on a
# directory): each must exit 2 with "bad config: FILE:LINE: ..." on stderr,
# never abort (exit 134, which with Restart=on-failure crash-looped and left
# sched_ext off). The daemon's start-up and SIGHUP paths call the same
# load_file() inside the same catch-everything handlers (main.cc).
# usage: check_config.sh AGENTCGROUPD   (run from the source root)
set -u
daemon=$1
fail=0
for f in tests/data/bad-configs/*.yaml; do
  err=$("$daemon" --check-config --config "$f" 2>&1 >/dev/null)
  rc=$?
  first=${err%%$'\n'*}
  if [ "$rc" -ne 2 ] || [[ "$first" != "agentcgroupd: bad config: $f:"[0-9]* ]]; then
    echo "FAIL $f: exit $rc: $first"
    fail=1
  else
    echo "ok   $f: $first"
  fi
done
err=$("$daemon" --check-config --config tests/data 2>&1 >/dev/null)
rc=$?
if [ "$rc" -ne 2 ] || [[ "$err" != *"is a directory"* ]]; then
  echo "FAIL directory as config: exit $rc: $err"
  fail=1
else
  echo "ok   directory: $err"
fi
exit $fail
