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
	trap core_pattern_restore EXIT
	if ! printf '%s\n' "$old_pattern" > /proc/sys/kernel/core_pattern; then
		echo "1..0 # SKIP core_pattern is not writable here"
		exit 77
	fi
	ulimit -c unlimited
}

# The EXIT trap of core_pattern_setup.
core_pattern_restore()
{
	printf '%s\n' "$old_pattern" > /proc/sys/kernel/core_pattern
	rm -rf "$tmp"
}

# trailer_len FILE: the bytes of kcoredump's trailer at the end of an ELF
# dump (its text, le64 length, "KCDTRL01"), or 0 when it has none.
trailer_len()
{
	python3 - "$1" <<'PY'
import os, struct, sys
with open(sys.argv[1], "rb") as f:
    size = os.fstat(f.fileno()).st_size
    if size < 16:
        print(0)
        sys.exit()
    f.seek(size - 16)
    t = f.read(16)
print(struct.unpack("<Q", t[:8])[0] + 16 if t[8:] == b"KCDTRL01" else 0)
PY
}
