#!/bin/bash
# kcoredump pid on a live process (tests/tools/pidtarget: 3 parked worker
# threads, a 256 MiB dense pattern area, a 64 GiB MAP_NORESERVE area with
# 16 touched pages, a pattern buffer on the main thread's stack), checked
# with independent readers: gdb's backtraces match "gdb -p" on the same
# process, eu-stack unwinds the core, gdb reads the known content at known
# addresses, the 64 GiB area is never read and stays a hole.
#   pid.sh KCOREDUMP PIDTARGET
set -uo pipefail
kcoredump=$1 target=$(readlink -f "$2")
tools=$(cd "$(dirname "$0")/../tools" && pwd)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
pids=()
# shellcheck disable=SC2317 # called through the trap
cleanup()
{
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

for tool in gdb eu-stack jq; do
	if ! command -v $tool >/dev/null; then
		echo "1..0 # SKIP $tool not installed"
		exit 77
	fi
done

# start NAME ARGS...: run pidtarget with a FIFO on stdin; sets $pid and
# fills $tmp/NAME.ready.
start()
{
	local name=$1
	shift
	mkfifo "$tmp/$name.in"
	"$target" "$@" <"$tmp/$name.in" >"$tmp/$name.out" 2>&1 &
	pid=$!
	pids+=("$pid")
	exec {fd}>"$tmp/$name.in" # keep the FIFO open: no EOF
	eval "fd_$name=$fd"
	for _ in $(seq 100); do
		grep -q '^ready' "$tmp/$name.out" 2>/dev/null && break
		sleep 0.1
	done
	grep '^ready' "$tmp/$name.out" >"$tmp/$name.ready"
	# "ready" comes just before the main thread blocks in fgets().
	sleep 0.5
}

field()
{
	sed -n "s/.* $1=\([^ ]*\).*/\1/p" "$2"
}

start big
ready=$tmp/big.ready
if [ ! -s "$ready" ]; then
	not_ok "pidtarget started"
	finish
fi

out=$tmp/core
"$kcoredump" pid "$pid" -o "$out" --json >"$tmp/sum.json" 2>"$tmp/err"
rc=$?
if [ $rc -eq 5 ]; then
	echo "1..0 # SKIP ptrace is not allowed here: $(head -1 "$tmp/err")"
	exit 77
fi
check "kcoredump pid exits 0" [ $rc -eq 0 ]
[ $rc -eq 0 ] || diag "$tmp/err"

# --- the summary: 64 GiB never read, short stop ---
j()
{
	jq -r "$1" "$tmp/sum.json"
}
check "4 threads captured" [ "$(j .process.threads)" = 4 ]
read_bytes=$(j .process.bytes_read)
check "process memory read < 300 MiB (got $read_bytes)" \
	[ "$read_bytes" -lt $((300 << 20)) ]
check "process memory read >= the 256 MiB dense area" \
	[ "$read_bytes" -ge $((256 << 20)) ]
check "at least 63 GiB skipped as holes" \
	[ "$(j .stats.bytes_hole)" -ge $((63 << 30)) ]
stop_s=$(j .process.stop_seconds)
check "stop measured and under 1 s (${stop_s} s)" \
	jq -e '.process.stop_seconds > 0 and .process.stop_seconds < 1' "$tmp/sum.json"
check "not kept stopped" [ "$(j .process.kept_stopped)" = false ]
check "no read errors" [ "$(j .stats.bytes_unreadable)" = 0 ]

# --- the file: sparse ---
alloc=$(($(stat -c %b "$out") * 512))
size=$(stat -c %s "$out")
check "apparent size covers the 64 GiB area" [ "$size" -gt $((64 << 30)) ]
check "allocated size < 300 MiB (got $alloc)" [ "$alloc" -lt $((300 << 20)) ]

# --- backtraces: the core against gdb -p on the same process ---
frames()
{
	# Thread blocks of function names, sorted so the order of threads
	# does not matter.
	/usr/bin/python3 -c '
import re, sys
threads, cur = [], None
for line in sys.stdin:
    if line.startswith("Thread "):
        cur = []
        threads.append(cur)
    m = re.match(r"#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \(", line)
    if m and cur is not None:
        cur.append(m.group(1))
for t in sorted(" ".join(t) for t in threads):
    print(t)
'
}
gdb -batch -ex 'thread apply all bt' "$target" "$out" >"$tmp/bt.core" 2>&1
gdb -p "$pid" -batch -ex 'thread apply all bt' >"$tmp/bt.live" 2>&1
frames <"$tmp/bt.core" >"$tmp/f.core"
frames <"$tmp/bt.live" >"$tmp/f.live"
check "gdb sees 4 threads in the core" [ "$(wc -l <"$tmp/f.core")" = 4 ]
check "main thread in kc_command_loop -> main" \
	grep -q 'kc_command_loop main' "$tmp/f.core"
check "3 workers in kc_worker_inner -> kc_worker_outer -> kc_worker_main" \
	[ "$(grep -c 'kc_worker_inner kc_worker_outer kc_worker_main' \
		"$tmp/f.core")" = 3 ]
if cmp -s "$tmp/f.core" "$tmp/f.live"; then
	ok "backtraces match gdb -p"
else
	not_ok "backtraces match gdb -p"
	diff "$tmp/f.live" "$tmp/f.core" | diag
fi
gdb -batch -ex 'bt' "$target" "$out" >"$tmp/bt1" 2>&1
check "gdb's current thread is the main thread" \
	grep -q 'kc_command_loop' "$tmp/bt1"

# --- eu-stack ---
eu-stack --core "$out" --executable "$target" >"$tmp/eu" 2>&1
check "eu-stack unwinds every thread" \
	[ "$(grep -c '^TID' "$tmp/eu")" = 4 ]
check "eu-stack shows the worker frames" grep -q kc_worker_outer "$tmp/eu"

# --- AMX-sized XSTATE notes (issue 19 item 9): gdb 13 warns about the
# 11008-byte .reg-xstate sections of a CPU with AMX, as on the kernel's
# own cores; eu-stack and drgn read such a core as they read ours.  On a
# CPU without AMX xstate-amx.py grows the notes to that size; on a CPU with
# AMX they already have it (exit 3) and the core's own notes are checked:
# the file decides, never the CPU. ---
# amx_core IN OUT: print the AMX-sized core to check (OUT when grown, IN
# when its notes already are AMX-sized); fail with the script's message.
amx_core()
{
	local rc=0
	/usr/bin/python3 "$tools/xstate-amx.py" "$1" "$2" >"$tmp/amx.msg" 2>&1 ||
		rc=$?
	case $rc in
	0) echo "$2" ;;
	3) echo "$1" ;;
	*) return 1 ;;
	esac
}
if amx=$(amx_core "$out" "$tmp/amx.core"); then
	if [ "$amx" = "$out" ]; then
		echo "# the notes already are AMX-sized: $(cat "$tmp/amx.msg")"
	fi
	# The path a CPU with AMX takes, on any CPU: a core whose notes are
	# AMX-sized is checked as it is.
	if [ "$amx" = "$out" ]; then
		again=$(amx_core "$out" "$tmp/amx2.core")
	else
		again=$(amx_core "$tmp/amx.core" "$tmp/amx2.core")
	fi
	check "xstate-amx.py leaves AMX-sized notes as they are (exit 3; $(head -c 120 "$tmp/amx.msg"))" \
		[ "$again" = "$amx" -a ! -e "$tmp/amx2.core" ]
	gdb -batch -ex 'thread apply all bt' "$target" "$amx" \
		>"$tmp/bt.amx" 2>&1
	check "gdb warns about the AMX-sized .reg-xstate (as documented)" \
		grep -q "Unexpected size of section .\.reg-xstate/" "$tmp/bt.amx"
	eu-stack --core "$amx" --executable "$target" >"$tmp/eu.amx" 2>&1
	check "eu-stack: the same frames with AMX-sized XSTATE notes" \
		cmp -s <(sed 's/0x[0-9a-f]* //' "$tmp/eu") \
		<(sed 's/0x[0-9a-f]* //' "$tmp/eu.amx")
	if /usr/bin/python3 -c 'import drgn' 2>/dev/null; then
		/usr/bin/python3 "$tools/drgn-bt.py" "$out" "$target" \
			>"$tmp/drgn.plain" 2>&1
		/usr/bin/python3 "$tools/drgn-bt.py" "$amx" "$target" \
			>"$tmp/drgn.amx" 2>&1
		if [ "$(grep -c kc_ "$tmp/drgn.plain")" = 4 ] &&
			cmp -s "$tmp/drgn.plain" "$tmp/drgn.amx"; then
			ok "drgn: 4 threads, the same stack traces with AMX-sized notes"
		else
			not_ok "drgn with AMX-sized notes"
			diff "$tmp/drgn.plain" "$tmp/drgn.amx" | diag
		fi
	else
		skip "drgn with AMX-sized notes: python3-drgn not installed"
	fi
else
	not_ok "xstate-amx.py: AMX-sized XSTATE notes ($(head -c 200 "$tmp/amx.msg"))"
fi

# --- known content through gdb ---
# kc_pattern_word() of tests/common/pattern.h, for gdb's x/1gx.
expect()
{
	/usr/bin/python3 -c '
import sys
M = (1 << 64) - 1
addr, seed = int(sys.argv[1], 0), int(sys.argv[2])
x = (addr & ~7) ^ ((seed * 0x9e3779b97f4a7c15) & M)
x ^= x >> 31
x = (x * 0xbf58476d1ce4e5b9) & M
x ^= x >> 27
print("0x%016x" % (x | 1))
' "$1" "$2"
}
dense=$(field dense "$ready")
sparse=$(field sparse "$ready")
sparse_size=$(field sparse_size "$ready")
stack=$(field stack "$ready")
addrs=() seeds=()
for off in 0 $((4096 * 7 + 8)) $((128 << 20)) $(((256 << 20) - 8)); do
	addrs+=("$(printf '0x%x' $((dense + off)))")
	seeds+=(1)
done
step=$((sparse_size / 16))
for i in 0 5 15; do
	addrs+=("$(printf '0x%x' $((sparse + i * step + 64)))")
	seeds+=(2)
done
addrs+=("$(printf '0x%x' $((stack + 256)))")
seeds+=(3)
args=()
for a in "${addrs[@]}"; do args+=(-ex "x/1gx $a"); done
gdb -batch "${args[@]}" "$target" "$out" >"$tmp/x" 2>&1
for k in "${!addrs[@]}"; do
	a=${addrs[$k]}
	want=$(expect "$a" "${seeds[$k]}")
	got=$(grep -i "^${a}" "$tmp/x" | awk '{print $NF}' | head -1)
	check "content at $a (seed ${seeds[$k]}) is $want" [ "$got" = "$want" ]
done
# An untouched page of the sparse area reads as zeros.
gdb -batch -ex "x/1gx $(printf '0x%x' $((sparse + step / 2)))" \
	"$target" "$out" >"$tmp/x0" 2>&1
check "untouched sparse page reads as zeros" \
	grep -q '0x0000000000000000' "$tmp/x0"

# --- info on the core ---
"$kcoredump" info --json --no-modules "$out" >"$tmp/info.json" 2>&1
check "info: a process core of 4 threads with our pid" \
	[ "$(jq -r '.source.kind, .source.process.threads, .source.process.pid' \
		"$tmp/info.json" | tr '\n' ' ')" = "process-core 4 $pid " ]

# --- a small target: .zst output, --stop, filters ---
start small --dense 4 --sparse 1 --touched 4 --threads 1
spid=$pid
"$kcoredump" pid "$spid" -o "$tmp/small.zst" -q
check "zst core written" [ -s "$tmp/small.zst" ]
check "zst core verifies" "$kcoredump" verify "$tmp/small.zst" -q
check "zst core: the headers and notes are compressed ($(first_frame "$tmp/small.zst"))" \
	compressed_headers "$tmp/small.zst"
zstd -q -d "$tmp/small.zst" -o "$tmp/small.core"
gdb -batch -ex 'thread apply all bt' "$target" "$tmp/small.core" \
	>"$tmp/bt.small" 2>&1
check "gdb reads the decompressed .zst core" \
	grep -q kc_worker_outer "$tmp/bt.small"
# info lists the same modules and build IDs for the .zst and .xz cores as
# for the plain one (issue 19 item 7: "Modules (0, via libdwfl)" before).
"$kcoredump" pid "$spid" -o "$tmp/small.xz" -q
check "xz core: the headers and notes are compressed ($(first_frame "$tmp/small.xz"))" \
	compressed_headers "$tmp/small.xz"
mods()
{
	"$kcoredump" info --json "$1" |
		jq -c '[.modules[] | [.name, .start, .end, .build_id]]'
}
mods "$tmp/small.core" >"$tmp/mods.plain"
for z in zst xz; do
	mods "$tmp/small.$z" >"$tmp/mods.$z"
	if [ "$(jq length "$tmp/mods.plain")" -ge 3 ] &&
		cmp -s "$tmp/mods.plain" "$tmp/mods.$z"; then
		ok "info on the .$z core: the plain core's $(jq length "$tmp/mods.plain") modules and build IDs"
	else
		not_ok "info on the .$z core: $(cat "$tmp/mods.$z") vs $(cat "$tmp/mods.plain")"
	fi
done

"$kcoredump" pid "$spid" -o "$tmp/nohash.core" --hash none --json \
	>"$tmp/nohash.json"
check "--hash none: no digest in the summary" \
	[ "$(jq -r .segment_digest_root "$tmp/nohash.json")" = null ]
gdb -batch -ex 'thread apply all bt' "$target" "$tmp/nohash.core" \
	>"$tmp/bt.nohash" 2>&1
check "--hash none: gdb reads the core" grep -q kc_worker_outer "$tmp/bt.nohash"
"$kcoredump" pid "$spid" -o "$tmp/stop.core" --stop --json >"$tmp/stop.json"
check "--stop: kept stopped during the copy" \
	[ "$(jq -r .process.kept_stopped "$tmp/stop.json")" = true ]
check "--stop: the stop covers the copy" \
	/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if d["process"]["stop_seconds"] >= d["stats"]["seconds"] * 0.5
         else 1)' "$tmp/stop.json"
state=$(awk '{print $3}' "/proc/$spid/stat")
check "--stop: runs again afterwards (state $state)" [ "$state" != t -a "$state" != T ]

"$kcoredump" pid "$spid" -n --json >"$tmp/dry.json"
check "default filter: libc text is not dumped" \
	[ "$(jq '[.process.mappings[] | select((.name // "") | test("libc")) |
		select(.perms == "r-xp") | .dump_size] | add' \
		"$tmp/dry.json")" = 0 ]
check "default filter: ELF header page of the executable" \
	[ "$(jq '[.process.mappings[] | select(.reason == "elf-header")] |
		length' "$tmp/dry.json")" -ge 2 ]
"$kcoredump" pid "$spid" -n --json --filter 0 >"$tmp/f0.json"
check "--filter 0: only the special mappings are dumped" \
	[ "$(jq -r '[.process.mappings[] | select(.dump_size > 0) |
		.reason] | unique | join(",")' "$tmp/f0.json")" = special ]
"$kcoredump" pid "$spid" -n --json --all-mappings >"$tmp/all.json"
check "--all-mappings: libc text dumped whole" \
	[ "$(jq -r '[.process.mappings[] | select((.name // "") | test("libc")) |
		select(.perms == "r-xp") | .reason] | unique | join(",")' \
		"$tmp/all.json")" = all-mappings ]
# Only libc's mappings: under ASan the shadow (MADV_DONTDUMP, 16 TiB and
# more) would exceed the file system's largest file.
"$kcoredump" pid "$spid" -o "$tmp/all.core" --all-mappings \
	--mapping '*libc.so*' -q
# shellcheck disable=SC2016 # $pc is gdb's
gdb -batch -ex 'x/i $pc' "$target" "$tmp/all.core" >"$tmp/xi" 2>&1
check "--all-mappings core: gdb disassembles libc's text at the pc" \
	grep -qE '=> 0x[0-9a-f]+.*:\s+[a-z]' "$tmp/xi"

# --- the copy path (issue 40): a process dumped to a file goes the way a
# regular file does, one thread copying 1 MiB blocks with the file's
# SHA-256 beside it; KCOREDUMP_COPY_PATH=0 takes the block pipeline.  On
# a quiet target (threads parked, no rseq area the kernel rewrites as
# they resume), the two write the same bytes but for the notes and the
# trailer (times), and each prints the SHA-256 sha256sum computes. ---
GLIBC_TUNABLES=glibc.pthread.rseq=0 start quiet --dense 64 --sparse 0 \
	--touched 0 --threads 2
qpid=$pid
for h in default none; do
	hargs=()
	[ $h = none ] && hargs=(--hash none)
	KCOREDUMP_COPY_PATH=0 "$kcoredump" pid "$qpid" -o "$tmp/q-ring.$h" \
		--json "${hargs[@]}" >"$tmp/q-ring.$h.json" 2>"$tmp/q.err"
	"$kcoredump" pid "$qpid" -o "$tmp/q-copy.$h" --json "${hargs[@]}" \
		>"$tmp/q-copy.$h.json" 2>>"$tmp/q.err"
	if /usr/bin/python3 "$tools/core-bytes.py" --trailer \
		"$tmp/q-ring.$h" "$tmp/q-copy.$h" >"$tmp/q.cmp" 2>&1; then
		ok "hash $h: the copy path's core is the pipeline's ($(tail -1 "$tmp/q.cmp"))"
	else
		not_ok "hash $h: the copy path's core differs from the pipeline's"
		diag "$tmp/q.cmp"
		diag "$tmp/q.err"
	fi
done
for p in ring copy; do
	got=$(jq -r .file_sha256 "$tmp/q-$p.default.json" 2>/dev/null)
	want=$(sha256sum "$tmp/q-$p.default" 2>/dev/null | cut -d' ' -f1)
	check "$p: the printed file SHA-256 is sha256sum's ($got)" \
		[ -n "$want" -a "$got" = "$want" ]
done

# --- against a core the kernel writes of the same process ---
# Only where core_pattern names a plain file (no pipe handler): the target
# dumps into its own directory, which is ours.
pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null)
if [ -n "$pattern" ] && [ "${pattern#|}" = "$pattern" ] &&
	[ "${pattern#/}" = "$pattern" ]; then
	mkdir "$tmp/kc"
	mkfifo "$tmp/kc.in"
	(
		# No rseq: the kernel rewrites a thread's rseq area (cpu_id,
		# mm_cid) when it resumes on another CPU, as after our stop.
		cd "$tmp/kc" && ulimit -c unlimited &&
			GLIBC_TUNABLES=glibc.pthread.rseq=0 \
			exec "$target" --dense 2 --sparse 1 --touched 4 \
				--threads 2 <"$tmp/kc.in" >"$tmp/kc.out"
	) &
	kpid=$!
	pids+=("$kpid")
	# shellcheck disable=SC2034 # held open: the target sees no EOF
	exec {kfd}>"$tmp/kc.in"
	for _ in $(seq 100); do
		grep -q '^ready' "$tmp/kc.out" 2>/dev/null && break
		sleep 0.1
	done
	sleep 0.5
	check "dump of the process the kernel will dump" \
		"$kcoredump" pid "$kpid" -o "$tmp/ours.core" -q
	kill -SEGV "$kpid"
	wait "$kpid" 2>/dev/null
	kcore=$(find "$tmp/kc" -maxdepth 1 -name 'core*' -type f | head -1)
	if [ -z "$kcore" ]; then
		skip "kernel core comparison: the kernel wrote no core ($pattern)"
	else
		eu-readelf -n "$kcore" | grep -E '^  (CORE|LINUX) ' |
			grep -v SIGINFO >"$tmp/kn"
		eu-readelf -n "$tmp/ours.core" | grep -E '^  (CORE|LINUX) ' \
			>"$tmp/on"
		if cmp -s "$tmp/kn" "$tmp/on"; then
			ok "notes as the kernel's (names, types, sizes, order; no SIGINFO)"
		else
			not_ok "notes as the kernel's"
			diff "$tmp/kn" "$tmp/on" | diag
		fi
		/usr/bin/python3 "$tools/core-compare.py" "$kcore" "$tmp/ours.core" \
			>"$tmp/cmp" 2>&1
		check "same segments and byte-identical content as the kernel's core" \
			[ $? -eq 0 ]
		diag "$tmp/cmp"
	fi
else
	skip "kernel core comparison: core_pattern is '$pattern'"
fi

# --- no ptrace permission: the message speaks of ptrace (issue 19 item
# 8), as an unprivileged user against a process of root's ---
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
	setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$kcoredump"; then
	sleep 60 &
	rootpid=$!
	pids+=("$rootpid")
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$kcoredump" pid "$rootpid" -o - >/dev/null 2>"$tmp/perm.err"
	rc=$?
	check "unprivileged against root's process: exit 5 (got $rc)" [ $rc -eq 5 ]
	check "the message speaks of ptrace: $(head -1 "$tmp/perm.err")" \
		grep -q 'ptrace' "$tmp/perm.err"
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$kcoredump" pid "$rootpid" -n --json >"$tmp/perm.json" 2>/dev/null
	check "JSON: kind access, exit_status 5" \
		[ "$(jq -r '.error.kind, .error.exit_status' "$tmp/perm.json" |
			tr '\n' ' ')" = "access 5 " ]
	kill "$rootpid" 2>/dev/null
else
	skip "ptrace permission: needs root and setpriv"
fi

# --- --format: elf only (issue 19 item 6) ---
"$kcoredump" pid "$spid" --format elf -o "$tmp/fmt.core" -q
check "--format elf writes a core" [ $? -eq 0 -a -s "$tmp/fmt.core" ]
for f in kdump lime avml; do
	"$kcoredump" pid "$spid" --format $f -o "$tmp/fmt.$f" 2>"$tmp/fmt.err"
	rc=$?
	if [ $rc -eq 2 ] && [ ! -e "$tmp/fmt.$f" ] &&
		grep -qE 'page frame|physical' "$tmp/fmt.err"; then
		ok "--format $f refused with a reason"
	else
		not_ok "--format $f: exit $rc, $(head -1 "$tmp/fmt.err")"
	fi
done

# --- a target that does not exist or is gone: exit 6, however it goes
# (issue 19 item 2) ---
"$kcoredump" pid 999999999 -o "$tmp/none.core" 2>"$tmp/none.err"
check "a missing pid exits 6" [ $? -eq 6 ]
"$kcoredump" pid 2 -o "$tmp/kt.core" 2>"$tmp/kt.err"
rc=$?
check "a kernel thread is refused (exit $rc)" [ $rc -eq 4 -o $rc -eq 6 ]
finish
