# Helpers shared by the integration tests (sourced, not run).
# shellcheck source=../lib/tap.sh
. "${BASH_SOURCE[0]%/*}/../lib/tap.sh"

# Did a run crash or trip a sanitizer?  $1 exit status, $2 stderr file.
crashed()
{
	[ "$1" -ge 124 ] ||
		grep -qE 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:' "$2"
}

# The fixtures a reader must parse (tests/fixtures/README.md).
VALID_FIXTURES="vmcore-x86_64 kcore-x86_64 process-x86_64 process-aarch64 sparse-1t pn-xnum"

# make_real_core DIR: let a child die of SIGABRT in DIR and print the path
# of its core.  Returns 1 (and prints nothing) when this machine does not
# write cores there (core_pattern a pipe or elsewhere, RLIMIT_CORE hard 0).
make_real_core()
{
	local dir=$1 pattern core
	pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null) || return 1
	case $pattern in
	'|'* | /*) return 1 ;;
	esac
	(
		cd "$dir" || exit 1
		ulimit -c unlimited 2>/dev/null || exit 1
		sleep 100 &
		pid=$!
		sleep 0.3
		kill -ABRT "$pid"
		wait "$pid" 2>/dev/null
		exit 0
	) >/dev/null 2>&1 || return 1
	for core in "$dir"/core*; do
		if [ -f "$core" ] && [ -s "$core" ]; then
			echo "$core"
			return 0
		fi
	done
	return 1
}

# first_frame FILE: "COMPRESSED DECOMPRESSED" bytes of the first frame of
# a .zst (from its seek table) or the first block of an .xz (xz -lvv):
# where our dumps keep the ELF header, program headers and notes.
first_frame()
{
	case $1 in
	*.xz)
		xz --robot -lvv "$1" 2>/dev/null |
			awk -F'\t' '$1 == "block" { print $7, $8; exit }'
		;;
	*)
		python3 - "$1" <<'PY'
import struct, sys
with open(sys.argv[1], "rb") as f:
    f.seek(-9, 2)
    n, desc, magic = struct.unpack("<IBI", f.read(9))
    if magic != 0x8F92EAB1 or n == 0:
        sys.exit("no seek table")
    esize = 12 if desc & 0x80 else 8
    f.seek(-(9 + n * esize), 2)
    print(*struct.unpack("<II", f.read(8)))
PY
		;;
	esac
}

# compressed_headers FILE: the first frame (headers, notes) is at most
# half its size compressed (a frame of raw blocks is larger than its data).
compressed_headers()
{
	local c d
	read -r c d < <(first_frame "$1") || return 1
	[ -n "$c" ] && [ -n "$d" ] && [ "$c" -gt 0 ] && [ $((2 * c)) -le "$d" ]
}

# The machine-wide settings a crash test may change, saved and put back
# together.
KCD_SYSCTLS="kernel/core_pattern kernel/core_pipe_limit fs/suid_dumpable"

# core_pattern_setup NAME TOOL...: for a test that sets this machine's
# core_pattern (or core_pipe_limit, suid_dumpable): root and TOOLs there
# (else a skip, exit 77), $tmp made (/tmp/kc.*, short: the kernel keeps
# 127 bytes of a pattern that names it twice; NAME in $tmp/.test), the
# lock every such test shares held, the old settings put back and $tmp
# removed on exit, cores unlimited.
#
# An EXIT trap does not run when the test is killed (ctest's timeout sends
# SIGKILL), and a pattern naming a deleted handler or store would send
# every later crash on this machine to nowhere.  So a guardian in its own
# session, out of reach of the kill, waits for the test to end, puts the
# saved settings back and removes $tmp; it inherits the lock and holds it
# until then, so no other crash test starts before the machine is whole.
# kernel.core_pipe_limit is set to 0, as Debian ships it without
# systemd-coredump (the kernel then keeps the crashing process only while
# it writes the core).
core_pattern_setup()
{
	local name=$1 tool s
	shift
	if [ "$(id -u)" != 0 ]; then
		echo "1..0 # SKIP needs root to set core_pattern"
		exit 77
	fi
	for tool in "$@" setsid; do
		command -v "$tool" >/dev/null || {
			echo "1..0 # SKIP $tool not installed"
			exit 77
		}
	done
	tmp=$(mktemp -d /tmp/kc.XXXXXX)
	chmod 711 "$tmp"
	echo "$name" > "$tmp/.test"
	exec 9>/tmp/kcd-core-pattern.lock
	flock 9
	saved=$tmp.saved
	mkdir -m 700 "$saved"
	for s in $KCD_SYSCTLS; do
		[ -r "/proc/sys/$s" ] && cp "/proc/sys/$s" "$saved/${s//\//.}"
	done
	old_pattern=$(cat /proc/sys/kernel/core_pattern)
	setsid bash -c "$(declare -f sysctls_restore)"'
		while kill -0 "$1" 2>/dev/null; do sleep 0.5; done
		sysctls_restore "$2" "$3"' guardian "$$" "$saved" "$tmp" \
		</dev/null >/dev/null 2>&1 &
	trap core_pattern_restore EXIT
	# A signal ends the test through the EXIT trap, which restores.
	trap 'exit 143' TERM INT HUP
	if ! printf '%s\n' "$old_pattern" > /proc/sys/kernel/core_pattern; then
		echo "1..0 # SKIP core_pattern is not writable here"
		exit 77
	fi
	if ! echo 0 > /proc/sys/kernel/core_pipe_limit; then
		echo "1..0 # SKIP core_pipe_limit is not writable here"
		exit 77
	fi
	ulimit -c unlimited
}

# sysctls_restore SAVED TMP: put back the settings SAVED holds, then
# remove TMP and SAVED (the guardian's work, and the EXIT trap's).
sysctls_restore()
{
	local f s
	for f in "$1"/*; do
		[ -f "$f" ] || continue
		s=${f##*/}
		s=${s//.//}
		[ "$(cat "/proc/sys/$s")" = "$(cat "$f")" ] || cat "$f" > "/proc/sys/$s"
	done
	rm -rf "$2" "$1"
}

# The EXIT trap of core_pattern_setup.
core_pattern_restore()
{
	sysctls_restore "$saved" "$tmp"
}

# handler_pattern DIR ARGS...: the core_pattern line that stores crashes
# into DIR with ARGS, as `core-handler --print-pattern` prints it (the
# form --install writes), with --no-journal: no test logs to this
# machine's journal (lint-no-journal).  The kernel keeps 127 bytes of a
# pattern and drops the rest without a word, which would cut the handler's
# arguments; for a longer line (a deep build directory) it says so and
# runs a copy of $kcoredump from $tmp instead, and when even that is too
# long, a script $tmp/h that runs the copy with DIR and ARGS (the pattern
# passes it only the kernel's specifiers).
handler_pattern()
{
	local dir=$1 line a
	shift
	if line=$("$kcoredump" core-handler --print-pattern --dir "$dir" --no-sync --no-journal "$@" 2>/dev/null) &&
		[ ${#line} -le 127 ]; then
		printf '%s\n' "$line"
		return 0
	fi
	echo "# the pattern for $kcoredump is longer than the kernel's 127 bytes: running a copy, $tmp/k" >&2
	[ -x "$tmp/k" ] || cp "$kcoredump" "$tmp/k" || return 1
	# --print-pattern itself refuses a line the kernel would cut.
	if line=$("$tmp/k" core-handler --print-pattern --dir "$dir" --no-sync --no-journal "$@" 2>/dev/null); then
		printf '%s\n' "$line"
		return 0
	fi
	# The arguments checked with a short store name, then the script.
	"$tmp/k" core-handler --print-pattern --dir /s --no-sync --no-journal "$@" >/dev/null || return 1
	echo "# still longer: core_pattern runs $tmp/h, which runs $tmp/k with the arguments" >&2
	{
		echo '#!/bin/bash'
		printf 'exec %q core-handler --dir %q --no-sync --no-journal' "$tmp/k" "$dir"
		for a in "$@"; do printf ' %q' "$a"; done
		echo ' "$@"'
	} >"$tmp/h" && chmod 755 "$tmp/h" || return 1
	printf '|%s --dump-mode=%%d %%P %%u %%g %%s %%t %%e\n' "$tmp/h"
}

# install_handler DIR ARGS...: make DIR (0700) and the handler storing into
# it this machine's core_pattern; fails (saying why) if the kernel did not
# take the whole line.
install_handler()
{
	local dir=$1 line
	mkdir -p -m 700 "$dir"
	line=$(handler_pattern "$@") || return 1
	printf '%s\n' "$line" > /proc/sys/kernel/core_pattern
	if [ "$(cat /proc/sys/kernel/core_pattern)" != "$line" ]; then
		echo "# core_pattern did not take: $line" >&2
		return 1
	fi
}

# wait_meta DIR PID: the metadata file of pid's core stored in DIR, once
# the handler has published it (at most 120 s); fails if none came.
wait_meta()
{
	local i m
	for ((i = 0; i < 1200; i++)); do
		for m in "$1"/core.*."$2".*.json; do
			[ -f "$m" ] && { echo "$m"; return 0; }
		done
		sleep 0.1
	done
	return 1
}

# has WHAT FILE FIXED-STRING: ok if FILE holds the string, else not_ok
# with FILE shown.
has()
{
	if grep -qF -- "$3" "$2"; then
		ok "$1"
	else
		not_ok "$1: no '$3' in"
		diag <"$2"
	fi
}

# sparsecmp A|- B: cmp -s that knows a file's holes are zeros instead of
# reading them (tests/lib/sparsecmp.py): a 4 GiB dump of a fixture with a
# few MiB of data compares in seconds, not minutes.
sparsecmp()
{
	/usr/bin/python3 "${BASH_SOURCE[0]%/*}/../lib/sparsecmp.py" "$@" 2>/dev/null
}

# trailer_len FILE: the bytes of kcoredump's trailer at the end of an ELF
# dump (its text, le64 length, "KCDTRL01"), or 0 when it has none.
trailer_len()
{
	python3 - "$1" <<'PY'
import os, struct, sys
with open(sys.argv[1], "rb") as f:
    size = os.fstat(f.fileno()).st_size
    if size < 16:
        print(0)
        sys.exit()
    f.seek(size - 16)
    t = f.read(16)
print(struct.unpack("<Q", t[:8])[0] + 16 if t[8:] == b"KCDTRL01" else 0)
PY
}

# wait_socket SOCK: wait (at most 10 s) for a core-handler --socket
# listener started in the background to make its socket.
wait_socket()
{
	local i
	for ((i = 0; i < 100; i++)); do
		[ -S "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# stop_listener: core_pattern back to $old_pattern first (no crash reaches
# a listener going away), then the background listener $listener stopped.
stop_listener()
{
	printf '%s\n' "$old_pattern" >/proc/sys/kernel/core_pattern
	kill "$listener" 2>/dev/null
	wait "$listener" 2>/dev/null
	listener=
}

# build_bt_program DIR PROG: compile PROG, a program that crashes two known
# functions deep (kcd_bt_outer -> kcd_bt_inner, a NULL write) with a
# second thread waiting, not stripped (.symtab), no debuginfo; bails out
# of the test if it cannot be built.
build_bt_program()
{
	cat >"$1/bt.c" <<'C'
#include <pthread.h>
#include <unistd.h>
static void *waiter(void *arg) { for (;;) pause(); return arg; }
__attribute__((noinline)) void kcd_bt_inner(volatile int *p) { *p = 1; }
__attribute__((noinline)) void kcd_bt_outer(volatile int *p)
{
	kcd_bt_inner(p);
	__asm__ volatile("" ::: "memory");
}
int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, waiter, NULL);
	usleep(200000);
	kcd_bt_outer((volatile int *)0);
	return 0;
}
C
	cc -O1 -pthread -o "$2" "$1/bt.c" 2>"$1/cc.err" ||
		bail_out "cannot build the crashing program: $(head -c 300 "$1/cc.err")"
}
