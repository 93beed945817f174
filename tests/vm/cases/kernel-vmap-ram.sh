#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: /proc/kcore reads of vm_map_ram() areas (kernel/test/kcore_test.ko,
# pass it with --tool).  The module maps 4 + 2 pages with vm_map_ram() (a
# vmap_block) and 4 pages with vmalloc(), every page with its own pattern,
# and more shapes (vmap() without vm->pages, 16 MiB, ioremap, block regions
# around a dirty gap, an area ending a block, vmalloc_huge(); see
# kernel/test/kcore_test.c).  Each area is read page by page and whole,
# by plain pread (kpread) and by libkcore (kcore-read, with --tool); the raw
# bytes go to $OUT for the host check, which verifies every word.
#
# Stock 6.12 fails this (vmap_ram_vread_iter returns page 0 of a used region
# for every page of it); kernel/patches/0001 fixes it.
set -eu

ko=
for f in /tools/kcore_test.ko /cases/kcore_test.ko; do
	[ -e "$f" ] && ko=$f && break
done
if [ -z "$ko" ]; then
	echo "kcore_test.ko not given (--tool kernel/test/kcore_test.ko)"
	exit 1
fi
insmod "$ko"
uname -r > "$OUT/uname"
p=/sys/module/kcore_test/parameters
fail=0

readers="kpread"
command -v kcore-read > /dev/null && readers="$readers kcore-read"

rd() { # reader vaddr len
	case "$1" in
	kpread) kpread --vaddr "$2" --len "$3" ;;
	kcore-read) kcore-read /proc/kcore --vaddr "$2" --len "$3" ;;
	esac
}

# first 8-byte word of page k of area a, as od -t x8 prints it
want_word() { printf '6b637465%02x%02x%02x00' $(($2 >> 8)) "$1" $(($2 & 255)); }

check_area() { # name area-number npages [whole]
	name=$1 area=$2 npages=$3 hows=${4:-whole pages}
	addr=$(cat "$p/${name}_addr")
	printf '%s 0x%x %d\n' "$name" "$addr" "$npages" >> "$OUT/areas"
	for r in $readers; do
		rd "$r" "$addr" $((npages * 4096)) > "$OUT/$name.whole.$r"
		[ "$hows" = whole ] || : > "$OUT/$name.pages.$r"
		k=0
		while [ "$hows" != whole ] && [ $k -lt "$npages" ]; do
			rd "$r" $((addr + k * 4096)) 4096 >> "$OUT/$name.pages.$r"
			k=$((k + 1))
		done
		[ "$hows" != whole ] || continue   # the host check verifies these
		for how in $hows; do
			k=0 bad=""
			while [ $k -lt "$npages" ]; do
				got=$(od -A n -t x8 -j $((k * 4096)) -N 8 \
					"$OUT/$name.$how.$r" | tr -d ' ')
				want=$(want_word "$area" "$k")
				[ "$got" = "$want" ] || bad="$bad page$k=$got"
				k=$((k + 1))
			done
			if [ -z "$bad" ]; then
				echo "ok - $name ($how, $r): $npages pages, first words match"
			else
				echo "not ok - $name ($how, $r): want page k = $(want_word "$area" 0)+k<<8, got$bad"
				fail=1
			fi
		done
	done
}

check_area ram 1 4
check_area ram2 2 2
check_area vmalloc 3 4
if [ -e "$p/vmap_addr" ]; then
	check_area vmap 4 4
	check_area big 5 4096 whole
	# ioremap: kcore reads zeros there (not memory)
	io=$(cat "$p/io_addr")
	if [ "$io" != 0 ]; then
		printf 'io 0x%x 1\n' "$io" >> "$OUT/areas"
		for r in $readers; do
			rd "$r" "$io" 4096 > "$OUT/io.whole.$r"
		done
	fi
	# the 16 MiB area and its guard page (static: other vmalloc space
	# holds live stacks), read whole, in 1 MiB blocks and from an
	# unaligned start: the same bytes each way, zeros in the guard page
	w0=$(cat "$p/big_addr")
	wlen=$(((16 << 20) + 4096))
	kpread --vaddr "$w0" --len "$wlen" > /tmp/win.whole
	: > /tmp/win.blocks
	i=0
	while [ $((i << 20)) -lt "$wlen" ]; do
		n=$((wlen - (i << 20)))
		[ $n -le $((1 << 20)) ] || n=$((1 << 20))
		kpread --vaddr $((w0 + (i << 20))) --len "$n" >> /tmp/win.blocks
		i=$((i + 1))
	done
	{ head -c 100 /tmp/win.whole
	  kpread --vaddr $((w0 + 100)) --len $((wlen - 100)); } > /tmp/win.unaligned
	guard=$(tail -c 4096 /tmp/win.whole | od -v -A n -t x1 | tr -d ' 0\n')
	if cmp /tmp/win.whole /tmp/win.blocks && cmp /tmp/win.whole /tmp/win.unaligned &&
		[ -z "$guard" ]; then
		echo "ok - big area + guard page: whole = 1 MiB reads = unaligned read, guard page zeros"
	else
		echo "not ok - big area + guard page: reads differ or guard page not zero"
		fail=1
	fi
	rm -f /tmp/win.whole /tmp/win.blocks /tmp/win.unaligned
fi
# Two used regions of a vmap block with a dirty gap (2 pages mapped and
# unmapped again) between them, a vm_map_ram() area ending at the end of a
# vmap block (bit VMAP_BBMAP_BITS), a vmalloc_huge() area; windows over
# the regions and the gap, from the first region and from inside the gap.
if [ -e "$p/gapa_addr" ]; then
	check_area gapa 6 4
	check_area gapc 7 4
	if [ "$(cat "$p/tail_addr")" = 0 ]; then
		echo "not ok - kcore_test placed no vm_map_ram() area at the end of a vmap block"
		fail=1
	else
		check_area tail 8 64
	fi
	check_area huge 9 1024 whole
	ga=$(cat "$p/gapa_addr") gb=$(cat "$p/gapb_addr") gc=$(cat "$p/gapc_addr")
	wend=$((gc + 4 * 4096))
	: > "$OUT/windows"
	for w in "gap-from-a $ga" "gap-from-dirty $gb"; do
		# shellcheck disable=SC2086 # label and address are words
		set -- $w
		printf '%s 0x%x %d\n' "$1" "$2" $((wend - $2)) >> "$OUT/windows"
		for r in $readers; do
			rd "$r" "$2" $((wend - $2)) > "$OUT/win-$1.$r"
		done
	done
else
	echo "not ok - kcore_test.ko has no gap/tail/huge areas"
	fail=1
fi
dmesg | grep kcore_test || true
exit $fail
