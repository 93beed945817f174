#!/bin/bash
# SPDX-License-Identifier: MIT
# Stock vs patched Linux 6.12 (kernel/build.sh, the same config), side by
# side in the VM rig (one boot each, tests/vm/cases/kernel-ab.sh):
#   - full read of a 1 GiB vmalloc window of /proc/kcore (1 MiB preads)
#   - SEEK_DATA/SEEK_HOLE enumeration of the whole of /proc/kcore
#   - kernel core dumps of the crash-shapes programs (kernel/test), whose
#     cores must be identical between the kernels outside the notes
# Usage: bench/kernel-ab.sh [SHAPE...]  (default: all shapes; sparse1t,
# which takes minutes on the stock kernel under TCG, only on the patched one
# unless STOCK_1T=1)
# Writes bench/results/kernel-ab.{md,json}; the raw results stay in the
# printed directory.  Environment: KERNEL_AB_OUT (instead of bench/results),
# KCOREDUMP_BUILD (kcoredump build dir,
# see kernel/test.sh), UPTO (patches 1..N for the patched kernel),
# KERNEL_AB_WORK (results directory; variants already there are reused).
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
shapes=("$@")
[[ ${#shapes[@]} -gt 0 ]] ||
	shapes=(dense sparse64g sparse1t strided thp file shmem zeropage mt)
work=${KERNEL_AB_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/kernel-ab.XXXXXX")}
out=${KERNEL_AB_OUT:-$here/results}
mkdir -p "$out"
echo "kernel-ab: results in $work" >&2

upto=()
[[ -z "${UPTO:-}" ]] || upto=(--upto "$UPTO")
rc=0
stock_shapes=()
for s in "${shapes[@]}"; do
	[[ "$s" == sparse1t && "${STOCK_1T:-0}" != 1 ]] || stock_shapes+=("$s")
done
# A variant whose results are already in $KERNEL_AB_WORK is not run again.
[[ -s "$work/stock/digests" ]] ||
	"$top/kernel/test.sh" --stock --timeout 1500 --results "$work/stock" \
		kernel-ab "${stock_shapes[@]}" || rc=1
[[ -s "$work/patched/digests" ]] ||
	KCD_REFERENCE=$work/stock "$top/kernel/test.sh" --patched \
		${upto[@]+"${upto[@]}"} --timeout 1500 --results "$work/patched" \
		kernel-ab "${shapes[@]}" || rc=1

/usr/bin/python3 - "$work" "$out" <<'PY'
import json, os, statistics, sys
work, out = sys.argv[1], sys.argv[2]
res = {}
for v in ("stock", "patched"):
    d = os.path.join(work, v)
    r = {"uname": open(os.path.join(d, "uname")).read().strip()}
    vr = [l.split() for l in open(os.path.join(d, "vread")) if l.startswith("vread")]
    r["vread_us"] = [int(f[f.index("us") + 1]) for f in vr]
    r["vread_len"] = int(vr[0][vr[0].index("len") + 1])
    sk = [l.split() for l in open(os.path.join(d, "seek"))]
    r["seek_us"] = [int(f[1]) for f in sk]
    r["seek_extents"] = int(sk[0][3])
    r["dump_us"] = {}
    for l in open(os.path.join(d, "dump-times")):
        f = l.split()
        r["dump_us"][f[0]] = int(f[4])
    r["digests"] = {}
    for l in open(os.path.join(d, "digests")):
        f = l.split()
        r["digests"][f[0]] = f[1]
    res[v] = r
s, p = res["stock"], res["patched"]
med = statistics.median
rows = []
def row(name, a, b, unit="s"):
    ratio = a / b if b else float("inf")
    rows.append((name, a, b, ratio))
mib = s["vread_len"] / 2**20
sv, pv = med(s["vread_us"]) / 1e6, med(p["vread_us"]) / 1e6
row(f"kcore: read {mib:.0f} MiB vmalloc window, 1 MiB preads", sv, pv)
row(f"kcore: SEEK_DATA/SEEK_HOLE over the whole file "
    f"({s['seek_extents']} vs {p['seek_extents']} extents)",
    med(s["seek_us"]) / 1e6, med(p["seek_us"]) / 1e6)
same = {}
for shape in p["dump_us"]:
    if shape in s["dump_us"]:
        row(f"coredump: {shape}", s["dump_us"][shape] / 1e6, p["dump_us"][shape] / 1e6)
        same[shape] = s["digests"].get(shape) == p["digests"].get(shape)
    else:
        rows.append((f"coredump: {shape} (not run on stock)", float("nan"),
                     p["dump_us"][shape] / 1e6, float("nan")))
lines = ["| measurement | stock 6.12 | patched | stock/patched |",
         "|---|---:|---:|---:|"]
def fmt(x, spec, unit):
    return "-" if x != x else f"{x:{spec}}{unit}"
for name, a, b, r in rows:
    lines.append(f"| {name} | {fmt(a, '.4f', ' s')} | {fmt(b, '.4f', ' s')} | {fmt(r, '.1f', 'x')} |")
lines.append("")
lines.append(f"vmalloc read throughput: stock {mib / sv:.1f} MiB/s, patched {mib / pv:.1f} MiB/s")
lines.append("cores identical outside the notes (stock vs patched): " +
             ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in same.items()))
lines.append(f"kernels: {s['uname']} / {p['uname']} (QEMU TCG, 2 vCPUs, 1 GiB; kcore reads and SEEK: medians of 3 in one boot; coredumps: one run each; host load 5-12 from other work)")
md = "\n".join(lines) + "\n"
open(os.path.join(out, "kernel-ab.md"), "w").write(md)
json.dump(res, open(os.path.join(out, "kernel-ab.json"), "w"), indent=1)
print(md)
sys.exit(0 if all(same.values()) else 1)
PY
exit $rc
