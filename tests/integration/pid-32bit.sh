#!/bin/bash
# kcoredump pid of a 32-bit (ia32) process on x86_64 (issue 25 defect 4):
# the core compat binfmt_elf writes (ELFCLASS32, EM_386, 32-bit notes),
# read by gdb (threads, backtrace of main, memory) and eu-stack, and set
# beside the kernel's own core of the same process: the same notes
# (names, types, sizes, order), the same AUXV, FILE and PRPSINFO ids, the
# same segments and bytes.
#   pid-32bit.sh KCOREDUMP CC
set -uo pipefail
kcoredump=$1 cc=$2
here=$(cd "$(dirname "$0")" && pwd)
tools=$here/../tools
# shellcheck source=lib.sh
. "$here/lib.sh"
tmp=$(mktemp -d)
pids=()
# shellcheck disable=SC2317 # called through the trap
cleanup()
{
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

if [ "$(uname -m)" != x86_64 ]; then
	echo "1..0 # SKIP ia32 processes run on x86_64 only (this is $(uname -m))"
	exit 77
fi
for tool in gdb eu-stack eu-readelf python3; do
	if ! command -v $tool >/dev/null; then
		not_ok "$tool is installed (scripts/install-deps.sh installs it)"
		finish
	fi
done
# The target: cc -m32 needs Debian's libc6-dev-i386 and lib32gcc-12-dev
# (scripts/install-deps.sh installs them; gcc-multilib is not needed).
if ! "$cc" -m32 -g -O1 -pthread "$tools/target32.c" -o "$tmp/target32" \
	2>"$tmp/cc.err"; then
	not_ok "building the 32-bit target with $cc -m32: needs the packages" \
		"libc6-dev-i386 and lib32gcc-12-dev (scripts/install-deps.sh)"
	diag "$tmp/cc.err"
	finish
fi
target=$tmp/target32
if ! "$target" </dev/null >"$tmp/probe" 2>&1; then
	if grep -qi 'exec format error' "$tmp/probe"; then
		echo "1..0 # SKIP this kernel runs no 32-bit programs (no CONFIG_IA32_EMULATION)"
		exit 77
	fi
	not_ok "the 32-bit target runs: $(head -1 "$tmp/probe")"
	finish
fi

# start NAME [DIR]: run the target in DIR (default $tmp) with a FIFO on
# stdin, with RLIMIT_CORE unlimited and no rseq (the kernel rewrites a
# thread's rseq area when it resumes on another CPU, as after our stop);
# sets $pid and fills $tmp/NAME.out.
start()
{
	local name=$1 dir=${2:-$tmp}
	mkfifo "$tmp/$name.in"
	(
		cd "$dir" && ulimit -c unlimited &&
			GLIBC_TUNABLES=glibc.pthread.rseq=0 \
				exec "$target" <"$tmp/$name.in" >"$tmp/$name.out"
	) &
	pid=$!
	pids+=("$pid")
	exec {fd}>"$tmp/$name.in"
	eval "fd_$name=$fd"
	for _ in $(seq 100); do
		grep -q '^ready' "$tmp/$name.out" 2>/dev/null && break
		sleep 0.1
	done
	# "ready" comes just before the main thread blocks in fgets().
	sleep 0.5
}

# --- the core and its readers ---
mkdir "$tmp/kc"
start k "$tmp/kc"
if ! grep -q '^ready' "$tmp/k.out"; then
	not_ok "the 32-bit target started"
	finish
fi
stack=$(sed -n 's/.* stack=\([^ ]*\).*/\1/p' "$tmp/k.out")
core=$tmp/ours.core
"$kcoredump" pid "$pid" -o "$core" -q 2>"$tmp/err"
rc=$?
if [ $rc -eq 5 ]; then
	echo "1..0 # SKIP ptrace is not allowed here: $(head -1 "$tmp/err")"
	exit 77
fi
check "kcoredump pid of a 32-bit process exits 0 (got $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || diag "$tmp/err"
if [ ! -s "$core" ]; then
	not_ok "a core was written"
	finish
fi
check "the core is mode 0600" [ "$(stat -c %a "$core")" = 600 ]
eu-readelf -h "$core" >"$tmp/h" 2>&1
check "ELF32, Intel 80386, a core" \
	bash -c "grep -q 'Class: *ELF32' '$tmp/h' && grep -q 'Machine: *Intel 80386' '$tmp/h' && grep -q 'Type: *CORE' '$tmp/h'"

gdb -batch -ex 'info threads' -ex 'thread apply all bt' \
	-ex 'p/x pattern32[5]' -ex "p/x *(unsigned *)($stack + 4)" \
	"$target" "$core" >"$tmp/gdb" 2>&1
check "gdb: 3 threads" [ "$(grep -cE '^[* ] +[0-9]+ +(Thread|LWP)' "$tmp/gdb")" = 3 ]
check "gdb: the main thread's backtrace reaches main through fgets" \
	bash -c "grep -q 'in fgets' '$tmp/gdb' && grep -qE 'in main \\(\\)' '$tmp/gdb'"
check "gdb: both workers in park()" [ "$(grep -c 'in park ' "$tmp/gdb")" = 2 ]
check "gdb reads the global pattern (0x32320005)" grep -q '= 0x32320005' "$tmp/gdb"
check "gdb reads the stack pattern (0x5ca1ab1f)" grep -q '= 0x5ca1ab1f' "$tmp/gdb"
grep -qE 'in main|0x32320005' "$tmp/gdb" || diag "$tmp/gdb"
eu-stack --core "$core" -e "$target" >"$tmp/stack" 2>&1
check "eu-stack: 3 threads" [ "$(grep -c '^TID ' "$tmp/stack")" = 3 ]
check "eu-stack unwinds to main" grep -qE '^#[0-9]+ +0x[0-9a-f]+ main$' "$tmp/stack"
"$kcoredump" info "$core" >"$tmp/info" 2>&1
check "info: i386, ELF32; the process and its 3 threads" \
	bash -c "grep -q 'i386, ELF32' '$tmp/info' && grep -qE 'Process: +target32, pid $pid, 3 threads' '$tmp/info'"

# .zst too: the same writer with a stream.
"$kcoredump" pid "$pid" -o "$tmp/ours.core.zst" -q
check "pid -o x.zst of a 32-bit process exits 0" [ $? -eq 0 ]
"$kcoredump" info "$tmp/ours.core.zst" >"$tmp/zinfo" 2>&1
check "info of the .zst: i386, ELF32, 3 threads" \
	bash -c "grep -q 'i386, ELF32' '$tmp/zinfo' && grep -qE 'Process: +target32, pid $pid, 3 threads' '$tmp/zinfo'"

# --- against the kernel's core of the same process ---
pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null)
if [ -z "$pattern" ] || [ "${pattern#|}" != "$pattern" ] ||
	[ "${pattern#/}" != "$pattern" ]; then
	skip "kernel core comparison: core_pattern is '$pattern' (not a file in the cwd)"
	finish
fi
kill -SEGV "$pid"
wait "$pid" 2>/dev/null
kcore=$(find "$tmp/kc" -maxdepth 1 -name 'core*' -type f | head -1)
if [ -z "$kcore" ]; then
	skip "kernel core comparison: the kernel wrote no core ($pattern)"
	finish
fi
notes()
{
	eu-readelf -n "$1" | grep -E '^  (CORE|LINUX) ' | grep -v SIGINFO
}
notes "$kcore" >"$tmp/kn"
notes "$core" >"$tmp/on"
if cmp -s "$tmp/kn" "$tmp/on"; then
	ok "notes as the kernel's (names, types, sizes, order; no SIGINFO)"
else
	not_ok "notes as the kernel's"
	diff "$tmp/kn" "$tmp/on" | diag
fi
# note NAME FILE: the decoded lines of note NAME
note()
{
	eu-readelf -n "$2" | awk -v n="$1" '
		/^  (CORE|LINUX) / { on = ($3 == n); next }
		on { print }'
}
for n in AUXV FILE; do
	note $n "$kcore" >"$tmp/k.$n"
	note $n "$core" >"$tmp/o.$n"
	if [ -s "$tmp/k.$n" ] && cmp -s "$tmp/k.$n" "$tmp/o.$n"; then
		ok "$n as the kernel's"
	else
		not_ok "$n as the kernel's"
		diff "$tmp/k.$n" "$tmp/o.$n" | diag
	fi
done
# PRPSINFO: the ids, name and arguments (not the state at the moment).
note PRPSINFO "$kcore" | sed 1d >"$tmp/k.ps"
note PRPSINFO "$core" | sed 1d >"$tmp/o.ps"
if [ -s "$tmp/k.ps" ] && cmp -s "$tmp/k.ps" "$tmp/o.ps"; then
	ok "PRPSINFO ids, name and arguments as the kernel's"
else
	not_ok "PRPSINFO as the kernel's"
	diff "$tmp/k.ps" "$tmp/o.ps" | diag
fi
python3 "$tools/core-compare.py" "$kcore" "$core" >"$tmp/cmp" 2>&1
check "same segments and byte-identical content as the kernel's core" \
	[ $? -eq 0 ]
diag "$tmp/cmp"
finish
