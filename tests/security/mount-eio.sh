#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 27 item 5: the mount never turns a read error into a shorter
# file.  With a corrupt frame a read of the vmcore returned the bytes
# before it; FUSE took the short reply for the end of the file, shrank it,
# and dd exited 0.  Now any failed part of a request is EIO (and logged),
# and the size stays.
#   mount-eio.sh KCOREDUMP HOSTILE-PY
set -uo pipefail
kcoredump=$1 gen=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

[ -e /dev/fuse ] || { echo "1..0 # SKIP no /dev/fuse"; exit 77; }
command -v fusermount3 >/dev/null || { echo "1..0 # SKIP no fusermount3"; exit 77; }
mnt=$tmp/mnt
mkdir "$mnt"
trap 'fusermount3 -u "$mnt" 2>/dev/null; rm -rf "$tmp"' EXIT

# A dump of a few frames (4 KiB each); the last frame with data damaged.
"$PY" "$gen" flat-kdump 15 "$tmp/f"
"$kcoredump" convert "$tmp/f" --format elf -o "$tmp/e.zst" --frame-size 4K >/dev/null
"$PY" - "$tmp/e.zst" "$tmp/bad.zst" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
n, desc, magic = struct.unpack("<IBI", d[-9:])
esize = 12 if desc & 0x80 else 8
tstart = len(d) - (8 + n * esize + 9)
ents = [struct.unpack_from("<II", d, tstart + 8 + i * esize) for i in range(n)]
at, best = 0, None
for c, u in ents:
    if u:
        best = (at, c)
    at += c
at, c = best
for k in range(at + 6, at + c - 4):   # past the frame header
    d[k] ^= 0x5A
open(sys.argv[2], "wb").write(d)
PY
want=$(zstd -dcq "$tmp/e.zst" | wc -c)
"$kcoredump" mount --no-prefetch "$tmp/bad.zst" "$mnt"
check "mounted" mountpoint -q "$mnt"
size0=$(stat -c %s "$mnt/vmcore")
check "the vmcore has the dump's $want bytes" [ "$size0" = "$want" ]
dd if="$mnt/vmcore" of="$tmp/out" bs=1M 2>"$tmp/dd.err"
rc=$?
check "dd of the vmcore fails (exit $rc): $(tail -n 1 "$tmp/dd.err" | head -c 100)" \
	[ "$rc" -ne 0 ] && grep -q "Input/output error" "$tmp/dd.err"
check "the vmcore still has $want bytes ($(stat -c %s "$mnt/vmcore"))" \
	[ "$(stat -c %s "$mnt/vmcore")" = "$want" ]
check "the first page still reads" dd if="$mnt/vmcore" of=/dev/null bs=4096 count=1 status=none
fusermount3 -u "$mnt"
check "unmounted" bash -c "! mountpoint -q '$mnt'"
finish
