#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest library (sourced, not a case): run_group CASE... runs each case in
# one boot, each into /results/<case>/ with its exit status in
# /results/<case>/rc; returns 1 if any failed.  The group's host check
# runs the matching host checks with run_host_group (lib/host-common.sh).
run_group()
{
	group_rc=0
	for c in "$@"; do
		mkdir -p "/results/$c"
		echo "=== $c"
		r=0
		OUT=/results/$c sh "/cases/$c.sh" || r=$?
		echo "$r" > "/results/$c/rc"
		echo "=== $c: exit $r"
		[ "$r" -eq 0 ] || group_rc=1
	done
	return $group_rc
}
