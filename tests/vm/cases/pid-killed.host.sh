#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: the guest's dump of a target killed mid-copy exited 7 (incomplete)
# and its JSON summary lists the unread ranges; the core records them
# (info --json, verify exit 7).
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
rc=$(cat "$d/pid.rc" 2>/dev/null || echo none)
if [[ $rc == 7 ]]; then
	ok "pid of a target killed mid-dump exits 7 (incomplete)"
else
	not_ok "pid of a target killed mid-dump exits $rc, not 7"
fi
jqcheck "the JSON says incomplete, vanished, and lists the unread ranges" \
	"$d/summary.json" \
	'.complete == false and .process.vanished == true and
	 .stats.bytes_unreadable > 0 and
	 ([.read_errors[].length] | add) == .stats.bytes_unreadable'
# shellcheck disable=SC2016 # $s is jq's
jqcheck "the core records them: info says incomplete with the same bytes" \
	"$d/info.json" '.source.complete == false and
	 .source.incomplete.unreadable_bytes == $s[0].stats.bytes_unreadable' \
	--slurpfile s "$d/summary.json"
vrc=$(cat "$d/verify.rc" 2>/dev/null || echo none)
if [[ $vrc == 7 ]]; then
	ok "verify of the core exits 7 (incomplete)"
else
	not_ok "verify of the core exits $vrc, not 7"
fi
exit "$fail"
