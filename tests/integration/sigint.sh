#!/bin/bash
# SPDX-License-Identifier: MIT
# SIGINT and SIGTERM in the middle of a dump: kcoredump stops promptly,
# exits non-zero with a one-line error, and leaves neither the output nor
# its temporary file (also while AVML writes the zero chunks of a hole);
# the same dump left alone completes and verifies.
#   sigint.sh KCOREDUMP MKCORE
set -euo pipefail
# shellcheck source=../lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/shell.sh"
kcd_trap_errors
kcoredump=$1 mkcore=$2
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 768 MiB of incompressible data: long enough to interrupt.
cat >"$tmp/big.spec" <<'SPEC'
load vaddr=0x7f0000000000 flags=rw
	data 768M random=3
end
SPEC
"$mkcore" "$tmp/big.spec" "$tmp/big.core"

for sig in INT TERM; do
	for out in x.elf x.elf.zst; do
		rm -f "$tmp/out/"* "$tmp/out/".* 2>/dev/null || true
		mkdir -p "$tmp/out"
		"$kcoredump" dump -q --no-progress -T 2 "$tmp/big.core" \
			-o "$tmp/out/$out" 2>"$tmp/err" &
		pid=$!
		sleep 0.3
		kill -s "$sig" "$pid" 2>/dev/null || true
		t0=$(date +%s%N)
		rc=0
		wait "$pid" || rc=$?
		ms=$((($(date +%s%N) - t0) / 1000000))
		if [ "$rc" -eq 0 ]; then
			# The machine was fast enough to finish first.
			skip "SIG$sig $out: the dump finished before the signal"
			continue
		fi
		check "SIG$sig $out: exits non-zero ($rc) within 5 s ($ms ms)" \
			[ "$ms" -lt 5000 ]
		check "SIG$sig $out: one line on stderr saying it was interrupted" \
			bash -c "[ \$(wc -l <'$tmp/err') -eq 1 ] && grep -q interrupted '$tmp/err'"
		check "SIG$sig $out: no output and no temporary file left" \
			[ -z "$(ls -A "$tmp/out")" ]
	done
done

# AVML has no holes: a 16 GiB hole of a LiME file is 800 MB of zero
# chunks, written with no page read, and a signal stops that too.
python3 -c "
import struct, sys
f = open(sys.argv[1], 'wb')
f.write(struct.pack('<IIQQQ', 0x4C694D45, 1, 0, (16 << 30) - 1, 0))
f.truncate(32 + (16 << 30))" "$tmp/sparse.lime"
rm -rf "$tmp/out" && mkdir -p "$tmp/out"
"$kcoredump" convert -q --no-progress --format avml "$tmp/sparse.lime" \
	-o "$tmp/out/x.avml" 2>"$tmp/err" &
pid=$!
sleep 0.3
# Running (not a zombie) when signalled: then it must not complete.
state=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null || echo Z)
kill -s INT "$pid" 2>/dev/null || state=Z
rc=0
wait "$pid" || rc=$?
if [ "$rc" -eq 0 ] && [ "$state" != Z ]; then
	not_ok "SIGINT x.avml: signalled while running ($state), it went on to complete"
elif [ "$rc" -eq 0 ]; then
	skip "SIGINT x.avml: the conversion finished before the signal"
else
	check "SIGINT x.avml (zero chunks of a hole): one line saying it was interrupted, exit $rc" \
		bash -c "[ \$(wc -l <'$tmp/err') -eq 1 ] && grep -q interrupted '$tmp/err'"
	check "SIGINT x.avml: no output and no temporary file left" \
		[ -z "$(ls -A "$tmp/out")" ]
fi
rm -f "$tmp/sparse.lime"

"$kcoredump" dump -q "$tmp/big.core" -o "$tmp/whole.elf.zst"
check "without a signal the dump completes and verifies" \
	"$kcoredump" verify -q "$tmp/whole.elf.zst"
finish
