#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 27 item 8: nothing after COMM is read as an option.  Before Linux
# 5.3 the kernel splits the expanded pattern at spaces, so a task named
# "a -d/elsewhere -t0" arrived as the words "a", "-d/elsewhere", "-t0"
# after %t, and the handler read them as options (the layout earlier
# versions installed): the crashing task picked the store and the
# timeout.  Now they are the name, joined back.
#   ch-comm-words.sh KCOREDUMP MKCORE SPECDIR
set -uo pipefail
kcoredump=$1 mkcore=$2 specdir=$3
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

"$mkcore" "$specdir/process-x86_64.spec" "$tmp/p.core" >/dev/null || { not_ok "mkcore"; finish; }
d=$(newstore store)
evil=$(newstore elsewhere)
handler "$d" 4242 1000 1000 6 1700000000 a "-d$evil" -t0 --max-size=4096 \
	< "$tmp/p.core" 2>"$tmp/err"
check "the handler exits 0 ($?)" [ $? -eq 0 ]
check "nothing is stored where the name said" bash -c "[ -z \"\$(ls -A '$evil')\" ]"
core=$(find "$d" -name 'core.*' ! -name '*.json' | head -n 1)
check "the core is in the store" [ -n "$core" ]
check "its name holds the words: ${core##*/}" bash -c "[[ '${core##*/}' == core.a_-d*_-t0_--max-size_4096.1000.4242.1700000000* ]]"
# shellcheck disable=SC2016 # jq's variable
check "the metadata has the name joined by spaces" \
	quiet jq -e --arg c "a -d$evil -t0 --max-size=4096" '.comm == $c' "$core.json"
check "--max-size in the name did not cut the core" \
	quiet jq -e '.complete == true' "$core.json"
finish
