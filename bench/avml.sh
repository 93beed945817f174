#!/bin/bash
# SPDX-License-Identifier: MIT
# AVML output (snappy-compressed LiME) against another writer of the same
# format in the same run, from the same LiME input, medians of REPS runs:
#   python3-snappy's framing writer (C snappy; CRC-32C by python3-crcmod's
#     C extension), one framed stream per range, streamed 4 MiB at a time
#   kcoredump convert --format avml -T 1, and -T 2
#   kcoredump convert --format lime (what the compression costs)
# The input is the LiME file of a kernel ELF dump: by default the VM
# guest's RAM dump the vm-formats case leaves (1 GiB, Linux 6.12).  Both
# AVML files decode to the LiME file (tests/tools/avml2lime.py).
# Usage: bench/avml.sh [BUILD_DIR] [REPS] [ELF]
#   (writes bench/results/avml.{md,json})
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
py=/usr/bin/python3
bench_init avml "$@"
"$py" -c 'import snappy, crcmod' 2> /dev/null || { echo "bench/avml.sh: python3-snappy and python3-crcmod needed" >&2; exit 1; }

cat > "$work/pywrite.py" <<'PY'
import struct, sys
sys.path.insert(0, sys.argv[3])
import mkavml  # noqa: F401  (CRC-32C for python3-snappy)
import snappy
src, dst = open(sys.argv[1], "rb"), open(sys.argv[2], "wb")
while True:
    h = src.read(32)
    if not h:
        break
    magic, version, s, e, _ = struct.unpack("<IIQQQ", h)
    dst.write(struct.pack("<IIQQQ", 0x4C4D5641, 2, s, e, 0))
    c, left, n = snappy.StreamCompressor(), e - s + 1, 0
    while left:
        b = c.add_chunk(src.read(min(left, 4 << 20)))
        dst.write(b)
        n += len(b)
        left -= min(left, 4 << 20)
    dst.write(struct.pack("<Q", n))
PY
lime=$work/in.lime
"$K" convert -q --format lime "$input" -o "$lime"
"$py" "$work/pywrite.py" "$lime" "$work/py.avml" "$here/../tests/tools"
"$K" convert -q -T 2 --format avml "$lime" -o "$work/k.avml"
for f in py k; do
	"$py" "$here/../tests/tools/avml2lime.py" "$work/$f.avml" "$work/$f.lime" > /dev/null
	cmp -s "$work/$f.lime" "$lime" || { echo "bench/avml.sh: $f.avml does not decode to the LiME file" >&2; exit 1; }
	rm -f "$work/$f.lime"
done
s_py=$(size "$work/py.avml") s_k=$(size "$work/k.avml") s_l=$(size "$lime")
rel=$("$K" info --json --no-holes --no-modules "$input" | jq -r .source.kernel_release)
c_py=$(cpu "$py" "$work/pywrite.py" "$lime" "$work/out.avml" "$here/../tests/tools")
c_k1=$(cpu "$K" convert -q -T 1 --format avml "$lime" -o "$work/out.avml")
c_k2=$(cpu "$K" convert -q -T 2 --format avml "$lime" -o "$work/out.avml")
t_py=$(timeit "$reps" "$py" "$work/pywrite.py" "$lime" "$work/out.avml" "$here/../tests/tools")
t_k1=$(timeit "$reps" "$K" convert -q -T 1 --format avml "$lime" -o "$work/out.avml")
t_k2=$(timeit "$reps" "$K" convert -q -T 2 --format avml "$lime" -o "$work/out.avml")
t_l=$(timeit "$reps" "$K" convert -q -T 2 --format lime "$lime" -o "$work/out.lime")

for v in t_py t_k1 t_k2 t_l; do printf -v "$v" '%.3f' "${!v}"; done
r() { printf '%.2f' "$(echo "$1 / $2" | bc -l)"; }
r3() { printf '%.3f' "$(echo "$1 / $2" | bc -l)"; }
cpuname=$(awk -F: '/model name/ { print $2; exit }' /proc/cpuinfo | sed 's/^ *//')
{
	echo "Machine: $(nproc) CPUs ($cpuname), shared with other jobs; input: the LiME file of $(basename "$input") (Linux $rel), $((s_l >> 20)) MiB; medians of $reps runs. Both AVML files decode to the LiME file byte for byte."
	echo
	echo "| case | time | CPU | size | time vs python3-snappy | size vs python3-snappy |"
	echo "|---|---|---|---|---|---|"
	echo "| python3-snappy framing writer | ${t_py} s | ${c_py} s | $((s_py >> 10)) KiB | 1 | 1 |"
	echo "| kcoredump convert --format avml -T 1 | ${t_k1} s | ${c_k1} s | $((s_k >> 10)) KiB | $(r "$t_py" "$t_k1")x faster | $(r3 "$s_k" "$s_py")x |"
	echo "| kcoredump convert --format avml -T 2 | ${t_k2} s | ${c_k2} s | $((s_k >> 10)) KiB | $(r "$t_py" "$t_k2")x faster | $(r3 "$s_k" "$s_py")x |"
	echo "| kcoredump convert --format lime (no compression) | ${t_l} s | - | $((s_l >> 10)) KiB | - | - |"
} > "$out/avml.md"
jq -n --arg rel "$rel" --argjson reps "$reps" \
	--argjson t_py "$t_py" --argjson t_k1 "$t_k1" --argjson t_k2 "$t_k2" --argjson t_l "$t_l" \
	--argjson s_py "$s_py" --argjson s_k "$s_k" --argjson s_l "$s_l" \
	'{kernel_release: $rel, reps: $reps,
	  python_snappy: {seconds: $t_py, bytes: $s_py},
	  kcoredump_t1: {seconds: $t_k1, bytes: $s_k},
	  kcoredump_t2: {seconds: $t_k2, bytes: $s_k},
	  lime: {seconds: $t_l, bytes: $s_l}}' > "$out/avml.json"
cat "$out/avml.md"
