#!/bin/bash
# SPDX-License-Identifier: MIT
# kcoredump core-handler unwinds the crashing threads at crash time, in
# the sandboxed build-ID helper (libdwfl, symbols from the mapped files'
# .symtab/.dynsym): a program with known functions crashes through
# core_pattern (a sparse ELF and a .zst core), its metadata holds the
# backtrace (the crashing thread first, kcd_bt_inner <- kcd_bt_outer <-
# main), show prints it as systemd-coredump does, show --json has it in
# the record and list --json the crashing frame.  --no-backtrace makes
# none; the backtrace took the time given it at most.  A stripped program
# whose crashing function is static gets its name from the build-ID
# debuginfo file this test puts under /usr/lib/debug/.build-id (a random
# build ID; removed on exit), and none without it.
#
# Changes /proc/sys/kernel/core_pattern: only under the lock
# /tmp/kcd-core-pattern.lock, and puts the old pattern back on every exit.
# Needs root.
#   core-handler-backtrace.sh KCOREDUMP
set -uo pipefail
kcoredump=$(readlink -f "$1")
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

core_pattern_setup chbt jq flock cc objcopy od

install() {
	install_handler "$@" || bail_out "cannot install the handler as core_pattern"
}
jqcheck() { # WHAT FILE [JQ-OPTIONS...] FILTER
	if jq -e "${@:3}" "$2" >/dev/null; then
		ok "$1"
	else
		not_ok "$1"
		jq -c '{backtrace, crash_frame, build_ids_error}' "$2" 2>&1 | diag
	fi
}

# A program whose crash is two known functions deep, with a second
# thread waiting; not stripped (.symtab), no debuginfo.
prog=$tmp/kcd-bt
build_bt_program "$tmp" "$prog"
chmod 755 "$tmp" "$prog"

for fmt in none zstd; do
	d=$tmp/s-$fmt
	install "$d" --compress $fmt
	(exec 9>&- && cd "$tmp" && exec "$prog") >/dev/null 2>&1 &
	pid=$!
	wait "$pid" 2>/dev/null
	if ! m=$(wait_meta "$d" "$pid"); then
		not_ok "$fmt: no metadata for pid $pid in $d"
		continue
	fi
	jqcheck "$fmt: a backtrace of 2 threads, made in the sandbox" "$m" \
		'.backtrace.made and (.backtrace.threads | length) == 2 and
		.build_ids_sandbox.seccomp and .backtrace.error == null'
	jqcheck "$fmt: the crashing thread first: kcd_bt_inner <- kcd_bt_outer <- main" "$m" \
		--arg p "$prog" --argjson pid "$pid" '.backtrace.threads[0] | .tid == $pid and
		[.frames[].function][0:3] == ["kcd_bt_inner", "kcd_bt_outer", "main"] and
		.frames[0].module == $p and (.frames[0].pc | test("^0x[0-9a-f]+$"))'
	jqcheck "$fmt: the other thread waits in libc" "$m" \
		'.backtrace.threads[1].frames | length > 1 and
		(map(.module // "") | any(test("libc")))'
	jqcheck "$fmt: crash_frame names kcd_bt_inner in kcd-bt" "$m" \
		'.crash_frame | test("^0x[0-9a-f]{16} kcd_bt_inner \\(kcd-bt \\+ 0x[0-9a-f]+\\)$")'
	"$kcoredump" show --dir "$d" "$pid" >"$tmp/show-$fmt" 2>&1
	has "$fmt: show prints the stack trace of the crashing thread" "$tmp/show-$fmt" \
		"Stack trace of thread $pid:"
	if grep -qE '^ *#0  0x[0-9a-f]{16} kcd_bt_inner \(kcd-bt \+ 0x[0-9a-f]+\)$' "$tmp/show-$fmt" &&
		grep -qE '^ *#1  0x[0-9a-f]{16} kcd_bt_outer \(kcd-bt \+ 0x' "$tmp/show-$fmt"; then
		ok "$fmt: show prints frames #0 kcd_bt_inner and #1 kcd_bt_outer"
	else
		not_ok "$fmt: show prints no frame #0 kcd_bt_inner, #1 kcd_bt_outer"
		diag <"$tmp/show-$fmt"
	fi
	"$kcoredump" show --json --dir "$d" "$pid" >"$tmp/show-$fmt.json" 2>&1
	jqcheck "$fmt: show --json: the record's backtrace" "$tmp/show-$fmt.json" \
		'.cores[0].record.backtrace.threads[0].frames[0].function == "kcd_bt_inner"'
	"$kcoredump" list --json --dir "$d" >"$tmp/list-$fmt.json" 2>&1
	jqcheck "$fmt: list --json: crash_frame" "$tmp/list-$fmt.json" \
		'.cores[0].crash_frame | test("kcd_bt_inner")'
done

# --- --no-backtrace, and a short time -------------------------------------
d=$tmp/s-nobt
install "$d" --no-backtrace
(exec 9>&- && exec "$prog") >/dev/null 2>&1 &
pid=$!
wait "$pid" 2>/dev/null
if m=$(wait_meta "$d" "$pid"); then
	jqcheck "--no-backtrace: no backtrace, the build IDs still" "$m" \
		'has("backtrace") == false and has("crash_frame") == false and (.build_ids | length) > 0'
	"$kcoredump" show --dir "$d" "$pid" >"$tmp/show-nobt" 2>&1
	if grep -qF "Stack trace" "$tmp/show-nobt"; then
		not_ok "--no-backtrace: show prints a stack trace"
	else
		ok "--no-backtrace: show prints no stack trace"
	fi
else
	not_ok "--no-backtrace: no metadata for pid $pid in $d"
fi
d=$tmp/s-short
install "$d" --backtrace-timeout 0.5
(exec 9>&- && exec "$prog") >/dev/null 2>&1 &
pid=$!
wait "$pid" 2>/dev/null
if m=$(wait_meta "$d" "$pid"); then
	jqcheck "--backtrace-timeout 0.5: the unwinding took at most 0.5 s" "$m" \
		'.backtrace.made and .backtrace.seconds <= 0.5 and
		(.backtrace.timed_out or .backtrace.threads[0].frames[0].function == "kcd_bt_inner")'
else
	not_ok "--backtrace-timeout 0.5: no metadata for pid $pid in $d"
fi
# --- build-ID debuginfo under /usr/lib/debug ---------------------------------
# A stripped program whose crashing function is static: only its
# debuginfo file, installed for this test under its (random) build ID,
# names it.  The file is removed on exit.
sprog=$tmp/kcd-bt-stripped
bid=$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')
dbg=/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug
cat >"$tmp/bt2.c" <<'C'
static __attribute__((noinline)) void kcd_bt_hidden(volatile int *p) { *p = 1; }
void (*volatile kcd_bt_call)(volatile int *) = kcd_bt_hidden;
int main(void)
{
	kcd_bt_call((volatile int *)0);
	return 0;
}
C
if cc -O1 -g -Wl,--build-id=0x"$bid" -o "$sprog.full" "$tmp/bt2.c" 2>"$tmp/cc.err" &&
	objcopy --only-keep-debug "$sprog.full" "$tmp/bt2.debug" &&
	objcopy --strip-all "$sprog.full" "$sprog" && chmod 755 "$sprog"; then
	mkdir -p "${dbg%/*}"
	cp "$tmp/bt2.debug" "$dbg"
	trap 'rm -f "$dbg"; core_pattern_restore' EXIT
	d=$tmp/s-dbg
	install "$d"
	(exec 9>&- && exec "$sprog") >/dev/null 2>&1 &
	pid=$!
	wait "$pid" 2>/dev/null
	if m=$(wait_meta "$d" "$pid"); then
		jqcheck "a stripped program: its static function named from $dbg" "$m" \
			'.backtrace.debuginfo_files >= 1 and
			.backtrace.threads[0].frames[0].function == "kcd_bt_hidden"'
	else
		not_ok "stripped program: no metadata for pid $pid in $d"
	fi
	rm -f "$dbg"
	# Without it: the function has no name (the symbols are not the
	# handler's guess).
	d=$tmp/s-nodbg
	install "$d"
	(exec 9>&- && exec "$sprog") >/dev/null 2>&1 &
	pid=$!
	wait "$pid" 2>/dev/null
	if m=$(wait_meta "$d" "$pid"); then
		jqcheck "without the debuginfo file: frame #0 is not named kcd_bt_hidden" "$m" \
			'.backtrace.threads[0].frames[0].function != "kcd_bt_hidden"'
	else
		not_ok "stripped program: no metadata for pid $pid in $d"
	fi
else
	not_ok "cannot build a stripped program with its debuginfo: $(head -c 300 "$tmp/cc.err")"
fi
finish
