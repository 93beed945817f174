#!/bin/bash
# SPDX-License-Identifier: MIT
# lint-install-deps: scripts/install-deps.sh never lets apt remove a
# package to make room for kcoredump's, and says which package conflicts.
# In Debian 12 gcc-multilib conflicts with gcc-aarch64-linux-gnu: on a
# fresh machine where gcc-multilib was installed, "apt-get install -y
# crossbuild-essential-arm64" removed one of them and the static aarch64
# build failed much later (issue 24).  Offline and in a second: dpkg,
# dpkg-query, apt-get and sudo are stand-ins on PATH (in this test's temp
# directory only) that log what they are asked; the simulated install of
# crossbuild-essential-arm64 removes gcc-multilib as Debian 12's apt does.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../lib/tap.sh
. "$repo/tests/lib/tap.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
export FAKE_WORK=$work
cat > "$work/bin/dpkg" << 'EOF2'
#!/bin/bash
case "$1" in
--print-architecture) echo amd64 ;;
--print-foreign-architectures) echo arm64 ;;
*) echo "dpkg $*" >> "$FAKE_WORK/apt.log"; exit 1 ;;
esac
EOF2
# Installed: everything but the packages named in $FAKE_WORK/missing.
cat > "$work/bin/dpkg-query" << 'EOF2'
#!/bin/bash
p=${*: -1}
grep -qxF "$p" "$FAKE_WORK/missing" && exit 1
a=amd64
[[ $p != *:* ]] || a=${p#*:}
echo "install ok installed $a"
EOF2
cat > "$work/bin/apt-get" << 'EOF2'
#!/bin/bash
echo "apt-get $*" >> "$FAKE_WORK/apt.log"
case "$*" in
update*) exit 0 ;;
"-s install "*)
	for p in "$@"; do
		case $p in
		-*|install) ;;
		crossbuild-essential-arm64)
			echo "Remv gcc-multilib [4:12.2.0-3]"
			echo "Inst gcc-aarch64-linux-gnu (4:12.2.0-3 Debian:12/stable [amd64])"
			echo "Inst $p (12.9 Debian:12/stable [all])" ;;
		*) echo "Inst $p (1 Debian:12/stable [amd64])" ;;
		esac
	done ;;
install*) echo "installed" >> "$FAKE_WORK/installed" ;;
*) exit 100 ;;
esac
EOF2
printf '#!/bin/bash\nexec "$@"\n' > "$work/bin/sudo"
chmod +x "$work/bin"/*
export PATH="$work/bin:$PATH"

# gcc-multilib is installed and the cross compiler is missing.
printf '%s\n' crossbuild-essential-arm64 jq > "$work/missing"
: > "$work/apt.log"
"$repo/scripts/install-deps.sh" > "$work/out" 2> "$work/err"
rc=$?
check "a conflict: install-deps fails (exit $rc) and installs nothing" \
	[ "$rc" -ne 0 -a ! -e "$work/installed" ]
check "a conflict: it names the package apt would remove and the one that needs it ($(tr '\n' ' ' < "$work/err" | head -c 300))" \
	grep -q "installing crossbuild-essential-arm64 would remove gcc-multilib" "$work/err"
check "a conflict: jq alone is not blamed" \
	eval '! grep -q "installing jq would remove" "$work/err"'

# No conflict: the missing packages are installed.
printf '%s\n' jq > "$work/missing"
: > "$work/apt.log"
"$repo/scripts/install-deps.sh" > "$work/out" 2> "$work/err"
rc=$?
check "no conflict: install-deps installs the missing package (exit $rc)" \
	eval '[ "$rc" -eq 0 -a -e "$work/installed" ] && grep -q "^apt-get install .* jq$" "$work/apt.log"'
[ "$rc" -eq 0 ] || diag "$work/err"

# Nothing missing: apt is not asked at all.
rm -f "$work/installed"
: > "$work/missing"
: > "$work/apt.log"
"$repo/scripts/install-deps.sh" > "$work/out" 2> "$work/err"
rc=$?
check "nothing missing: exit $rc, no apt call" [ "$rc" -eq 0 -a ! -s "$work/apt.log" ]
finish
