#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 15 item 7: an output path someone else planted.  dump, convert,
# pid and extract with -o FIFO (or a symbolic link to a FIFO or a device)
# used to open it for writing without --force or O_NOFOLLOW: whoever
# planted a FIFO where root writes got the dump.  Now an existing FIFO or
# device is opened only with --special-output (and only when it is ours
# or root's), never through a symbolic link; stdout stays "-o -".  A
# watcher on the FIFO's other end tells whether it was ever opened.
#   output-special.sh KCOREDUMP FIXDIR
set -uo pipefail
kcoredump=$1 fixdir=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
src=$fixdir/vmcore-x86_64.core
proc=$fixdir/process-x86_64.core
[ -f "$src" ] || { echo "no fixture $src"; exit 77; }

# watch FIFO: a reader on FIFO in the background; unwatch sets $watched
# to "opened BYTES" if a writer ever came, else "never".  The command
# under test runs only once the watcher has the FIFO open (watch.ready):
# a watcher not yet started saw nothing under load.
watch() {
	rm -f "$tmp/watch.out" "$tmp/watch.ready"
	"$PY" - "$1" "$tmp/watch.ready" > "$tmp/watch.out" <<'PY' &
import os, select, signal, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)
seen, total = False, 0
p = select.poll()
p.register(fd, select.POLLIN | select.POLLHUP)
def done(*a):
    # A writer that came and went while poll() was interrupted by this
    # signal still leaves POLLHUP (and its last data) behind: look once
    # more and count what is left in the pipe.
    global seen, total
    # (select, not p.poll: the signal interrupted p.poll itself)
    if select.select([fd], [], [], 0)[0]:
        seen = True
        while True:
            try:
                b = os.read(fd, 1 << 20)
            except BlockingIOError:
                break
            if not b:
                break
            total += len(b)
    print("opened %d" % total if seen else "never", flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
open(sys.argv[2], "w").close()
while True:
    for _, ev in p.poll(100):
        seen = True
        try:
            b = os.read(fd, 1 << 20)
        except BlockingIOError:
            b = b""
        total += len(b)
        if not b:
            os.close(fd)
            fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)
            p = select.poll()
            p.register(fd, select.POLLIN)
PY
	wpid=$!
	# No deadline a loaded machine can beat: wait while the watcher lives
	# (ctest's timeout bounds the whole test).
	while [ ! -e "$tmp/watch.ready" ]; do
		kill -0 "$wpid" 2>/dev/null || { echo "the FIFO watcher died before it was ready"; exit 1; }
		sleep 0.05
	done
}
# unwatch runs in this shell, not in $(...): only the shell that started
# the watcher can wait for it, and a subshell's wait returned at once, so
# the answer was read before the watcher had written it (empty: issue 27).
unwatch() {
	kill -TERM "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null || true
	watched=$(cat "$tmp/watch.out")
}

"$kcoredump" dump "$src" -o "$tmp/extract-me.elf.zst" -q 2>/dev/null
sleep 100 & victim=$!
for cmd in dump convert pid extract; do
	case $cmd in
	dump) args=(dump "$src" -q) ;;
	convert) args=(convert "$src" --format lime -q) ;;
	pid) args=(pid "$victim" -q) ;;
	extract) args=(extract "$tmp/extract-me.elf.zst" -q) ;;
	esac
	rm -f "$tmp/fifo" "$tmp/link"
	mkfifo "$tmp/fifo"
	watch "$tmp/fifo"
	timeout -k 2 20 "$kcoredump" "${args[@]}" -o "$tmp/fifo" 2>"$tmp/err"
	rc=$?
	unwatch
	w=$watched
	check "$cmd -o FIFO: refused (exit $rc), the FIFO never opened ($w)" [ "$rc" -ne 0 -a "$w" = never ]
	check "$cmd -o FIFO: the message says how to ask" grep -q -- "--special-output\|FIFO" "$tmp/err"
	ln -s "$tmp/fifo" "$tmp/link"
	watch "$tmp/fifo"
	timeout -k 2 20 "$kcoredump" "${args[@]}" -o "$tmp/link" --special-output 2>"$tmp/err"
	rc=$?
	unwatch
	w=$watched
	[ "$cmd" = extract ] && rc=1 # extract has no --special-output: any refusal
	check "$cmd -o symlink to a FIFO, even with --special-output: refused ($rc), never opened ($w)" \
		[ "$rc" -ne 0 -a "$w" = never ]
	check "$cmd: the symbolic link is left alone" [ -L "$tmp/link" ]
	rm -f "$tmp/link"
	ln -s /dev/full "$tmp/link"
	timeout -k 2 20 "$kcoredump" "${args[@]}" -o "$tmp/link" 2>"$tmp/err"
	check "$cmd -o symlink to /dev/full: refused as a link, not written ($(head -c 120 "$tmp/err"))" \
		grep -q "symbolic link" "$tmp/err"
	timeout -k 2 20 "$kcoredump" "${args[@]}" -o /dev/null 2>"$tmp/err"
	check "$cmd -o /dev/null without --special-output: refused" grep -q -- "--special-output" "$tmp/err"
done
watch "$tmp/fifo"
timeout -k 2 30 "$kcoredump" dump "$proc" -q -o "$tmp/fifo" --special-output 2>"$tmp/err"
rc=$?
unwatch
w=$watched
check "dump -o FIFO --special-output: written ($rc, $w)" [ "$rc" -eq 0 ] && [[ $w == opened* && $w != "opened 0" ]]
check "dump -o /dev/null --special-output: written" "$kcoredump" dump "$src" -q -o /dev/null --special-output
check "dump -o - to a pipe: written" bash -c "'$kcoredump' dump '$proc' -q -o - | cat > '$tmp/out.elf' && eu-readelf -h '$tmp/out.elf' >/dev/null"
if is_root; then
	rm -f "$tmp/fifo"
	mkfifo "$tmp/fifo"
	chown 4321 "$tmp/fifo"
	watch "$tmp/fifo"
	timeout -k 2 20 "$kcoredump" dump "$proc" -q -o "$tmp/fifo" --special-output 2>"$tmp/err"
	rc=$?
	unwatch
	w=$watched
	check "another user's FIFO, even with --special-output: refused ($rc), never opened ($w)" \
		[ "$rc" -ne 0 -a "$w" = never ]
else
	skip "another user's FIFO: needs root to make one"
fi
kill "$victim" 2>/dev/null
wait "$victim" 2>/dev/null
finish
