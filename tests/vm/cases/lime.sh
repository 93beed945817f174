#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: LiME and `kcoredump dump --format lime` each write an image of
# the live kernel's RAM, both through a FIFO that `dd` copies to the
# share.  LiME is lime.ko from tests/vm/fetch-lime.sh, given to run.sh
# with --tool (so /tools/lime.ko), loaded with digest=sha256 (it writes
# the image's SHA-256 to PATH.sha256 after the image).  lime.host.sh
# checks both files open with `kcoredump info` as LiME, that each one's
# SHA-256 (LiME's own, kcoredump's summary) is the file's, and that
# LiME's ranges are the System RAM of /proc/iomem with kcoredump's
# inside them, and that kcoredump's --hash none image (the splice path)
# holds the same ranges and, page for page, the default one's memory.
# bench/kcore.sh runs this case after its timed rows.
set -eu
ko=/tools/lime.ko
[ -f "$ko" ] || { echo "not ok - no $ko (run.sh --tool \"\$(tests/vm/fetch-lime.sh)\")"; exit 1; }
uname -r > "$OUT/uname-r"
cat /proc/iomem > "$OUT/iomem"
rm -f /tmp/lime-check.fifo /tmp/lime-check.fifo.sha256
mkfifo /tmp/lime-check.fifo
rc=0
dd if=/tmp/lime-check.fifo of="$OUT/lime.lime" bs=1M iflag=fullblock 2> "$OUT/lime-dd.log" &
rd=$!
insmod "$ko" path=/tmp/lime-check.fifo format=lime digest=sha256 || rc=$?
wait "$rd" || rc=$?
rmmod lime || true
[ "$rc" -eq 0 ] || { echo "not ok - insmod lime.ko (or its reader) exited $rc"; exit 1; }
cp /tmp/lime-check.fifo.sha256 "$OUT/lime.lime.sha256"
echo "ok - LiME wrote $(stat -c %s "$OUT/lime.lime") bytes"
rm -f /tmp/lime-check.fifo
mkfifo /tmp/lime-check.fifo
dd if=/tmp/lime-check.fifo of="$OUT/kcd.lime" bs=1M iflag=fullblock 2> "$OUT/kcd-dd.log" &
rd=$!
"$KCOREDUMP" dump --format lime --special-output -o /tmp/lime-check.fifo \
	--json > "$OUT/kcd.json" || rc=$?
wait "$rd" || rc=$?
[ "$rc" -eq 0 ] || { echo "not ok - kcoredump dump --format lime (or its reader) exited $rc"; exit 1; }
echo "ok - kcoredump wrote $(stat -c %s "$OUT/kcd.lime") bytes"
# --hash none: the splice path (the bytes moved from /proc/kcore into the
# FIFO by splice(2)).
rm -f /tmp/lime-check.fifo
mkfifo /tmp/lime-check.fifo
dd if=/tmp/lime-check.fifo of="$OUT/kcd-none.lime" bs=1M iflag=fullblock 2> "$OUT/kcd-none-dd.log" &
rd=$!
"$KCOREDUMP" dump --format lime --hash none --special-output \
	-o /tmp/lime-check.fifo --json > "$OUT/kcd-none.json" || rc=$?
wait "$rd" || rc=$?
[ "$rc" -eq 0 ] || { echo "not ok - kcoredump dump --format lime --hash none (or its reader) exited $rc"; exit 1; }
echo "ok - kcoredump --hash none wrote $(stat -c %s "$OUT/kcd-none.lime") bytes"
