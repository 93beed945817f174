#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: the kcoredump under test is the static build (the default VM
# smoke tier runs scripts/build-static.sh's binary): no PT_INTERP and no
# PT_DYNAMIC program header (nothing for a loader to do, no library
# needed), and `kcoredump version` says so.
set -eu
"$KCOREDUMP" version > "$OUT/version.txt"
kpread --file "$KCOREDUMP" --phdrs > "$OUT/phdrs.txt"
if grep -qE ' (INTERP|DYNAMIC) ' "$OUT/phdrs.txt"; then
	echo "$KCOREDUMP is dynamically linked:"
	cat "$OUT/phdrs.txt"
	exit 1
fi
grep -q '^build: static' "$OUT/version.txt"
