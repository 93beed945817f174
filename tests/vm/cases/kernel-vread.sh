#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: corner cases of vmalloc reads through /proc/kcore (vread_iter(),
# kernel/patches), with --tool kcore_test.ko and kcore-vread:
#  1. large preads ending at and crossing the end of the module segment
#     (x86_64: 16 MiB below the top of the address space, so start + length
#     wraps there; the vsyscall page after it is data), of the vsyscall
#     page (the end of the file) and of the vmalloc segment, compared with
#     4 KiB preads of the same bytes (kcore-vread --compare);
#  2. ndm: a vmalloc() page whose direct map entry is not present (as the
#     execmem ROX cache left module text in 6.13-rc): vread_iter() cannot
#     copy it and returns 0; the read must return (stock 6.12 and the first
#     version of the series loop forever) with zeros for that page;
#  3. npte: a vmalloc() page whose PTE was made not present with
#     set_memory_np(): reads as zeros, as vmalloc_to_page() finds no page
#     (a copy from vm->pages would read it, or loop on its direct map).
# The reads of 2 and 3 run in the background with a 60 s limit: a reader
# stuck in the kernel cannot be killed and keeps its vCPU, so the case goes
# on without it and starts no other read of those areas.  The
# bytes go to $OUT; the host check verifies every word.
set -eu

ko=/tools/kcore_test.ko
[ -e "$ko" ] || { echo "kcore_test.ko not given"; exit 1; }
uname -r > "$OUT/uname"
fail=0
# The vsyscall page after the module segment must be mapped to be read
# (vsyscall=emulate; kernel/test.sh adds it): with the default xonly mode
# every kernel's read of it fails with EFAULT, which would hide the bytes.
if ! grep -qw vsyscall=emulate /proc/cmdline; then
	echo "not ok - boot with vsyscall=emulate (kernel/test.sh --append vsyscall=emulate)"
	exit 1
fi

# 1. segment ends.  The module segment holds kcore_test's text: load it
# (without the pages that are not present: those come in 2 and 3) to find
# the segment, then unload it again.
insmod "$ko"
text=$(cat /sys/module/kcore_test/sections/.text)
rmmod kcore_test
cmp_read() { # label args...
	label=$1
	shift
	if kcore-vread --compare "$@" > /tmp/cmp.out 2>&1; then
		echo "ok - $label: $(cat /tmp/cmp.out)"
	else
		echo "not ok - $label: $(cat /tmp/cmp.out)"
		fail=1
	fi
}
M=1048576
cmp_read "32 MiB pread ending at the end of the module segment" \
	--segment-of "$text" --end-minus $((32 * M)) --len $((32 * M)) --block $((32 * M))
cmp_read "32 MiB pread crossing the end of the module segment (wraps)" \
	--segment-of "$text" --end-minus $((8 * M)) --len $((32 * M)) --block $((32 * M))
cmp_read "128 MiB pread crossing the end of the module segment by 64 MiB" \
	--segment-of "$text" --end-minus $((64 * M)) --len $((128 * M)) --block $((128 * M))
cmp_read "1 MiB pread from the last page of the file (the vsyscall page)" \
	--segment-of 0xffffffffff600000 --end-minus 4096 --len $M --block $M
cmp_read "16 MiB pread ending at the end of the vmalloc segment" \
	--end-minus $((16 * M)) --len $((16 * M)) --block $((16 * M))
cmp_read "16 MiB pread crossing the end of the vmalloc segment" \
	--end-minus $((4 * M)) --len $((16 * M)) --block $((16 * M))

# 2, 3. pages that are not present
echo 1 > /proc/sys/kernel/kptr_restrict
np=$(awk '$3 == "set_memory_np" { print "0x" $1; exit }' /proc/kallsyms)
p=$(awk '$3 == "set_memory_p" { print "0x" $1; exit }' /proc/kallsyms)
if [ -z "$np" ] || [ -z "$p" ]; then
	echo "not ok - set_memory_np/set_memory_p not in /proc/kallsyms"
	exit 1
fi
insmod "$ko" set_memory_np="$np" set_memory_p="$p"
par=/sys/module/kcore_test/parameters
: > "$OUT/areas"
stuck=0
for a in npte ndm; do
	addr=$(cat "$par/${a}_addr")
	if [ "$addr" = 0 ]; then
		echo "not ok - kcore_test made no $a area"
		fail=1
		continue
	fi
	printf '%s 0x%x 4\n' "$a" "$addr" >> "$OUT/areas"
	# whole, and page 1 alone
	for how in whole page1; do
		# a stuck reader keeps its vCPU: do not start another one
		[ $stuck = 0 ] || { echo "not ok - $a ($how): not read (an earlier read is stuck)"; continue; }
		case $how in
		whole) va=$addr len=16384 ;;
		page1) va=$((addr + 4096)) len=4096 ;;
		esac
		rm -f "/tmp/$a.$how.done"
		( kpread --vaddr "$va" --len "$len" > "/tmp/$a.$how" 2> "/tmp/$a.$how.err"
		  echo $? > "/tmp/$a.$how.done" ) &
		i=0
		while [ ! -e "/tmp/$a.$how.done" ] && [ $i -lt 600 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		if [ ! -e "/tmp/$a.$how.done" ]; then
			echo "not ok - $a ($how): the read did not return in 60 s (stuck in the kernel)"
			echo "$a $how stuck" >> "$OUT/stuck"
			fail=1
			stuck=1
		elif [ "$(cat "/tmp/$a.$how.done")" != 0 ]; then
			echo "not ok - $a ($how): $(cat "/tmp/$a.$how.err")"
			fail=1
		else
			cp "/tmp/$a.$how" "$OUT/$a.$how.kpread"
			echo "ok - $a ($how): the read returned after $((i / 10)).$((i % 10)) s"
		fi
	done
done
dmesg > "$OUT/dmesg"
if grep -E 'BUG:|WARNING:|Oops' "$OUT/dmesg"; then
	echo "not ok - kernel warnings"
	fail=1
fi
# a stuck reader shows as a soft lockup or an RCU stall (so can a starved
# TCG vCPU on a busy host: reported, not failed on)
grep -E 'soft lockup|detected stalls' "$OUT/dmesg" || true
exit $fail
