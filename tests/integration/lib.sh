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
