# shellcheck shell=bash
# SPDX-License-Identifier: MIT
# Sourced by the scripts that fetch Debian kernel packages into the cache
# (tests/vm/fetch-kernel.sh, tests/oracle/fetch-dbg.sh); they define log().

# apt_download_deb DIR PKG: download PKG's .deb into DIR (apt-get update
# and one retry if the first try fails) and print the .deb's path.
# As root, apt-get downloads as the _apt user, which cannot enter a cache
# below a 0700 home or mktemp directory: it warns and falls back to root.
# Say root at once instead.
apt_download_deb() {
	local dir=$1 pkg=$2 deb opts=()
	[[ $(id -u) -ne 0 ]] || opts=(-o APT::Sandbox::User=root)
	(cd "$dir" && apt-get download -q "${opts[@]}" "$pkg" >&2) || {
		log "apt-get download failed; running apt-get update and retrying"
		apt-get update -qq >&2
		(cd "$dir" && apt-get download -q "${opts[@]}" "$pkg" >&2)
	}
	deb=$(find "$dir" -maxdepth 1 -name '*.deb' | head -n 1) || true
	[[ -n "$deb" ]] || { log "download of $pkg produced no .deb"; return 1; }
	echo "$deb"
}
