#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: the cores kcoredump core-handler stored in the guest, read by gdb,
# eu-stack, kcoredump info and vmcheck.py (the helpers' known pattern);
# compared with the kernel's regular-file cores and the raw streams.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
# An arm64 guest's cores need gdb-multiarch on this host.
gdb=gdb
[[ ${VM_ARCH:-amd64} == amd64 ]] || gdb=gdb-multiarch
d=$1
guest_rc_ok "$d"
sed 's/^/# /' "$d/times" 2>/dev/null || true

pattern=$(cat "$d/core_pattern.txt")
if [[ "$pattern" == "|/tools/kcoredump core-handler --dump-mode=%d --dir /tmp/kc --timeout "*" %P %u %g %s %t %e" &&
	"$pattern" == "$(cat "$d/pattern.txt")" ]]; then
	ok "--install wrote the --print-pattern line: $pattern"
else
	not_ok "core_pattern '$pattern' vs printed '$(cat "$d/pattern.txt")'"
fi

for h in crash-dense crash-sparse; do
	stored=$d/cores/$h.stored
	meta=$d/$h.handler.json
	exe=$d/$h
	[[ -f "$stored" && -f "$meta" ]] || { not_ok "$h: no stored core or metadata"; continue; }
	pid=$(awk '$1 == "pid" { print $2 }' "$d/$h.handler.txt")
	jqcheck "$h: metadata: complete, pid $pid, signal 6, executable, sha256" "$meta" \
		'.complete and .pid == $pid and .signal == 6 and .comm == "'"$h"'"
		 and (.executable | endswith("/'"$h"'")) and (.sha256 | length) == 64
		 and .stream_bytes == .expected_bytes and .file_size == .stream_bytes' \
		--argjson pid "$pid"
	# The page tables: most of the sparse stream consumed unread (all but
	# 1%, or all but 32 MiB of the program's own mappings in the arm64
	# tier's 1 GiB crash).
	if [[ $h == crash-sparse ]]; then
		jqcheck "$h: page tables used, $(jq .pagemap.unread_bytes "$meta") of $(jq .stream_bytes "$meta") stream bytes unread" "$meta" \
			'.pagemap.used and .pagemap.unread_bytes >=
			 ([0.99 * .stream_bytes, .stream_bytes - 33554432] | min)
			 and .pagemap.unread_bytes <= .zero_bytes'
	else
		jqcheck "$h: page tables used (why_not null)" "$meta" \
			'.pagemap.used and .pagemap.why_not == null'
	fi
	# Allocated size on the guest's tmpfs against the data kept.
	read -r blocks bsize size < "$d/$h.handler.stat"
	alloc=$((blocks * bsize))
	data=$(jq .data_bytes "$meta")
	if (( alloc <= data + 65536 && alloc >= data / 2 )); then
		ok "$h: allocated $alloc bytes for $data data bytes (file size $size)"
	else
		not_ok "$h: allocated $alloc bytes for $data data bytes (file size $size)"
	fi
	read -r fblocks fbsize _ < "$d/$h.file.stat"
	echo "# $h: kernel regular-file core allocated $((fblocks * fbsize)), handler's $alloc"
	"$PYTHON" "$VM_HERE/lib/corecmp.py" "$d/cores/$h.file" "$stored" |
		sed "s/^\(not \)\{0,1\}ok - /&$h: handler core vs kernel file core: /" > "$d/$h.corecmp" || fail=1
	grep -q '^not ok' "$d/$h.corecmp" && fail=1
	cat "$d/$h.corecmp"
	extra=()
	[[ $h == crash-sparse ]] && extra+=(--sparse)
	vmcheck core "$stored" "$d/$h.handler.txt" "${extra[@]}"
	if "$gdb" -batch -ex bt -ex 'info threads' "$exe" "$stored" > "$d/$h.gdb.txt" 2>&1 &&
		grep -q ' in main ' "$d/$h.gdb.txt" && grep -qE 'abort|raise|pthread_kill' "$d/$h.gdb.txt"; then
		ok "$h: gdb bt shows abort() called from main()"
	else
		not_ok "$h: gdb bt: $(head -c 600 "$d/$h.gdb.txt")"
	fi
	threads=$(grep -c '^[ *] *[0-9]\+ \+\(Thread\|LWP\)' "$d/$h.gdb.txt" || true)
	want=$(awk '$1 == "threads" { print $2 }' "$d/$h.handler.txt")
	[[ "$threads" == "$want" ]] && ok "$h: gdb sees $want threads" ||
		not_ok "$h: gdb sees $threads threads, want $want"
	if eu-stack --core="$stored" --executable="$exe" > "$d/$h.eu-stack.txt" 2>&1 &&
		grep -qE ' main(\.cold)?$' "$d/$h.eu-stack.txt"; then
		ok "$h: eu-stack --core shows main"
	else
		not_ok "$h: eu-stack: $(head -c 600 "$d/$h.eu-stack.txt")"
	fi
	if "$KCOREDUMP" info --json "$stored" > "$d/$h.info.json"; then
		ok "$h: kcoredump info reads the stored core"
	else
		not_ok "$h: kcoredump info failed on the stored core"
	fi
done

for c in none zstd; do
	grep -qx "tee-$c SAME" "$d/tee-results" &&
		ok "tee ($c): the stored core is byte-identical to the raw stream" ||
		not_ok "tee ($c): $(cat "$d/tee-results")"
done
# A page written into the crashing process during its dump, behind the
# handler's first look at the page tables: the second look finds it.
grep -qx "late SAME" "$d/tee-results" &&
	ok "late page: the stored core is byte-identical to the raw stream" ||
	not_ok "late page: $(cat "$d/tee-results")"
lw=$(awk '$1 == "late_wchar" { print $2 }' "$d/late.txt")
loff=$("$PYTHON" "$VM_HERE/lib/corecmp.py" --offset-of \
	"$(awk '$2 == "late" { print $3 }' "$d/late.txt")" "$d/cores/late.stored")
if [[ -n $lw && -n $loff ]] && ((lw < loff)); then
	ok "late page: written when the kernel had written $lw bytes, before its offset $loff"
else
	not_ok "late page: written at wchar '$lw', stream offset '$loff'"
fi
jqcheck "late page: page tables used, the rest of the stream unread" "$d/late.json" \
	'.complete and .pagemap.used and .pagemap.unread_bytes >= 0.98 * .stream_bytes'
vmcheck core "$d/cores/late.stored" "$d/late.txt" --sparse
grep -qx "sharer SAME" "$d/tee-results" &&
	ok "sharer: the stored core is byte-identical to the raw stream" ||
	not_ok "sharer: $(cat "$d/tee-results")"
jqcheck "sharer: page tables not used, the sharing process named" "$d/sharer.json" \
	'.complete and (.pagemap.used | not) and .pagemap.unread_bytes == 0
	 and (.pagemap.why_not | test("shares the memory"))'

# The same sparse crash stored with --no-pagemap: every byte read.
jqcheck "--no-pagemap: complete, page tables not used, nothing unread" "$d/crash-sparse.nopm.json" \
	'.complete and (.pagemap.used | not) and .pagemap.why_not == "--no-pagemap"
	 and .pagemap.unread_bytes == 0 and .zero_bytes > 0.99 * .stream_bytes'
vmcheck core "$d/cores/crash-sparse.nopm" "$d/crash-sparse.nopm.txt" --sparse
jqcheck "list --json shows both handler cores, complete" "$d/list.json" \
	'(.cores | length) == 2 and all(.cores[]; .core_present and .status == "complete")'
jqcheck "stalled pipe: stopped by the timeout, truncated, marked" "$d/stalled.json" \
	'.complete == false and .truncation_reason == "timeout" and .elapsed_seconds < 10'
sed 's/^/# /' "$d/stalled.txt"
exit $fail
