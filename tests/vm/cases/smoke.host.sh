#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: the host checks of every case smoke.sh ran, each on its subdir.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
for c in info-kcore read-kcore cat-kcore process-cores timing; do
	echo "=== host check $c"
	if [[ ! -d "$1/$c" ]]; then
		not_ok "$c: no results"
	elif ! bash "$VM_HERE/cases/$c.host.sh" "$1/$c"; then
		echo "=== host check $c: FAILED"
		fail=1
	fi
done
exit $fail
