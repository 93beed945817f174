#!/bin/bash
# Without a command kcoredump means dump only for arguments that start
# with an option dump knows (or a path); other mistakes are named as what
# they are (issue 28 item 8).
#   shorthand.sh KCOREDUMP FIXTURES
set -uo pipefail
kcoredump=$(readlink -f "$1") fix=$(readlink -f "$2")
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect WANT PATTERN ARGS...: exit status WANT, stderr matching PATTERN.
expect()
{
	local want=$1 pattern=$2 st
	shift 2
	"$kcoredump" "$@" >"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ "$st" -eq "$want" ] && grep -q -- "$pattern" "$tmp/err"; then
		ok "kcoredump $*: exit $st, $(head -1 "$tmp/err")"
	else
		not_ok "kcoredump $*: exit $st (want $want): $(head -c 300 "$tmp/err")"
	fi
}

expect 2 "'-v' is not a command: 'kcoredump --version' shows the version" -v
expect 2 "'--verbose' is not a command: 'kcoredump --version' shows the version" --verbose
expect 2 "options go after the command: 'kcoredump info --json ...'" \
	--json info "$fix/vmcore-x86_64.core"
expect 2 "options go after the command: 'kcoredump verify -q ...'" \
	-q verify "$fix/vmcore-x86_64.core"
# dump's options still mean dump, with an option's argument that looks
# like a command name left alone.
"$kcoredump" --segments ram -q -o "$tmp/a.elf" "$fix/vmcore-x86_64.core" 2>"$tmp/err"
check "kcoredump --segments ram -q -o FILE SOURCE: a dump ($?)" test -s "$tmp/a.elf"
cd "$tmp" || exit 1
"$kcoredump" -q -o info "$fix/vmcore-x86_64.core" 2>"$tmp/err"
check "kcoredump -q -o info SOURCE: dumps to a file named info ($?)" test -s "$tmp/info"
finish
