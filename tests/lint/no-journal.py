#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""lint-no-journal: no test logs to this machine's own journal.

kcoredump core-handler logs a journal entry for every core it stores
wherever /run/systemd/journal/socket exists, so a test that runs the
handler on a machine with systemd would fill that machine's journal (and
its coredumpctl list) with fixture cores.  Every command of the tests that
runs the handler on a store (--dir, -D, --socket, --install) must pass
--no-journal (--help is exempt), or carry the comment `# lint-journal: REASON` (a handler
inside a private journal's namespace, a --print-pattern whose output is
compared).  The tests in tests/vm run in a VM, whose journal is its own,
and are not checked.

A command is a logical line: backslash continuations joined, Python's
bracketed lines joined.  Usage: no-journal.py [--self-test] [FILE...]
(default: every tracked *.sh and *.py under tests/ but tests/vm and
tests/lint).  TAP output; exit 1 on findings.
"""
import os
import re
import subprocess
import sys

RUNS = re.compile(r'''(^|[\s"'/\[,])core-handler\b["']?''')
STORE = re.compile(r'''(^|[\s"'])(--dir|-D|--socket|--install)\b''')
MARK = "# lint-journal:"


def commands(text, python=False):
    """(line number, logical line) pairs: backslash continuations joined
    (Python: also the lines of open brackets), whole-line comments
    dropped."""
    out, cur, start, depth = [], "", 0, 0
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not cur and stripped.startswith("#"):
            continue
        if not cur:
            start = n
        cur += " " + stripped
        if python:
            depth += sum(stripped.count(c) for c in "([{")
            depth -= sum(stripped.count(c) for c in ")]}")
        if depth > 0 or stripped.endswith("\\"):
            continue
        out.append((start, cur.strip()))
        cur, depth = "", 0
    if cur:
        out.append((start, cur.strip()))
    return out


def findings(path, text):
    bad = []
    for n, cmd in commands(text, python=path.endswith(".py")):
        if not RUNS.search(cmd) or not STORE.search(cmd):
            continue
        if "--no-journal" in cmd or "--help" in cmd or MARK in cmd:
            continue
        bad.append((n, cmd))
    return bad


def self_test():
    cases = [
        ('"$kcoredump" core-handler --dir "$d" --no-sync 1 2 3 4 5 x < c', 1),
        ('"$kcoredump" core-handler --dir "$d" --no-sync --no-journal 1 < c',
         0),
        ('k core-handler -D "$d" \\\n\t--socket "$s" &', 1),
        ('"$k" core-handler --print-pattern --dir /x  # lint-journal: compared',
         0),
        ('"$kcoredump" core-handler --help', 0),
        ('# "$kcoredump" core-handler --dir "$d"', 0),
    ]
    py = ('subprocess.run([kcoredump, "core-handler", "--dir", store,\n'
          '                "--no-sync", str(pid)], stdin=f)\n')
    good = True
    for i, (text, want) in enumerate(cases, 1):
        got = len(findings("t.sh", text))
        good &= got == want
        print(("ok" if got == want else "not ok") +
              f" {i} - self-test: {want} finding(s) in {text!r}")
    got = len(findings("t.py", py))
    good &= got == 1
    print(("ok" if got == 1 else "not ok") +
          f" {len(cases) + 1} - self-test: a Python call over two lines")
    return good, len(cases) + 1


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    n, failed = 0, 0
    if argv and argv[0] == "--self-test":
        good, n = self_test()
        failed += not good
        argv = argv[1:]
    files = argv
    if not files:
        listed = subprocess.run(["git", "-C", repo, "ls-files", "tests"],
                                capture_output=True, text=True,
                                check=False).stdout.split()
        files = [os.path.join(repo, f) for f in listed
                 if f.endswith((".sh", ".py"))
                 and not f.startswith(("tests/vm/", "tests/lint/"))]
        if not files:
            print("1..0 # SKIP not a git checkout")
            return 77
    for path in sorted(files):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        rel = os.path.relpath(path, repo)
        n += 1
        bad = findings(path, text)
        if bad:
            failed += 1
            print(f"not ok {n} - {rel}: the handler without --no-journal")
            for line, cmd in bad:
                print(f"#   {rel}:{line}: {cmd[:160]}")
        else:
            print(f"ok {n} - {rel}")
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
