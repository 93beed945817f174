#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: what `kcoredump cat` read from the guest's live /proc/kcore.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
rel=$(cat "$d/uname-r")

if [ "$(head -c 5 "$d/uts.bin")" = Linux ] && grep -aqF "$rel" "$d/uts.bin"; then
	ok "cat --symbol init_uts_ns: 'Linux' and the release $rel"
else
	not_ok "cat --symbol init_uts_ns: $(head -c 80 "$d/uts.bin" | tr -c '[:print:]' .)"
fi
jqcheck "cat --json --symbol linux_banner comes from /proc/kallsyms" "$d/banner.json" \
	'.symbol_from == "/proc/kallsyms" and .length == 64'
want=$(head -c 64 "$d/version" | od -An -tx1 | tr -d ' \n')
jqcheck "linux_banner's bytes start /proc/version" "$d/banner.json" '.hex == $w' --arg w "$want"
if cmp -s "$d/banner-virt.bin" "$d/banner-phys.bin" && [ -s "$d/banner-phys.bin" ]; then
	ok "linux_banner: the same 64 bytes at $(cat "$d/banner-va") and physical $(cat "$d/banner-pa")"
else
	not_ok "linux_banner by virtual and physical address differ"
fi
if [ "$(cat "$d/kptr.rc")" = 5 ] && grep -q "addresses are hidden" "$d/kptr.err"; then
	ok "kptr_restrict=2: exit 5, $(cat "$d/kptr.err")"
else
	not_ok "kptr_restrict=2: exit $(cat "$d/kptr.rc"), $(cat "$d/kptr.err")"
fi
exit $fail
