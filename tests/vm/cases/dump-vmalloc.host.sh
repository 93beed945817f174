#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: the --vmalloc-range dump: seconds, bytes_read vs the vmalloc segment,
# one PT_LOAD per area, sampled areas equal to /proc/kcore.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
"$PYTHON" "$VM_HERE/lib/dumpcheck.py" vmalloc "$d" || fail=1
exit $fail
