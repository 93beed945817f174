# Shared by the lint scripts: argument checks and TAP-like reporting.
# Sourced, not run.

if [[ $# -lt 2 || ! -x $1 || ! -d $2 ]]; then
	echo "usage: ${0##*/} KCOREDUMP SOURCE_DIR" >&2
	exit 2
fi
KCOREDUMP=$1
SRCDIR=$2
failures=0
checks=0

ok()
{
	checks=$((checks + 1))
	echo "ok $checks - $*"
}

not_ok()
{
	checks=$((checks + 1))
	failures=$((failures + 1))
	echo "not ok $checks - $*"
}

# check DESCRIPTION COMMAND...: ok if COMMAND succeeds
check()
{
	local what=$1

	shift
	if "$@"; then
		ok "$what"
	else
		not_ok "$what"
	fi
}

finish()
{
	echo "1..$checks"
	if ((failures)); then
		echo "# $failures of $checks checks failed" >&2
		exit 1
	fi
	exit 0
}

# The visible commands, and a command's long options without "--".
commands()
{
	"$KCOREDUMP" __complete
}

options_of()
{
	"$KCOREDUMP" __complete "$1" | sed 's/^--//'
}
