#!/bin/bash
# lint-circles: dependencies between the files of a part (src/lib, src/cli)
# point one way.  File A depends on file B when A's object file takes a
# symbol B's defines (what an #include of B's declarations is for);
# tsort(1) fails on a loop and names its files.
#   circles.sh NAME OBJECT_OR_ARCHIVE...
set -o pipefail
name=$1
shift
# nm -A: "[archive:]member:address type symbol", undefined ones "... U symbol".
if loops=$(nm -A "$@" | awk '{ n = split($1, p, ":"); f = p[n - 1]; sub(".*/", "", f); t = $(NF - 1) }
	t == "U" { uf[NR] = f; us[NR] = $NF; next }
	t ~ /^[TDBRGSV]$/ { def[$NF] = f }
	END { for (i in us) if ((us[i] in def) && def[us[i]] != uf[i]) print uf[i], def[us[i]] }' |
	sort -u | tsort 2>&1 > /dev/null) && [[ -z $loops ]]; then
	echo "ok 1 - no dependency circle between the files of $name"
	echo "1..1"
else
	echo "not ok 1 - a dependency circle between the files of $name:"
	sed 's/^/# /' <<< "$loops"
	echo "1..1"
	exit 1
fi
