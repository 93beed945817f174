#!/bin/bash
# SPDX-License-Identifier: MIT
# How much /proc/kcore readers delay vmalloc() and vfree(), stock vs patched
# Linux 6.12 (tests/vm/cases/kernel-lock.sh, one boot per kernel): p50/p99/
# p99.9/max latency of vmalloc(16 KiB) and vfree() on one vCPU while the
# other is idle, re-reads a mapped 16 MiB vmalloc area through /proc/kcore,
# or runs `kcoredump dump --vmalloc-range` in a loop.  With LOCK_STAT=1 the
# KASAN + lockdep + lock_stat kernels (kernel/build.sh --debug) are booted
# instead and the hold times of the vmap node busy lock (and the vmap block
# lock) per phase are reported from /proc/lock_stat as well.
# Usage: bench/kernel-lock.sh [ROUNDS]   (default 20000 rounds per run)
# Writes bench/results/kernel-lock[-lockstat].{md,json}; environment:
# KERNEL_LOCK_OUT (instead of bench/results), KERNEL_LOCK_WORK (results
# directory; variants already there are reused), KCOREDUMP_BUILD.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../tests/lib/shell.sh
source "$top/tests/lib/shell.sh"
kcd_trap_errors
rounds=${1:-20000}
work=${KERNEL_LOCK_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/kernel-lock.XXXXXX")}
out=${KERNEL_LOCK_OUT:-$here/results}
mkdir -p "$out" "$work"
echo "kernel-lock: results in $work" >&2
debug=() name=kernel-lock
if [[ "${LOCK_STAT:-0}" == 1 ]]; then
	debug=(--debug) name=kernel-lock-lockstat
fi
rc=0
for v in stock patched; do
	[[ ! -s "$work/$v/latency" ]] || continue
	cat /proc/loadavg > "$work/loadavg-$v-start"
	"$top/kernel/test.sh" "--$v" ${debug[@]+"${debug[@]}"} --timeout 3600 \
		--results "$work/$v" kernel-lock "$rounds" || rc=1
	cat /proc/loadavg > "$work/loadavg-$v-end"
done

/usr/bin/python3 - "$work" "$out" "$name" <<'PY' || rc=1
import json, os, statistics, sys
work, out, name = sys.argv[1:4]
res = {}
for v in ("stock", "patched"):
    d = os.path.join(work, v)
    r = {"uname": open(os.path.join(d, "uname")).read().strip(), "latency": {},
         "lock_stat": {}}
    for l in open(os.path.join(d, "latency")):
        f = l.split()
        ph = f[0]
        va = f[f.index("vmalloc_ns") + 1:f.index("vfree_ns")]
        vf = f[f.index("vfree_ns") + 1:]
        get = lambda xs: {xs[i]: int(xs[i + 1]) for i in range(0, len(xs), 2)}
        r["latency"].setdefault(ph, []).append({"vmalloc": get(va), "vfree": get(vf)})
    hdr = os.path.join(d, "lock_stat.header")
    cols = None
    if os.path.exists(hdr):
        for l in open(hdr):
            if "class name" in l:
                cols = l.split()[2:]
    for ph in ("idle", "vread", "dump"):
        f = os.path.join(d, f"lock_stat.{ph}")
        if not os.path.exists(f):
            continue
        for l in open(f):
            if ":" not in l:
                continue
            cname, vals = l.split(":", 1)
            vals = vals.split()
            if cols and len(vals) == len(cols):
                r["lock_stat"].setdefault(ph, {})[cname.strip()] = dict(zip(cols, vals))
    try:
        r["loadavg"] = [open(os.path.join(work, f"loadavg-{v}-{w}")).read().split()[0]
                        for w in ("start", "end")]
    except OSError:
        r["loadavg"] = ["?", "?"]
    res[v] = r
med = statistics.median
lines = ["| phase | call | stock p50 / p99 / p99.9 / max (us) | patched p50 / p99 / p99.9 / max (us) |",
         "|---|---|---:|---:|"]
def cell(runs, call):
    q = [med(x[call][k] for x in runs) / 1000 for k in ("p50", "p99", "p999", "max")]
    return " / ".join(f"{x:.1f}" for x in q)
for ph in ("idle", "vread", "dump"):
    for call in ("vmalloc", "vfree"):
        if ph in res["stock"]["latency"] and ph in res["patched"]["latency"]:
            lines.append(f"| {ph} | {call} | {cell(res['stock']['latency'][ph], call)} | "
                         f"{cell(res['patched']['latency'][ph], call)} |")
if res["stock"]["lock_stat"] or res["patched"]["lock_stat"]:
    lines += ["", "| phase | lock class | stock acquisitions, hold avg / max (us) | patched acquisitions, hold avg / max (us) |",
              "|---|---|---:|---:|"]
    def hold(v, ph, c):
        x = res[v]["lock_stat"].get(ph, {}).get(c)
        if not x:
            return "-"
        return f"{x.get('acquisitions', '?')}, {x.get('holdtime-avg', '?')} / {x.get('holdtime-max', '?')}"
    for ph in ("idle", "vread", "dump"):
        classes = sorted(set(res["stock"]["lock_stat"].get(ph, {})) |
                         set(res["patched"]["lock_stat"].get(ph, {})))
        for c in classes:
            lines.append(f"| {ph} | {c} | {hold('stock', ph, c)} | {hold('patched', ph, c)} |")
lines.append("")
lines.append("Medians of 3 runs per phase: vmalloc(16 KiB) + vfree() rounds on vCPU 0 while "
             "vCPU 1 is idle (idle), re-reads a mapped 16 MiB vmalloc area through /proc/kcore "
             "in 1 MiB preads (vread) or runs `kcoredump dump --vmalloc-range` in a loop (dump).")
lines.append(f"kernels: {res['stock']['uname']} / {res['patched']['uname']} (QEMU TCG, 2 vCPUs, 1 GiB); "
             f"host load average (1 min) stock {' -> '.join(res['stock']['loadavg'])}, "
             f"patched {' -> '.join(res['patched']['loadavg'])} (2 CPUs)")
md = "\n".join(lines) + "\n"
open(os.path.join(out, name + ".md"), "w").write(md)
json.dump(res, open(os.path.join(out, name + ".json"), "w"), indent=1)
print(md)
PY
exit $rc
