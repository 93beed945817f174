#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: static-bin.sh's findings.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
sed 's/^/# /' "$d/version.txt"
if grep -q '^build: static' "$d/version.txt" &&
	! grep -qE ' (INTERP|DYNAMIC) ' "$d/phdrs.txt"; then
	ok "the guest ran a static kcoredump (no PT_INTERP, no PT_DYNAMIC)"
else
	not_ok "the guest's kcoredump is not static"
fi
exit $fail
