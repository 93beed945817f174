#!/bin/bash
# SPDX-License-Identifier: MIT
# kcoredump core-handler on the kernel's pipe stream (the core-handler VM
# case: crash-sparse = GIB GiB NORESERVE with 4 touched pages, once as
# installed and once with --no-pagemap (at most 8 GiB), crash-dense =
# 10 MiB of data and 3 threads), and on the host with a synthetic sparse
# stream written by cat(1): stored vs stream size, and the handler's CPU
# time per GiB of stream against the wall time the writer needs for it and
# against a splice(2) drain's CPU (the least any pipe reader spends).
# Usage: [GIB=64] bench/core-handler.sh [BUILD_DIR] [VM_RESULTS]
#   VM_RESULTS: an existing results dir of the core-handler VM case
#   (else the case is run with GIB, default 64: under TCG that takes long).
#   Writes bench/results/core-handler.{md,json}.
# Or: [CRASH_GIB=16] bench/core-handler.sh --host-crash [BUILD_DIR]
#   (root): real crash-sparse crashes of CRASH_GIB GiB on this machine's
#   kernel, one run: CRASH_MODES (default "file pipe socket socket-wmem")
#   among file (a plain core file), pipe (the handler, core_pattern |),
#   socket (a --socket listener, @@, Linux 6.17), socket-nopm (that with
#   --no-pagemap: every zero read) and socket-wmem (the socket with
#   net.core.wmem_default set to SOCKET_WMEM, default 4 MiB, for the
#   crash, then restored: the send buffer of the kernel's end of the
#   socket).  Each row has the dying task's CPU, sleep, runqueue time and
#   blocks (/usr/bin/time, /proc/PID/schedstat) besides the handler's CPU.
#   Then, unless CRASH_PROFILE_GIB=0 (default 4) or without perf, one
#   crash of that size each through the pipe and the socket under
#   `perf record -a -g`: where the dying task's and the handler's CPU goes.
#   Last, without a crash or the lock, tests/tools/zero-stream sends
#   ZERO_MIB (default 1024) MiB of zeros through a pipe and a socket by
#   write size: what writing the holes otherwise would cost.
#   Replaces the host-crash section of core-handler.md and writes
#   core-handler-crash.json.
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors
here=$(cd "$(dirname "$0")" && pwd)
host_crash=
if [[ ${1:-} == --host-crash ]]; then
	host_crash=1
	shift
fi
build=$(cd "${1:-$here/../build}" && pwd)
vm=${2:-}
K=$build/kcoredump
work=${BENCH_DIR:-/dev/shm/kcoredump-bench-ch}
out=$here/results
mkdir -p "$work" "$out"
trap 'rm -rf "$work"' EXIT

gib() { echo "scale=6; $1 / 1073741824" | bc -l; }
f() { printf '%.*f' "$1" "$2"; }

# watch_sched PID-FILE OUT: wait for the crash's pid in PID-FILE (its desc),
# then keep the last /proc/PID/schedstat line (ns on a CPU, ns runnable
# but waiting for one) in OUT until the process is gone.  Sleeps by
# read -t, no fork per sample.
watch_sched() {
	local p='' line fd i
	exec {fd}<> <(:)
	for ((i = 0; i < 30000; i++)); do
		p=$(awk '$1 == "pid" { print $2 }' "$1" 2>/dev/null) && [ -n "$p" ] && break
		read -r -t 0.002 -u "$fd" _ || :
	done
	[ -n "$p" ] || return 0
	while read -r line 2>/dev/null </proc/"$p"/schedstat; do
		echo "$line" >"$2"
		read -r -t 0.01 -u "$fd" _ || :
	done
}

# crash_profile MODE PERF-DATA CRASH-PID: for the dying task and the
# handler (the kcoredump process with the most samples), the share of its
# samples whose call chain holds each of the kernel functions that tell
# where a page of zeros goes, one line each.
crash_profile() {
	local mode=$1 data=$2 cpid=$3 hpid task pid syms
	perf script -i "$data" -F pid,comm,ip,sym 2>/dev/null >"$data.txt" || return 0
	hpid=$(awk '/^[^\t]/ && ($1 == "kcoredump" || $1 == "k") { n[$NF]++ }
		END { for (p in n) print n[p], p }' "$data.txt" | sort -n | tail -1 | cut -d' ' -f2)
	for task in crash handler; do
		pid=$cpid
		syms="dump_user_range get_dump_page __kernel_write unix_stream_sendmsg anon_pipe_write alloc_skb_with_frags copy_page_from_iter sock_def_readable __wake_up_sync_key"
		if [[ $task == handler ]]; then
			pid=$hpid
			syms="__x64_sys_splice unix_stream_read_generic consume_skb __splice_from_pipe __mem_cgroup_uncharge __x64_sys_poll __x64_sys_ioctl"
		fi
		[ -n "$pid" ] || continue
		awk -v pid="$pid" -v syms="$syms" -v mode="$mode" -v task="$task" '
			BEGIN { k = split(syms, want, " ") }
			/^[^\t]/ { cur = ($NF == pid); if (cur) { n++; delete seen } next }
			cur && /^\t/ { if (!($2 in seen)) { seen[$2] = 1; hits[$2]++ } }
			END {
				line = ""
				for (i = 1; i <= k; i++)
					if (hits[want[i]])
						line = line (line == "" ? "" : ", ") want[i] " " sprintf("%.0f%%", 100 * hits[want[i]] / n)
				printf "| %s | %s (%d ms sampled) | %s |\n", mode, task, n / 4, line
			}' "$data.txt"
	done
}

# host_crash_rows: the host-crash table (a subshell: core_pattern_setup
# holds the lock every core_pattern user shares and restores the settings
# on exit).  Each crash's own numbers do not depend on the load: dump CPU
# (the dying task's CPU time: it writes its core itself), asleep (its time
# blocked on a full pipe or socket: waiting for the handler) and blocks
# (its voluntary context switches); queued is its time runnable without a
# CPU (the load's share).
host_crash_rows() (
	# shellcheck disable=SC2034 # lib.sh's install_handler runs it
	kcoredump=$K
	sparse=$build/tests/tools/crash-sparse
	gib=${CRASH_GIB:-16}
	pgib=${CRASH_PROFILE_GIB:-4}
	# shellcheck source=../tests/integration/lib.sh
	. "$here/../tests/integration/lib.sh"
	core_pattern_setup bench-core-handler jq flock
	command -v perf >/dev/null || pgib=0
	listener=
	wmem=/proc/sys/net/core/wmem_default
	old_wmem=$(cat "$wmem")
	trap '[ -n "$listener" ] && kill "$listener" 2>/dev/null; echo "$old_wmem" >"$wmem"; core_pattern_restore' EXIT
	now() { date +%s.%N; }
	echo "| case | GiB | stream bytes | unread | stored | crash died s | stored s | x pipe | dump CPU s | asleep s | queued s | blocks | handler CPU s | dump + handler CPU s/GiB |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	pipe_s=
	runs=()
	for mode in ${CRASH_MODES:-file pipe socket socket-wmem}; do
		runs+=("$mode:$gib:")
	done
	if ((pgib > 0)); then
		for mode in pipe socket; do
			runs+=("$mode:$pgib:profile")
		done
	fi
	for run in "${runs[@]}"; do
		IFS=: read -r mode g prof <<<"$run"
		d=$tmp/$mode$prof
		mkdir -m 700 "$d"
		case $mode in
		file) printf '%s\n' "$d/core.%p" >/proc/sys/kernel/core_pattern ;;
		pipe) install_handler "$d" >&2 || exit 1 ;;
		socket*)
			sock=$tmp/$mode$prof.sock
			nopm=()
			[[ $mode == *nopm ]] && nopm=(--no-pagemap)
			# socket-wmem: the kernel's end of the socket (made at
			# the crash) with a larger send buffer, borrowed.
			[[ $mode == *wmem ]] && echo "${SOCKET_WMEM:-4194304}" >"$wmem"
			"$K" core-handler --dir "$d" --no-sync "${nopm[@]}" \
				--socket "$sock" 2>"$tmp/$mode$prof.log" &
			listener=$!
			wait_socket "$sock" || :
			printf '@@%s\n' "$sock" >/proc/sys/kernel/core_pattern
			;;
		esac
		desc=$tmp/$mode$prof.desc
		watch_sched "$desc" "$tmp/$mode$prof.sched" &
		watcher=$!
		pp=
		if [[ -n $prof ]]; then
			perf record -a -g -e cpu-clock -o "$tmp/$mode.perf" >/dev/null 2>&1 &
			pp=$!
			sleep 1
		fi
		t0=$(now)
		(cd "$tmp" && exec /usr/bin/time -f '%S %U %w' -o "$tmp/$mode$prof.time" \
			"$sparse" "$desc" "$g") >/dev/null 2>&1 || :
		t1=$(now)
		pid=$(awk '$1 == "pid" { print $2 }' "$desc")
		died=$(echo "$t1 - $t0" | bc -l)
		m=
		if [[ $mode != file ]]; then
			for ((i = 0; i < 12000; i++)); do
				for m in "$d"/core.*."$pid".*.json; do
					[ -f "$m" ] && break 2
				done
				m=
				sleep 0.05
			done
			[ -n "$m" ] || { echo "$mode: nothing stored" >&2; exit 1; }
		fi
		stored=$(echo "$(now) - $t0" | bc -l)
		[[ -n $pp ]] && { kill -INT "$pp"; wait "$pp" || :; }
		wait "$watcher" || :
		[[ -n $listener ]] && { kill "$listener"; wait "$listener" 2>/dev/null; listener=; }
		echo "$old_wmem" >"$wmem"
		printf '%s\n' "$old_pattern" >/proc/sys/kernel/core_pattern
		if [[ -n $prof ]]; then
			crash_profile "$mode" "$tmp/$mode.perf" "$pid" >>"$work/profile.md"
			continue
		fi
		read -r ws wu wblocks < <(tail -1 "$tmp/$mode.time")
		read -r run_ns queue_ns _ <"$tmp/$mode.sched" || run_ns=0 queue_ns=0
		wcpu=$(echo "$ws + $wu" | bc -l)
		queued=$(echo "$queue_ns / 1000000000" | bc -l)
		asleep=$(echo "$died - $run_ns / 1000000000 - $queued" | bc -l)
		common="$(f 2 "$wcpu") | $(f 2 "$asleep") | $(f 2 "$queued") | $wblocks"
		if [[ $mode == file ]]; then
			core=$d/core.$pid
			echo "| kernel core file | $gib | $(stat -c %s "$core") | - | $(( $(stat -c '%b * %B' "$core") )) | $(f 2 "$died") | $(f 2 "$died") | - | $common | - | $(f 3 "$(echo "$wcpu / $gib" | bc -l)") |"
			echo "{\"case\": \"file\", \"gib\": $gib, \"died_s\": $died, \"dump_cpu_s\": $wcpu, \"asleep_s\": $asleep, \"queued_s\": $queued, \"blocks\": $wblocks}" >>"$work/crash.json"
			continue
		fi
		[[ $mode == pipe ]] && pipe_s=$stored
		cpu=$(jq '.cpu_user_seconds + .cpu_system_seconds' "$m")
		label=$(jq -r '.received.via + (if .pagemap.used then ", page tables used" else ", every byte read (" + .pagemap.why_not + ")" end)' "$m")
		[[ $mode == *wmem ]] && label+=", kernel socket's wmem_default ${SOCKET_WMEM:-4194304}"
		echo "| handler via $label | $gib | $(jq .stream_bytes "$m") | $(jq .pagemap.unread_bytes "$m") | $(jq .allocated_bytes "$m") | $(f 2 "$died") | $(f 2 "$stored") | $([[ -n $pipe_s ]] && f 2 "$(echo "$stored / $pipe_s" | bc -l)" || echo -) | $common | $(f 2 "$cpu") | $(f 3 "$(echo "($wcpu + $cpu) / $gib" | bc -l)") |"
		echo "{\"case\": \"$mode\", \"via\": $(jq .received.via "$m"), \"gib\": $gib, \"stream_bytes\": $(jq .stream_bytes "$m"), \"unread_bytes\": $(jq .pagemap.unread_bytes "$m"), \"died_s\": $died, \"stored_s\": $stored, \"dump_cpu_s\": $wcpu, \"asleep_s\": $asleep, \"queued_s\": $queued, \"blocks\": $wblocks, \"handler_cpu_s\": $cpu}" >>"$work/crash.json"
	done
)

if [[ -n $host_crash ]]; then
	load0=$(cut -d' ' -f1-3 /proc/loadavg)
	old_wmem_default=$(cat /proc/sys/net/core/wmem_default)
	rows=$(host_crash_rows)
	# The same zeros without a crash (no core_pattern, no lock): by
	# write size, what a kernel that wrote its holes otherwise would pay.
	zmib=${ZERO_MIB:-1024}
	zrows=()
	for z in "pipe 4096" "pipe 65536" "pipe refs" "socket 4096" "socket 16384" "socket 65536" "socket refs"; do
		read -r kind wsz <<<"$z"
		read -r zw zr zwall zblocks zcalls < <("$build/tests/tools/zero-stream" "$kind" "$zmib" "$wsz")
		what=$wsz
		[[ $wsz == refs ]] && what="64 KiB as 16 references to the zero page"
		zrows+=("| $kind | $what | $(f 3 "$zw") | $(f 3 "$zr") | $(f 3 "$(echo "$zw + $zr" | bc -l)") | $(f 3 "$zwall") | $zblocks | $zcalls |")
		echo "{\"case\": \"zeros-$kind-$wsz\", \"mib\": $zmib, \"writer_cpu_s_per_gib\": $zw, \"reader_cpu_s_per_gib\": $zr, \"wall_s_per_gib\": $zwall, \"writer_blocks\": $zblocks, \"reader_calls\": $zcalls}" >>"$work/crash.json"
	done
	load1=$(cut -d' ' -f1-3 /proc/loadavg)
	md=$out/core-handler.md
	cj=$out/core-handler-crash.json
	jq -s . "$work/crash.json" >"$cj"
	# val CASE FIELD: that row's FIELD; per CASE FIELD: per GiB.
	val() { jq -r --arg c "$1" --arg f "$2" '.[] | select(.case == $c) | .[$f]' "$cj"; }
	per() { jq -r --arg c "$1" --arg f "$2" '.[] | select(.case == $c) | .[$f] / .gib' "$cj"; }
	row() { [ -n "$(val "$1" gib)" ]; }
	{
		sed '/^<!-- host-crash -->$/,$d' "$md"
		echo "<!-- host-crash -->"
		echo "## Real sparse crashes on this machine: pipe and socket"
		echo
		echo "Generated by bench/core-handler.sh --host-crash on $(date -u +%Y-%m-%d), Linux $(uname -r)"
		echo "($(nproc) CPUs, shared; load average $load0 at the start, $load1 at the end):"
		echo "crash-sparse of ${CRASH_GIB:-16} GiB MAP_NORESERVE with 4 touched pages, in one run.  crash"
		echo "died s: from its start until it was gone; stored s: until the handler's"
		echo "metadata was published; x pipe: stored s over the pipe row's.  The dying"
		echo "task writes its own core: dump CPU s is its CPU time, asleep s its time"
		echo "blocked on a full pipe or socket (waiting for the handler), blocks how"
		echo "often it blocked (voluntary context switches), queued s its time"
		echo "runnable without a CPU (the load's part; /proc/PID/schedstat).  These"
		echo "and the handler's CPU do not depend on the load as the wall times do."
		echo
		printf '%s\n' "$rows"
		echo
		if row pipe && row socket; then
			pw=$(per pipe dump_cpu_s) sw=$(per socket dump_cpu_s)
			ph=$(per pipe handler_cpu_s) sh=$(per socket handler_cpu_s)
			fw=
			row file && fw=", against $(f 3 "$(per file dump_cpu_s)") s for the kernel's own file (the page-table walk, no zeros written)"
			echo "Per GiB of stream, the dying task spent $(f 3 "$pw") CPU s writing its zeros into"
			echo "the pipe and $(f 3 "$sw") s into the socket ($(f 2 "$(echo "$sw / $pw" | bc -l)")x)$fw; the"
			echo "handler $(f 3 "$ph") and $(f 3 "$sh") s ($(f 2 "$(echo "$sh / $ph" | bc -l)")x).  Together"
			echo "$(f 3 "$(echo "$pw + $ph" | bc -l)") and $(f 3 "$(echo "$sw + $sh" | bc -l)") CPU s per GiB: $(f 2 "$(echo "($sw + $sh) / ($pw + $ph)" | bc -l)")x.  The writer blocked $(val pipe blocks) times on"
			echo "the 1 MiB pipe and $(val socket blocks) times on the socket (every $(($(val socket stream_bytes) / $(val socket blocks) / 1024)) KiB: the"
			echo "send buffer of the kernel's end, net.core.wmem_default $old_wmem_default),"
			echo "asleep $(f 2 "$(val socket asleep_s)") s there while the handler used $(f 2 "$(val socket handler_cpu_s)") CPU s: they take turns."
			echo "Wall times under load are mostly the wait for a CPU: the pipe's writer was"
			echo "queued $(f 2 "$(val pipe queued_s)") s of its $(f 2 "$(val pipe died_s)"), the socket's $(f 2 "$(val socket queued_s)") s of $(f 2 "$(val socket died_s)"), so x pipe says more"
			echo "about the scheduler than about the two paths; the CPU columns do not"
			echo "depend on it."
			if row socket-wmem; then
				echo "With wmem_default ${SOCKET_WMEM:-4194304} (socket-wmem) it blocked $(val socket-wmem blocks) times, but its CPU"
				echo "($(f 3 "$(per socket-wmem dump_cpu_s)") s/GiB) and the handler's ($(f 3 "$(per socket-wmem handler_cpu_s)")) stay: a larger buffer"
				echo "only makes the turns longer (asleep $(f 2 "$(val socket-wmem asleep_s)") s)."
			fi
			echo
		fi
		if [ -s "$work/profile.md" ]; then
			echo "Where the CPU goes (perf record -a -g, cpu-clock, one crash of ${CRASH_PROFILE_GIB:-4} GiB"
			echo "each, after the timed rows): the share of each task's own samples spent"
			echo "in a kernel function and what it calls."
			echo
			echo "| mode | task | inclusive share of the task's samples |"
			echo "|---|---|---|"
			cat "$work/profile.md"
			echo
		fi
		echo "The same zeros without a crash (tests/tools/zero-stream, $zmib MiB each): a"
		echo "thread writes them, the main thread reads them as the handler does"
		echo "(poll(2), splice(2) to /dev/null, from the socket through a pipe).  The"
		echo "kernel's dump writes 4096 bytes at a time; user space pays a system call"
		echo "per write that the kernel's __kernel_write() does not, so the 4096 rows"
		echo "cost more than the crashes above, but the sizes compare."
		echo
		echo "| stream | bytes per write | writer CPU s/GiB | reader CPU s/GiB | together | wall s/GiB | writer blocks | reads |"
		echo "|---|---|---:|---:|---:|---:|---:|---:|"
		printf '%s\n' "${zrows[@]}"
		echo
		cat <<'EOF'
Why: the kernel writes a hole as one __kernel_write() of a 4 KiB zero
page after another (dump_skip() on a file that cannot seek).  Into a pipe
that is a page copied into a pipe buffer; into an AF_UNIX stream socket,
unix_stream_sendmsg() builds an sk_buff for each write (a head from the
slab, a page, the socket's memory accounting, the security hooks, a
wakeup of the reader), and the reader frees each one (consume_skb(), the
page and its memory-cgroup uncharge).  That work is per page at both
ends, in the dying task and in the handler, and it is the kernel's: what
a reader does cannot make it smaller.

Checked by hand on 2026-12-06, not by this script (4 GiB crashes through
@@, and a socketpair with a thread writing 4 KiB pages, at load averages
of 8-15): splice sizes from 64 KiB to 1 MiB, a blocking splice or recv(2)
against poll(2) first, recv(2) into a buffer against splice(2) through
the pipe, and skipping poll(2) when FIONREAD shows bytes all stayed within
the noise; SO_RCVBUF on the accepted socket changes nothing (the writer
is held by its own sk_sndbuf: 180224 bytes queued, then EAGAIN, with a
16 MiB SO_RCVBUF on the reader); recv(2) with MSG_TRUNC does not drop
bytes of a stream socket (unix_stream_read_actor() copies; a NULL buffer
gets EFAULT); the handler at nice -10 took the writer's CPU time onto
itself (dump CPU 0.7 s against 1.4 s, handler 2.6-3.2 s against 1.4 s)
and was no faster; the dying task and the handler pinned to different
CPUs (taskset) blocked less often but took 54-104 s instead of 4-6 s (load
19).  Only the kernel can change what crosses the socket (issue 45, step
2): with no zeros at all, the dying task's part is the file row's; short
of that, the zero-stream rows show what writing the holes in larger
pieces (a bigger zero buffer, or references to the zero page) would save
at both ends of the socket.
EOF
	} >"$md.new"
	mv "$md.new" "$md"
	sed -n '/^<!-- host-crash -->$/,$p' "$md"
	exit 0
fi

if [[ -z $vm ]]; then
	echo "== the core-handler case in the VM rig"
	"$here/../tests/vm/run.sh" --kcoredump "$K" --results "$work/vm" \
		--timeout 7200 core-handler "${GIB:-64}" > "$work/vm.log" 2>&1 ||
		{ tail -20 "$work/vm.log"; exit 1; }
	vm=$work/vm
fi
gib_sparse=$(awk '$1 == "sparse_gib" { print $2 }' "$vm/times")
gib_nopm=$(awk '$1 == "nopm_gib" { print $2 }' "$vm/times")
read -r _ _ drain_bytes drain_wall drain_u drain_s_cpu < <(awk '$1 == "crash-sparse" && $2 == "drain"' "$vm/times")
drain_cpu_g=$(echo "($drain_u + $drain_s_cpu) / $(gib "$drain_bytes")" | bc -l)
drain_wall_g=$(echo "$drain_wall / $(gib "$drain_bytes")" | bc -l)
rows=()
json=()
for h in crash-sparse crash-sparse.nopm crash-dense; do
	m=$vm/$h.handler.json
	stat=$vm/$h.handler.stat
	fstat=$vm/${h%.nopm}.file.stat
	if [[ $h == *.nopm ]]; then
		m=$vm/$h.json
		stat=
	fi
	blocks=0 bsize=0
	[[ -n $stat ]] && read -r blocks bsize _ < "$stat"
	read -r fblocks fbsize _ < "$fstat"
	stream=$(jq .stream_bytes "$m")
	data=$(jq .data_bytes "$m")
	cpu=$(jq '.cpu_user_seconds + .cpu_system_seconds' "$m")
	el=$(jq .elapsed_seconds "$m")
	unread=$(jq .pagemap.unread_bytes "$m")
	pipe_s=$(awk -v h="$h" '$1 == h && $2 == "handler_s" { print $3 }' "$vm/times")
	file_s=$(awk -v h="$h" '$1 == h && $2 == "file_s" { print $3 }' "$vm/times")
	drain_s=$(awk -v h="$h" '$1 == h && $2 == "drain_s" { print $3 }' "$vm/times")
	[[ -n $drain_s ]] || drain_s=null
	if [[ $h == *.nopm ]]; then
		pipe_s=$(awk '$1 == "crash-sparse" && $2 == "nopm_s" { print $3 }' "$vm/times")
		file_s=null
	fi
	g=$(gib "$stream")
	cpu_g=$(echo "$cpu / $g" | bc -l)
	wall_g=$(echo "$el / $g" | bc -l)
	label=$h
	case $h in
	crash-sparse)
		label="crash-sparse ${gib_sparse} GiB"
		sparse_pipe=$pipe_s sparse_drain=$drain_s sparse_cpu_g=$cpu_g
		;;
	crash-sparse.nopm)
		label="crash-sparse ${gib_nopm} GiB, --no-pagemap"
		nopm_cpu_g=$cpu_g
		;;
	esac
	rows+=("| $label (VM, 6.12, TCG) | $stream | $unread | $data | $([[ -n $stat ]] && echo $((blocks * bsize)) || echo -) | $((fblocks * fbsize)) | $([[ $file_s == null ]] && echo - || f 2 "$file_s") | $([[ $drain_s == null ]] && echo - || f 2 "$drain_s") | $(f 2 "$pipe_s") | $(f 3 "$cpu_g") | $(f 3 "$wall_g") | $(f 2 "$(echo "$cpu / $el" | bc -l)") |")
	json+=("{\"case\": \"$h\", \"where\": \"vm\", \"stream_bytes\": $stream, \"unread_bytes\": $unread, \"data_bytes\": $data, \"stored_allocated\": $((blocks * bsize)), \"kernel_file_core_allocated\": $((fblocks * fbsize)), \"kernel_file_core_s\": $file_s, \"kernel_pipe_splice_drain_s\": $drain_s, \"crash_through_handler_s\": $pipe_s, \"handler_cpu_s\": $cpu, \"handler_wall_s\": $el}")
done
json+=("{\"case\": \"splice-drain\", \"where\": \"vm\", \"stream_bytes\": $drain_bytes, \"drain_wall_s\": $drain_wall, \"drain_cpu_s\": $(echo "$drain_u + $drain_s_cpu" | bc -l)}")

# Host: 16 GiB of zero pages (4 data pages) written into the pipe by cat.
cat > "$work/s.spec" <<'SPEC'
elf class=64 data=lsb machine=x86_64 type=core align=4096
note prpsinfo state=R fname=sparse args="./sparse" pid=7 ppid=1 pgrp=7 sid=7
load vaddr=0x7f0000000000 flags=rw
	data 8K
	hole 16G
	data 8K
end
SPEC
"$build/tests/tools/mkcore" "$work/s.spec" "$work/s.core"
mkdir -m 700 "$work/d"
/usr/bin/time -f "%U %S %e" -o "$work/cat.time" \
	bash -c "cat '$work/s.core' | '$K' core-handler --no-sync -d '$work/d' 7 0 0 6 1 sparse 2>/dev/null"
read -r cu cs ce < "$work/cat.time"
m=$(ls "$work"/d/*.json)
stream=$(jq .stream_bytes "$m")
g=$(gib "$stream")
cpu=$(jq '.cpu_user_seconds + .cpu_system_seconds' "$m")
el=$(jq .elapsed_seconds "$m")
# /usr/bin/time counts cat and the handler: the writer is the rest.
wcpu=$(echo "$cu + $cs - $cpu" | bc -l)
alloc=$(( $(stat -c %b "$work"/d/core.sparse.0.7.1) * $(stat -c %B "$work"/d/core.sparse.0.7.1) ))
rows+=("| 16 GiB zeros by cat (host; no page tables: every byte read) | $stream | $(jq .pagemap.unread_bytes "$m") | $(jq .data_bytes "$m") | $alloc | - | - | - | $(f 2 "$ce") | $(f 3 "$(echo "$cpu / $g" | bc -l)") | $(f 3 "$(echo "$el / $g" | bc -l)") | $(f 2 "$(echo "$cpu / $el" | bc -l)") |")
json+=("{\"case\": \"zeros-16g\", \"where\": \"host\", \"stream_bytes\": $stream, \"stored_allocated\": $alloc, \"writer_cpu_s\": $wcpu, \"handler_cpu_s\": $cpu, \"handler_wall_s\": $el}")

# The host-crash section (--host-crash) stays.
hostsec=$(sed -n '/^<!-- host-crash -->$/,$p' "$out/core-handler.md" 2>/dev/null || true)
ratio=$(f 2 "$(echo "$sparse_pipe / $sparse_drain" | bc -l)")
below=$(f 1 "$(echo "$drain_wall_g / $sparse_cpu_g" | bc -l)")
gain=$(f 1 "$(echo "$nopm_cpu_g / $sparse_cpu_g" | bc -l)")
{
	echo "# kcoredump core-handler"
	echo
	echo "Generated by bench/core-handler.sh on $(date -u +%Y-%m-%d) ($(nproc) CPUs, shared)."
	echo "Stream = bytes the kernel (or cat) wrote into the pipe; unread = zeros the"
	echo "handler consumed with splice(2) without reading them, where the crashing"
	echo "process's page tables had nothing; stored = allocated bytes of the stored"
	echo "sparse ELF; kernel file = allocated bytes of the same program's core"
	echo "written by the kernel to a regular file.  file s, drain s, handler s: how"
	echo "long the crashing process took to die with a plain core_pattern, with a"
	echo "pipe drained by splice(2) to /dev/null (the kernel's own pipe-writing"
	echo "time), and with the handler (for the host row: cat's and the handler's"
	echo "wall time).  CPU/GiB: the handler's user+system time per GiB of stream;"
	echo "wall/GiB: the time the stream took to arrive; CPU/wall < 1 means the"
	echo "handler waited for the writer (the kernel is the bottleneck)."
	echo
	echo "| case | stream bytes | unread | data bytes | stored | kernel file | file s | drain s | handler s | handler CPU s/GiB | wall s/GiB | CPU/wall |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	printf '%s\n' "${rows[@]}"
	echo
	echo "The kernel needs $(f 2 "$drain_wall_g") s per GiB to write the sparse stream into a pipe"
	echo "(splice drain, wall); the drain itself used $(f 3 "$drain_cpu_g") CPU s/GiB.  The"
	echo "handler used $(f 3 "$sparse_cpu_g") CPU s/GiB: ${below}x less than the kernel's"
	echo "writing time, and ${gain}x less than with --no-pagemap, where every zero"
	echo "is copied out of the pipe and looked at.  The crash through the handler"
	echo "took ${ratio}x the splice baseline."
	echo
	echo "Host writer (cat) CPU for the 16 GiB stream: $(f 2 "$wcpu") s; handler: $(f 2 "$cpu") s"
	echo "(cat is not dumping core: no page tables, the copy path)."
	if [[ -n $hostsec ]]; then
		echo
		printf '%s\n' "$hostsec"
	fi
} > "$out/core-handler.md"
(IFS=,; echo "[${json[*]}]") | jq . > "$out/core-handler.json"
cat "$out/core-handler.md"
