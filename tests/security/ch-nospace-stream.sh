#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 27 item 12, compressed cores: with the limits off, a .zst or .xz
# core whose file system fills up is cut and published like one a limit
# stopped (truncation_reason "no-space"), its stream finished (frames,
# seek table or index, hole map): it decodes whole, and its headers and
# notes are there.  Before, the stream died at the ENOSPC and nothing was
# stored.  A compressed stream is not cut back after a failed write: the
# handler watches the free space and stops while the frames in flight,
# the end of the stream and the metadata still fit.  The stores are
# tmpfs of fixed size in a private mount namespace (gone with it): 3 MiB
# for a core with 8 MiB of random data; 64 KiB, where only the headers
# and notes fit.
#   ch-nospace-stream.sh KCOREDUMP MKCORE SPECDIR
set -uo pipefail
kcoredump=$1 mkcore=$2 specdir=$3
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

is_root || { echo "1..0 # SKIP needs root (a tmpfs in a mount namespace)"; exit 77; }
unshare -m true 2>/dev/null || { echo "1..0 # SKIP unshare -m is not allowed here"; exit 77; }
for t in zstd xz eu-readelf jq; do
	command -v "$t" >/dev/null || { echo "1..0 # SKIP $t is not installed"; exit 77; }
done
{
	cat "$specdir/process-x86_64.spec"
	printf 'load vaddr=0x7e0000000000 flags=rw\n\tdata 8M random=9\nend\n'
} > "$tmp/big.spec"
"$mkcore" "$tmp/big.spec" "$tmp/big.core" >/dev/null || { not_ok "mkcore"; finish; }
total=$(stat -c %s "$tmp/big.core")

# store NAME SIZE ARGS...: the handler into a SIZE tmpfs; what it stored
# in $tmp/NAME, its exit status in $tmp/NAME.rc, its messages NAME.err.
store() {
	local name=$1 size=$2
	shift 2
	mkdir -m 700 "$tmp/$name" "$tmp/$name.fs"
	# shellcheck disable=SC2016 # expanded by the inner bash
	unshare -m --propagation private bash -c '
		fs=$1 kcd=$2 core=$3 out=$4 size=$5
		shift 5
		mount -t tmpfs -o "size=$size,mode=0700" kcd-nospace "$fs" || exit 90
		mkdir -m 700 "$fs/store"
		"$kcd" core-handler --dir "$fs/store" --no-sync --no-journal \
			--keep-free 0 --max-use 0 "$@" \
			4242 1000 1000 6 1700000000 crashme < "$core" 2> "$out.err"
		echo "rc=$?" > "$out.rc"
		cp -a "$fs/store/." "$out/" 2>/dev/null
		umount "$fs"' _ "$tmp/$name.fs" "$kcoredump" "$tmp/big.core" \
		"$tmp/$name" "$size" "$@" 2> "$tmp/$name.ns"
	check "$name: the namespace ran (tmpfs mounted)" [ -e "$tmp/$name.rc" ]
	check "$name: the handler exits 0 ($(cat "$tmp/$name.rc" 2>/dev/null))" \
		grep -qx "rc=0" "$tmp/$name.rc"
	sed 's/^/# /' "$tmp/$name.err" | head -n 5
	check "$name: the tmpfs is gone with the namespace" \
		bash -c "! mountpoint -q '$tmp/$name.fs'"
}

# stored NAME TOOL SUFFIX [headers]: what NAME stored is a cut, decodable
# core; headers: only the headers and notes (the cut at their end).
stored() {
	local name=$1 tool=$2 sfx=$3 what=${4:-} core meta cut size
	core=$(find "$tmp/$name" -name "core.crashme.*$sfx" | head -n 1)
	check "$name: a $sfx core is published" [ -n "$core" ]
	[ -n "$core" ] || return 0
	meta=${core%"$sfx"}.json
	check "$name: with its metadata" [ -s "$meta" ]
	check "$name: it decodes whole ($tool -t)" quiet "$tool" -t "$core"
	"$tool" -dc "$core" > "$tmp/$name.core" 2>/dev/null
	check "$name: cut for no-space, marked in the core" \
		quiet jq -e '.complete == false and .truncation_reason == "no-space"
			and .marked_in_core == true and .segments_cut >= 1' "$meta"
	cut=$(jq -r '.cut_offset' "$meta" 2>/dev/null)
	size=$(stat -c %s "$tmp/$name.core")
	check "$name: decoded, it ends at the cut offset ($size = $cut)" [ "$size" = "$cut" ]
	check "$name: a page boundary" [ $((cut % 4096)) = 0 ]
	check "$name: shorter than the stream ($cut < $total)" [ "$cut" -lt "$total" ]
	check "$name: its notes read (eu-readelf -n: PRSTATUS, FILE)" \
		bash -c "eu-readelf -n '$tmp/$name.core' | grep -q PRSTATUS &&
			eu-readelf -n '$tmp/$name.core' | grep -q FILE"
	check "$name: info reads it and says it is incomplete" \
		bash -c "'$kcoredump' info '$core' | grep -q '^Complete: *no'"
	"$kcoredump" verify "$core" >/dev/null 2>&1
	check "$name: verify says INCOMPLETE (exit 7: $?)" [ $? -eq 7 ]
	if [ "$what" = headers ]; then
		check "$name: only the headers and notes ($(jq -r .data_bytes "$meta") data bytes)" \
			quiet jq -e '.data_bytes == 0' "$meta"
	else
		check "$name: most of the room is used ($(stat -c %s "$core") > 2 MiB)" \
			[ "$(stat -c %s "$core")" -gt $((2 << 20)) ]
	fi
}

store zstd 3M -c zstd
stored zstd zstd .zst
store xz 3M -c xz
stored xz xz .xz
store zstd-small 64k -c zstd
stored zstd-small zstd .zst headers
finish
