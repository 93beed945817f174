#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: core-socket-holes.sh's cores.  The kernel offered COREDUMP_HOLES
# (request mask 0x1f), kcoredump asked for it (ack 0x19) and read the
# core in records: complete, the holes not sent (pagemap.why_not says
# why the page tables were not needed, unread_bytes counts the holes),
# and each stored core is the kernel's own core file of the same program
# (corecmp.py) and holds the helper's pattern (vmcheck.py).
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
echo "# guest kernel $(cat "$d/uname.txt" 2>/dev/null)"
sed 's/^/# time: /' "$d/times" 2> /dev/null || true
for h in crash-sparse crash-dense; do
	meta=$d/socket.$h.json stored=$d/cores/socket.$h
	[[ -f $meta && -f $stored && -f $d/cores/file.$h ]] || { not_ok "$h: no metadata or core"; continue; }
	jqcheck "$h: complete, via socket-request, the kernel offered COREDUMP_HOLES (0x1f) and we asked (0x19)" "$meta" \
		'.complete and .received.via == "socket-request" and
		 .received.request.mask == "0x1f" and .received.request.ack_mask == "0x19" and
		 .stream_bytes == .expected_bytes and (.pagemap.why_not | test("COREDUMP_HOLES"))'
	if [[ $h == crash-sparse ]]; then
		jqcheck "$h: the holes did not cross the socket (unread > 99% of the stream)" "$meta" \
			'.pagemap.unread_bytes > .stream_bytes * 0.99'
	fi
	extra=()
	[[ $h == crash-sparse ]] && extra+=(--sparse)
	vmcheck core "$stored" "$d/socket.$h.txt" "${extra[@]}"
	"$PYTHON" "$VM_HERE/lib/corecmp.py" "$d/cores/file.$h" "$stored" |
		sed "s/^\(not \)\{0,1\}ok - /&$h: socket core vs kernel file core: /" > "$d/$h.corecmp" || fail=1
	grep -q '^not ok' "$d/$h.corecmp" && fail=1
	grep -q '^ok' "$d/$h.corecmp" || not_ok "$h: corecmp said nothing"
	cat "$d/$h.corecmp"
done
exit $fail
