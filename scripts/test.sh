#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The test command: installs what is missing, builds everything with
# warnings as errors (preset "ci"), and runs every test through CTest
# (unit, python, shim/gpud, live VM tests; tests that need missing hardware
# report SKIP with the reason). Extra arguments go to ctest, e.g. -L unit.
#
# Then, when no extra arguments were given, the sanitizer stage: builds the
# "sanitize" preset (gcc ASan + UBSan, every finding fatal) and runs every
# test under it (ctest --preset sanitize); in the VM, its own sanitized
# daemons run the functional scenarios (live/vm/CMakeLists.txt). The environment
# variable AGENTCG_SELFTEST_SANITIZE=0 turns that stage off, =1 forces it
# on even with extra ctest arguments (they then go to both runs).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
sanitize=${AGENTCG_SELFTEST_SANITIZE:-}
if [ -z "$sanitize" ]; then
  if [ $# -eq 0 ]; then sanitize=1; else sanitize=0; fi
fi
case "$sanitize" in
  0|1) ;;
  *) echo "test.sh: AGENTCG_SELFTEST_SANITIZE must be 0 or 1, not '$sanitize'" >&2; exit 2 ;;
esac
./scripts/setup.sh build python live gpu
if [ ! -f build/ci/build.ninja ]; then
  cmake --preset ci
fi
cmake --build build/ci -j "$(nproc)"
ctest --preset ci -j "$(nproc)" "$@"
if [ "$sanitize" = 1 ]; then
  echo "test.sh: sanitizer stage (preset sanitize; AGENTCG_SELFTEST_SANITIZE=0 skips it)" >&2
  # configure every time: a build dir from before the preset changed keeps
  # stale cache values otherwise (cheap when nothing changed)
  cmake --preset sanitize >/dev/null
  cmake --build build/sanitize -j "$(nproc)"
  ctest --preset sanitize -j "$(nproc)" "$@"
fi
