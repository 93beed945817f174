# Shared by the lint scripts: argument checks; TAP reporting from
# tests/lib/tap.sh.
# Sourced, not run.

if [[ $# -lt 2 || ! -x $1 || ! -d $2 ]]; then
	echo "usage: ${0##*/} KCOREDUMP SOURCE_DIR" >&2
	exit 2
fi
KCOREDUMP=$1
SRCDIR=$2
# shellcheck source=../lib/tap.sh
. "${BASH_SOURCE[0]%/*}/../lib/tap.sh"

# The visible commands, and a command's long options without "--".
commands()
{
	"$KCOREDUMP" __complete
}

options_of()
{
	"$KCOREDUMP" __complete "$1" | sed 's/^--//'
}
