#!/bin/bash
# The progress line (--progress forces it on a non-terminal) against the
# summary: its last report says 100%, all of the total done, and its
# "read", "holes", "excluded" and "shared" are the summary's bytes_read,
# bytes_hole, bytes_excluded and the rest of bytes_total, formatted as the
# summary formats sizes: the figures add up (issue 46 item 1).  Issue 19
# item 5: "holes" used to repeat the bytes read.
#   progress.sh KCOREDUMP PIDTARGET FIXDIR
set -uo pipefail
kcoredump=$1 target=$2 fixdir=$3
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
tpid=
# shellcheck disable=SC2317 # called through the trap
cleanup()
{
	[ -n "$tpid" ] && kill "$tpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

if ! command -v jq >/dev/null; then
	echo "1..0 # SKIP jq not installed"
	exit 77
fi

# compare NAME JSON STDERR: the last progress line against the summary.
compare()
{
	local name=$1 json=$2 err=$3
	/usr/bin/python3 - "$json" "$err" >"$tmp/cmp" 2>&1 <<'PY'
import json, re, sys
st = json.load(open(sys.argv[1]))["stats"]
lines = [l for l in open(sys.argv[2]).read().replace("\r", "\n").split("\n")
         if re.search(r"% .* of .*, read ", l)]
if not lines:
    sys.exit("no progress line")

def human(b):
    # cli_human_size(): bytes below 1 KiB exact, else one decimal.
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    v, u = float(b), 0
    while v >= 1024 and u + 1 < len(units):
        v /= 1024
        u += 1
    return "%d B" % b if u == 0 else "%.1f %s" % (v, units[u])

m = re.search(r"(\d+\.\d)%  (.+?) of (.+?), read (.+?), holes (.+?), ",
              lines[-1].rstrip())
if not m:
    sys.exit("cannot parse %r" % lines[-1])
pct, done, total, read, holes = m.groups()
# The rest of the logical bytes: excluded pages, segments that share
# another's memory.
excl = st.get("bytes_excluded", 0)
shared = st["bytes_total"] - st["bytes_read"] - st["bytes_hole"] - excl
got = (pct, done, total, read, holes,
       re.search(r", excluded ([^,]+),", lines[-1]),
       re.search(r", shared ([^,]+),", lines[-1]))
got = got[:5] + tuple(g.group(1) if g else None for g in got[5:])
want = ("100.0", human(st["bytes_total"]), human(st["bytes_total"]),
        human(st["bytes_read"]), human(st["bytes_hole"]),
        human(excl) if excl else None, human(shared) if shared else None)
print("last progress: %r\nsummary:       %r" % (got, want))
sys.exit(0 if got == want else 1)
PY
	local rc=$?
	check "$name: last progress line = summary (100%, read, holes, the rest)" \
		[ $rc -eq 0 ]
	diag "$tmp/cmp"
}

for f in sparse-1t vmcore-x86_64; do
	"$kcoredump" dump "$fixdir/$f.core" -o "$tmp/$f.elf" --progress \
		--json >"$tmp/$f.json" 2>"$tmp/$f.err"
	check "dump $f --progress exits 0" [ $? -eq 0 ]
	compare "dump $f" "$tmp/$f.json" "$tmp/$f.err"
done
# The holes differ from the bytes read on the sparse fixture: the check
# above can tell them apart.
check "sparse-1t: holes and bytes read differ" \
	[ "$(jq '.stats.bytes_hole != .stats.bytes_read' \
		"$tmp/sparse-1t.json")" = true ]

# pid: a process with a 1 GiB sparse area.
mkfifo "$tmp/in"
"$target" --dense 8 --sparse 1 --touched 4 --threads 1 <"$tmp/in" \
	>"$tmp/t.out" 2>&1 &
tpid=$!
exec {fd}>"$tmp/in"
for _ in $(seq 100); do
	grep -q '^ready' "$tmp/t.out" 2>/dev/null && break
	sleep 0.1
done
"$kcoredump" pid "$tpid" -o "$tmp/p.core" --progress --json \
	>"$tmp/p.json" 2>"$tmp/p.err"
rc=$?
if [ $rc -eq 5 ]; then
	skip "pid --progress: ptrace is not allowed here"
else
	check "pid --progress exits 0" [ $rc -eq 0 ]
	compare "pid" "$tmp/p.json" "$tmp/p.err"
fi
exec {fd}>&-

# verify --progress (issue 28 item 7: it was silent for as long as it
# read): lines "verify: P%  X of Y checked ...", the last one at 100% and
# "done", X = Y; without a terminal and without --progress, no line.
"$kcoredump" dump -q "$fixdir/vmcore-x86_64.core" -o "$tmp/v.zst"
for args in "" "$fixdir/vmcore-x86_64.core"; do
	# shellcheck disable=SC2086 # args: no SOURCE, or one
	"$kcoredump" verify --progress "$tmp/v.zst" $args >/dev/null 2>"$tmp/v.err"
	rc=$?
	last=$(grep '^verify: ' "$tmp/v.err" | tail -n 1) || true
	check "verify --progress${args:+ with SOURCE} exits 0 ($rc)" [ $rc -eq 0 ]
	check "verify --progress${args:+ with SOURCE}: the last line is 100%, done ('$last')" \
		bash -c "[[ '$last' == 'verify: 100.0%  '*' checked, '*', done, '* ]]"
	check "verify --progress${args:+ with SOURCE}: all of it checked" \
		bash -c "[[ '$last' =~ \ ([^ ]+\ [KMGT]?i?B)\ of\ ([^ ]+\ [KMGT]?i?B)\ checked ]] && [[ \${BASH_REMATCH[1]} == \${BASH_REMATCH[2]} ]]"
done
"$kcoredump" verify "$tmp/v.zst" >/dev/null 2>"$tmp/v.err"
check "verify without a terminal: no progress line" \
	bash -c "! grep -q '^verify: ' '$tmp/v.err'"
"$kcoredump" verify --progress -q "$tmp/v.zst" >"$tmp/v.out" 2>"$tmp/v.err"
check "verify -q --progress: progress on stderr, nothing on stdout" \
	bash -c "grep -q '^verify: 100' '$tmp/v.err' && [ ! -s '$tmp/v.out' ]"
finish
