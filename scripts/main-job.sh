#!/bin/bash
# SPDX-License-Identifier: MIT
# README command (1): install, build, and run kcoredump on a real
# /proc/kcore: this machine's when it has a readable one, else the one of
# Debian's 6.12 kernel booted under QEMU (tests/vm).  The results (info,
# a zstd dump of all RAM, a dump of the mapped vmalloc areas, their
# verification) are left in ./results/, and it ends with their summary
# (scripts/main-job-summary.py): the kernel, sizes, time and throughput,
# each file's SHA-256, the verify results and where each file is.
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors
cd "$(dirname "$0")/.."

scripts/install-deps.sh --main
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)"
out=$PWD/results
mkdir -p "$out"
if [[ -r /proc/kcore ]] && head -c 64 /proc/kcore > /dev/null 2>&1; then
	echo "== this machine's /proc/kcore"
	status=0
	scripts/main-job-dumps.sh build/kcoredump /proc/kcore "$out" || status=$?
	where="this machine's"
else
	echo "== no readable /proc/kcore here: booting Debian's 6.12 kernel under QEMU"
	rm -rf "$out/vm"
	status=0
	tests/vm/run.sh --kcoredump build/kcoredump --results "$out/vm" \
		--mem 1G main-job || status=$?
	out=$out/vm
	where="the QEMU guest's"
fi
scripts/main-job-summary.py "$out" "$where" || status=$?
exit "$status"
