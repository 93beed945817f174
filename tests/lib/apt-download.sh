# shellcheck shell=bash
# SPDX-License-Identifier: MIT
# Sourced by the scripts that fetch Debian kernel packages into the cache
# (tests/vm/fetch-kernel.sh, tests/oracle/fetch-dbg.sh); they define log().

# apt_download_deb DIR PKG: download PKG's .deb into DIR (apt-get update
# and one retry if the first try fails) and print the .deb's path.
apt_download_deb() {
	local dir=$1 pkg=$2 deb
	(cd "$dir" && apt-get download -q "$pkg" >&2) || {
		log "apt-get download failed; running apt-get update and retrying"
		apt-get update -qq >&2
		(cd "$dir" && apt-get download -q "$pkg" >&2)
	}
	deb=$(find "$dir" -maxdepth 1 -name '*.deb' | head -n 1) || true
	[[ -n "$deb" ]] || { log "download of $pkg produced no .deb"; return 1; }
	echo "$deb"
}
