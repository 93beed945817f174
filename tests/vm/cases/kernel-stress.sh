#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: /proc/kcore readers (SEEK_DATA/SEEK_HOLE enumeration, vmalloc
# window reads) racing vmalloc/vfree churn (kcore_test.ko loaded and
# unloaded in a loop: vmalloc, vmap, vm_map_ram, ioremap; processes forked
# with vmalloc'd stacks), for $1 seconds (default 60).  Meant for the
# KASAN + lockdep kernel (kernel/test.sh --debug).  Fails on a reader error
# or any BUG/WARNING/KASAN/lockdep report in dmesg.
set -eu
secs=${1:-60}
ko=/tools/kcore_test.ko
[ -e "$ko" ] || { echo "kcore_test.ko not given"; exit 1; }
uname -r > "$OUT/uname"
end=$(($(cut -d. -f1 /proc/uptime) + secs))
alive() { [ "$(cut -d. -f1 /proc/uptime)" -lt "$end" ]; }

( n=0; while alive; do insmod "$ko" && rmmod kcore_test; n=$((n + 1)); done
  echo "module cycles $n" > "$OUT/churn-module" ) &
( n=0; while alive; do for _ in 1 2 3 4 5 6 7 8; do true & done; wait; n=$((n + 1)); done
  echo "fork rounds $n" > "$OUT/churn-fork" ) &
fail=0
r=0
while alive; do
	kcore-seek > /tmp/seek.out || { echo "kcore-seek failed"; tail -3 /tmp/seek.out; fail=1; }
	kcore-vread --reps 1 --len $((64 << 20)) > /dev/null || { echo "kcore-vread failed"; fail=1; }
	r=$((r + 1))
done
wait
echo "reader rounds $r" | tee "$OUT/readers"
cat "$OUT"/churn-* 
dmesg > "$OUT/dmesg"
# KASAN reports are "BUG: KASAN: ...", lockdep's splats carry these titles
if grep -E 'BUG:|WARNING:|Oops|possible circular locking|inconsistent lock state|possible recursive locking|suspicious RCU usage|bad unlock balance|lock held when returning' "$OUT/dmesg"; then
	echo "kernel reported problems"
	fail=1
fi
# RCU stalls: TCG on a busy host can starve a vCPU (reported, not failed)
grep -E 'detected stalls|kthread starved' "$OUT/dmesg" > "$OUT/stalls" &&
	echo "note: RCU stall messages (host starvation under TCG?):" && cat "$OUT/stalls"
true
exit "$fail"
