#!/bin/bash
# SPDX-License-Identifier: MIT
# Stock vs patched Linux 6.12 or 7.3 (kernel/build.sh --base, the same
# config for both variants; KERNEL_AB_BASE=7.3 for 7.3), side by side in
# the VM rig (tests/vm/cases/kernel-ab.sh), over several boots of each
# kernel in alternation:
#   - /proc/kcore vmalloc reads in 1 MiB preads: a mapped 16 MiB area, an
#     unmapped 1 GiB window, the first 1 GiB of the segment (medians of 3
#     per boot; the bytes of each must hash the same on both kernels)
#   - SEEK_DATA/SEEK_HOLE enumeration of the whole of /proc/kcore
#   - kernel core dumps of the crash-shapes programs (kernel/test), every
#     core checked against what its program wrote and identical between
#     the kernels (and boots) outside the notes; SHAPE:nodump crashes
#     without a dump (what the signal, exit and wait cost alone)
# Each measurement is taken per boot (the median of its runs in the boot),
# then the median over the boots of each kernel; the ratio is stock's over
# patched's.  Two clocks (KERNEL_AB_CLOCKS, default "wall icount"): "wall"
# boots time with the guest's clock as TCG runs it, which follows the
# host's load; "icount" boots run QEMU with -icount shift=N,sleep=off
# (tests/vm/run.sh --icount), where the guest's clock counts the
# instructions executed (2^N ns each, KERNEL_AB_ICOUNT_SHIFT, default 0:
# 1 ns), so its times do not depend on the host's load at all.  Every
# boot's host load average (1 min) is recorded at its start and end.
# Usage: bench/kernel-ab.sh [SHAPE...]  (default: the list below; sparse1t
# and sparse1t:sock, which take minutes on the stock kernel under TCG, only
# on the patched one unless STOCK_1T=1; SHAPE:sock dumps through the
# coredump socket, see tests/vm/cases/kernel-coredump.sh)
# Writes bench/results/kernel-ab.{md,json} (7.3: kernel-ab-7.3.*); the raw
# results stay in the printed directory, one subdirectory per boot
# (bootNN-CLOCK-VARIANT).  Environment: KERNEL_AB_OUT (instead of
# bench/results), KCOREDUMP_BUILD (kcoredump build dir, see kernel/test.sh),
# UPTO (patches 1..N for the patched kernel), KERNEL_AB_REPEAT (dump every
# shape N times per boot; default 1), KERNEL_AB_VARIANTS (the boots, in
# order, repeats allowed; default "stock patched patched stock", run once
# per clock), KERNEL_AB_CLOCKS, KERNEL_AB_ICOUNT_SHIFT, KERNEL_AB_KCORE_REPS
# (the kcore reads and SEEK per boot: default 3 by the wall clock, 1 by
# icount, where they repeat exactly), KERNEL_AB_WORK
# (results directory; boots already there are not run again, so a run can
# be resumed or extended), KERNEL_AB_STOCK_KERNEL /
# KERNEL_AB_PATCHED_KERNEL (a bzImage build.sh made before, for test.sh
# --kernel).
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
	[[ ( "$s" == sparse1t || "$s" == sparse1t:sock ) && "${STOCK_1T:-0}" != 1 ]] || stock_shapes+=("$s")
done
read -ra variants <<< "${KERNEL_AB_VARIANTS:-stock patched patched stock}"
read -ra clocks <<< "${KERNEL_AB_CLOCKS:-wall icount}"
shift_n=${KERNEL_AB_ICOUNT_SHIFT:-0}
for v in "${variants[@]}"; do
	[[ "$v" == stock || "$v" == patched ]] || { echo "kernel-ab: unknown variant '$v'" >&2; exit 2; }
done
for c in "${clocks[@]}"; do
	[[ "$c" == wall || "$c" == icount ]] || { echo "kernel-ab: unknown clock '$c' (wall, icount)" >&2; exit 2; }
done
# The boots, in order: the variants' order once per clock, numbered per
# clock (bootNN-CLOCK-VARIANT).  A boot whose results are already in
# $KERNEL_AB_WORK is not run again (so the two clocks can also be run by
# two instances at once, KERNEL_AB_CLOCKS=wall and =icount, into one
# KERNEL_AB_WORK, and the table made by a last run with both).
for c in "${clocks[@]}"; do
	ref=
	n=0
	for v in "${variants[@]}"; do
		n=$((n + 1))
		b=$(printf 'boot%02d-%s-%s' "$n" "$c" "$v")
		if [[ -s "$work/$b/digests" ]]; then
			[[ -n "$ref" || $v != stock ]] || ref=$work/$b
			continue
		fi
		opts=(--base "$base" "--$v" --timeout 5400 --results "$work/$b")
		reps=${KERNEL_AB_KCORE_REPS:-3}
		if [[ $c == icount ]]; then
			opts+=(--icount "$shift_n")
			reps=${KERNEL_AB_KCORE_REPS:-1}
		fi
		if [[ $v == stock ]]; then
			opts+=(${KERNEL_AB_STOCK_KERNEL:+--kernel "$KERNEL_AB_STOCK_KERNEL"}
				kernel-ab --reps "$reps" "${stock_shapes[@]}")
		else
			opts+=(${KERNEL_AB_PATCHED_KERNEL:+--kernel "$KERNEL_AB_PATCHED_KERNEL"}
				${upto[@]+"${upto[@]}"} kernel-ab --reps "$reps" "${run_shapes[@]}")
		fi
		echo "kernel-ab: $b (load $(cut -d' ' -f1 /proc/loadavg))" >&2
		date -u +%s > "$work/$b.started"
		cat /proc/loadavg > "$work/$b.load-start"
		KCD_REFERENCE=$ref "$top/kernel/test.sh" "${opts[@]}" > "$work/$b.log" 2>&1 ||
			{ echo "kernel-ab: $b FAILED (see $work/$b.log)" >&2; rc=1; }
		cat /proc/loadavg > "$work/$b.load-end"
		[[ -n "$ref" || $v != stock || ! -s "$work/$b/digests" ]] || ref=$work/$b
	done
done

# One config for both (kernel/build.sh checks each build against it and
# test.sh records its sum): numbers of kernels built from two configs are
# not an A/B.
sums=$(cat "$work"/boot*-*/kernel-config-sum 2>/dev/null | cut -d" " -f1 | sort -u)
if [[ -z "$sums" || "$sums" == none* || $(wc -l <<< "$sums") -ne 1 ]]; then
	echo "kernel-ab: the boots in $work were not all of kernels built from one config" \
		"(config sums: ${sums//$'\n'/ }); no table" >&2
	exit 1
fi
/usr/bin/python3 - "$work" "$out" "$base" "$shift_n" <<'PY' || rc=1
import glob, json, os, re, statistics, sys, time
work, out, base, shift_n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
med = statistics.median
nan = float("nan")

def lines_of(d, name):
    try:
        return open(os.path.join(d, name)).read().splitlines()
    except OSError:
        return []

def read_boot(d):
    """One boot's measurements: per name, the median of its runs (s)."""
    r = {"uname": open(os.path.join(d, "uname")).read().strip(), "vread": {},
         "vread_fnv": {}, "dump_us": {}, "digests": {}}
    # (no kcore reads nor SEEK in a boot run with --reps 0)
    for l in lines_of(d, "vread"):
        f = l.split()
        r["vread"].setdefault(f[0], {"len": int(f[f.index("len") + 1]), "us": []})
        r["vread"][f[0]]["us"].append(int(f[f.index("us") + 1]))
    for l in lines_of(d, "vread-hash"):
        f = l.split()
        r["vread_fnv"][f[0]] = f[f.index("fnv") + 1]
    sk = [l.split() for l in lines_of(d, "seek")]
    r["seek_us"] = [int(f[1]) for f in sk]
    r["seek_extents"] = int(sk[0][3]) if sk else None
    for l in open(os.path.join(d, "dump-times")):
        f = l.split()
        r["dump_us"].setdefault(f[0], []).append(int(f[4]))
    for l in open(os.path.join(d, "digests")):
        f = l.split()
        r["digests"][f[0]] = f[1]
    return r

boots = []
for d in sorted(glob.glob(os.path.join(work, "boot[0-9]*-*-*"))):
    if not os.path.isdir(d):
        continue
    name = os.path.basename(d)
    m = re.fullmatch(r"boot(\d+)-(wall|icount)-(stock|patched)", name)
    if not m or not os.path.exists(os.path.join(d, "digests")):
        print(f"kernel-ab: {name} has no results; left out", file=sys.stderr)
        continue
    b = {"boot": name, "clock": m[2], "variant": m[3]}
    b.update(read_boot(d))
    load = []
    for w in ("start", "end"):
        try:
            load.append(float(open(f"{d}.load-{w}").read().split()[0]))
        except (OSError, ValueError, IndexError):
            load.append(nan)
    b["load"] = load
    try:
        b["t0"] = int(open(f"{d}.started").read())
        b["started"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(b["t0"]))
    except (OSError, ValueError):
        b["t0"], b["started"] = 0, "?"
    boots.append(b)
boots.sort(key=lambda b: (b["t0"], b["boot"]))  # in the order they ran

# per boot: name -> seconds (median of the runs in the boot)
def measures(b):
    m = {}
    for w, v in b["vread"].items():
        m[f"kcore: read {v['len'] / 2**20:.0f} MiB {w} vmalloc, 1 MiB preads"] = med(v["us"]) / 1e6
    if b["seek_us"]:
        m["kcore: SEEK_DATA/SEEK_HOLE over the whole file"] = med(b["seek_us"]) / 1e6
    for shape, us in b["dump_us"].items():
        m[f"coredump: {shape}"] = med(us) / 1e6
    return m
for b in boots:
    b["measures"] = measures(b)

names = []
for b in boots:
    for k in b["measures"]:
        if k not in names:
            names.append(k)
names.sort(key=lambda k: not k.startswith("kcore: "))  # kcore rows first (stable)
clocks = [c for c in ("wall", "icount") if any(b["clock"] == c for b in boots)]
summary = {}
for c in clocks:
    summary[c] = {}
    for k in names:
        e = {}
        for v in ("stock", "patched"):
            xs = [b["measures"][k] for b in boots
                  if b["clock"] == c and b["variant"] == v and k in b["measures"]]
            e[v] = {"boots": xs, "median": med(xs) if xs else nan}
        a, p = e["stock"]["median"], e["patched"]["median"]
        e["ratio"] = a / p if a == a and p == p and p > 0 else nan
        summary[c][k] = e

def fmt(x, spec, unit=""):
    return "-" if x != x else f"{x:{spec}}{unit}"
def nboots(c, v):
    return sum(1 for b in boots if b["clock"] == c and b["variant"] == v)
head = "| measurement |"
rule = "|---|"
for c in clocks:
    lab = "wall" if c == "wall" else f"icount (1 insn = {2**shift_n} ns)"
    head += (f" stock, {lab} ({nboots(c, 'stock')} boots) |"
             f" patched, {lab} ({nboots(c, 'patched')} boots) | stock/patched |")
    rule += "---:|---:|---:|"
lines = [head, rule]
for k in names:
    row = f"| {k} |"
    for c in clocks:
        e = summary[c][k]
        row += (f" {fmt(e['stock']['median'] * 1e3, '.2f', ' ms')} |"
                f" {fmt(e['patched']['median'] * 1e3, '.2f', ' ms')} | {fmt(e['ratio'], '.2f', 'x')} |")
    lines.append(row)
lines.append("")
lines.append("Every boot (per-boot medians, ms; host load average, 1 min, at the "
             "boot's start and end, on 2 CPUs):")
lines.append("")
cols = [k for k in names if k.startswith("coredump: ")]
lines.append("| boot | started | load | " + " | ".join(k[len("coredump: "):] for k in cols) + " |")
lines.append("|---|---|---|" + "---:|" * len(cols))
for b in boots:
    lines.append(f"| {b['boot']} | {b['started']} | {fmt(b['load'][0], '.2f')} -> "
                 f"{fmt(b['load'][1], '.2f')} | " +
                 " | ".join(fmt(b["measures"].get(k, nan) * 1e3, ".2f") for k in cols) + " |")
lines.append("")
# Every core must be the same on every boot of both kernels (outside the
# notes), and the mapped and unmapped reads the same bytes.
ref = next((b for b in boots if b["variant"] == "stock" and b["digests"]), None)
refv = next((b for b in boots if b["variant"] == "stock" and b["vread_fnv"]), None)
same, same_bytes = {}, {}
for b in boots:
    for shape, dg in b["digests"].items():
        if ref and shape in ref["digests"]:
            same[shape] = same.get(shape, True) and dg == ref["digests"][shape]
    for w, h in b["vread_fnv"].items():
        if refv and w in refv["vread_fnv"]:
            same_bytes[w] = same_bytes.get(w, True) and h == refv["vread_fnv"][w]
lines.append("vmalloc reads, same bytes on every boot (FNV of the non-zero words): " +
             ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in same_bytes.items()) +
             " (the window holds live allocations such as task stacks, which differ "
             "between any two boots: reported, not required)")
lines.append("cores identical outside the notes on every boot of both kernels: " +
             ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in same.items()))
cfg = open(glob.glob(os.path.join(work, "boot*-*", "kernel-config-sum"))[0]).read().split()[0]
lines.append(f"one config for both kernels: {cfg[:16]} (sha256 of build.sh's checked .config)")
unames = sorted({b["uname"] for b in boots})
lines.append(f"kernels: {', '.join(unames)} (QEMU TCG, 2 vCPUs, 1 GiB; per boot, kcore "
             "reads and SEEK: medians of their runs, coredumps: medians of the runs; then the "
             "median over the boots of each kernel)")
lines.append("boots in the order they ran: " + " ".join(b["boot"] for b in boots))
md = "\n".join(lines) + "\n"
sfx = "" if base == "6.12" else "-" + base
open(os.path.join(out, f"kernel-ab{sfx}.md"), "w").write(md)
json.dump({"boots": [{k: v for k, v in b.items()} for b in boots],
           "summary": summary, "icount_shift": shift_n},
          open(os.path.join(out, f"kernel-ab{sfx}.json"), "w"), indent=1)
print(md)
if not any(b["variant"] == "stock" for b in boots) or not any(b["variant"] == "patched" for b in boots):
    print("kernel-ab: not both kernels booted", file=sys.stderr)
    sys.exit(1)
sys.exit(0 if all(same.values()) and all(v for k, v in same_bytes.items() if k != "window") else 1)
PY
exit $rc
