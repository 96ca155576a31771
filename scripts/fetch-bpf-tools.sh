#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Fetch bookworm-backports' bpftool (7.5: emits the scx kfunc prototypes
# into vmlinux.h) and libbpf-dev (1.4+: .struct_ops.link; static libbpf.a)
# into a cache: $AGENTCG_CACHE (default ~/.cache/agentcg)/bpf-tools/.
# bookworm's own libbpf 1.1 is too old for sched_ext (docs/sources.md, "Live VM").
# Prints the directory, which then holds bin/bpftool, include/bpf/*.h and
# lib/libbpf.a. Idempotent: a complete cache is reused offline.
# Suite: $AGENTCG_BPF_SUITE (default bookworm-backports).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${AGENTCG_CACHE:-$HOME/.cache/agentcg}
out=$cache/bpf-tools
suite=${AGENTCG_BPF_SUITE:-bookworm-backports}

if [ -x "$out/bin/bpftool" ] && [ -s "$out/lib/libbpf.a" ] && [ -s "$out/include/bpf/libbpf.h" ]; then
  echo "$out"; exit 0
fi
. "$here/agentcg-apt.sh"
work=$cache/apt-$suite
agentcg_apt_init "$work" "$suite"
agentcg_apt get update >&2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && agentcg_apt get download "bpftool/$suite" "libbpf-dev/$suite" "libbpf1/$suite" >&2)
mkdir -p "$tmp/x"
for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$tmp/x"; done
rm -rf "$out.tmp"; mkdir -p "$out.tmp/bin" "$out.tmp/lib" "$out.tmp/include"
bt=$(find "$tmp/x" -type f -path "*bin/bpftool" | head -n1)
[ -n "$bt" ] || { echo "fetch-bpf-tools: no bpftool binary in the package" >&2; exit 1; }
cp "$bt" "$out.tmp/bin/bpftool"
a=$(find "$tmp/x" -name libbpf.a | head -n1)
[ -n "$a" ] || { echo "fetch-bpf-tools: no libbpf.a in libbpf-dev/$suite" >&2; exit 1; }
cp "$a" "$out.tmp/lib/libbpf.a"
cp -r "$tmp/x/usr/include/bpf" "$out.tmp/include/bpf"
"$out.tmp/bin/bpftool" version >&2
rm -rf "$out"; mv "$out.tmp" "$out"
echo "$out"
