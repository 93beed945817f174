#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 42 item 1: `kcoredump debug` started gdb as root on paths the
# crashing user chose: the stored executable (the NT_FILE name of the
# main program, in a directory the user owns) whenever access(R_OK) said
# yes, a FIFO included; and gdb itself opens every NT_FILE name and
# link-map l_name of the core.  A FIFO there blocked gdb (uid 0) in
# openat, and it stayed blocked and orphaned when kcoredump was killed.
# Now, as info's --open-mapped-files: another user's core is refused
# (exit 5, no debugger started) unless --open-mapped-files is given; then
# gdb runs with its sysroot at nothing and auto-loading off, gets the
# executable only as a private copy of the regular file opened without
# following a symlink or blocking, and dies with kcoredump
# (PR_SET_PDEATHSIG).  A fake debugger logs its arguments and what the
# files it is given are; real gdb runs under an inotify watch of a
# canary the core names.
#   debug-paths.sh KCOREDUMP LINKMAP-CRASH FSWATCH
set -uo pipefail
kcoredump=$1 subject=$2 fswatch=$3
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

if ! is_root; then
	echo "1..0 # SKIP needs root (another user's core, as root debugs it)"
	exit 77
fi
NOBODY=65534
# The private directories under $tmp (one is left behind by the SIGKILL).
export TMPDIR=$tmp
mkdir -m 755 "$tmp/bin"
cp "$subject" "$tmp/bin/subject"
chmod 755 "$tmp/bin/subject"
mkfifo -m 666 "$tmp/fifo"
echo "secret" >"$tmp/canary"
chmod 644 "$tmp/canary"
: >"$tmp/sentinel"
store=$(newstore store)

# crash UID NAME: a core of the subject run as UID, its l_names the FIFO
# and the canary, stored by the handler as UID's crash (comm NAME).
crash() {
	local uid=$1 name=$2 spid nl
	coproc SUBJ { exec setpriv --reuid="$uid" --regid="$uid" --clear-groups \
		"$tmp/bin/subject" "$tmp/fifo" "$tmp/canary" "$tmp/fifo" "$tmp/canary"; }
	read -r _ spid nl <&"${SUBJ[0]}"
	if ! "$kcoredump" pid "$spid" -o "$tmp/$name.core" -q 2>"$tmp/pid.err"; then
		echo quit >&"${SUBJ[1]}"
		wait "$SUBJ_PID" 2>/dev/null
		if grep -qi "ptrace\|permission" "$tmp/pid.err"; then
			echo "1..0 # SKIP ptrace is not allowed here: $(head -c 200 "$tmp/pid.err")"
			exit 77
		fi
		not_ok "kcoredump pid of the subject: $(cat "$tmp/pid.err")"
		finish
	fi
	echo quit >&"${SUBJ[1]}"
	wait "$SUBJ_PID" 2>/dev/null
	[ "${nl:-0}" -ge 2 ] &&
		handler "$store" "$spid" "$uid" "$uid" 6 "$((1700000000 + uid))" "$name" \
			<"$tmp/$name.core" 2>/dev/null
}
check "nobody's crash stored, its link map naming a FIFO and a canary" crash "$NOBODY" theirs
check "root's own crash stored" crash 0 mine
check "the record names the executable" \
	grep -q "\"$tmp/bin/subject\"" "$store"/*theirs*.json

# The fake debugger: its arguments, one a line; for the executable (the
# argument before -c) what it is, and its first bytes when a regular
# file; with dbg.hang it blocks opening the FIFO, as gdb did.
cat >"$tmp/fakedbg" <<SH
#!/bin/bash
echo \$\$ >"$tmp/dbg.pid"
printf '%s\n' "\$@" >"$tmp/dbg.args"
exe=
prev=
prev2=
for a in "\$@"; do
	[ "\$a" = -c ] && [ "\$prev2" != -iex ] && [ "\$prev2" != -ex ] && exe=\$prev
	prev2=\$prev
	prev=\$a
done
: >"$tmp/dbg.files"
if [ -n "\$exe" ]; then
	echo "exe \$exe \$(stat -c %F "\$exe")" >>"$tmp/dbg.files"
	[ -f "\$exe" ] && head -c 4 "\$exe" | od -An -c | tr -d ' ' >>"$tmp/dbg.files"
fi
[ -e "$tmp/dbg.hang" ] && exec 3<"$tmp/fifo"
exit 3
SH
chmod +x "$tmp/fakedbg"
fresh() { rm -f "$tmp"/dbg.args "$tmp"/dbg.files "$tmp"/dbg.pid; }
debug() { timeout -k 5 60 "$kcoredump" debug --dir "$store" --debugger "$tmp/fakedbg" "$@"; }

fresh
debug theirs >"$tmp/out" 2>"$tmp/err"
rc=$?
check "another user's core without --open-mapped-files: exit $rc (want 5)" [ "$rc" -eq 5 ]
check "... no debugger started" [ ! -e "$tmp/dbg.args" ]
check "... and it says why and what to do" \
	grep -q "uid $NOBODY's process.*--open-mapped-files" "$tmp/err"

fresh
debug --open-mapped-files theirs >"$tmp/out" 2>"$tmp/err"
rc=$?
check "--open-mapped-files: the debugger ran (exit $rc, its own 3)" [ "$rc" -eq 3 ]
check "... with its sysroot at nothing and auto-loading off, first" bash -c "
	[ \"\$(head -6 '$tmp/dbg.args' | tr '\n' '|')\" = '-iex|set auto-load off|-iex|set sysroot /nonexistent/kcoredump-no-sysroot|-iex|set solib-search-path|' ]"
exe=$(awk '$1 == "exe" { print $2 }' "$tmp/dbg.files" 2>/dev/null)
check "... the executable a private copy, not the user's path ($exe)" \
	[ -n "$exe" -a "$exe" != "$tmp/bin/subject" ]
check "... a regular ELF file" bash -c "grep -q '^exe .* regular file$' '$tmp/dbg.files' &&
	grep -qx '177ELF' '$tmp/dbg.files'"
check "... removed afterwards with its directory" [ ! -e "$exe" -a ! -e "${exe%/*}" ]

fresh
debug mine >"$tmp/out" 2>"$tmp/err"
check "one's own core: the debugger as before, the executable's own path" bash -c "
	! grep -q '^-iex' '$tmp/dbg.args' && grep -q '^exe $tmp/bin/subject regular file' '$tmp/dbg.files'"

# The user replaces the executable with a FIFO after the crash.
mv "$tmp/bin/subject" "$tmp/subject.real"
mkfifo -m 666 "$tmp/bin/subject"
for who in theirs mine; do
	fresh
	debug --open-mapped-files "$who" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	check "$who, the executable now a FIFO: the debugger ran (exit $rc), not hung" [ "$rc" -eq 3 ]
	check "... given no executable (not the FIFO)" bash -c "
		[ -e '$tmp/dbg.files' ] && ! grep -q '^exe' '$tmp/dbg.files' && ! grep -qx '$tmp/bin/subject' '$tmp/dbg.args'"
	check "... and it says why" grep -q "not used: not a regular file" "$tmp/err"
done

# Killed while the debugger blocks: the debugger dies too.
fresh
touch "$tmp/dbg.hang"
"$kcoredump" debug --dir "$store" --debugger "$tmp/fakedbg" --open-mapped-files theirs \
	>/dev/null 2>&1 &
kpid=$!
for _ in $(seq 100); do [ -s "$tmp/dbg.pid" ] && break; sleep 0.1; done
dpid=$(cat "$tmp/dbg.pid" 2>/dev/null)
sleep 0.5
kill -KILL "$kpid"
wait "$kpid" 2>/dev/null
gone=no
for _ in $(seq 50); do
	[ -n "$dpid" ] && ! kill -0 "$dpid" 2>/dev/null && { gone=yes; break; }
	sleep 0.1
done
check "kcoredump killed while its debugger blocks on a FIFO: the debugger gone ($gone)" \
	[ -n "$dpid" -a "$gone" = yes ]
[ -n "$dpid" ] && kill -KILL "$dpid" 2>/dev/null
rm -f "$tmp/dbg.hang"

# Real gdb, as root, on nobody's core: it must not block on the FIFO
# its link map names, nor open the canary.  The executable is back, its
# .gnu_debuglink naming the FIFO through "../" (gdb looks for it next to
# the executable when the file has no debug information).
watched() {
	local wpid ready
	: >"$tmp/events"
	coproc WATCH { exec "$fswatch" "$tmp/events" "$tmp/canary" "$tmp/sentinel"; }
	wpid=$WATCH_PID
	read -r ready <&"${WATCH[0]}"
	[ "$ready" = ready ] || { rc=99; opened=unknown; return; }
	timeout -k 5 60 "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	cat "$tmp/sentinel"
	until grep -q "^open $tmp/sentinel" "$tmp/events" || ! kill -0 "$wpid" 2>/dev/null; do
		sleep 0.05
	done
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	opened=no
	grep -q "^open $tmp/canary" "$tmp/events" && opened=yes
}
if command -v gdb >/dev/null && command -v objcopy >/dev/null; then
	rm -f "$tmp/bin/subject"
	"$PY" -c "
import struct, sys
n = b'../' * 16 + sys.argv[1].lstrip('/').encode() + b'\0'
n += bytes(-len(n) % 4)
open(sys.argv[2], 'wb').write(n + struct.pack('<I', 0x12345678))" "$tmp/fifo" "$tmp/link.bin"
	objcopy --strip-debug --add-section .gnu_debuglink="$tmp/link.bin" \
		"$tmp/subject.real" "$tmp/bin/subject"
	chmod 755 "$tmp/bin/subject"
	watched "$kcoredump" debug --dir "$store" --open-mapped-files \
		-A "-batch -ex 'info sharedlibrary' -ex 'info threads'" theirs
	check "gdb on nobody's core: exit $rc (124: blocked on the FIFO)" [ "$rc" -eq 0 ]
	check "... the canary was never opened" [ "$opened" = no ]
	check "... it saw the core's thread" grep -qE '^\* +1 +(LWP|Thread) ' "$tmp/out"
else
	skip "real gdb: no gdb or objcopy"
fi
finish
