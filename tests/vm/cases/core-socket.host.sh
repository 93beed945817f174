#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: what kcoredump core-handler stored from the kernel's coredump
# socket in the guest (core-socket.sh): --install chose "@@", the request
# protocol's cores and the "@" core are complete, say how they came, match
# the kernel's regular-file cores of the same programs (corecmp.py) and
# the helpers' known pattern (vmcheck.py), gdb reads them; the crash in
# another PID namespace is recorded as in a container, with its own pid.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
echo "# guest kernel $(cat "$d/uname.txt" 2>/dev/null), core_modes: $(tr '\n' ' ' < "$d/core_modes.txt" 2>/dev/null)"
sed 's/^/# install: /' "$d/install.err" 2>/dev/null || true

want="@@/run/kcoredump/coredump.socket"
pattern=$(cat "$d/core_pattern.txt")
[[ $pattern == "$want" ]] && ok "--install wrote $want" ||
	not_ok "--install: core_pattern '$pattern', want '$want'"
[[ $(cat "$d/pattern.txt") == "$want" ]] && ok "--print-pattern agrees: $want" ||
	not_ok "--print-pattern printed '$(cat "$d/pattern.txt")'"
[[ $(cat "$d/installed.txt") == "$want" ]] && ok "--install printed $want" ||
	not_ok "--install printed '$(cat "$d/installed.txt")'"
grep -q "replaced 'core'; to restore it: sysctl -w kernel.core_pattern='core'" "$d/install.err" &&
	grep -qx "kernel.core_pattern = $want" "$d/install.err" &&
	ok "--install said what it replaced, how to restore it, the sysctl.d line" ||
	not_ok "--install's report: $(head -c 400 "$d/install.err")"
[[ $(cat "$d/socket.stat") == "600 0" ]] && ok "the socket is root's, mode 0600" ||
	not_ok "socket: $(cat "$d/socket.stat")"
[[ $(cat "$d/core_pattern.plain.txt") == "@/run/kcoredump/coredump.socket" ]] &&
	ok "the kernel took @/run/kcoredump/coredump.socket" ||
	not_ok "plain pattern: $(cat "$d/core_pattern.plain.txt")"

for run in request.crash-dense request.crash-sparse request.container plain.crash-dense; do
	meta=$d/$run.json stored=$d/cores/$run
	[[ -f $meta && -f $stored ]] || { not_ok "$run: no metadata or core"; continue; }
	h=${run#*.}
	[[ $h == container ]] && h=crash-dense
	via=socket-request
	[[ $run == plain.* ]] && via=socket
	jqcheck "$run: complete, signal 6, comm $h, via $via" "$meta" \
		'.complete and .signal == 6 and .comm == "'"$h"'" and
		 .received.via == "'"$via"'" and .received.pidfd and
		 (.received.cgroup_id | type) == "number" and
		 .stream_bytes == .expected_bytes and .file_size == .stream_bytes'
	if [[ $via == socket-request ]] && jq -e '.received.request.mask == "0x1f"' "$meta" > /dev/null; then
		# a kernel with COREDUMP_HOLES (kernel/patches-7.3/4-coredump-socket-holes):
		# asked for, and the core came in records, its holes not sent
		jqcheck "$run: the kernel's request (mask 0x1f: COREDUMP_HOLES) and our ack 0x19, the holes as records" "$meta" \
			'.received.request == {"size": 16, "size_ack": 16, "mask": "0x1f", "ack_mask": "0x19"} and
			 (.pagemap.why_not | test("COREDUMP_HOLES"))'
		if [[ $h == crash-sparse ]]; then
			jqcheck "$run: the sparse core's holes were not sent (unread_bytes > 90% of the stream)" "$meta" \
				'.pagemap.unread_bytes > .stream_bytes * 0.9'
		fi
	elif [[ $via == socket-request ]]; then
		jqcheck "$run: the kernel's request (size 16, size_ack 16, mask 0xf) and our ack 0x9" "$meta" \
			'.received.request == {"size": 16, "size_ack": 16, "mask": "0xf", "ack_mask": "0x9"}'
	fi
	jqcheck "$run: dump mode 1 from PIDFD_INFO_COREDUMP, the process's /proc read" "$meta" \
		'.access.dump_mode == 1 and .received.coredump_mask != null and
		 .received.ns_pid != null'
	nspid=$(awk '$1 == "pid" { print $2 }' "$d/$run.txt")
	if [[ $run == request.container ]]; then
		jqcheck "$run: in a container, ns pid $nspid (its own), pid and mnt namespaces differ" "$meta" \
			'.received.in_container and .received.ns_pid == $p and
			 .pid != $p and (.received.namespaces_differ | index("pid") != null)
			 and (.received.namespaces_differ | index("mnt") != null)' \
			--argjson p "$nspid"
	else
		jqcheck "$run: not in a container, pid $nspid" "$meta" \
			'(.received.in_container | not) and .pid == $p and .received.ns_pid == $p' \
			--argjson p "$nspid"
	fi
	extra=()
	[[ $h == crash-sparse ]] && extra+=(--sparse)
	vmcheck core "$stored" "$d/$run.txt" "${extra[@]}"
	if [[ $run != request.container ]]; then
		"$PYTHON" "$VM_HERE/lib/corecmp.py" "$d/cores/file.$h" "$stored" |
			sed "s/^\(not \)\{0,1\}ok - /&$run: socket core vs kernel file core: /" > "$d/$run.corecmp" || fail=1
		grep -q '^not ok' "$d/$run.corecmp" && fail=1
		cat "$d/$run.corecmp"
	fi
	if gdb -batch -ex bt -ex 'info threads' "$d/$h" "$stored" > "$d/$run.gdb.txt" 2>&1 &&
		grep -q ' in main ' "$d/$run.gdb.txt"; then
		ok "$run: gdb bt shows main()"
	else
		not_ok "$run: gdb bt: $(head -c 600 "$d/$run.gdb.txt")"
	fi
done
jqcheck "list --json shows the four socket cores, complete" "$d/list.json" \
	'(.cores | length) == 4 and all(.cores[]; .core_present and .status == "complete")'
grep -q "connection via socket-request" "$d/listener.log" &&
	ok "the listener logged the connections (-v)" ||
	not_ok "listener log: $(head -c 400 "$d/listener.log")"

# The handler as uid 999 without capabilities (the systemd service's way).
[[ $(cat "$d/unpriv-socket.stat" 2>/dev/null) == "600 999" ]] &&
	ok "unprivileged: the listener's socket is uid 999's, 0600" ||
	not_ok "unprivileged socket: $(cat "$d/unpriv-socket.stat" 2>/dev/null)"
grep -qx 'CapEff:.0000000000000000' "$d/unpriv-caps.txt" &&
	grep -qx 'CapPrm:.0000000000000000' "$d/unpriv-caps.txt" &&
	ok "unprivileged: the listener has no capabilities" ||
	not_ok "unprivileged caps: $(cat "$d/unpriv-caps.txt" 2>/dev/null)"
for p in plain setuid; do
	m=$d/unpriv.$p.json
	[[ -f $m ]] || { not_ok "unprivileged $p: no metadata"; continue; }
	jqcheck "unprivileged $p: cwd, root, open_fds, namespaces unreadable (Permission denied), said why; cmdline read" "$m" \
		'(.facts_unreadable | .cwd == "Permission denied" and .root == "Permission denied" and
		  .open_fds == "Permission denied" and .namespaces == "Permission denied") and
		 (.facts_unreadable_why | test("uid 999 without CAP_SYS_PTRACE")) and
		 has("cwd") == false and .cmdline != null'
	[[ $(cut -d' ' -f1 "$d/unpriv.$p.stat") == 999 ]] &&
		ok "unprivileged $p: the core is the store owner's (uid 999)" ||
		not_ok "unprivileged $p: core stat $(cat "$d/unpriv.$p.stat")"
	if [[ $p == plain ]]; then
		jqcheck "unprivileged plain: complete, uid 1000, dump mode 1, readable by its user" "$m" \
			'.complete and .uid == 1000 and .access.dump_mode == 1 and .access.user and
			 .received.via == "socket-request"'
		[[ $(cat "$d/unpriv.plain.user-reads") == yes ]] &&
			ok "unprivileged plain: uid 1000 reads its core" ||
			not_ok "unprivileged plain: uid 1000 cannot read its core"
	else
		jqcheck "unprivileged setuid: complete, dump mode 2, not the user's" "$m" \
			'.complete and .uid == 1000 and .access.dump_mode == 2 and (.access.user | not)'
		[[ $(cat "$d/unpriv.setuid.user-reads") == no ]] &&
			ok "unprivileged setuid: uid 1000 cannot read the core" ||
			not_ok "unprivileged setuid: uid 1000 reads the setuid core"
		grep -q '/user\.' "$d/unpriv.setuid.where" &&
			not_ok "unprivileged setuid: stored in a user directory" ||
			ok "unprivileged setuid: stored outside the user directories"
	fi
done
exit $fail
