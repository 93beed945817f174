#!/bin/bash
# SPDX-License-Identifier: MIT
# lint-examples: every kcoredump command line in the README's (and
# docs/reference.md's) code blocks
# and in the man page's DESCRIPTION (its five jobs) and EXAMPLES parses: each is run with --help appended,
# so the option parser accepts (or refuses, exit 2) every option and value
# before it, and nothing is dumped.  A README or man page that shows an
# option a command does not have (issue 19 item 6: `pid --format`) fails.
set -u
. "${0%/*}/lib.sh"

list=$(mktemp) || exit 1
err=$(mktemp) || exit 1
trap 'rm -f "$list" "$err"' EXIT

# One line per example: "FILE:LINE<TAB>command words", cut at a pipe,
# redirection, comment or ';', man escapes undone, prompts removed.
/usr/bin/python3 - "$SRCDIR/README.md" "$SRCDIR/man/kcoredump.8" \
	"$SRCDIR/docs/reference.md" >"$list" <<'PY'
import re, shlex, sys

def emit(where, text):
    text = text.strip()
    text = re.sub(r"^[#$] ", "", text)
    m = re.search(r"\bkcoredump\b(.*)$", text)
    if not m or not text.startswith("kcoredump"):
        # "$ ulimit ...; kcoredump ..." : from the last kcoredump on
        if not m:
            return
        text = text[text.rindex("kcoredump"):]
    try:
        lex = shlex.shlex(text, posix=True, punctuation_chars="|&;<>")
        lex.whitespace_split = True
        lex.commenters = "#"
        words = []
        for w in lex:
            if w and set(w) <= set("|&;<>"):
                break
            words.append(w)
    except ValueError as e:
        sys.exit("%s: cannot split %r: %s" % (where, text, e))
    if words and words[0] == "kcoredump":
        print("%s\t%s" % (where, "\x1f".join(words[1:])))

readme, man, ref = sys.argv[1], sys.argv[2], sys.argv[3]
for path, name in ((readme, "README.md"), (ref, "docs/reference.md")):
    fence = False
    for n, line in enumerate(open(path), 1):
        if line.startswith("```"):
            fence = not fence
            continue
        if fence and line.lstrip().startswith(("kcoredump ", "$ kcoredump",
                                               "# kcoredump")):
            emit("%s:%d" % (name, n), line)
section, ex = None, False
for n, line in enumerate(open(man), 1):
    if line.startswith(".SH "):
        section = line[4:].strip()
    if section not in ("EXAMPLES", "DESCRIPTION"):
        continue
    if line.startswith(".EX"):
        ex = True
    elif line.startswith(".EE"):
        ex = False
    elif ex and "kcoredump" in line:
        t = (line.replace("\\-", "-").replace("\\(aq", "'")
             .replace("\\e", "\\"))
        emit("kcoredump.8:%d" % n, t)
PY
count=$(wc -l <"$list")
if ((count < 20)); then
	not_ok "found only $count example command lines (want >= 20)"
fi
while IFS=$'\t' read -r where words; do
	IFS=$'\x1f' read -r -a args <<<"$words"
	"$KCOREDUMP" "${args[@]}" --help >/dev/null 2>"$err" </dev/null
	status=$?
	IFS= read -r line <"$err" || line=
	if ((status == 0)); then
		ok "$where: kcoredump ${args[*]}"
	else
		not_ok "$where: kcoredump ${args[*]}: exit $status, '$line'"
	fi
done <"$list"
finish
