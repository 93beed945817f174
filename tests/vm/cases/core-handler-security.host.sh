#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: what the guest's core handler did with the attackers' crashes
# (core-handler-security.sh).
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"

p=$(cat "$d/core_pattern.txt")
[[ $p == "|/tools/kcoredump core-handler --dump-mode=%d "*" %P %u %g %s %t %e" && $p == "$(cat "$d/pattern.txt")" ]] &&
	ok "--install wrote the printed pattern with %d: $p" || not_ok "core_pattern '$p'"

jqcheck "setuid root program, suid_dumpable=2: dump mode 2, no access for uid 1000" "$d/setuid.json" \
	'.access.dump_mode == 2 and (.access.user | not) and .uid == 1000 and .complete'
[[ "$(sort -u "$d/setuid.stat")" == "0:0 600" ]] &&
	ok "setuid: core and metadata root's, mode 0600" || not_ok "setuid: $(cat "$d/setuid.stat")"
[[ "$(cat "$d/setuid.user-reads")" == no ]] && ok "setuid: uid 1000 cannot read the core" ||
	not_ok "setuid: uid 1000 reads the core"
[[ "$(cat "$d/setuid.where")" != */user.1000/* ]] && ok "setuid: not in user.1000" ||
	not_ok "setuid: stored in $(cat "$d/setuid.where")"

jqcheck "plain program of uid 1000: dump mode 1, access for uid 1000" "$d/plain.json" \
	'.access.dump_mode == 1 and .access.user and .uid == 1000 and .complete'
[[ "$(cat "$d/plain.where")" == */user.1000/* ]] && ok "plain: stored in user.1000" ||
	not_ok "plain: stored in $(cat "$d/plain.where")"
[[ "$(awk '{ print $1 }' "$d/plain.stat" | sort -u)" == "0:0" ]] && ok "plain: files still root's" ||
	not_ok "plain: $(cat "$d/plain.stat")"
[[ "$(cat "$d/plain.user-reads")" == yes ]] && ok "plain: uid 1000 reads its core (ACL)" ||
	not_ok "plain: uid 1000 cannot read its core"
[[ "$(cat "$d/user-lists-store")" == no ]] && ok "uid 1000 cannot list the store" ||
	not_ok "uid 1000 lists the store"
jqcheck "kcoredump list as uid 1000: its own core only (the setuid one is root's)" \
	"$d/user-list.json" '(.cores | length) == 1 and .cores[0].uid == 1000'

[[ "$(cat "$d/linkmap.lie-in-core")" == yes ]] && ok "link map: the core holds the lie" ||
	not_ok "link map: the FIFO path is not in the core"
secs=$(cat "$d/linkmap.secs")
(($(echo "$secs < 30" | bc))) && ok "link map: stored in $secs s (the FIFO stalls nothing)" ||
	not_ok "link map: took $secs s"
if grep -q "^open /tmp/lm/canary" "$d/linkmap.events"; then
	not_ok "link map: the canary was opened"
else
	ok "link map: the canary was never opened"
fi
first=$(grep '^create .*/core\.' "$d/linkmap.events" | head -n 1 || true)
[[ $first == *.json ]] && ok "link map: the metadata appeared first ($first)" || not_ok "link map: first '$first'"
jqcheck "link map: the build-ID helper ran as nobody under seccomp in an empty root" "$d/linkmap.json" \
	'.build_ids_sandbox.uid == 65534 and .build_ids_sandbox.seccomp and .build_ids_sandbox.chroot
	 and .build_ids_sandbox.cap_eff == "0x0"'

if LC_ALL=C grep -q $'\x1b' "$d/kmsg.txt"; then
	not_ok "kernel log: a raw escape sequence"
elif grep -q '\\x1b\[31mred' "$d/kmsg.txt"; then
	ok "kernel log: the task name shown escaped"
else
	not_ok "kernel log: no line for the escaped name ($(tail -n 3 "$d/kmsg.txt"))"
fi
exit $fail
