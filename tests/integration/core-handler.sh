#!/bin/bash
# SPDX-License-Identifier: MIT
# kcoredump core-handler fed through a pipe, as the kernel does: the
# stored core is identical to the stream (cmp, zstd -d, extract), sparse,
# described by its metadata (checked against our own digest in Python and
# eu-unstrip's build IDs for a real core); the limits truncate cleanly
# (eu-readelf and kcoredump info still read the result); a stalled pipe
# times out; symlinked or shared directories are refused.
#   core-handler.sh KCOREDUMP FIXDIR
set -uo pipefail
kcoredump=$1 fixdir=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PY=/usr/bin/python3
fix=$fixdir/process-x86_64.core
[ -f "$fix" ] || { echo "no fixture $fix"; exit 77; }

handler() { # DIR ARGS... < stream
	local dir=$1
	shift
	"$kcoredump" core-handler --dir "$dir" --no-sync --no-journal "$@"
}
quiet() { "$@" >/dev/null 2>&1; }
alloc() { echo $(($(stat -c %b "$1") * $(stat -c %B "$1"))); }

# Our documented digest (kcoredump-sha256-v1) of FILE's first N bytes.
digest() {
	"$PY" - "$1" "$2" <<'PY'
import hashlib, struct, sys
path, size = sys.argv[1], int(sys.argv[2])
h = hashlib.sha256(b"kcoredump-sha256-v1\0" + struct.pack("<Q", size))
with open(path, "rb") as f:
    i = 0
    while i * (1 << 20) < size:
        b = f.read(min(1 << 20, size - i * (1 << 20)))
        if b.count(0) != len(b):
            h.update(struct.pack("<Q", i) + hashlib.sha256(b).digest())
        i += 1
print(h.hexdigest())
PY
}

# Every PT_LOAD's file range lies inside the file.
inside() {
	"$PY" - "$1" <<'PY'
import os, struct, sys
p = sys.argv[1]
size = os.path.getsize(p)
with open(p, "rb") as f:
    eh = f.read(64)
    phoff, = struct.unpack_from("<Q", eh, 32)
    phnum, = struct.unpack_from("<H", eh, 56)
    shoff, = struct.unpack_from("<Q", eh, 40)
    if phnum == 0xffff:
        f.seek(shoff)
        phnum, = struct.unpack_from("<I", f.read(64), 44)
    f.seek(phoff)
    raw = f.read(56 * phnum)
bad = [i for i in range(phnum)
       if struct.unpack_from("<Q", raw, 56 * i + 8)[0] +
       struct.unpack_from("<Q", raw, 56 * i + 32)[0] > size
       and struct.unpack_from("<Q", raw, 56 * i + 32)[0]]
sys.exit(1 if bad else 0)
PY
}

# --- a complete core, sparse ELF ------------------------------------------
d=$tmp/d1
mkdir -m 700 "$d"
handler "$d" 4242 1000 1001 6 1700000000 crashme < "$fix" 2>"$tmp/err"
check "process core: exit 0" [ $? -eq 0 ]
core=$d/core.crashme.1000.4242.1700000000
m=$core.json
check "process core: stored core is cmp-identical to the stream" cmp -s "$fix" "$core"
data=$(jq .data_bytes "$m")
a=$(alloc "$core")
check "process core: allocated $a bytes for $data data bytes (stream $(stat -c %s "$fix"))" \
	[ "$a" -le $((data + 65536)) ]
check "process core: mode 0600" [ "$(stat -c %a "$core") $(stat -c %a "$m")" = "600 600" ]
check "process core: metadata fields" quiet jq -e '.pid == 4242 and .uid == 1000 and .gid == 1001
	and .signal == 6 and .signal_name == "SIGABRT" and .time == 1700000000
	and .comm == "crashme" and .executable == "/usr/bin/crashme"
	and .prpsinfo_fname == "crashme" and .threads == 3 and .complete
	and .format == "elf" and .stream_bytes == .file_size' "$m"
check "process core: sha256 is kcoredump-sha256-v1 of the stream" \
	[ "$(jq -r .sha256 "$m")" = "$(digest "$fix" "$(stat -c %s "$fix")")" ]
check "process core: kcoredump info reads it" quiet "$kcoredump" info "$core"
check "process core: a one-line log on stderr" grep -q "stored the core of pid 4242" "$tmp/err"

# A comm that is not all UTF-8: valid JSON, safe file name.
handler "$d" 4242 1000 1001 6 1700000002 $'caf\xc3\xa9 \xff/x' < "$fix" 2>/dev/null
check "odd comm: valid JSON with U+FFFD, file name of safe bytes" \
	quiet jq -e '.comm == "caf\u00e9 \ufffd/x"' "$d/core.caf_____x.1000.4242.1700000002.json"
rm -f "$d"/core.caf*

# --- the same as .zst -----------------------------------------------------
handler "$d" -c zstd 4242 1000 1001 6 1700000001 crashme < "$fix" 2>/dev/null
z=$d/core.crashme.1000.4242.1700000001.zst
check "zstd: zstd -d gives the stream" bash -c "zstd -qdc '$z' | cmp -s - '$fix'"
"$kcoredump" extract -q "$z" -o "$tmp/x.core"
check "zstd: kcoredump extract gives the stream" cmp -s "$tmp/x.core" "$fix"
check "zstd: the headers and notes are compressed ($(first_frame "$z"))" compressed_headers "$z"
check "zstd: kcoredump info reads it" quiet "$kcoredump" info "$z"
mkdir -m 700 "$tmp/dxz"
handler "$tmp/dxz" -c xz 4242 1000 1001 6 1700000001 crashme < "$fix" 2>/dev/null
xzc=$tmp/dxz/core.crashme.1000.4242.1700000001.xz
check "xz: xz -d gives the stream" bash -c "xz -qdc '$xzc' | cmp -s - '$fix'"
check "xz: the headers and notes are compressed ($(first_frame "$xzc"))" compressed_headers "$xzc"
check "xz: kcoredump info reads it" quiet "$kcoredump" info "$xzc"
check "list --json: two cores, oldest first" quiet jq -e '(.cores | length) == 2 and
	.cores[0].time == 1700000000 and .cores[1].core == "core.crashme.1000.4242.1700000001.zst"
	and all(.cores[]; .status == "complete" and .core_present)' \
	<("$kcoredump" list --dir "$d" --json)
check "list: text names both" bash -c "'$kcoredump' list --dir '$d' | grep -c 'core.crashme' | grep -qx 2"

# --- list: coredumpctl's matches and options --------------------------------
dl=$tmp/dl
mkdir -m 700 "$dl"
handler "$dl" 4242 1000 1001 6 1700000000 crashme < "$fix" 2>/dev/null
handler "$dl" 4243 1000 1002 11 1700086400 other < "$fix" 2>/dev/null
handler "$dl" 4244 0 0 11 1700172800 third < "$fix" 2>/dev/null
pids() { "$kcoredump" list --dir "$dl" --json "$@" 2>/dev/null | jq -c '[.cores[].pid]'; }
check "list: all three, oldest first" [ "$(pids)" = "[4242,4243,4244]" ]
check "list PID" [ "$(pids 4243)" = "[4243]" ]
check "list COMM and COMM=: alternatives" [ "$(pids other COMM=third)" = "[4243,4244]" ]
check "list SIGNAL=SIGSEGV UID=1000: both must hold" [ "$(pids SIGNAL=SIGSEGV UID=1000)" = "[4243]" ]
check "list COREDUMP_GID=1001" [ "$(pids COREDUMP_GID=1001)" = "[4242]" ]
check "list EXE path" [ "$(pids "$(jq -r .executable "$dl/core.crashme.1000.4242.1700000000.json")")" = "[4242,4243,4244]" ]
check "list -S/-U" [ "$(pids -S 2023-11-15 -U '2023-11-15 23:59:59')" = "[4243]" ]
check "list -S @EPOCH" [ "$(pids -S @1700086401)" = "[4244]" ]
check "list -1" [ "$(pids -1)" = "[4244]" ]
check "list -n 2 --reverse" [ "$(pids -n 2 --reverse)" = "[4244,4243]" ]
check "list -n 2 -r (coredumpctl's letters)" [ "$(pids -n 2 -r)" = "[4244,4243]" ]
check "list -rn1" [ "$(pids -rn1)" = "[4244]" ]
check "list: nothing matches" [ "$(pids COMM=nope)" = "[]" ]
"$kcoredump" list --dir "$dl" FOO=1 >/dev/null 2>&1
check "list: an unknown field is a usage error" [ $? -eq 2 ]
"$kcoredump" list --dir "$dl" -S yesterdayish >/dev/null 2>&1
check "list: a bad time is a usage error" [ $? -eq 2 ]
"$kcoredump" show --dir "$dl" 4243 >"$tmp/show.out" 2>&1
check "show PID: the record" bash -c "grep -qE '^ +PID: 4243 \(other\)$' '$tmp/show.out' &&
	grep -qE '^ +GID: 1002$' '$tmp/show.out' && grep -qE '^ +Signal: 11 \(SIGSEGV\)$' '$tmp/show.out' &&
	grep -qE '^ +Command Line: /usr/bin/crashme --table' '$tmp/show.out' &&
	grep -qE '^ +Storage: $dl/core.other.1000.4243.1700086400 \(present\)$' '$tmp/show.out' &&
	grep -qE '^ +Complete: true$' '$tmp/show.out'"
check "show -1: the newest only" bash -c "'$kcoredump' show --dir '$dl' -1 | grep -cE '^ +PID: ' | grep -qx 1 &&
	'$kcoredump' show --dir '$dl' -1 | grep -qE '^ +PID: 4244 '"
check "show: every match" bash -c "'$kcoredump' show --dir '$dl' UID=1000 | grep -cE '^ +PID: ' | grep -qx 2"
"$kcoredump" show --dir "$dl" COMM=nope >/dev/null 2>&1
check "show: no match exits 1" [ $? -eq 1 ]
check "show -S/-U: the one crash of that day" bash -c "'$kcoredump' show --dir '$dl' -S 2023-11-15 -U 2023-11-15 |
	grep -E '^ +PID: ' | grep -qxE ' +PID: 4243 \\(other\\)'"
"$kcoredump" show --dir "$dl" --json 4243 >"$tmp/show.json" 2>"$tmp/show.jerr"
check "show --json: one record with list's fields, storage and the metadata" bash -c "
	jq -e '.cores | length == 1' '$tmp/show.json' >/dev/null &&
	jq -e '.cores[0] | .pid == 4243 and .gid == 1002 and .comm == \"other\" and .core_present' '$tmp/show.json' >/dev/null &&
	jq -e '.cores[0].path == \"$dl/core.other.1000.4243.1700086400\"' '$tmp/show.json' >/dev/null &&
	jq -e '.cores[0].record == \$m[0]' --slurpfile m '$dl/core.other.1000.4243.1700086400.json' '$tmp/show.json' >/dev/null"
check "show --json -1 and no match" bash -c "'$kcoredump' show --dir '$dl' --json -1 | jq -e '[.cores[].pid] == [4244]' >/dev/null &&
	{ '$kcoredump' show --dir '$dl' --json COMM=nope >'$tmp/none.json' 2>/dev/null; [ \$? -eq 1 ]; } &&
	jq -e '.cores == []' '$tmp/none.json' >/dev/null"
cp "$dl/core.other.1000.4243.1700086400.json" "$tmp/meta.bak"
# Truncated (a full disk): the lines before the cut are still parsed.
head -c 200 "$tmp/meta.bak" >"$dl/core.other.1000.4243.1700086400.json"
"$kcoredump" show --dir "$dl" --json >"$tmp/bad.json" 2>/dev/null
check "show --json: a broken metadata document is null with record_error, the rest valid" bash -c "
	jq -e '[.cores[] | select(.record == null and .record_error != null)] | length == 1' '$tmp/bad.json' >/dev/null"
cp "$tmp/meta.bak" "$dl/core.other.1000.4243.1700086400.json"
"$kcoredump" show --dir "$dl" -U yesterdayish >"$tmp/show.err" 2>&1
check "show: a bad time is a usage error naming show" bash -c "[ $? -eq 2 ] && grep -q 'show.*yesterdayish' '$tmp/show.err'"
# debug: the debugger on the newest match; a .zst extracted privately.
dd=$tmp/dd
mkdir -m 700 "$dd"
handler "$dd" 4250 1000 1000 6 1700000500 crashme < "$fix" 2>/dev/null
handler "$dd" -c zstd 4251 1000 1000 6 1700000600 crashme < "$fix" 2>/dev/null
cat >"$tmp/fakedbg" <<'SH'
#!/bin/bash
# Stands in for gdb: its arguments, and the core's first bytes.
printf '%s\n' "$@" >"${0%/*}/fakedbg.args"
head -c 4 "${@: -1}" | od -An -c | tr -d ' ' >"${0%/*}/fakedbg.magic"
exit 3
SH
chmod +x "$tmp/fakedbg"
# The fixture is uid 1000's core: with --open-mapped-files (root runs
# this), the debugger gets the guard arguments first (tests/security/
# debug-paths.sh checks them).
"$kcoredump" debug --dir "$dd" --debugger "$tmp/fakedbg" -A "-q --x 'a b'" crashme 2>/dev/null
st=$?
want=5
[ "$(id -u)" = 1000 ] && want=3
check "debug of another user's core needs --open-mapped-files (exit $st)" [ "$st" -eq "$want" ]
"$kcoredump" debug --dir "$dd" --debugger "$tmp/fakedbg" --open-mapped-files -A "-q --x 'a b'" crashme 2>/dev/null
st=$?
zcore=$(tail -1 "$tmp/fakedbg.args")
check "debug: the debugger's exit status ($st)" [ $st -eq 3 ]
check "debug: arguments, then -c and the newest match extracted" bash -c "
	[ \"\$(grep -v -e '^-iex\$' -e '^set ' '$tmp/fakedbg.args' | head -3 | tr '\n' '|')\" = '-q|--x|a b|' ] &&
	[ \"\$(tail -2 '$tmp/fakedbg.args' | head -1)\" = -c ] && [ '$zcore' != '$dd/core.crashme.1000.4251.1700000600.zst' ]"
check "debug: the debugger saw a plain ELF core" [ "$(cat "$tmp/fakedbg.magic")" = '177ELF' ]
check "debug: the extracted core and its directory are gone afterwards" \
	bash -c "[ ! -e '$zcore' ] && [ ! -e '${zcore%/*}' ] && [ '${zcore%/*}' != '$dd' ]"
"$kcoredump" debug --dir "$dd" --debugger "$tmp/fakedbg" --open-mapped-files 4250 2>/dev/null
check "debug PID: the plain core in place" [ "$(tail -1 "$tmp/fakedbg.args")" = "$dd/core.crashme.1000.4250.1700000500" ]
"$kcoredump" debug --dir "$dd" --open-mapped-files -A "-batch -ex 'info threads'" 4251 >"$tmp/gdb.out" 2>&1
check "debug with gdb: the .zst core's 3 threads" [ "$(grep -cE '^\*? +[0-9]+ +(Thread|LWP) ' "$tmp/gdb.out")" = 3 ]
"$kcoredump" debug --dir "$dd" --debugger "$tmp/fakedbg" COMM=nope 2>/dev/null
check "debug: no match exits 1" [ $? -eq 1 ]

check "list: text has GID and EXE columns" bash -c "'$kcoredump' list --dir '$dl' 4243 |
	awk 'NR == 1 { ok = \$4 == \"GID\" && \$NF == \"EXE\" } NR == 2 { ok = ok && \$4 == 1002 } END { exit !ok }'"

# --- PN_XNUM (70003 program headers) ----------------------------------------
x=$fixdir/pn-xnum.core
if [ -f "$x" ]; then
	handler "$d" 6000 0 0 6 1700000100 manymaps < "$x" 2>/dev/null
	check "PN_XNUM: stored core is cmp-identical" cmp -s "$x" "$d/core.manymaps.0.6000.1700000100"
	handler "$d" --max-size 8K 6000 0 0 6 1700000101 manymaps < "$x" 2>/dev/null
	t=$d/core.manymaps.0.6000.1700000101
	check "PN_XNUM truncated: every segment inside the file" inside "$t"
	check "PN_XNUM truncated: eu-readelf -l reads it" quiet eu-readelf -l "$t"
fi

# --- a 32-bit (i386) core: its notes decoded for the metadata -----------------
x=$fixdir/bad-elf32.core
if [ -f "$x" ]; then
	handler "$d" 100 0 0 11 1700000110 victim < "$x" 2>/dev/null
	t=$d/core.victim.0.100.1700000110
	check "i386: stored core is cmp-identical" cmp -s "$x" "$t"
	check "i386: metadata has PRPSINFO's name and args, no note error" quiet jq -e \
		'.prpsinfo_fname == "victim" and .prpsinfo_args == "./victim" and .threads == 1
		and .note_error == null' "$t.json"
fi

# --- --max-size: truncated cleanly ------------------------------------------
d=$tmp/d2
mkdir -m 700 "$d"
handler "$d" --max-size 40K 4242 1000 1000 6 1700000200 crashme < "$fix" 2>"$tmp/err"
check "max-size: exit 0" [ $? -eq 0 ]
t=$d/core.crashme.1000.4242.1700000200
check "max-size: marked incomplete, reason max-size" quiet jq -e '.complete == false and
	.truncation_reason == "max-size" and .file_size == .cut_offset and .segments_cut > 0
	and .data_bytes <= 40960' "$t.json"
check "max-size: file ends at the cut" [ "$(stat -c %s "$t")" = "$(jq .cut_offset "$t.json")" ]
check "max-size: allocated <= 40 KiB + slack" [ "$(alloc "$t")" -le $((40960 + 16384)) ]
check "max-size: every segment inside the file" inside "$t"
check "max-size: eu-readelf -l -n reads it" quiet eu-readelf -l -n "$t"
check "max-size: kcoredump info reads it" quiet "$kcoredump" info "$t"
check "max-size: gdb reads it" bash -c "gdb -batch -ex 'info files' -c '$t' 2>&1 | grep -q 'Local core dump file'"
check "max-size: logged" grep -q "truncated at offset .*(max-size)" "$tmp/err"
# Apart from the program headers and our note in the zeros after the
# kernel's notes (the core says it is cut), the bytes are the stream's.
cut=$(jq .cut_offset "$t.json")
check "max-size: bytes outside the program headers and our note are the stream's" \
	python3 - "$t" "$fix" "$cut" <<'PY'
import struct, sys
got = open(sys.argv[1], "rb").read()
want = open(sys.argv[2], "rb").read()[: int(sys.argv[3])]
phoff, = struct.unpack_from("<Q", want, 32)
phnum, = struct.unpack_from("<H", want, 56)
phend = phoff + 56 * phnum
for i in range(phnum):
    t, _, off, _, _, fsz = struct.unpack_from("<IIQQQQ", want, phoff + 56 * i)
    if t == 4:  # PT_NOTE: ours follows the kernel's, where it had zeros
        nend = off + fsz
        _, _, off2, _, _, fsz2 = struct.unpack_from("<IIQQQQ", got, phoff + 56 * i)
        mark = bytes(got[nend : off2 + fsz2])
        assert off2 == off and b"KCOREDUMP" in mark, "no note after the kernel's"
        assert want[nend : off2 + fsz2] == bytes(len(mark)), "note over data"
        got = got[:nend] + want[nend : off2 + fsz2] + got[off2 + fsz2 :]
sys.exit(0 if len(got) == len(want) and got[phend:] == want[phend:] else 1)
PY
check "max-size: info says the core is incomplete" \
	bash -c "'$kcoredump' info --json '$t' | jq -e '.source.complete == false' >/dev/null"
"$kcoredump" verify "$t" >"$tmp/verify.out" 2>&1
st=$?
check "max-size: verify says INCOMPLETE, exit 7 ($st)" \
	bash -c "[ $st -eq 7 ] && grep -q INCOMPLETE '$tmp/verify.out'"
check "max-size: the metadata says the core is marked" quiet jq -e '.marked_in_core == true' "$t.json"
check "max-size: digest of the stored stream bytes" \
	[ "$(jq -r .sha256 "$t.json")" = "$(digest "$fix" "$cut")" ]

# --- --keep-free: nothing but the headers fits --------------------------------
handler "$d" --keep-free $((1 << 60)) 4242 1000 1000 6 1700000300 crashme < "$fix" 2>/dev/null
t=$d/core.crashme.1000.4242.1700000300
check "keep-free: reason keep-free, headers only" quiet jq -e '.truncation_reason == "keep-free"
	and .segments_cut > 0' "$t.json"
check "keep-free: still a readable ELF" quiet eu-readelf -l "$t"
# The cut rewrites the headers: compressed, they are rewritten in their
# frame (or the rest moves), and give the same core.
for c in zstd xz; do
	dk=$tmp/dk$c
	mkdir -m 700 "$dk"
	handler "$dk" -c $c --keep-free $((1 << 60)) 4242 1000 1000 6 1700000300 crashme < "$fix" 2>/dev/null
	zk=$(echo "$dk"/core.crashme.1000.4242.1700000300.*[tz])
	check "keep-free $c: $c -d gives the plain cut core" bash -c "$c -qdc '$zk' | cmp -s - '$t'"
	"$kcoredump" extract -q "$zk" -o "$dk/x.core"
	check "keep-free $c: kcoredump extract gives it" cmp -s "$dk/x.core" "$t"
	check "keep-free $c: the rewritten headers are compressed" compressed_headers "$zk"
done

# --- --max-use: the oldest cores go first -------------------------------------
d=$tmp/d3
mkdir -m 700 "$d"
for s in 1 2 3; do
	handler "$d" 4242 1000 1000 6 170000040$s crashme < "$fix" 2>/dev/null
done
one=$(($(alloc "$d/core.crashme.1000.4242.1700000401") + $(alloc "$d/core.crashme.1000.4242.1700000401.json")))
# Room for three cores: the fourth makes the oldest go.
handler "$d" --max-use $((3 * one + 4096)) 4242 1000 1000 6 1700000404 crashme < "$fix" 2>"$tmp/err"
check "max-use: the oldest core and its metadata removed" \
	[ ! -e "$d/core.crashme.1000.4242.1700000401" -a ! -e "$d/core.crashme.1000.4242.1700000401.json" ]
check "max-use: the others kept" [ -e "$d/core.crashme.1000.4242.1700000402" -a -e "$d/core.crashme.1000.4242.1700000403" ]
check "max-use: the new core complete, removal counted" quiet jq -e '.complete and .removed_for_limits == 1' \
	"$d/core.crashme.1000.4242.1700000404.json"
check "max-use: removal logged" grep -q "removed the older core" "$tmp/err"
handler "$d" --max-use 1 4242 1000 1000 6 1700000405 crashme < "$fix" 2>/dev/null
check "max-use: with no room left, truncated (max-use)" quiet jq -e '.truncation_reason == "max-use"' \
	"$d/core.crashme.1000.4242.1700000405.json"

# --- a stalled pipe ---------------------------------------------------------
d=$tmp/d4
mkdir -m 700 "$d"
mkfifo "$tmp/fifo"
(head -c 65536 "$fix"; sleep 6) > "$tmp/fifo" &
writer=$!
t0=$(date +%s%N)
handler "$d" --timeout 1 4242 1000 1000 6 1700000500 crashme < "$tmp/fifo" 2>/dev/null
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
check "timeout: the handler returns within 3 s of a stalled pipe ($ms ms, exit $rc)" \
	[ "$ms" -lt 3000 -a "$rc" -eq 0 ]
t=$d/core.crashme.1000.4242.1700000500
check "timeout: stored what came, marked (timeout)" quiet jq -e '.complete == false and
	.truncation_reason == "timeout" and .stream_bytes == 65536 and .cut_offset == 65536' "$t.json"
check "timeout: every segment inside the file" inside "$t"
kill "$writer" 2>/dev/null
wait "$writer" 2>/dev/null
(head -c 100 "$fix"; sleep 6) > "$tmp/fifo" &
writer=$!
t0=$(date +%s%N)
handler "$d" --timeout 1 4242 1000 1000 6 1700000501 crashme < "$tmp/fifo" 2>"$tmp/err"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
check "timeout in the headers: exit 4 within 3 s ($rc, $ms ms), nothing stored" \
	[ "$rc" -eq 4 -a "$ms" -lt 3000 -a ! -e "$t.1.json" ] && ! compgen -G "$d/*1700000501*" >/dev/null
check "timeout in the headers: the error names the offset" grep -q "timed out .*offset" "$tmp/err"
kill "$writer" 2>/dev/null
wait "$writer" 2>/dev/null

# --- refusals ---------------------------------------------------------------
mkdir -m 700 "$tmp/real"
ln -s "$tmp/real" "$tmp/link"
handler "$tmp/link" 1 0 0 6 1 x < "$fix" 2>"$tmp/err"
rc=$?
check "symlinked --dir refused (exit $rc)" [ "$rc" -eq 5 ]
check "symlinked --dir: says so" grep -q "symbolic link" "$tmp/err"
check "symlinked --dir: nothing written" [ -z "$(ls -A "$tmp/real")" ]
mkdir -m 777 "$tmp/open"
handler "$tmp/open" 1 0 0 6 1 x < "$fix" 2>"$tmp/err"
check "world-writable --dir refused" [ $? -eq 5 -a -z "$(ls -A "$tmp/open")" ]
# A symlink planted at the core's name is neither followed nor replaced.
d=$tmp/d5
mkdir -m 700 "$d"
ln -s "$tmp/victim" "$d/core.crashme.1000.4242.1700000600"
handler "$d" 4242 1000 1000 6 1700000600 crashme < "$fix" 2>/dev/null
check "planted symlink: not followed" [ ! -e "$tmp/victim" ]
check "planted symlink: left alone" [ -L "$d/core.crashme.1000.4242.1700000600" ]
check "planted symlink: stored under another name" cmp -s "$fix" "$d/core.crashme.1000.4242.1700000600.1"
printf 'not an ELF core at all' | handler "$d" 1 0 0 6 1 bad 2>"$tmp/err"
rc=$?
check "not ELF: exit 4 ($rc), message with the offset" [ "$rc" -eq 4 ] && grep -q "not an ELF file at offset 0x0" "$tmp/err"
check "not ELF: nothing stored" bash -c "! compgen -G '$d/core.bad*'"
handler "$d" 1 0 < "$fix" 2>/dev/null
check "too few arguments: exit 2" [ $? -eq 2 ]

# --- the pattern ------------------------------------------------------------
p=$("$kcoredump" core-handler --dir /var/crash/k --compress zstd --print-pattern)  # lint-journal: the printed pattern is compared
check "--print-pattern: '$p'" [ "$p" = "|$(readlink -f "$kcoredump") core-handler --dump-mode=%d --dir /var/crash/k --compress zstd %P %u %g %s %t %e" ]  # lint-journal: the printed pattern is compared
"$kcoredump" core-handler --dir "/var/a b" --print-pattern >/dev/null 2>&1  # lint-journal: a usage error
check "--print-pattern: a space in --dir refused" [ $? -eq 2 ]
"$kcoredump" core-handler --dir relative --print-pattern >/dev/null 2>&1  # lint-journal: a usage error
check "--print-pattern: a relative --dir refused" [ $? -eq 2 ]

# --- --owner user (root only; tests/security has the rule in full) ----------
if [ "$(id -u)" = 0 ]; then
	d=$tmp/d6
	mkdir -m 700 "$d"
	chmod 711 "$tmp" # uid 1000 gets to the store, not into it
	handler "$d" --owner user --dump-mode 1 4242 1000 1000 6 1700000700 crashme < "$fix" 2>/dev/null
	u=$d/user.1000/core.crashme.1000.4242.1700000700
	check "--owner user: core and metadata root's, in user.1000" \
		[ "$(stat -c %u:%g "$u" "$u.json" | sort -u)" = "0:0" ]
	check "--owner user: uid 1000 may read them (ACL)" \
		setpriv --reuid=1000 --regid=1000 --clear-groups cmp -s "$fix" "$u"
else
	skip "--owner user needs root"
fi

# --- a real core from this kernel, and its build IDs --------------------------
mkdir "$tmp/rc"
if real=$(make_real_core "$tmp/rc"); then
	d=$tmp/d7
	mkdir -m 700 "$d"
	handler "$d" 77 0 0 6 1700000800 sleep < "$real" 2>/dev/null
	s=$d/core.sleep.0.77.1700000800
	check "real core: cmp-identical" cmp -s "$real" "$s"
	check "real core: allocated ($(alloc "$s")) <= the kernel's file ($(alloc "$real")) + 64 KiB" \
		[ "$(alloc "$s")" -le $(($(alloc "$real") + 65536)) ]
	want=$(eu-unstrip -n --core="$real" | awk '{ sub(/@.*/, "", $2); print $2 }' | sort | tr '\n' ' ')
	got=$(jq -r '.build_ids[].build_id' "$s.json" | sort | tr '\n' ' ')
	check "real core: build IDs as eu-unstrip -n reports ($got)" [ -n "$got" -a "$got" = "$want" ]
	handler "$d" -c zstd 77 0 0 6 1700000801 sleep < "$real" 2>/dev/null
	got=$(jq -r '.build_ids[].build_id' "$s.json" | sort | tr '\n' ' ')
	zgot=$(jq -r '.build_ids[].build_id' "$d/core.sleep.0.77.1700000801.json" | sort | tr '\n' ' ')
	check "real core .zst: the same build IDs from the first pages ($zgot)" [ "$zgot" = "$want" ]
else
	skip "real core: this machine writes no cores to a file"
fi
finish
