#!/bin/bash
# SPDX-License-Identifier: MIT
# Oracle test: the outside readers open what kcoredump writes.
#   readers.sh KCOREDUMP KDUMP_CHECK SOURCE fixture|kernel
# SOURCE is a kernel ELF core: the kcore-x86_64 fixture (fixture mode), or
# a RAM dump of a real kernel, e.g. the VM guest's /proc/kcore dumped by
# the vm-formats case (kernel mode).  From it this writes an ELF dump of
# the RAM, kdump files (zstd through dump, zlib, lzo, snappy and none
# through convert, flattened through a pipe), a LiME file and (kernel mode)
# an AVML file, then checks:
#  - crash --osrelease prints the kernel's release for the ELF, kdump and
#    flattened files, and for the file makedumpfile -R rebuilds from ours;
#  - kdump-check (our own parser of the published layouts) finds header,
#    bitmaps, descriptors and every page equal to the ELF dump's;
#  - python3-snappy's framing decoder turns the AVML file into the LiME
#    file byte for byte;
#  - drgn (libkdumpfile for kdump) reads the same bytes at the physical
#    addresses of a test set of pages, and in kernel mode also through the
#    direct map by virtual address;
#  - kernel mode: makedumpfile -c -d 1 takes our ELF dump as input and
#    crash and drgn read its output.
set -uo pipefail
kcoredump=$1 check=$2 source=$3 mode=$4
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kcoredump-oracle.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $*"; fail=1; }
run() { # description command...
	local d=$1 out
	shift
	if out=$("$@" 2>&1); then
		ok "$d"
	else
		not_ok "$d"
		printf '%s\n' "$out" | tail -n 8 | sed 's/^/#   /'
	fi
}
for tool in crash makedumpfile jq; do
	command -v $tool > /dev/null || { echo "# SKIP: $tool not installed"; exit 77; }
done
/usr/bin/python3 -c 'import drgn' 2> /dev/null ||
	{ echo "# SKIP: python3-drgn not installed"; exit 77; }
[[ -r $source ]] || { echo "# SKIP: no source $source"; exit 77; }

info=$("$kcoredump" info --json --no-holes --no-modules "$source")
release=$(jq -r '.source.kernel_release' <<< "$info")
phys_base=$(jq -r '.source.layout.phys_base // "0x0"' <<< "$info")
page_offset=$(jq -r '.source.layout.page_offset_base' <<< "$info")
echo "# $source: release $release, phys_base $phys_base"

run "ELF dump of the RAM" "$kcoredump" dump -q -T 2 --segments ram "$source" -o "$tmp/ram.elf"
# The default selection: RAM, the kernel image (p_paddr -1, on RAM's
# bytes), vmalloc, modules (issue 43).
run "ELF dump, default segments" "$kcoredump" dump -q -T 2 "$source" -o "$tmp/full.elf"
run "kdump (zstd) with kcoredump dump" "$kcoredump" dump -q -T 2 --format kdump --codec zstd "$source" -o "$tmp/zstd.kdump"
run "kdump (zlib) with kcoredump convert" "$kcoredump" convert -q -T 2 --format kdump --codec zlib "$source" -o "$tmp/zlib.kdump"
run "kdump (none) with kcoredump convert" "$kcoredump" convert -q -T 1 --format kdump --codec none "$source" -o "$tmp/none.kdump"
for c in lzo snappy; do
	run "kdump ($c) with kcoredump convert" "$kcoredump" convert -q -T 2 --format kdump --codec $c "$source" -o "$tmp/$c.kdump"
done
if "$kcoredump" convert -q -T 2 --format kdump --codec zstd "$source" -o - | cat > "$tmp/zstd.flat"; then
	ok "flattened kdump through a pipe"
else
	not_ok "flattened kdump through a pipe"
fi
run "LiME with kcoredump convert" "$kcoredump" convert -q -T 2 --format lime "$source" -o "$tmp/ram.lime"
if makedumpfile -R "$tmp/rearranged.kdump" < "$tmp/zstd.flat" > "$tmp/R.log" 2>&1; then
	ok "makedumpfile -R rearranges our flattened file"
else
	not_ok "makedumpfile -R rearranges our flattened file"
	sed 's/^/#   /' "$tmp/R.log"
fi
if [[ $mode == kernel ]]; then
	if makedumpfile -c -d 1 "$tmp/ram.elf" "$tmp/makedumpfile.kdump" > "$tmp/md.log" 2>&1; then
		ok "makedumpfile -c -d 1 reads our ELF dump"
	else
		not_ok "makedumpfile -c -d 1 reads our ELF dump"
		tail -n 5 "$tmp/md.log" | sed 's/^/#   /'
	fi
fi

for f in ram.elf full.elf zstd.kdump zlib.kdump lzo.kdump snappy.kdump none.kdump zstd.flat rearranged.kdump makedumpfile.kdump; do
	[[ -e $tmp/$f ]] || continue
	got=$(crash --osrelease "$tmp/$f" 2>&1 | tail -n 1)
	if [[ $got == "$release" ]]; then
		ok "crash --osrelease $f prints $release"
	else
		not_ok "crash --osrelease $f prints '$got', not $release"
	fi
done

for c in zstd zlib lzo snappy none; do
	run "kdump-check $c.kdump" "$check" kdump "$tmp/$c.kdump" "$tmp/ram.elf" "$release" "$phys_base" "$c"
done
run "kdump-check zstd.flat" "$check" kdump "$tmp/zstd.flat" "$tmp/ram.elf" "$release" "$phys_base" zstd
run "kdump-check rearranged.kdump" "$check" kdump "$tmp/rearranged.kdump" "$tmp/ram.elf" "$release" "$phys_base" zstd
run "kdump-check ram.lime" "$check" lime "$tmp/ram.lime" "$tmp/ram.elf"
# AVML, for Volatility 3 (not packaged in Debian 12): python3-snappy's
# framing decoder (avml2lime.py) gives the LiME file byte for byte.  In
# kernel mode only: the fixture's 4 GiB of holes are zeros in AVML.
if [[ $mode == kernel ]] && /usr/bin/python3 -c 'import snappy' 2> /dev/null; then
	if "$kcoredump" convert -q -T 2 --format avml "$source" -o "$tmp/ram.avml" &&
		/usr/bin/python3 "$here/../tools/avml2lime.py" "$tmp/ram.avml" "$tmp/py.lime" > "$tmp/avml.log" 2>&1 &&
		cmp -s "$tmp/py.lime" "$tmp/ram.lime"; then
		ok "python3-snappy decodes our AVML file to the LiME file ($(stat -c %s "$tmp/ram.avml") bytes)"
	else
		not_ok "AVML: convert or avml2lime.py, or not the LiME file"
		tail -n 3 "$tmp/avml.log" 2> /dev/null | sed 's/^/#   /'
	fi
	rm -f "$tmp/py.lime"
fi

virt=()
[[ $mode == kernel ]] && virt=(--virt "$page_offset")
for f in zstd.kdump zlib.kdump lzo.kdump snappy.kdump none.kdump rearranged.kdump makedumpfile.kdump; do
	[[ -e $tmp/$f ]] || continue
	# makedumpfile's own output is the reference's equal too.
	run "drgn reads $f like the ELF dump" /usr/bin/python3 "$here/drgn-compare.py" "${virt[@]}" "$tmp/ram.elf" "$tmp/$f"
done
# The default ELF reads as the RAM dump by physical address, and its
# kernel image (p_paddr -1) by virtual address as RAM at the image's
# physical address (from the source's own program headers).
run "drgn reads full.elf like the ELF dump" /usr/bin/python3 "$here/drgn-compare.py" "${virt[@]}" "$tmp/ram.elf" "$tmp/full.elf"
text=$(jq -r '[.segments[] | select(.class == "text")][0] | "\(.vaddr) \(.paddr) \(.filesz)"' <<< "$info")
if [[ $text == 0x* ]]; then
	run "drgn reads full.elf's kernel image by vaddr as RAM at its paddr" \
		/usr/bin/python3 "$here/drgn-compare.py" --image $text "$tmp/full.elf"
fi
# The ELF dump itself, by virtual address too (drgn walks its page tables).
[[ $mode == kernel ]] &&
	run "drgn reads ram.elf by direct-map vaddr" /usr/bin/python3 "$here/drgn-compare.py" "${virt[@]}" "$tmp/ram.elf" "$tmp/ram.elf"

# The digests: kdump and LiME hash the same logical content as the ELF.
a=$("$kcoredump" dump -q --json -T 2 --segments ram "$source" -o "$tmp/d.elf" -f | jq -r .segment_digest_root)
b=$("$kcoredump" convert --json -T 2 --format kdump "$source" -o "$tmp/d.kdump" | jq -r .segment_digest_root)
if [[ -n $a && $a == "$b" ]]; then
	ok "the kdump's sha256 equals the ELF dump's ($a)"
else
	not_ok "the kdump's sha256 '$b' differs from the ELF dump's '$a'"
fi
echo "1..$n"
exit $fail
