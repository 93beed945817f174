#!/bin/bash
# CTest fixture "fixtures-generate": write every tests/fixtures/*.spec
# into OUTDIR with mkcore.  Several outputs are large sparse files.
#   gen-fixtures.sh MKCORE SPECDIR OUTDIR
set -euo pipefail
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
exit $rc
