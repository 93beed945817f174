#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Heavy tier (issue 19 item 11): Volatility 3 itself on kcoredump's ELF,
# LiME and AVML files of the VM guest's memory (all three from one dump,
# so they hold the same memory), with the guest's own process list as the
# truth: linux.pslist and linux.psscan must find the guest's processes in
# every format, psscan as many in the ELF file as in the LiME file (an ELF
# whose PT_LOADs are not in ascending order hid the RAM below the kernel
# text from its scan), linux.lsmod as many modules in every file (issue 43:
# pslist and lsmod failed on the ELF when the kernel image's PT_LOAD, last
# and physically inside RAM, broke Volatility's binary search over
# p_paddr), and banners.Banners the guest's kernel release.  A plugin that
# fails is reported with the line that names the address (Volatility's
# "unable to read a requested page: 0x... in layer ...").
#
# Volatility 3 is not packaged by Debian; this test uses a checkout the
# user provides and exits 77 (skip) without one:
#   VOLATILITY3=DIR   a volatility3 source tree (its vol.py is run with
#                     /usr/bin/python3; Debian's python3-pefile is its only
#                     required package)
#   VOLATILITY_ISF=FILE  the guest kernel's symbol table (ISF JSON, .json
#                     or .json.xz), made by dwarf2json from the -dbg
#                     vmlinux (tests/oracle/fetch-dbg.sh) and its System.map
#                     (in the VM kernel's cache entry, boot/):
#                       dwarf2json linux --elf vmlinux \
#                           --system-map System.map > isf.json
#     or DWARF2JSON=BIN  a dwarf2json binary: the ISF is made here, from
#                     fetch-dbg.sh's vmlinux and the cached System.map.
#   VOLATILITY_RESULTS=DIR  the guest's files (tests/vm/run.sh --results
#                     DIR volatility); default: a fresh VM run in a
#                     temporary directory.
#
# Usage: volatility.sh KCOREDUMP
set -euo pipefail
# shellcheck source=../lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/shell.sh"
kcd_trap_errors
here=$(cd "$(dirname "$0")" && pwd)
kcoredump=$(readlink -f "$1")
# shellcheck source=../lib/tap.sh
. "$here/../lib/tap.sh"
log() { echo "# $*" >&2; }

vol3=${VOLATILITY3:-}
isf=${VOLATILITY_ISF:-}
if [[ -z $vol3 || ! -f $vol3/vol.py ]]; then
	echo "1..0 # SKIP set VOLATILITY3 to a volatility3 checkout (see the header of $0)"
	exit 77
fi
if [[ -z $isf && -z ${DWARF2JSON:-} ]]; then
	echo "1..0 # SKIP set VOLATILITY_ISF to the guest kernel's ISF, or DWARF2JSON to a dwarf2json binary"
	exit 77
fi
if ! /usr/bin/python3 -c 'import pefile' 2>/dev/null; then
	echo "1..0 # SKIP python3-pefile is not installed"
	exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
res=${VOLATILITY_RESULTS:-}
if [[ -z $res ]]; then
	res=$tmp/vm
	log "booting the VM guest for its dumps (tests/vm/run.sh volatility)"
	rc=0
	"$here/../vm/run.sh" --kcoredump "$kcoredump" --results "$res" \
		--timeout 900 volatility >"$tmp/vm.log" 2>&1 || rc=$?
	if ((rc == 77)); then
		echo "1..0 # SKIP the VM rig cannot run here"
		exit 77
	fi
	if ((rc != 0)); then
		sed 's/^/# /' "$tmp/vm.log" | tail -20 >&2
		not_ok "the VM case volatility ran (exit $rc)"
		finish
	fi
fi
rel=$(cat "$res/uname-r")

# The symbol table: given, or made by dwarf2json.
symdir=$tmp/symbols/linux
mkdir -p "$tmp/cache"
mkdir -p "$symdir"
if [[ -n $isf ]]; then
	cp "$isf" "$symdir/"
else
	vmlinux=$("$here/fetch-dbg.sh" "$rel")
	sysmap=${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/kernel/$rel/boot/System.map-$rel
	log "making the ISF with $DWARF2JSON from $vmlinux"
	"$DWARF2JSON" linux --elf "$vmlinux" --system-map "$sysmap" \
		>"$symdir/linux-$rel.json"
fi

vol()
{
	/usr/bin/python3 "$vol3/vol.py" -q -r json --offline \
		-s "$tmp/symbols" --cache-path "$tmp/cache" -f "$@"
}

# The truth: processes that existed before and after the dump.
join <(sort -k1,1 "$res/ps-before.txt") <(sort -k1,1 "$res/ps-after.txt") |
	awk '$2 == $3 {print $1}' | sort -u >"$tmp/truth"
ntruth=$(wc -l <"$tmp/truth")
log "guest: $ntruth processes in /proc before and after the dump"

for f in ram.elf ram.lime ram.avml; do
	for plugin in linux.pslist linux.psscan linux.lsmod banners.Banners; do
		out=$tmp/$f.$plugin.json
		rc=0
		vol "$res/$f" "$plugin" >"$out" 2>"$tmp/err" || rc=$?
		if ((rc != 0)); then
			why=$(grep -m 1 -E 'unable to read|Invalid address|0x[0-9a-f]+ in layer' \
				"$tmp/err" "$out" 2>/dev/null | cut -d: -f2- || true)
			not_ok "$plugin on $f: exit $rc, ${why:-$(tail -1 "$tmp/err")}"
			continue
		fi
		case $plugin in
		banners.Banners)
			if jq -e --arg r "$rel" '[.[].Banner] | any(contains($r))' \
				"$out" >/dev/null; then
				ok "banners.Banners on $f: Linux $rel"
			else
				not_ok "banners.Banners on $f: no banner of $rel"
			fi
			;;
		linux.lsmod)
			n=$(jq -r '.[].Name' "$out" | sort -u | tee "$tmp/$f.mods" | wc -l)
			echo "$n" >"$tmp/$f.$plugin.count"
			check "linux.lsmod on $f: $n modules" [ "$n" -gt 0 ]
			;;
		*)
			jq -r '.[].PID' "$out" | sort -u >"$tmp/$f.$plugin.pids"
			n=$(wc -l <"$tmp/$f.$plugin.pids")
			missing=$(comm -23 "$tmp/truth" "$tmp/$f.$plugin.pids" | wc -l)
			echo "$n" >"$tmp/$f.$plugin.count"
			log "$plugin on $f: $n PIDs, $missing of the guest's $ntruth missing"
			if ((missing == 0)); then
				ok "$plugin on $f: every one of the guest's $ntruth processes ($n PIDs)"
			else
				not_ok "$plugin on $f: $missing of the guest's $ntruth processes missing"
			fi
			;;
		esac
	done
done
# psscan sees as many tasks in the ELF file as in the LiME and AVML files
# of the same memory.
for f in ram.elf ram.avml; do
	a=$(cat "$tmp/$f.linux.psscan.count" 2>/dev/null || echo 0)
	b=$(cat "$tmp/ram.lime.linux.psscan.count" 2>/dev/null || echo -1)
	check "linux.psscan: $f $a tasks, ram.lime $b" [ "$a" = "$b" ]
	a=$(cat "$tmp/$f.linux.lsmod.count" 2>/dev/null || echo 0)
	b=$(cat "$tmp/ram.lime.linux.lsmod.count" 2>/dev/null || echo -1)
	check "linux.lsmod: $f $a modules, ram.lime $b" [ "$a" = "$b" ]
done
finish
