#!/bin/bash
# CTest fixture "fixtures-generate": write every tests/fixtures/*.spec
# into OUTDIR with mkcore (several outputs are large sparse files), and
# tests/tools/mkformats.py's files into OUTDIR/formats.
#   gen-fixtures.sh MKCORE SPECDIR OUTDIR
set -euo pipefail
# shellcheck source=../lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/shell.sh"
kcd_trap_errors
mkcore=$1 specdir=$2 outdir=$3
mkdir -p "$outdir"
rc=0
for spec in "$specdir"/*.spec; do
	name=$(basename "$spec" .spec)
	if "$mkcore" "$spec" "$outdir/$name.core.tmp" &&
		mv -f "$outdir/$name.core.tmp" "$outdir/$name.core"; then
		echo "ok - $name"
	else
		echo "not ok - $name"
		rm -f "$outdir/$name.core.tmp"
		rc=1
	fi
done
# The other input formats (kdump, flattened, LiME, .zst/.xz) and their
# malformed variants, written by hand from the format facts.
if python3 "$(dirname "$0")/../tools/mkformats.py" "$outdir/formats"; then
	echo "ok - formats"
else
	echo "not ok - formats"
	rc=1
fi
exit $rc
