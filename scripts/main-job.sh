#!/bin/bash
# SPDX-License-Identifier: MIT
# README command (1): install, build, and run kcoredump on a real
# /proc/kcore: this machine's when it has a readable one, else the one of
# Debian's 6.12 kernel booted under QEMU (tests/vm).  The results (info,
# a zstd dump of all RAM, a dump of the mapped vmalloc areas, their
# verification) are left in ./results/.
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)"
out=$PWD/results
mkdir -p "$out"
if [[ -r /proc/kcore ]] && head -c 64 /proc/kcore > /dev/null 2>&1; then
	echo "== this machine's /proc/kcore"
	build/kcoredump info /proc/kcore | tee "$out/info.txt"
	build/kcoredump dump -f -o "$out/ram.elf.zst"
	build/kcoredump dump -f --vmalloc-range -o "$out/vmalloc.elf"
	build/kcoredump verify "$out/ram.elf.zst"
	build/kcoredump verify "$out/vmalloc.elf"
else
	echo "== no readable /proc/kcore here: booting Debian's 6.12 kernel under QEMU"
	rm -rf "$out/vm"
	tests/vm/run.sh --kcoredump build/kcoredump --results "$out/vm" \
		--mem 1G main-job
	cat "$out/vm/info.txt"
fi
echo "== results in $out"
