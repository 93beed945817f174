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
cat > "$work/bin/apt-cache" << EOF
#!/bin/bash
# search --names-only RE: the fake package when RE asks for 6.12.
echo "apt-cache \$*" >> "$work/apt.log"
[[ "\$*" == *6\\\\.12* ]] && echo "$pkg - fake"
exit 0
EOF
cat > "$work/bin/apt-get" << EOF
#!/bin/bash
echo "apt-get \$*" >> "$work/apt.log"
case "\$1 \${2:-}" in
"update "*) exit 0 ;;
"download "*|"download -q") [[ -e "$work/offline" ]] && exit 100
	cp "$work/fake.deb" "./${pkg}_6.12.999-1_amd64.deb" ;;
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
