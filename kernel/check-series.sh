#!/bin/bash
# SPDX-License-Identifier: MIT
# lint-kernel-series: the patch series (kernel/patches) still applies, in
# order, to Debian's linux-source-6.12, and every patch is a well-formed
# format-patch mail with a Signed-off-by.  Default test run, no kernel build:
#
#   - the source package (153 MB) is downloaded once with apt-get and only
#     its inner tarball is kept, in
#     ${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/linux-source-tar/<version>/;
#   - the files the series modifies are extracted from it (cached next to
#     it, re-extracted when the series starts touching another file);
#   - in a temporary copy of those files, each patch is checked with
#     `git apply --check` and then applied, in order;
#   - a negative control: patch 0001 with one context line changed must be
#     refused, so the check is shown to be able to fail.
#
# Usage: check-series.sh [--patches DIR]   (default: kernel/patches)
# TAP output; exit 1 when a patch does not apply or is malformed, or when
# the source cannot be fetched (the message says why).
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
patchdir=$here/patches
pkg=linux-source-6.12
cache=${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/linux-source-tar
log() { echo "check-series: $*" >&2; }
# shellcheck source=../tests/lib/apt-download.sh
. "$here/../tests/lib/apt-download.sh"

while [[ $# -gt 0 ]]; do
	case "$1" in
	--patches) patchdir=$2; shift 2 ;;
	-h|--help) sed -n '3,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) log "unknown argument '$1'"; exit 2 ;;
	esac
done

n=0 failures=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failures=$((failures + 1)); echo "not ok $n - $*"; }

mapfile -t patches < <(find "$patchdir" -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' | LC_ALL=C sort)
((${#patches[@]} > 1)) || { log "no patches in $patchdir"; exit 1; }

# Files the series modifies (not those it creates), as the tarball names them.
mapfile -t files < <(awk '
	/^diff --git / { if (f != "" && !created) print f; f = substr($3, 3); created = 0; next }
	/^new file mode / { created = 1 }
	/^(From [0-9a-f]+ |-- $)/ { if (f != "" && !created) print f; f = ""; created = 0 }
	END { if (f != "" && !created) print f }' "${patches[@]}" | LC_ALL=C sort -u)

# --- the source tarball -----------------------------------------------------
mkdir -p "$cache"
exec 9> "$cache/.lock"
flock 9
ver=$(kcd_newest_entry "$cache" '^6\.12\.')
if [[ -z "$ver" ]]; then
	tmp=$(mktemp -d "$cache/.tmp.XXXXXX")
	chmod 0755 "$tmp" # apt-get download drops privileges to _apt
	trap 'rm -rf "$tmp"' EXIT
	log "downloading $pkg (about 153 MB, once)"
	deb=$(apt_download_deb "$tmp" "$pkg") || { log "cannot download $pkg"; exit 1; }
	ver=$(dpkg-deb -f "$deb" Version)
	mkdir "$tmp/out"
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/out" --strip-components=3 \
		"./usr/src/$pkg.tar.xz"
	[[ -f "$tmp/out/$pkg.tar.xz" ]] || { log "no $pkg.tar.xz in $deb"; exit 1; }
	echo "$ver" > "$tmp/out/version"
	touch "$tmp/out/.complete"
	rm -rf "${cache:?}/$ver"
	mv "$tmp/out" "$cache/$ver"
	rm -rf "$tmp"
	trap - EXIT
fi
vdir=$cache/$ver
echo "# source: $pkg $ver ($vdir)"

# --- the files the series touches ------------------------------------------
need=0
for f in "${files[@]}"; do
	if [[ ! -f "$vdir/files/$f" ]]; then
		need=1
	fi
done
if ((need)); then
	log "extracting ${#files[@]} files from $pkg.tar.xz"
	rm -rf "$vdir/files.tmp"
	mkdir "$vdir/files.tmp"
	if ! xz -dc "$vdir/$pkg.tar.xz" |
		tar -x -C "$vdir/files.tmp" --strip-components=1 "${files[@]/#/$pkg/}"; then
		log "not every file the series modifies is in $pkg $ver: ${files[*]}"
		rm -rf "$vdir/files.tmp"
		exit 1
	fi
	rm -rf "$vdir/files"
	mv "$vdir/files.tmp" "$vdir/files"
fi
flock -u 9

# --- apply, in order --------------------------------------------------------
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Each copy its own git work tree, so git apply never resolves paths against
# a repository that happens to contain $TMPDIR.
for d in tree control; do
	cp -a "$vdir/files" "$work/$d"
	git -C "$work/$d" init -q
done
total=$((${#patches[@]} - 1)) # without the cover letter
for p in "${patches[@]}"; do
	name=$(basename "$p")
	num=$((10#${name%%-*}))
	subj=$(sed -n 's/^Subject: //p' "$p" | head -n 1)
	if [[ "$subj" == "[PATCH $num/$total] "* ]]; then
		ok "$name: subject numbered $num/$total"
	else
		not_ok "$name: subject '$subj' is not '[PATCH $num/$total] ...'"
	fi
	if ((num == 0)); then
		if grep -q '^-- $' "$p"; then
			ok "$name: cover letter"
		else
			not_ok "$name: no signature separator"
		fi
		continue
	fi
	if grep -q '^Signed-off-by: ' "$p"; then
		ok "$name: Signed-off-by"
	else
		not_ok "$name: no Signed-off-by"
	fi
	if out=$(cd "$work/tree" && git apply --check "$p" 2>&1) &&
		out=$(cd "$work/tree" && git apply "$p" 2>&1); then
		ok "$name: applies"
	else
		not_ok "$name: does not apply on top of the previous patches"
		printf '%s\n' "$out" | head -n 5 | sed 's/^/#   /'
	fi
done

# --- negative control -------------------------------------------------------
# The first real patch with the first context line of its first hunk
# changed must not apply: a check that cannot fail proves nothing.
first=${patches[1]}
awk 'BEGIN { done = 0 }
	/^@@ / { inhunk = 1; print; next }
	inhunk && !done && /^ ./ { print " kcoredump-negative-control" substr($0, 2); done = 1; next }
	{ print }' "$first" > "$work/broken.patch"
if cmp -s "$first" "$work/broken.patch"; then
	not_ok "negative control: could not alter $(basename "$first")"
elif (cd "$work/control" && git apply --check "$work/broken.patch") 2>/dev/null; then
	not_ok "negative control: $(basename "$first") with a changed context line still applies"
else
	ok "negative control: $(basename "$first") with a changed context line is refused"
fi

echo "1..$n"
((failures == 0)) || exit 1
