#!/bin/sh
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Guest: the kernel A/B measurements of bench/kernel-ab.sh, on whichever
# kernel booted (stock or patched, same config):
#   1. kcore-vread: 1 GiB window at the start of the vmalloc segment, 1 MiB
#      preads, 3 times (kcore_test.ko loaded: 16 MiB mapped there)
#   2. kcore-seek: SEEK_DATA/SEEK_HOLE enumeration of all of /proc/kcore
#   3. kernel-coredump.sh with the given shapes (timed cores, digests)
# Args: the crash-shapes shapes.
set -eu
ko=/tools/kcore_test.ko
[ -e "$ko" ] || { echo "kcore_test.ko not given"; exit 1; }
insmod "$ko"
reps=3
kcore-vread --reps "$reps" | tee "$OUT/vread"
kcore-vread --reps 1 --hash 1 | tee "$OUT/vread-hash"
i=0
: > "$OUT/seek"
while [ $i -lt "$reps" ]; do
	kcore-seek > /tmp/extents
	grep '^time_us' /tmp/extents | tee -a "$OUT/seek"
	i=$((i + 1))
done
# shellcheck source=kernel-coredump.sh
. /cases/kernel-coredump.sh
