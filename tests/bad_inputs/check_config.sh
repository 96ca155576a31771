#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# agentcgroupd --check-config on every bad config fixture (and on a
# directory): each must exit 2 with "bad config: FILE:LINE: ..." on stderr,
# never abort (exit 134, which with Restart=on-failure crash-looped and left
# sched_ext off), and the same at start-up (below). The SIGHUP path calls the
# same load_file() inside the same catch-everything handler (main.cc; in the
# VM: live_vm_sighup_bad_configs).
# usage: check_config.sh AGENTCGROUPD [AGENTCG-GPUD]   (run from the source root)
set -u
daemon=$1
gpud=${2:-}
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
# Start-up (no --check-config) takes the same path: exit 2 before anything
# is attached. --mode none and a timeout keep a wrongly accepted fixture
# from attaching a scheduler to this machine or running on.
for f in tests/data/bad-configs/*.yaml; do
  err=$(timeout 20 "$daemon" --mode none --config "$f" 2>&1 >/dev/null)
  rc=$?
  first=${err%%$'\n'*}
  if [ "$rc" -ne 2 ] || [[ "$first" != "agentcgroupd: bad config: $f:"[0-9]* ]]; then
    echo "FAIL start-up with $f: exit $rc: $first"
    fail=1
  else
    echo "ok   start-up with $f"
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
# agentcg-gpud loads the same file with the same loader: exit 2 at start-up
# with "agentcg-gpud: FILE:LINE: ..." (its socket in a private folder).
if [ -n "$gpud" ]; then
  sock_dir=$(mktemp -d)
  for f in tests/data/bad-configs/*.yaml; do
    err=$(timeout 20 "$gpud" --config "$f" --socket "$sock_dir/gpud.sock" 2>&1 >/dev/null)
    rc=$?
    first=${err%%$'\n'*}
    if [ "$rc" -ne 2 ] || [[ "$first" != "agentcg-gpud: $f:"[0-9]* ]]; then
      echo "FAIL gpud start-up with $f: exit $rc: $first"
      fail=1
    else
      echo "ok   gpud start-up with $f"
    fi
  done
  rm -rf "$sock_dir"
fi
exit $fail
