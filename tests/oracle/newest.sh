#!/bin/bash
# SPDX-License-Identifier: MIT
# The newest readers (Debian sid, in the root tests/oracle/sid-root.sh
# caches: crash 9.0.x, drgn 0.3.x with libkdumpfile 0.5.x, makedumpfile
# 1.7.8, gdb 18, elfutils 0.196) on what kcoredump writes:
#  - process core (kcoredump pid of a static pidtarget): gdb's backtraces
#    of its 4 threads, eu-stack unwinds every thread;
#  - a real kernel's memory (the vm-formats guest's ram.elf, when there),
#    as our ELF, kdump (default codec), flattened kdump (written to a
#    pipe), -d 31 kdump, mounted .zst and mounted LiME and AVML (their
#    machine and VMCOREINFO found in the memory, issue 43): crash
#    --osrelease prints the guest's release; drgn (mount-readers.py) reads
#    init_uts_ns, the
#    VMCOREINFO symbols and 500 random pages as in the plain ELF;
#    makedumpfile --dump-dmesg prints the guest's log, the same from our
#    ELF and our kdump, and -d 1 and -d 31 of our ELF and kdump give dumps
#    it and crash read (drgn reads -d 1 of our ELF as our ELF);
#  - with VMLINUX (the guest's debug vmlinux, tests/oracle/fetch-dbg.sh):
#    crash's sys, ps, log, kmem -i, mod, bt -a, vm 1 and files 1 on every
#    format, on makedumpfile's -d 1 and -d 31 outputs and on the guest's
#    own dump of its /proc/kcore, with the same ps on each (our kdump and
#    makedumpfile's -d 1 output, our --exclude 31 kdump and its -d 31
#    output); drgn's task list, stack trace of every task, slab caches and
#    every struct page's flags as in the plain ELF; and the same jiffies
#    from drgn (through the kernel image's PT_LOAD) and crash (through
#    RAM) in the ELF files.  On 7.x the one documented finding is expected
#    (docs/reference.md): crash 9.0.2 does not read makedumpfile 1.7.8's
#    own -d 31 output; the test fails when that changes.
#   newest.sh KCOREDUMP PIDTARGET_STATIC GUEST_RAM_ELF [VMLINUX]
set -uo pipefail
kcoredump=$1 target=$2 ram=$3 vmlinux=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../integration/lib.sh"
sid=$here/sid-root.sh
"$sid" --skip > /dev/null
rc=$?
((rc == 0)) || { echo "1..0 # SKIP no Debian sid root (sid-root.sh exit $rc)"; exit 77; }
tmp=$(mktemp -d)
chmod 0755 "$tmp"
pids=() mounts=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
	for m in "${mounts[@]}"; do fusermount3 -u "$m" 2> /dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
binds=(--bind-rw "$tmp" --bind "$here" --bind "$target")
[[ -z $vmlinux ]] || binds+=(--bind "$vmlinux")
# in_sid CMD...: CMD in the sid root, which sees $tmp, tests/oracle, the
# target and the vmlinux at their paths.
in_sid() { "$sid" run "${binds[@]}" -- "$@"; }
echo "# $(in_sid dpkg-query -W -f='${Package} ${Version}, ' crash python3-drgn python3-libkdumpfile makedumpfile gdb elfutils)"

# --- process core: gdb 18 and eu-stack 0.196 ---
mkfifo "$tmp/in"
"$target" < "$tmp/in" > "$tmp/target.out" 2>&1 &
pids+=($!)
exec {fd}> "$tmp/in"
for _ in $(seq 300); do
	grep -q '^ready' "$tmp/target.out" 2> /dev/null && break
	sleep 0.1
done
sleep 0.5
if "$kcoredump" pid -q --format elf "${pids[0]}" -o "$tmp/p.core" 2> "$tmp/pid.err"; then
	in_sid gdb -nx -batch -ex 'thread apply all bt' "$target" "$tmp/p.core" > "$tmp/bt" 2>&1
	n=$(grep -c '^Thread ' "$tmp/bt") || true
	w=$(grep -c 'kc_worker_outer' "$tmp/bt") || true
	[[ $n == 4 && $w == 3 ]] &&
		ok "process core: gdb 18 sees 4 threads, 3 in kc_worker_outer" ||
		not_ok "process core: gdb 18 sees $n threads, $w in kc_worker_outer: $(grep -v '^\[' "$tmp/bt" | head -n 5 | tr '\n' ' ')"
	in_sid eu-stack --core "$tmp/p.core" --executable "$target" > "$tmp/eu" 2>&1
	n=$(grep -c '^TID' "$tmp/eu") || true
	[[ $n == 4 ]] && grep -q kc_worker_outer "$tmp/eu" &&
		ok "process core: eu-stack 0.196 unwinds 4 threads to kc_worker_outer" ||
		not_ok "process core: eu-stack 0.196: $n threads: $(head -n 5 "$tmp/eu" | tr '\n' ' ')"
else
	not_ok "kcoredump pid of pidtarget-static: $(cat "$tmp/pid.err")"
fi
echo quit >&"$fd"
exec {fd}>&-

# --- a real kernel's memory ---
if [[ ! -r $ram ]]; then
	skip "no guest dump $ram (ctest -R vm-formats leaves it): kernel formats not checked"
	finish
fi
binds+=(--bind "$(dirname "$ram")")
ln -s "$(realpath "$ram")" "$tmp/guest.elf"
rel=$(cat "$(dirname "$ram")/uname-r" 2> /dev/null) ||
	rel=$("$kcoredump" info --json --no-holes --no-modules "$ram" | jq -r .source.kernel_release)
k() { "$kcoredump" "$@"; }
k convert -q -T 2 --format elf "$ram" -o "$tmp/ram.elf" &&
	k convert -q -T 2 --format kdump "$ram" -o "$tmp/ram.kdump" &&
	k convert -q -T 2 --format kdump "$ram" -o - > "$tmp/ram.flat" &&
	k convert -q -T 2 --format kdump --exclude 31 "$ram" -o "$tmp/x31.kdump" &&
	k convert -q -T 2 --format elf "$ram" -o "$tmp/ram.elf.zst" &&
	k convert -q -T 2 --format lime "$ram" -o "$tmp/ram.lime" &&
	k convert -q -T 2 --format avml "$ram" -o "$tmp/ram.avml" ||
	not_ok "our dumps of $ram"
formats=(ram.elf ram.kdump ram.flat x31.kdump)
if [[ -e /dev/fuse ]] && mkdir "$tmp/m" && k mount "$tmp/ram.elf.zst" "$tmp/m"; then
	mounts+=("$tmp/m")
	formats+=(m/vmcore)
	for f in lime avml; do
		mkdir "$tmp/m-$f" && k mount "$tmp/ram.$f" "$tmp/m-$f" &&
			mounts+=("$tmp/m-$f") && formats+=("m-$f/vmcore") ||
			not_ok "mount ram.$f"
	done
else
	skip "no FUSE: the mounted .zst, LiME and AVML are not checked"
fi
for f in "${formats[@]}"; do
	got=$(in_sid crash --osrelease "$tmp/$f" 2>&1 | tail -n 1)
	[[ $got == "$rel" ]] && ok "$f: crash 9 --osrelease says $got" ||
		not_ok "$f: crash 9 --osrelease says '$got', not $rel"
done
# drgn 0.3.0 through libkdumpfile 0.5.5 (kdump, flattened) or its own ELF
# reader, against the plain ELF; x31 leaves pages out: not compared.
for f in ram.elf ram.kdump ram.flat m/vmcore; do
	[[ -e $tmp/$f ]] || continue
	args=(--pages 500)
	[[ -z $vmlinux ]] || args+=(--vmlinux "$vmlinux" --deep)
	if out=$(in_sid python3 "$here/mount-readers.py" "$tmp/$f" "$tmp/ram.elf" "${args[@]}" 2>&1); then
		while read -r line; do
			[[ $line == ok* ]] && ok "$f: drgn 0.3: ${line#ok * - }"
		done <<< "$out"
	else
		not_ok "$f: drgn 0.3"
		grep -v '^time' <<< "$out" | tail -n 6 | sed 's/^/#   /'
	fi
done
# makedumpfile 1.7.8: the log, and -d 31, from our ELF and our kdump.
for f in ram.elf ram.kdump; do
	in_sid makedumpfile --dump-dmesg "$tmp/$f" "$tmp/$f.dmesg" > "$tmp/$f.mlog" 2>&1
	grep -q "Linux version $rel" "$tmp/$f.dmesg" 2> /dev/null &&
		ok "$f: makedumpfile 1.7.8 --dump-dmesg prints the guest's log ($(wc -l < "$tmp/$f.dmesg") lines)" ||
		not_ok "$f: makedumpfile 1.7.8 --dump-dmesg: $(grep -v '^$' "$tmp/$f.mlog" | tail -n 3 | tr '\n' ' ')"
	in_sid makedumpfile -c -d 1 "$tmp/$f" "$tmp/$f.d1" > "$tmp/$f.m1" 2>&1 ||
		not_ok "$f: makedumpfile 1.7.8 -d 1: $(grep -v '^$' "$tmp/$f.m1" | tail -n 3 | tr '\n' ' ')"
	in_sid makedumpfile -c -d 31 "$tmp/$f" "$tmp/$f.d31" > "$tmp/$f.m31" 2>&1
	got=$(in_sid crash --osrelease "$tmp/$f.d31" 2>&1 | tail -n 1)
	[[ $got == "$rel" ]] &&
		ok "$f: makedumpfile 1.7.8 -d 31 writes a dump crash 9 opens ($(stat -c %s "$tmp/$f.d31") bytes)" ||
		not_ok "$f: makedumpfile 1.7.8 -d 31: $(grep -v '^$' "$tmp/$f.m31" | tail -n 3 | tr '\n' ' ') crash: $got"
done
# makedumpfile's own -d 1 output of the same memory reads as our ELF and
# our kdump do (drgn 0.3 through libkdumpfile, the same 500 pages).
if [[ -e $tmp/ram.elf.d1 ]]; then
	if out=$(in_sid python3 "$here/mount-readers.py" "$tmp/ram.elf.d1" "$tmp/ram.elf" --pages 500 2>&1); then
		ok "makedumpfile 1.7.8 -d 1 of our ELF: drgn 0.3 reads the pages our ELF and kdump hold"
	else
		not_ok "makedumpfile 1.7.8 -d 1 of our ELF: drgn 0.3: $(grep -v '^time' <<< "$out" | tail -n 3 | tr '\n' ' ')"
	fi
fi
cmp -s "$tmp/ram.elf.dmesg" "$tmp/ram.kdump.dmesg" &&
	ok "makedumpfile 1.7.8: the same log from our ELF and our kdump" ||
	not_ok "makedumpfile 1.7.8: the logs of our ELF and our kdump differ"

# --- crash 9 with the debug vmlinux ---
if [[ -z $vmlinux ]]; then
	skip "no VMLINUX: crash's sys/ps/log/kmem/mod/bt not run (oracle-newest-dbg)"
	finish
fi
# crash_session FILE OUT [OPTIONS...]: crash's full session on FILE.
crash_session() {
	local f=$1 c=$2 mod=$'!echo @@mod\nmod'
	shift 2
	[[ " $* " == *" --no_modules "* ]] && mod=
	in_sid crash -s --no_scroll "$@" "$vmlinux" "$tmp/$f" > "$c" 2>&1 <<- EOF
		sys
		!echo @@ps
		ps
		!echo @@log
		log
		!echo @@kmem
		kmem -i
		$mod
		!echo @@bt
		bt -a
		!echo @@vm
		vm 1
		!echo @@files
		files 1
		!echo @@jiffies
		p/x jiffies
		quit
	EOF
}
# crash 9.0.2 cannot read Linux 7.x's struct module ("invalid structure
# member offset: module_num_gpl_syms", on the kernel's own dump of its
# /proc/kcore as on ours): where the guest's own dump shows that, every
# file is read with --no_modules and mod is not run -- said in each line.
crash_opts=() what="sys, ps, log, kmem -i, mod, bt -a"
if [[ -e $tmp/guest.elf ]]; then
	crash_session guest.elf "$tmp/guest.elf.crash-probe"
	if grep -q 'invalid structure member offset: module_' "$tmp/guest.elf.crash-probe"; then
		crash_opts=(--no_modules) what="sys, ps, log, kmem -i, bt -a (--no_modules: crash cannot read this kernel's modules, not even from its own dump)"
		ok "guest.elf: crash 9 fails on this kernel's modules on the kernel's own dump too ($(grep -o 'invalid structure member offset: [a-z_]*' "$tmp/guest.elf.crash-probe" | head -n 1)): --no_modules from here on"
	fi
fi
# guest.elf: the dump the guest made of its own /proc/kcore.
# The one documented 7.x finding (docs/reference.md): crash 9.0.2 does not
# open makedumpfile 1.7.8's own -d 31 output of a 7.x kernel's memory.
known_d31=
[[ $rel != 7.* ]] || known_d31=" ram.elf.d31 ram.kdump.d31 "
for f in guest.elf "${formats[@]}" ram.elf.d1 ram.elf.d31 ram.kdump.d1 ram.kdump.d31; do
	[[ -e $tmp/$f ]] || continue
	# Results beside the files, never in the read-only mount (m/).
	c=$tmp/${f//\//_}.crash
	crash_session "$f" "$c" "${crash_opts[@]}"
	sed -n '/@@ps/,/@@log/p' "$c" | grep -E '^[ >]+[0-9]+ ' | sed 's/^>/ /' |
		awk '{ print $1, $2, $NF }' | sort > "$c.ps"
	errs=$(grep -E '^crash: |^(ps|log|kmem|mod|bt|vm|files): ' "$c" | grep -v 'cannot find' | head -n 3 | tr '\n' ' ')
	tasks=$(wc -l < "$c.ps")
	vm=$(sed -n '/@@vm/,/@@files/p' "$c" | grep -c -E '^ *[0-9a-f]{16} +[0-9a-f]+ +[0-9a-f]+ +[0-9a-f]+ ') || true
	files=$(sed -n '/@@files/,/@@jiffies/p' "$c" | grep -c -E '^ *[0-9]+ +[0-9a-f]{16} ') || true
	if grep -q "RELEASE: $rel" "$c" && ((tasks > 10)) &&
		grep -q 'Linux version' "$c" && grep -q 'TOTAL MEM' "$c" &&
		grep -q 'PID:' "$c" && ((vm > 0 && files > 0)) && [[ -z $errs ]]; then
		if [[ $known_d31 == *" $f "* ]]; then
			not_ok "$f: crash 9 opens makedumpfile 1.7.8's -d 31 output of $rel now: the documented finding is gone (update docs/reference.md)"
		else
			ok "$f: crash 9 $what, vm 1, files 1: $tasks tasks, $vm VMAs, $files open files of pid 1"
		fi
	elif [[ $known_d31 == *" $f "* ]]; then
		ok "$f: known finding: crash 9.0.2 does not read makedumpfile 1.7.8's -d 31 output of $rel ($tasks tasks; $(grep -v '^ *$' "$c" | tail -n 1))"
	else
		not_ok "$f: crash 9: release $(grep -o 'RELEASE: .*' "$c"), $tasks tasks, $vm VMAs, $files files, errors: $errs"
		tail -n 5 "$c" | sed 's/^/#   /'
	fi
done
# Our kdump files against makedumpfile 1.7.8's own output of the same
# memory: the same ps in crash 9 (-d 1: ram.kdump and ram.elf.d1; -d 31:
# x31.kdump and ram.elf.d31, unless that is the known finding).
for pair in "ram.kdump ram.elf.d1" "x31.kdump ram.elf.d31"; do
	read -r ours theirs <<< "$pair"
	[[ $known_d31 == *" $theirs "* ]] && continue
	if [[ -s $tmp/$ours.crash.ps && -s $tmp/$theirs.crash.ps ]] && cmp -s "$tmp/$ours.crash.ps" "$tmp/$theirs.crash.ps"; then
		ok "$ours: crash 9's ps is that of makedumpfile 1.7.8's $theirs ($(wc -l < "$tmp/$ours.crash.ps") tasks)"
	else
		not_ok "$ours: crash 9's ps differs from makedumpfile 1.7.8's $theirs: $(diff "$tmp/$ours.crash.ps" "$tmp/$theirs.crash.ps" 2>&1 | head -n 4 | tr '\n' ' ')"
	fi
done
# One moment, one copy: drgn reads jiffies through the kernel image's
# PT_LOAD (by virtual address), crash through RAM (by physical address).
cat > "$tmp/jiffies.py" <<- 'EOF'
	import sys
	import drgn
	prog = drgn.Program()
	prog.set_core_dump(sys.argv[1])
	prog.load_debug_info([sys.argv[2]], default=False, main=True)
	print(hex(prog["jiffies"].value_()))
EOF
for f in guest.elf ram.elf m/vmcore; do
	[[ -e $tmp/${f//\//_}.crash ]] || continue
	c=$(sed -n '/@@jiffies/,$p' "$tmp/${f//\//_}.crash" | grep -o '= 0x[0-9a-f]*' | head -n 1)
	d=$(in_sid python3 "$tmp/jiffies.py" "$tmp/$f" "$vmlinux" 2>&1 | tail -n 1)
	[[ -n $c && "= $d" == "$c" ]] &&
		ok "$f: drgn 0.3 and crash 9 read the same jiffies ($d)" ||
		not_ok "$f: jiffies: crash 9 '$c', drgn 0.3 '$d'"
done
for f in "${formats[@]}"; do
	[[ $f == ram.elf || ! -e $tmp/${f//\//_}.crash.ps ]] && continue
	cmp -s "$tmp/ram.elf.crash.ps" "$tmp/${f//\//_}.crash.ps" &&
		ok "$f: crash 9's ps is ram.elf's" ||
		not_ok "$f: crash 9's ps differs from ram.elf's: $(diff "$tmp/ram.elf.crash.ps" "$tmp/${f//\//_}.crash.ps" | head -n 4 | tr '\n' ' ')"
done
finish
