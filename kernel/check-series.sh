#!/bin/bash
# SPDX-License-Identifier: MIT
# lint-kernel-series: the patch series (kernel/patches) still applies, in
# order, to the pinned Debian linux-source-6.12 that kernel/build.sh caches
# (${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/linux-source/<version>/src,
# tag "base"), and every patch is a well-formed format-patch mail with a
# Signed-off-by.  Nothing is built and the cached tree is not touched: the
# patches are applied to a temporary index (git apply --cached).  TAP
# output; exit 77 (skip) when no source has been cached yet (run
# kernel/build.sh --config-only once to fetch it: a 153 MB download that unpacks to about 2 GB with its git import, so it
# is not part of scripts/install-deps.sh).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/linux-source
n=0 failures=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failures=$((failures + 1)); echo "not ok $n - $*"; }

src=
for d in "$cache"/*/; do
	[[ -e "$d/.complete" && -d "$d/src/.git" ]] && src=${d%/}/src
done
if [[ -z "$src" ]] || ! git -C "$src" rev-parse -q --verify base >/dev/null; then
	echo "1..0 # SKIP no cached linux-source-6.12 in $cache (kernel/build.sh --config-only fetches it)"
	exit 77
fi
echo "# source: $src ($(cat "$src/../version" 2>/dev/null || echo '?'))"

mapfile -t patches < <(find "$here/patches" -name '[0-9][0-9][0-9][0-9]-*.patch' | LC_ALL=C sort)
total=$((${#patches[@]} - 1))   # without the cover letter
idx=$(mktemp)
trap 'rm -f "$idx"' EXIT
rm -f "$idx"
GIT_INDEX_FILE=$idx git -C "$src" read-tree base || { echo "Bail out! read-tree base"; exit 1; }
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
	if out=$(GIT_INDEX_FILE=$idx git -C "$src" apply --cached "$p" 2>&1); then
		ok "$name: applies"
	else
		not_ok "$name: does not apply on top of the previous patches"
		printf '%s\n' "$out" | head -n 5 | sed 's/^/#   /'
	fi
done
echo "1..$n"
((failures == 0))
