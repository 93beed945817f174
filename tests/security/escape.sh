#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 15 item 6: strings from a core or from the kernel's arguments
# (comm, executable, file names, note strings) are the crashing process's
# choice.  `list` and `info` printed them raw and the handler wrote them
# raw to the kernel log: `list | cat -v` showed terminal escape sequences.
# Now control characters come out as \xHH in text and in the log; JSON
# keeps escaping them its own way.
#   escape.sh KCOREDUMP FIXDIR
set -uo pipefail
kcoredump=$1 fixdir=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
fix=$fixdir/process-x86_64.core
[ -f "$fix" ] || { echo "no fixture $fix"; exit 77; }

# "crashme" is in NT_PRPSINFO and NT_FILE: make it an escape sequence
# that clears the screen (same length, so the notes stay well formed).
"$PY" - "$fix" "$tmp/evil.core" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(data.replace(b"crashme", b"\x1b[2J\x07\x9b!"))
PY
raw() { LC_ALL=C grep -c $'[\x01-\x08\x0b-\x1f\x7f]' "$1"; }

d=$(newstore store)
handler "$d" 4242 1000 1000 6 1700000000 $'\e]0;pwned\a\e[31mred' < "$tmp/evil.core" 2>"$tmp/log"
check "the handler's log line: no control character ($(raw "$tmp/log") lines)" [ "$(raw "$tmp/log")" = 0 ]
check "... the escape shown as \\x1b" grep -q 'x1b\]0;pwned' "$tmp/log"
"$kcoredump" list --dir "$d" > "$tmp/list"
check "list: no control character ($(raw "$tmp/list") lines)" [ "$(raw "$tmp/list")" = 0 ]
check "list: the executable shown escaped" grep -qF '\x1b[2J\x07' "$tmp/list"
"$kcoredump" list --dir "$d" --json > "$tmp/list.json"
check "list --json: the same strings, JSON-escaped" \
	quiet jq -e '.cores[0].comm == "\u001b]0;pwned\u0007\u001b[31mred"' "$tmp/list.json"
core=$(find "$d" -name 'core.*' ! -name '*.json' -type f)
"$kcoredump" info "$core" > "$tmp/info" 2>&1
check "info: no control character ($(raw "$tmp/info") lines)" [ "$(raw "$tmp/info")" = 0 ]
check "info: NT_FILE and NT_PRPSINFO names shown escaped" grep -q '\\x1b\[2J' "$tmp/info"
"$kcoredump" info "$tmp/evil.core" > "$tmp/info2" 2>&1
check "info of the stream itself: no control character" [ "$(raw "$tmp/info2")" = 0 ]
finish
