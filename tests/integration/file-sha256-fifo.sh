#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 40: the file's SHA-256 is computed from the bytes as they are
# written, never by reading the output back.  The output is a FIFO that a
# reader drains once (sha256sum, and a copy with tee): whatever kcoredump
# read back from it would be missing from what the reader saw, and a FIFO
# cannot be read back at all.  The printed "file_sha256" must equal
# sha256sum of what the reader saw, for ELF (plain, .zst), LiME, AVML,
# flattened kdump, from a kernel dump and from a sparse process core
# (whose holes go down the FIFO as zeros).  A regular-file dump is hashed
# the same way: its sum is sha256sum's too, and its metadata is the
# trailer the FIFO carries (the header is written once).
#   file-sha256-fifo.sh KCOREDUMP FIXTURES
set -uo pipefail
kcoredump=$1 fix=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
if ! command -v jq >/dev/null || ! command -v sha256sum >/dev/null ||
	! command -v mkfifo >/dev/null; then
	echo "1..0 # SKIP jq, sha256sum or mkfifo not installed"
	exit 77
fi

sum() { sha256sum "$1" | cut -d' ' -f1; }

# NAME SOURCE ARGS...: convert SOURCE into a FIFO; the reader's sum and
# copy in $tmp/NAME.sum and $tmp/NAME.copy, the JSON in $tmp/NAME.json.
through_fifo() {
	local name=$1 src=$2 st
	shift 2
	rm -f "$tmp/fifo"
	mkfifo "$tmp/fifo"
	# One reader, once: tee keeps a copy, sha256sum the sum of the stream.
	tee "$tmp/$name.copy" < "$tmp/fifo" | sha256sum | cut -d' ' -f1 > "$tmp/$name.sum" &
	local reader=$!
	pids+=("$reader")
	timeout 120 "$kcoredump" convert -q --json --special-output "$@" "$src" \
		-o "$tmp/fifo" > "$tmp/$name.json" 2> "$tmp/$name.err"
	st=$?
	wait "$reader"
	echo "$st"
}

for spec in "elf vmcore-twocopies.core --format elf" \
	"elf-zst vmcore-twocopies.core --format elf --compress zstd" \
	"lime vmcore-twocopies.core --format lime" \
	"avml vmcore-twocopies.core --format avml" \
	"kdump vmcore-twocopies.core --format kdump" \
	"process process-x86_64.core --format elf"; do
	read -r name src args <<< "$spec"
	# shellcheck disable=SC2086 # args are words
	st=$(through_fifo "$name" "$fix/$src" $args)
	got=$(jq -r .file_sha256 "$tmp/$name.json" 2> /dev/null)
	saw=$(cat "$tmp/$name.sum" 2> /dev/null)
	if [[ $st == 0 && $got =~ ^[0-9a-f]{64}$ && $got == "$saw" ]]; then
		ok "$name into a FIFO: file_sha256 is the reader's sha256sum ($got, $(stat -c %s "$tmp/$name.copy") bytes)"
	else
		not_ok "$name into a FIFO: exit $st, file_sha256 '$got', reader saw '$saw': $(head -c 300 "$tmp/$name.err")"
	fi
done

# What the reader kept is a dump whose digests verify.
"$kcoredump" verify -q "$tmp/elf.copy" 2> "$tmp/v.err"
check "the ELF the reader kept verifies ($(head -c 200 "$tmp/v.err"))" [ $? -eq 0 ]

# The same into a regular file: hashed as written, its metadata in the
# trailer after the image, the header not rewritten.
"$kcoredump" convert -q --json --format elf "$fix/vmcore-twocopies.core" -o "$tmp/f.elf" \
	> "$tmp/f.json" 2> "$tmp/f.err"
got=$(jq -r .file_sha256 "$tmp/f.json" 2> /dev/null)
check "a regular ELF file: file_sha256 is sha256sum's ($got)" [ "$got" = "$(sum "$tmp/f.elf")" ]
check "a regular ELF file: the digests are in the trailer" \
	jq -e '.digests == "trailer"' "$tmp/f.json"
check "a regular ELF file ends with the trailer" [ "$(tail -c 8 "$tmp/f.elf")" = KCDTRL01 ]
check "so does what the FIFO carried" [ "$(tail -c 8 "$tmp/elf.copy")" = KCDTRL01 ]
"$kcoredump" verify -q "$tmp/f.elf" 2> "$tmp/v.err"
check "a regular ELF file verifies ($(head -c 200 "$tmp/v.err"))" [ $? -eq 0 ]
finish
