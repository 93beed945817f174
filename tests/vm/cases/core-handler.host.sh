#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: the cores kcoredump core-handler stored in the guest, read by gdb,
# eu-stack, kcoredump info and vmcheck.py (the helpers' known pattern);
# compared with the kernel's regular-file cores and the raw streams.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
sed 's/^/# /' "$d/times" 2>/dev/null || true

pattern=$(cat "$d/core_pattern.txt")
if [[ "$pattern" == "|/tools/kcoredump core-handler %P %u %g %s %t %e --dir /tmp/kc --timeout "* &&
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
	"$PYTHON" "$VM_HERE/lib/corecmp.py" "$d/cores/$h.file" "$stored" | sed "s/^\(not \)\{0,1\}ok - /&$h: handler core vs kernel file core: /" |
		tee "$d/$h.corecmp" | grep -q '^not ok' && fail=1
	cat "$d/$h.corecmp"
	extra=()
	[[ $h == crash-sparse ]] && extra+=(--sparse)
	vmcheck core "$stored" "$d/$h.handler.txt" "${extra[@]}"
	if gdb -batch -ex bt -ex 'info threads' "$exe" "$stored" > "$d/$h.gdb.txt" 2>&1 &&
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
jqcheck "list --json shows both handler cores, complete" "$d/list.json" \
	'(.cores | length) == 2 and all(.cores[]; .core_present and .status == "complete")'
jqcheck "stalled pipe: stopped by the timeout, truncated, marked" "$d/stalled.json" \
	'.complete == false and .truncation_reason == "timeout" and .elapsed_seconds < 10'
sed 's/^/# /' "$d/stalled.txt"
exit $fail
