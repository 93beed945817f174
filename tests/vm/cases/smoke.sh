#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: all quick cases in one boot, each into /results/<case>/.
# smoke.host.sh runs the matching host checks.
rc=0
for c in info-kcore read-kcore cat-kcore process-cores timing; do
	mkdir -p "/results/$c"
	echo "=== $c"
	r=0
	OUT=/results/$c sh "/cases/$c.sh" || r=$?
	echo "$r" > "/results/$c/rc"
	echo "=== $c: exit $r"
	[ "$r" -eq 0 ] || rc=1
done
exit $rc
