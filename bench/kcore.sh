#!/bin/bash
# SPDX-License-Identifier: MIT
# /proc/kcore read benchmarks in the VM rig (tests/vm: Debian's 6.12 kernel
# under QEMU), side by side in one boot.  The anchor is LiME (Debian's
# lime-forensics-dkms, built for the guest's kernel by
# tests/vm/fetch-lime.sh): the live RAM captured to a FIFO that `drain`
# (tests/vm/helpers/drain.c, splice to /dev/null) empties in the guest,
#   LiME:   insmod lime.ko path=FIFO format=lime digest=sha256, and
#           without digest=
#   ours:   kcoredump dump --format lime -o FIFO (default hashing: the
#           file's SHA-256 and per-block XXH3), and with --hash none
# each timed from the command's start to the reader's end of file.  Then
# the tests/vm/cases/lime.sh check (both images written to the share,
# `kcoredump info` on each, their digests and ranges).  Over the RAM
# segments, also:
#   pread:  a plain 1 MiB pread loop (tests/vm/helpers/kpread.c --bench)
#   bench raw/zero/dump: `kcoredump bench --classes ram --block-size 1M`,
#           1 and 2 threads: preads only; + zero pages and SHA-256; the
#           whole dump pipeline to /dev/null
#   dump:   `kcoredump dump --segments ram -o /dev/null`
# Usage: bench/kcore.sh [BUILD_DIR]   (writes bench/results/kcore.{md,json})
# ICOUNT=N boots QEMU with -icount shift=N (tests/vm/run.sh --icount) and
# writes kcore-icount.{md,json}: the guest's clock counts instructions,
# not the host's load, but one host thread runs both vCPUs in turn, so
# two threads gain nothing (the ratios compare CPU work).
# Environment: REPS (repetitions in one boot, default 3; the table shows
# medians), MEM (guest RAM, default 512M: a boot of about 20 minutes
# under TCG on the loaded 2-CPU machine), LIMIT_MIB (bytes per
# measurement, default all of RAM), RUN_ARGS (more tests/vm/run.sh options,
# e.g. "--kernel bzImage" for a patched kernel).
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
K=$build/kcoredump
mem=${MEM:-512M}
limit_mib=${LIMIT_MIB:-0}
reps=${REPS:-3}
icount=${ICOUNT:-}
# The results: kcore.{md,json}, or kcore-icount.{md,json} with ICOUNT.
name=kcore${icount:+-icount}
out=$here/results
lime_ko=$("$here/../tests/vm/fetch-lime.sh")
lime_version=$("$here/../tests/vm/fetch-lime.sh" --print-version)
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
# Which SHA-256 implementation kcoredump takes in the guest, timed there.
"$KCOREDUMP" version | sed -n 's/^sha256: //p' > "$OUT/sha256"
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f\n", b - a }'; }
# fifo_run NAME COMMAND...: COMMAND writes the RAM into /tmp/bench.fifo,
# drain empties it; NAME.$i gets "bytes seconds" (start to the reader's
# end of file).
fifo_run() {
	name=$1
	shift
	rm -f /tmp/bench.fifo /tmp/bench.fifo.sha256
	mkfifo /tmp/bench.fifo
	drain "$OUT/$name.$i.drain" < /tmp/bench.fifo &
	rd=$!
	t0=$(up)
	"$@"
	wait "$rd"
	t1=$(up)
	echo "$(cut -d' ' -f1 "$OUT/$name.$i.drain") $(ms "$t0" "$t1")" > "$OUT/$name.$i"
	echo "$name: $(cat "$OUT/$name.$i")"
}
lime() {
	insmod /tools/lime.ko path=/tmp/bench.fifo format=lime "$@"
	rmmod lime
}
kcd_lime() {
	"$KCOREDUMP" dump -q --format lime --special-output -o /tmp/bench.fifo "$@"
}
i=1
while [ "$i" -le "$reps" ]; do
	fifo_run lime-sha256 lime digest=sha256
	fifo_run kcd-lime kcd_lime
	fifo_run lime-plain lime
	fifo_run kcd-lime-none kcd_lime --hash none
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
# Both writers' images are valid LiME files (lime.host.sh checks them).
sh /cases/lime.sh
GUEST

res=$work/results
load0=$(cut -d' ' -f1-3 /proc/loadavg)
# shellcheck disable=SC2086 # RUN_ARGS is a list of options
"$here/../tests/vm/run.sh" --kcoredump "$K" --mem "$mem" --timeout 3600 \
	--results "$res" --no-host-check --tool "$lime_ko" ${icount:+--icount "$icount"} \
	${RUN_ARGS:-} "$work/kcore-bench.sh"
# The images of both writers: LiME files that kcoredump info opens, with
# the digests their writers gave (the check deletes them).
load1=$(cut -d' ' -f1-3 /proc/loadavg)
check=passed
KCOREDUMP=$K VM_HERE=$here/../tests/vm bash "$here/../tests/vm/cases/lime.host.sh" "$res" |
	tee "$work/lime-check" || check=FAILED

# The live captures to a FIFO, per repetition: [name, bytes, seconds].
for ((i = 1; i <= reps; i++)); do
	for n in lime-sha256 kcd-lime lime-plain kcd-lime-none; do
		read -r b t < "$res/$n.$i"
		jq -n --arg n "$n" --argjson b "$b" --argjson t "$t" '{ key: $n, bytes: $b, seconds: $t }'
	done | jq -s .
done > "$work/fifo.json"

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
	--arg lime "$lime_version" --arg check "$check" --arg icount "$icount" \
	--arg sha256 "$(cat "$res/sha256")" \
	--arg load "$load0 at the start, $load1 at the end" \
	--slurpfile fifo "$work/fifo.json" \
	--slurpfile bench "$res/bench.1.json" --slurpfile dump "$res/dump.1.json" '
	def median: sort | .[(length - 1) / 2 | floor];
	def medians($all):
		[range(0; $all[0] | length) as $k |
		 ($all | map(.[$k])) as $r |
		 $r[0] + { seconds: ($r | map(.seconds) | median),
			   all_seconds: ($r | map(.seconds)) }];
	. as $all |
	{ kernel: $kernel, mem: $mem, cpus: $cpus, reps: $reps,
	  icount_shift: (if $icount == "" then null else ($icount | tonumber) end),
	  lime_version: $lime, image_check: $check, host_load: $load,
	  sha256: $sha256,
	  fifo: (medians($fifo) | INDEX(.key) as $m |
		 [{ key: "lime-sha256", name: "LiME \($lime) `insmod lime.ko path=FIFO format=lime digest=sha256`", vs: "lime-sha256" },
		  { key: "kcd-lime", name: "`kcoredump dump --format lime -o FIFO` (default hashing: file SHA-256, block XXH3)", vs: "lime-sha256" },
		  { key: "lime-plain", name: "LiME \($lime) `insmod lime.ko path=FIFO format=lime`", vs: "lime-plain" },
		  { key: "kcd-lime-none", name: "`kcoredump dump --format lime --hash none -o FIFO`", vs: "lime-plain" }] |
		 map(. + $m[.key] | .vs_lime = ($m[.vs].seconds / .seconds))),
	  rows: [medians($all)[] |
		 .mb_per_s = (if .seconds > 0 then .bytes / .seconds / 1e6 else 0 end)],
	  bench: $bench[0], dump: $dump[0] }' "$work/rows.json" > "$out/$name.json"

{
	echo "# Live RAM acquisition: LiME and kcoredump; /proc/kcore read throughput"
	echo
	jq -r '"Linux \(.kernel), QEMU guest (TCG\(if .icount_shift then ", -icount shift=\(.icount_shift)" else "" end)) with \(.mem) RAM and \(.cpus) vCPUs (tests/vm rig), \(.bench.holes.ram_bytes / 1048576 | floor) MiB of RAM segments; medians of \(.reps) runs in one boot; the host'"'"'s load average (1, 5, 15 min): \(.host_load)."' "$out/$name.json"
	echo
	echo "## The anchor: LiME, both writing to a FIFO drained in the guest"
	echo
	jq -r '"kcoredump'"'"'s SHA-256 in the guest (`kcoredump version`): \(.sha256)."' "$out/$name.json"
	echo
	echo "| capture | bytes written | seconds (median) | all runs | vs LiME |"
	echo "|---|---:|---:|---|---:|"
	jq -r '.fifo[] |
		"| \(.name) | \(.bytes) | \(.seconds) | \(.all_seconds | map(tostring) | join(", ")) | \(.vs_lime * 100 | round / 100)x |"' \
		"$out/$name.json"
	echo
	jq -r '"vs LiME: LiME'"'"'s seconds over the row'"'"'s (above 1: faster than LiME), against LiME with digest=sha256 for default hashing and without a digest for --hash none.  Images: one more capture by each writer, copied to the 9p share, checked on the host (tests/vm/cases/lime.host.sh: kcoredump info, each writer'"'"'s SHA-256 against the file'"'"'s, LiME'"'"'s ranges = System RAM): \(.image_check)."' "$out/$name.json"
	echo
	echo "## /proc/kcore read throughput"
	echo
	echo "| method | bytes | seconds | MB/s | vs pread |"
	echo "|---|---:|---:|---:|---:|"
	jq -r '(.rows[0].mb_per_s) as $base | .rows[] |
		"| \(.name) | \(.bytes) | \(.seconds * 1000 | round / 1000) | \(.mb_per_s * 10 | round / 10) | \(if $base > 0 then (.mb_per_s / $base * 100 | round / 100) else "-" end)x |"' \
		"$out/$name.json"
	echo
	echo "bench modes: raw = preads only; zero = preads + zero-page detection + SHA-256 per 1 MiB (what dump does per block); dump = the whole dump pipeline on the sampled blocks to /dev/null (its threads are worker threads; it reads on one)."
} > "$out/$name.md"
cat "$out/$name.md"
[[ $check == passed ]]
