#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: /proc/kcore readers (SEEK_DATA/SEEK_HOLE enumeration, vmalloc
# window reads, kcoredump dump --vmalloc-range, which reads every mapped
# area) racing vmalloc/vfree churn (kcore_test.ko loaded and unloaded in a
# loop: vmalloc, vmap, vm_map_ram, vmalloc_huge, ioremap, pages whose PTE or
# direct map is not present; processes forked with vmalloc'd stacks), for
# $1 seconds (default 60).  Meant for the KASAN + lockdep kernel
# (kernel/test.sh --debug).  Fails on a reader error or any
# BUG/WARNING/KASAN/lockdep report in dmesg.  An extent that vanishes
# between SEEK_DATA and SEEK_HOLE (its area was vfree()d) is no error
# (kcore-seek --racy); how often that happened is in $OUT/readers.
set -eu
secs=${1:-60}
ko=/tools/kcore_test.ko
[ -e "$ko" ] || { echo "kcore_test.ko not given"; exit 1; }
uname -r > "$OUT/uname"
echo 1 > /proc/sys/kernel/kptr_restrict
np=$(awk '$3 == "set_memory_np" { print "0x" $1; exit }' /proc/kallsyms)
p=$(awk '$3 == "set_memory_p" { print "0x" $1; exit }' /proc/kallsyms)
if [ -z "$np" ] || [ -z "$p" ]; then
	echo "set_memory_np/set_memory_p not in /proc/kallsyms"
	exit 1
fi
end=$(($(cut -d. -f1 /proc/uptime) + secs))
alive() { [ "$(cut -d. -f1 /proc/uptime)" -lt "$end" ]; }

( n=0; while alive; do insmod "$ko" set_memory_np="$np" set_memory_p="$p" && rmmod kcore_test; n=$((n + 1)); done
  echo "module cycles $n" > "$OUT/churn-module" ) &
( n=0; while alive; do for _ in 1 2 3 4 5 6 7 8; do true & done; wait; n=$((n + 1)); done
  echo "fork rounds $n" > "$OUT/churn-fork" ) &
fail=0
r=0
: > "$OUT/seek-raced"
while alive; do
	kcore-seek --racy > /tmp/seek.out 2>&1 || { echo "kcore-seek failed:"; grep -v -E '^(load|data) ' /tmp/seek.out; fail=1; }
	grep '^raced ' /tmp/seek.out >> "$OUT/seek-raced" || true
	kcore-vread --reps 1 --len $((64 << 20)) > /dev/null || { echo "kcore-vread failed"; fail=1; }
	"$KCOREDUMP" dump --allow-ram-output --vmalloc-range -o /tmp/stress.elf --force > /dev/null 2> /tmp/stress.err ||
		{ echo "kcoredump dump --vmalloc-range failed: $(tail -n 1 /tmp/stress.err)"; fail=1; }
	rm -f /tmp/stress.elf
	r=$((r + 1))
done
wait
echo "reader rounds $r" | tee "$OUT/readers"
# extents that vanished between SEEK_DATA and SEEK_HOLE (kcore-seek --racy)
echo "kcore-seek raced $(awk '{ n += $2 } END { print n + 0 }' "$OUT/seek-raced") times" | tee -a "$OUT/readers"
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
