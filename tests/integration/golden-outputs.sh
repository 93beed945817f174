#!/bin/bash
# SPDX-License-Identifier: MIT
# The bytes of every output format, pinned: each case below writes a dump
# of a generated fixture (ELF sparse, .zst, .xz and through a pipe; kdump
# with each codec, flattened through a pipe; LiME plain, .zst and through a
# pipe; AVML; --exclude 31 in each format) at a fixed thread count, and its
# digest must equal the one in golden/outputs.sha256.  The digest is
# tests/tools/content-digest.py's (SHA-256 of the size and the non-zero
# 4 KiB blocks): it reads only the data of a sparse file of 256 GiB.  A refactoring of
# the writers must keep every digest; a change of behaviour updates them
# deliberately, in a commit of its own:
#   GOLDEN_UPDATE=1 golden-outputs.sh ...   (rewrites golden/outputs.sha256)
# What differs between runs and machines is fixed first: the host name,
# uname() and the wall clock by the fixedhost LD_PRELOAD shim, the paths
# by running in one directory with the inputs under fixed names.  The
# digests belong to Debian 12's libzstd, liblzma, zlib/libdeflate, lzo and
# snappy (the zlib case depends on whether libdeflate was built in).
#   golden-outputs.sh KCOREDUMP FIXEDHOST_SO FIXDIR GOLDEN_DIR
set -uo pipefail
kcoredump=$(realpath "$1") shim=$(realpath "$2") fixdir=$(realpath "$3")
golden=$(realpath "$4")/outputs.sha256 here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
for tool in python3; do
	if ! command -v "$tool" > /dev/null; then
		echo "1..0 # SKIP $tool is not installed"
		exit 77
	fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
for f in kcore-x86_64 vmcore-x86_64 process-x86_64 process-aarch64 sparse-1t \
	pn-xnum vmcore-twocopies; do
	ln -s "$fixdir/$f.core" "$f.core"
done
if ! python3 "$here/../tools/mkpagemap.py" pagemap.elf > gen.out 2>&1; then
	not_ok "mkpagemap.py: $(head -c 300 gen.out)"
	finish
fi

# An ASan build must accept a preloaded library that is not its runtime.
export LD_PRELOAD=$shim ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
k() { "$kcoredump" "$@"; }
sel=(--phys -r 0x0-0x200000 -r 0x2f000000+0x100000 -r 0x40000000+0x100000 -r 0x16fa00000+0x100000)

digest() { python3 "$here/../tools/content-digest.py" "$@"; }

# NAME ARGS...: the output is NAME in the current directory; with "-o -"
# it goes through a pipe, straight into the digest.
declare -A digest
run() {
	local name=$1 rc=0 d
	shift
	if [[ " $* " == *" -o - "* ]]; then
		d=$(k "$@" 2> err | digest -) || rc=$?
	else
		k "$@" -o "$name" 2> err && d=$(digest "$name") || rc=$?
	fi
	if [[ $rc != 0 || ${#d} != 64 ]]; then
		not_ok "$name: exit $rc, $(head -c 300 err)"
		digest[$name]=failed
	else
		digest[$name]=$d
	fi
	rm -f "$name"
}

for t in 1 2; do
	run elf-kcore-T$t.elf dump -q -T $t kcore-x86_64.core
	run elf-kcore-T$t.elf.zst dump -q -T $t kcore-x86_64.core
	run elf-kcore-T$t.elf.xz dump -q -T $t kcore-x86_64.core
	run kdump-kcore-T$t-flat dump -q -T $t --format kdump kcore-x86_64.core -o -
	run avml-sel-T$t.avml convert -q -T $t --format avml "${sel[@]}" kcore-x86_64.core
done
run elf-kcore-ram.elf dump -q -T 2 --segments ram kcore-x86_64.core
run elf-process-pipe dump -q -T 2 process-x86_64.core -o -
run elf-twocopies-pipe dump -q -T 2 vmcore-twocopies.core -o -
run elf-kcore-pipe.zst dump -q -T 2 --compress zstd kcore-x86_64.core -o -
run elf-kcore-pipe.xz dump -q -T 2 --compress xz kcore-x86_64.core -o -
run elf-vmcore.elf dump -q -T 2 vmcore-x86_64.core
run elf-vmcore.elf.zst dump -q -T 2 vmcore-x86_64.core
run elf-process.elf dump -q -T 2 process-x86_64.core
run elf-process.elf.zst dump -q -T 2 process-x86_64.core
run elf-process-aarch64.elf dump -q -T 2 process-aarch64.core
run elf-sparse-1t.elf dump -q -T 2 sparse-1t.core
run elf-sparse-1t.elf.zst dump -q -T 2 sparse-1t.core
run elf-pn-xnum.elf dump -q -T 2 pn-xnum.core
run elf-twocopies.elf dump -q -T 2 vmcore-twocopies.core
run elf-process-nohash.elf dump -q -T 2 --hash none process-x86_64.core
for c in zstd zlib lzo snappy none; do
	run kdump-kcore-$c.kdump convert -q -T 2 --format kdump --codec $c kcore-x86_64.core
done
run kdump-vmcore.kdump convert -q -T 2 --format kdump vmcore-x86_64.core
run kdump-twocopies.kdump convert -q -T 2 --format kdump vmcore-twocopies.core
run lime-kcore.lime convert -q -T 2 --format lime kcore-x86_64.core
run lime-kcore.lime.zst convert -q -T 2 --format lime kcore-x86_64.core
run lime-kcore.lime.xz convert -q -T 2 --format lime kcore-x86_64.core
run lime-twocopies-pipe convert -q -T 2 --format lime vmcore-twocopies.core -o -
run lime-twocopies.lime convert -q -T 2 --format lime vmcore-twocopies.core
run avml-pagemap.avml convert -q -T 2 --format avml pagemap.elf
for f in elf kdump lime avml; do
	run d31-pagemap.$f convert -q -T 2 -d 31 --format $f pagemap.elf
done
run d31-pagemap-flat dump -q -T 2 -d 31 --format kdump pagemap.elf -o -
run d31-pagemap.elf.zst dump -q -T 2 -d 31 pagemap.elf

names=$(printf '%s\n' "${!digest[@]}" | LC_ALL=C sort)
if [[ -n ${GOLDEN_UPDATE:-} ]]; then
	for n in $names; do
		echo "${digest[$n]}  $n"
	done > "$golden"
	echo "# wrote $golden"
fi
if [[ ! -r $golden ]]; then
	not_ok "no $golden (GOLDEN_UPDATE=1 writes it)"
	finish
fi
declare -A want
while read -r d n; do
	want[$n]=$d
done < "$golden"
for n in $names; do
	if [[ ${digest[$n]} == "${want[$n]:-}" ]]; then
		ok "$n"
	else
		not_ok "$n: sha256 ${digest[$n]}, golden ${want[$n]:-none}"
	fi
done
for n in "${!want[@]}"; do
	[[ -n ${digest[$n]:-} ]] || not_ok "$n: in $golden but not written here"
done
finish
