#!/bin/bash
# SPDX-License-Identifier: MIT
# Stock vs patched Linux 6.12 or 7.3 (kernel/build.sh --base, the same
# config for both variants; KERNEL_AB_BASE=7.3 for 7.3), side by side in
# the VM rig (one boot each, tests/vm/cases/kernel-ab.sh):
#   - /proc/kcore vmalloc reads in 1 MiB preads: a mapped 16 MiB area, an
#     unmapped 1 GiB window, the first 1 GiB of the segment (medians of 3;
#     the bytes of each must hash the same on both kernels)
#   - SEEK_DATA/SEEK_HOLE enumeration of the whole of /proc/kcore
#   - kernel core dumps of the crash-shapes programs (kernel/test), every
#     core checked against what its program wrote and identical between
#     the kernels outside the notes; SHAPE:nodump crashes without a dump
#     (what the signal, exit and wait cost alone)
# Usage: bench/kernel-ab.sh [SHAPE...]  (default: the list below; sparse1t,
# which takes minutes on the stock kernel under TCG, only on the patched one
# unless STOCK_1T=1)
# Writes bench/results/kernel-ab.{md,json} (7.3: kernel-ab-7.3.*); the raw results stay in the
# printed directory.  Environment: KERNEL_AB_OUT (instead of bench/results),
# KCOREDUMP_BUILD (kcoredump build dir, see kernel/test.sh), UPTO (patches
# 1..N for the patched kernel), KERNEL_AB_REPEAT (dump every shape N times
# in the boot, medians reported; default 1), KERNEL_AB_WORK (results
# directory; variants already there are reused), KERNEL_AB_VARIANTS (the
# variants to boot, default "stock patched"; e.g. each with its own
# KCOREDUMP_CACHE into one KERNEL_AB_WORK, the table once both are there),
# KERNEL_AB_STOCK_KERNEL / KERNEL_AB_PATCHED_KERNEL (a bzImage build.sh
# made before, for test.sh --kernel).
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../tests/lib/shell.sh
source "$top/tests/lib/shell.sh"
kcd_trap_errors
shapes=("$@")
[[ ${#shapes[@]} -gt 0 ]] ||
	shapes=(none none:nodump dense sparse64g sparse64g:nodump sparse1t
		strided thp file shmem zeropage mt swap protnone dontneed uffd high)
work=${KERNEL_AB_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/kernel-ab.XXXXXX")}
out=${KERNEL_AB_OUT:-$here/results}
mkdir -p "$out" "$work"
echo "kernel-ab: results in $work" >&2

base=${KERNEL_AB_BASE:-6.12}
case "$base" in 6.12|7.3) ;; *) echo "kernel-ab: KERNEL_AB_BASE must be 6.12 or 7.3, not '$base'" >&2; exit 2 ;; esac
upto=()
[[ -z "${UPTO:-}" ]] || upto=(--upto "$UPTO")
rc=0
run_shapes=() stock_shapes=()
for ((i = 0; i < ${KERNEL_AB_REPEAT:-1}; i++)); do
	run_shapes+=("${shapes[@]}")
done
for s in "${run_shapes[@]}"; do
	[[ "$s" == sparse1t && "${STOCK_1T:-0}" != 1 ]] || stock_shapes+=("$s")
done
# A variant whose results are already in $KERNEL_AB_WORK is not run again.
for v in ${KERNEL_AB_VARIANTS:-stock patched}; do
	[[ "$v" == stock || "$v" == patched ]] || { echo "kernel-ab: unknown variant '$v'" >&2; exit 2; }
	[[ ! -s "$work/$v/digests" ]] || continue
	cat /proc/loadavg > "$work/loadavg-$v-start"
	if [[ $v == stock ]]; then
		"$top/kernel/test.sh" --base "$base" --stock \
			${KERNEL_AB_STOCK_KERNEL:+--kernel "$KERNEL_AB_STOCK_KERNEL"} --timeout 3600 --results "$work/stock" \
			kernel-ab "${stock_shapes[@]}" || rc=1
	else
		KCD_REFERENCE=$work/stock "$top/kernel/test.sh" --base "$base" --patched \
			${KERNEL_AB_PATCHED_KERNEL:+--kernel "$KERNEL_AB_PATCHED_KERNEL"} \
			${upto[@]+"${upto[@]}"} --timeout 3600 --results "$work/patched" \
			kernel-ab "${run_shapes[@]}" || rc=1
	fi
	cat /proc/loadavg > "$work/loadavg-$v-end"
done

if [[ ! -s "$work/stock/digests" || ! -s "$work/patched/digests" ]]; then
	echo "kernel-ab: $work has not both variants yet; no table" >&2
	exit $rc
fi
# One config for both (kernel/build.sh checks each build against it and
# test.sh records its sum): numbers of kernels built from two configs are
# not an A/B.
cfg_s=$(cut -d" " -f1 "$work/stock/kernel-config-sum" 2>/dev/null || echo "none")
cfg_p=$(cut -d" " -f1 "$work/patched/kernel-config-sum" 2>/dev/null || echo "none")
if [[ "$cfg_s" == none* || "$cfg_s" != "$cfg_p" ]]; then
	echo "kernel-ab: the stock and patched kernels were not built from one config" \
		"(config sums: stock '$cfg_s', patched '$cfg_p'; see kernel-config-sum in $work/stock and $work/patched); no table" >&2
	exit 1
fi
/usr/bin/python3 - "$work" "$out" "$base" <<'PY' || rc=1
import json, os, statistics, sys, time
work, out, base = sys.argv[1], sys.argv[2], sys.argv[3]
med = statistics.median
res = {}
for v in ("stock", "patched"):
    d = os.path.join(work, v)
    r = {"uname": open(os.path.join(d, "uname")).read().strip(), "vread": {},
         "vread_fnv": {}, "dump_us": {}, "kill_us": {}, "digests": {}}
    for l in open(os.path.join(d, "vread")):
        f = l.split()
        r["vread"].setdefault(f[0], {"len": int(f[f.index("len") + 1]), "us": []})
        r["vread"][f[0]]["us"].append(int(f[f.index("us") + 1]))
    for l in open(os.path.join(d, "vread-hash")):
        f = l.split()
        r["vread_fnv"][f[0]] = (f[f.index("fnv") + 1], int(f[f.index("nonzero_pages") + 1]))
    sk = [l.split() for l in open(os.path.join(d, "seek"))]
    r["seek_us"] = [int(f[1]) for f in sk]
    r["seek_extents"] = int(sk[0][3])
    for l in open(os.path.join(d, "dump-times")):
        f = l.split()
        r["dump_us"].setdefault(f[0], []).append(int(f[4]))
    for l in open(os.path.join(d, "digests")):
        f = l.split()
        r["digests"][f[0]] = f[1]
    try:
        r["loadavg"] = [open(os.path.join(work, f"loadavg-{v}-{w}")).read().split()[0]
                        for w in ("start", "end")]
    except OSError:
        r["loadavg"] = ["?", "?"]
    try:
        r["started"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(
            os.stat(os.path.join(work, f"loadavg-{v}-start")).st_mtime))
    except OSError:
        r["started"] = "?"
    res[v] = r
s, p = res["stock"], res["patched"]
rows = []
def row(name, a, b):
    rows.append((name, a, b, a / b if a == a and b else float("nan")))
same_bytes = {}
for w in ("mapped", "unmapped", "window"):
    if w not in s["vread"] or w not in p["vread"]:
        continue
    mib = s["vread"][w]["len"] / 2**20
    a, b = med(s["vread"][w]["us"]) / 1e6, med(p["vread"][w]["us"]) / 1e6
    row(f"kcore: read {mib:.0f} MiB {w} vmalloc, 1 MiB preads ({mib / a:.0f} vs {mib / b:.0f} MiB/s)", a, b)
    same_bytes[w] = s["vread_fnv"].get(w) == p["vread_fnv"].get(w)
row(f"kcore: SEEK_DATA/SEEK_HOLE over the whole file "
    f"({s['seek_extents']} vs {p['seek_extents']} extents)",
    med(s["seek_us"]) / 1e6, med(p["seek_us"]) / 1e6)
same = {}
for shape, us in p["dump_us"].items():
    b = med(us) / 1e6
    runs = f" ({len(us)} runs)" if len(us) > 1 else ""
    if shape in s["dump_us"]:
        row(f"coredump: {shape}{runs}", med(s["dump_us"][shape]) / 1e6, b)
        if shape in p["digests"]:
            same[shape] = s["digests"].get(shape) == p["digests"].get(shape)
    else:
        rows.append((f"coredump: {shape} (not run on stock)", float("nan"), b, float("nan")))
lines = [f"| measurement | stock {base} | patched | stock/patched |",
         "|---|---:|---:|---:|"]
def fmt(x, spec, unit):
    return "-" if x != x else f"{x:{spec}}{unit}"
for name, a, b, r in rows:
    lines.append(f"| {name} | {fmt(a, '.4f', ' s')} | {fmt(b, '.4f', ' s')} | {fmt(r, '.1f', 'x')} |")
lines.append("")
lines.append("vmalloc reads, same bytes on both kernels (FNV of the non-zero words): " +
             ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in same_bytes.items()) +
             " (the window holds live allocations such as task stacks, which differ "
             "between any two boots: reported, not required)")
lines.append("cores identical outside the notes (stock vs patched): " +
             ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in same.items()))
lines.append(f"one config for both kernels: {open(os.path.join(work, 'stock', 'kernel-config-sum')).read().split()[0][:16]} (sha256 of build.sh's checked .config)")
lines.append(f"kernels: {s['uname']} / {p['uname']} (QEMU TCG, 2 vCPUs, 1 GiB; kcore reads and SEEK: medians of 3 in one boot; coredumps: medians of the runs in one boot)")
lines.append(f"host load average (1 min) at the start and end of each boot: stock {' -> '.join(s['loadavg'])}, patched {' -> '.join(p['loadavg'])} (2 CPUs)")
lines.append(f"boots started: stock {s['started']}, patched {p['started']}")
md = "\n".join(lines) + "\n"
sfx = "" if base == "6.12" else "-" + base
open(os.path.join(out, f"kernel-ab{sfx}.md"), "w").write(md)
json.dump(res, open(os.path.join(out, f"kernel-ab{sfx}.json"), "w"), indent=1)
print(md)
sys.exit(0 if all(same.values()) and all(v for k, v in same_bytes.items() if k != "window") else 1)
PY
exit $rc
