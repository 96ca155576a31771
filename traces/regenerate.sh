#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Regenerates the bundled traces (traces/*.json) with the agentcg-sim
# binary: each with a fixed seed and the generator's default options.
# sim/trace/generate_test.cc (BundledTraces) fails when a committed file
# differs from what the generators produce, so run this after changing a
# generator and commit the result.
#   traces/regenerate.sh [PATH/TO/agentcg-sim]
# Without an argument the binary is looked for under build/.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
bin="${1:-}"
if [[ -z "$bin" ]]; then
  for c in "$root"/build/default/sim/agentcg-sim "$root"/build/*/sim/agentcg-sim; do
    if [[ -x "$c" ]]; then bin="$c"; break; fi
  done
fi
if [[ -z "$bin" || ! -x "$bin" ]]; then
  echo "regenerate.sh: agentcg-sim not found; build it (cmake --build build/default --target agentcg-sim) or pass its path" >&2
  exit 2
fi
# kind seed
while read -r kind seed; do
  "$bin" trace generate "$kind" --seed "$seed" -o "$here/$kind.json"
  "$bin" trace validate "$here/$kind.json"
done <<'LIST'
agent 1
fork-storm 1
io 1
hogs 1
mixed 1
LIST
