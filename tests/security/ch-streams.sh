#!/bin/bash
# SPDX-License-Identifier: MIT
# Core handler streams an attacker (or bad luck) shapes:
#   - issue 15 item 11: a core with no PT_LOAD stored as .zst; the
#     build-ID image of the first pages used to memcpy() from NULL (UBSan,
#     in the asan build: ctest there runs this with the sanitized binary);
#   - issue 19 item 3: a stream stopped by the time limit, or ending, in
#     the middle of a page used to be cut there (p_filesz 0x1ab480); the
#     core must end at a page boundary, every p_filesz whole pages;
#   - issue 19 item 3: without a COMM argument the core was named
#     core.unknown.*; the name comes from NT_PRPSINFO.
#   ch-streams.sh KCOREDUMP MKCORE
set -uo pipefail
kcoredump=$1 mkcore=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

cat > "$tmp/noload.spec" <<'SPEC'
elf class=64 data=lsb machine=x86_64 type=core align=4096
note prpsinfo state=R fname=noload args="noload" uid=1000 gid=1000 pid=5 ppid=1 pgrp=5 sid=1 flag=0
note auxv AT_PAGESZ=4096 AT_UID=1000 AT_EUID=1000 AT_GID=1000 AT_EGID=1000 AT_SECURE=0
SPEC
cat > "$tmp/cut.spec" <<'SPEC'
elf class=64 data=lsb machine=x86_64 type=core align=4096
note prpsinfo state=R fname=cutme args="cutme" uid=1000 gid=1000 pid=6 ppid=1 pgrp=6 sid=1 flag=0
load vaddr=0x7f0000000000 flags=rw
	data 32K
end
load vaddr=0x7f0000100000 flags=rw
	data 32K
end
SPEC
"$mkcore" "$tmp/noload.spec" "$tmp/noload.core" >/dev/null &&
	"$mkcore" "$tmp/cut.spec" "$tmp/cut.core" >/dev/null || { not_ok "mkcore"; finish; }
d=$(newstore store)

handler "$d" -c zstd 5 1000 1000 6 1700000000 noload < "$tmp/noload.core" 2>"$tmp/err"
rc=$?
check "no PT_LOAD, --compress zstd: stored (exit $rc)" [ "$rc" -eq 0 -a -s "$d/core.noload.1000.5.1700000000.zst" ]
check "... no sanitizer report" bash -c "! grep -q 'runtime error\|Sanitizer' '$tmp/err'"
check "... zstd -d gives the stream back" \
	bash -c "zstd -qdc '$d/core.noload.1000.5.1700000000.zst' | cmp -s - '$tmp/noload.core'"

# whole_pages CORE: every PT_LOAD's p_filesz whole pages and inside the file.
whole_pages() {
	"$PY" - "$1" <<'PY'
import os, struct, sys
p = sys.argv[1]
size = os.path.getsize(p)
with open(p, "rb") as f:
    eh = f.read(64)
    phoff, = struct.unpack_from("<Q", eh, 32)
    phnum, = struct.unpack_from("<H", eh, 56)
    f.seek(phoff)
    raw = f.read(56 * phnum)
for i in range(phnum):
    t, = struct.unpack_from("<I", raw, 56 * i)
    off, = struct.unpack_from("<Q", raw, 56 * i + 8)
    fs, = struct.unpack_from("<Q", raw, 56 * i + 32)
    if t == 1 and (fs % 4096 or off + fs > size):
        sys.exit(1)
PY
}
size=$(stat -c %s "$tmp/cut.core")
sent=$((size - 0x1b80)) # 0x480 bytes into a page of the last segment
want=$((size - 0x2000))
head -c "$sent" "$tmp/cut.core" > "$tmp/short.core"
handler "$d" 6 1000 1000 6 1700000001 cutme < "$tmp/short.core" 2>/dev/null
m=$d/core.cutme.1000.6.1700000001
check "a short stream: cut at a page boundary ($(jq .cut_offset "$m.json" 2>/dev/null), want $want)" \
	quiet jq -e --argjson w "$want" '.truncation_reason == "short-stream" and .cut_offset == $w' "$m.json"
check "... every p_filesz whole pages, the file ends at the cut" \
	bash -c "$(declare -f whole_pages); PY=$PY whole_pages '$m' && [ \$(stat -c %s '$m') = $want ]"
(cat "$tmp/short.core"; sleep 4) |
	handler "$d" --timeout 1 6 1000 1000 6 1700000002 cutme 2>/dev/null
m=$d/core.cutme.1000.6.1700000002
check "the time limit in the middle of a page: cut at a page boundary ($(jq .cut_offset "$m.json" 2>/dev/null))" \
	quiet jq -e --argjson w "$want" '.truncation_reason == "timeout" and .cut_offset == $w' "$m.json"
check "... every p_filesz whole pages" bash -c "$(declare -f whole_pages); PY=$PY whole_pages '$m'"

handler "$d" 6 1000 1000 6 1700000003 < "$tmp/cut.core" 2>/dev/null
check "no COMM argument: named after NT_PRPSINFO" [ -s "$d/core.cutme.1000.6.1700000003" ]
finish
