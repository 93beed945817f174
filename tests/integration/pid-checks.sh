#!/bin/bash
# kcoredump pid refuses what it would refuse later before it touches the
# target (issue 28 item 4): an existing output without --force, an output
# directory it cannot create a file in, a format a process core cannot
# have.  The target is a PID that no longer exists: a check made after the
# attach would report the missing process instead.
#   pid-checks.sh KCOREDUMP
set -uo pipefail
kcoredump=$1
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A PID that existed a moment ago and is gone now.
true &
gone=$!
wait "$gone"
if [ -d "/proc/$gone" ]; then
	echo "1..0 # SKIP PID $gone was reused at once"
	exit 77
fi

# run WHAT STATUS PATTERN ARGS...: kcoredump pid ARGS exits with STATUS
# and says PATTERN (and not that the process is missing).
run()
{
	local what=$1 want=$2 pattern=$3 st
	shift 3
	"$kcoredump" pid "$@" >"$tmp/out" 2>"$tmp/err"
	st=$?
	if crashed "$st" "$tmp/err"; then
		not_ok "$what: crashed ($st)"
	elif [ "$st" -ne "$want" ] || ! grep -q -- "$pattern" "$tmp/err"; then
		not_ok "$what: exit $st (want $want), message: $(head -c 300 "$tmp/err")"
	else
		ok "$what: exit $st, $(head -c 200 "$tmp/err")"
	fi
}

: >"$tmp/existing.core"
run "existing output without --force, before the attach" 1 \
	"already exists; use --force" -o "$tmp/existing.core" "$gone"
check "existing output left as it was" test ! -s "$tmp/existing.core"
ln -s "$tmp/elsewhere" "$tmp/link.core"
run "symbolic link as output, before the attach" 1 \
	"is a symbolic link; not followed" -o "$tmp/link.core" "$gone"
run "missing output directory, before the attach" 1 \
	"cannot create the dump in its directory" \
	-o "$tmp/missing/dir/core" "$gone"
mkfifo "$tmp/fifo"
run "FIFO as output without --special-output, before the attach" 1 \
	"is a FIFO; not opened unless asked" -o "$tmp/fifo" "$gone"
run "a directory as output, before the attach" 2 \
	"cannot write the dump" -o "$tmp" "$gone"
run "format a process cannot have, before the attach" 2 \
	"--format kdump" --format kdump -o "$tmp/k.core" "$gone"
# With every check passed, the missing process is what is reported.
run "a writable output: the missing process is reported" 6 \
	"" -o "$tmp/new.core" "$gone"
check "nothing left behind for a refused process" test ! -e "$tmp/new.core"
finish
