#!/usr/bin/env bash
# Build a test kernel from Debian's linux-source-6.12 or linux-source-7.3,
# stock or with the kcoredump patch series for that base applied
# (kernel/patches/*.patch on 6.12, the LTS backport; kernel/patches-7.3 on
# 7.3, the series that is posted).
#
#   kernel/build.sh [--base 6.12|7.3] [--stock|--patched] [--upto N]
#                   [--out DIR] [--jobs N] [--no-ccache] [--config-only]
#                   [--debug | --nommu] [--patches DIR]
#
# Sources (--base, default 6.12): `apt-get download linux-source-6.12`
# (Debian 12; apt-get update only if the package is unknown), or
# linux-source-7.3 from trixie-backports through the private apt
# configuration of tests/lib/apt-download.sh; the tarball unpacked once into
#   ${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/linux-source/<version>/src
# as a git repository (one commit, tag "base": the pristine Debian source).
# Each run resets that tree to "base" and, for --patched, `git am`s the
# series (only files the series touches change, so rebuilds are
# incremental); runs are serialised by a lock.  Objects go to a separate O=
# directory per variant (default <version>/build-<variant>, or --out DIR).
#
# Config: `make tinyconfig` + kernel/kcoredump.config (merge_config.sh),
# identical for both variants; --debug adds kernel/kasan.config (KASAN,
# lockdep, lock statistics; O= directory build-<variant>-debug).  --upto N
# applies only patches 0001..000N (each patch must build and boot on its
# own).  --patches DIR takes the series from DIR instead of kernel/patches
# (e.g. an earlier version, to show a test failing on it; O= directory
# build-patched-<name of DIR>).  --nommu builds a RISC-V kernel without an
# MMU that dumps cores (riscv nommu_virt_defconfig + kernel/nommu.config:
# ELF FDPIC, COREDUMP, ELF_CORE; needs gcc-riscv64-linux-gnu), to prove
# that the series builds and links for !CONFIG_MMU (O= directory
# build-<variant>-nommu).
#
# The build's tools (flex, bison, bc, libelf-dev, libssl-dev, ...) are
# installed with apt-get when missing (root; waits for the dpkg lock).
#
# Prints the bzImage (--nommu: vmlinux) path as the last line of stdout.
# Everything else goes to stderr.
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors
shopt -s inherit_errexit

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../tests/lib/shell.sh
source "$here/../tests/lib/shell.sh"
kcd_trap_errors
# shellcheck source-path=SCRIPTDIR source=../tests/lib/apt-download.sh
source "$here/../tests/lib/apt-download.sh"
base=6.12
cache=${KCOREDUMP_CACHE:-$HOME/.cache/kcoredump}/linux-source
variant=stock
out=
upto=
jobs=${KCOREDUMP_KERNEL_JOBS:-2}
use_ccache=1
config_only=0
debug=0
nommu=0
patch_dir=

usage() { sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "build.sh: $*" >&2; exit 1; }
log() { echo "build.sh: $*" >&2; }

while [[ $# -gt 0 ]]; do
	case "$1" in
	--base) base=$2; shift 2 ;;
	--stock) variant=stock; shift ;;
	--patched) variant=patched; shift ;;
	--upto) upto=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--jobs|-j) jobs=$2; shift 2 ;;
	--no-ccache) use_ccache=0; shift ;;
	--config-only) config_only=1; shift ;;
	--debug) debug=1; shift ;;
	--nommu) nommu=1; shift ;;
	--patches) patch_dir=$(cd "$2" && pwd) || die "no directory '$2'"; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done

case "$base" in
6.12) series_dir=$here/patches ;;
7.3) series_dir=$here/patches-7.3 ;;
*) die "--base must be 6.12 or 7.3, not '$base'" ;;
esac
pkg=linux-source-$base
[[ -n "$patch_dir" ]] || patch_dir=$series_dir

# --- build dependencies -------------------------------------------------------
# tool:package; headers are checked by their path.
need_pkgs=()
for tp in git:git make:make gcc:gcc flex:flex bison:bison bc:bc xz:xz-utils \
	tar:tar dpkg-deb:dpkg flock:util-linux perl:perl cpio:cpio; do
	command -v "${tp%%:*}" >/dev/null || need_pkgs+=("${tp#*:}")
done
[[ -e /usr/include/libelf.h ]] || need_pkgs+=(libelf-dev)
[[ -e /usr/include/openssl/ssl.h ]] || need_pkgs+=(libssl-dev)
[[ -e /usr/include/zlib.h ]] || need_pkgs+=(zlib1g-dev)
if ((${#need_pkgs[@]})); then
	[[ $(id -u) -eq 0 ]] || die "missing build tools (${need_pkgs[*]}): apt-get install them (needs root)"
	log "installing ${need_pkgs[*]}"
	apt-get -o DPkg::Lock::Timeout=900 install -y --no-install-recommends "${need_pkgs[@]}" >&2 || {
		log "apt-get install failed; running apt-get update and retrying"
		apt-get -o DPkg::Lock::Timeout=900 update -qq >&2 || true
		apt-get -o DPkg::Lock::Timeout=900 install -y --no-install-recommends "${need_pkgs[@]}" >&2
	} || die "cannot install ${need_pkgs[*]}"
fi

mkdir -p "$cache"
exec 9>"$cache/.lock"

# --- source -----------------------------------------------------------------
# Newest complete cached version, else download.
find_cached() {
	kcd_newest_entry "$cache" "^${base//./\\.}\\."
}

fetch_source() {
	local tmp deb ver
	tmp=$(mktemp -d "$cache/.dl.XXXXXX")
	chmod 0755 "$tmp" # apt-get download drops privileges to _apt
	log "downloading $pkg"
	if [[ "$base" == 6.12 ]]; then
		deb=$(apt_download_deb "$tmp" "$pkg") || die "cannot download $pkg"
	else
		deb=$(apt_private_download_deb "$tmp" "$pkg/trixie-backports") ||
			die "cannot download $pkg from trixie-backports"
	fi
	ver=$(dpkg-deb -f "$deb" Version)
	if [[ -e "$cache/$ver/.complete" ]]; then
		rm -rf "$tmp"
		echo "$ver"
		return
	fi
	log "unpacking $pkg $ver"
	mkdir -p "$tmp/src"
	dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$pkg.tar.xz" |
		xz -dc -T0 | tar -x -C "$tmp/src" --strip-components=1
	rm -f "$deb"
	log "creating the git repository (one-time, about a minute)"
	(
		cd "$tmp/src"
		git init -q
		git config user.name "kcoredump build"
		git config user.email "maintainers@users.noreply.a-seed-688fdadf.example"
		git config core.autocrlf false
		git config gc.auto 0
		# Debian's top-level .gitignore ignores everything ("/*").
		git add -A -f
		git commit -q -m "$pkg $ver (pristine Debian source)"
		git tag base
	) >&2 || die "git import of the source failed"
	echo "$ver" > "$tmp/version"
	touch "$tmp/.complete"
	rm -rf "${cache:?}/$ver"
	mv "$tmp" "$cache/$ver"
	echo "$ver"
}

flock 9
ver=$(find_cached)
[[ -n "$ver" ]] || ver=$(fetch_source)
vdir=$cache/$ver
src=$vdir/src
log "source: $pkg $ver ($src)"

# --- tree for the variant ---------------------------------------------------
# A series directory holds the patches (NNNN-*.patch, 0000 the cover
# letter) or, as kernel/patches-7.3 does, one subdirectory per posting,
# applied in the order of their names; --upto N counts the patches of all
# postings in that order.
patches=()
k=0
for p in "$patch_dir"/[0-9][0-9][0-9][0-9]-*.patch "$patch_dir"/*/[0-9][0-9][0-9][0-9]-*.patch; do
	[[ -e "$p" ]] || continue
	n=$(basename "$p"); n=${n%%-*}
	[[ "$n" == 0000 ]] && continue            # cover letter
	k=$((k + 1))
	if [[ -n "$upto" ]] && ((k > upto)); then continue; fi
	patches+=("$p")
done
((${#patches[@]} > 0)) || [[ "$variant" == stock ]] || die "no patches in $patch_dir"

# One source tree for both variants, switched under the lock (held until the
# build is done): `git checkout` rewrites only the files the series touches,
# so each variant's O= directory rebuilds just those, and ccache (relative
# paths below $vdir) hits for everything else.
tree=$src
# The tree is left as the last run made it; when that was the same variant
# and patch list (and nothing changed since), keep it: a reset and `git am`
# would give the touched files (include/linux/mm.h among them) new mtimes
# and make rebuild most of the kernel.
want_state=$variant
if [[ "$variant" == patched ]]; then
	want_state+=" $(cat ${patches[@]+"${patches[@]}"} /dev/null | sha256sum | cut -d" " -f1)"
fi
state_file=$tree/.git/kcoredump-state
if [[ "$(cat "$state_file" 2>/dev/null)" == "$want_state $(git -C "$tree" rev-parse HEAD)" &&
	-z "$(git -C "$tree" status --porcelain --untracked-files=no)" ]]; then
	log "tree already at $variant${upto:+ (patches up to $upto)}"
else
	rm -f "$state_file"
	git -C "$tree" am --abort >/dev/null 2>&1 || true
	git -C "$tree" checkout -q --detach base
	git -C "$tree" reset -q --hard base
	if [[ "$variant" == patched ]]; then
		for p in ${patches[@]+"${patches[@]}"}; do
			log "applying $(basename "$p")"
			git -C "$tree" -c user.name="kcoredump build" \
				-c user.email=maintainers@users.noreply.a-seed-688fdadf.example \
				am -q --keep-cr "$p" >&2 || die "patch $(basename "$p") does not apply"
		done
	fi
	echo "$want_state $(git -C "$tree" rev-parse HEAD)" > "$state_file"
fi

# --- configure and build ----------------------------------------------------
# A new O= directory for --upto N starts as a copy of the kept build whose
# headers are closest to this tree's (the headers the series changes are
# included nearly everywhere; its .c files are few): the prefix N-1, the
# whole series or stock, in that order of preference when equally close.
# With the mtimes kept below, only what differs from that build is
# compiled: each prefix costs minutes, not a full build.
seed_upto_dir() {
	local dest=$1 c best='' best_d=0 d h want have
	local cands=("$vdir/build-patched$series_suffix-upto$((upto - 1))$dbg_suffix"
		"$vdir/build-patched$series_suffix$dbg_suffix" "$vdir/build-stock$dbg_suffix")
	for c in "${cands[@]}"; do
		[[ -e "$c/.config" && -e "$c/.kcoredump-config-sum" ]] || continue
		d=0
		while read -r h; do
			[[ "$h" == *.h ]] || continue
			want=$(git -C "$tree" hash-object "$h" 2>/dev/null || echo none)
			have=$(awk -v f="$h" '$1 == f { print $2 }' "$c/.kcoredump-mtimes" 2>/dev/null)
			[[ -n "$have" ]] || have=$(git -C "$tree" rev-parse -q --verify "base:$h" || echo none)
			[[ "$want" == "$have" ]] || d=$((d + 1))
		done < <({ git -C "$tree" diff --name-only base HEAD
			cut -d" " -f1 "$c/.kcoredump-mtimes" 2>/dev/null || true; } | LC_ALL=C sort -u)
		if [[ -z "$best" ]] || ((d < best_d)); then
			best=$c best_d=$d
		fi
	done
	[[ -n "$best" ]] || return 0
	log "new O= directory $dest: a copy of $best ($best_d of the series' headers differ)"
	rm -rf "$dest.tmp"
	{ cp -a "$best" "$dest.tmp" && mv "$dest.tmp" "$dest"; } || die "cannot copy $best to $dest"
	# configured again: the prefix may define Kconfig symbols (a KUnit
	# test) that the copy's .config lacks; the same values rebuild nothing
	rm -f "$dest/.kcoredump-config"
}
dbg_suffix=
((debug == 0)) || dbg_suffix=-debug
((nommu == 0)) || dbg_suffix=-nommu
series_suffix=
[[ "$patch_dir" == "$series_dir" || "$variant" != patched ]] ||
	series_suffix=-$(basename "$patch_dir")
if [[ -z "$out" ]]; then
	out=$vdir/build-$variant$series_suffix${upto:+-upto$upto}$dbg_suffix
	[[ -z "$upto" || -e "$out/.config" ]] || seed_upto_dir "$out"
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

# Switching variants rewrites the files the series touches, with new
# mtimes, and make would rebuild everything that includes them (the series
# touches include/linux/mm.h).  $out/.kcoredump-mtimes remembers, for each
# such file, the content (blob hash) and mtime this O= directory was last
# built with: a file with that same content gets that mtime back, so make
# rebuilds only what really differs for this directory.
mtimes=$out/.kcoredump-mtimes
# (every file any patch of the series touches, whether applied here or not:
# a stock directory must remember them too, or switching back to stock
# after a patched build would recompile nearly everything)
series_files() {
	{ git -C "$tree" diff --name-only base HEAD
	  cat "$series_dir"/[0-9][0-9][0-9][0-9]-*.patch "$series_dir"/*/[0-9][0-9][0-9][0-9]-*.patch \
		"$patch_dir"/[0-9][0-9][0-9][0-9]-*.patch "$patch_dir"/*/[0-9][0-9][0-9][0-9]-*.patch 2>/dev/null |
		sed -n 's|^diff --git a/\([^ ]*\) b/.*|\1|p' || true
	  [[ ! -e "$mtimes" ]] || cut -d" " -f1 "$mtimes"; } | LC_ALL=C sort -u
}
if [[ -e "$mtimes" ]]; then
	while read -r f h t; do
		[[ -e "$tree/$f" ]] || continue
		[[ "$(git -C "$tree" hash-object "$f")" == "$h" ]] || continue
		touch -m -d "@$t" "$tree/$f"
	done < "$mtimes"
fi

mk=(make -C "$tree" O="$out" -j"$jobs"
	KBUILD_BUILD_TIMESTAMP="2025-01-01" KBUILD_BUILD_USER=kcoredump
	KBUILD_BUILD_HOST=kcoredump)
cc=gcc
base_config=tinyconfig
frags=("$here/kcoredump.config")
if [[ "$base" == 7.3 ]]; then
	# kernel/kcoredump-7.3.config names the options 7.3 no longer has
	grep -v -e '^CONFIG_X86_5LEVEL=' -e '^CONFIG_PROC_SYSCTL=' "$here/kcoredump.config" \
		> "$out/.kcoredump-base.config" || die "cannot filter kcoredump.config"
	frags=("$out/.kcoredump-base.config" "$here/kcoredump-7.3.config")
fi
((debug == 0)) || frags+=("$here/kasan.config")
targets=(bzImage modules)
image=arch/x86/boot/bzImage
if ((nommu)); then
	cross=riscv64-linux-gnu-
	command -v ${cross}gcc >/dev/null ||
		die "--nommu needs ${cross}gcc (apt-get install gcc-riscv64-linux-gnu)"
	mk+=(ARCH=riscv CROSS_COMPILE="$cross")
	cc=${cross}gcc
	base_config=nommu_virt_defconfig
	frags=("$here/nommu.config")
	targets=(vmlinux)
	image=vmlinux
fi
if ((use_ccache)) && command -v ccache >/dev/null; then
	mk+=(CC="ccache $cc")
	export CCACHE_BASEDIR=$vdir CCACHE_NOHASHDIR=1
fi
cfg_stamp=$out/.kcoredump-config
cfg_sum=$(cat "${frags[@]}" | sha256sum | cut -d" " -f1)

# One config for stock and patched.  Both variants are configured from the
# same base config and fragments, but in different trees (the series adds
# Kconfig symbols, and could change a default or a select), so the result
# is checked: the .config of every O= directory, with the symbols the
# pristine tree does not define left out, must equal the one recorded for
# this base config, fragments and compiler in
#   <version>/configs/<key>.config
# by the first variant configured (any variant: the file is the same for
# both, or the second fails).  The check runs on every build, cached or
# not: a cached O= directory whose .config differs is configured again, and
# if it still differs the build fails with the difference.  The checked
# config's sha256 goes to $out/.kcoredump-config-sum (test.sh copies it
# into the results; bench/kernel-ab.sh refuses to compare two kernels whose
# sums differ).
base_syms=$vdir/base-kconfig-symbols
if [[ ! -s "$base_syms" ]]; then
	git -C "$tree" grep -hE '^[[:space:]]*(menu)?config[[:space:]]+[A-Za-z0-9_]+[[:space:]]*$' \
		base -- ':(glob)**/Kconfig*' > "$base_syms.tmp" || die "cannot list the Kconfig symbols of the source"
	awk '{ print $2 }' "$base_syms.tmp" | LC_ALL=C sort -u > "$base_syms.new"
	rm -f "$base_syms.tmp"
	[[ -s "$base_syms.new" ]] || die "no Kconfig symbols found in the source"
	mv "$base_syms.new" "$base_syms"
fi
# the CONFIG_ lines of a .config whose symbol the pristine tree defines
config_norm() {
	awk 'NR == FNR { def[$1] = 1; next }
	     /^CONFIG_/ { s = $0; sub(/=.*/, "", s) }
	     /^# CONFIG_.* is not set$/ { s = $2 }
	     /^(CONFIG_|# CONFIG_.* is not set$)/ { sub(/^CONFIG_/, "", s); if (s in def) print }' \
		"$base_syms" "$1"
}
cc_id=$($cc --version 2>/dev/null | head -n 1) || cc_id=$cc
cfg_key=$(printf '%s\n%s\n%s\n' "$base_config" "$cc_id" "$cfg_sum" | sha256sum | cut -c1-16)
mkdir -p "$vdir/configs"
cfg_ref=$vdir/configs/$cfg_key.config
# 0: the .config is the one config; 1: no reference yet; 2: it differs
config_state() {
	[[ -e "$out/.config" ]] || return 2
	config_norm "$out/.config" > "$out/.kcoredump-config-norm" || die "cannot read $out/.config"
	[[ -e "$cfg_ref" ]] || return 1
	cmp -s "$cfg_ref" "$out/.kcoredump-config-norm" || return 2
	return 0
}
config_diff() {
	diff "$cfg_ref" "$out/.kcoredump-config-norm" | sed -n '2,40p' >&2 || true
}
cfg_rc=0
config_state || cfg_rc=$?
if [[ ! -e "$out/.config" || "$(cat "$cfg_stamp" 2>/dev/null)" != "$cfg_sum" ]] || ((cfg_rc == 2)); then
	if ((cfg_rc == 2)) && [[ -e "$out/.config" && "$(cat "$cfg_stamp" 2>/dev/null)" == "$cfg_sum" ]]; then
		log "config: $out/.config is not the one config ($cfg_ref); configuring again. Differences (< one config, > this):"
		config_diff
	fi
	rm -f "$cfg_stamp"
	log "configuring: $base_config + ${frags[*]##*/}"
	"${mk[@]}" -s "$base_config" >&2
	(cd "$out" && KCONFIG_CONFIG=.config "$tree/scripts/kconfig/merge_config.sh" \
		-m -O "$out" .config "${frags[@]}") >&2
	"${mk[@]}" -s olddefconfig >&2
	# Every option the fragment sets must have survived, except those the
	# tree does not define at all (a test the series adds, on stock).
	missing=0
	while IFS= read -r line; do
		[[ "$line" =~ ^CONFIG_ ]] || continue
		grep -qxF "$line" "$out/.config" && continue
		sym=${line%%=*}; sym=${sym#CONFIG_}
		if ! grep -rqsE --include='Kconfig*' "^[[:space:]]*(menu)?config[[:space:]]+$sym\$" "$tree"; then
			log "config: $sym is not defined in this tree, ignored"
			continue
		fi
		log "config: '$line' not set"; missing=1
	done < <(cat "${frags[@]}")
	((missing == 0)) || die "config fragment not fully applied"
	cfg_rc=0
	config_state || cfg_rc=$?
	if ((cfg_rc == 2)); then
		log "config: the $variant tree gives another config than the one config ($cfg_ref) from the same fragments (< one config, > $variant):"
		config_diff
		die "stock and patched would not be built from one config"
	fi
	echo "$cfg_sum" > "$cfg_stamp"
fi
if ((cfg_rc == 1)); then
	if ! cp "$out/.kcoredump-config-norm" "$cfg_ref.new.$$" || ! mv "$cfg_ref.new.$$" "$cfg_ref"; then
		die "cannot write $cfg_ref"
	fi
	log "config: recorded the one config for this base, fragments and compiler: $cfg_ref"
else
	log "config: $out/.config is the one config ($cfg_ref)"
fi
cfg_norm_sum=$(sha256sum < "$cfg_ref" | cut -d" " -f1)
((config_only)) && { echo "$out/.config"; exit 0; }

t0=$(date +%s)
log "building ${targets[*]} ($variant, -j$jobs) in $out"
"${mk[@]}" "${targets[@]}" >&2
log "built in $(( $(date +%s) - t0 )) s"
series_files | while read -r f; do
	[[ -e "$tree/$f" ]] || continue
	echo "$f $(git -C "$tree" hash-object "$f") $(stat -c %Y "$tree/$f")"
done > "$mtimes.new"
mv "$mtimes.new" "$mtimes"
cfg_rc=0
config_state || cfg_rc=$?
if ((cfg_rc != 0)); then
	log "config: the build changed $out/.config away from the one config ($cfg_ref):"
	config_diff
	die "the built kernel's config is not the one config"
fi
echo "$cfg_norm_sum $cfg_ref" > "$out/.kcoredump-config-sum"
echo "$out/$image"
