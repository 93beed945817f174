#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""lint-shell: the shell code under set -e says what failed and does not
die where a command may legitimately fail.

Issue 14: `best=$(find "$cache" ... | grep -E "$re" | sort -V | tail -n 1)`
under `set -euo pipefail` ended fetch-kernel.sh silently on every fresh
machine, because grep exits 1 when the (empty) cache has nothing to match.
For every shell script of the tree that runs with errexit (or is sourced by
one), this checks:

  1. a bash script that sets -e sources tests/lib/shell.sh and calls
     kcd_trap_errors, so a failure names the script, line and command
     (busybox-sh guest scripts are exempt: ash has no ERR trap, and the VM
     rig prints their log);
  2. no unguarded statement whose status comes from a command that may fail
     with nothing wrong: grep (no match), find (missing directory), diff and
     cmp (files differ) -- in `x=$(...)` or a pipeline (any stage under
     pipefail, the last stage without it).  Guarded means inside an
     if/while/until condition, after `!`, or followed by `||` or `&&`.

A line that really means "this must not fail, and if it does the ERR trap's
message is right" carries the comment `# lint-shell: fatal` (the reason
after it).

Usage: shell-errexit.py [--self-test] [FILE...]   (default: every tracked
*.sh and bash script under scripts/ tests/ bench/ kernel/ .ci/).  TAP
output; exit 1 on findings.
"""
import os
import re
import subprocess
import sys

RISKY = ("grep", "egrep", "fgrep", "find", "diff", "cmp")
ROOTS = ("scripts", "tests", "bench", "kernel", ".ci", "debian")
WAIVER = "# lint-shell: fatal"


def strip_comment(line):
    """The line without a trailing comment (quote-aware, keeps $# and ${#x})."""
    q = None
    i = 0
    while i < len(line):
        c = line[i]
        if q:
            if c == "\\" and q == '"':
                i += 2
                continue
            if c == q:
                q = None
        elif c in "'\"":
            q = c
        elif c == "\\":
            i += 2
            continue
        elif c == "#" and (i == 0 or line[i - 1] in " \t;"):
            return line[:i].rstrip()
        i += 1
    return line


def statements(text):
    """(first line number, statement text, waived) for each logical line:
    backslash continuations and lines ending in | || && joined."""
    out = []
    buf, start, waived = "", 0, False
    for n, raw in enumerate(text.split("\n"), 1):
        if not buf:
            start = n
        waived = waived or WAIVER in raw
        line = strip_comment(raw)
        s = line.rstrip()
        if s.endswith("\\"):
            buf += s[:-1] + " "
            continue
        buf += s
        if re.search(r"(\|\||&&|\|)\s*$", s):
            buf += " "
            continue
        if buf.strip():
            out.append((start, buf.strip(), waived))
        buf, waived = "", False
    return out


def matching_paren(s, i):
    """Index of the ')' closing the '(' at s[i], or -1."""
    depth, q = 0, None
    while i < len(s):
        c = s[i]
        if q:
            if c == "\\" and q == '"':
                i += 2
                continue
            if c == q:
                q = None
        elif c in "'\"" and depth > 0:
            q = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def split_top(s, sep_re):
    """Split s on sep_re outside quotes and parentheses."""
    parts, depth, q, cur, i = [], 0, None, "", 0
    while i < len(s):
        c = s[i]
        if q:
            cur += c
            if c == "\\" and q == '"' and i + 1 < len(s):
                cur += s[i + 1]
                i += 2
                continue
            if c == q:
                q = None
            i += 1
            continue
        if c in "'\"":
            q = c
        elif c in "({":
            depth += 1
        elif c in ")}":
            depth -= 1
        if depth == 0 and not q:
            m = re.match(sep_re, s[i:])
            if m:
                parts.append(cur)
                cur = ""
                i += len(m.group(0))
                continue
        cur += c
        i += 1
    parts.append(cur)
    return parts


def first_word(cmd):
    cmd = cmd.strip()
    cmd = re.sub(r"^(\w+=\S*\s+)+", "", cmd)  # VAR=x cmd
    cmd = re.sub(r"^(command|exec|nice|timeout\s+\S+|sudo|env)\s+", "", cmd)
    m = re.match(r"[\w./-]+", cmd)
    return os.path.basename(m.group(0)) if m else ""


def risky_pipeline(cmd, pipefail):
    """The risky command that decides cmd's status, or None.  cmd is a
    sequence of ; / && lists; the status of `a; b` is b's."""
    last = split_top(cmd, r"\s*;\s*")[-1]
    lists = split_top(last, r"\s*(\|\||&&)\s*")
    if len(lists) > 1:
        return None  # a || b, a && b: handled by the author
    stages = split_top(lists[0], r"\s*\|(?!\|)\s*")
    check = stages if pipefail else stages[-1:]
    for st in check:
        w = first_word(st)
        if w in RISKY:
            return w
    return None


COND = re.compile(r"^(if|elif|while|until|!)\s")


def findings(path, text, pipefail, ash):
    res = []
    for n, stmt, waived in statements(text):
        if re.match(r"^set\s+\+o\s+pipefail\b", stmt):
            pipefail = False
        elif re.match(r"^set\s+(-\w*o\s+pipefail|-o\s+pipefail)\b", stmt):
            pipefail = not ash
        if waived:
            continue
        # Only the part before a then/do keyword can be a condition.
        if COND.match(stmt):
            continue
        guarded_after = re.search(r"(\|\||&&)", stmt)
        m = re.match(
            r"^(?:export\s+|readonly\s+|declare\s+(?:-\w+\s+)*)?"
            r"[A-Za-z_]\w*(?:\[[^]]*\])?=\"?\$\(", stmt)
        if m:
            open_i = m.end() - 1
            close_i = matching_paren(stmt, open_i)
            if close_i < 0:
                continue
            inner = stmt[open_i + 1:close_i]
            rest = stmt[close_i + 1:]
            if re.search(r"(\|\||&&)", rest):
                continue
            w = risky_pipeline(inner, pipefail)
            if w:
                res.append((n, f"'{w}' may fail inside $(...) of an assignment: {stmt[:100]}"))
            continue
        if guarded_after:
            continue
        if re.match(r"^(local|case|for|function|\w+\s*\(\))", stmt):
            continue
        stages = split_top(stmt, r"\s*\|(?!\|)\s*")
        if len(stages) < 2:
            continue  # a lone command: failing is its meaning
        w = risky_pipeline(stmt, pipefail)
        if w:
            res.append((n, f"'{w}' may fail in a pipeline: {stmt[:100]}"))
    return res


def is_shell(path, head):
    if path.endswith(".sh"):
        return True
    first = head.split("\n", 1)[0]
    return first.startswith("#!") and re.search(r"\b(ba)?sh\b", first) is not None


def tracked_files(top):
    try:
        out = subprocess.run(["git", "-C", top, "ls-files", "--", *ROOTS],
                             capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = []
        for r in ROOTS:
            for d, _, fs in os.walk(os.path.join(top, r)):
                out += [os.path.relpath(os.path.join(d, f), top) for f in fs]
    return sorted(out)


def analyse(files, top):
    """(path, [(line, message)]) per file checked."""
    texts = {}
    for f in files:
        p = os.path.join(top, f)
        try:
            with open(p, encoding="utf-8", errors="replace") as fh:
                t = fh.read()
        except OSError:
            continue
        if is_shell(f, t[:200]):
            texts[f] = t
    errexit = {f for f, t in texts.items()
               if re.search(r"^\s*set\s+(-\w*e\w*|-o\s+errexit)", t, re.M)}
    # Libraries sourced by an errexit script run under errexit too.
    names = {os.path.basename(f): f for f in texts}
    for f in list(errexit):
        for m in re.finditer(r"^\s*(?:\.|source)\s+.*?(?<![\w.-])([\w.-]+\.sh)\b", texts[f], re.M):
            if m.group(1) in names:
                errexit.add(names[m.group(1)])
    out = []
    for f in sorted(errexit):
        t = texts[f]
        ash = t.startswith("#!/bin/sh") or "/cases/" in "/" + f and not f.endswith(".host.sh")
        # Until the file says otherwise, a sourced library runs under its
        # caller's pipefail: assume the worst.
        pipefail = not ash
        msgs = findings(f, t, pipefail, ash)
        sets_e = re.search(r"^\s*set\s+(-\w*e\w*|-o\s+errexit)", t, re.M)
        if sets_e and not ash and "kcd_trap_errors" not in t:
            msgs.insert(0, (t[:sets_e.start()].count("\n") + 1,
                            "sets -e without kcd_trap_errors (tests/lib/shell.sh): a failure would exit silently"))
        out.append((f, msgs))
    return out


SELF_TEST = {
    # The line of issue 14, verbatim: must be found.
    "bad-fetch.sh": ("#!/bin/bash\nset -euo pipefail\n. tests/lib/shell.sh\nkcd_trap_errors\n"
                     "best=$(find \"$cache\" -mindepth 1 -maxdepth 1 -type d ! -name '.*' \\\n"
                     "\t-printf '%f\\n' 2>/dev/null | grep -E \"$dir_re\" | sort -V | tail -n 1)\n", 1),
    "bad-pipe.sh": ("#!/bin/bash\nset -euo pipefail\n. tests/lib/shell.sh\nkcd_trap_errors\n"
                    "dmesg | grep -i oops > oops.txt\n", 1),
    "bad-notrap.sh": ("#!/bin/bash\nset -e\necho hi\n", 1),
    "good.sh": ("#!/bin/bash\nset -euo pipefail\n. tests/lib/shell.sh\nkcd_trap_errors\n"
                "best=$(find x | grep y || true)\nif x=$(grep a b); then :; fi\n"
                "n=$(grep -c a b) || n=0\ngrep -q a b && echo yes\n"
                "v=$(cmp a b) # lint-shell: fatal (must be equal)\n"
                "ls | sort | tail -n 1\nlocal z=$(grep a b)\n", 0),
}


def self_test():
    import tempfile
    bad = 0
    with tempfile.TemporaryDirectory() as d:
        for name, (text, want) in SELF_TEST.items():
            with open(os.path.join(d, name), "w") as fh:
                fh.write(text)
            res = analyse([name], d)
            got = sum(len(m) for _, m in res)
            ok = (got > 0) == (want > 0)
            print(f"{'ok' if ok else 'not ok'} - self-test {name}: {got} finding(s), want {'some' if want else 'none'}")
            bad += not ok
    return bad


def main():
    args = sys.argv[1:]
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    failed = 0
    if args and args[0] == "--self-test":
        failed += self_test()
        args = args[1:]
    files = args or tracked_files(top)
    n = 0
    for f, msgs in analyse(files, top):
        n += 1
        if msgs:
            failed += 1
            print(f"not ok {n} - {f}")
            for line, msg in msgs:
                print(f"# {f}:{line}: {msg}")
        else:
            print(f"ok {n} - {f}")
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
