#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: the README's recipes and the man page's jobs and EXAMPLES as the
# guest ran them (recipes.sh): every kcoredump command line the documents
# print was run there (or is named here as not run), each exited as the
# documents promise, and printed what they promise.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"

# The documents' command lines against those the guest ran.
if "$PYTHON" - "$VM_HERE/../../README.md" "$VM_HERE/../../man/kcoredump.8" "$d" << 'PY'; then
import glob, os, re, sys
readme, man, d = sys.argv[1:4]
pid = open(os.path.join(d, "pid")).read().strip()
ran = set()
for p in glob.glob(os.path.join(d, "*.cmd")):
    ran.add(" ".join(open(p).read().split()).replace(pid, "1234"))
# Not run in the guest: it has no FUSE.
not_run = {"kcoredump mount mem.elf.zst /mnt/dump"}

def norm(line):
    line = re.sub(r"^[#$] ", "", line.strip())
    # From the first "kcoredump " on ("$ ulimit ...; kcoredump ...").
    line = line[line.find("kcoredump "):] if "kcoredump " in line else ""
    line = re.split(r"\s+#\s|\s\|", line)[0]
    return " ".join(line.replace(";", " ").split())

docs = []
fence = section = None
for n, line in enumerate(open(readme), 1):
    if line.startswith("## "):
        section = line[3:].strip()
    if line.startswith("```"):
        fence = not fence
    elif fence and section == "Five recipes" and line.startswith("kcoredump "):
        docs.append(("README.md:%d" % n, norm(line)))
ex = False
for n, line in enumerate(open(man), 1):
    if line.startswith(".SH "):
        section = line[4:].strip()
    if section not in ("DESCRIPTION", "EXAMPLES"):
        continue
    if line.startswith(".EX"):
        ex = True
    elif line.startswith(".EE"):
        ex = False
    elif ex and "kcoredump " in line:
        t = line.replace("\\-", "-").replace("\\(aq", "'").replace("\\e", "\\")
        docs.append(("kcoredump.8:%d" % n, norm(t)))
bad = 0
for where, cmd in docs:
    if cmd in ran or cmd in not_run:
        print("ok - %s: %s %s" % (where, "run:" if cmd in ran else "not run (no FUSE):", cmd))
    else:
        print("not ok - %s: not run in the guest: %s" % (where, cmd))
        bad = 1
print("# %d documented command lines" % len(docs))
sys.exit(1 if bad or len(docs) < 15 else 0)
PY
	ok "every documented command line was run"
else
	not_ok "a documented command line was not run in the guest"
fi

# rc N: the exit status of the guest's command N (by its line).
num() { { grep -lxF "$1" "$d"/*.cmd || true; } | head -n 1 | sed 's|.*/||; s|\.cmd$||'; }
expect0() {
	local k
	k=$(num "$1")
	if [[ -n "$k" && "$(cat "$d/$k.rc")" == 0 ]]; then
		ok "exit 0: $1"
	else
		not_ok "exit ${k:+$(cat "$d/$k.rc")}: $1 ($(head -c 300 "$d/${k:-x}.err" 2> /dev/null))"
	fi
}
out() { cat "$d/$(num "$1").out"; }

snap="kcoredump dump -o /mnt/evidence/mem.elf.zst --record /mnt/evidence/mem.json --case IR-2026-17 --examiner 'A. Examiner'"
expect0 "$snap"
expect0 "kcoredump verify /mnt/evidence/mem.elf.zst"
sum=$(out "sha256sum /mnt/evidence/mem.elf.zst" | cut -d' ' -f1)
if grep -qx "File SHA-256:  $sum" "$d/evidence/mem.txt"; then
	ok "sha256sum = \"File SHA-256:\" in mem.txt ($sum)"
else
	not_ok "sha256sum $sum is not mem.txt's $(grep 'File SHA-256' "$d/evidence/mem.txt")"
fi
jqcheck "the record names the case and the examiner" "$d/evidence/mem.json" \
	'.case == "IR-2026-17" and .examiner == "A. Examiner" and .stats.bytes_read > 0'
if "$KCOREDUMP" verify -q "$d/evidence/mem.elf.zst"; then
	ok "mem.elf.zst verifies on the host"
else
	not_ok "mem.elf.zst does not verify on the host"
fi

expect0 "kcoredump dump --vmalloc-range -o vm.elf.zst"
k=$(num "kcoredump dump --vmalloc-range --caller xfs -o xfs.elf")
if [[ "$(cat "$d/$k.rc")" == 0 ]]; then
	ok "--caller xfs: xfs is loaded, its areas dumped"
elif grep -q "no vmalloc area's caller or module text matches 'xfs'" "$d/$k.err" &&
	grep -q "callers include" "$d/$k.err"; then
	ok "--caller xfs (not loaded): says so, names the callers ($(head -c 200 "$d/$k.err"))"
else
	not_ok "--caller xfs: exit $(cat "$d/$k.rc"), $(head -c 300 "$d/$k.err")"
fi
expect0 "kcoredump dump --vmalloc-range --caller kernel_clone -o stacks.elf --json"
jqcheck "--caller kernel_clone: the thread stacks' areas" \
	"$d/$(num "kcoredump dump --vmalloc-range --caller kernel_clone -o stacks.elf --json").out" \
	'.vmalloc.areas > 0 and .stats.bytes_read > 0'
expect0 "kcoredump dump --range _stext+16M -o text.elf"
pid=$(cat "$d/pid")
expect0 "kcoredump pid $pid -o core.$pid"
expect0 "kcoredump core-handler --dir /var/lib/kcoredump --max-use 10G --install"
expect0 "kcoredump list"
if out "kcoredump list" | grep -q 'core\.'; then
	ok "list shows the stored core"
else
	not_ok "list shows no core: $(out "kcoredump list" | head -c 300)"
fi
expect0 "kcoredump show -1"
if out "kcoredump show -1" | grep -qE '^ +PID: [0-9]+'; then
	ok "show -1: the crash record"
else
	not_ok "show -1: $(out "kcoredump show -1" | head -c 300)"
fi
expect0 "kcoredump info mem.elf.zst"
expect0 "kcoredump convert mem.elf.zst --format lime -o mem.lime"
expect0 "kcoredump info"
expect0 "kcoredump info --segments-only core"
expect0 "kcoredump info --json core"
paths=$(out "kcoredump info --json core" | jq -r '.notes[].file.mappings[]?.path' | head -n 3)
if [[ -n "$paths" ]]; then
	ok "info --json core | jq: mapped files ($(echo "$paths" | tr '\n' ' '))"
else
	not_ok "info --json core | jq: no mapped file"
fi
expect0 "kcoredump info --notes-only --json"
rel=$(out "kcoredump info --notes-only --json" | jq -r '.vmcoreinfo.summary | .osrelease, .kernel_offset' | head -n 1)
if [[ "$rel" == 6.* || "$rel" == 7.* ]]; then
	ok "info --notes-only --json | jq: the release ($rel)"
else
	not_ok "info --notes-only --json | jq: '$rel'"
fi
exit $fail
