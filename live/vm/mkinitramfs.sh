#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Builds the test VM's initramfs: busybox-static, the guest scripts
# (guest/init.sh as /init, guest/scenarios.sh, guest/scenarios.d/*.sh), the
# project's binaries with
# the shared libraries they need (found with ldd; agentcgroupd is dynamic
# only for libc/libstdc++/cpp-httplib, see live/agentcgroupd/CMakeLists.txt),
# and the optional benchmark tools (rt-tests, stress-ng) when installed.
# Usage: mkinitramfs.sh OUT.cpio.gz BINARY... [-- EXTRA_FILE=GUEST_PATH...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$1; shift
bb=$(command -v busybox || true)
[ -n "$bb" ] || { echo "mkinitramfs: busybox not found (scripts/setup.sh live)" >&2; exit 77; }
file -L "$bb" 2>/dev/null | grep -q 'statically linked' || [ -x /bin/busybox ] || true
root=$(mktemp -d); trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,etc/agentcg,lib,lib64,root,traces}
cp "$bb" "$root/bin/busybox"
for a in $("$bb" --list); do [ -e "$root/bin/$a" ] || ln -s busybox "$root/bin/$a"; done

copy_with_libs() {
  local f=$1 dest=$2
  cp -L "$f" "$root$dest"
  { ldd "$f" 2>/dev/null || true; } | awk '/=> \//{print $3} /^\t\/lib/{print $1}' | while read -r lib; do
    [ -e "$root$lib" ] && continue
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
}
extras=()
for b in "$@"; do
  if [ "$b" = "--" ]; then extras=(1); continue; fi
  if [ ${#extras[@]} -gt 0 ]; then
    src=${b%%=*}; dst=${b#*=}
    mkdir -p "$root$(dirname "$dst")"; cp -L "$src" "$root$dst"
    continue
  fi
  copy_with_libs "$b" "/usr/bin/$(basename "$b")"
done
for tool in cyclictest hackbench stress-ng; do
  t=$(command -v "$tool" || true)
  [ -n "$t" ] && copy_with_libs "$t" "/usr/bin/$tool"
done
cp "$here/guest/init.sh" "$root/init"
cp "$here/guest/scenarios.sh" "$root/scenarios.sh"
mkdir -p "$root/scenarios.d" "$root/out"
for f in "$here"/guest/scenarios.d/*.sh; do [ -e "$f" ] && cp "$f" "$root/scenarios.d/"; done
chmod +x "$root/init" "$root/scenarios.sh"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$out"
