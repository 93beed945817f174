#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 27 item 6: the store under many cores and concurrent crashes.
# Every handler used to look at every file of the store twice under the
# store lock: with 50,000 small cores stored, concurrent crashes waited
# out the lock and were cut.  Now the lock file keeps the totals (bytes,
# cores, per uid) and the directories' mtimes; a handler looks at the
# whole store only when those are stale or a limit needs cores removed.
#  - 50,000 stored, 16 handlers at once: all 16 complete, none cut, and
#    none looks at the whole store;
#  - a core placed behind the handlers' backs is still counted;
#  - --max-cores and --max-cores-per-user remove the oldest first.
# (A lock held by another process, reason lock-timeout: security-ch-lock.)
#   ch-store-scale.sh KCOREDUMP MKCORE SPECDIR
set -uo pipefail
kcoredump=$1 mkcore=$2 specdir=$3
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

"$mkcore" "$specdir/process-x86_64.spec" "$tmp/p.core" >/dev/null || { not_ok "mkcore"; finish; }

# fake DIR FIRST COUNT UID...: COUNT tiny cores with our metadata, crash
# times FIRST, FIRST+1, ..., spread over the uids, as a handler names them.
fake() {
	"$PY" - "$@" <<'PYEOF'
import os, sys
d, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
uids = [int(u) for u in sys.argv[4:]]
for i in range(count):
    uid, t = uids[i % len(uids)], first + i
    base = "%s/core.fake.%d.%d.%d" % (d, uid, 100000 + i, t)
    with open(base + ".json", "w") as f:
        f.write('{\n  "kcoredump_metadata": 1,\n  "pid": %d,\n  "uid": %d,\n'
                '  "time": %d,\n  "complete": true\n}\n' % (100000 + i, uid, t))
    with open(base, "w") as f:
        f.write("x")
PYEOF
}
count() { find "$1" -maxdepth 1 -name 'core.*.json' | wc -l; }
used() { find "$1" -name 'core.*' -type f -printf '%b\n' | awk '{ s += $1 * 512 } END { print s + 0 }'; }
limits=(--max-use 1G --keep-free 0)

# --- 50,000 cores, 16 crashes at once -------------------------------------------
d=$(newstore many)
fake "$d" 1600000000 50000 1000 1001 1002 1003 || { not_ok "making 50,000 cores"; finish; }
handler "$d" "${limits[@]}" 4242 1000 1000 6 1700000000 first <"$tmp/p.core" 2>"$tmp/err0"
check "the first handler exits 0" [ $? -eq 0 ]
check "... and stores its core complete" quiet jq -e '.complete' "$d/core.first.1000.4242.1700000000.json"
# Who reads the metadata files shows in their atime (relatime updates
# an atime older than the mtime): set them in the past, and see.
atimes() {
	"$PY" - "$@" <<'PYEOF'
import glob, os, sys
mode, d = sys.argv[1], sys.argv[2]
old, n = 10**18, 0
for p in glob.glob(d + "/core.fake.*.json"):
    st = os.stat(p)
    if mode == "set":
        os.utime(p, ns=(old, st.st_mtime_ns))
    elif st.st_atime_ns != old:
        n += 1
print(n)
PYEOF
}
echo x >"$tmp/probe.json"
"$PY" -c 'import os, sys; os.utime(sys.argv[1], ns=(10**18, os.stat(sys.argv[1]).st_mtime_ns))' "$tmp/probe.json"
cat "$tmp/probe.json" >/dev/null
atime_works=false
[ "$(stat -c %X "$tmp/probe.json")" != 1000000000 ] && atime_works=true
$atime_works && atimes set "$d" >/dev/null
pids=()
for i in $(seq 1 16); do
	handler "$d" "${limits[@]}" $((5000 + i)) 1000 1000 6 1700000100 "c$i" \
		<"$tmp/p.core" 2>"$tmp/err.$i" &
	pids+=($!)
done
bad=0
for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
check "16 handlers at once all exit 0 ($bad did not)" [ "$bad" -eq 0 ]
complete=0 cut=0
for i in $(seq 1 16); do
	m=$d/core.c$i.1000.$((5000 + i)).1700000100.json
	if jq -e '.complete' "$m" >/dev/null 2>&1; then
		complete=$((complete + 1))
	fi
	if jq -e '.truncation_reason == "max-use" or .truncation_reason == "lock-timeout"' \
		"$m" >/dev/null 2>&1; then
		cut=$((cut + 1))
	fi
done
check "all 16 cores are stored complete ($complete)" [ "$complete" -eq 16 ]
check "none is cut for max-use or lock-timeout ($cut)" [ "$cut" -eq 0 ]
looks=$(cat "$tmp"/err.* | grep -c 'looked at the whole store' || true)
check "none of the 16 looked at the whole store: the lock file's totals ($looks looks)" \
	[ "$looks" -eq 0 ]
if $atime_works; then
	n=$(atimes count "$d")
	check "none of the 16 read the 50,000 metadata files ($n were read)" [ "$n" -eq 0 ]
else
	skip "this file system does not update atimes (noatime): who reads is not seen"
fi
check "the 50,017 cores are all there ($(count "$d"))" [ "$(count "$d")" -eq 50017 ]
rm -rf "$d"

# --- a core placed behind the handlers' backs -----------------------------------
d=$(newstore behind)
handler "$d" "${limits[@]}" 4242 0 0 6 1700000000 one <"$tmp/p.core" 2>/dev/null
check "a first core is stored" [ -s "$d/core.one.0.4242.1700000000" ]
big=$d/core.big.0.1.1800000000
printf '{\n  "kcoredump_metadata": 1,\n  "uid": 0,\n  "time": 1800000000\n}\n' >"$big.json"
fallocate -l 16M "$big" || { not_ok "fallocate"; finish; }
handler "$d" --max-use 12M --keep-free 0 4242 0 0 6 1800000001 two <"$tmp/p.core" 2>"$tmp/err"
check "the next handler exits 0" [ $? -eq 0 ]
n=$(used "$d")
check "it counted the 16 MiB placed behind its back: the store holds $n bytes (at most 12 MiB)" \
	[ "$n" -le $((12 << 20)) ]
check "... and its own core is complete" quiet jq -e '.complete' "$d/core.two.0.4242.1800000001.json"

# --- --max-cores ----------------------------------------------------------------
d=$(newstore maxcores)
fake "$d" 1 5 1000
handler "$d" "${limits[@]}" --max-cores 3 4242 1000 1000 6 1700000000 new <"$tmp/p.core" 2>"$tmp/err"
check "--max-cores 3: the handler exits 0" [ $? -eq 0 ]
check "... 3 cores are left ($(count "$d"))" [ "$(count "$d")" -eq 3 ]
check "... the 3 oldest went" \
	bash -c "! ls '$d'/core.fake.1000.10000[012].* >/dev/null 2>&1"
check "... the 2 newest stayed" \
	[ -e "$d/core.fake.1000.100003.4" -a -e "$d/core.fake.1000.100004.5.json" ]
check "... and the new core is complete" quiet jq -e '.complete' "$d/core.new.1000.4242.1700000000.json"
handler "$d" --max-cores 3 4242 1000 1000 6 1700000001 newer <"$tmp/p.core" 2>/dev/null
check "--max-cores alone (no size limit) holds too ($(count "$d"))" [ "$(count "$d")" -eq 3 ]

# --- --max-cores-per-user -------------------------------------------------------
d=$(newstore peruser)
fake "$d" 1 6 1000 2000
handler "$d" "${limits[@]}" --max-cores-per-user 2 4242 1000 1000 6 1700000000 new \
	<"$tmp/p.core" 2>"$tmp/err"
check "--max-cores-per-user 2: the handler exits 0" [ $? -eq 0 ]
n1=$(find "$d" -name 'core.*.1000.*.json' | wc -l)
n2=$(find "$d" -name 'core.*.2000.*.json' | wc -l)
check "... uid 1000 keeps 2 cores ($n1), uid 2000 its 3 ($n2)" [ "$n1" -eq 2 -a "$n2" -eq 3 ]
check "... uid 1000's oldest two went, its newest stayed" \
	[ ! -e "$d/core.fake.1000.100000.1.json" -a ! -e "$d/core.fake.1000.100002.3.json" \
		-a -e "$d/core.fake.1000.100004.5.json" ]
finish
