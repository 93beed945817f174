#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Build LiME (the Linux Memory Extractor, Debian's lime-forensics-dkms) for
# the Debian kernel the VM rig boots, and print the path of the lime.ko:
#   ${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/lime/<kernel release>/lime.ko
# (beside it: lime-version, the package's version, and build.log).  LiME is
# the anchor of the live-acquisition benches (bench/kcore.sh, the smear
# bench); nothing is installed on the machine:
#   - lime-forensics-dkms (its source, the newest of sid) comes through the
#     private apt configuration of tests/lib/apt-download.sh;
#   - the kernel's headers (linux-headers-<release>, its -common package and
#     linux-kbuild-<version>) through the machine's apt (6.x, as
#     fetch-kernel.sh fetches the image) or the private one (7.x), unpacked
#     in a temp dir below the cache and the module built there with
#     `make -C <headers> M=<LiME's source> modules`.
# Debian builds each kernel with one gcc (CONFIG_CC_VERSION_TEXT; 6.12 of
# Debian 12 with gcc-12, 7.x of Debian 13 with gcc-14): that compiler must
# be on the machine, or the build stops and says which one is missing.
# Without pahole the module is built without BTF (it loads the same).
# A complete entry (.complete) is reused without asking apt (offline).
#
# Usage: tests/vm/fetch-lime.sh [--series 6.12|6.1|7.N] [--package PKG]
#   --series S    the kernel of fetch-kernel.sh --series S (default 6.12)
#   --package PKG LiME's package, e.g. lime-forensics-dkms=1.9.1-8
#                 (default lime-forensics-dkms/sid); a new version
#                 replaces the cached module
#   --print-version  print LiME's version instead of the module's path
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib/apt-download.sh
. "$here/../lib/apt-download.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/shell.sh
. "$here/../lib/shell.sh"
kcd_trap_errors

series=6.12
lime_pkg=
print_version=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	--series) series=$2; shift 2 ;;
	--package) lime_pkg=$2; shift 2 ;;
	--print-version) print_version=1; shift ;;
	-h|--help) sed -n '3,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "fetch-lime.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
log() { echo "fetch-lime: $*" >&2; }
die() { log "$*"; exit 1; }

kdir=$("$here/fetch-kernel.sh" --series "$series")
krel=$(cat "$kdir/kernel-release")
cache=${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/lime
entry=$cache/$krel
print() {
	if [[ $print_version -eq 1 ]]; then cat "$entry/lime-version"; else echo "$entry/lime.ko"; fi
}
if [[ -z $lime_pkg && -f $entry/.complete ]]; then
	print
	exit 0
fi

apt_cache_begin "$cache"

# download PKG [private]: PKG's .deb unpacked into $tmp/root; its path.
download() {
	apt_fetch_unpack "$tmp" "$1" "$tmp/root" "${2:-}" || die "cannot download $1"
}

deb=$(download "${lime_pkg:-lime-forensics-dkms/sid}" private)
lime_version=$(dpkg-deb -f "$deb" Version)
if [[ -n $lime_pkg && -f $entry/.complete && $(cat "$entry/lime-version") == "$lime_version" ]]; then
	print
	exit 0
fi
src=$(find "$tmp/root/usr/src" -maxdepth 1 -name 'lime-forensics-*' | head -n 1) || true
[[ -n $src && -f $src/main.c ]] || die "$(basename "$deb") has no usr/src/lime-forensics-*/main.c"

# The headers: linux-headers-<release> names its -common and kbuild
# packages in its Depends (one version for all three).
where=
[[ $series != 7.* ]] || where=private
log "downloading the headers of $krel"
deb=$(download "linux-headers-$krel" $where)
kver=$(dpkg-deb -f "$deb" Version)
for p in $(dpkg-deb -f "$deb" Depends | sed 's/[,|]/\n/g' |
	sed -n 's/^ *\(linux-\(headers-[^ ]*-common\|kbuild-[^ ]*\)\).*/\1/p'); do
	download "$p=$kver" $where > /dev/null
done
hdr=$tmp/root/usr/src/linux-headers-$krel
[[ -f $hdr/Makefile && -f $hdr/.config ]] || die "linux-headers-$krel has no usr/src/linux-headers-$krel/{Makefile,.config}"
# Its Makefile includes the -common one by its absolute path under /usr/src.
sed -i "s|^include /usr/src/|include $tmp/root/usr/src/|" "$hdr/Makefile"

# The compiler Debian built the kernel with.
cc_text=$(sed -n 's/^CONFIG_CC_VERSION_TEXT="\(.*\)"$/\1/p' "$hdr/.config")
cc=${cc_text%% *}
command -v "$cc" > /dev/null ||
	die "$krel was built with '$cc_text'; this machine has no '$cc' (install that gcc, or boot a kernel built with this machine's)"
grep -qx 'CONFIG_MODULES=y' "$hdr/.config" || die "$krel has no loadable modules (CONFIG_MODULES)"

make_args=(-C "$hdr" M="$src" modules)
if ! command -v pahole > /dev/null; then
	log "no pahole: building lime.ko without BTF"
	make_args+=(CONFIG_DEBUG_INFO_BTF_MODULES=)
fi
log "building LiME $lime_version for $krel"
if ! make "${make_args[@]}" > "$tmp/build.log" 2>&1; then
	tail -n 20 "$tmp/build.log" >&2
	die "building LiME $lime_version for $krel failed (above: the end of its log)"
fi
vermagic=$(strings "$src/lime.ko" | sed -n 's/^vermagic=\([^ ]*\) .*/\1/p' | head -n 1)
[[ $vermagic == "$krel" ]] || die "lime.ko's vermagic is '$vermagic', not $krel"

mkdir "$tmp/entry"
cp "$src/lime.ko" "$tmp/entry/lime.ko"
# Executable: the rig's --tool copies it into the guest's /tools.
chmod 0755 "$tmp/entry/lime.ko"
echo "$lime_version" > "$tmp/entry/lime-version"
cp "$tmp/build.log" "$tmp/entry/build.log"
touch "$tmp/entry/.complete"
rm -rf "$entry"
mv "$tmp/entry" "$entry"
print
