#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Install the Debian packages for the named groups (see scripts/packages.sh),
# idempotently and non-interactively. Skips apt entirely when everything is
# already installed, so repeated runs cost nothing and work offline.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/packages.sh"

want=()
for group in "${@:-build}"; do
  var="AGENTCG_PKGS_${group}"
  if [ -z "${!var+x}" ]; then
    echo "setup.sh: unknown package group '$group' (expected: build python live gpu fuzz)" >&2
    exit 2
  fi
  for p in ${!var}; do want+=("$p"); done
done

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup.sh: installing ${#missing[@]} Debian package(s): ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
