#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: the main job's dumps verify on the host too and carry VMCOREINFO.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
for f in ram.elf.zst vmalloc.elf; do
	if "$KCOREDUMP" verify -q "$d/$f"; then
		ok "$f verifies on the host"
	else
		not_ok "$f does not verify on the host"
	fi
done
jqcheck "RAM dump read something" "$d/ram.json" '.stats.bytes_read > 0'
jqcheck "vmalloc dump lists mapped areas" "$d/vmalloc.json" \
	'.vmalloc.areas > 0 and .stats.bytes_read < .vmalloc.segment_size'
# Into a file first: under pipefail, grep -q leaving early would SIGPIPE info.
"$KCOREDUMP" info --notes-only "$d/vmalloc.elf" > "$d/vmalloc.notes" 2>&1 || true
if grep -q "OSRELEASE.*$(cat "$d/uname-r")" "$d/vmalloc.notes"; then
	ok "the vmalloc dump carries VMCOREINFO with the guest's release"
else
	not_ok "no VMCOREINFO OSRELEASE in the vmalloc dump"
fi
# crash(8) reads the release from our ELF dumps' VMCOREINFO.
if command -v crash > /dev/null; then
	rel=$(cat "$d/uname-r")
	"$KCOREDUMP" extract -q -f "$d/ram.elf.zst" -o "$d/ram.elf"
	for f in ram.elf vmalloc.elf; do
		got=$(crash --osrelease "$d/$f" 2>&1 | tail -n 1)
		if [[ $got == "$rel" ]]; then
			ok "crash --osrelease $f says $rel"
		else
			not_ok "crash --osrelease $f says '$got', not $rel"
		fi
	done
	rm -f "$d/ram.elf"
else
	echo "# crash(8) not installed: skipping crash --osrelease"
fi
echo "# RAM: $(jq -r '"\(.stats.bytes_read) bytes read in \(.stats.seconds) s, \(.stats.bytes_written) written"' "$d/ram.json")"
echo "# vmalloc: $(jq -r '"\(.vmalloc.areas) areas, \(.stats.bytes_read) bytes read of a \(.vmalloc.segment_size)-byte segment in \(.stats.seconds) s"' "$d/vmalloc.json")"
exit $fail
