#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: the smear bench's rows (bench/results/smear.md), one per read
# order, from the two acquisition records: the changed fraction, by
# class, and when the kernel image was read.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
"$PYTHON" "$VM_HERE/lib/dumpcheck.py" smear-bench "$d" || fail=1
exit $fail
