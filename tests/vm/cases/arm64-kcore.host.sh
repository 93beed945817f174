#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: what arm64-kcore.sh left, checked by kcoredump (x86_64) and by
# independent readers: drgn (linux_banner at its kallsyms address) and,
# as Debian builds crash and makedumpfile for one architecture each, their
# arm64 builds under qemu-user (fetch-arm64-readers.sh): crash --osrelease
# of the ELF and kdump dumps, makedumpfile -c -d 31 of the ELF dump.
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
read -r probe addr < "$d/probe.txt"
if [[ $probe == banner ]]; then
	# linux_banner at its kallsyms address: /proc/version's text.
	skip=0 len=256 want=$(head -n 1 "$d/proc-version.txt")
else
	# init_uts_ns (VMCOREINFO): the release at offset 130.
	skip=130 len=65 want=$rel
fi
banner=$(tail -c +$((skip + 1)) "$d/banner.bin" | head -c "$len" | tr -d '\0' | head -n 1)
if [[ -n "$banner" && "$banner" == "$want" ]]; then
	ok "cat: $probe at 0x$addr holds '$want'"
else
	not_ok "cat: $probe is '$banner', expected '$want'"
fi
if cmp -s "$d/banner.bin" "$d/banner-sym.bin"; then
	ok "cat --symbol reads the same bytes"
else
	not_ok "cat --symbol differs from --addr"
fi
jqcheck "--vmalloc-range: mapped areas found in the arm64 page tables" "$d/vmalloc.json" \
	'.stats.bytes_written > 1000000 and (.stats.segments // .segments // 2) > 1'
check_grep "--vmalloc-range dump verifies in the guest" 'OK|ok' "$d/vmalloc-verify.txt"
free_kb=$(awk '/MemFree/ {print $2}' "$d/meminfo.txt")
jqcheck "--exclude 31: free pages near MemFree ($free_kb kB), user and cache found" \
	"$d/exclude.json" \
	'(.exclude.free * 4) as $f | $f > $m * 0.8 and $f < $m * 1.2' --argjson m "$free_kb"
check_grep "the -d 31 RAM dump verifies in the guest" 'OK|ok' "$d/ram31-verify.txt"
rm -f "$d/ram31.elf"
if "$KCOREDUMP" verify -q "$d/ram31.elf.zst" &&
	"$KCOREDUMP" extract -q "$d/ram31.elf.zst" -o "$d/ram31.elf" &&
	"$KCOREDUMP" verify -q "$d/ram31.elf"; then
	ok "the -d 31 RAM dump (.zst) verifies on the x86_64 host, extracted too"
else
	not_ok "kcoredump verify/extract on the host"
fi
readers=$("$VM_HERE/fetch-arm64-readers.sh")
a64() {
	local prog=$1
	shift
	qemu-aarch64 -L "$readers" "$readers/usr/bin/$prog" "$@"
}
if out=$(a64 crash --osrelease "$d/ram31.elf" 2>&1) && [[ $out == "$rel" ]]; then
	ok "crash (arm64) --osrelease reads $rel from the arm64 ELF dump"
else
	not_ok "crash (arm64) --osrelease: '$out'"
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
if out=$(a64 crash --osrelease "$k" 2>&1) && [[ $out == "$rel" ]]; then
	ok "crash (arm64) --osrelease reads $rel from the arm64 kdump"
else
	not_ok "crash (arm64) --osrelease of the arm64 kdump: '$out'"
fi
# makedumpfile 1.7.2 (Debian 12) knows arm64 kernels with 4 KiB pages
# configured for 48-bit VAs (Debian 12's 6.1), not those configured for
# 52 (Debian's 6.12: "PAGE SIZE 0x1000 and VA Bits 52 not supported",
# whatever VA size they run with): it runs where it can.
va_bits=$(jq -r '.vmcoreinfo.lines["NUMBER(VA_BITS)"] // empty' "$d/info.json")
m=$d/mdf31.kdump
rm -f "$m"
if [[ $va_bits == 48 ]]; then
	if a64 makedumpfile -c -d 31 "$d/ram31.elf" "$m" > "$d/mdf.log" 2>&1 &&
		"$KCOREDUMP" verify -q -d 31 "$m" "$d/ram31.elf"; then
		ok "makedumpfile (arm64) -c -d 31 reads the ELF dump; its pages equal ours"
	else
		not_ok "makedumpfile (arm64) -c -d 31 of the ELF dump"
		tail -n 5 "$d/mdf.log" | sed 's/^/# /'
	fi
else
	echo "# makedumpfile 1.7.2: not run for a kernel configured for $va_bits-bit VAs (it supports 48)"
fi
if "$PYTHON" - "$d/ram31.elf" "$addr" "$skip" "$want" <<'PY'; then
import sys
import drgn
prog = drgn.Program(drgn.Platform(drgn.Architecture.AARCH64,
                                  drgn.PlatformFlags.IS_64_BIT
                                  | drgn.PlatformFlags.IS_LITTLE_ENDIAN))
prog.set_core_dump(sys.argv[1])
data = prog.read(int(sys.argv[2], 16) + int(sys.argv[3]), 256)
text = data.split(b"\0")[0].decode().rstrip("\n")
print(f"# drgn: {text[:70]}")
sys.exit(0 if text == sys.argv[4] else 1)
PY
	ok "drgn reads the $probe at 0x$addr in the arm64 dump"
else
	not_ok "drgn: the $probe in the arm64 dump"
fi
[[ -f "$d/pread.txt" ]] || exit $fail
mbps=$(awk '/^mbps/ {print $2}' "$d/pread.txt")
ram=$(jq '[.segments[] | select(.class == "ram") | .memsz] | add' "$d/info.json")
rate() {
	awk -v b="$ram" -v s="$(awk -v k="dump_ram_s_$1" '$1 == k {print $2}' "$d/dump-time.txt")" \
		-v p="$mbps" 'BEGIN { printf "%.1f MB/s (%.2f s, %.2fx the pread loop)", b / 1e6 / s, s, b / 1e6 / s / p }'
}
echo "# RAM of the guest ($ram bytes): pread loop (1 MiB) $mbps MB/s;" \
	"kcoredump dump --segments ram -o /dev/null: --hash none $(rate none)," \
	"SHA-256 $(rate sha256)"
exit $fail
