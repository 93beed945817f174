#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: what arm64-kcore.sh left, checked by kcoredump (x86_64) and by
# independent readers: crash --osrelease and drgn (linux_banner at its
# kallsyms address) on the guest's arm64 ELF dump.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
rel=$(cat "$d/kernel-release")
echo "# guest kernel $rel"
sed 's/^/# /' "$d/version.txt"
check_grep() { if grep -qE "$2" "$3"; then ok "$1"; else not_ok "$1"; fi; }
check_grep "the guest's kcoredump is static aarch64" '^build: static, aarch64' "$d/version.txt"
jqcheck "info: the arm64 kcore's classes (text, vmalloc, modules, ram, vmemmap)" "$d/info.json" \
	'[.segments[] | select(.type == "LOAD") | .class] | sort == ["modules","ram","text","vmalloc","vmemmap"]'
jqcheck "info: the kernel image is the text segment with a physical address" "$d/info.json" \
	'[.segments[] | select(.class == "text")][0].paddr != null'
banner=$(head -c 256 "$d/banner.bin" | tr -d '\0' | head -n 1)
want=$(head -n 1 "$d/proc-version.txt")
if [[ -n "$banner" && "$banner" == "$want" ]]; then
	ok "cat: linux_banner at its kallsyms address is /proc/version"
else
	not_ok "cat: linux_banner is '$banner', /proc/version '$want'"
fi
if cmp -s "$d/banner.bin" "$d/banner-sym.bin"; then
	ok "cat --symbol linux_banner reads the same bytes"
else
	not_ok "cat --symbol linux_banner differs from --addr"
fi
jqcheck "--vmalloc-range: mapped areas found in the arm64 page tables" "$d/vmalloc.json" \
	'.stats.bytes_written > 1000000 and (.stats.segments // .segments // 2) > 1'
check_grep "--vmalloc-range dump verifies in the guest" 'OK|ok' "$d/vmalloc-verify.txt"
free_kb=$(awk '/MemFree/ {print $2}' "$d/meminfo.txt")
jqcheck "--exclude 31: free pages near MemFree ($free_kb kB), user and cache found" \
	"$d/exclude.json" \
	'(.exclude.free * 4) as $f | $f > $m * 0.8 and $f < $m * 1.2' --argjson m "$free_kb"
check_grep "the -d 31 RAM dump verifies in the guest" 'OK|ok' "$d/ram31-verify.txt"
if "$KCOREDUMP" verify -q "$d/ram31.elf"; then
	ok "the -d 31 RAM dump verifies on the x86_64 host"
else
	not_ok "kcoredump verify on the host"
fi
if out=$(crash --osrelease "$d/ram31.elf" 2>&1) && [[ $out == "$rel" ]]; then
	ok "crash --osrelease reads $rel from the arm64 ELF dump"
else
	not_ok "crash --osrelease: '$out'"
fi
# The kdump writer's arm64 header: machine aarch64, phys_base =
# PHYS_OFFSET; the same pages as the ELF dump.
k=$d/ram31.kdump
rm -f "$k"
if "$KCOREDUMP" convert -q "$d/ram31.elf" --format kdump -o "$k" &&
	"$KCOREDUMP" verify -q "$k" "$d/ram31.elf"; then
	ok "kdump of the arm64 dump: written and equal to the ELF dump"
else
	not_ok "kdump of the arm64 dump"
fi
if out=$(crash --osrelease "$k" 2>&1) && [[ $out == "$rel" ]]; then
	ok "crash --osrelease reads $rel from the arm64 kdump"
else
	not_ok "crash --osrelease of the arm64 kdump: '$out'"
fi
"$KCOREDUMP" info "$k" > "$d/kdump-info.txt" 2>&1 || true
addr=$(awk '$3 == "linux_banner" {print $1}' "$d/kallsyms.txt")
if "$PYTHON" - "$d/ram31.elf" "$addr" "$want" <<'PY'; then
import sys
import drgn
prog = drgn.Program(drgn.Platform(drgn.Architecture.AARCH64,
                                  drgn.PlatformFlags.IS_64_BIT
                                  | drgn.PlatformFlags.IS_LITTLE_ENDIAN))
prog.set_core_dump(sys.argv[1])
data = prog.read(int(sys.argv[2], 16), 256)
text = data.split(b"\0")[0].decode().rstrip("\n")
print(f"# drgn: {text[:70]}")
sys.exit(0 if text == sys.argv[3] else 1)
PY
	ok "drgn reads linux_banner at its kallsyms address in the arm64 dump"
else
	not_ok "drgn: linux_banner in the arm64 dump"
fi
mbps=$(awk '/^mbps/ {print $2}' "$d/pread.txt")
dump_s=$(awk '{print $2}' "$d/dump-time.txt")
ram=$(jq '[.segments[] | select(.class == "ram") | .size] | add' "$d/info.json")
echo "# RAM read: pread loop $mbps MB/s; kcoredump dump --segments ram to /dev/null" \
	"$(awk -v b="$ram" -v s="$dump_s" 'BEGIN { printf "%.1f MB/s (%.2f s)", b / 1e6 / s, s }')"
exit $fail
