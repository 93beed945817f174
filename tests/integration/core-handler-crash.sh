#!/bin/bash
# SPDX-License-Identifier: MIT
# kcoredump core-handler as this machine's core_pattern, on real crashes
# (tests/vm/helpers/crash-sparse and tests/tools/crash-shapes, built for
# the host), with kernel.core_pipe_limit 0 as Debian ships it (the kernel
# keeps the crashing process only while it writes the core): a core
# smaller than the handler's pipe still has the process's facts (the
# command line with a 120-character argument, cwd, fds, namespaces) and
# its executable's build ID, and its page tables were looked at; the page
# tables are used (the zeros of a sparse crash are consumed unread)
# although kcmp(2) is refused for some unrelated processes (PID 1 on some
# machines), and are not used when another process shares the memory; a
# crash whose zeros take longer than --timeout to arrive is stored
# complete, as the time limit counts the bytes with data; show prints the
# build IDs (path and hex), Access in words and the container rows, list
# takes -n N and -r; a --socket
# listener with --timeout 2 stores a crash 4 s after its start (each
# connection has its own time limit), a 4 GiB sparse crash through @@ uses
# the page tables as on the pipe and is stored as the kernel's file-mode
# core, an unprivileged one says which facts
# the kernel refused it and why; --install sets core_pipe_limit (to
# --max-handlers) and says how to restore it.
#
# Changes /proc/sys/kernel/core_pattern: only under the lock
# /tmp/kcd-core-pattern.lock (other tests and helpers change it too), and
# puts the old pattern (and core_pipe_limit) back on every exit.  Needs
# root.
#   core-handler-crash.sh KCOREDUMP CRASH_SPARSE VMCHECK_PY KCORE_READ CRASH_SHAPES
set -uo pipefail
kcoredump=$(readlink -f "$1") sparse=$(readlink -f "$2") vmcheck=$3
kcore_read=$(readlink -f "$4") shapes=$(readlink -f "$5")
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3

core_pattern_setup chcrash jq flock readelf setpriv
export PATH=$(dirname "$kcore_read"):$PATH

# install DIR ARGS...: the handler as core_pattern, storing into DIR, in
# the form --print-pattern prints (lib.sh: install_handler).
install() {
	install_handler "$@" || bail_out "cannot install the handler as core_pattern"
}
# crash DESC ARGS...: run crash-sparse (it aborts), print its pid.
crash() {
	local desc=$1
	shift
	(cd "$tmp" && exec "$sparse" "$desc" "$@") >/dev/null 2>&1
	awk '$1 == "pid" { print $2 }' "$desc"
}
jqcheck() { # WHAT FILE [JQ-OPTIONS...] FILTER
	if jq -e "${@:3}" "$2" >/dev/null; then
		ok "$1"
	else
		not_ok "$1: $(jq -c '{complete, truncation_reason, pagemap, stream_seconds,
			facts_why_not, cmdline, cwd, build_ids}' "$2")"
	fi
}
showhas() { # WHAT FILE LINE: FILE has LINE, whole
	if grep -qxF -- "$3" "$2"; then
		ok "$1"
	else
		not_ok "$1: no line '$3'"
		diag <"$2"
	fi
}
vm_check() { # WHAT CORE DESC ARGS...
	local what=$1 core=$2 desc=$3 out=$tmp/vmcheck.out
	shift 3
	if "$PY" "$vmcheck" core "$core" "$desc" "$@" > "$out" 2>&1; then
		ok "$what ($(grep -c '^ok' "$out") checks)"
	else
		not_ok "$what"
		grep -v '^ok' "$out" | diag
	fi
}

# Whether kcmp(2) is refused for PID 1 here (the case the test is for).
kcmp_pid1=$("$PY" - <<'PY'
import ctypes, os, platform
nr = {"x86_64": 312, "aarch64": 272}.get(platform.machine())
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(nr, os.getpid(), 1, 0, 0, 0) if nr else -2
print("refused: " + os.strerror(ctypes.get_errno()) if r == -1 else "allowed")
PY
)
echo "# kcmp(2) of this process with PID 1: $kcmp_pid1"

# --- 0. a small crash: the process is looked at before the stream ----------
# With core_pipe_limit 0 the kernel does not wait for the handler: the
# process ends once the last bytes of its core are in the pipe, and a
# core of a few hundred KiB fits there.  Its facts are read first, its
# page tables before the pipe grows.
long=--a-long-argument=$(printf 'x%.0s' {1..120})
shapes_id=$(readelf -n "$shapes" | awk '/Build ID:/ { print $3; exit }')
d=$tmp/s0
install "$d"
(cd "$tmp" && exec "$shapes" abort "$long") >/dev/null 2>&1 &
pid=$!
wait "$pid" 2>/dev/null
echo "# core_pipe_limit $(cat /proc/sys/kernel/core_pipe_limit); $shapes has build ID ${shapes_id:-?}"
if m=$(wait_meta "$d" "$pid"); then
	jqcheck "small crash ($(jq .stream_bytes "$m") stream bytes, less than the 1 MiB pipe): no facts_why_not" \
		"$m" '.stream_bytes < 1048576 and has("facts_why_not") == false'
	jqcheck "small crash: the full command line (${#long}-byte argument), cwd, root" "$m" \
		--arg c "$shapes abort $long" --arg w "$tmp" \
		'.cmdline == $c and .cwd == $w and .root == "/"'
	jqcheck "small crash: open fds, rlimits, cgroup, namespaces" "$m" \
		'(.open_fds | length) > 0 and .rlimits.open_files.soft != null and
		(.cgroup | startswith("/")) and (.received.namespaces.pid | startswith("pid:["))'
	jqcheck "small crash: the page tables were looked at (no 1 MiB hole to skip)" "$m" \
		'(.pagemap.used | not) and (.pagemap.why_not | test("no empty run"))'
	jqcheck "small crash: build ID ${shapes_id:-?} of $shapes" "$m" \
		--arg f "$shapes" --arg id "${shapes_id:-none}" \
		'[.build_ids[] | select(.name == $f) | .build_id] == [$id]'
	"$kcoredump" show --dir "$d" "$pid" >"$tmp/show0" 2>&1
	showhas "show: the full command line" "$tmp/show0" "    Command Line: $shapes abort $long"
	showhas "show: Build IDs row, $shapes with its build ID in hex" "$tmp/show0" \
		"      Build IDs:  $shapes with build-id ${shapes_id:-none}"
	showhas "show: Access in words" "$tmp/show0" "          Access: root only: --owner root (dump mode 1)"
	if grep -qE '^ +[A-Za-z ]+: *[[{]' "$tmp/show0"; then
		not_ok "show: a row prints raw JSON"
		grep -E '^ +[A-Za-z ]+: *[[{]' "$tmp/show0" | diag
	else
		ok "show: no row prints raw JSON"
	fi
else
	not_ok "small crash: no metadata for pid $pid in $d"
fi

# list -n N and -r as coredumpctl's, on a second crash in the same store.
pid0=$pid
(cd "$tmp" && exec "$shapes" abort second) >/dev/null 2>&1 &
pid=$!
wait "$pid" 2>/dev/null
if wait_meta "$d" "$pid" >/dev/null; then
	lpids() { "$kcoredump" list --dir "$d" --json "$@" 2>/dev/null | jq -c '[.cores[].pid]'; }
	got=$(lpids -n 1)
	[ "$got" = "[$pid]" ] && ok "list -n 1: the newest" || not_ok "list -n 1: $got, want [$pid]"
	got=$(lpids -r)
	[ "$got" = "[$pid,$pid0]" ] && ok "list -r: newest first" || not_ok "list -r: $got, want [$pid,$pid0]"
	got=$("$kcoredump" list --dir "$d" -q -r -n 1 2>/dev/null | wc -l)
	[ "$got" = 1 ] && ok "list -r -n 1 -q: one path" || not_ok "list -r -n 1 -q: $got lines"
else
	not_ok "second small crash: no metadata for pid $pid in $d"
fi

# --- 1. the page tables, with processes kcmp is refused for ----------------
d=$tmp/s1
install "$d"
pid=$(crash "$tmp/s1.desc" 4)
if m=$(wait_meta "$d" "$pid"); then
	jqcheck "4 GiB sparse crash: complete, page tables used (kcmp of PID 1 $kcmp_pid1), $(jq .pagemap.unread_bytes "$m") of $(jq .stream_bytes "$m") bytes unread" \
		"$m" '.complete and .pagemap.used and .pagemap.why_not == null and
		.pagemap.unread_bytes >= 0.99 * .stream_bytes'
	vm_check "4 GiB sparse crash: the touched pages hold the pattern, untouched ones zeros" \
		"${m%.json}" "$tmp/s1.desc" --sparse
	rate=$(jq '.stream_bytes / (.stream_seconds + 0.001)' "$m")
else
	not_ok "4 GiB sparse crash: no metadata for pid $pid in $d"
	rate=1073741824
fi

# --- 2. a process sharing the memory turns them off --------------------------
d=$tmp/s2
install "$d"
pid=$(crash "$tmp/s2.desc" 1 sharer)
sharer=$(awk '$1 == "sharer" { print $2 }' "$tmp/s2.desc")
[ -n "$sharer" ] && kill -KILL "$sharer" 2>/dev/null
if m=$(wait_meta "$d" "$pid"); then
	jqcheck "CLONE_VM sharer $sharer: page tables not used, every byte read, complete" "$m" \
		'.complete and (.pagemap.used | not) and .pagemap.unread_bytes == 0
		and (.pagemap.why_not | test("pid [0-9]+ shares the memory"))'
else
	not_ok "CLONE_VM sharer: no metadata for pid $pid in $d"
fi

# --- 3. --timeout counts the bytes with data, not the zeros -------------------
# The crash is sized so that its zeros take about 8 s to arrive at the
# rate the first crash showed, with --timeout 2. The rate varies between
# crashes (load, page cache), so a stream that arrived in 4 s or less is
# retried once, sized from the rate it showed: only a stream longer than
# twice --timeout proves that the zeros were not counted.
size_for() { "$PY" -c "import math; print(min(256, max(8, math.ceil($1 * $2 / 2**30))))"; }
gib=$(size_for 8 "$rate")
for attempt in 1 2; do
	d=$tmp/s3.$attempt
	install "$d" --timeout 2
	pid=$(crash "$tmp/s3.desc" "$gib")
	m=$(wait_meta "$d" "$pid") || m=''
	[ -n "$m" ] || break
	jq -e '.stream_seconds > 4' "$m" >/dev/null && break
	[ "$attempt" = 2 ] || [ "$gib" = 256 ] && break
	echo "# $gib GiB arrived in $(jq .stream_seconds "$m") s: retrying at a size from that rate"
	gib=$(size_for 12 "$(jq '.stream_bytes / (.stream_seconds + 0.001)' "$m")")
	rm -rf "$d"
done
if [ -n "$m" ]; then
	el=$(jq .stream_seconds "$m")
	counted=$(jq '.stream_seconds - .pagemap.hole_seconds | . * 1000 | round / 1000' "$m")
	jqcheck "$gib GiB sparse crash, its stream in $el s with --timeout 2: complete, $(jq .pagemap.hole_seconds "$m") s of zeros not counted, $counted s counted" \
		"$m" '.complete and .truncation_reason == "complete" and .pagemap.used
		and .pagemap.hole_seconds > 2'
	if jq -e '.stream_seconds > 4' "$m" >/dev/null; then
		ok "the stream took longer than twice --timeout ($el s): the zeros would have exceeded it"
	else
		not_ok "the stream took $el s, not more than twice --timeout: it proves nothing"
	fi
	vm_check "$gib GiB sparse crash: the touched pages hold the pattern" \
		"${m%.json}" "$tmp/s3.desc" --sparse
else
	not_ok "$gib GiB sparse crash: no metadata for pid $pid in $d"
fi

# --- 4. a crash in a PID namespace: the kernel's namespace ids kept ----------
# A shell is the namespace's pid 1 and crash-sparse its child (pid 2):
# the stored core has the ids the kernel wrote (the namespace's), the
# metadata the host's pid (%P).
d=$tmp/s4
if unshare -pf --mount-proc true 2>/dev/null; then
	install "$d"
	(cd "$tmp" && exec unshare -pf --mount-proc sh -c "'$sparse' '$tmp/s4.desc' 1; :") >/dev/null 2>&1
	nspid=$(awk '$1 == "pid" { print $2 }' "$tmp/s4.desc")
	m='' i=0
	while [ -z "$m" ] && [ $((i++)) -lt 1200 ]; do
		for f in "$d"/core.*.json; do
			[ -f "$f" ] && m=$f
		done
		[ -n "$m" ] || sleep 0.1
	done
	if [ -n "$m" ]; then
		"$kcoredump" info --json "${m%.json}" >"$tmp/s4.info" 2>/dev/null
		host=$(jq .pid "$m")
		jqcheck "namespace crash: metadata has the host pid $host, not $nspid" "$m" \
			".pid == $host and .pid != ${nspid:-0}"
		jqcheck "namespace crash: the core's PRPSINFO/PRSTATUS have the namespace's pid $nspid" \
			"$tmp/s4.info" "[.notes[] | .prpsinfo // empty][0].pid == ${nspid:-0} and
			[.notes[] | .prstatus // empty][0].pid == ${nspid:-0} and
			[.notes[] | .prpsinfo // empty][0].ppid == 1"
		"$kcoredump" show --dir "$d" "$host" >"$tmp/show4" 2>&1
		showhas "namespace crash: show's Container row" "$tmp/show4" \
			"       Container: yes, PID ${nspid:-?} in its PID namespace"
		nsid=$(jq -r .received.namespaces.pid "$m")
		showhas "namespace crash: show's Namespaces row has $nsid" "$tmp/show4" \
			"     Namespaces:  $nsid"
	else
		not_ok "namespace crash: no metadata in $d"
	fi
else
	skip "namespace crash: unshare -p is not allowed here"
fi

# --- 5. a --socket listener stores a crash that comes after --timeout -------
# The kernel connects to the listener (core_pattern @@PATH, Linux 6.17;
# @PATH, 6.16) for each crash; --timeout counts from each connection,
# not from the listener's start.
kv=$(uname -r | awk -F. '{ print $1 * 1000 + $2 }')
if [ "$kv" -ge 6016 ]; then
	d=$tmp/s5
	mkdir -m 700 "$d"
	sock=$tmp/s5.sock
	"$kcoredump" core-handler --dir "$d" --no-sync --no-journal --timeout 2 --socket "$sock" \
		2>"$tmp/s5.log" &
	listener=$!
	trap '[ -n "$listener" ] && kill "$listener" 2>/dev/null; core_pattern_restore' EXIT
	wait_socket "$sock"
	if [ "$kv" -ge 6017 ]; then pattern=@@$sock; else pattern=@$sock; fi
	printf '%s\n' "$pattern" >/proc/sys/kernel/core_pattern
	# Twice the time limit after the listener started.
	sleep 4
	(cd "$tmp" && exec "$shapes" abort "$long") >/dev/null 2>&1 &
	pid=$!
	wait "$pid" 2>/dev/null
	if m=$(wait_meta "$d" "$pid"); then
		jqcheck "listener with --timeout 2, crash 4 s after its start: stored complete via $(jq -r .received.via "$m")" \
			"$m" '.complete and (.received.via | startswith("socket"))'
	else
		not_ok "listener with --timeout 2, crash 4 s after its start: nothing stored"
		diag <"$tmp/s5.log"
	fi
	stop_listener

	# An unprivileged listener (nobody, no capabilities, as the
	# kcoredump user of kcoredump-coredump@.service) and root's crash:
	# what the kernel shows only to a tracer is missing, and the
	# metadata says which and why.
	d=$tmp/s6 run=$tmp/s6run
	mkdir -m 700 "$d" "$run"
	chown 65534:65534 "$d" "$run"
	sock=$run/sock
	setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps=-all \
		--bounding-set=-all "$kcoredump" core-handler --dir "$d" --no-sync --no-journal \
		--socket "$sock" 2>"$tmp/s6.log" &
	listener=$!
	wait_socket "$sock"
	if [ "$kv" -ge 6017 ]; then pattern=@@$sock; else pattern=@$sock; fi
	printf '%s\n' "$pattern" >/proc/sys/kernel/core_pattern
	(cd "$tmp" && exec "$shapes" abort unprivileged) >/dev/null 2>&1 &
	pid=$!
	wait "$pid" 2>/dev/null
	if m=$(wait_meta "$d" "$pid"); then
		jqcheck "unprivileged listener, root's crash: cwd, root, open_fds, namespaces unreadable (Permission denied), said why" \
			"$m" '(.facts_unreadable | .cwd == "Permission denied" and
			.root == "Permission denied" and .open_fds == "Permission denied" and
			.namespaces == "Permission denied") and
			(.facts_unreadable_why | test("uid 65534 without CAP_SYS_PTRACE")) and
			has("cwd") == false and has("open_fds") == false'
		jqcheck "unprivileged listener: the command line is still read" "$m" \
			--arg c "$shapes abort unprivileged" '.cmdline == $c'
		"$kcoredump" show --dir "$d" "$pid" >"$tmp/show6" 2>&1
		if grep -qE '^ +Not Readable: .*cwd \(Permission denied\)' "$tmp/show6" &&
			grep -qF 'without CAP_SYS_PTRACE' "$tmp/show6"; then
			ok "show: the Not Readable row and why"
		else
			not_ok "show: no Not Readable row"
			diag <"$tmp/show6"
		fi
	else
		not_ok "unprivileged listener: nothing stored"
		diag <"$tmp/s6.log"
	fi
	stop_listener
else
	skip "listener: Linux $(uname -r) has no coredump socket (6.16)"
fi

# --- 5b. a sparse crash through @@: the page tables used as on the pipe ----
# The kernel writes the zeros into the socket as into a pipe; the handler
# looks at the peer's page tables and moves those zeros on to /dev/null
# unread (splice through a pipe of its own), and --timeout does not count
# them.  The stored core is compared byte for byte with the kernel's
# file-mode core of the same program run the same way (no ASLR): the same
# size and headers, the sparse mapping (where the zeros were skipped) the
# same; elsewhere two runs differ in a few bytes (CPU times, registers,
# what the process derived from AT_RANDOM), which are listed.
if [ "$kv" -ge 6017 ]; then
	d=$tmp/s5b
	mkdir -m 700 "$d" "$tmp/s5bref"
	sock=$tmp/s5b.sock
	"$kcoredump" core-handler --dir "$d" --no-sync --no-journal --timeout 2 --socket "$sock" \
		2>"$tmp/s5b.log" &
	listener=$!
	wait_socket "$sock"
	printf '@@%s\n' "$sock" >/proc/sys/kernel/core_pattern
	(cd "$tmp" && exec setarch -R "$sparse" "$tmp/s5b.desc" 4) >/dev/null 2>&1
	pid=$(awk '$1 == "pid" { print $2 }' "$tmp/s5b.desc")
	if m=$(wait_meta "$d" "$pid"); then
		jqcheck "4 GiB sparse crash via @@: complete, via socket-request, page tables used, $(jq .pagemap.unread_bytes "$m") of $(jq .stream_bytes "$m") bytes unread" \
			"$m" '.complete and .received.via == "socket-request" and
			.pagemap.used and .pagemap.why_not == null and
			.pagemap.unread_bytes >= 0.99 * .stream_bytes'
		el=$(jq .stream_seconds "$m")
		if jq -e '.stream_seconds > 2' "$m" >/dev/null; then
			jqcheck "@@ with --timeout 2, the stream in $el s: complete, $(jq .pagemap.hole_seconds "$m") s of zeros not counted" \
				"$m" '.complete and .pagemap.hole_seconds > 2'
		else
			skip "@@ --timeout: the stream took $el s, within --timeout 2"
		fi
		vm_check "4 GiB sparse crash via @@: the touched pages hold the pattern, untouched ones zeros" \
			"${m%.json}" "$tmp/s5b.desc" --sparse
		printf '%s\n' "$tmp/s5bref/core.%p" >/proc/sys/kernel/core_pattern
		(cd "$tmp" && exec setarch -R "$sparse" "$tmp/s5bref.desc" 4) >/dev/null 2>&1
		ref=$tmp/s5bref/core.$(awk '$1 == "pid" { print $2 }' "$tmp/s5bref.desc")
		map=$(awk '$1 == "mapping" { print $2 }' "$tmp/s5b.desc")
		if [ -f "$ref" ] && "$PY" "$(dirname "$0")/../tools/core-bytes.py" \
			"$ref" "${m%.json}" --strict "$map" >"$tmp/s5b.cmp" 2>&1; then
			ok "4 GiB sparse crash via @@: size, headers and the 4 GiB mapping byte for byte those of the kernel's file-mode core ($(tr '\n' ';' <"$tmp/s5b.cmp"))"
		else
			not_ok "4 GiB sparse crash via @@: not the kernel's file-mode core"
			diag <"$tmp/s5b.cmp"
		fi
	else
		not_ok "4 GiB sparse crash via @@: nothing stored"
		diag <"$tmp/s5b.log"
	fi
	stop_listener
else
	skip "sparse crash via @@: Linux $(uname -r) takes no @@ socket pattern (6.17)"
fi

# --- 6. --install sets core_pipe_limit and says how to restore it ---------
"$kcoredump" core-handler --dir "$tmp/inst" --no-journal --max-handlers 12 --install \
	>"$tmp/inst.out" 2>"$tmp/inst.err"
limit=$(cat /proc/sys/kernel/core_pipe_limit)
if [[ $(cat "$tmp/inst.out") != '|'* ]]; then
	skip "--install chose $(cat "$tmp/inst.out"), not the pipe"
elif [ "$limit" = 12 ] &&
	grep -qF 'kernel.core_pipe_limit was 0, now 12' "$tmp/inst.err" &&
	grep -qF 'sysctl -w kernel.core_pipe_limit=0' "$tmp/inst.err" &&
	grep -qxF 'kernel.core_pipe_limit = 12' "$tmp/inst.err"; then
	ok "--install: core_pipe_limit 0 -> 12 (--max-handlers), the restore command and the sysctl.d line"
else
	not_ok "--install: core_pipe_limit $limit"
	diag <"$tmp/inst.err"
fi
finish
