#!/bin/bash
# kcoredump info of 32-bit process cores (i386, arm; what x86_64 and
# arm64 write for their compat tasks too): NT_PRSTATUS, NT_PRPSINFO and
# NT_SIGINFO decoded from their 32-bit layouts (issue 25 defect 4), made
# by mkcore from specs written here.
#   info-32bit.sh KCOREDUMP MKCORE
set -uo pipefail
kcoredump=$1 mkcore=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck disable=SC2317 # called through check
quiet() { "$@" >/dev/null 2>&1; }

cat >"$tmp/i386.spec" <<'SPEC'
elf class=32 data=lsb machine=i386 type=core align=4096
note prstatus pid=321 ppid=300 pgrp=321 sid=299 signal=SIGSEGV sigpend=0x100 sighold=0x4 eip=0x8049abc esp=0xbfff1234 eax=0xdeadbeef cs=0x73 ss=0x7b fpvalid=1
note prpsinfo state=R fname=victim32 args="./victim32 -x" pid=321 ppid=300 pgrp=321 sid=299 uid=1000 gid=1001 flag=0x400600
note siginfo signo=SIGSEGV code=1 addr=0xbadc0de
note prstatus pid=322 ppid=300 pgrp=321 sid=299 eip=0x8049def esp=0xb7ff0000
load vaddr=0x8048000 flags=rx
	data 8K
end
SPEC
cat >"$tmp/arm.spec" <<'SPEC'
elf class=32 data=lsb machine=arm type=core align=4096
note prstatus nregs=18 pid=77 ppid=1 signal=SIGABRT reg15=0x10474 reg13=0xbefff000 reg16=0x60000010
note prpsinfo state=S fname=armprog args="armprog" pid=77 ppid=1 uid=5 gid=6
note siginfo signo=SIGABRT code=-6 pid=77 uid=5
load vaddr=0x10000 flags=rx
	data 4K
end
SPEC
for a in i386 arm; do
	if ! "$mkcore" "$tmp/$a.spec" "$tmp/$a.core" 2>"$tmp/err"; then
		not_ok "mkcore $a: $(head -1 "$tmp/err")"
		continue
	fi
	"$kcoredump" info --json "$tmp/$a.core" >"$tmp/$a.json" 2>"$tmp/$a.err"
	check "$a: info exits 0" [ $? -eq 0 ]
	check "$a: every note decoded" quiet jq -e \
		'all(.notes[]; .error == null and (tostring | test("not decoded") | not))' "$tmp/$a.json"
done

# shellcheck disable=SC2317 # called through check
j() { jq -e "$@" >/dev/null 2>&1; }
check "i386: PRSTATUS ids, signal, sigpend/sighold" j '[.notes[] | .prstatus // empty][0] |
	.pid == 321 and .ppid == 300 and .pgrp == 321 and .sid == 299 and .signal == 11 and
	.sigpend == "0x100" and .sighold == "0x4" and .fpvalid == 1' "$tmp/i386.json"
check "i386: PRSTATUS registers by name" j '[.notes[] | .prstatus // empty][0].registers |
	.eip == "0x8049abc" and .esp == "0xbfff1234" and .eax == "0xdeadbeef" and .cs == "0x73" and .ss == "0x7b"' \
	"$tmp/i386.json"
check "i386: the second thread" j '[.notes[] | .prstatus // empty][1] |
	.pid == 322 and .registers.eip == "0x8049def"' "$tmp/i386.json"
check "i386: PRPSINFO (16-bit uid/gid)" j '[.notes[] | .prpsinfo // empty][0] |
	.pid == 321 and .ppid == 300 and .uid == 1000 and .gid == 1001 and .fname == "victim32" and
	.psargs == "./victim32 -x" and .sname == "R" and .flag == "0x400600"' "$tmp/i386.json"
check "i386: SIGINFO fault address" j '[.notes[] | .siginfo // empty][0] | .signo == 11 and .code == 1 and .addr == "0xbadc0de"' \
	"$tmp/i386.json"
check "i386: text says the process" bash -c "'$kcoredump' info '$tmp/i386.core' | grep -q 'comm \"victim32\", args \"./victim32 -x\"'"
check "arm: PRSTATUS pc, sp, cpsr" j '[.notes[] | .prstatus // empty][0] |
	.pid == 77 and .signal == 6 and .registers.pc == "0x10474" and .registers.sp == "0xbefff000" and
	.registers.cpsr == "0x60000010"' "$tmp/arm.json"
check "arm: PRPSINFO" j '[.notes[] | .prpsinfo // empty][0] | .pid == 77 and .uid == 5 and .gid == 6 and
	.fname == "armprog"' "$tmp/arm.json"
check "arm: SIGINFO sender" j '[.notes[] | .siginfo // empty][0] | .signo == 6 and .sender_pid == 77 and .sender_uid == 5' "$tmp/arm.json"
finish
