#!/bin/bash
# lint-man-options: man/kcoredump.8 documents exactly the commands and
# options of the specs.  In its COMMANDS section, the subsection of command
# C runs from the ".SS C" line to the next .SS or .SH; it must have a .TP
# entry for every option of C (with the short option and the argument that
# `kcoredump C --help` shows), and may name no --option C does not have.
# Options are written \-\-name, every hyphen escaped.  The entry of an
# option whose value takes names from the library's tables
# (`kcoredump __complete C OPTION`: formats, codecs, --hash's methods)
# names each of them.
set -u
. "${0%/*}/lib.sh"

man=$SRCDIR/man/kcoredump.8
if [[ ! -f $man ]]; then
	not_ok "man/kcoredump.8 exists"
	finish
fi

# The COMMANDS section as "NAME<TAB>LINE" records: the subsection's command
# (first word of the .SS line, quotes and font escapes removed) and each
# line of it; comment lines dropped.
sections=$(awk '
	/^\.SH/ { in_cmds = ($0 ~ /^\.SH +"?COMMANDS"?[ \t]*$/); name = ""; next }
	!in_cmds || /^\.\\"/ || /^'"'"'\\"/ { next }
	/^\.SS/ {
		s = $0
		sub(/^\.SS[ \t]*/, "", s)
		gsub(/"/, "", s)
		gsub(/\\f(\[[^]]*\]|\(..|.)/, "", s)
		split(s, w, /[ \t]+/)
		name = w[1]
		print name "\t"
		next
	}
	name != "" { print name "\t" $0 }
' "$man")

section_of()
{
	awk -F '\t' -v c="$1" '$1 == c { sub(/^[^\t]*\t/, ""); print }' \
		<<<"$sections"
}

# The tag lines of a section's .TP entries, roff escapes undone.
tags_of()
{
	awk '/^\.TP/ { tag = 1; next } tag { print; tag = 0 }' |
		sed -e 's/\\f\(\[[^]]*\]\|(..\|.\)//g' -e 's/\\-/-/g' \
			-e 's/\\(aq/'"'"'/g' -e 's/\\[&|^ ]//g'
}

# The text of a section's .TP entry whose tag names --$1 (to the next .TP,
# .SS or .SH), roff escapes undone.
entry_of()
{
	awk -v opt="$1" '
		/^\.(TP|SS|SH)/ { on = 0; tag = /^\.TP/; next }
		tag { t = $0; gsub(/\\-/, "-", t); tag = 0
			on = t ~ ("(^|[^-[:alnum:]])--" opt "([^-[:alnum:]]|$)") }
		on' |
		sed -e 's/\\f\(\[[^]]*\]\|(..\|.\)//g' -e 's/\\-/-/g' \
			-e 's/\\(aq/'"'"'/g' -e 's/\\[&|^ ]//g'
}

mapfile -t cmds < <(commands)
mapfile -t man_cmds < <(awk -F '\t' '$2 == "" { print $1 }' <<<"$sections")
main_help=$("$KCOREDUMP" --help)

# Commands: kcoredump --help, the man page and __complete agree.
for cmd in "${cmds[@]}"; do
	check "kcoredump --help lists '$cmd'" \
		grep -qE "^  $cmd( |\$)" <<<"$main_help"
	check "man page has a COMMANDS subsection '.SS $cmd'" \
		grep -qxF -- "$cmd" < <(printf '%s\n' "${man_cmds[@]}")
done
for cmd in "${man_cmds[@]}"; do
	grep -qxF -- "$cmd" < <(printf '%s\n' "${cmds[@]}") ||
		not_ok "man page documents '$cmd', which is not a command"
done
while read -r cmd _; do
	grep -qxF -- "$cmd" < <(printf '%s\n' "${cmds[@]}") ||
		not_ok "kcoredump --help lists '$cmd', missing from __complete"
done < <(sed -n '/^Commands:/,/^$/{/^  [a-z]/p}' <<<"$main_help")

for cmd in "${cmds[@]}"; do
	text=$(section_of "$cmd")
	[[ -n $text ]] || continue
	tags=$(tags_of <<<"$text")
	help=$("$KCOREDUMP" "$cmd" --help 2>/dev/null)
	mapfile -t opts < <(options_of "$cmd")

	for opt in "${opts[@]}"; do
		# "  -j, --json", "      --output FILE", "--compress[=CODEC]"
		line=$(grep -E -- "^ *(-[^-], )?--$opt([ =[]|\$)" <<<"$help" |
			head -n 1)
		short=$(sed -nE 's/^ *(-[^-]), .*/\1/p' <<<"$line")
		arg=$(sed -nE "s/^ *(-[^-], )?--$opt(\\[=| )([^] ]+).*/\\3/p" \
			<<<"$line")
		tag=$(grep -E -- "(^|[^-[:alnum:]])--$opt([^-[:alnum:]]|\$)" \
			<<<"$tags" | head -n 1)
		if [[ -z $tag ]]; then
			not_ok "$cmd: no .TP entry for --$opt in the man page"
			continue
		fi
		ok "$cmd: .TP entry for --$opt"
		if [[ -n $short ]]; then
			check "$cmd: --$opt entry names $short" \
				grep -qE -- "(^|[^-[:alnum:]])$short([^-[:alnum:]]|\$)" \
				<<<"$tag"
		fi
		if [[ -n $arg ]]; then
			check "$cmd: --$opt entry names its argument $arg" \
				grep -qwF -- "$arg" <<<"$tag"
		fi
		words=$("$KCOREDUMP" __complete "$cmd" "$opt")
		[[ -z $words ]] || entry=$(entry_of "$opt" <<<"$text")
		for w in $words; do
			check "$cmd: --$opt entry names its value '$w'" \
				grep -qE -- "(^|[^-[:alnum:]])${w//./\\.}([^-[:alnum:]]|\$)" \
				<<<"$entry"
		done
	done

	# No stale options, and every --option written \-\-name.
	while IFS= read -r word; do
		name=${word//\\-/-}
		name=${name#--}
		if [[ ${word//\\-/} == *-* ]]; then
			not_ok "$cmd: write '$word' with every hyphen escaped (\\-)"
		fi
		grep -qxF -- "$name" < <(printf '%s\n' "${opts[@]}") ||
			not_ok "$cmd: man page names --$name, which $cmd does not have"
	done < <(grep -oE -- '\\-\\-[[:alnum:]]([[:alnum:]]|\\-|-)*' \
		<<<"$text" | sed -E 's/(\\-|-)+$//' | sort -u)
	while IFS= read -r line; do
		not_ok "$cmd: unescaped '--' in the man page: $line"
	done < <(grep -F -- '--' <<<"$text")
done
finish
