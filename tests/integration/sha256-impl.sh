#!/bin/bash
# SPDX-License-Identifier: MIT
# The file's SHA-256 through either implementation (common/sha256.c):
# KCOREDUMP_SHA256=openssl and =nettle each give the SHA-256 that
# sha256sum gives of the output, to a file and to a pipe, and --json names
# the one taken; without it the process takes one of the two (the faster
# here) and `version` says which; a bad value is a one-line error that
# names it and leaves no output.
#   sha256-impl.sh KCOREDUMP FIXDIR
set -uo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
command -v jq > /dev/null || { echo "1..0 # SKIP no jq" && exit 77; }
kcoredump=$(readlink -f "$1")
# A dense core: a sparse output with more holes than data is not
# file-hashed by default.
src=$(readlink -f "$2")/process-x86_64.core
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
k() { "$kcoredump" "$@"; }

impls=(openssl)
k version | grep -q ', nettle ' && impls+=(nettle)
for impl in "${impls[@]}"; do
	KCOREDUMP_SHA256=$impl k dump -q "$src" -o "$impl.elf" --json > "$impl.json" 2> err
	rc=$?
	check "$impl: dump exits 0 ($rc: $(head -c 200 err))" [ "$rc" = 0 ]
	check "$impl: --json names it" \
		[ "$(jq -r .stats.sha256_impl "$impl.json")" = "$impl" ]
	check "$impl: the file SHA-256 is sha256sum's" \
		[ "$(jq -r .file_sha256 "$impl.json")" = "$(sha256sum < "$impl.elf" | cut -d' ' -f1)" ]
	KCOREDUMP_SHA256=$impl k dump -q "$src" -o - --json 2> "$impl.pipe.json" |
		sha256sum | cut -d' ' -f1 > "$impl.pipe.sum"
	check "$impl: to a pipe, the file SHA-256 is that of the bytes read" \
		[ "$(jq -r .file_sha256 "$impl.pipe.json")" = "$(cat "$impl.pipe.sum")" ]
	KCOREDUMP_SHA256=$impl k version > v.txt
	check "$impl: version says it was named" grep -qx "sha256: $impl (KCOREDUMP_SHA256)" v.txt
done
k version > v.txt
check "unset: version names the faster of the two, timed" \
	grep -Eqx 'sha256: (openssl|nettle) \(the faster here: openssl [0-9]+ MiB/s, nettle [0-9]+ MiB/s\)|sha256: openssl \(the only one built in\)' v.txt
KCOREDUMP_SHA256=md5 k dump -q "$src" -o bad.elf 2> err
rc=$?
check "KCOREDUMP_SHA256=md5: fails ($rc), one line naming it, no output" \
	[ "$rc" != 0 ] && [ "$(wc -l < err)" = 1 ] && grep -q "KCOREDUMP_SHA256=md5" err && [ ! -e bad.elf ]
finish
