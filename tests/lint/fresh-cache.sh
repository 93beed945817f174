#!/bin/bash
# SPDX-License-Identifier: MIT
# lint-fresh-cache: the VM rig's and the oracles' download helpers work from
# an empty KCOREDUMP_CACHE, as on a fresh machine, and every failure says
# what failed.  Offline and in seconds: apt-cache and apt-get are stand-ins
# on PATH that serve a small fake kernel package built here with dpkg-deb
# (the real download runs in CI, where .ci/run gives the default tier an
# empty cache).
#
# Issue 14: fetch-kernel.sh picked the newest cached kernel with
#   best=$(find "$cache" ... | grep -E "$dir_re" | sort -V | tail -n 1)
# under `set -euo pipefail`; in an empty cache grep exits 1, and set -e
# ended the script silently before it downloaded anything.  The first check
# runs that line, verbatim, against an empty cache and expects it to die.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../lib/tap.sh
. "$repo/tests/lib/tap.sh"

for t in dpkg-deb flock; do
	command -v "$t" > /dev/null || { echo "1..0 # SKIP no $t"; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --- the old line dies in an empty cache, the helper does not ---------------
mkdir "$work/empty"
out=$(cache=$work/empty dir_re='^6\.12\.' bash -c '
	set -euo pipefail
	best=$(find "$cache" -mindepth 1 -maxdepth 1 -type d ! -name ".*" \
		-printf "%f\n" 2>/dev/null | grep -E "$dir_re" | sort -V | tail -n 1) # lint-shell: fatal (the line under test)
	echo "reached: [$best]"' 2>&1)
rc=$?
check "the old fetch-kernel line ends the script in an empty cache (exit $rc)" \
	[ "$rc" -ne 0 -a -z "$out" ]
out=$(bash -c '
	set -euo pipefail
	. "$1/tests/lib/shell.sh"
	kcd_trap_errors
	best=$(kcd_newest_entry "$2/empty" "^6\.12\.")
	best2=$(kcd_newest_entry "$2/missing" "^6\.12\.")
	echo "reached: [$best$best2]"' _ "$repo" "$work" 2>&1)
check "kcd_newest_entry: nothing, and no failure, in an empty or missing cache" \
	[ "$out" = "reached: []" ]
mkdir -p "$work/some/6.12.9" "$work/some/6.12.10" "$work/some/6.12.11" "$work/some/6.1.0-9"
touch "$work/some/6.12.9/.complete" "$work/some/6.12.10/.complete" "$work/some/6.1.0-9/.complete"
out=$(bash -c '. "$1/tests/lib/shell.sh"; kcd_newest_entry "$2/some" "^6\.12\."' _ "$repo" "$work")
check "kcd_newest_entry: the newest complete entry by version (6.12.10, not 6.12.11 without .complete nor 6.12.9) [$out]" \
	[ "$out" = 6.12.10 ]

# --- the ERR trap names script, line and command ----------------------------
cat > "$work/fails.sh" << EOF
#!/bin/bash
set -euo pipefail
. "$repo/tests/lib/shell.sh"
kcd_trap_errors
f() { grep -q no-such-text /dev/null; }
echo start
f
echo unreached
EOF
out=$(bash "$work/fails.sh" 2>&1)
rc=$?
check "ERR trap: a failing command is named with its script and line (exit $rc: $out)" \
	eval '[ "$rc" -ne 0 ] && [[ "$out" == *"fails.sh: line 5: '\''grep -q no-such-text /dev/null'\'' failed (exit status 1)"* ]]'

# --- stand-in apt serving a fake kernel package ------------------------------
ver=6.12.999+deb12-amd64
pkg=linux-image-$ver-unsigned
mkdir -p "$work/deb/DEBIAN" "$work/deb/boot" "$work/deb/lib/modules/$ver/kernel"
printf 'Package: %s\nVersion: 6.12.999-1\nArchitecture: amd64\nMaintainer: test <t@example.invalid>\nDescription: fake kernel for lint-fresh-cache\n' \
	"$pkg" > "$work/deb/DEBIAN/control"
echo "fake bzImage" > "$work/deb/boot/vmlinuz-$ver"
dpkg-deb --root-owner-group -b "$work/deb" "$work/fake.deb" > /dev/null
mkdir "$work/bin"
# Linux 7.x: three packages of one version (binary, modules, base), each
# below usr/lib/modules/VER/, served through the private configuration.
ver7=7.3.999+deb13-amd64
v7=7.3.999-1~bpo13+1
for part in binary-unsigned modules base; do
	d=$work/deb7-$part
	mkdir -p "$d/DEBIAN" "$d/usr/lib/modules/$ver7"
	printf 'Package: linux-%s-%s\nVersion: %s\nArchitecture: amd64\nMaintainer: test <t@example.invalid>\nDescription: fake kernel part for lint-fresh-cache\n' \
		"$part" "$ver7" "$v7" > "$d/DEBIAN/control"
	case $part in
	binary-unsigned) echo "fake bzImage 7" > "$d/usr/lib/modules/$ver7/vmlinuz.unsigned" ;;
	modules) mkdir -p "$d/usr/lib/modules/$ver7/kernel/fs/9p"
		echo "fake module" > "$d/usr/lib/modules/$ver7/kernel/fs/9p/9p.ko" ;;
	base) echo "CONFIG_FAKE=y" > "$d/usr/lib/modules/$ver7/config"
		echo "ffffffff81000000 T _text" > "$d/usr/lib/modules/$ver7/System.map" ;;
	esac
	dpkg-deb --root-owner-group -b "$d" "$work/fake7-$part.deb" > /dev/null
done
# The stand-ins log their arguments and drop apt's "-o KEY=VALUE" options
# (the private configuration passes a dozen) before looking at the command.
export FAKE_WORK=$work FAKE_PKG=$pkg FAKE_VER7=$ver7 FAKE_V7=$v7
cat > "$work/bin/apt-cache" << 'EOF'
#!/bin/bash
echo "apt-cache $*" >> "$FAKE_WORK/apt.log"
a=()
while (($#)); do
	if [[ $1 == -o ]]; then shift 2; else a+=("$1"); shift; fi
done
set -- "${a[@]}"
case "$1" in
# search --names-only RE: the fake package when RE asks for 6.12 or 7.3.
search) [[ "$*" == *'6\.12'* ]] && echo "$FAKE_PKG - fake"
	[[ "$*" == *'7\.3'* ]] && echo "linux-binary-unsigned-$FAKE_VER7 - fake" ;;
show) [[ "$2" == *"$FAKE_VER7"* ]] && printf 'Package: %s\nVersion: %s\n\n' "${2%%:*}" "$FAKE_V7" ;;
esac
exit 0
EOF
cat > "$work/bin/apt-get" << 'EOF'
#!/bin/bash
echo "apt-get $*" >> "$FAKE_WORK/apt.log"
a=()
while (($#)); do
	if [[ $1 == -o ]]; then shift 2; else a+=("$1"); shift; fi
done
set -- "${a[@]}"
case "$1 ${2:-}" in
"update "*) exit 0 ;;
"download "*|"download -q") [[ -e "$FAKE_WORK/offline" ]] && exit 100
	p=${*: -1}
	case $p in
	"$FAKE_PKG"*) cp "$FAKE_WORK/fake.deb" "./${FAKE_PKG}_6.12.999-1_amd64.deb" ;;
	linux-*-"$FAKE_VER7:amd64=$FAKE_V7")
		part=${p#linux-}
		part=${part%%-"$FAKE_VER7"*}
		[[ $part != "${KCD_FAKE_MISSING:-}" ]] || exit 100
		cp "$FAKE_WORK/fake7-$part.deb" "./linux-$part-${FAKE_VER7}_7.3.999_amd64.deb" ;;
	*) exit 100 ;;
	esac ;;
*) exit 100 ;;
esac
EOF
chmod +x "$work/bin/apt-cache" "$work/bin/apt-get"
export PATH="$work/bin:$PATH"

export KCOREDUMP_CACHE=$work/cache
out=$("$repo/tests/vm/fetch-kernel.sh" 2> "$work/err")
rc=$?
check "fetch-kernel.sh, empty cache: downloads and unpacks (exit $rc, '$out')" \
	[ "$rc" -eq 0 -a "$out" = "$KCOREDUMP_CACHE/kernel/$ver" -a -f "$out/boot/vmlinuz-$ver" -a -f "$out/.complete" ]
[ "$rc" -eq 0 ] || diag "$work/err"
touch "$work/offline"
: > "$work/apt.log"
out=$("$repo/tests/vm/fetch-kernel.sh" --print-vmlinuz 2> "$work/err")
rc=$?
check "fetch-kernel.sh, warm cache: reused without apt (exit $rc)" \
	[ "$rc" -eq 0 -a "$out" = "$KCOREDUMP_CACHE/kernel/$ver/boot/vmlinuz-$ver" -a ! -s "$work/apt.log" ]

out=$("$repo/tests/vm/fetch-kernel.sh" --series 6.1 2> "$work/err")
rc=$?
check "fetch-kernel.sh, no package known: fails and says why (exit $rc: $(head -c 200 "$work/err"))" \
	eval '[ "$rc" -ne 0 ] && grep -q '\''no Linux 6.1 image package available'\'' "$work/err"'

KCOREDUMP_CACHE=$work/cache2 "$repo/tests/vm/fetch-kernel.sh" > /dev/null 2> "$work/err"
rc=$?
check "fetch-kernel.sh, download fails: says so (exit $rc: $(tr '\n' ' ' < "$work/err" | head -c 200))" \
	eval '[ "$rc" -ne 0 ] && grep -q '\''apt-get download'\'' "$work/err"'
check "fetch-kernel.sh, download fails: no cache entry left behind" \
	[ -z "$(find "$work/cache2/kernel" -mindepth 1 -maxdepth 1 ! -name .lock -print -quit 2> /dev/null)" ]

# Linux 7.x through the private apt configuration: the three packages of
# one version, laid out as a 6.x entry.
rm -f "$work/offline"
: > "$work/apt.log"
out=$("$repo/tests/vm/fetch-kernel.sh" --series 7.3 2> "$work/err")
rc=$?
check "fetch-kernel.sh --series 7.3, empty cache: the three packages unpacked as a 6.x entry (exit $rc, '$out')" \
	eval '[ "$rc" -eq 0 -a "$out" = "$KCOREDUMP_CACHE/kernel/$ver7" ] &&
		[ "$(cat "$out/boot/vmlinuz-$ver7")" = "fake bzImage 7" ] &&
		[ -f "$out/boot/config-$ver7" -a -f "$out/boot/System.map-$ver7" ] &&
		[ -f "$out/lib/modules/$ver7/kernel/fs/9p/9p.ko" -a -f "$out/.complete" ] &&
		[ "$(cat "$out/kernel-release")" = "$ver7" ]'
[ "$rc" -eq 0 ] || diag "$work/err"
parts_pinned() {
	local p
	for p in binary-unsigned modules base; do
		grep -q "apt-private/lists.* download -q linux-$p-$ver7:amd64=$v7\$" "$work/apt.log" || return 1
	done
}
check "fetch-kernel.sh --series 7.3: each part downloaded at the binary's version, with the private configuration" \
	parts_pinned
touch "$work/offline"
: > "$work/apt.log"
out=$("$repo/tests/vm/fetch-kernel.sh" --series 7.3 --print-vmlinuz 2> "$work/err")
rc=$?
check "fetch-kernel.sh --series 7.3, warm cache: reused without apt (exit $rc)" \
	[ "$rc" -eq 0 -a "$out" = "$KCOREDUMP_CACHE/kernel/$ver7/boot/vmlinuz-$ver7" -a ! -s "$work/apt.log" ]
out=$("$repo/tests/vm/fetch-kernel.sh" 2> "$work/err")
check "fetch-kernel.sh: the default series is still 6.12 beside a cached 7.3 ('$out')" \
	[ "$out" = "$KCOREDUMP_CACHE/kernel/$ver" ]
rm -f "$work/offline"
KCD_FAKE_MISSING=modules KCOREDUMP_CACHE=$work/cache5 \
	"$repo/tests/vm/fetch-kernel.sh" --series 7.3 > /dev/null 2> "$work/err"
rc=$?
check "fetch-kernel.sh --series 7.3, a part cannot be downloaded: says which (exit $rc: $(tr '\n' ' ' < "$work/err" | head -c 300))" \
	eval '[ "$rc" -ne 0 ] && grep -q "cannot download linux-modules-$ver7" "$work/err"'
check "fetch-kernel.sh --series 7.3, a part cannot be downloaded: no cache entry left behind" \
	[ -z "$(find "$work/cache5/kernel" -mindepth 1 -maxdepth 1 ! -name .lock -print -quit 2> /dev/null)" ]
"$repo/tests/vm/fetch-kernel.sh" --series 7 > /dev/null 2> "$work/err"
rc=$?
check "fetch-kernel.sh --series 7: a usage error (exit $rc)" \
	eval '[ "$rc" -eq 2 ] && grep -q "6.12, 6.1 or 7.N" "$work/err"'
touch "$work/offline"

KCOREDUMP_CACHE=$work/cache3 "$repo/tests/oracle/fetch-dbg.sh" > /dev/null 2> "$work/err"
rc=$?
check "fetch-dbg.sh, empty cache: fails and says why (exit $rc)" \
	eval '[ "$rc" -ne 0 ] && grep -q '\''no VM kernel cached'\'' "$work/err"'

# run.sh against an empty cache with no way to download: a message, not a
# silent exit (the case is never booted).
if command -v qemu-system-x86_64 > /dev/null; then
	printf '#!/bin/sh\ntrue\n' > "$work/kcoredump"
	chmod +x "$work/kcoredump"
	KCOREDUMP_CACHE=$work/cache4 "$repo/tests/vm/run.sh" --kcoredump "$work/kcoredump" \
		--results "$work/res" smoke > /dev/null 2> "$work/err"
	rc=$?
	check "run.sh, empty cache and no download: fails and names what failed (exit $rc: $(tr '\n' ' ' < "$work/err" | head -c 300))" \
		eval '[ "$rc" -ne 0 ] && grep -q "fetch-kernel.sh" "$work/err"'
else
	skip "run.sh: no qemu-system-x86_64"
fi
finish
