#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: zstd -d the .zst dump of the kernel text window; its PT_LOAD payload
# must equal the uncompressed dump's.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
if ! command -v zstd > /dev/null; then
	echo "# SKIP dump-verify-zst: zstd not installed"
	exit 0
fi
"$PYTHON" "$VM_HERE/lib/dumpcheck.py" zst "$d" || fail=1
exit $fail
