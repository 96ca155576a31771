#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Fetch a Debian kernel with sched_ext (CONFIG_SCHED_CLASS_EXT=y) for the VM
# tests, into a cache: $AGENTCG_CACHE (default ~/.cache/agentcg)/kernel-SUITE/.
# Prints the cache directory, which then holds:
#   vmlinuz    the cloud-amd64 bzImage (boots without modules)
#   vmlinux    the ELF extracted from it (for its BTF -> vmlinux.h)
#   config     the kernel config
#   version    the kernel version string
# The version is resolved at run time from linux-image-cloud-amd64's Depends
# (versions move and old ones leave the archive). Idempotent: a complete
# cache is reused without network access.
# Suite: $AGENTCG_KERNEL_SUITE (default sid). trixie-backports' 7.2.12 build
# has sched_ext but its BTF lacks the `_impl` twins of the implicit-argument
# scx kfuncs (scx_bpf_create_dsq_impl, ...), so its verifier rejects any
# scheduler that creates a DSQ; sid's 7.2.13 has them (checked 2026-11-21).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${AGENTCG_CACHE:-$HOME/.cache/agentcg}
suite=${AGENTCG_KERNEL_SUITE:-sid}
out=$cache/kernel-$suite

if [ -s "$out/vmlinuz" ] && [ -s "$out/vmlinux" ] && [ -s "$out/version" ]; then
  echo "$out"; exit 0
fi
. "$here/agentcg-apt.sh"
work=$cache/apt-$suite
agentcg_apt_init "$work" "$suite"
agentcg_apt get update >&2
meta=$(agentcg_apt cache show linux-image-cloud-amd64 2>/dev/null | awk '/^Depends:/{print; exit}')
img=$(echo "$meta" | grep -o 'linux-image-[0-9][^ ,]*-cloud-amd64' | head -n1)
[ -n "$img" ] || { echo "fetch-kernel: cannot resolve the image from linux-image-cloud-amd64 ($meta)" >&2; exit 1; }
ver=${img#linux-image-}
echo "fetch-kernel: kernel $ver from $suite" >&2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && agentcg_apt get download "linux-binary-$ver" >&2 && { agentcg_apt get download "linux-base-$ver" >&2 || true; })
mkdir -p "$tmp/x"
for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$tmp/x"; done
vz=$(find "$tmp/x" -name vmlinuz -o -name "vmlinuz-$ver" | head -n1)
[ -n "$vz" ] || { echo "fetch-kernel: no vmlinuz in linux-binary-$ver" >&2; exit 1; }
mkdir -p "$out"
cp "$vz" "$out/vmlinuz.tmp"
cfg=$(find "$tmp/x" -name "config*" -type f | head -n1)
[ -n "$cfg" ] && cp "$cfg" "$out/config"
"$here/extract-vmlinux.sh" "$out/vmlinuz.tmp" "$out/vmlinux.tmp"
echo "$ver" > "$out/version.tmp"
mv "$out/vmlinuz.tmp" "$out/vmlinuz"; mv "$out/vmlinux.tmp" "$out/vmlinux"; mv "$out/version.tmp" "$out/version"
echo "$out"
