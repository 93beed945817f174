#!/bin/bash
# SPDX-License-Identifier: MIT
# kcoredump dump MATCH (as coredumpctl dump): the plain bytes of the
# newest stored core that matches, from a plain and a .zst store entry,
# to a file (sparse, mode 0600, no clobbering without --force) and to
# stdout (every byte); the rules of a stored core's copy (only -o, -f, -q,
# -j, -D apply; an existing file is still a SOURCE).
#   dump-stored.sh KCOREDUMP FIXDIR
set -uo pipefail
kcoredump=$1 fixdir=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fix=$fixdir/process-x86_64.core
[ -f "$fix" ] || { echo "1..0 # SKIP no fixture $fix"; exit 77; }

handler() { # DIR ARGS... < stream
	local dir=$1
	shift
	"$kcoredump" core-handler --dir "$dir" --no-sync --no-journal "$@"
}
d=$tmp/store
mkdir -m 700 "$d"
handler "$d" 4250 1000 1000 6 1700000500 crashme < "$fix" 2>/dev/null
handler "$d" -c zstd 4251 1000 1000 6 1700000600 crashme < "$fix" 2>/dev/null
handler "$d" -c zstd 4252 1000 1000 11 1700000700 other < "$fix" 2>/dev/null
cd "$tmp" || exit 1

"$kcoredump" dump -D "$d" 4250 -o p.core > out 2>&1
check "dump -D DIR PID: a plain stored core, cmp-identical" \
	bash -c "[ $? -eq 0 ] && cmp -s '$fix' p.core"
check "the copy is mode 0600" [ "$(stat -c %a p.core)" = 600 ]
check "the summary names the stored core and the bytes" \
	grep -q "core.crashme.1000.4250.1700000500 ($(stat -c %s "$fix") bytes) to p.core" out

"$kcoredump" dump -D "$d" crashme -o z.core > /dev/null 2>&1
check "dump COMM: the newest match (a .zst) decoded, cmp-identical" \
	bash -c "[ $? -eq 0 ] && cmp -s '$fix' z.core"
"$kcoredump" dump -D "$d" crashme -o z.core > /dev/null 2> err
st=$?
check "an existing output is not replaced without --force (exit $st)" \
	bash -c "[ $st -ne 0 ] && grep -q 'z.core' err && cmp -s '$fix' z.core"
"$kcoredump" dump -D "$d" crashme -o z.core --force > /dev/null 2>&1
check "--force replaces it" bash -c "[ $? -eq 0 ] && cmp -s '$fix' z.core"

"$kcoredump" dump -D "$d" SIGNAL=11 -o - 2> err | cat > piped.core
check "dump FIELD=VALUE -o -: every byte on stdout" cmp -s piped.core "$fix"
check "... and the summary went to stderr" grep -q "to stdout" err

"$kcoredump" dump -D "$d" -q -j 4252 -o j.core > j.json 2>&1
check "-j: one JSON document naming the core, output and bytes" \
	jq -e --arg n "$(stat -c %s "$fix")" '.bytes == ($n | tonumber) and .path == "j.core" and (.source | endswith(".zst")) and .stored.pid == 4252' j.json > /dev/null

"$kcoredump" dump -D "$d" COMM=nope -o n.core > /dev/null 2> err
st=$?
check "no match: exit 1, one line, nothing written" \
	bash -c "[ $st -eq 1 ] && [ \$(wc -l < err) -eq 1 ] && grep -q 'no stored core' err && [ ! -e n.core ]"
"$kcoredump" dump -D "$d" --format kdump 4250 -o k.core > /dev/null 2> err
st=$?
check "a dump option with a stored core is a usage error (exit $st)" \
	bash -c "[ $st -eq 2 ] && grep -q -- '--format does not apply' err && [ ! -e k.core ]"
"$kcoredump" dump -D "$d" 4250 > /dev/null 2> err
check "no -o: a usage error" [ $? -eq 2 ]

# An existing file is a SOURCE, not a MATCH: dump of the fixture itself.
cp "$fix" 4250
"$kcoredump" dump -q 4250 -o s.elf > /dev/null 2>&1
check "an existing file named like a PID is a SOURCE" \
	bash -c "[ -s s.elf ] && ! cmp -s '$fix' s.elf && '$kcoredump' info s.elf > /dev/null"

# A sparse stored core stays sparse in the copy: the fixture and 256 MiB
# of zeros after it (a hole in the .zst's map).
cp "$fix" sparse.in
truncate -s +256M sparse.in
handler "$d" -c zstd 4260 0 0 6 1700000900 sparse < sparse.in 2>/dev/null
"$kcoredump" dump -D "$d" 4260 -o big.core > /dev/null 2>&1
check "a sparse .zst core: cmp-identical" bash -c "[ $? -eq 0 ] && cmp -s sparse.in big.core"
check "... and sparse (allocated $(du -k big.core | cut -f1) KiB)" \
	[ "$(du -k big.core | cut -f1)" -lt 16384 ]
finish
