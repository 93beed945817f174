#!/bin/bash
# lint-help: every command takes --help and lists every option of its spec;
# the global --help and --version work; an unknown command is a usage error.
set -u
. "${0%/*}/lib.sh"

out=$(mktemp) && err=$(mktemp) || exit 1
trap 'rm -f "$out" "$err"' EXIT

# run EXPECTED_STATUS ARGS...: run kcoredump, keep stdout and stderr
run()
{
	local want=$1 status

	shift
	"$KCOREDUMP" "$@" >"$out" 2>"$err" </dev/null
	status=$?
	if ((status != want)); then
		not_ok "kcoredump $*: exit status $status, expected $want"
		sed 's/^/#   stderr: /' "$err" | head -n 5
		return 1
	fi
	return 0
}

# starts_with PREFIX: the first line of stdout starts with PREFIX and is
# followed by a space or the end of the line
first_line_is()
{
	local line

	IFS= read -r line <"$out"
	[[ $line == "$1" || $line == "$1 "* ]]
}

# Global options.
for opt in --help -h; do
	run 0 "$opt" &&
		check "kcoredump $opt prints the usage" first_line_is "Usage: kcoredump"
done
for opt in --version -V; do
	run 0 "$opt" &&
		check "kcoredump $opt prints 'kcoredump VERSION'" \
			grep -qE '^kcoredump [0-9]+\.[0-9]+' "$out"
done
run 2 nosuchcmd && ok "kcoredump nosuchcmd exits 2"
run 2 && ok "kcoredump without a command exits 2"
run 2 --no-such-option && ok "kcoredump --no-such-option exits 2"

mapfile -t cmds < <(commands)
((${#cmds[@]})) || not_ok "kcoredump __complete lists no commands"
run 0 --help
for cmd in "${cmds[@]}"; do
	check "kcoredump --help lists '$cmd'" \
		grep -qE "^  $cmd( |\$)" "$out"
done

# Every command, the hidden helper too.
for cmd in "${cmds[@]}" __complete; do
	run 0 "$cmd" --help || continue
	check "kcoredump $cmd --help starts with 'Usage: kcoredump $cmd'" \
		first_line_is "Usage: kcoredump $cmd"
	check "kcoredump $cmd --help writes nothing to stderr" \
		test ! -s "$err"
	help=$(<"$out")
	while IFS= read -r opt; do
		check "kcoredump $cmd --help lists --$opt" \
			grep -qE -- "(^|[ ,])--$opt([ =[]|\$)" <<<"$help"
	done < <(options_of "$cmd")
	if run 0 "$cmd" -h; then
		check "kcoredump $cmd -h is kcoredump $cmd --help" \
			test "$(<"$out")" == "$help"
	fi
	if [[ $cmd != __complete ]] && run 0 help "$cmd"; then
		check "kcoredump help $cmd is kcoredump $cmd --help" \
			test "$(<"$out")" == "$help"
	fi
	run 2 "$cmd" --no-such-option &&
		ok "kcoredump $cmd --no-such-option exits 2"
done
finish
