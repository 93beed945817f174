#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""drgn's stack traces of every thread of a process core, one line per
thread: TID and the function names ("?" where drgn knows no pc).

  drgn-bt.py CORE EXECUTABLE
"""
import sys, drgn
prog = drgn.Program()
prog.set_core_dump(sys.argv[1])
try:
    prog.load_debug_info([sys.argv[2]], default=True)
except drgn.MissingDebugInfoError:
    pass
for t in sorted(prog.threads(), key=lambda t: t.tid):
    names = []
    for f in t.stack_trace():
        try:
            names.append(f.name or hex(f.pc))
        except LookupError:
            names.append("?")
    print(t.tid, " ".join(n for n in names))
