#!/bin/bash
# lint-format: C sources follow .clang-format (kernel style).
set -u
. "${0%/*}/lib.sh"

if ! command -v clang-format >/dev/null; then
	echo "# SKIP: clang-format not installed"
	exit 77
fi
cd "$SRCDIR" || exit 1
mapfile -t files < <(find src include tests -type f \
	\( -name '*.c' -o -name '*.h' \) | LC_ALL=C sort)
for f in "${files[@]}"; do
	if out=$(clang-format --dry-run --Werror "$f" 2>&1); then
		ok "$f"
	else
		not_ok "$f is not formatted (run: clang-format -i $f)"
		printf '%s\n' "$out" | head -n 12 | sed 's/^/#   /'
	fi
done
finish
