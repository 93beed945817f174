# Shared by the security tests (sourced): TAP helpers, a scratch
# directory removed on exit, and the handler as the kernel runs it.
# shellcheck source=../lib/tap.sh
. "${BASH_SOURCE[0]%/*}/../lib/tap.sh"
tmp=$(mktemp -d /tmp/kcd-security.XXXXXX)
chmod 711 "$tmp" # other users reach what a test lets them, nothing more
trap 'rm -rf "$tmp"' EXIT
PY=/usr/bin/python3

# handler DIR ARGS... < stream: kcoredump core-handler, no fsync.
handler() {
	local dir=$1
	shift
	"$kcoredump" core-handler --dir "$dir" --no-sync --no-journal "$@"
}
quiet() { "$@" >/dev/null 2>&1; }
alloc() { echo $(($(stat -c %b "$1") * $(stat -c %B "$1"))); }
is_root() { [ "$(id -u)" = 0 ]; }
# as UID CMD...: run CMD as that user (root only).
as() {
	local u=$1
	shift
	setpriv --reuid="$u" --regid="$u" --clear-groups "$@"
}
# newstore NAME: an empty 0700 store under $tmp.
newstore() {
	mkdir -m 700 "$tmp/$1"
	echo "$tmp/$1"
}
