#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2016 # $x in the jq filters is jq's
# Host: `kcoredump bench --json` on the guest's /proc/kcore measured every
# kernel class (ram, text, modules, vmalloc, vmalloc-hole, vmemmap) in
# every mode, and its hole report fits a stock kernel.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
j=$d/bench.json
guest_rc_ok "$d"

jqcheck "bench.json is one JSON document" "$j" '. != null'
jqcheck "source is the live kernel" "$j" \
	'.source.live and .source.kind == "live-kcore"'
for c in ram text modules vmalloc vmalloc-hole vmemmap; do
	jqcheck "class $c is present" "$j" '.classes[$c].bytes > 0' --arg c "$c"
	jqcheck "$c: a run per mode, block size and thread count" "$j" \
		'[.runs[] | select(.class == $c)] | length == 12' --arg c "$c"
	jqcheck "$c: raw and zero runs read bytes, with latencies" "$j" \
		'[.runs[] | select(.class == $c and .mode != "dump") |
		  .bytes > 0 and .mb_per_s > 0 and .reads_per_s > 0 and
		  .latency_median_us > 0 and .latency_p99_us >= .latency_median_us and
		  .read_errors == 0] | all' --arg c "$c"
	jqcheck "$c: dump runs processed blocks" "$j" \
		'[.runs[] | select(.class == $c and .mode == "dump") |
		  .reads > 0 and .bytes + .bytes_hole > 0] | all' --arg c "$c"
done
jqcheck "the runs are bounded (8 MiB, 0.25 s plus one read)" "$j" \
	'[.runs[] | .bytes <= 8388608 and .seconds < 5] | all'
jqcheck "vmalloc holes read as zeros" "$j" \
	'[.runs[] | select(.class == "vmalloc-hole" and .mode == "zero") |
	  .zero_bytes == .bytes] | all'
jqcheck "mapped vmalloc areas from vmallocinfo, a sliver of the segment" "$j" \
	'.holes.vmalloc_source == "vmallocinfo" and
	 .holes.vmalloc_mapped_bytes > 0 and
	 .holes.vmalloc_mapped_bytes * 1000 < .holes.vmalloc_segment_bytes'
jqcheck "vmalloc-hole = segment - mapped" "$j" \
	'.classes["vmalloc-hole"].bytes == .holes.vmalloc_segment_bytes - .holes.vmalloc_mapped_bytes'
jqcheck "the hole map skips the unmapped vmalloc and module space" "$j" \
	'.holes.skippable_bytes == .holes.vmalloc_segment_bytes - .holes.vmalloc_mapped_bytes + .holes.modules_segment_bytes - .holes.modules_mapped_bytes'
jqcheck "RAM is a small part of the kcore file" "$j" \
	'.holes.ram_bytes > 0 and .holes.ram_bytes < .holes.file_size'
# Stock 6.12 /proc/kcore has no SEEK_HOLE (kernel/ adds it).
if jq -e '.holes.seek_data' "$j" > /dev/null; then
	jqcheck "SEEK_DATA: data and holes add up" "$j" \
		'.holes.data_bytes + .holes.hole_bytes == .holes.load_bytes'
else
	ok "SEEK_DATA/SEEK_HOLE not meaningful (stock kernel)"
fi
if grep -qE '^CLASS +MODE +BLOCK' "$d/bench.txt"; then
	ok "text output has the table"
else
	not_ok "text output has no table"
fi
exit $fail
