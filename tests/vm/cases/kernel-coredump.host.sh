#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: check the cores kernel-coredump.sh wrote: every shape crashed as it
# should (SIGABRT with a core; SHAPE:nodump without one; kill: SIGKILL, the
# process gone less than 2 s after the kill), no kernel warning, and every
# core holds exactly what its program wrote: the patterns of its layout file
# and zeros in the rest of its mappings (kernel/test/corecheck.c).  The
# swap shape must have had pages swapped out; with 5-level paging the high
# shape must lie above 2^47.  Cores are digested with their notes masked
# (kernel/test/coredigest.py); with KCD_REFERENCE set to another run's
# results directory (the other kernel), every digest must equal that run's
# (clonevm excepted: its sibling changes memory during the dump).
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
command -v corecheck > /dev/null || { echo "not ok - corecheck not on PATH (kernel/test.sh builds it)"; exit 1; }
five=0
grep -qw no5lvl "$d/cmdline" 2> /dev/null || five=1
: > "$d/digests"
while read -r shape _ pid _ us _ status rest; do
	core=$d/cores/$shape.core
	layout=$d/cores/$shape.layout
	case $shape in
	*:nodump)
		if [[ "$status" == 6 ]]; then
			echo "ok - $shape: SIGABRT without a core in $us us"
		else
			echo "not ok - $shape: wait status $status, want 6"; rc=1
		fi
		continue ;;
	kill)
		kill_us=${rest#kill_us }
		if [[ "$status" == 9 ]] && ((kill_us < 2000000)); then
			echo "ok - kill: gone $kill_us us after SIGKILL during the dump"
		else
			echo "not ok - kill: wait status $status, $kill_us us after SIGKILL (want 9, < 2 s)"; rc=1
		fi
		continue ;;
	esac
	if [[ "$status" != 134 ]]; then
		echo "not ok - $shape: wait status $status, not SIGABRT with a core (134)"; rc=1; continue
	fi
	if out=$(corecheck "$core" "$layout"); then
		echo "${out//$d\/cores\//}"
	else
		echo "${out//$d\/cores\//}"; rc=1
	fi
	case $shape in
	swap)
		n=$(awk '$1 == "info" && $2 == "swapped" { print $3 }' "$layout")
		if ((${n:-0} > 0)); then
			echo "ok - swap: $n pages were swapped out when it crashed"
		else
			echo "not ok - swap: no page was swapped out (swap set up?)"; rc=1
		fi ;;
	high)
		a=$(awk '$1 == "info" && $2 == "above_2^47" { print $3 }' "$layout")
		if ((five == 0)) || [[ "$a" == 1 ]]; then
			echo "ok - high: above 2^47: ${a:-?} (5-level paging: $five)"
		else
			echo "not ok - high: not above 2^47 with 5-level paging"; rc=1
		fi ;;
	esac
	# the layout names the [vvar] pages (kernel-updated: only their being
	# non-zero is compared)
	lay=()
	[[ ! -f "$layout" ]] || lay=(--layout "$layout")
	line=$("$PYTHON" "$VM_REPO/kernel/test/coredigest.py" ${lay[@]+"${lay[@]}"} "$core")
	read -r dg size nz _ <<< "$line"
	echo "$shape $dg $size $nz $us" >> "$d/digests"
	echo "# $shape: core $size bytes, $nz non-zero pages, dumped in $us us (pid $pid)"
done < "$d/dump-times"
# SHAPE:sock came through the coredump socket (coresock): the same core as
# the kernel's core file of SHAPE in this boot (corecmp.py: the same
# program headers, the same segment data but for the bytes two runs of one
# program differ in, here its pid and its argv's ":sock"), and what the
# socket carried.  (Across kernels, bench/kernel-ab.sh compares the whole
# cores of SHAPE:sock, notes masked, as of any shape.)
while read -r shape _; do
	[[ "$shape" == *:sock ]] || continue
	if [[ ! -f "$d/cores/${shape%:sock}.core" ]]; then
		echo "# $shape: ${shape%:sock} was not dumped to a file in this boot"
	elif "$PYTHON" "$VM_REPO/tests/vm/lib/corecmp.py" "$d/cores/${shape%:sock}.core" \
		"$d/cores/$shape.core" > "$d/$shape.corecmp"; then
		sed "s/^ok - /&$shape: the socket's core vs the core file: /" "$d/$shape.corecmp"
	else
		sed "s/^\(not \)\{0,1\}ok - /&$shape: the socket's core vs the core file: /" "$d/$shape.corecmp"
		rc=1
	fi
	pid=$(awk -v s="$shape" '$1 == s { print $3 }' "$d/dump-times" | tail -n 1)
	line=$(grep "^pid $pid " "$d/coresock.log" 2> /dev/null || true)
	[[ -n "$line" ]] && echo "# $shape: coresock $line" ||
		{ echo "not ok - $shape: coresock logged no core for pid $pid"; rc=1; }
done < "$d/digests"
if [[ -n "${KCD_REFERENCE:-}" && -f "$KCD_REFERENCE/digests" ]]; then
	while read -r shape dg size _; do
		[[ "$shape" != clonevm ]] || continue
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
