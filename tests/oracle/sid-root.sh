#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The newest readers (Debian sid: crash 9.0.x, python3-drgn 0.3.x with
# libkdumpfile 0.5.x, makedumpfile 1.7.8, gdb 18, elfutils 0.196) in a
# Debian sid root file system made with mmdebstrap from Debian's registry,
# cached outside the source tree like the VM kernels:
#   ${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/sid-root/<key>/
# <key> names the package list below, so changing it builds a new root.  A
# complete entry is reused; it is built in a temp dir and renamed into place,
# so an interrupted build leaves nothing a later run would use.  The
# machine's apt sources are never read or changed: mmdebstrap takes its own
# mirror and keyring.
#
# Usage:
#   sid-root.sh [--skip]             build (or reuse) the root; print its path.
#                                    --skip: exit 77 (ctest skip) when it
#                                    cannot be built here (no mmdebstrap, not
#                                    root, no network) instead of 1
#   sid-root.sh run [--bind PATH | --bind-rw PATH]... [--] CMD ARGS...
#                                    run CMD inside the root (a private mount
#                                    namespace and chroot): each PATH (file or
#                                    directory, with the mounts below it) is
#                                    bind-mounted at the same path inside,
#                                    read-only unless --bind-rw; /proc, /dev
#                                    and a fresh /tmp are mounted too.
#                                    Nothing stays mounted after CMD exits.
#   sid-root.sh versions             print the readers' package versions.
set -euo pipefail
# shellcheck source=../lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/shell.sh"
kcd_trap_errors

log() { echo "sid-root: $*" >&2; }
cache="${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/sid-root"
mirror=${KCOREDUMP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
pkgs=crash,python3-drgn,makedumpfile,gdb,elfutils,python3-libkdumpfile,python3,file,ca-certificates
key="sid-$(printf '%s\n' "$pkgs" | sha256sum | cut -c1-12)"
root="$cache/$key"

skip=0
fail() {
	log "$*"
	((skip)) && exit 77
	exit 1
}

build() {
	[[ -f "$root/.complete" ]] && return 0
	command -v mmdebstrap > /dev/null ||
		fail "mmdebstrap is not installed (scripts/install-deps.sh installs it)"
	[[ $(id -u) -eq 0 ]] || fail "building and entering the root needs root (chroot, mounts)"
	mkdir -p "$cache"
	exec 9> "$cache/.lock"
	flock 9
	[[ -f "$root/.complete" ]] && return 0
	local tmp
	tmp=$(mktemp -d "$cache/.tmp-$key.XXXXXX")
	# shellcheck disable=SC2064
	trap "rm -rf '$tmp'" EXIT
	log "building a Debian sid root with $pkgs in $root (a few minutes)"
	# sid's Release file can look expired to the machine's clock.
	if ! nice -n 10 mmdebstrap --mode=root --variant=essential \
		--include="$pkgs" \
		--aptopt='Acquire::Check-Valid-Until "false"' \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		--keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
		sid "$tmp/root" "$mirror" > "$tmp/log" 2>&1; then
		tail -n 20 "$tmp/log" >&2
		fail "mmdebstrap of sid from $mirror failed (log above)"
	fi
	chroot "$tmp/root" dpkg-query -W -f='${Package} ${Version}\n' \
		crash python3-drgn makedumpfile gdb elfutils python3-libkdumpfile \
		> "$tmp/root/.versions"
	touch "$tmp/root/.complete"
	rm -rf "$root"
	mv "$tmp/root" "$root"
	rm -rf "$tmp"
	trap - EXIT
	exec 9>&-
}

run() {
	local binds=() p
	while (($#)); do
		case $1 in
		--bind | --bind-rw)
			p=$(realpath -e "$2") || fail "no such path to bind: '$2'"
			binds+=("${1#--bind}" "$p")
			shift 2
			;;
		--) shift; break ;;
		*) break ;;
		esac
	done
	(($#)) || fail "run: no command given"
	build
	for p in "${binds[@]}"; do
		case $p in
		"" | -rw) ;;
		/ | /proc* | /dev* | /sys*) fail "run: refusing to bind '$p'" ;;
		esac
	done
	# The mounts live in a private mount namespace: they end with it.
	exec unshare --mount --propagation private -- /bin/bash -c '
		set -euo pipefail
		root=$1; shift
		n=$1; shift
		mount -t tmpfs tmpfs "$root/tmp"
		mount -t proc proc "$root/proc"
		mount --rbind /dev "$root/dev"
		for ((i = 0; i < n; i += 2)); do
			mode=$1 p=$2; shift 2
			if [[ -d $p ]]; then
				mkdir -p "$root$p"
			else
				mkdir -p "$root$(dirname "$p")"
				[[ -e $root$p ]] || : > "$root$p"
			fi
			mount --rbind "$p" "$root$p"
			[[ $mode == -rw ]] || mount -o remount,bind,ro "$root$p"
		done
		exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/tmp LANG=C.UTF-8 TERM=dumb "$@"
	' sid-run "$root" "${#binds[@]}" "${binds[@]}" "$@"
}

case ${1:-} in
run) shift; run "$@" ;;
versions) build; cat "$root/.versions" ;;
--skip) skip=1; build; echo "$root" ;;
"") build; echo "$root" ;;
-h | --help) sed -n '3,28p' "$0" | sed 's/^# \{0,1\}//' ;;
*) echo "sid-root.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac
