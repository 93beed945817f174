#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 15 item 2: who may read a stored core.  Files are root's; with
# --owner user the crashing user gets read access (an ACL entry, in the
# store's user.UID directory) only when uid == euid, gid == egid,
# AT_SECURE is 0 (NT_AUXV, the kernel's own copy) and the dump mode (%d)
# is 1, as systemd-coredump decides.  A setuid program's core with
# suid_dumpable=2 used to be given to the user.
#   ch-owner.sh KCOREDUMP MKCORE SPECDIR
set -uo pipefail
kcoredump=$1 mkcore=$2 specdir=$3
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

p=$("$kcoredump" core-handler --print-pattern --owner user)
check "the pattern passes %d: '$p'" bash -c "[[ '$p' == *' --dump-mode=%d '* && '$p' == *' %P %u %g %s %t %e' ]]"
if ! is_root; then
	skip "the ownership rule needs root (chown, setpriv)"
	finish
fi

# variant NAME SED: the process core fixture with its NT_AUXV edited.
variant() {
	sed "$2" "$specdir/process-x86_64.spec" > "$tmp/$1.spec"
	"$mkcore" "$tmp/$1.spec" "$tmp/$1.core" >/dev/null
}
variant plain 's/AT_UID=1000/AT_UID=1000/'
variant setuid 's/AT_EUID=1000/AT_EUID=0/'
variant setgid 's/AT_EGID=1000/AT_EGID=0/'
variant secure 's/AT_SECURE=0/AT_SECURE=1/'
variant noauxv '/^note auxv/d'

d=$(newstore store)
n=0
# store CORE MODE: handler --owner user, dump mode MODE ("" = not given);
# sets f to the core's path (in user.1000 or the top directory).
store() {
	n=$((n + 1))
	local mode=()
	[ -n "$2" ] && mode=(--dump-mode "$2")
	handler "$d" --owner user "${mode[@]}" 4242 1000 1000 6 $((1700000000 + n)) crashme \
		< "$tmp/$1.core" 2>"$tmp/err.$n"
	f=$(find "$d" -name "core.crashme.1000.4242.$((1700000000 + n))" -type f)
}
user_reads() { as 1000 cat "$1" >/dev/null 2>&1; }
root_only() { # FILE: root's, and uid 1000 cannot read it or its metadata
	[ -n "$1" ] && [ "$(stat -c %u:%g "$1" "$1.json" | sort -u)" = "0:0" ] &&
		! user_reads "$1" && ! user_reads "$1.json" &&
		[ "$(dirname "$1")" = "$d" ]
}

store plain 1
check "uid == euid, AT_SECURE 0, dump mode 1: root's files in user.1000" \
	[ -n "$f" -a "$(dirname "$f")" = "$d/user.1000" -a "$(stat -c %u "$f")" = 0 ]
check "... and uid 1000 reads the core and its metadata" \
	bash -c "$(declare -f as user_reads); user_reads '$f' && user_reads '$f.json'"
check "... uid 1001 reads neither" \
	bash -c "! setpriv --reuid=1001 --regid=1001 --clear-groups cat '$f' >/dev/null 2>&1"
check "... the metadata says why" quiet jq -e '.access.user and .access.dump_mode == 1' "$f.json"
store setuid 1
check "a setuid program's core (euid 0 in NT_AUXV): root's only" root_only "$f"
check "... the metadata says why" quiet jq -e '(.access.user | not) and (.access.why | test("euid"))' "$f.json"
store setgid 1
check "a setgid program's core: root's only" root_only "$f"
store secure 1
check "AT_SECURE=1: root's only" root_only "$f"
store plain 2
check "dump mode 2 (suid_dumpable=2): root's only" root_only "$f"
check "... the metadata says dump mode 2" quiet jq -e '.access.dump_mode == 2 and (.access.user | not)' "$f.json"
store plain 0
check "dump mode 0: root's only" root_only "$f"
store plain ""
check "no %d in the pattern: root's only" root_only "$f"
store noauxv 1
check "no NT_AUXV: root's only" root_only "$f"
handler "$d" 4242 1000 1000 6 1700000100 crashme < "$tmp/plain.core" 2>/dev/null
check "--owner root (the default), dump mode 1: root's only" root_only "$d/core.crashme.1000.4242.1700000100"
check "the store is not listable by uid 1000" bash -c "$(declare -f as); ! as 1000 ls '$d' >/dev/null 2>&1"
finish
