#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: report the guest's boot time and /proc/kcore RAM pread throughput.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
up=$(cut -d' ' -f1 "$d/uptime-start" 2>/dev/null || echo '?')
bytes=$(awk '$1 == "bytes" { print $2 }' "$d/bench")
secs=$(awk '$1 == "seconds" { print $2 }' "$d/bench")
mbps=$(awk '$1 == "mbps" { print $2 }' "$d/bench")
echo "# kernel uptime when the case started: ${up} s"
echo "# /proc/kcore RAM segments, 1 MiB preads: $bytes bytes in $secs s = $mbps MB/s"
if [[ -n "$bytes" && "$bytes" -gt 0 ]]; then
	ok "kpread --bench read the RAM segments"
else
	not_ok "kpread --bench read nothing"
fi
exit $fail
