#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 28 item 12, through the command line:
#  - list as a user who may not read the store shows the cores of its
#    user.UID directory with paths that exist; no cores (an empty or a
#    missing store, no user.UID) is not an error; one line per core, also
#    at 80 columns ($COLUMNS); --json has each core's path;
#  - mount refuses a mount point where something is mounted already;
#  - a truncated core opens: info shows what it holds and says it is
#    incomplete (truncated file); a dump of it exits 7;
#  - a file cut inside its ELF header says so, never "no error";
#  - bash completes PIDs after `kcoredump pid`.
#   rough-edges.sh KCOREDUMP FIXDIR
set -uo pipefail
kcoredump=$(readlink -f "$1") fixdir=$(readlink -f "$2")
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
command -v jq > /dev/null || { echo "1..0 # SKIP jq is not installed"; exit 77; }
tmp=$(mktemp -d)
mounted=
cleanup()
{
	# Every mount there (a kcoredump that stacks them leaves two).
	for _ in 1 2 3; do
		[ -n "$mounted" ] && grep -q " $mounted " /proc/self/mounts &&
			fusermount3 -u "$mounted" 2> /dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
k() { "$kcoredump" "$@"; }
jqe() { jq -e "$@" > /dev/null; }
fix=$fixdir/process-x86_64.core

# A store with one root-only core and one in user.65534.
store=$tmp/store
mkdir -m 700 "$store"
k core-handler --dir "$store" --no-sync --no-journal 1234 1000 1000 11 1767225600 myprog < "$fix" 2> "$tmp/err" ||
	not_ok "core-handler: $(head -c 200 "$tmp/err")"
k core-handler --dir "$store" --no-sync --no-journal 1235 65534 65534 6 1767225700 other-prog < "$fix" 2> "$tmp/err" ||
	not_ok "core-handler: $(head -c 200 "$tmp/err")"
mkdir -m 700 "$store/user.65534"
mv "$store"/core.other-prog.* "$store/user.65534/"
k list -D "$store" > "$tmp/root.txt" 2> "$tmp/err"
check "list (root): a header and one line per core" [ "$(wc -l < "$tmp/root.txt")" = 3 ]
while read -r path; do
	check "list (root): '$path' exists" [ -f "$path" ]
done < <(awk 'NR > 1 { print $(NF - 1) }' "$tmp/root.txt")
COLUMNS=80 k list -D "$store" > "$tmp/80.txt" 2> "$tmp/err"
check "list at 80 columns: no line is longer" \
	[ "$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$tmp/80.txt")" -le 80 ]
check "list at 80 columns: one line per core (and the store's name)" \
	[ "$(grep -c '^20[0-9][0-9]-' "$tmp/80.txt")" = 2 ] && grep -q "^Cores in $store" "$tmp/80.txt"
k list --json -D "$store" > "$tmp/list.json"
check "list --json: each core's path exists" \
	bash -c "jq -r '.cores[].path' '$tmp/list.json' | while read -r p; do [ -f \"\$p\" ] || exit 1; done"

if command -v setpriv > /dev/null; then
	chmod 711 "$tmp" "$store"
	chown -R 65534:65534 "$store/user.65534"
	as_nobody() { setpriv --reuid 65534 --regid 65534 --clear-groups "$kcoredump" "$@"; }
	as_nobody list -D "$store" > "$tmp/user.txt" 2> "$tmp/err"
	rc=$?
	check "list (uid 65534): exit 0 ($rc: $(head -c 200 "$tmp/err"))" [ "$rc" = 0 ]
	path=$(awk 'NR == 2 { print $(NF - 1) }' "$tmp/user.txt")
	check "list (uid 65534): its core, in user.65534 ($path)" \
		[ "$path" = "$(ls "$store"/user.65534/core.other-prog.*[0-9])" ]
	check "list (uid 65534): only its own core" [ "$(wc -l < "$tmp/user.txt")" = 2 ]
	rm -rf "$store/user.65534"
	as_nobody list -D "$store" > "$tmp/none.txt" 2> "$tmp/err"
	rc=$?
	check "list (uid 65534, no user dir): exit 0, says no cores of yours ($rc)" \
		[ "$rc" = 0 ] && grep -q "no cores of yours" "$tmp/err" && [ ! -s "$tmp/none.txt" ]
	as_nobody list --json -D "$store" > "$tmp/none.json" 2> "$tmp/err"
	check "list --json (uid 65534, no user dir): an empty list" jqe '.cores == []' "$tmp/none.json"
else
	skip "list as a user: no setpriv"
fi
mkdir "$tmp/empty"
k list -D "$tmp/empty" > "$tmp/out" 2> "$tmp/err"
check "list of an empty store: exit 0, 'no cores'" [ $? = 0 ] && grep -q "no cores in" "$tmp/err"
k list -D "$tmp/missing" > "$tmp/out" 2> "$tmp/err"
check "list of a store never made: exit 0, says it does not exist" [ $? = 0 ] &&
	grep -q "does not exist" "$tmp/err"

# mount over a mount point.
if [ -e /dev/fuse ] && command -v fusermount3 > /dev/null; then
	k dump -q "$fix" -o "$tmp/p.elf.zst"
	mkdir "$tmp/m"
	if k mount "$tmp/p.elf.zst" "$tmp/m" 2> "$tmp/err"; then
		mounted=$tmp/m
		k mount "$tmp/p.elf.zst" "$tmp/m" 2> "$tmp/err"
		rc=$?
		check "mount on a mount point: refused ($rc)" [ "$rc" != 0 ] &&
			grep -q "mounted there already" "$tmp/err"
		check "... and the first mount still serves the core" [ -s "$tmp/m/vmcore" ]
		check "... only one mount there" [ "$(grep -c " $tmp/m " /proc/self/mounts)" = 1 ]
	else
		not_ok "mount: $(head -c 200 "$tmp/err")"
	fi
else
	skip "mount: no /dev/fuse or fusermount3"
fi

# A truncated core: what it holds, and that it is incomplete.
head -c 1000000 "$fix" > "$tmp/trunc.core"
k info "$tmp/trunc.core" > "$tmp/info.txt" 2> "$tmp/err"
rc=$?
check "info on a truncated core: exit 0 ($rc: $(head -c 200 "$tmp/err"))" [ "$rc" = 0 ]
check "info: incomplete, a truncated file" grep -q "^Complete: *no.*truncated file" "$tmp/info.txt"
check "info: its segments and notes" grep -q "NT_PRSTATUS" "$tmp/info.txt" &&
	grep -q '\[heap\]' "$tmp/info.txt"
k info --json "$tmp/trunc.core" > "$tmp/info.json"
check "info --json: incomplete, origin 'truncated file'" \
	jqe '.source.incomplete.origin == "truncated file" and .source.incomplete.unreadable_bytes > 0' "$tmp/info.json"
k dump -q "$tmp/trunc.core" -o "$tmp/trunc.elf" 2> "$tmp/err"
rc=$?
check "dump of a truncated core: exit 7, written ($rc)" [ "$rc" = 7 ] && [ -s "$tmp/trunc.elf" ]
head -c 40 "$fix" > "$tmp/t40.core"
k info "$tmp/t40.core" > /dev/null 2> "$tmp/err"
check "a file cut in its ELF header: says so ($(cat "$tmp/err"))" \
	grep -q "truncated: the ELF header needs 0x40 bytes, the file has 0x28" "$tmp/err"
check "... never 'no error'" bash -c "! grep -q 'no error' '$tmp/err'"

# bash completes PIDs for pid.
comp=$here/../../completions/kcoredump.bash
if command -v bash > /dev/null && [ -f "$comp" ]; then
	sleep 100 &
	spid=$!
	got=$(bash -c '. "$1"; COMP_WORDS=(kcoredump pid "${2:0:2}"); COMP_CWORD=2; _kcoredump; printf "%s\n" "${COMPREPLY[@]}"' _ "$comp" "$spid" 2>&1)
	kill "$spid" 2> /dev/null
	wait "$spid" 2> /dev/null
	check "bash: 'kcoredump pid ${spid:0:2}<TAB>' offers $spid" grep -qx "$spid" <<< "$got"
fi
finish
