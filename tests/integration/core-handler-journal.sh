#!/bin/bash
# SPDX-License-Identifier: MIT
# kcoredump core-handler logs one journal entry per stored core with
# systemd-coredump's fields, and coredumpctl (systemd 252) lists, shows,
# dumps and debugs the cores it stored.  A real systemd-journald runs
# without systemd as PID 1, in a private mount namespace (unshare -m:
# tmpfs on /run/systemd, /run/log and /var/log/journal, volatile storage);
# the handler runs there too (core_pattern names a wrapper that enters
# it with nsenter; the socket listener is started in it), and coredumpctl
# is Debian 12's, extracted from systemd-coredump's .deb with dpkg -x
# (never installed: it would take core_pattern) into the cache.  A real
# crash through core_pattern of a program with known functions, stored
# as a sparse ELF, a .zst and a .xz, and through the socket (@@): list
# shows it present, info has the fields and the backtrace in its
# message, dump writes the .zst core's bytes, debug runs gdb on the
# sparse ELF and the .zst core.  (coredumpctl 252 dumps only files it
# can decompress, and decodes the first xz stream only: a sparse ELF is
# not dumped, a .xz only its headers.)  --no-journal logs nothing, and
# without a journal socket nothing is tried.
#
# Changes /proc/sys/kernel/core_pattern: only under the lock
# /tmp/kcd-core-pattern.lock, and puts the old pattern back on every exit.
# Needs root.
#   core-handler-journal.sh KCOREDUMP
set -uo pipefail
kcoredump=$(readlink -f "$1")
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
log() { echo "# $*" >&2; }
# shellcheck source=../lib/apt-download.sh
. "$here/../lib/apt-download.sh"

core_pattern_setup chjournal jq flock cc unshare nsenter setpriv gdb dpkg zstd xz

journald=/lib/systemd/systemd-journald
[ -x "$journald" ] || bail_out "no $journald (Debian's systemd package; scripts/install-deps.sh installs it)"

# --- coredumpctl from systemd-coredump's .deb --------------------------------
cache=${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/systemd-coredump
ctl=$cache/root/usr/bin/coredumpctl
if [ ! -x "$ctl" ]; then
	mkdir -p "$cache/deb"
	rm -f "$cache"/deb/*.deb
	deb=$(apt_download_deb "$cache/deb" systemd-coredump) ||
		bail_out "cannot download systemd-coredump's .deb"
	rm -rf "$cache/root"
	dpkg -x "$deb" "$cache/root" || bail_out "dpkg -x $deb failed"
fi
[ -x "$ctl" ] || bail_out "no coredumpctl in systemd-coredump's .deb"

# --- journald in a private mount namespace -----------------------------------
cat >"$tmp/journald.conf" <<'CONF'
[Journal]
Storage=volatile
ReadKMsg=no
ForwardToSyslog=no
ForwardToKMsg=no
ForwardToConsole=no
ForwardToWall=no
RateLimitBurst=0
CONF
# Dies with this test (pdeathsig survives unshare's and bash's exec).
setpriv --pdeathsig KILL unshare -m --propagation private bash -c '
	for d in /run/systemd /run/log /var/log/journal; do
		mkdir -p "$d" && mount -t tmpfs -o mode=0755 tmpfs "$d" || exit 1
	done
	mount --bind "$1" /etc/systemd/journald.conf || exit 1
	exec "$2"' journald "$tmp/journald.conf" "$journald" >"$tmp/journald.log" 2>&1 &
jpid=$!
trap 'kill "$jpid" 2>/dev/null; core_pattern_restore' EXIT
ns=(nsenter "--mount=/proc/$jpid/ns/mnt")
for ((i = 0; i < 100; i++)); do
	"${ns[@]}" test -S /run/systemd/journal/socket 2>/dev/null && break
	sleep 0.1
done
if ! "${ns[@]}" test -S /run/systemd/journal/socket 2>/dev/null; then
	diag "$tmp/journald.log"
	bail_out "systemd-journald made no /run/systemd/journal/socket"
fi
ok "systemd-journald runs in a private mount namespace (pid $jpid)"
# coredumpctl and gdb in that namespace, as root, no pager.
ctl() { "${ns[@]}" env SYSTEMD_PAGER= SYSTEMD_COLORS=0 "$ctl" --no-pager "$@"; }

# The handler, entering the namespace (the kernel starts it in ours).
cat >"$tmp/h" <<SH
#!/bin/sh
exec /usr/bin/nsenter --mount=/proc/$jpid/ns/mnt $kcoredump core-handler "\$@"
SH
chmod 755 "$tmp/h"
install() { # DIR ARGS...: core_pattern = the wrapper storing into DIR
	local d=$1 line
	shift
	mkdir -p -m 700 "$d"
	line="|$tmp/h --dump-mode=%d --no-sync -D $d $* %P %u %g %s %t %e"
	printf '%s\n' "$line" >/proc/sys/kernel/core_pattern
	[ "$(cat /proc/sys/kernel/core_pattern)" = "$line" ] ||
		bail_out "core_pattern did not take: $line"
}
meta() { # DIR PID: the metadata of pid's core, once the core is there too
	local i m c
	for ((i = 0; i < 1200; i++)); do
		for m in "$1"/core.*."$2".*.json; do
			c=${m%.json}
			if [ -f "$m" ] && compgen -G "$c*" | grep -qvF .json; then
				echo "$m"
				return 0
			fi
		done
		sleep 0.1
	done
	return 1
}
# listed PID: coredumpctl lists pid (the entry comes after the core).
listed() {
	local i
	for ((i = 0; i < 100; i++)); do
		ctl list "$1" >"$tmp/list" 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

# The crashing program: two known functions deep (as in
# core-handler-backtrace), a second thread waiting.
prog=$tmp/kcd-bt
cat >"$tmp/bt.c" <<'C'
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
cc -O1 -pthread -o "$prog" "$tmp/bt.c" 2>"$tmp/cc.err" ||
	bail_out "cannot build the crashing program: $(head -c 300 "$tmp/cc.err")"
chmod 755 "$prog"
crash() { # prints the pid
	(exec 9>&- && cd "$tmp" && exec "$prog") >/dev/null 2>&1 &
	local pid=$!
	wait "$pid" 2>/dev/null
	echo "$pid"
}

for fmt in none zstd xz; do
	d=$tmp/s-$fmt
	install "$d" -c $fmt
	pid=$(crash)
	if ! m=$(meta "$d" "$pid"); then
		not_ok "$fmt: no core for pid $pid in $d"
		continue
	fi
	core=$(jq -r .core "$m")
	"$kcoredump" list --json --dir "$d" >"$tmp/list-$fmt.json" 2>&1
	if jq -e '.cores[0].journal_entry == true' "$tmp/list-$fmt.json" >/dev/null; then
		ok "$fmt: list --json: journal_entry true"
	else
		not_ok "$fmt: list --json: journal_entry is not true"
		diag "$tmp/list-$fmt.json"
	fi
	if ! jq -e '.journal_entry == true and (has("journal_why_not") | not)' "$m" >/dev/null; then
		not_ok "$fmt: the metadata says no journal entry"
		jq -c '{journal_entry, journal_why_not}' "$m" | diag
	else
		ok "$fmt: the metadata says a journal entry is logged"
	fi
	if ! listed "$pid"; then
		not_ok "$fmt: coredumpctl lists no pid $pid"
		diag "$tmp/list"
		diag "$tmp/journald.log"
		continue
	fi
	if grep -qE " $pid +0 +0 +SIGSEGV +present +$prog " "$tmp/list"; then
		ok "$fmt: coredumpctl list: pid $pid, uid 0, SIGSEGV, present, $prog"
	else
		not_ok "$fmt: coredumpctl list has no present core of pid $pid"
		diag "$tmp/list"
	fi
	ctl info "$pid" >"$tmp/info-$fmt" 2>&1
	has "$fmt: coredumpctl info: Storage is the stored core, present" "$tmp/info-$fmt" \
		"Storage: $d/$core (present)"
	has "$fmt: coredumpctl info: Signal" "$tmp/info-$fmt" "Signal: 11 (SEGV)"
	has "$fmt: coredumpctl info: Executable" "$tmp/info-$fmt" "Executable: $prog"
	has "$fmt: coredumpctl info: Command Line" "$tmp/info-$fmt" "Command Line: $prog"
	has "$fmt: coredumpctl info: Control Group" "$tmp/info-$fmt" "Control Group: $(jq -r .cgroup "$m")"
	has "$fmt: coredumpctl info: the message" "$tmp/info-$fmt" \
		"Process $pid (kcd-bt) of user 0 dumped core."
	has "$fmt: coredumpctl info: the stack trace of the crashing thread" "$tmp/info-$fmt" \
		"Stack trace of thread $pid:"
	if grep -qE '#0  0x[0-9a-f]{16} kcd_bt_inner \(kcd-bt \+ 0x[0-9a-f]+\)$' "$tmp/info-$fmt" &&
		grep -qE '#1  0x[0-9a-f]{16} kcd_bt_outer \(kcd-bt \+ 0x' "$tmp/info-$fmt"; then
		ok "$fmt: coredumpctl info: frames #0 kcd_bt_inner, #1 kcd_bt_outer"
	else
		not_ok "$fmt: coredumpctl info: no frames #0 kcd_bt_inner, #1 kcd_bt_outer"
		diag "$tmp/info-$fmt"
	fi
	for f in COREDUMP_FILENAME COREDUMP_SIGNAL_NAME COREDUMP_CWD COREDUMP_TIMESTAMP COREDUMP_BOOT_ID; do
		ctl list -F "$f" "$pid" >"$tmp/field" 2>&1
		echo "$f=$(cat "$tmp/field")" >>"$tmp/fields-$fmt"
	done
	has "$fmt: COREDUMP_FILENAME" "$tmp/fields-$fmt" "COREDUMP_FILENAME=$d/$core"
	has "$fmt: COREDUMP_SIGNAL_NAME" "$tmp/fields-$fmt" "COREDUMP_SIGNAL_NAME=SIGSEGV"
	has "$fmt: COREDUMP_CWD" "$tmp/fields-$fmt" "COREDUMP_CWD=$tmp"
	has "$fmt: COREDUMP_TIMESTAMP" "$tmp/fields-$fmt" "COREDUMP_TIMESTAMP=$(jq .time "$m")000000"
	has "$fmt: COREDUMP_BOOT_ID" "$tmp/fields-$fmt" \
		"COREDUMP_BOOT_ID=$(tr -d - </proc/sys/kernel/random/boot_id)"
	# dump: coredumpctl decompresses the file it names (a .zst; 252
	# decodes one xz stream only, and our .xz keeps the headers in a
	# stream of their own).
	if [ "$fmt" = zstd ]; then
		ctl dump "$pid" -o "$tmp/dump-$fmt" >"$tmp/dump-$fmt.err" 2>&1
		zstd -qdc "$d/$core" >"$tmp/want-$fmt"
		if [ -s "$tmp/dump-$fmt" ] && cmp -s "$tmp/dump-$fmt" "$tmp/want-$fmt"; then
			ok "$fmt: coredumpctl dump writes the core ($(stat -c %s "$tmp/dump-$fmt") bytes)"
		else
			not_ok "$fmt: coredumpctl dump wrote $(stat -c %s "$tmp/dump-$fmt" 2>/dev/null) bytes, not the core's $(stat -c %s "$tmp/want-$fmt")"
			diag "$tmp/dump-$fmt.err"
		fi
	fi
	# debug: gdb on the executable and the core (a .zst decompressed
	# by coredumpctl into /var/tmp first).
	if [ "$fmt" != xz ]; then
		ctl debug --debugger-arguments="-nx -batch -ex bt" "$pid" >"$tmp/debug-$fmt" 2>&1
		if grep -qE '#0 .*kcd_bt_inner' "$tmp/debug-$fmt" &&
			grep -qE '#1 .*kcd_bt_outer' "$tmp/debug-$fmt"; then
			ok "$fmt: coredumpctl debug: gdb's bt has kcd_bt_inner <- kcd_bt_outer"
		else
			not_ok "$fmt: coredumpctl debug: no kcd_bt_inner <- kcd_bt_outer in gdb's bt"
			diag "$tmp/debug-$fmt"
		fi
	fi
done

# --- the socket: a listener in the namespace, core_pattern @@PATH ------------
d=$tmp/s-sock
mkdir -m 700 "$d"
"${ns[@]}" "$kcoredump" core-handler -D "$d" --no-sync --socket "$tmp/k.sock" 2>"$tmp/lerr" &
listener=$!
trap 'kill "$listener" "$jpid" 2>/dev/null; core_pattern_restore' EXIT
if wait_socket "$tmp/k.sock" && printf '@@%s\n' "$tmp/k.sock" >/proc/sys/kernel/core_pattern 2>/dev/null &&
	[ "$(cat /proc/sys/kernel/core_pattern)" = "@@$tmp/k.sock" ]; then
	pid=$(crash)
	if m=$(meta "$d" "$pid") && listed "$pid"; then
		if grep -qE " $pid +0 +0 +SIGSEGV +present +$prog " "$tmp/list"; then
			ok "socket (@@): coredumpctl lists the core, present"
		else
			not_ok "socket (@@): coredumpctl list has no present core of pid $pid"
			diag "$tmp/list"
		fi
	else
		not_ok "socket (@@): no core or no entry for pid $pid"
		diag "$tmp/lerr"
	fi
else
	not_ok "socket (@@): the kernel does not take core_pattern @@$tmp/k.sock"
fi
stop_listener

# --- --no-journal, and no journal socket ------------------------------------
d=$tmp/s-nojournal
install "$d" --no-journal
pid=$(crash)
if m=$(meta "$d" "$pid"); then
	"$kcoredump" show --json --dir "$d" >"$tmp/show-nj.json" 2>&1
	if jq -e '.journal_entry == false and .journal_why_not == "--no-journal"' "$m" >/dev/null &&
		jq -e '.cores[0] | .journal_entry == false and .record.journal_why_not == "--no-journal"' \
			"$tmp/show-nj.json" >/dev/null; then
		ok "--no-journal: the metadata and show --json say so"
	else
		not_ok "--no-journal: the metadata says otherwise"
		jq -c '{journal_entry, journal_why_not}' "$m" | diag
	fi
	sleep 1
	if ctl list "$pid" >"$tmp/list" 2>&1; then
		not_ok "--no-journal: coredumpctl lists pid $pid"
		diag "$tmp/list"
	else
		ok "--no-journal: coredumpctl lists nothing of pid $pid"
	fi
else
	not_ok "--no-journal: no core for pid $pid in $d"
fi
# This machine's own namespace: a journal socket or none.
d=$tmp/s-host
install_handler "$d" || bail_out "cannot install the handler as core_pattern"
pid=$(crash)
if m=$(meta "$d" "$pid"); then
	if [ -S /run/systemd/journal/socket ]; then
		want='.journal_entry == true'
	else
		want='.journal_entry == false and (.journal_why_not | startswith("no journal socket"))'
	fi
	if jq -e "$want" "$m" >/dev/null; then
		ok "this machine's namespace: $want"
	else
		not_ok "this machine's namespace: not $want"
		jq -c '{journal_entry, journal_why_not}' "$m" | diag
	fi
else
	not_ok "this machine's namespace: no core for pid $pid in $d"
fi
printf '%s\n' "$old_pattern" >/proc/sys/kernel/core_pattern
finish
