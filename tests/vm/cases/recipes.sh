#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: the README's five recipes and the man page's five jobs and
# EXAMPLES on the real kernel (issue 46 item 3), each command line as the
# documents print it (recipes.host.sh checks that every one of them is
# here, or named as not run), with its exit status and output kept in
# $OUT/<n>.{rc,out,err} for the host's checks.  Paths as written:
# /mnt/evidence and the working directory are on the results share (a
# dump of live memory into the guest's RAM file system would be refused);
# "1234" is a live process of ours.  Not run: kcoredump mount and the
# readers (crash, drgn, gdb, vol: no FUSE or debuggers in the guest).
set -u

mkdir -p "$OUT/evidence" "$OUT/work" /mnt /var/lib
ln -sfn "$OUT/evidence" /mnt/evidence
cd "$OUT/work" || exit 1
echo 1 > /proc/sys/kernel/kptr_restrict
# shellcheck disable=SC3045 # busybox ash has ulimit -c
ulimit -c unlimited
n=0

# run LINE: the documented command line LINE, run by the shell (kcoredump
# on PATH as the guest's $KCOREDUMP); LINE kept in $OUT/N.cmd.
run() {
	n=$((n + 1))
	printf '%s\n' "$1" > "$OUT/$n.cmd"
	rc=0
	PATH=$(dirname "$KCOREDUMP"):$PATH sh -c "$1" > "$OUT/$n.out" \
		2> "$OUT/$n.err" || rc=$?
	echo "$rc" > "$OUT/$n.rc"
	echo "[$n] exit $rc: $1"
	head -c 600 "$OUT/$n.err"
}

# The kcoredump in the guest is $KCOREDUMP; under that name on PATH.
[ "$(basename "$KCOREDUMP")" = kcoredump ] ||
	ln -sf "$KCOREDUMP" "$(dirname "$KCOREDUMP")/kcoredump"

# README 1 and man job 1: the forensic snapshot, its record, verify.
run "kcoredump dump -o /mnt/evidence/mem.elf.zst --record /mnt/evidence/mem.json --case IR-2026-17 --examiner 'A. Examiner'"
run "kcoredump verify /mnt/evidence/mem.elf.zst"
run "sha256sum /mnt/evidence/mem.elf.zst"

# README 2 and man job 2: vmalloc areas, a subsystem's, kernel text.  The
# documents' caller (xfs) need not be loaded here: then the dump says so
# and names the callers there are.  A caller that is there is run too:
# kernel_clone (thread stacks).  The loaded modules (9p) have their text
# in the module area, which plain --vmalloc-range leaves out on x86_64.
run "kcoredump dump --vmalloc-range -o vm.elf.zst"
run "kcoredump dump --vmalloc-range --caller xfs -o xfs.elf"
run "kcoredump dump --vmalloc-range --caller kernel_clone -o stacks.elf --json"
run "kcoredump dump --range _stext+16M -o text.elf"

# README 3, man job 3 and EXAMPLES: a live process ("1234").
sleep 600 &
pid=$!
run "kcoredump pid $pid -o core.$pid"
echo "$pid" > "$OUT/pid"
kill "$pid" 2> /dev/null

# README 4 and man job 4: the core handler, a crash, list and show.
run "kcoredump core-handler --dir /var/lib/kcoredump --max-use 10G --install"
sh -c 'kill -SEGV $$' 2> /dev/null
i=0
while [ $i -lt 300 ] && ! ls /var/lib/kcoredump/core.*.json > /dev/null 2>&1; do
	sleep 0.2
	i=$((i + 1))
done
run "kcoredump list"
run "kcoredump show -1"
echo core > /proc/sys/kernel/core_pattern

# README 5 and man job 5 (without mount and the readers).
cp /mnt/evidence/mem.elf.zst mem.elf.zst
run "kcoredump info mem.elf.zst"
run "kcoredump convert mem.elf.zst --format lime -o mem.lime"

# The man page's EXAMPLES.
run "kcoredump info"
echo 0 > /proc/sys/kernel/core_uses_pid
sleep 100 &
kill -ABRT $!
wait $! 2> /dev/null
run "kcoredump info --segments-only core"
run "kcoredump info --json core"
run "kcoredump info --notes-only --json"
echo "$n" > "$OUT/count"
