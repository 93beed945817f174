#!/bin/sh
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Guest: the kernel A/B measurements of bench/kernel-ab.sh, on whichever
# kernel booted (stock or patched, same config):
#   1. kcore-vread, 1 MiB preads, 3 times each, then once hashed:
#      mapped    the 16 MiB vmalloc() area of kcore_test.ko (all data)
#      unmapped  the last 1 GiB of the vmalloc segment (nothing mapped)
#      window    the first 1 GiB of the vmalloc segment (the 16 MiB area
#                and whatever else is mapped there)
#   2. kcore-seek: SEEK_DATA/SEEK_HOLE enumeration of all of /proc/kcore
#   3. kernel-coredump.sh with the given shapes (timed cores, checked)
# Args: [--reps N] the crash-shapes shapes (--reps: the kcore reads and
# the SEEK enumeration N times each, default 3; 0: the cores only).
set -eu
reps=3
if [ "${1:-}" = --reps ]; then
	reps=$2
	shift 2
fi
ab_shapes=$*
ko=/tools/kcore_test.ko
[ -e "$ko" ] || { echo "kcore_test.ko not given"; exit 1; }
insmod "$ko"
echo 1 > /proc/sys/kernel/kptr_restrict
big=$(cat /sys/module/kcore_test/parameters/big_addr)
: > "$OUT/vread"
: > "$OUT/vread-hash"
for w in "mapped --start $big --len 16777216" \
	"unmapped --end-minus 1073741824 --len 1073741824" \
	"window --len 1073741824"; do
	[ "$reps" -gt 0 ] || break
	# shellcheck disable=SC2086 # the window's options are words
	set -- $w
	label=$1
	shift
	kcore-vread "$@" --reps "$reps" | sed "s/^/$label /" | tee -a "$OUT/vread"
	kcore-vread "$@" --reps 1 --hash 1 | sed "s/^/$label /" | tee -a "$OUT/vread-hash"
done
i=0
: > "$OUT/seek"
while [ $i -lt "$reps" ]; do
	kcore-seek > /tmp/extents
	grep '^time_us' /tmp/extents | tee -a "$OUT/seek"
	i=$((i + 1))
done
# shellcheck disable=SC2086 # the shapes are words
set -- $ab_shapes
# shellcheck source=kernel-coredump.sh
. /cases/kernel-coredump.sh
