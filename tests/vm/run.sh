#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Boot a real Linux kernel under QEMU with a throw-away initramfs, run a guest
# test script against the real /proc/kcore and real process cores, bring the
# results back through a 9p share, then run the case's host-side check.
#
# Usage: tests/vm/run.sh [options] SCRIPT [ARGS...]
#   SCRIPT           a guest script: NAME (tests/vm/cases/NAME.sh) or a path
#   --arch A         amd64 (default, qemu-system-x86_64) or arm64
#                    (qemu-system-aarch64 -machine virt -cpu max; the
#                    static busybox and kernel of arm64 from Debian, the
#                    kcoredump default build-static-aarch64/kcoredump)
#   --kernel PATH    bzImage/vmlinuz (default: Debian 6.12 from the cache,
#                    downloaded by fetch-kernel.sh when missing)
#   --series S       Debian's newest 6.12 (default), 6.1 or 7.N (7.3:
#                    trixie-backports through the private apt setup) kernel
#   --modules-dir D  lib/modules/<release> for --kernel (9p modules come
#                    from here; not needed when 9p is built in)
#   --mem SIZE       guest memory (default 1G)
#   --cpus N         vCPUs (default 2)
#   --accel A        tcg (default) or kvm
#   --icount N       tcg with -icount shift=N,sleep=off: the guest clock
#                    (and its TSC) follows the instructions the vCPUs
#                    execute, 2^N ns each, and jumps over idle time, so
#                    times the guest measures count work, not host load
#                    (one host thread runs all vCPUs, in turn)
#   --5lvl           boot with 5-level paging (default: no5lvl; amd64)
#   --append STR     extra kernel command line
#   --timeout S      bound the whole VM run (default: 600 s plus 600 s per
#                    GiB of --mem, twice that for arm64: the cases read
#                    the guest's RAM several times, and TCG on a loaded
#                    machine is several times slower than on a quiet one)
#   --case-timeout S the guest's own limit for the case (default: what is
#                    left of --timeout after the boot, less 20 s); a case
#                    that runs out of it fails with "case timed out after
#                    S s", the commands it was running and its last output
#   --results DIR    where results land (default: a new /tmp/kcoredump-vm.*)
#   --kcoredump PATH kcoredump binary (default $KCOREDUMP_BIN, build/kcoredump)
#   --host-kcoredump PATH  kcoredump for the host check (default: the
#                    --kcoredump binary on amd64, build/kcoredump on arm64)
#   --tool PATH      extra program for the guest's PATH (repeatable)
#   --tool-src FILE.c  a C program built static for the guest's machine
#                    (like the helpers) and put on its PATH (repeatable)
#   --lime           put LiME's lime.ko, built for the kernel of --series
#                    by fetch-lime.sh, in the guest as /tools/lime.ko
#   --stress-ng      put Debian's stress-ng (fetch-stress-ng.sh) on the
#                    guest's PATH with its libraries (amd64)
#   --no-host-check  skip cases/NAME.host.sh
#   -h, --help       this text
#
# Exit: 0 pass, 1 fail, 2 usage, 77 skip (no qemu-system-x86_64/-aarch64).
set -euo pipefail
# shellcheck source=../lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/shell.sh"
kcd_trap_errors

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

kernel=
arch=amd64
series=6.12
modules_dir=
mem=1G
cpus=2
accel=tcg
five_level=0
icount=
append=
timeout_s=
case_timeout=
results=
kcoredump="${KCOREDUMP_BIN:-}"
tools=()
tool_srcs=()
host_check=1
host_kcoredump=
lime=0
stress_ng=0

usage() { sed -n '3,51p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "vm: $*" >&2; exit 1; }
log() { echo "vm: $*" >&2; }

while [[ $# -gt 0 ]]; do
	case "$1" in
	--arch) arch=$2; shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	--series) series=$2; shift 2 ;;
	--modules-dir) modules_dir=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--cpus) cpus=$2; shift 2 ;;
	--accel) accel=$2; shift 2 ;;
	--5lvl) five_level=1; shift ;;
	--icount) icount=$2; shift 2 ;;
	--append) append=$2; shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	--case-timeout) case_timeout=$2; shift 2 ;;
	--results) results=$2; shift 2 ;;
	--kcoredump) kcoredump=$2; shift 2 ;;
	--host-kcoredump) host_kcoredump=$2; shift 2 ;;
	--tool) tools+=("$2"); shift 2 ;;
	--tool-src) tool_srcs+=("$2"); shift 2 ;;
	--lime) lime=1; shift ;;
	--stress-ng) stress_ng=1; shift ;;
	--no-host-check) host_check=0; shift ;;
	-h|--help) usage; exit 0 ;;
	--) shift; break ;;
	-*) echo "vm: unknown option '$1'" >&2; usage >&2; exit 2 ;;
	*) break ;;
	esac
done
[[ $# -ge 1 ]] || { usage >&2; exit 2; }
script=$1
shift
case "$accel" in tcg|kvm) ;; *) echo "vm: --accel must be tcg or kvm" >&2; exit 2 ;; esac
icount_re='^([0-9]|10)$'
[[ -z $icount || ($icount =~ $icount_re && $accel == tcg) ]] ||
	{ echo "vm: --icount takes a shift of 0-10, with tcg only, not '$icount'" >&2; exit 2; }
case "$arch" in
amd64|x86_64) arch=amd64 qemu_bin=qemu-system-x86_64 elf_machine=x86-64
	cc=${CC:-cc} ;;
arm64|aarch64) arch=arm64 qemu_bin=qemu-system-aarch64 elf_machine=aarch64
	cc=${CROSS_CC_ARM64:-aarch64-linux-gnu-gcc} ;;
*) echo "vm: --arch must be amd64 or arm64" >&2; exit 2 ;;
esac
for v in "$timeout_s" "$case_timeout"; do
	[[ -z $v || $v =~ ^[1-9][0-9]*$ ]] ||
		{ echo "vm: --timeout and --case-timeout take whole seconds, not '$v'" >&2; exit 2; }
done
if [[ -z $timeout_s ]]; then
	case $mem in
	*[Gg]) mem_mib=$((${mem%[Gg]} * 1024)) ;;
	*[Mm]) mem_mib=${mem%[Mm]} ;;
	*) mem_mib=1024 ;;
	esac
	timeout_s=$((600 + 600 * ((mem_mib + 1023) / 1024)))
	[[ $arch == amd64 ]] || timeout_s=$((2 * timeout_s))
fi
if [[ -z "$kcoredump" ]]; then
	if [[ $arch == arm64 ]]; then
		kcoredump=$repo/build-static-aarch64/kcoredump
	else
		kcoredump=$repo/build/kcoredump
	fi
fi

# Resolve the case: NAME, NAME.sh, cases/NAME.sh or any path.
if [[ -f "$script" ]]; then
	script=$(cd "$(dirname "$script")" && pwd)/$(basename "$script")
elif [[ -f "$here/cases/$script" ]]; then
	script=$here/cases/$script
elif [[ -f "$here/cases/$script.sh" ]]; then
	script=$here/cases/$script.sh
else
	die "no such guest script '$script'"
fi
case_name=$(basename "$script" .sh)
# An empty script would "pass" without checking anything.
for f in "$script" "${script%.sh}.host.sh"; do
	[[ ! -e "$f" || -s "$f" ]] || die "$f is empty"
done

command -v "$qemu_bin" >/dev/null || {
	echo "vm: $qemu_bin not installed; skipping" >&2
	exit 77
}
for t in cpio busybox; do
	command -v "$t" >/dev/null || die "'$t' is needed (see tests/vm/README.md)"
done
host_busybox=$(command -v busybox)
# The initramfs has no libraries for busybox: it must be the static one.
if ldd "$host_busybox" >/dev/null 2>&1; then
	die "'$host_busybox' is dynamically linked; install busybox-static"
fi
busybox_bin=$host_busybox
if [[ $arch == arm64 ]]; then
	busybox_bin=$("$here/fetch-busybox.sh" --arch arm64)
fi
[[ -x "$kcoredump" ]] || die "kcoredump binary '$kcoredump' not found (build it, or pass --kcoredump; for arm64: scripts/build-static.sh --arch aarch64)"
kcoredump=$(cd "$(dirname "$kcoredump")" && pwd)/$(basename "$kcoredump")
# A binary of the wrong machine would fail in the guest with a bare
# "not found" from the shell.
check_machine() {
	local desc
	desc=$(file -bL "$1")
	[[ $desc == *"$elf_machine"* ]] ||
		die "'$1' is not an $arch program ($desc)"
}
if [[ -z "$host_kcoredump" ]]; then
	host_kcoredump=$kcoredump
	[[ $arch == amd64 ]] || host_kcoredump=$repo/build/kcoredump
fi

t_start=$(date +%s.%N)

# --- kernel -----------------------------------------------------------------
if [[ -z "$kernel" ]]; then
	kdir=$("$here/fetch-kernel.sh" --series "$series" --arch "$arch")
	krel=$(cat "$kdir/kernel-release")
	kernel=$kdir/boot/vmlinuz-$krel
	[[ -n "$modules_dir" ]] || modules_dir=$kdir/lib/modules/$krel
fi
[[ -f "$kernel" ]] || die "kernel '$kernel' not found"
[[ -z "$modules_dir" || -d "$modules_dir" ]] || die "modules dir '$modules_dir' not found"

# --- work dir and results ---------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/kcoredump-vm-work.XXXXXX")
qemu_pid=
# shellcheck disable=SC2317 # called through the trap
cleanup() {
	if [[ -n "$qemu_pid" ]]; then kill "$qemu_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

if [[ -z "$results" ]]; then
	results=$(mktemp -d "${TMPDIR:-/tmp}/kcoredump-vm.XXXXXX")
else
	mkdir -p "$results"
	# Only ever wipe a directory this script created earlier.
	if [[ -n "$(ls -A "$results")" ]]; then
		[[ -f "$results/.kcoredump-vm" ]] ||
			die "results dir '$results' is not empty and not ours; refusing to wipe it"
		find "$results" -mindepth 1 -delete
	fi
fi
results=$(cd "$results" && pwd)
touch "$results/.kcoredump-vm"
chmod 0777 "$results" # the guest's root may map to another host user
echo "FAIL boot" > "$results/status"
serial_log=$results/serial.log

# --- helpers (static) -------------------------------------------------------
helper_flags=(-static -O2 -g -pthread -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64
	-I"$repo/tests/common")
if ! echo 'int main(void){return 0;}' |
	"$cc" "${helper_flags[@]}" -x c - -o "$work/cc-test" 2>/dev/null; then
	die "cannot link static C programs with '$cc' (install libc6-dev, or crossbuild-essential-arm64 for arm64)"
fi

# --- initramfs --------------------------------------------------------------
root=$work/root
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,results,helpers,tools,cases,modules,etc,lib64,lib,root}

for src in "$here"/helpers/*.c; do
	name=$(basename "$src" .c)
	"$cc" "${helper_flags[@]}" -o "$root/helpers/$name" "$src"
done
for src in ${tool_srcs[@]+"${tool_srcs[@]}"}; do
	[[ -f "$src" ]] || die "tool source '$src' not found"
	"$cc" "${helper_flags[@]}" -o "$root/tools/$(basename "$src" .c)" "$src"
	# The host check finds it on PATH (gdb needs the program).
	mkdir -p "$work/host-tools"
	cp "$root/tools/$(basename "$src" .c)" "$work/host-tools/"
done

cp "$busybox_bin" "$root/bin/busybox"
# The applet list from the host's busybox-static (Debian builds every
# architecture with the same configuration).
for applet in $("$host_busybox" --list-full); do
	[[ -e "$root/$applet" ]] || ln -s /bin/busybox "$root/$applet"
done

# Copy a dynamically linked program's libraries to the same paths in the
# guest (the loader included).  copy_libs PROGRAM LIBDIR: the libraries
# found in LIBDIR (not on this machine) go to the loader's /lib/<triplet>.
copy_libs() {
	local lib dest extra=${2:-}
	{ LD_LIBRARY_PATH=$extra ldd "$1" 2>/dev/null || true; } | { grep -o '/[^ ]*' || true; } |
	while read -r lib; do
		dest=$lib
		[[ -z $extra || $lib != "$extra/"* ]] || dest=/lib/x86_64-linux-gnu/$(basename "$lib")
		[[ -e "$root$dest" ]] && continue
		mkdir -p "$root$(dirname "$dest")"
		cp -L "$lib" "$root$dest"
	done
}

# A static kcoredump needs nothing copied (copy_libs finds no libraries);
# the guest's cases can tell by the missing loader.
check_machine "$kcoredump"
cp -L "$kcoredump" "$root/tools/kcoredump"
[[ $arch != amd64 ]] || copy_libs "$kcoredump"
for t in ${tools[@]+"${tools[@]}"}; do
	[[ -x "$t" ]] || die "tool '$t' not found or not executable"
	check_machine "$t"
	cp -L "$t" "$root/tools/$(basename "$t")"
	[[ $arch != amd64 ]] || copy_libs "$t"
done

if [[ $lime -eq 1 ]]; then
	[[ -n ${kdir:-} ]] ||
		die "--lime builds LiME for a --series kernel, not for --kernel"
	lime_ko=$("$here/fetch-lime.sh" --series "$series") || die "cannot build LiME for Linux $series"
	cp "$lime_ko" "$root/tools/lime.ko"
fi
if [[ $stress_ng -eq 1 ]]; then
	[[ $arch == amd64 ]] || die "--stress-ng is for amd64 guests"
	sng=$("$here/fetch-stress-ng.sh") || die "cannot fetch stress-ng"
	cp "$sng/bin/stress-ng" "$root/tools/stress-ng"
	copy_libs "$sng/bin/stress-ng" "$sng/lib"
fi

cp "$here"/cases/*.sh "$root/cases/"
cp "$script" "$root/cases/$case_name.sh"

# Kernel modules the guest needs (9p over virtio PCI), in dependency order.  The
# Debian package has no modules.dep (depmod runs at install time), so read
# "depends=" from each module's .modinfo.  Modules may be .ko.xz/.ko.zst:
# busybox insmod cannot decompress, so decompress here.
: > "$root/modules/order"
if [[ -n "$modules_dir" ]]; then
	declare -A mod_done=()
	add_module() {
		local name=$1 f dep deps
		[[ -n "${mod_done[$name]:-}" ]] && return 0
		mod_done[$name]=1
		f=$(find "$modules_dir/kernel" -name "$name.ko" -o -name "$name.ko.xz" \
			-o -name "$name.ko.zst" -o -name "$name.ko.gz" | head -n 1) || true
		if [[ -z "$f" ]]; then
			# Alternative spelling (dash vs underscore) or built in.
			f=$(find "$modules_dir/kernel" -name "${name//_/-}.ko*" | head -n 1) || true
			[[ -n "$f" ]] || return 0
		fi
		case "$f" in
		*.xz) xz -dc "$f" > "$work/$name.ko" ;;
		*.zst) zstd -qdc "$f" > "$work/$name.ko" ;;
		*.gz) gzip -dc "$f" > "$work/$name.ko" ;;
		*) cp "$f" "$work/$name.ko" ;;
		esac
		deps=$(LC_ALL=C tr '\0' '\n' < "$work/$name.ko" | sed -n 's/^depends=//p' | head -n 1)
		for dep in ${deps//,/ }; do
			add_module "$dep"
		done
		mv "$work/$name.ko" "$root/modules/$name.ko"
		echo "$name.ko" >> "$root/modules/order"
	}
	# virtio_pci is built into Debian's 6.12 but a module in its 6.1.
	for m in virtio_pci 9p 9pnet_virtio; do
		add_module "$m"
	done
fi

{
	printf 'VM_CASE=%q\n' "$case_name"
	printf 'VM_TIMEOUT=%q\n' "$timeout_s"
	[[ -z $case_timeout ]] || printf 'VM_CASE_TIMEOUT=%q\n' "$case_timeout"
	printf 'VM_ARCH=%q\n' "$arch"
	printf 'set --'
	printf ' %q' "$@"
	printf '\n'
} > "$root/etc/vmtest.conf"

cp "$here/init" "$root/init"
chmod +x "$root/init" "$root"/cases/*.sh

initrd=$work/initramfs.cpio
(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) > "$initrd"
t_built=$(date +%s.%N)

# --- boot -------------------------------------------------------------------
cmdline="panic=-1 oops=panic quiet loglevel=4 rdinit=/init"
if [[ $arch == arm64 ]]; then
	cmdline="console=ttyAMA0 $cmdline"
	machine=(-machine virt -cpu max)
else
	cmdline="console=ttyS0 $cmdline"
	[[ $five_level -eq 1 ]] || cmdline+=" no5lvl"
	machine=(-cpu max)
fi
[[ -z "$append" ]] || cmdline+=" $append"

qemu=("$qemu_bin" -nodefaults -nographic -no-reboot
	-accel "$accel" "${machine[@]}" -smp "$cpus" -m "$mem"
	-kernel "$kernel" -initrd "$initrd" -append "$cmdline"
	-serial "file:$serial_log" -monitor none
	-fsdev "local,id=results,path=$results,security_model=none"
	-device "virtio-9p-pci,fsdev=results,mount_tag=results")
[[ -z $icount ]] || qemu+=(-icount "shift=$icount,sleep=off")

log "case $case_name: booting $(basename "$kernel") ($arch, $accel, $cpus CPUs, $mem$([[ $five_level -eq 1 ]] && echo ', 5-level')${icount:+, icount shift $icount})"
log "results: $results"
# Bound the run: qemu's own timeout (hard-killed 10 s later if need be).
# A guest that dies before its script starts is retried (twice): under
# multi-threaded TCG, Debian's kernel now and then oopses on an int3 of its
# own live code patching during boot (seen 1 in ~20 boots), which says
# nothing about kcoredump.  Every retry is logged with the oops.
for try in 1 2 3; do
	timeout -k 10 "$timeout_s" "${qemu[@]}" &
	qemu_pid=$!
	t_boot=
	while kill -0 "$qemu_pid" 2>/dev/null; do
		if [[ -z "$t_boot" && -e "$results/started" ]]; then
			t_boot=$(date +%s.%N)
		fi
		sleep 0.1
	done
	qemu_rc=0
	wait "$qemu_pid" || qemu_rc=$?
	qemu_pid=
	t_vm=$(date +%s.%N)
	if [[ -e "$results/started" || $qemu_rc -eq 124 || $qemu_rc -eq 137 ||
		$try -eq 3 ]]; then
		break
	fi
	log "case $case_name: the guest died before its script started (try $try); retrying:"
	grep -m 3 -E 'Oops|panic|BUG' "$serial_log" >&2 || tail -n 5 "$serial_log" >&2
	cp "$serial_log" "$serial_log.try$try"
	echo "FAIL boot" > "$results/status"
done
[[ -n "$t_boot" || ! -e "$results/started" ]] || t_boot=$t_vm

status=$(cat "$results/status" 2>/dev/null || echo "FAIL no status")
if [[ $qemu_rc -eq 124 || $qemu_rc -eq 137 ]]; then
	# The VM as a whole ran out of time: say what the guest was doing.
	if [[ ! -e "$results/started" ]]; then
		doing="still booting (no case started)"
	else
		doing="case $case_name still running; its last output: $(grep . "$results/guest.log" 2>/dev/null | tail -n 1 || true)"
	fi
	status="FAIL VM timed out after ${timeout_s} s: $doing"
fi

rc=0
if [[ "$status" != "0" ]]; then
	log "case $case_name: guest FAILED: $status"
	if [[ -f "$results/guest.log" ]]; then
		echo "---- guest.log (tail) ----" >&2
		tail -n 40 "$results/guest.log" >&2
	fi
	echo "---- serial.log (tail) ----" >&2
	tail -n 40 "$serial_log" >&2 || true
	rc=1
fi

# The host check runs whenever the guest script ran (even if it failed: its
# diagnostics help), with the host's kcoredump and --tool programs on PATH.
t_check=$t_vm
if [[ "$status" =~ ^[0-9]+$ && $host_check -eq 1 && -f "${script%.sh}.host.sh" ]]; then
	log "case $case_name: host check"
	for t in ${tools[@]+"${tools[@]}"}; do
		PATH=$(cd "$(dirname "$t")" && pwd):$PATH
	done
	[[ ! -d "$work/host-tools" ]] || PATH=$work/host-tools:$PATH
	[[ -x "$host_kcoredump" ]] || die "host kcoredump '$host_kcoredump' not found (--host-kcoredump)"
	export PATH KCOREDUMP="$host_kcoredump" VM_REPO="$repo" VM_HERE="$here" VM_ARCH="$arch"
	if ! bash "${script%.sh}.host.sh" "$results"; then
		log "case $case_name: host check FAILED"
		rc=1
	fi
	t_check=$(date +%s.%N)
fi

# --- timings ----------------------------------------------------------------
fmt() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
guest_up=$(awk '{print $1}' "$results/uptime-start" 2>/dev/null || echo "?")
{
	echo "initramfs_s $(fmt "$t_start" "$t_built")"
	[[ -z "$t_boot" ]] || echo "boot_s $(fmt "$t_built" "$t_boot")"
	echo "guest_uptime_at_start_s $guest_up"
	echo "vm_s $(fmt "$t_built" "$t_vm")"
	echo "host_check_s $(fmt "$t_vm" "$t_check")"
	echo "total_s $(fmt "$t_start" "$(date +%s.%N)")"
} > "$results/timings"
log "timings: $(tr '\n' ' ' < "$results/timings")"
if [[ $rc -eq 0 ]]; then
	log "case $case_name: PASS"
else
	log "case $case_name: FAIL (results in $results)"
fi
exit $rc
