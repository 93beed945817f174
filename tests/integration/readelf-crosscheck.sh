#!/bin/bash
# eu-readelf as an independent oracle: for every valid fixture and a core
# made on this machine at test time, "kcoredump info --json" must agree
# with "eu-readelf -l -n" on the program headers (count; each one's type,
# offset, vaddr, paddr, filesz, memsz, flags, align) and on the notes
# (count; each one's owner, type and descriptor size, in order).
#   readelf-crosscheck.sh KCOREDUMP FIXDIR
set -euo pipefail
# shellcheck source=../lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/shell.sh"
kcd_trap_errors
kcoredump=$1 fixdir=$2
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! command -v eu-readelf >/dev/null; then
	echo "1..0 # SKIP eu-readelf not installed"
	exit 77
fi

compare()
{
	/usr/bin/python3 - "$1" "$2" <<'PY'
import json, re, sys

ours = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read().splitlines()

PT = {"NULL": 0, "LOAD": 1, "DYNAMIC": 2, "INTERP": 3, "NOTE": 4,
      "SHLIB": 5, "PHDR": 6, "TLS": 7}
NT = {"PRSTATUS": 1, "FPREGSET": 2, "PRPSINFO": 3, "TASKSTRUCT": 4,
      "AUXV": 6, "PRXFPREG": 0x46E62B7F, "SIGINFO": 0x53494749,
      "FILE": 0x46494C45, "X86_XSTATE": 0x202}
ph_re = re.compile(r"^\s+(\S+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+"
                   r"(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s"
                   r"(.{3})\s+(0x[0-9a-f]+)$")
note_re = re.compile(r"^  (\S+)\s+(\d+)\s+(.+?)\s*$")

phdrs, notes, section = [], [], None
for line in text:
    if line.startswith("Program Headers:"):
        section = "ph"
    elif line.startswith(" Section to Segment mapping"):
        section = None
    elif line.startswith("Note segment"):
        section = "notes"
    elif section == "ph":
        m = ph_re.match(line)
        if m:
            phdrs.append(m.groups())
    elif section == "notes" and not line.startswith("  Owner"):
        m = note_re.match(line)
        if m:
            notes.append(m.groups())

errors = []
segs = ours["segments"]
if len(segs) != len(phdrs):
    errors.append(f"{len(segs)} program headers, eu-readelf {len(phdrs)}")
for s, p in zip(segs, phdrs):
    typ, off, va, pa, fsz, msz, flg, align = p
    want = PT.get(typ)
    if want is None:
        m = re.match(r"<unknown>: (0x[0-9a-f]+)", typ)
        want = int(m.group(1), 16) if m else None
    mine = (s["p_type"], int(s["offset"], 16), int(s["vaddr"], 16),
            int(s["p_paddr"], 16), s["filesz"], s["memsz"],
            s["flags"].replace("-", " ").replace("X", "E"), s["align"])
    theirs = (want, int(off, 16), int(va, 16), int(pa, 16), int(fsz, 16),
              int(msz, 16), flg, int(align, 16))
    if mine != theirs:
        errors.append(f"phdr {s['index']}: ours {mine} eu-readelf {theirs}")

mine_notes = ours["notes"]
saw_note_segment = any(l.startswith("Note segment") for l in text)
if len(phdrs) >= 0xffff and not saw_note_segment:
    # eu-readelf -n reads the notes of a file with section headers from
    # SHT_NOTE sections; a PN_XNUM core has only section 0, so it shows
    # none.  Nothing to compare against.
    print("# eu-readelf shows no notes for a PN_XNUM core; notes not compared")
    mine_notes = []
elif len(mine_notes) != len(notes):
    errors.append(f"{len(mine_notes)} notes, eu-readelf {len(notes)}")
for n, (owner, size, typ) in zip(mine_notes, notes):
    m = re.match(r"<unknown>: (\d+)", typ)
    if m:
        type_ok = n["type"] == int(m.group(1))
    elif typ in NT:
        type_ok = n["type"] == NT[typ]
    else:
        type_ok = (n.get("type_name") or "").removeprefix("NT_") == typ
    if n["name"] != owner or n["size"] != int(size) or not type_ok:
        errors.append(f"note {n['index']}: ours {n['name']}/{n['type']}/"
                      f"{n['size']} eu-readelf {owner}/{typ}/{size}")

for e in errors[:20]:
    print("# " + e)
print(f"# {len(segs)} program headers, {len(mine_notes)} notes")
sys.exit(1 if errors else 0)
PY
}

crosscheck()
{
	local what=$1 file=$2
	if ! "$kcoredump" info --json --no-holes --no-modules "$file" >"$tmp/ours.json" 2>"$tmp/err"; then
		not_ok "$what: kcoredump info failed"
		diag "$tmp/err"
	elif ! eu-readelf -l -n "$file" >"$tmp/readelf.txt" 2>"$tmp/err"; then
		not_ok "$what: eu-readelf failed"
		diag "$tmp/err"
	elif compare "$tmp/ours.json" "$tmp/readelf.txt" >"$tmp/cmp"; then
		ok "$what agrees with eu-readelf ($(tail -n 1 "$tmp/cmp" | cut -c3-))"
	else
		not_ok "$what differs from eu-readelf"
		cat "$tmp/cmp"
	fi
}

for name in $VALID_FIXTURES; do
	crosscheck "$name" "$fixdir/$name.core"
done
mkdir "$tmp/crash"
if core=$(make_real_core "$tmp/crash"); then
	crosscheck "real core of sleep(1)" "$core"
else
	skip "real core: this machine does not write cores to the working directory"
fi
finish
