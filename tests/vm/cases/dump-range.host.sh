#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: --range dumps: one PT_LOAD of exactly the window (2 MiB of kernel
# text; 16 MiB at paddr 0x100000 with --phys), bytes = /proc/kcore.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
"$PYTHON" "$VM_HERE/lib/dumpcheck.py" range "$d" || fail=1
exit $fail
