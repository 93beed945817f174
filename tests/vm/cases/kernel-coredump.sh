#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: kernel-written cores of the crash-shapes test programs (kernel/test,
# pass it with --tool), timed, for checking them byte by byte against what
# the programs wrote (their layout files) and for comparing a stock and a
# patched kernel (bench/kernel-ab.sh).  ASLR is off and the programs' memory
# is deterministic, so the cores of two kernels must be identical outside
# their notes.  Args: the shapes (default: every shape but sparse1t and
# kill; SHAPE:nodump crashes without a dump; SHAPE:sock dumps through the
# coredump socket, "@@", to kernel/test/coresock.c, which acknowledges
# COREDUMP_HOLES when the kernel offers it and writes the core as the
# kernel writes a core file).  A swap shape sets up swap on zram first.
set -eu

command -v crash-shapes > /dev/null || {
	echo "crash-shapes not given (--tool, built by kernel/test.sh)"
	exit 1
}
shapes=${*:-none dense sparse64g strided thp file shmem zeropage mt swap protnone dontneed uffd clonevm high}

echo 0 > /proc/sys/kernel/randomize_va_space
mkdir -p /tmp/cores "$OUT/cores"
echo '/tmp/cores/core.%p' > /proc/sys/kernel/core_pattern
# shellcheck disable=SC3045 # busybox ash has ulimit -c
ulimit -c unlimited
uname -r > "$OUT/uname"
cat /proc/cmdline > "$OUT/cmdline"
cd /tmp

case " $shapes " in
*":sock "*)
	command -v coresock > /dev/null || {
		echo "coresock not given (--tool, built by kernel/test.sh)"
		exit 1
	}
	coresock /tmp/coresock.sock /tmp/cores "$OUT/coresock.log" 2> "$OUT/coresock.err" &
	i=0
	while [ ! -S /tmp/coresock.sock ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	[ -S /tmp/coresock.sock ] || { echo "coresock did not listen"; exit 1; }
	;;
esac
case " $shapes " in
*" swap "*)
	if [ ! -e /dev/zram0 ]; then
		echo "swap shape: no /dev/zram0"
		exit 1
	fi
	echo 128M > /sys/block/zram0/disksize
	mkswap /dev/zram0 > /dev/null
	swapon /dev/zram0
	;;
esac

: > "$OUT/dump-times"
for s in $shapes; do
	case $s in
	*:sock) echo '@@/tmp/coresock.sock' > /proc/sys/kernel/core_pattern ;;
	*) echo '/tmp/cores/core.%p' > /proc/sys/kernel/core_pattern ;;
	esac
	# one program per shape: the same parent memory for every shape
	crash-shapes "$s" | tee -a "$OUT/dump-times"
	pid=$(awk -v s="$s" '$1 == s { print $3 }' "$OUT/dump-times" | tail -n 1)
	[ -n "$pid" ] || { echo "$s: crash-shapes failed"; exit 1; }
	[ ! -f "/tmp/layout.$pid" ] || mv "/tmp/layout.$pid" "$OUT/cores/$s.layout"
	case $s in
	*:nodump | kill)
		# no core (or a partial one: killed)
		rm -f "/tmp/cores/core.$pid" ;;
	*)
		[ -f "/tmp/cores/core.$pid" ] || { echo "$s: no core /tmp/cores/core.$pid"; exit 1; }
		ls -ls "/tmp/cores/core.$pid"
		sparsecp "/tmp/cores/core.$pid" "$OUT/cores/$s.core"
		rm -f "/tmp/cores/core.$pid" ;;
	esac
	rm -f /tmp/kc-shape-file
done
dmesg | grep -E 'BUG|WARNING|Oops|lockdep|KASAN' > "$OUT/dmesg-bad" || true
