#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: how long /proc/kcore readers hold the vmap locks that vmalloc()
# and vfree() need, and how much they delay them (bench/kernel-lock.sh,
# stock vs patched).  With kcore_test.ko (a 16 MiB vmalloc area) and
# vmalloc_lat.ko loaded, vmalloc_lat times ROUNDS (default 20000) rounds of
# vmalloc(16 KiB) + vfree() on CPU 0, three times each:
#   idle   nothing else running
#   vread  kcore-vread re-reading the 16 MiB area in 1 MiB preads on CPU 1
#   dump   kcoredump dump --vmalloc-range in a loop on CPU 1
# and writes "PHASE n N vmalloc_ns p50 .. p99 .. p999 .. max .. vfree_ns
# ..." lines to $OUT/latency.  With CONFIG_LOCK_STAT (kernel/test.sh
# --debug), /proc/lock_stat is cleared before each phase and the lines of
# the vmap node busy lock and the vmap block lock are saved after it
# ($OUT/lock_stat.PHASE).
set -eu
rounds=${1:-20000}
for m in kcore_test vmalloc_lat; do
	[ -e "/tools/$m.ko" ] || { echo "$m.ko not given"; exit 1; }
	insmod "/tools/$m.ko"
done
uname -r > "$OUT/uname"
echo 1 > /proc/sys/kernel/kptr_restrict
big=$(cat /sys/module/kcore_test/parameters/big_addr)
lat=/sys/module/vmalloc_lat/parameters
echo 16384 > "$lat/size"
: > "$OUT/latency"
: > "$OUT/readers"

# the reader, a script of its own so that taskset can pin it to CPU 1
cat > /tmp/reader.sh << READER
n=0
while [ ! -e /tmp/stop ]; do
	case \$1 in
	vread) kcore-vread --start $big --len $((16 << 20)) --reps 1 > /dev/null ;;
	dump) "$KCOREDUMP" dump --allow-ram-output --vmalloc-range -o /tmp/v.elf --force > /dev/null 2>&1
	      rm -f /tmp/v.elf ;;
	esac
	n=\$((n + 1))
done
echo "\$1 reader rounds \$n" >> "$OUT/readers"
READER

for phase in idle vread dump; do
	rm -f /tmp/stop
	[ ! -e /proc/lock_stat ] || echo 0 > /proc/lock_stat
	pid=
	if [ "$phase" != idle ]; then
		taskset 2 sh /tmp/reader.sh "$phase" &
		pid=$!
		sleep 1
	fi
	i=0
	while [ $i -lt 3 ]; do
		taskset 1 sh -c "echo $rounds > $lat/run"
		echo "$phase $(cat "$lat/result")" | tee -a "$OUT/latency"
		i=$((i + 1))
	done
	if [ -n "$pid" ]; then
		: > /tmp/stop
		wait "$pid"
	fi
	if [ -e /proc/lock_stat ]; then
		grep -E 'vn->busy.lock|vb->lock' /proc/lock_stat > "$OUT/lock_stat.$phase" || true
		head -n 4 /proc/lock_stat > "$OUT/lock_stat.header"
	fi
done
cat "$OUT/readers"
if dmesg | grep -E 'BUG:|WARNING:|Oops'; then
	exit 1
fi
exit 0
