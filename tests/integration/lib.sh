# Helpers shared by the integration tests (sourced, not run).
# shellcheck source=../lib/tap.sh
. "${BASH_SOURCE[0]%/*}/../lib/tap.sh"

# Did a run crash or trip a sanitizer?  $1 exit status, $2 stderr file.
crashed()
{
	[ "$1" -ge 124 ] ||
		grep -qE 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:' "$2"
}

# The fixtures a reader must parse (tests/fixtures/README.md).
VALID_FIXTURES="vmcore-x86_64 kcore-x86_64 process-x86_64 process-aarch64 sparse-1t pn-xnum"

# make_real_core DIR: let a child die of SIGABRT in DIR and print the path
# of its core.  Returns 1 (and prints nothing) when this machine does not
# write cores there (core_pattern a pipe or elsewhere, RLIMIT_CORE hard 0).
make_real_core()
{
	local dir=$1 pattern core
	pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null) || return 1
	case $pattern in
	'|'* | /*) return 1 ;;
	esac
	(
		cd "$dir" || exit 1
		ulimit -c unlimited 2>/dev/null || exit 1
		sleep 100 &
		pid=$!
		sleep 0.3
		kill -ABRT "$pid"
		wait "$pid" 2>/dev/null
		exit 0
	) >/dev/null 2>&1 || return 1
	for core in "$dir"/core*; do
		if [ -f "$core" ] && [ -s "$core" ]; then
			echo "$core"
			return 0
		fi
	done
	return 1
}

# first_frame FILE: "COMPRESSED DECOMPRESSED" bytes of the first frame of
# a .zst (from its seek table) or the first block of an .xz (xz -lvv):
# where our dumps keep the ELF header, program headers and notes.
first_frame()
{
	case $1 in
	*.xz)
		xz --robot -lvv "$1" 2>/dev/null |
			awk -F'\t' '$1 == "block" { print $7, $8; exit }'
		;;
	*)
		python3 - "$1" <<'PY'
import struct, sys
with open(sys.argv[1], "rb") as f:
    f.seek(-9, 2)
    n, desc, magic = struct.unpack("<IBI", f.read(9))
    if magic != 0x8F92EAB1 or n == 0:
        sys.exit("no seek table")
    esize = 12 if desc & 0x80 else 8
    f.seek(-(9 + n * esize), 2)
    print(*struct.unpack("<II", f.read(8)))
PY
		;;
	esac
}

# compressed_headers FILE: the first frame (headers, notes) is at most
# half its size compressed (a frame of raw blocks is larger than its data).
compressed_headers()
{
	local c d
	read -r c d < <(first_frame "$1") || return 1
	[ -n "$c" ] && [ -n "$d" ] && [ "$c" -gt 0 ] && [ $((2 * c)) -le "$d" ]
}

# core_pattern_setup NAME TOOL...: for a test that sets this machine's
# core_pattern: root and TOOLs there (else a skip, exit 77), $tmp made
# (/tmp/kcd-NAME.*), the lock every such test shares held, the old
# pattern put back and $tmp removed on exit, cores unlimited.
# kernel.core_pipe_limit is set to 0, as Debian ships it without
# systemd-coredump (the kernel then keeps the crashing process only while
# it writes the core), and put back on exit too.
core_pattern_setup()
{
	local name=$1 tool
	shift
	if [ "$(id -u)" != 0 ]; then
		echo "1..0 # SKIP needs root to set core_pattern"
		exit 77
	fi
	for tool in "$@"; do
		command -v "$tool" >/dev/null || {
			echo "1..0 # SKIP $tool not installed"
			exit 77
		}
	done
	tmp=$(mktemp -d "/tmp/kcd-$name.XXXXXX")
	chmod 711 "$tmp"
	exec 9>/tmp/kcd-core-pattern.lock
	flock 9
	old_pattern=$(cat /proc/sys/kernel/core_pattern)
	old_pipe_limit=$(cat /proc/sys/kernel/core_pipe_limit)
	trap core_pattern_restore EXIT
	# A signal ends the test through the EXIT trap, which restores.
	trap 'exit 143' TERM INT HUP
	if ! printf '%s\n' "$old_pattern" > /proc/sys/kernel/core_pattern; then
		echo "1..0 # SKIP core_pattern is not writable here"
		exit 77
	fi
	if ! echo 0 > /proc/sys/kernel/core_pipe_limit; then
		echo "1..0 # SKIP core_pipe_limit is not writable here"
		exit 77
	fi
	ulimit -c unlimited
}

# The EXIT trap of core_pattern_setup.
core_pattern_restore()
{
	printf '%s\n' "$old_pattern" > /proc/sys/kernel/core_pattern
	[ -n "${old_pipe_limit:-}" ] &&
		echo "$old_pipe_limit" > /proc/sys/kernel/core_pipe_limit
	rm -rf "$tmp"
}
