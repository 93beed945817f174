#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: digest the cores kernel-coredump.sh wrote (notes masked, see
# kernel/test/coredigest.py) and check them: every shape dumped with
# SIGABRT, no kernel warning, every core holds at least the pages the
# program wrote (crash-shapes.c: want[] below).  With KCD_REFERENCE set
# to another run's results directory (the other kernel), every digest must
# equal that run's: the cores are byte-identical outside the notes.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
rc=0
if [[ -s "$d/dmesg-bad" ]]; then
	echo "not ok - kernel warnings in dmesg:"; cat "$d/dmesg-bad"; rc=1
else
	echo "ok - no kernel warnings"
fi
: > "$d/digests"
# pages each shape writes (the core has a few more: binary, stack)
declare -A want=([dense]=16384 [sparse64g]=1 [sparse1t]=1 [strided]=1030
	[thp]=8 [file]=65 [shmem]=1024 [zeropage]=8 [mt]=4096)
while read -r shape _ pid _ us _ status; do
	core=$d/cores/$shape.core
	if [[ "$status" != 134 ]]; then
		echo "not ok - $shape: wait status $status, not SIGABRT with a core (134)"; rc=1; continue
	fi
	line=$("$PYTHON" "$VM_REPO/kernel/test/coredigest.py" "$core")
	read -r dg size nz _ <<< "$line"
	echo "$shape $dg $size $nz $us" >> "$d/digests"
	if ((nz > ${want[$shape]:-0})); then
		echo "ok - $shape: core ${size} bytes, $nz non-zero pages, dumped in $us us (pid $pid)"
	else
		echo "not ok - $shape: core has $nz non-zero pages, want more than ${want[$shape]:-0}"; rc=1
	fi
done < "$d/dump-times"
if [[ -n "${KCD_REFERENCE:-}" && -f "$KCD_REFERENCE/digests" ]]; then
	while read -r shape dg size _; do
		ref=$(awk -v s="$shape" '$1 == s { print $2, $3 }' "$KCD_REFERENCE/digests")
		if [[ -z "$ref" ]]; then
			echo "# $shape: not in the reference run"
		elif [[ "$ref" == "$dg $size" ]]; then
			echo "ok - $shape: core identical to the reference kernel's (notes masked)"
		else
			echo "not ok - $shape: core differs from the reference kernel's ($ref vs $dg $size)"; rc=1
		fi
	done < "$d/digests"
fi
exit $rc
