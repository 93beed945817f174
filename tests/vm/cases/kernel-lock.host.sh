#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: kernel-lock.sh measured vmalloc()/vfree() latencies in every phase
# (idle, vread, dump: three runs each) and both readers made progress; the
# numbers themselves are bench/kernel-lock.sh's.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
for phase in idle vread dump; do
	n=$(grep -c "^$phase n " "$d/latency" || true)
	if ((n == 3)); then
		echo "ok - $phase: 3 latency runs"
	else
		echo "not ok - $phase: $n latency runs, want 3"; fail=1
	fi
done
for phase in vread dump; do
	r=$(awk -v p="$phase" '$1 == p { print $4 }' "$d/readers")
	if ((${r:-0} > 0)); then
		echo "ok - $phase reader: $r rounds"
	else
		echo "not ok - $phase reader made no progress"; fail=1
	fi
done
exit $fail
