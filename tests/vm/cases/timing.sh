#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: plain pread throughput of the /proc/kcore RAM segments (1 MiB
# reads), and when the kernel booted.  ARGS: [MAX_MIB] to cap the bench.
set -eu

cp /results/uptime-start "$OUT/uptime-start" 2>/dev/null || true
if [ $# -ge 1 ]; then
	kpread --bench --max-mib "$1" > "$OUT/bench"
else
	kpread --bench > "$OUT/bench"
fi
cat "$OUT/bench"
