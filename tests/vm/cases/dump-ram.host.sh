#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: the RAM dump: ELF layout (eu-readelf, own parser), per-segment sha256,
# linux_banner by physical address (own parser, drgn), dump vs pread MB/s.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
"$PYTHON" "$VM_HERE/lib/dumpcheck.py" ram "$d" || fail=1
exit $fail
