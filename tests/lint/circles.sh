#!/bin/bash
# lint-circles: dependencies between the files of a part (src/lib, src/cli)
# point one way.  File A depends on file B when A's object file takes a
# symbol B's defines (what an #include of B's declarations is for);
# tsort(1) fails on a loop and names its files.
# With --map README SRCDIR (src/lib), also: every dependency between the
# folders of SRCDIR is one README's indented "FOLDER: DEP..." lines name.
#   circles.sh NAME [--map README SRCDIR] OBJECT_OR_ARCHIVE...
set -o pipefail
name=$1
shift
map= srcdir=
if [[ ${1:-} == --map ]]; then
	map=$2 srcdir=$3
	shift 3
fi
# nm -A: "[archive:]member:address type symbol", undefined ones "... U symbol".
if loops=$(nm -A "$@" | awk '{ n = split($1, p, ":"); f = p[n - 1]; sub(".*/", "", f); t = $(NF - 1) }
	t == "U" { uf[NR] = f; us[NR] = $NF; next }
	t ~ /^[TDBRGSV]$/ { def[$NF] = f }
	END { for (i in us) if ((us[i] in def) && def[us[i]] != uf[i]) print uf[i], def[us[i]] }' |
	sort -u | tsort 2>&1 > /dev/null) && [[ -z $loops ]]; then
	echo "ok 1 - no dependency circle between the files of $name"
	status=0
else
	echo "not ok 1 - a dependency circle between the files of $name:"
	sed 's/^/# /' <<< "$loops"
	status=1
fi
if [[ -z $map ]]; then
	echo "1..1"
	exit "$status"
fi
# Folder of each object file (archive members are named by basename).
if ! folders=$(cd "$srcdir" && for f in */*.c; do echo "${f##*/}.o ${f%%/*}"; done); then
	echo "not ok 2 - cannot list the folders of $srcdir"
	echo "1..2"
	exit 1
fi
if ! edges=$(nm -A "$@" | awk '{ n = split($1, p, ":"); f = p[n - 1]; sub(".*/", "", f); t = $(NF - 1) }
	t == "U" { uf[NR] = f; us[NR] = $NF; next }
	t ~ /^[TDBRGSV]$/ { def[$NF] = f }
	END { for (i in us) if ((us[i] in def) && def[us[i]] != uf[i]) print uf[i], def[us[i]] }' |
	awk 'NR == FNR { d[$1] = $2; next } (d[$1] != "" && d[$2] != "" && d[$1] != d[$2]) { print d[$1], d[$2], $1, $2 }' \
		<(echo "$folders") -); then
	echo "not ok 2 - nm failed on $*"
	echo "1..2"
	exit 1
fi
# The allowed edges: README lines "    FOLDER: DEP DEP...".
allowed=$(grep -E '^    [a-z]+:( [a-z]+)*$' "$map" || true)
if [[ -z $allowed ]]; then
	echo "not ok 2 - $map lists no folder dependencies (\"    FOLDER: DEP...\" lines)"
	echo "1..2"
	exit 1
fi
bad=$(awk 'NR == FNR { sub(":", "", $1); for (i = 2; i <= NF; i++) ok[$1 " " $i] = 1; next }
	!(($1 " " $2) in ok) { print $1 " -> " $2 " (" $3 " takes from " $4 ")" }' \
	<(echo "$allowed") <(echo "$edges") | sort -u)
if [[ -z $bad ]]; then
	echo "ok 2 - every dependency between the folders of $srcdir is one $map names"
else
	echo "not ok 2 - dependencies between folders that $map does not name:"
	sed 's/^/# /' <<< "$bad"
	status=1
fi
echo "1..2"
exit "$status"
