#!/bin/bash
# SPDX-License-Identifier: MIT
# kcoredump core-handler logs one journal entry per stored core with
# systemd-coredump's fields, and coredumpctl lists, shows, dumps and
# debugs the cores it stored: Debian 12's (systemd 252) and sid's (systemd
# 262).  A real systemd-journald runs without systemd as PID 1, in a
# private mount namespace (unshare -m: tmpfs on /run/systemd and
# /var/log/journal, /run/log a directory of this test, volatile storage);
# the handler runs there too (core_pattern names a wrapper that enters it
# with nsenter; the socket listener is started in it), so nothing reaches
# this machine's own journal.  coredumpctl 252 is Debian 12's, extracted
# from systemd-coredump's .deb with dpkg -x (never installed: it would take
# core_pattern) into the cache, and runs in that namespace; 262 is sid's,
# its systemd-coredump and libsystemd-shared extracted the same way, run in
# the Debian sid root (tests/oracle/sid-root.sh) on the journal's files
# (coredumpctl -D).  A real crash through core_pattern of a program with
# known functions, stored as a sparse ELF, a .zst and a .xz, and through
# the socket (@@): list shows it present, info has the fields and the
# backtrace in its message, dump writes the core's bytes (what kcoredump
# dump MATCH writes; a .xz is one xz stream, all of which 252 decodes),
# debug runs gdb on it.  252 does not dump a sparse ELF core (its
# decompressor knows files by their compression suffix only, and it gives
# it every file; kcoredump(8) says so): the test expects that refusal; 262
# copies such a file.  --no-journal logs nothing, and
# without a journal socket (a namespace with an empty /run/systemd)
# nothing is tried.
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

# --- coredumpctl 262: sid's, in the sid root --------------------------------
# systemd-coredump and libsystemd-shared (which needs only libc and
# dlopens the rest, found in the root) from sid through the private apt
# configuration of tests/lib/apt-download.sh, extracted into the cache.
# Before core_pattern_setup: a first build takes minutes, which the lock
# other crash tests wait for should not.
sidlog=$(mktemp /tmp/kcd-sid-root.XXXXXX)
sidroot=$("$here/../oracle/sid-root.sh" --skip 2>"$sidlog")
case $? in
0) ;;
77) sidroot= ;;
*) bail_out "the sid root failed: $(tail -n 3 "$sidlog")" ;;
esac
cache262=${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/systemd-coredump-sid
ctl262=$cache262/root/usr/bin/coredumpctl
if [ -n "$sidroot" ] && [ ! -x "$ctl262" ]; then
	# Made aside and renamed into place: a run never sees half of it.
	mkdir -p "${cache262%/*}"
	new=$(mktemp -d "$cache262.XXXXXX")
	for p in systemd-coredump libsystemd-shared; do
		mkdir -p "$new/deb/$p"
		deb=$(apt_private_download_deb "$new/deb/$p" "$p/sid") ||
			bail_out "cannot download sid's $p"
		dpkg -x "$deb" "$new/root" || bail_out "dpkg -x $deb failed"
	done
	rm -rf "$cache262"
	mv "$new" "$cache262"
fi
if [ -z "$sidroot" ]; then
	echo "# SKIP coredumpctl 262: the sid root cannot be built here: $(tail -n 1 "$sidlog")"
elif [ ! -x "$ctl262" ]; then
	bail_out "no coredumpctl in sid's systemd-coredump"
fi
rm -f "$sidlog"

core_pattern_setup chjournal jq flock cc unshare nsenter setpriv gdb dpkg zstd xz cmp

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
# /run/log is a directory of ours: its journal files are read from outside
# the namespace too (coredumpctl 262 in the sid root).
mkdir -m 755 "$tmp/runlog"
setpriv --pdeathsig KILL unshare -m --propagation private bash -c '
	for d in /run/systemd /run/log /var/log/journal; do
		mkdir -p "$d" && mount -t tmpfs -o mode=0755 tmpfs "$d" || exit 1
	done
	mount --bind "$3" /run/log || exit 1
	mount --bind "$1" /etc/systemd/journald.conf || exit 1
	exec "$2"' journald "$tmp/journald.conf" "$journald" "$tmp/runlog" >"$tmp/journald.log" 2>&1 &
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
# coredumpctl 252 and gdb in that namespace, as root, no pager.
ctl252() { "${ns[@]}" env SYSTEMD_PAGER= SYSTEMD_COLORS=0 "$ctl" --no-pager "$@"; }
# coredumpctl 262 and sid's gdb in the sid root, on the journal's files;
# this test's directory (stores, program, journal) is there read-only,
# TMPDIR (where debug decompresses a core) is the root's fresh /tmp.
ctl262() {
	"$here/../oracle/sid-root.sh" run --bind "$tmp" --bind "$cache262/root" -- \
		env SYSTEMD_PAGER= SYSTEMD_COLORS=0 TMPDIR=/tmp \
		LD_LIBRARY_PATH="$cache262/root/usr/lib/x86_64-linux-gnu/systemd" \
		"$ctl262" --no-pager -D "$tmp/runlog/journal" "$@"
}
readers=(252)
[ -n "$sidroot" ] && readers+=(262)

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
# listed VERSION PID: that coredumpctl lists pid (the entry comes after
# the core) into $tmp/list.
listed() {
	local i
	for ((i = 0; i < 100; i++)); do
		"ctl$1" list "$2" >"$tmp/list" 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

# The crashing program (lib.sh, as in core-handler-backtrace): two
# known functions deep, a second thread waiting.
prog=$tmp/kcd-bt
build_bt_program "$tmp" "$prog"
chmod 755 "$prog"
crash() { # prints the pid
	(exec 9>&- && cd "$tmp" && exec "$prog") >/dev/null 2>&1 &
	local pid=$!
	wait "$pid" 2>/dev/null
	echo "$pid"
}

# reader_checks VERSION FMT PID DIR CORE META: coredumpctl VERSION lists,
# shows, dumps and debugs pid's core CORE stored in DIR.
reader_checks() {
	local v=$1 fmt=$2 pid=$3 d=$4 core=$5 m=$6 t f
	t="$fmt: coredumpctl $v"
	if ! listed "$v" "$pid"; then
		not_ok "$t lists no pid $pid"
		diag "$tmp/list"
		diag "$tmp/journald.log"
		return
	fi
	if grep -qE " $pid +0 +0 +SIGSEGV +present +$prog " "$tmp/list"; then
		ok "$t list: pid $pid, uid 0, SIGSEGV, present, $prog"
	else
		not_ok "$t list has no present core of pid $pid"
		diag "$tmp/list"
	fi
	"ctl$v" info "$pid" >"$tmp/info" 2>&1
	has "$t info: Storage is the stored core, present" "$tmp/info" \
		"Storage: $d/$core (present)"
	has "$t info: Signal" "$tmp/info" "Signal: 11 (SEGV)"
	has "$t info: Executable" "$tmp/info" "Executable: $prog"
	has "$t info: Command Line" "$tmp/info" "Command Line: $prog"
	has "$t info: Control Group" "$tmp/info" "Control Group: $(jq -r .cgroup "$m")"
	has "$t info: the message" "$tmp/info" \
		"Process $pid (kcd-bt) of user 0 dumped core."
	has "$t info: the stack trace of the crashing thread" "$tmp/info" \
		"Stack trace of thread $pid:"
	if grep -qE '#0  0x[0-9a-f]{16} kcd_bt_inner \(kcd-bt \+ 0x[0-9a-f]+\)$' "$tmp/info" &&
		grep -qE '#1  0x[0-9a-f]{16} kcd_bt_outer \(kcd-bt \+ 0x' "$tmp/info"; then
		ok "$t info: frames #0 kcd_bt_inner, #1 kcd_bt_outer"
	else
		not_ok "$t info: no frames #0 kcd_bt_inner, #1 kcd_bt_outer"
		diag "$tmp/info"
	fi
	: >"$tmp/fields"
	for f in COREDUMP_FILENAME COREDUMP_SIGNAL_NAME COREDUMP_CWD COREDUMP_TIMESTAMP COREDUMP_BOOT_ID; do
		"ctl$v" list -F "$f" "$pid" >"$tmp/field" 2>&1
		echo "$f=$(cat "$tmp/field")" >>"$tmp/fields"
	done
	has "$t -F COREDUMP_FILENAME" "$tmp/fields" "COREDUMP_FILENAME=$d/$core"
	has "$t -F COREDUMP_SIGNAL_NAME" "$tmp/fields" "COREDUMP_SIGNAL_NAME=SIGSEGV"
	has "$t -F COREDUMP_CWD" "$tmp/fields" "COREDUMP_CWD=$tmp"
	has "$t -F COREDUMP_TIMESTAMP" "$tmp/fields" "COREDUMP_TIMESTAMP=$(jq .time "$m")000000"
	has "$t -F COREDUMP_BOOT_ID" "$tmp/fields" \
		"COREDUMP_BOOT_ID=$(tr -d - </proc/sys/kernel/random/boot_id)"
	# dump: the core's bytes, as kcoredump dump MATCH and the tools
	# write them (a .xz: one stream, so 252 decodes it all).
	"ctl$v" dump "$pid" >"$tmp/dump" 2>"$tmp/dump.err"
	if [ "$v" = 252 ] && [[ $core != *.zst && $core != *.xz ]]; then
		# 252 gives every file to its decompressor, which knows none
		# by a name without a compression suffix (kcoredump(8)).
		if [ ! -s "$tmp/dump" ] && grep -q 'Protocol not supported' "$tmp/dump.err"; then
			ok "$t dump of a sparse ELF core: refused as kcoredump(8) says"
		else
			not_ok "$t dump of a sparse ELF core: not the refusal kcoredump(8) describes ($(stat -c %s "$tmp/dump") bytes)"
			diag "$tmp/dump.err"
		fi
	else
		"$kcoredump" dump -q -D "$d" "$pid" -o - >"$tmp/want" 2>"$tmp/want.err" ||
			not_ok "$t: kcoredump dump $pid: $(head -c 300 "$tmp/want.err")"
		case $core in
		*.zst) zstd -qdc "$d/$core" ;;
		*.xz) xz -qdc "$d/$core" ;;
		*) cat "$d/$core" ;;
		esac >"$tmp/tool"
		if [ -s "$tmp/dump" ] && cmp -s "$tmp/dump" "$tmp/want" && cmp -s "$tmp/want" "$tmp/tool"; then
			ok "$t dump: the whole core, as kcoredump dump writes it ($(stat -c %s "$tmp/dump") bytes)"
		else
			not_ok "$t dump wrote $(stat -c %s "$tmp/dump") bytes, kcoredump dump $(stat -c %s "$tmp/want"), the file decoded $(stat -c %s "$tmp/tool")"
			diag "$tmp/dump.err"
		fi
	fi
	# debug: gdb on the executable and the core (a .zst or .xz
	# decompressed by coredumpctl into a temporary file first).
	"ctl$v" debug --debugger-arguments="-nx -batch -ex bt" "$pid" >"$tmp/debug" 2>&1
	if grep -qE '#0 .*kcd_bt_inner' "$tmp/debug" &&
		grep -qE '#1 .*kcd_bt_outer' "$tmp/debug"; then
		ok "$t debug: gdb's bt has kcd_bt_inner <- kcd_bt_outer"
	else
		not_ok "$t debug: no kcd_bt_inner <- kcd_bt_outer in gdb's bt"
		diag "$tmp/debug"
	fi
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
	for v in "${readers[@]}"; do
		reader_checks "$v" "$fmt" "$pid" "$d" "$core" "$m"
	done
done

# --- the socket: a listener in the namespace, core_pattern @@PATH ------------
d=$tmp/s-sock
mkdir -m 700 "$d"
"${ns[@]}" "$kcoredump" core-handler -D "$d" --no-sync --socket "$tmp/k.sock" 2>"$tmp/lerr" &  # lint-journal: in the private journal's namespace
listener=$!
trap 'kill "$listener" "$jpid" 2>/dev/null; core_pattern_restore' EXIT
if wait_socket "$tmp/k.sock" && printf '@@%s\n' "$tmp/k.sock" >/proc/sys/kernel/core_pattern 2>/dev/null &&
	[ "$(cat /proc/sys/kernel/core_pattern)" = "@@$tmp/k.sock" ]; then
	pid=$(crash)
	if m=$(meta "$d" "$pid"); then
		for v in "${readers[@]}"; do
			reader_checks "$v" "socket (@@)" "$pid" "$d" "$(jq -r .core "$m")" "$m"
		done
	else
		not_ok "socket (@@): no core for pid $pid"
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
	if ctl252 list "$pid" >"$tmp/list" 2>&1; then
		not_ok "--no-journal: coredumpctl lists pid $pid"
		diag "$tmp/list"
	else
		ok "--no-journal: coredumpctl lists nothing of pid $pid"
	fi
else
	not_ok "--no-journal: no core for pid $pid in $d"
fi
# No journal socket: a second private namespace with an empty
# /run/systemd (not this machine's own, whose journal no test may log to).
setpriv --pdeathsig KILL unshare -m --propagation private bash -c '
	mkdir -p /run/systemd && mount -t tmpfs -o mode=0755 tmpfs /run/systemd || exit 1
	touch "$1"
	exec sleep infinity' nojournal "$tmp/nj.ready" >"$tmp/nj.log" 2>&1 &
njpid=$!
trap 'kill "$njpid" "$jpid" 2>/dev/null; core_pattern_restore' EXIT
for ((i = 0; i < 100; i++)); do
	[ -e "$tmp/nj.ready" ] && break
	sleep 0.1
done
cat >"$tmp/h" <<SH
#!/bin/sh
exec /usr/bin/nsenter --mount=/proc/$njpid/ns/mnt $kcoredump core-handler "\$@"
SH
d=$tmp/s-nosocket
install "$d"
pid=$(crash)
if m=$(meta "$d" "$pid"); then
	want='.journal_entry == false and (.journal_why_not | startswith("no journal socket"))'
	if jq -e "$want" "$m" >/dev/null; then
		ok "no journal socket: $want"
	else
		not_ok "no journal socket: not $want"
		jq -c '{journal_entry, journal_why_not}' "$m" | diag
	fi
else
	not_ok "no journal socket: no core for pid $pid in $d"
	diag "$tmp/nj.log"
fi
printf '%s\n' "$old_pattern" >/proc/sys/kernel/core_pattern
finish
