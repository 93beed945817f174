#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: the guest's flattened kdump (written through a pipe from the live
# /proc/kcore) opens in crash and makedumpfile -R, and holds the same pages
# as its ELF dump; then the outside readers on every format converted from
# the ELF dump (tests/oracle/readers.sh, kernel mode).  The flattened
# kdump and the ELF dump are read from live memory one after the other, so
# only their layout is compared, not their pages.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rel=$(cat "$d/uname-r")
check=$(dirname "$KCOREDUMP")/tests/tools/kdump-check
got=$(crash --osrelease "$d/ram.flat" 2>&1 | tail -n 1)
if [[ $got == "$rel" ]]; then
	ok "crash --osrelease ram.flat (flattened, from a pipe) says $rel"
else
	not_ok "crash --osrelease ram.flat says '$got', not $rel"
fi
grep -q "without physical memory dropped" "$d/flat.txt" &&
	ok "the kdump summary warns that the kernel text segment was dropped" ||
	not_ok "no warning about the dropped text segment in the summary"
# --exclude 31 on the live kernel: free pages as the kernel counts them.
if [[ -r $d/x31.json ]]; then
	memfree_kb=$(awk '{print $2}' "$d/memfree")
	jqcheck "--exclude 31: free pages within 10% of MemFree ($memfree_kb kB)" "$d/x31.json" \
		'.exclude.level == 31 and (.exclude.free * 4 - $m) <= $m / 10 and ($m - .exclude.free * 4) <= $m / 10' --argjson m "$memfree_kb"
	jqcheck "--exclude 31: page cache and user pages found, nothing unreadable" "$d/x31.json" \
		'.exclude.cache > 0 and .exclude.user > 0 and .exclude.unreadable == 0 and
		 .stats.bytes_excluded == .exclude.pages_excluded * 4096'
	# The left-out pages are holes in the kdump's bitmaps, and so are the
	# zero pages (they point at the shared zero page): its data and hole
	# bytes are exactly the pages the dump read with data, and those it
	# left out or found zero.  (How much smaller it is than the full kdump
	# depends on what the free pages held, so only "smaller" is checked.)
	"$KCOREDUMP" info --json --no-modules "$d/x31.kdump" > "$tmp/x31-info.json"
	jqcheck "--exclude 31 kdump: its data and hole bytes are the pages read with data, and those left out or zero" "$tmp/x31-info.json" \
		'([.segments[] | select(.type == "LOAD") | .data_bytes] | add) == $x.stats.bytes_read - $x.stats.bytes_zero and
		 ([.segments[] | select(.type == "LOAD") | .hole_bytes] | add) == $x.stats.bytes_excluded + $x.stats.bytes_zero and
		 $x.stats.bytes_zero == $x.kdump.pages_zero * 4096' \
		--argjson x "$(cat "$d/x31.json")"
	xs=$(stat -c %s "$d/x31.kdump") fs=$(stat -c %s "$d/ram.flat")
	if ((xs < fs)); then
		ok "--exclude 31 kdump: $xs bytes, smaller than the full kdump's $fs"
	else
		not_ok "--exclude 31 kdump: $xs bytes, not smaller than the full kdump's $fs"
	fi
	got=$(crash --osrelease "$d/x31.kdump" 2>&1 | tail -n 1)
	[[ $got == "$rel" ]] && ok "crash --osrelease on the --exclude 31 kdump says $rel" ||
		not_ok "crash --osrelease on the --exclude 31 kdump says '$got'"
	detail=$("$KCOREDUMP" info --json --no-holes --no-modules "$d/x31.kdump" | jq -r '.source.format_detail')
	[[ $detail == *"dump level 31"* ]] && ok "info of the --exclude 31 kdump: $detail" ||
		not_ok "info of the --exclude 31 kdump: '$detail'"
	if "$KCOREDUMP" verify -q "$d/x31.kdump"; then
		ok "the --exclude 31 kdump verifies"
	else
		not_ok "the --exclude 31 kdump does not verify"
	fi
else
	not_ok "no --exclude 31 dump from the guest"
fi
"$KCOREDUMP" dump -q --segments ram "$d/ram.elf" -o "$tmp/ram-only.elf"
pb=$("$KCOREDUMP" info --json --no-holes --no-modules "$d/ram.elf" | jq -r '.source.layout.phys_base')
# The two dumps were taken one after the other from live memory: pages
# may differ (--live counts them); layout and codec must be right.
if [[ -x $check ]] && "$check" kdump "$d/ram.flat" "$tmp/ram-only.elf" "$rel" "$pb" zlib --live; then
	ok "kdump-check: the guest's flattened kdump is well-formed"
else
	not_ok "kdump-check of the guest's flattened kdump"
fi
if makedumpfile -R "$tmp/re.kdump" < "$d/ram.flat" > /dev/null 2>&1 &&
	[[ $(crash --osrelease "$tmp/re.kdump" 2>&1 | tail -n 1) == "$rel" ]]; then
	ok "makedumpfile -R rebuilds the guest's flattened kdump; crash reads it"
else
	not_ok "makedumpfile -R / crash on the guest's flattened kdump"
fi
if bash "$VM_HERE/../oracle/readers.sh" "$KCOREDUMP" "$check" "$d/ram.elf" kernel; then
	ok "outside readers on the formats converted from the guest's ELF dump"
else
	not_ok "outside readers (tests/oracle/readers.sh) on the guest's dump"
fi
exit $fail
