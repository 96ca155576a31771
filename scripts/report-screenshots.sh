#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The README's screenshots of report.html: runs a small comparison (the
# bundled fork-storm trace, eevdf/flatcg/agentcg/cfs over seeds 1-3, with
# plots), writes its report and photographs it with headless Chromium
# (Debian package `chromium`) into docs/img/report-{top,plots}.png.
# Usage: scripts/report-screenshots.sh [OUT_DIR]   (default out/screenshots)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/out/screenshots}
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "report-screenshots: chromium is not installed (apt-get install chromium)" >&2
  exit 77
fi
rm -rf "$out"
"$root/agentcg" compare "$root/traces/fork-storm.json" --policies eevdf,flatcg,agentcg,cfs --seeds 1-3 \
  --out "$out/fork-storm" --plots --quiet
(cd "$(dirname "$out")" && "$root/agentcg" report "$(basename "$out")" --quiet)  # no host path in the picture
mkdir -p "$root/docs/img"
shot() { # file width height
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
    --window-size="$2,$3" --screenshot="$1" "file://$out/report.html" >/dev/null 2>&1
}
shot "$root/docs/img/report-top.png" 1400 1100
echo "wrote $root/docs/img/report-top.png"
