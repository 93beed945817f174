#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: the guest's ELF, LiME and AVML files and its process list are
# there; Volatility 3 itself runs in tests/oracle/volatility.sh (heavy).
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
for f in ram.elf ram.lime ram.avml ps-before.txt ps-after.txt; do
	if [[ -s $d/$f ]]; then
		ok "guest wrote $f"
	else
		not_ok "guest wrote no $f"
	fi
done
exit "$fail"
