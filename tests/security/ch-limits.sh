#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 15 item 4: the store's limits hold under a flood.  Eight handlers
# started at once with --max-use 3M used to store 18 MB (each looked at
# the store once, at its start).  Now they reserve under the store lock
# before they write and check again before they publish: the store stays
# within 3 MiB, every core there has its metadata.  Orphans (a temporary
# file nobody writes, a core without metadata) are counted and removed;
# at most --max-handlers handlers store at once, the others store nothing,
# say why and exit 0; without --max-use/--keep-free the handler applies
# systemd-coredump's defaults.
#   ch-limits.sh KCOREDUMP MKCORE SPECDIR
set -uo pipefail
kcoredump=$1 mkcore=$2 specdir=$3
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# A process core with 2 MiB of data (random: nothing compresses away).
{
	cat "$specdir/process-x86_64.spec"
	printf 'load vaddr=0x7e0000000000 flags=rw\n\tdata 2M random=7\nend\n'
} > "$tmp/big.spec"
"$mkcore" "$tmp/big.spec" "$tmp/big.core" >/dev/null || { not_ok "mkcore"; finish; }
used() { # DIR: bytes the cores and metadata take, subdirectories too
	find "$1" -name 'core.*' -type f -printf '%b\n' | awk '{ s += $1 * 512 } END { print s + 0 }'
}

# --- eight at once -----------------------------------------------------------
d=$(newstore flood)
limit=$((3 << 20))
pids=()
for i in 1 2 3 4 5 6 7 8; do
	handler "$d" --max-use 3M 4242 1000 1000 6 $((1700000000 + i)) crashme \
		< "$tmp/big.core" 2>"$tmp/flood.$i" &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
u=$(used "$d")
check "eight handlers at once: all exit 0 ($rc)" [ "$rc" -eq 0 ]
check "eight handlers at once with --max-use 3M: the store takes $u bytes <= $limit" [ "$u" -le "$limit" ]
cores=$(find "$d" -name 'core.*' ! -name '*.json' -type f | wc -l)
metas=$(find "$d" -name 'core.*.json' -type f | wc -l)
check "every core there has its metadata ($cores cores, $metas metadata)" [ "$cores" -le "$metas" -a "$cores" -ge 1 ]
check "no temporary file left" bash -c "[ -z \"\$(find '$d' -name '.core.*')\" ]"

# --- orphans -----------------------------------------------------------------
d=$(newstore orphans)
head -c 1M /dev/urandom > "$d/.core.lost.json.Ab3dEf9h" # a writer that died
head -c 1M /dev/urandom > "$d/core.nometa.1000.1.1"      # no metadata
handler "$d" --max-use 1G 4242 1000 1000 6 1700000100 crashme < "$tmp/big.core" 2>"$tmp/err"
check "an abandoned temporary file is removed" [ ! -e "$d/.core.lost.json.Ab3dEf9h" ]
check "a core without metadata is removed" [ ! -e "$d/core.nometa.1000.1.1" ]
check "... and both are logged" bash -c "[ \"\$(grep -c 'removed the orphaned' '$tmp/err')\" = 2 ]"
check "the new core is stored" [ -s "$d/core.crashme.1000.4242.1700000100" ]

# --- at most N at once -------------------------------------------------------
d=$(newstore slots)
mkfifo "$tmp/in1" "$tmp/in2"
for i in 1 2; do
	handler "$d" --max-handlers 2 --timeout 30 4242 1000 1000 6 $((1700000200 + i)) crashme \
		< "$tmp/in$i" 2>/dev/null &
	eval "h$i=\$!"
	eval "exec $((i + 3))>\"\$tmp/in$i\""
	head -c 4096 "$tmp/big.core" >&$((i + 3))
done
for _ in $(seq 100); do
	[ "$(find "$d" -name '.kcoredump.slot.*' | wc -l)" -ge 2 ] && break
	sleep 0.1
done
sleep 0.5
t0=$(date +%s%N)
handler "$d" --max-handlers 2 4242 1000 1000 6 1700000203 third < "$tmp/big.core" 2>"$tmp/err"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
check "a third handler with --max-handlers 2: exit 0 at once ($rc, $ms ms)" [ "$rc" -eq 0 -a "$ms" -lt 5000 ]
check "... stores nothing" bash -c "[ -z \"\$(find '$d' -name 'core.third*')\" ]"
check "... and says why" grep -q "not storing the core of pid 4242 (third): every handler slot is taken" "$tmp/err"
for i in 1 2; do
	tail -c +4097 "$tmp/big.core" >&$((i + 3))
	eval "exec $((i + 3))>&-"
done
wait "$h1" "$h2"
check "the two that had slots stored their cores" \
	[ -s "$d/core.crashme.1000.4242.1700000201" -a -s "$d/core.crashme.1000.4242.1700000202" ]

# --- systemd-coredump's defaults -----------------------------------------------
d=$(newstore defaults)
handler "$d" 4242 1000 1000 6 1700000300 crashme < "$tmp/big.core" 2>/dev/null
read -r fs < <(df -B1 --output=size "$d" | tail -n 1)
mu=$((fs / 10 / 4096 * 4096)); [ "$mu" -gt $((4 << 30)) ] && mu=$((4 << 30))
kf=$((fs * 3 / 20 / 4096 * 4096)); [ "$kf" -gt $((4 << 30)) ] && kf=$((4 << 30))
check "no --max-use/--keep-free: 10% and 15% of the file system, at most 4 GiB ($mu, $kf)" \
	quiet jq -e --argjson mu "$mu" --argjson kf "$kf" \
	'.limits.max_use == $mu and .limits.keep_free == $kf and .limits.max_handlers == 16' \
	"$d/core.crashme.1000.4242.1700000300.json"
finish
