#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: kcoredump pid's core of a live process on the real kernel against
# the core that kernel wrote of the same process: the same notes (less the
# fatal NT_SIGINFO), the same segments byte for byte; gdb's backtraces; the
# 64 GiB area found by pagemap and never read.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
tools=$VM_HERE/../tools
echo "# guest kernel $(cat "$d/kernel-release" 2>/dev/null)"
sparse=$(cat "$d/sparse-gib" 2>/dev/null || echo 64)
jqcheck "pid: 4 threads, PAGEMAP_SCAN, under 64 MiB of memory read, the $sparse GiB area a hole" \
	"$d/pid.json" \
	'.process.threads == 4 and .process.pagemap_method == "PAGEMAP_SCAN"
	 and .process.bytes_read < 67108864
	 and .stats.bytes_hole > ($g * 1073741824 - 16 * 1048576)' --argjson g "$sparse"
jq -r '"# stop \(.process.stop_seconds) s, read \(.process.bytes_read) bytes in \(.stats.seconds) s"' \
	"$d/pid.json"
if [[ "$(eu-readelf -h "$d/kernel.core" | grep -E 'Machine|Class|Data')" == \
	"$(eu-readelf -h "$d/ours.core" | grep -E 'Machine|Class|Data')" ]]; then
	ok "pid: ELF class, data and machine as the kernel's core"
else
	not_ok "pid: ELF header differs from the kernel's core"
	eu-readelf -h "$d/ours.core" | sed 's/^/# /'
fi
eu-readelf -n "$d/kernel.core" | grep -E '^  (CORE|LINUX) ' | grep -v SIGINFO > "$d/kn"
eu-readelf -n "$d/ours.core" | grep -E '^  (CORE|LINUX) ' > "$d/on"
if cmp -s "$d/kn" "$d/on"; then
	ok "pid: notes as the kernel's (names, types, sizes, order; no SIGINFO)"
else
	not_ok "pid: notes differ from the kernel's"
	diff "$d/kn" "$d/on" | sed 's/^/# /'
fi
# Linux 7.3's [vvar] refuses remote readers: kcoredump pid writes zeros
# where the kernel's core has the vDSO data.
zok=()
for va in $(jq -r '.process.mappings[] | select(.name == "[vvar]") | .start' "$d/pid.json"); do
	zok+=(--zeros-ok "$va")
done
if /usr/bin/python3 "$tools/core-compare.py" "$d/kernel.core" "$d/ours.core" "${zok[@]}" > "$d/cmp"; then
	ok "pid: same segments and bytes as the kernel's core"
else
	not_ok "pid: segments differ from the kernel's core"
fi
sed 's/^/# /' "$d/cmp"
target=$(command -v pidtarget || true)
# An arm64 guest's cores need gdb-multiarch on this host.
gdb=gdb
[[ ${VM_ARCH:-amd64} == amd64 ]] || gdb=gdb-multiarch
if [[ -n "$target" ]] && command -v "$gdb" > /dev/null; then
	for c in ours kernel; do
		# Frames by function, without addresses and argument values.
		"$gdb" -batch -ex 'thread apply all bt' "$target" "$d/$c.core" 2>&1 |
			grep -E '^#[0-9]' | sed -E 's/0x[0-9a-f]+ in //; s/ \(.*//' > "$d/bt.$c" || true
	done
	if [[ $(grep -c 'kc_worker_outer' "$d/bt.ours") == 3 ]] &&
		grep -q kc_command_loop "$d/bt.ours"; then
		ok "pid: $gdb shows the workers' and the main thread's frames"
	else
		not_ok "pid: $gdb backtraces"
		sed 's/^/# /' "$d/bt.ours"
	fi
	if cmp -s "$d/bt.kernel" "$d/bt.ours"; then
		ok "pid: $gdb's backtraces of every thread equal the kernel core's"
	else
		not_ok "pid: $gdb's backtraces differ from the kernel core's"
		diff "$d/bt.kernel" "$d/bt.ours" | sed 's/^/# /'
	fi
else
	not_ok "pid: no pidtarget or $gdb for the backtraces"
fi
if "$KCOREDUMP" verify -q "$d/ours.core.zst"; then
	ok "pid: the .zst core verifies"
else
	not_ok "pid: the .zst core does not verify"
fi
exit $fail
