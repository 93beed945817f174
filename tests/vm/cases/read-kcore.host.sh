#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: re-check what read-kcore.sh recorded (the guest already compared).
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
want=$(head -n 1 "$d/version")
for b in "$d"/banner.kpread "$d"/banner.kcore-read; do
	[[ -f "$b" ]] || continue
	if [[ "$(cat "$b")" == "$want" ]]; then
		ok "$(basename "$b"): linux_banner equals /proc/version"
	else
		not_ok "$(basename "$b"): '$(cat "$b")' != '$want'"
	fi
done
n=$(wc -l < "$d/text.sha256")
distinct=$(cut -d' ' -f3 "$d/text.sha256" | sort -u | wc -l)
if [[ $distinct -eq 1 && $n -ge 2 ]]; then
	ok "kernel text: $n reads, one sha256"
else
	not_ok "kernel text: $n reads, $distinct different sha256"
fi
if [[ -f "$d/skipped" ]]; then
	echo "# SKIP libkcore reads: $(cat "$d/skipped")"
elif [[ $n -ne 4 ]]; then
	not_ok "expected 4 kernel text reads (kpread and kcore-read, twice), got $n"
fi
exit $fail
