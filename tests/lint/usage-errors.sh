#!/bin/bash
# SPDX-License-Identifier: MIT
# lint-usage-errors: every command names the option it refuses, as the
# user wrote it, with exit status 2 -- also after a positional argument
# (GNU getopt permutes argv while it scans: `pid 2022 --bogus -o x` once
# said "unknown option '2022'", `pid 2022 -o` "option '2022' needs a
# value").  For each command: an unknown long and short option, one inside
# a cluster of valid short options, every option that needs a value given
# none (long and short form), a flag given a value, and a misspelt long
# option, for which the closest one is suggested.
set -u
. "${0%/*}/lib.sh"

err=$(mktemp) || exit 1
trap 'rm -f "$err"' EXIT

# refuses WANT ARGS...: exit status 2 and WANT in the first line of stderr.
refuses()
{
	local want=$1 status line
	shift
	"$KCOREDUMP" "$@" > /dev/null 2> "$err" < /dev/null
	status=$?
	IFS= read -r line < "$err" || line=
	if ((status == 2)) && [[ "$line" == *"$want"* ]]; then
		ok "kcoredump $*: $want"
	else
		not_ok "kcoredump $*: exit $status, '$line' (want 2 and \"$want\")"
	fi
}

mapfile -t cmds < <(commands)
for cmd in "${cmds[@]}"; do
	# The option column of --help (the descriptions may name options too).
	help=$("$KCOREDUMP" "$cmd" --help | sed -nE 's/^(  (-[[:alnum:]], |    )--[^ ]+( [^ ]+)?).*/\1/p')
	# Short letters in use, options with a value ("--name ARG" or
	# "-x, --name ARG"), flags (no value).
	shorts=$(grep -oE '^  -[[:alnum:]],' <<< "$help" | cut -c4 | tr -d '\n' || true)
	mapfile -t valued < <(grep -oE '^ +(-[[:alnum:]], )?--[[:alnum:]-]+ [A-Z]' <<< "$help" |
		sed -E 's/ [A-Z]$//; s/^ +//' || true)
	mapfile -t flags < <(grep -oE -- '--[[:alnum:]-]+$' <<< "$help" || true)
	# A letter no option of this command uses.
	free=
	for l in Z Y X W U; do
		[[ "$shorts" == *"$l"* ]] || { free=$l; break; }
	done
	pos=2022
	refuses "unknown option '--no-such-option'" "$cmd" "$pos" --no-such-option -h
	refuses "unknown option '--no-such-option'" "$cmd" --no-such-option=3 "$pos"
	refuses "unknown option '-$free'" "$cmd" "$pos" "-$free"
	# A valid flag letter, then the unknown one, in one cluster.
	flag_letter=
	for o in "${flags[@]}"; do
		l=$(grep -E -- "^  -[[:alnum:]], $o\$" <<< "$help" | cut -c4 || true)
		if [[ -n "$l" && "$l" != h ]]; then
			flag_letter=$l
			break
		fi
	done
	if [[ -n "$flag_letter" ]]; then
		refuses "unknown option '-$free'" "$cmd" "$pos" "-$flag_letter$free"
	fi
	for v in "${valued[@]}"; do
		long=${v##* }
		refuses "option '$long' needs a value" "$cmd" "$pos" "$long"
		if [[ "$v" == -?,* ]]; then
			refuses "option '${v:0:2}' needs a value" "$cmd" "$pos" "${v:0:2}"
		fi
	done
	for f in "${flags[@]}"; do
		[[ "$f" == --help ]] && continue
		refuses "option '$f' takes no value" "$cmd" "$pos" "$f=1"
		break
	done
	# A long option with a typo (one letter too many: no prefix of any
	# option, which getopt would take) gets a suggestion (issue 28 item 9).
	for f in "${flags[@]}" --help; do
		refuses "unknown option '${f}q'. Did you mean '$f'?" "$cmd" "$pos" "${f}q"
		break
	done
done
finish
