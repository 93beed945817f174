#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 27 item 13: verify's error paths free what they hold.  Under the
# asan preset LeakSanitizer fired on them (verify.c's r->segs, kept when
# hashing failed), so malformed inputs exited 1 instead of 4.  Each input
# below must end with exit 4 and no sanitizer report; with the asan build
# (ctest --preset asan) this is the leak check, with any build the exit
# status check.  The library now empties the result on error, so callers
# that return early (cmd-verify.c does) leak nothing.
#   verify-errors.sh KCOREDUMP HOSTILE-PY
set -uo pipefail
kcoredump=$1 gen=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# A kdump with one dumped page (a sparse file), cut inside that page, in
# its descriptor and in bitmap 2; a flattened one without its end marker
# and with its data record cut short; a zstd stream of an ELF dump cut
# short.
"$PY" "$gen" sparse-kdump 1 "$tmp/k"
size=$(stat -c %s "$tmp/k")
n=0
for cut in 1 100 4095 4096 4100; do
	n=$((n + 1))
	cp --sparse=always "$tmp/k" "$tmp/bad.$n"
	truncate -s $((size - cut)) "$tmp/bad.$n"
done
"$PY" "$gen" flat-kdump 15 "$tmp/f"
fsize=$(stat -c %s "$tmp/f")
for cut in 16 20 2000; do
	n=$((n + 1))
	head -c $((fsize - cut)) "$tmp/f" >"$tmp/bad.$n"
done
n=$((n + 1))
"$PY" - "$tmp/f" "$tmp/bad.$n" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
# the last record (the page) claims 4096 bytes but keeps 16: the end
# marker follows at once
at = 4096
last = None
while True:
    off, ln = struct.unpack(">qq", d[at:at + 16])
    if off == -1:
        break
    last = at
    at += 16 + ln
d[last + 8:last + 16] = struct.pack(">q", 16)
del d[last + 32:at]
open(sys.argv[2], "wb").write(d)
PY
"$kcoredump" convert "$tmp/f" --format elf -o "$tmp/e.zst" --frame-size 4K \
	>/dev/null 2>"$tmp/err" || sed 's/^/# /' "$tmp/err"
if [ -s "$tmp/e.zst" ]; then
	zsize=$(stat -c %s "$tmp/e.zst")
	n=$((n + 1))
	head -c $((zsize / 2)) "$tmp/e.zst" >"$tmp/bad.$n"
fi
check "made $n malformed inputs" [ "$n" -ge 10 ]
for i in $(seq 1 "$n"); do
	timeout -k 5 120 "$kcoredump" verify "$tmp/bad.$i" >/dev/null 2>"$tmp/err"
	rc=$?
	check "verify of malformed input $i: exit $rc (want 4), no sanitizer report" \
		[ "$rc" -eq 4 ] && ! grep -q Sanitizer "$tmp/err"
	[ "$rc" -eq 4 ] || head -n 5 "$tmp/err" | sed 's/^/# /'
done
finish
