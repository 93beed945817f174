#!/bin/bash
# kcoredump bench on regular files: one JSON document with the classes of
# a file (data and hole), a hole report that agrees with SEEK_DATA, a run
# per class, mode, block size and thread count with sane numbers, bounded
# by --limit; the text table; usage errors.
#   bench.sh KCOREDUMP FIXDIR
set -euo pipefail
# shellcheck source=../lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/shell.sh"
kcd_trap_errors
kcoredump=$1 fixdir=$2
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# jqok WHAT FILE FILTER [JQ ARGS...]: FILTER must yield true.
jqok()
{
	local what=$1 file=$2 filter=$3
	shift 3
	if jq -e "$@" "$filter" "$file" >/dev/null 2>&1; then
		ok "$what"
	else
		not_ok "$what"
		jq -c "$@" "$filter" "$file" 2>&1 | head -c 400 | diag /dev/stdin
	fi
}

for name in process-x86_64 sparse-1t; do
	f=$fixdir/$name.core
	j=$tmp/$name.json
	rc=0
	timeout 120 "$kcoredump" bench --json --limit 1M --time 5 \
		--block-size 4K,1M --threads 1,2 "$f" >"$j" 2>"$tmp/err" || rc=$?
	if [ "$rc" != 0 ] || [ "$(jq -s length "$j" 2>/dev/null)" != 1 ]; then
		not_ok "bench $name: exit $rc, not one JSON document"
		diag "$tmp/err"
		continue
	fi
	ok "bench $name: one JSON document"
	jqok "$name: source is a file, not live" "$j" \
		'.source.live == false and .source.kind == "process-core"'
	jqok "$name: config echoed" "$j" \
		'.config.limit == 1048576 and .config.block_sizes == [4096, 1048576] and .config.threads == [1, 2] and .config.modes == ["raw", "zero", "dump"]'
	jqok "$name: classes are data and hole only" "$j" \
		'(.classes | keys) == ["data", "hole"] and .classes.data.bytes > 0 and .classes.hole.bytes > 0'
	jqok "$name: SEEK_DATA meaningful, holes = hole class" "$j" \
		'.holes.seek_data and .holes.hole_bytes == .classes.hole.bytes and .holes.data_bytes == .classes.data.bytes and .holes.skippable_bytes == .holes.hole_bytes and .holes.data_bytes + .holes.hole_bytes == .holes.load_bytes'
	jqok "$name: one run per class, mode, block size, thread count" "$j" \
		'(.runs | length) == 2 * 3 * 2 * 2 and ([.runs[] | [.class, .mode, .block_size, .threads]] | unique | length) == 24'
	jqok "$name: raw and zero runs read bytes, with latencies" "$j" \
		'[.runs[] | select(.mode != "dump") | .bytes > 0 and .reads > 0 and .mb_per_s > 0 and .reads_per_s > 0 and .latency_median_us >= 0 and .latency_p99_us >= .latency_median_us and .read_errors == 0] | all'
	jqok "$name: the limit bounds every run (one block at least)" "$j" \
		'[.runs[] | .bytes <= ([1048576, .block_size] | max)] | all'
	jqok "$name: the data class is read whole (it is under the limit)" "$j" \
		'[.runs[] | select(.class == "data" and .mode == "raw") | .bytes == $d] | all' \
		--argjson d "$(jq .classes.data.bytes "$j")"
	jqok "$name: hole blocks read as zeros" "$j" \
		'[.runs[] | select(.class == "hole" and .mode == "zero") | .zero_bytes == .bytes] | all'
	jqok "$name: the dump skips holes through the hole map" "$j" \
		'[.runs[] | select(.class == "hole" and .mode == "dump") | .bytes == 0 and .bytes_hole > 0 and .latency_median_us == null] | all'
	jqok "$name: the dump reads the data blocks" "$j" \
		'[.runs[] | select(.class == "data" and .mode == "dump") | .bytes > 0 and .bytes_written > 0] | all'
done

# The text table: the header and a row per run.
rc=0
"$kcoredump" bench --limit 256K --time 0.1 --block-size 64K --threads 1 \
	--mode raw "$fixdir/sparse-1t.core" >"$tmp/text" 2>&1 || rc=$?
check "text: exit 0" [ "$rc" = 0 ]
check "text: table header" grep -qE '^CLASS +MODE +BLOCK +THR +BYTES +MB/s' "$tmp/text"
check "text: a row per class" [ "$(grep -cE '^(data|hole) +raw +64K +1 ' "$tmp/text")" = 2 ]
check "text: hole report" grep -q 'SEEK_DATA/SEEK_HOLE: meaningful' "$tmp/text"

# --classes, usage errors and errors as JSON.
"$kcoredump" bench --json --limit 64K --time 0.1 --block-size 4K --threads 1 \
	--mode raw --classes hole "$fixdir/sparse-1t.core" >"$tmp/h.json"
jqok "--classes hole: only hole runs" "$tmp/h.json" \
	'(.runs | length) == 1 and .runs[0].class == "hole"'
for bad in "--block-size 100" "--block-size 4K,x" "--threads 0" \
	"--mode fast" "--classes nope" "--time -1" "--limit 0"; do
	rc=0
	# shellcheck disable=SC2086 # split the option and its argument
	"$kcoredump" bench $bad "$fixdir/sparse-1t.core" >/dev/null 2>&1 || rc=$?
	check "usage error for '$bad' (exit $rc)" [ "$rc" = 2 ]
done
rc=0
"$kcoredump" bench --json "$tmp/missing" >"$tmp/err.json" 2>/dev/null || rc=$?
check "missing source: exit 6" [ "$rc" = 6 ]
jqok "missing source: JSON error object" "$tmp/err.json" '.error.message | length > 0'
finish
