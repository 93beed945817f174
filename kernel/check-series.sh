#!/bin/bash
# SPDX-License-Identifier: MIT
# lint-kernel-series: the patch series still apply, in order, to their
# Debian bases -- kernel/patches (the 6.12 LTS backport) to
# linux-source-6.12, kernel/patches-7.3 (the postings, one subdirectory
# each, applied in the order of their names) to linux-source-7.3 from
# trixie-backports -- and every patch is a well-formed format-patch mail
# with a Signed-off-by.  Default test run, no kernel build:
#
#   - each source package (150-160 MB) is downloaded once with apt-get (7.3
#     through the private apt configuration of tests/lib/apt-download.sh)
#     and only its inner tarball is kept, in
#     ${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/linux-source-tar/<version>/;
#   - the files the series modifies are extracted from it (cached next to
#     it, re-extracted when the series starts touching another file);
#   - in a temporary copy of those files, each patch is checked with
#     `git apply --check` and then applied, in order;
#   - each posting's subjects are numbered 0..N of N ("[PATCH v3 2/4]"), its
#     cover letter (0000) is there, and the fixes of a posting whose cover
#     letter says "stable" carry Fixes: and Cc: stable;
#   - a negative control: the first patch with one context line changed
#     must be refused, so the check is shown to be able to fail.
#
# Usage: check-series.sh [--base 6.12|7.3] [--patches DIR]
#   (default: both bases, each with its series)
# TAP output; exit 1 when a patch does not apply or is malformed, or when
# the source cannot be fetched (the message says why).
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
patchdir=
bases=(6.12 7.3)
cache=${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/linux-source-tar
log() { echo "check-series: $*" >&2; }
# shellcheck source=../tests/lib/apt-download.sh
. "$here/../tests/lib/apt-download.sh"

while [[ $# -gt 0 ]]; do
	case "$1" in
	--base)
		case "$2" in 6.12|7.3) bases=("$2") ;; *) log "--base must be 6.12 or 7.3, not '$2'"; exit 2 ;; esac
		shift 2 ;;
	--patches) patchdir=$(cd "$2" && pwd) || { log "no directory '$2'"; exit 2; }; shift 2 ;;
	-h|--help) sed -n '3,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) log "unknown argument '$1'"; exit 2 ;;
	esac
done

((${#bases[@]} == 1)) || [[ -z "$patchdir" ]] || { log "--patches needs --base"; exit 2; }

n=0 failures=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failures=$((failures + 1)); echo "not ok $n - $*"; }

# fetch_files BASE FILE...: prints the directory holding those files of
# Debian's linux-source-BASE (downloaded and extracted once, cached).
fetch_files() {
	local base=$1 pkg=linux-source-$1 ver tmp deb vdir need f
	shift
	mkdir -p "$cache"
	exec 9> "$cache/.lock"
	if ! flock -n 9; then
		log "waiting for $cache/.lock (another run is fetching or extracting)"
		flock 9
	fi
	ver=$(kcd_newest_entry "$cache" "^${base//./\\.}\\.")
	if [[ -z "$ver" ]]; then
		tmp=$(mktemp -d "$cache/.tmp.XXXXXX")
		chmod 0755 "$tmp" # apt-get download drops privileges to _apt
		log "downloading $pkg (about 160 MB, once)"
		if [[ "$base" == 6.12 ]]; then
			deb=$(apt_download_deb "$tmp" "$pkg") || { log "cannot download $pkg"; rm -rf "$tmp"; return 1; }
		else
			deb=$(apt_private_download_deb "$tmp" "$pkg/trixie-backports") ||
				{ log "cannot download $pkg from trixie-backports"; rm -rf "$tmp"; return 1; }
		fi
		ver=$(dpkg-deb -f "$deb" Version)
		mkdir "$tmp/out"
		dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/out" --strip-components=3 \
			"./usr/src/$pkg.tar.xz"
		[[ -f "$tmp/out/$pkg.tar.xz" ]] || { log "no $pkg.tar.xz in $deb"; rm -rf "$tmp"; return 1; }
		echo "$ver" > "$tmp/out/version"
		touch "$tmp/out/.complete"
		rm -rf "${cache:?}/$ver"
		mv "$tmp/out" "$cache/$ver"
		rm -rf "$tmp"
	fi
	vdir=$cache/$ver
	need=0
	for f in "$@"; do
		[[ -f "$vdir/files/$f" ]] || need=1
	done
	if ((need)); then
		log "extracting $# files from $pkg.tar.xz"
		rm -rf "$vdir/files.tmp"
		mkdir "$vdir/files.tmp"
		if ! xz -dc "$vdir/$pkg.tar.xz" |
			tar -x -C "$vdir/files.tmp" --strip-components=1 "${@/#/$pkg/}"; then
			log "not every file the series modifies is in $pkg $ver: $*"
			rm -rf "$vdir/files.tmp"
			return 1
		fi
		rm -rf "$vdir/files"
		mv "$vdir/files.tmp" "$vdir/files"
	fi
	flock -u 9
	echo "$vdir"
}

# check_posting DIR TREE: the mails of one posting (DIR/NNNN-*.patch),
# numbered and signed, applied in order to TREE.
check_posting() {
	local dir=$1 tree=$2 p name num subj total stable=0 label
	local -a mails
	mapfile -t mails < <(find "$dir" -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' | LC_ALL=C sort)
	label=$(basename "$dir")
	total=${#mails[@]}
	[[ "$(basename "${mails[0]}")" == 0000-* ]] && total=$((total - 1))
	((total > 0)) || { not_ok "$label: no patches"; return; }
	for p in "${mails[@]}"; do
		name=$label/$(basename "$p")
		num=$((10#$(basename "$p" | cut -c1-4)))
		subj=$(sed -n 's/^Subject: //p' "$p" | head -n 1)
		if [[ "$subj" =~ ^\[PATCH( v[0-9]+)?\ $num/$total\]\  ]]; then
			ok "$name: subject numbered $num/$total"
		else
			not_ok "$name: subject '$subj' is not '[PATCH [vN ]$num/$total] ...'"
		fi
		if ((num == 0)); then
			if grep -q '^-- $' "$p" && ! grep -q '\*\*\* \(SUBJECT\|BLURB\) HERE \*\*\*' "$p"; then
				ok "$name: cover letter"
			else
				not_ok "$name: cover letter without a signature separator, or with format-patch's placeholders"
			fi
			grep -qi 'stable' <(sed -n '1,/^---/p' "$p") && stable=1
			continue
		fi
		if grep -q '^Signed-off-by: ' "$p"; then
			ok "$name: Signed-off-by"
		else
			not_ok "$name: no Signed-off-by"
		fi
		# A posting for stable: each fix names what it fixes (its tests need not)
		if ((stable)) && grep -q '^Subject:.*\bfix\b' "$p"; then
			if grep -q '^Fixes: [0-9a-f]\{12,\} ("' "$p" && grep -q '^Cc: stable@vger.kernel.org' "$p"; then
				ok "$name: Fixes: and Cc: stable"
			else
				not_ok "$name: a stable fix without Fixes: or Cc: stable@vger.kernel.org"
			fi
		fi
		if out=$(cd "$tree" && git apply --check "$p" 2>&1) &&
			out=$(cd "$tree" && git apply "$p" 2>&1); then
			ok "$name: applies"
		else
			not_ok "$name: does not apply on top of the previous patches"
			printf '%s\n' "$out" | head -n 5 | sed 's/^/#   /'
		fi
	done
}

check_base() {
	local base=$1 dir=$2 vdir first d
	local -a postings all files
	# a series directory is one posting, or one subdirectory per posting
	if compgen -G "$dir/[0-9][0-9][0-9][0-9]-*.patch" > /dev/null; then
		postings=("$dir")
	else
		mapfile -t postings < <(find "$dir" -mindepth 1 -maxdepth 1 -type d | LC_ALL=C sort)
	fi
	((${#postings[@]} > 0)) || { not_ok "$base: no patches in $dir"; return; }
	mapfile -t all < <(for d in "${postings[@]}"; do
		find "$d" -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' ! -name '0000-*' | LC_ALL=C sort || true
	done)
	((${#all[@]} > 0)) || { not_ok "$base: no patches in $dir"; return; }
	# Files the series modifies (not those it creates), as the tarball names them.
	mapfile -t files < <(awk '
		/^diff --git / { if (f != "" && !created) print f; f = substr($3, 3); created = 0; next }
		/^new file mode / { created = 1 }
		/^(From [0-9a-f]+ |-- $)/ { if (f != "" && !created) print f; f = ""; created = 0 }
		END { if (f != "" && !created) print f }' "${all[@]}" | LC_ALL=C sort -u)
	if ! vdir=$(fetch_files "$base" "${files[@]}"); then
		not_ok "$base: cannot get the files of linux-source-$base"
		return
	fi
	echo "# base $base: linux-source-$base $(cat "$vdir/version") ($vdir), series $dir"
	# Each copy its own git work tree, so git apply never resolves paths
	# against a repository that happens to contain $TMPDIR.
	rm -rf "$work/tree" "$work/control"
	for d in tree control; do
		cp -a "$vdir/files" "$work/$d"
		git -C "$work/$d" init -q
	done
	for d in "${postings[@]}"; do
		check_posting "$d" "$work/tree"
	done
	# --- negative control: the first patch with the first context line of
	# its first hunk changed must not apply: a check that cannot fail
	# proves nothing.
	first=${all[0]}
	awk 'BEGIN { done = 0 }
		/^@@ / { inhunk = 1; print; next }
		inhunk && !done && /^ ./ { print " kcoredump-negative-control" substr($0, 2); done = 1; next }
		{ print }' "$first" > "$work/broken.patch"
	if cmp -s "$first" "$work/broken.patch"; then
		not_ok "$base negative control: could not alter $(basename "$first")"
	elif (cd "$work/control" && git apply --check "$work/broken.patch") 2>/dev/null; then
		not_ok "$base negative control: $(basename "$first") with a changed context line still applies"
	else
		ok "$base negative control: $(basename "$first") with a changed context line is refused"
	fi
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for b in "${bases[@]}"; do
	d=$patchdir
	if [[ -z "$d" ]]; then
		case "$b" in 6.12) d=$here/patches ;; 7.3) d=$here/patches-7.3 ;; esac
	fi
	check_base "$b" "$d"
done

echo "1..$n"
((failures == 0)) || exit 1
