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

# A private apt configuration for Debian suites this Debian 12 machine does
# not list (trixie, trixie-backports, sid): Linux 7.x images and source, and
# the newest readers.  Its own sources list, lists, package cache and an
# empty dpkg status live below the cache; the machine's own apt sources are
# never read or changed.  Those suites' Release files can look expired to
# the machine's clock, hence Check-Valid-Until=false.
#
# apt_private CMD ARGS...: run CMD (apt-get or apt-cache) with the private
#   configuration, bringing its lists up to date first when they are missing
#   or older than a day (KCD_APT_PRIVATE_REFRESH=1 forces an update).
# apt_private_download_deb DIR PKG: as apt_download_deb, from those suites.
#   PKG may pin a suite (NAME/sid, NAME/trixie-backports) or a version
#   (NAME=VERSION) and an architecture (NAME:arm64).
apt_private_dir() {
	echo "${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/apt-private"
}

apt_private_opts() {
	local d
	d=$(apt_private_dir)
	printf '%s\n' -o "Dir::Etc::sourcelist=$d/sources.list" \
		-o "Dir::Etc::sourceparts=$d/empty.d" \
		-o "Dir::Etc::preferences=$d/preferences" \
		-o "Dir::Etc::preferencesparts=$d/empty.d" \
		-o "Dir::State::Lists=$d/lists" \
		-o "Dir::State::status=$d/status" \
		-o "Dir::Cache=$d/cache" \
		-o Acquire::Check-Valid-Until=false \
		-o APT::Get::List-Cleanup=0 \
		-o APT::Architectures::=amd64 -o APT::Architectures::=arm64
	[[ $(id -u) -ne 0 ]] || printf '%s\n' -o APT::Sandbox::User=root
}

apt_private_update() {
	local d opts stamp age
	d=$(apt_private_dir)
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial" "$d/empty.d"
	# One updater at a time: parallel tests share the cache.
	(
		flock 8
		if [[ ! -f "$d/sources.list" ]]; then
			local k=/usr/share/keyrings/debian-archive-keyring.gpg s
			for s in trixie trixie-backports sid; do
				echo "deb [signed-by=$k] http://deb.debian.org/debian $s main"
			done > "$d/sources.list.tmp"
			mv "$d/sources.list.tmp" "$d/sources.list"
			: > "$d/status"
			: > "$d/preferences"
		fi
		stamp="$d/lists/.updated"
		age=999999
		[[ ! -f $stamp ]] || age=$(($(date +%s) - $(stat -c %Y "$stamp")))
		if ((age > 86400)) || [[ ${KCD_APT_PRIVATE_REFRESH:-0} == 1 ]]; then
			mapfile -t opts < <(apt_private_opts)
			echo "apt-private: updating the lists of trixie, trixie-backports and sid in $d" >&2
			if ! apt-get "${opts[@]}" update -qq >&2; then
				echo "apt-private: apt-get update of the private configuration failed" >&2
				exit 1
			fi
			touch "$stamp"
		fi
	) 8> "$d/.lock"
}

apt_private() {
	local cmd=$1 opts
	shift
	apt_private_update || return 1
	mapfile -t opts < <(apt_private_opts)
	"$cmd" "${opts[@]}" "$@"
}

apt_private_download_deb() {
	local dir=$1 pkg=$2 deb
	(cd "$dir" && apt_private apt-get download -q "$pkg" >&2) || {
		echo "apt-private: download of $pkg failed; refreshing the lists and retrying" >&2
		(cd "$dir" && KCD_APT_PRIVATE_REFRESH=1 apt_private apt-get download -q "$pkg" >&2)
	} || { echo "apt-private: cannot download $pkg" >&2; return 1; }
	deb=$(find "$dir" -maxdepth 1 -name '*.deb' | head -n 1) || true
	[[ -n "$deb" ]] || { echo "apt-private: download of $pkg produced no .deb" >&2; return 1; }
	echo "$deb"
}

# apt_fetch_unpack TMP PKG ROOT [private]: download PKG's .deb into a new
# directory below TMP (with the machine's apt, or the private
# configuration), unpack it into ROOT and print the .deb's path.
apt_fetch_unpack() {
	local tmp=$1 pkg=$2 root=$3 dir deb
	dir=$(mktemp -d "$tmp/deb.XXXXXX")
	chmod 0755 "$dir" # apt-get download drops privileges to _apt
	if [[ ${4:-} == private ]]; then
		deb=$(apt_private_download_deb "$dir" "$pkg") || return 1
	else
		deb=$(apt_download_deb "$dir" "$pkg") || return 1
	fi
	dpkg-deb -x "$deb" "$root"
	echo "$deb"
}

# apt_cache_begin DIR: hold DIR/.lock (on fd 9) for the rest of the
# script, one fetch at a time, and set tmp to a new directory below DIR
# that an EXIT trap removes (unpack there, then rename into place).
apt_cache_begin() {
	mkdir -p "$1"
	exec 9> "$1/.lock"
	flock 9
	tmp=$(mktemp -d "$1/.tmp.XXXXXX")
	chmod 0755 "$tmp" # apt-get download drops privileges to _apt
	trap 'rm -rf "$tmp"' EXIT
}
