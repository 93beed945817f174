#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: read linux_banner and the kernel text through libkcore (kcore-read,
# when given with --tool) and through plain preads (kpread); all must agree,
# and the banner must match /proc/version.
set -eu

sym() { awk -v n="$1" '$3 == n { print "0x" $1; exit }' /proc/kallsyms; }
banner=$(sym linux_banner)
text=$(sym _text)
etext=$(sym _etext)
if [ -z "$banner" ] || [ -z "$text" ] || [ -z "$etext" ]; then
	echo "read-kcore: symbols missing from /proc/kallsyms (kptr_restrict?)"
	exit 1
fi
text_len=$((etext - text))
echo "banner $banner text $text etext $etext text_len $text_len" > "$OUT/symbols"

fail=0
check() { # what expected actual
	if [ "$2" = "$3" ]; then
		echo "ok - $1"
	else
		echo "not ok - $1: '$3' != '$2'"
		fail=1
	fi
}

head -n 1 /proc/version > "$OUT/version"
want=$(cat "$OUT/version")

readers="kpread"
if command -v kcore-read > /dev/null; then
	readers="$readers kcore-read"
else
	echo "kcore-read not given (--tool build/tests/tools/kcore-read)" |
		tee "$OUT/skipped"
fi

rd() { # reader vaddr len
	case "$1" in
	kpread) kpread --vaddr "$2" --len "$3" ;;
	kcore-read) kcore-read /proc/kcore --vaddr "$2" --len "$3" ;;
	esac
}

for r in $readers; do
	rd "$r" "$banner" 512 > "$OUT/banner.$r.raw"
	tr '\0' '\n' < "$OUT/banner.$r.raw" | head -n 1 > "$OUT/banner.$r"
	check "$r: linux_banner == /proc/version" "$want" "$(cat "$OUT/banner.$r")"
done

ref=
for pass in 1 2; do
	for r in $readers; do
		sum=$(rd "$r" "$text" "$text_len" | sha256sum | cut -d' ' -f1)
		echo "$r pass$pass $sum" >> "$OUT/text.sha256"
		[ -n "$ref" ] || ref=$sum
		check "$r pass $pass: kernel text sha256" "$ref" "$sum"
	done
done
exit $fail
