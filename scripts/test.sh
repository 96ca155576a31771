#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The test command: installs what is missing, builds everything with
# warnings as errors (preset "ci"), and runs every test through CTest
# (unit, python, shim/gpud, live VM tests; tests that need missing hardware
# report SKIP with the reason). Extra arguments go to ctest, e.g. -L unit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
./scripts/setup.sh build python live gpu
if [ ! -f build/ci/build.ninja ]; then
  cmake --preset ci
fi
cmake --build build/ci -j "$(nproc)"
ctest --preset ci -j "$(nproc)" "$@"
