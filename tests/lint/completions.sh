#!/bin/bash
# lint-completions: the committed completion scripts are byte for byte what
# `kcoredump __complete --shell SHELL` prints now.
set -u
. "${0%/*}/lib.sh"

declare -A file=(
	[bash]=completions/kcoredump.bash
	[zsh]=completions/_kcoredump
	[fish]=completions/kcoredump.fish
)
tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT

for shell in bash zsh fish; do
	committed=$SRCDIR/${file[$shell]}
	if ! "$KCOREDUMP" __complete --shell "$shell" >"$tmp"; then
		not_ok "$shell: 'kcoredump __complete --shell $shell' failed"
		continue
	fi
	if [[ ! -f $committed ]]; then
		not_ok "$shell: ${file[$shell]} is missing"
	elif cmp -s "$tmp" "$committed"; then
		ok "$shell: ${file[$shell]} is up to date"
		continue
	else
		not_ok "$shell: ${file[$shell]} differs from the generator"
		diff -u "$committed" "$tmp" | sed 's/^/#   /'
	fi
	echo "#   regenerate: kcoredump __complete --shell $shell >${file[$shell]}"
done
finish
