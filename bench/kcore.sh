#!/bin/bash
# SPDX-License-Identifier: MIT
# /proc/kcore read benchmarks in the VM rig (tests/vm: Debian's 6.12 kernel
# under QEMU), side by side in one boot, over the RAM segments:
#   pread:  a plain 1 MiB pread loop (tests/vm/helpers/kpread.c --bench)
#   bench raw/zero/dump: `kcoredump bench --classes ram --block-size 1M`,
#           1 and 2 threads: preads only; + zero pages and SHA-256; the
#           whole dump pipeline to /dev/null
#   dump:   `kcoredump dump --segments ram -o /dev/null`
# Usage: bench/kcore.sh [BUILD_DIR]   (writes bench/results/kcore.{md,json})
# Environment: REPS (repetitions in one boot, default 3; the table shows
# medians), MEM (guest RAM, default 1G), LIMIT_MIB (bytes per
# measurement, default all of RAM), RUN_ARGS (more tests/vm/run.sh options,
# e.g. "--kernel bzImage" for a patched kernel).
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
K=$build/kcoredump
mem=${MEM:-1G}
limit_mib=${LIMIT_MIB:-0}
reps=${REPS:-3}
out=$here/results
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

cat > "$work/kcore-bench.sh" << GUEST
#!/bin/sh
# Guest part of bench/kcore.sh.
set -eu
limit_mib=$limit_mib
reps=$reps
GUEST
cat >> "$work/kcore-bench.sh" << 'GUEST'
up() { cut -d' ' -f1 /proc/uptime; }
uname -r > "$OUT/uname-r"
nproc > "$OUT/nproc"
i=1
while [ "$i" -le "$reps" ]; do
	if [ "$limit_mib" -gt 0 ]; then
		kpread --bench --max-mib "$limit_mib" > "$OUT/pread.$i"
		limit=${limit_mib}M
	else
		kpread --bench > "$OUT/pread.$i"
		limit=$(awk '$1 == "bytes" { print $2 }' "$OUT/pread.$i")
	fi
	cat "$OUT/pread.$i"
	"$KCOREDUMP" bench --json --no-progress --classes ram --block-size 1M \
		--threads 1,2 --limit "$limit" --time 600 > "$OUT/bench.$i.json"
	"$KCOREDUMP" dump --segments ram -o /dev/null --special-output --json > "$OUT/dump.$i.json"
	"$KCOREDUMP" dump --segments ram --hash none -o /dev/null --special-output --json > "$OUT/dumpn.$i.json"
	i=$((i + 1))
done
GUEST

res=$work/results
# shellcheck disable=SC2086 # RUN_ARGS is a list of options
"$here/../tests/vm/run.sh" --kcoredump "$K" --mem "$mem" --timeout 1200 \
	--results "$res" --no-host-check ${RUN_ARGS:-} "$work/kcore-bench.sh"

# One row list per repetition, then the median of each row's seconds.
for ((i = 1; i <= reps; i++)); do
	jq -n --argjson pb "$(awk '$1 == "bytes" { print $2 }' "$res/pread.$i")" \
		--argjson ps "$(awk '$1 == "seconds" { print $2 }' "$res/pread.$i")" \
		--slurpfile bench "$res/bench.$i.json" --slurpfile dump "$res/dump.$i.json" \
		--slurpfile dumpn "$res/dumpn.$i.json" '
		def row(name; bytes; secs): { name: name, bytes: bytes, seconds: secs };
		[row("pread loop, 1 MiB (kpread --bench)"; $pb; $ps)] +
		[$bench[0].runs[] |
		 row("kcoredump bench \(.mode), 1 MiB, \(.threads) thread\(if .threads > 1 then "s" else "" end)";
		     .bytes; .seconds)] +
		[row("kcoredump dump --segments ram -o /dev/null";
		     $dump[0].stats.bytes_read; $dump[0].stats.seconds)] +
		[row("kcoredump dump --segments ram --hash none -o /dev/null";
		     $dumpn[0].stats.bytes_read; $dumpn[0].stats.seconds)]'
done > "$work/rows.json"
jq -s --arg kernel "$(cat "$res/uname-r")" --arg mem "$mem" \
	--argjson cpus "$(cat "$res/nproc")" --argjson reps "$reps" \
	--slurpfile bench "$res/bench.1.json" --slurpfile dump "$res/dump.1.json" '
	def median: sort | .[(length - 1) / 2 | floor];
	. as $all |
	{ kernel: $kernel, mem: $mem, cpus: $cpus, reps: $reps,
	  rows: [range(0; $all[0] | length) as $k |
		 ($all | map(.[$k])) as $r |
		 { name: $r[0].name, bytes: $r[0].bytes,
		   seconds: ($r | map(.seconds) | median),
		   all_seconds: ($r | map(.seconds)) } |
		 .mb_per_s = (if .seconds > 0 then .bytes / .seconds / 1e6 else 0 end)],
	  bench: $bench[0], dump: $dump[0] }' "$work/rows.json" > "$out/kcore.json"

{
	echo "# /proc/kcore RAM read throughput"
	echo
	jq -r '"Linux \(.kernel), QEMU guest with \(.mem) RAM and \(.cpus) vCPUs (tests/vm rig), \(.bench.holes.ram_bytes / 1048576 | floor) MiB of RAM segments; medians of \(.reps) runs in one boot."' "$out/kcore.json"
	echo
	echo "| method | bytes | seconds | MB/s | vs pread |"
	echo "|---|---:|---:|---:|---:|"
	jq -r '(.rows[0].mb_per_s) as $base | .rows[] |
		"| \(.name) | \(.bytes) | \(.seconds * 1000 | round / 1000) | \(.mb_per_s * 10 | round / 10) | \(if $base > 0 then (.mb_per_s / $base * 100 | round / 100) else "-" end)x |"' \
		"$out/kcore.json"
	echo
	echo "bench modes: raw = preads only; zero = preads + zero-page detection + SHA-256 per 1 MiB (what dump does per block); dump = the whole dump pipeline on the sampled blocks to /dev/null (its threads are worker threads; it reads on one)."
} > "$out/kcore.md"
cat "$out/kcore.md"
