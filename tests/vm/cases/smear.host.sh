#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: the smear case: every page of the dirtier's buffer is among the
# changed pages of the report (JSON summary and record), counted as RAM;
# its read time is in the dump's note; the report is the live kernel's.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
"$PYTHON" "$VM_HERE/lib/dumpcheck.py" smear "$d" || fail=1
exit $fail
