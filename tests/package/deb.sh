#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The Debian package, built and installed on this machine: a copy of the
# source tree (git's files) is built with `dpkg-buildpackage -b -us -uc`;
# the .deb must hold the binary, the man page, the completions, the
# disabled core_pattern drop-in and the tmpfiles.d entry; lintian reports
# no error or warning; `dpkg -i` installs it, `kcoredump version` and
# `man -w kcoredump` work from the installed files, `dpkg --purge`
# removes it again.  Needs root (dpkg -i); refuses to touch a kcoredump
# package that was installed before the test.
#
# With --arch arm64 the package is cross-built (dpkg-buildpackage -aarm64,
# the :arm64 -dev packages and crossbuild-essential-arm64) and checked
# (an aarch64 binary inside, lintian) but not installed.
#
# Usage: tests/package/deb.sh [--arch ARCH] SOURCE_DIR [WORK_DIR]
set -euo pipefail
arch=$(dpkg --print-architecture)
if [[ ${1:-} == --arch ]]; then
	arch=$2
	shift 2
fi
cross=0
[[ $arch == "$(dpkg --print-architecture)" ]] || cross=1
src=$(cd "$1" && pwd)
work=${2:-}
# shellcheck source=../lib/shell.sh
. "$src/tests/lib/shell.sh"
# shellcheck source=../lib/tap.sh
. "$src/tests/lib/tap.sh"
kcd_trap_errors

[[ $(id -u) -eq 0 || $cross -eq 1 ]] || { echo "deb: dpkg -i needs root; skipping" >&2; exit 77; }
for t in dpkg-buildpackage dh lintian man; do
	command -v "$t" > /dev/null ||
		{ echo "deb: '$t' is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
done
st=$(dpkg-query -W -f='${Status}' kcoredump 2>/dev/null) || st=
if [[ $cross -eq 0 && $st == *installed* ]]; then
	echo "deb: a kcoredump package is already installed ($st); not touching it" >&2
	exit 1
fi

if [[ -z "$work" ]]; then
	work=$(mktemp -d "${TMPDIR:-/tmp}/kcoredump-deb.XXXXXX")
	trap 'rm -rf "$work"' EXIT
else
	rm -rf "$work"
	mkdir -p "$work"
fi
mkdir "$work/src"
# The tracked and new files of the tree, not its build directories.
(cd "$src" && git ls-files -co --exclude-standard -z) |
	(cd "$src" && tar --null -cf - -T -) | tar -xf - -C "$work/src"

bp=(dpkg-buildpackage -b -us -uc)
[[ $cross -eq 0 ]] || bp+=("-a$arch")
echo "# ${bp[*]} (log: $work/build.log)"
if (cd "$work/src" && "${bp[@]}") > "$work/build.log" 2>&1; then
	ok "${bp[*]}"
else
	tail -n 30 "$work/build.log" | sed 's/^/# /'
	not_ok "${bp[*]}"
	finish
fi
ver=$(cd "$work/src" && dpkg-parsechangelog -S Version)
deb=$work/kcoredump_${ver}_$arch.deb
check "kcoredump_${ver}_$arch.deb was built" test -f "$deb"

dpkg-deb -c "$deb" | awk '{print $6}' > "$work/contents"
for f in ./usr/bin/kcoredump ./usr/share/man/man8/kcoredump.8.gz \
	./usr/share/bash-completion/completions/kcoredump \
	./usr/share/zsh/vendor-completions/_kcoredump \
	./usr/share/fish/vendor_completions.d/kcoredump.fish \
	./etc/sysctl.d/50-kcoredump-core-pattern.conf \
	./usr/lib/tmpfiles.d/kcoredump.conf \
	./lib/systemd/system/kcoredump-coredump.socket \
	./lib/systemd/system/kcoredump-coredump@.service \
	./usr/lib/sysusers.d/kcoredump.conf \
	./usr/share/doc/kcoredump/README.Debian; do
	check "the package holds $f" grep -qxF "$f" "$work/contents"
done
# The drop-in must not take over core_pattern: every setting commented.
dpkg-deb --fsys-tarfile "$deb" |
	tar -xOf - ./etc/sysctl.d/50-kcoredump-core-pattern.conf > "$work/sysctl.conf"
check "the core_pattern drop-in is disabled (no active line)" \
	bash -c "! grep -qvE '^[[:space:]]*(#|\$)' '$work/sysctl.conf'"
check "the drop-in names the handler line to enable" \
	grep -qF '#kernel.core_pattern = |/usr/bin/kcoredump core-handler' "$work/sysctl.conf"

# The coredump socket units are shipped disabled: the maintainer scripts
# neither enable nor start them (they do create the kcoredump user).
dpkg-deb -e "$deb" "$work/control"
# (dh_installsystemd --no-enable: a unit is enabled again on upgrade only
# if the administrator had enabled it: "was-enabled").
check "postinst starts no unit and enables none unless it was enabled" \
	awk '/^[[:space:]]*if / { cond = $0 }
		/deb-systemd-invoke (start|restart)/ { bad = 1 }
		/deb-systemd-helper enable/ && cond !~ /was-enabled/ { bad = 1 }
		END { exit bad }' "$work/control/postinst"
check "postinst creates the kcoredump user (systemd-sysusers)" \
	grep -q 'systemd-sysusers.*kcoredump' "$work/control/postinst"

lintian --tag-display-limit 0 "$work"/kcoredump_"${ver}"_"$arch".changes \
	> "$work/lintian.txt" 2>&1 || true
grep -v '^running with root privileges' "$work/lintian.txt" | sed 's/^/# lintian: /' || true
check "lintian: no errors or warnings" \
	bash -c "! grep -qE '^[EW]: ' '$work/lintian.txt'"

if [[ $cross -eq 1 ]]; then
	dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/bin/kcoredump > "$work/kcoredump.bin"
	desc=$(file -b "$work/kcoredump.bin")
	echo "# $desc"
	case $arch in
	arm64) want=aarch64 ;;
	*) want=$arch ;;
	esac
	check "the packaged binary is for $arch" grep -q "$want" <<< "$desc"
	finish
fi

# dpkg may be busy with another apt run on a shared machine: wait.
dpkg_retry() {
	local i
	for i in $(seq 60); do
		if "$@" > "$work/dpkg.log" 2>&1; then
			return 0
		fi
		grep -q 'lock' "$work/dpkg.log" || { cat "$work/dpkg.log" >&2; return 1; }
		sleep 5
	done
	cat "$work/dpkg.log" >&2
	return 1
}
installed=0
if dpkg_retry dpkg -i "$deb"; then
	installed=1
	ok "dpkg -i"
	trap 'dpkg --purge kcoredump > /dev/null 2>&1 || true; rm -rf "$work"' EXIT
else
	not_ok "dpkg -i"
fi
if [[ $installed -eq 1 ]]; then
	check "/usr/bin/kcoredump version" bash -c \
		"/usr/bin/kcoredump version | grep -qx 'kcoredump $ver'"
	/usr/bin/kcoredump version | sed 's/^/# /'
	manpath=$(man -w kcoredump 2>/dev/null) || manpath=
	check "man -w kcoredump finds the installed page ($manpath)" \
		test "$manpath" = /usr/share/man/man8/kcoredump.8.gz
	check "the drop-in is a conffile" bash -c \
		"dpkg-query -W -f='\${Conffiles}' kcoredump | grep -q 50-kcoredump-core-pattern.conf"
	if dpkg_retry dpkg --purge kcoredump; then
		ok "dpkg --purge kcoredump"
	else
		not_ok "dpkg --purge kcoredump"
	fi
	check "the binary is gone" test ! -e /usr/bin/kcoredump
	check "the drop-in is gone" test ! -e /etc/sysctl.d/50-kcoredump-core-pattern.conf
fi
finish
