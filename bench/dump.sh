#!/bin/bash
# SPDX-License-Identifier: MIT
# Dump benchmarks (issue: kcoredump dump), side by side with baselines in
# one run, medians of several repetitions:
#   sparse: a 1 TiB sparse process core with 16 data pages -> .zst
#           vs zstd -1 on the same file
#   dense:  a 4 GiB core of mixed content (binaries, zeros, random) on
#           tmpfs -> .zst vs zstd -1 -T2; uncompressed sparse copy vs
#           cp --sparse=always; peak RSS from /usr/bin/time -v
#   vmcore: (optional) a kernel ELF dump saved from the VM rig, e.g. the
#           main job's results/vm/ram.elf.zst after 'kcoredump extract':
#           makedumpfile -c -d 1 vs kcoredump dump to .zst on it
# Usage: bench/dump.sh [BUILD_DIR] [REPS] [VMCORE]
#   (writes bench/results/dump.{md,json})
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
reps=${2:-3}
vmcore=${3:-}
K=$build/kcoredump
MK=$build/tests/tools/mkcore
work=${BENCH_DIR:-/dev/shm/kcoredump-bench}
out=$here/results
mkdir -p "$work" "$out"
trap 'rm -rf "$work"' EXIT

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
rss() { # peak RSS in MiB of one run
	rm -f "$work"/out.*
	/usr/bin/time -v "$@" 2>&1 > /dev/null | awk '/Maximum resident/ { printf "%.1f", $6 / 1024 }'
}

echo "== generating inputs in $work"
"$MK" "$here/../tests/fixtures/sparse-1t.spec" "$work/sparse.core"
cat > "$work/dense.spec" << 'SPEC'
load vaddr=0x10000000 flags=rw
	hole 4G
end
SPEC
"$MK" "$work/dense.spec" "$work/dense.core"
# The segment's data starts at the first 4 KiB boundary after the headers.
off=$("$K" info --json "$work/dense.core" | jq -r '.segments[] | select(.type == "LOAD") | .offset')
(
	# head closes its pipe early: SIGPIPE upstream is expected here.
	set +o pipefail
	# 1.5 GiB of executables and libraries (text-like, compressible), 1
	# GiB of zeros, 0.5 GiB random, 1 GiB of executables again.
	find /usr/bin /usr/lib -type f -size +64k 2> /dev/null | head -4000 |
		xargs cat 2> /dev/null | head -c $((1536 << 20))
	head -c $((1 << 30)) /dev/zero
	head -c $((512 << 20)) /dev/urandom
	find /usr/lib /usr/bin -type f -size +64k 2> /dev/null | tail -4000 |
		xargs cat 2> /dev/null | head -c $((1 << 30))
) | dd of="$work/dense.core" bs=1M seek=$((off)) oflag=seek_bytes conv=notrunc status=none
truncate -s $((off + (4 << 30))) "$work/dense.core"

echo "== sparse 1 TiB"
s_k=$(timeout 600 bash -c "$(declare -f timeit median); work=$work; timeit $reps $K dump -q -f $work/sparse.core -o $work/out.zst")
s_z=$(timeout 1800 bash -c "$(declare -f timeit median); work=$work; timeit 1 zstd -q -1 -T2 -f $work/sparse.core -o $work/out.zst")
echo "kcoredump ${s_k}s zstd -1 -T2 ${s_z}s"

echo "== dense 4 GiB"
d_k=$(timeit "$reps" "$K" dump -q -f -T 2 "$work/dense.core" -o "$work/out.zst")
"$K" dump -q -f -T 2 "$work/dense.core" -o "$work/out.zst"
d_k_size=$(stat -c %s "$work/out.zst")
d_z=$(timeit "$reps" zstd -q -1 -T2 -f "$work/dense.core" -o "$work/out.zst")
zstd -q -1 -T2 -f "$work/dense.core" -o "$work/out.zst"
d_z_size=$(stat -c %s "$work/out.zst")
d_ke=$(timeit "$reps" "$K" dump -q -f -T 2 "$work/dense.core" -o "$work/out.elf")
d_kn=$(timeit "$reps" "$K" dump -q -f -T 2 --hash none "$work/dense.core" -o "$work/out.elf")
d_cp=$(timeit "$reps" cp --sparse=always "$work/dense.core" "$work/out.cp")
d_dd=$(timeit "$reps" dd if="$work/dense.core" of="$work/out.dd" bs=1M status=none)
d_x=$(timeit 1 xz -q -1 -T2 -k -c "$work/dense.core")
rss_k=$(rss "$K" dump -q -f -T 2 "$work/dense.core" -o "$work/out.zst")
rss_ke=$(rss "$K" dump -q -f -T 2 "$work/dense.core" -o "$work/out.elf")
gib=4
r() { echo "scale=2; $1 / $2" | bc -l; }
mbs() { echo "scale=0; $gib * 1024 / $1" | bc -l; }

v_k=- v_m=- v_ks=0 v_ms=0
if [[ -n $vmcore ]]; then
	echo "== saved kernel dump $vmcore"
	v_k=$(timeit "$reps" "$K" dump -q -f -T 2 "$vmcore" -o "$work/out.zst")
	"$K" dump -q -f -T 2 "$vmcore" -o "$work/out.zst"
	v_ks=$(stat -c %s "$work/out.zst")
	v_m=$(timeit "$reps" makedumpfile -c -d 1 "$vmcore" "$work/out.kdump")
	rm -f "$work/out.kdump"
	makedumpfile -c -d 1 "$vmcore" "$work/out.kdump" > /dev/null 2>&1
	v_ms=$(stat -c %s "$work/out.kdump")
fi

cpu=$(awk -F: '/model name/ { print $2; exit }' /proc/cpuinfo | sed 's/^ *//')
{
	echo "Machine: $(nproc) CPUs ($cpu), $(free -g | awk '/Mem:/ { print $2 }') GiB RAM, inputs on $(df --output=fstype "$work" | tail -1); medians of $reps runs."
	echo
	echo "| case | kcoredump | baseline | ratio |"
	echo "|---|---|---|---|"
	echo "| 1 TiB sparse core, 16 data pages -> .zst | ${s_k} s | zstd -1 -T2: ${s_z} s | $(r "$s_z" "$s_k")x faster |"
	echo "| 4 GiB mixed core -> .zst, time | ${d_k} s ($(mbs "$d_k") MiB/s) | zstd -1 -T2: ${d_z} s ($(mbs "$d_z") MiB/s) | $(r "$d_z" "$d_k")x |"
	echo "| 4 GiB mixed core -> .zst, size | $((d_k_size >> 20)) MiB | zstd -1 -T2: $((d_z_size >> 20)) MiB | $(r "$d_k_size" "$d_z_size")x |"
	echo "| 4 GiB mixed core -> sparse ELF | ${d_ke} s ($(mbs "$d_ke") MiB/s) | cp --sparse=always: ${d_cp} s ($(mbs "$d_cp") MiB/s) | $(r "$d_cp" "$d_ke")x |"
	echo "| 4 GiB mixed core -> sparse ELF, --hash none | ${d_kn} s ($(mbs "$d_kn") MiB/s) | cp --sparse=always: ${d_cp} s | $(r "$d_cp" "$d_kn")x |"
	echo "| 4 GiB mixed core -> sparse ELF, vs dd | ${d_ke} s | dd bs=1M: ${d_dd} s ($(mbs "$d_dd") MiB/s) | $(r "$d_dd" "$d_ke")x |"
	echo "| 4 GiB mixed core, xz baseline | - | xz -1 -T2: ${d_x} s | - |"
	if [[ -n $vmcore ]]; then
		echo "| $(basename "$vmcore") (VM RAM, ELF) -> .zst vs makedumpfile -c -d 1, time | ${v_k} s | makedumpfile: ${v_m} s | $(r "$v_m" "$v_k")x |"
		echo "| same, size | $((v_ks >> 20)) MiB | makedumpfile: $((v_ms >> 20)) MiB | $(r "$v_ks" "$v_ms")x |"
	fi
	echo "| peak RSS, .zst / sparse ELF (2 threads, 4 MiB blocks) | ${rss_k} / ${rss_ke} MiB | - | - |"
} | tee "$out/dump.md"
jq -n --arg s_k "$s_k" --arg s_z "$s_z" --arg d_k "$d_k" --arg d_z "$d_z" \
	--arg d_ke "$d_ke" --arg d_kn "$d_kn" --arg d_cp "$d_cp" --arg d_dd "$d_dd" --arg d_x "$d_x" \
	--arg v_k "$v_k" --arg v_m "$v_m" --arg v_ks "$v_ks" --arg v_ms "$v_ms" \
	--arg ks "$d_k_size" --arg zs "$d_z_size" --arg rk "$rss_k" --arg rke "$rss_ke" \
	'{sparse_1t: {kcoredump_s: ($s_k|tonumber), zstd_s: ($s_z|tonumber)},
	  dense_4g: {kcoredump_zst_s: ($d_k|tonumber), zstd_s: ($d_z|tonumber),
	             kcoredump_zst_bytes: ($ks|tonumber), zstd_bytes: ($zs|tonumber),
	             kcoredump_elf_s: ($d_ke|tonumber), kcoredump_elf_nohash_s: ($d_kn|tonumber), cp_sparse_s: ($d_cp|tonumber), dd_s: ($d_dd|tonumber),
	             xz_s: ($d_x|tonumber), rss_zst_mib: ($rk|tonumber), rss_elf_mib: ($rke|tonumber)},
	  vmcore: {kcoredump_zst_s: $v_k, makedumpfile_s: $v_m,
	           kcoredump_zst_bytes: ($v_ks|tonumber), makedumpfile_bytes: ($v_ms|tonumber)}}' \
	> "$out/dump.json"
