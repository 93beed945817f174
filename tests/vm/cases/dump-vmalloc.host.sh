#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: the --vmalloc-range dump: seconds, bytes_read vs the vmalloc segment,
# one PT_LOAD per area, sampled areas equal to /proc/kcore, the page tables
# that map them; vm-text.elf (--segments text) read by drgn (dumpcheck.py)
# and, when the guest's debug vmlinux is cached (tests/oracle/fetch-dbg.sh)
# and the Debian sid root is there, by crash 9 --minimal.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$(cd "$1" && pwd)
guest_rc_ok "$d"
"$PYTHON" "$VM_HERE/lib/dumpcheck.py" vmalloc "$d" || fail=1

# crash reads by physical address: the kernel image's symbols and the log
# (minimal mode; a full session needs the per-cpu data in RAM).
sid=$VM_HERE/../oracle/sid-root.sh
rel=$("$KCOREDUMP" info --json --no-holes --no-modules "$d/vm-text.elf" 2> /dev/null | jq -r .source.kernel_release) || rel=
vmlinux=${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/dbg/$rel/vmlinux
if [[ ! -s $d/vm-text.elf || -z $rel ]]; then
	not_ok "vm-text.elf: no dump or no kernel release in it"
elif [[ ! -r $vmlinux ]]; then
	echo "# SKIP crash 9 --minimal on vm-text.elf: no cached debug vmlinux for $rel (tests/oracle/fetch-dbg.sh $rel)"
elif ! "$sid" --skip > /dev/null; then
	echo "# SKIP crash 9 --minimal on vm-text.elf: no Debian sid root (tests/oracle/sid-root.sh)"
else
	area=$(awk '{ print $1 }' "$d/compare" | head -n 1)
	printf 'sym linux_banner\nrd -a linux_banner\nlog\n!echo @@area\nrd %s 2\nquit\n' "$area" > "$d/crash-min.cmds"
	"$sid" run --bind "$d" --bind "$(dirname "$vmlinux")" -- \
		crash -s --minimal --no_scroll "$vmlinux" "$d/vm-text.elf" -i "$d/crash-min.cmds" > "$d/crash-min.out" 2>&1 || true
	banner=$(grep -c "Linux version $rel" "$d/crash-min.out") || true
	if grep -q 'linux_banner' "$d/crash-min.out" && ((banner >= 2)); then
		ok "vm-text.elf: crash 9 --minimal reads linux_banner and the log ($rel)"
	else
		not_ok "vm-text.elf: crash 9 --minimal: $(head -n 5 "$d/crash-min.out" | tr '\n' ' ')"
	fi
	echo "# crash 9 --minimal, rd of area $area: $(sed -n '/@@area/,$p' "$d/crash-min.out" | sed -n 2p)"
fi
exit $fail
