#!/bin/bash
# The summary's "file sha256" is the SHA-256 of the file's bytes, as
# sha256sum computes it, for every format and for -o - (issue 28 item 2);
# the segment-digest root is named apart; verify --sha256 checks the file's
# bytes (exit 3 on a mismatch) as well as the digests in the note.
#   file-sha256.sh KCOREDUMP FIXTURES
set -uo pipefail
kcoredump=$1 fix=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! command -v jq >/dev/null || ! command -v sha256sum >/dev/null; then
	echo "1..0 # SKIP jq or sha256sum not installed"
	exit 77
fi
src=$fix/vmcore-twocopies.core

sum() { sha256sum "$1" | cut -d' ' -f1; }

# NAME ARGS...: convert to $tmp/NAME, its file_sha256 = sha256sum's.
for spec in "e.elf --format elf --file-sha256" "z.elf.zst --format elf" "x.elf.xz --format elf" \
	"k.kdump --format kdump" "l.lime --format lime" \
	"a.avml --format avml"; do
	read -r name args <<<"$spec"
	# shellcheck disable=SC2086 # args are words
	"$kcoredump" convert -q --json $args "$src" -o "$tmp/$name" \
		>"$tmp/$name.json" 2>"$tmp/err"
	st=$?
	got=$(jq -r .file_sha256 "$tmp/$name.json" 2>/dev/null)
	if [ "$st" -eq 0 ] && [ "$got" = "$(sum "$tmp/$name")" ]; then
		ok "$name: file_sha256 is sha256sum's ($got)"
	else
		not_ok "$name: exit $st, file_sha256 '$got', sha256sum $(sum "$tmp/$name" 2>&1) $(head -c 200 "$tmp/err")"
	fi
done

# -o -: hashed on the fly, the same bytes the pipe carried.
for spec in "plain --format elf --compress none" "zst --format elf --compress zstd" "kdump --format kdump"; do
	read -r name args <<<"$spec"
	# shellcheck disable=SC2086
	"$kcoredump" convert -q --json $args "$src" -o - \
		2>"$tmp/$name.json" >"$tmp/$name.out"
	got=$(jq -r .file_sha256 "$tmp/$name.json" 2>/dev/null)
	check "-o - ($name): file_sha256 = sha256sum of the stream ($got)" \
		[ "$got" = "$(sum "$tmp/$name.out")" ]
done

# The text summary names both, the root apart from the file's hash.
"$kcoredump" convert --format elf "$src" -o "$tmp/t.elf.zst" >"$tmp/t.txt" 2>&1
check "text: 'file sha256:' is sha256sum's" \
	grep -q "^  file sha256:  $(sum "$tmp/t.elf.zst") " "$tmp/t.txt"
check "text: the segment-digest root is 'segment root:'" \
	grep -q "^  segment root: [0-9a-f]\{64\} (digests in the" "$tmp/t.txt"
check "text: no line calls the root 'sha256:'" \
	bash -c "! grep -q '^  sha256:' '$tmp/t.txt'"

# verify checks both.
root=$(jq -r .segment_digest_root "$tmp/z.elf.zst.json")
"$kcoredump" verify --json --sha256 "$(sum "$tmp/z.elf.zst")" \
	"$tmp/z.elf.zst" >"$tmp/v.json" 2>"$tmp/err"
st=$?
check "verify --sha256 (right): exit 0 ($st), root and file match" \
	jq -e --arg r "$root" '.ok and .digests_match and .file_sha256_match and .segment_digest_root == $r' "$tmp/v.json"
bad=$(sum "$tmp/z.elf.zst" | tr '0-9a-f' '1-9a-f0')
"$kcoredump" verify --sha256 "$bad" "$tmp/z.elf.zst" >"$tmp/v.txt" 2>&1
st=$?
check "verify --sha256 (wrong): exit 3 ($st), says MISMATCH" \
	bash -c "[ $st -eq 3 ] && grep -q 'file sha256: .*MISMATCH, expected $bad' '$tmp/v.txt'"
"$kcoredump" verify --sha256 "$(sum "$tmp/l.lime")" "$tmp/l.lime" >/dev/null 2>&1
st=$?
check "verify --sha256 of a LiME file (no digests of its own): exit 0 ($st)" [ "$st" -eq 0 ]
"$kcoredump" verify --sha256 xyz "$tmp/z.elf.zst" >/dev/null 2>"$tmp/err"
st=$?
check "verify --sha256 xyz: usage error 2 ($st)" \
	bash -c "[ $st -eq 2 ] && grep -q '64 hexadecimal digits' '$tmp/err'"

# A sparse file with more holes than data is not hashed by default (the
# cost would be its logical size) and the summary says so.
"$kcoredump" convert -q --json --format elf "$fix/vmcore-x86_64.core" -o "$tmp/big.elf" \
	>"$tmp/big.json" 2>"$tmp/err"
check "sparse 4 GiB file: file_sha256 null, the skipped holes counted" \
	jq -e '.file_sha256 == null and .file_sha256_skipped_hole_bytes > 4000000000' "$tmp/big.json"
# Nor is a plain stream that carries those holes as zeros (a pipe, here
# stdout on /dev/null): hashing them would cost the same.
"$kcoredump" convert -q --json --format elf "$fix/vmcore-x86_64.core" -o - \
	2>"$tmp/bigs.json" >/dev/null
check "-o - of the same, a plain stream: file_sha256 null, the skipped holes counted" \
	jq -e '.file_sha256 == null and .file_sha256_skipped_hole_bytes > 4000000000' "$tmp/bigs.json"
finish
