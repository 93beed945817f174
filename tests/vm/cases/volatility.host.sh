#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: the guest's ELF dump and its process list are there, and the dump
# converts to LiME and AVML; Volatility 3 itself runs in
# tests/oracle/volatility.sh (heavy).
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
for f in ram.elf ps-before.txt ps-after.txt; do
	if [[ -s $d/$f ]]; then
		ok "guest wrote $f"
	else
		not_ok "guest wrote no $f"
	fi
done
for fmt in lime avml; do
	if "$KCOREDUMP" convert -q "$d/ram.elf" --format $fmt -o "$d/ram.$fmt"; then
		ok "ram.elf converts to ram.$fmt"
	else
		not_ok "ram.elf does not convert to ram.$fmt"
	fi
done
exit "$fail"
