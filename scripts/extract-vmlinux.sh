#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Extract the ELF vmlinux from a zstd-compressed x86 bzImage (for its BTF).
# bzImage layout (Documentation/arch/x86/boot.rst): setup_sects is the byte
# at 0x1f1 (0 means 4); payload_offset and payload_length are LE u32 at
# 0x248/0x24c; the protected-mode code starts at (setup_sects + 1) * 512.
# The zstd payload ends with a 4-byte size trailer, which is dropped.
# Usage: extract-vmlinux.sh BZIMAGE OUT
set -euo pipefail
in=$1 out=$2
rd() { od -An -t u"$2" -j "$1" -N "$2" "$in" | tr -d ' '; }
sects=$(rd $((0x1f1)) 1); [ "$sects" -eq 0 ] && sects=4
poff=$(rd $((0x248)) 4)
plen=$(rd $((0x24c)) 4)
start=$(( (sects + 1) * 512 + poff ))
dd if="$in" bs=4096 iflag=skip_bytes,count_bytes skip="$start" count=$((plen - 4)) status=none | zstd -d -q -c > "$out"
[ "$(od -An -c -j 1 -N 3 "$out" | tr -d " ")" = ELF ] || { echo "extract-vmlinux: $in: payload is not a zstd ELF" >&2; exit 1; }
