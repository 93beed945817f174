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

# watch FIFO: a reader on FIFO in the background; unwatch prints
# "opened BYTES" if a writer ever came, else "never".
watch() {
	rm -f "$tmp/watch.out" "$tmp/watch.ready"
	"$PY" - "$1" "$tmp/watch.ready" > "$tmp/watch.out" <<'PY' &
import os, select, signal, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)
seen, total = False, 0
signal.signal(signal.SIGTERM, lambda *a: (print("opened %d" % total if seen else "never"), sys.exit(0)))
open(sys.argv[2], "w").close()
p = select.poll()
p.register(fd, select.POLLIN | select.POLLHUP)
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
	for _ in $(seq 100); do
		[ -e "$tmp/watch.ready" ] && break
		sleep 0.1
	done
}
unwatch() {
	sleep 0.3
	kill -TERM "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	cat "$tmp/watch.out"
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
	w=$(unwatch)
	check "$cmd -o FIFO: refused (exit $rc), the FIFO never opened ($w)" [ "$rc" -ne 0 -a "$w" = never ]
	check "$cmd -o FIFO: the message says how to ask" grep -q -- "--special-output\|FIFO" "$tmp/err"
	ln -s "$tmp/fifo" "$tmp/link"
	watch "$tmp/fifo"
	timeout -k 2 20 "$kcoredump" "${args[@]}" -o "$tmp/link" --special-output 2>"$tmp/err"
	rc=$?
	w=$(unwatch)
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
w=$(unwatch)
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
	w=$(unwatch)
	check "another user's FIFO, even with --special-output: refused ($rc), never opened ($w)" \
		[ "$rc" -ne 0 -a "$w" = never ]
else
	skip "another user's FIFO: needs root to make one"
fi
kill "$victim" 2>/dev/null
wait "$victim" 2>/dev/null
finish
