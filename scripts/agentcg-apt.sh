#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Private apt configuration for fetching packages of another Debian suite
# (trixie-backports kernels, bookworm-backports bpftool/libbpf) WITHOUT
# touching /etc/apt. Sourced by fetch-kernel.sh and fetch-bpf-tools.sh.
#
# The archive's URIs and Signed-By are read from the machine's own
# /etc/apt/sources.list.d/debian.sources (the first stanza), so no host
# name is written into the repository (see docs/sources.md, "Live VM").
#
# Usage: agentcg_apt_init DIR SUITE   then   agentcg_apt get|cache ARGS...
set -euo pipefail

agentcg_apt_init() {
  local dir=$1 suite=$2 src=${AGENTCG_APT_SOURCES:-/etc/apt/sources.list.d/debian.sources}
  local uris signed
  [ -r "$src" ] || { echo "agentcg-apt: cannot read $src (needed for the archive's URIs)" >&2; return 1; }
  uris=$(awk '/^URIs:/{print $2; exit}' "$src")
  signed=$(awk '/^Signed-By:/{print $2; exit}' "$src")
  [ -n "$uris" ] || { echo "agentcg-apt: no URIs: line in $src" >&2; return 1; }
  mkdir -p "$dir/sources" "$dir/lists/partial" "$dir/cache/archives/partial"
  {
    echo "Types: deb"
    echo "URIs: $uris"
    echo "Suites: $suite"
    echo "Components: main"
    [ -n "$signed" ] && echo "Signed-By: $signed"
  } > "$dir/sources/agentcg.sources"
  AGENTCG_APT_DIR=$dir
}

agentcg_apt_opts() {
  echo -o Dir::Etc::sourcelist=/dev/null \
    -o Dir::Etc::sourceparts="$AGENTCG_APT_DIR/sources" \
    -o Dir::State::Lists="$AGENTCG_APT_DIR/lists" \
    -o Dir::Cache="$AGENTCG_APT_DIR/cache" \
    -o Dir::State::status=/dev/null -o APT::Architecture=amd64 \
    -o APT::Sandbox::User=root
}

# agentcg_apt get|cache ARGS...: apt-get or apt-cache under the private config.
agentcg_apt() {
  local tool=apt-get
  [ "$1" = cache ] && tool=apt-cache
  shift
  # shellcheck disable=SC2046 # the options contain no spaces
  $tool -q $(agentcg_apt_opts) "$@"
}
