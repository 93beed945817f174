#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The progress line on a terminal of a given width (issue 46 item 1).

A dump of process-x86_64.core writes into a FIFO (--special-output) that
this test drains slowly, its stderr a pseudo-terminal whose window size is
set (TIOCSWINSZ) to 80 and then 40 columns.  What the terminal received:

  - one physical line: redraws in place ("\\r\\e[K"), the only newline the
    one after the last redraw;
  - no redraw as wide as the terminal (at most width-1 columns, so that
    the cursor never wraps);
  - at 80 columns, while the dump waits on the FIFO, the text changes at
    least once a second (a gap of 1.5 s is allowed to a loaded machine)
    and its ETA reads h:mm:ss;
  - the last redraw says "100.0%  X of X" (done of total: the same
    figure) and "done".

Then SIGINT while the FIFO is full: "stopping…" is drawn within a second,
and the dump exits non-zero.

  progress-pty.py KCOREDUMP FIXDIR
"""
import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time

kcoredump, fixdir = sys.argv[1], sys.argv[2]
fix = os.path.join(fixdir, "process-x86_64.core")
n = 0
failed = 0


def check(ok, what, diag=None):
    global n, failed
    n += 1
    print("%s %d - %s" % ("ok" if ok else "not ok", n, what))
    if not ok:
        failed += 1
        if diag:
            for line in str(diag).splitlines():
                print("# " + line)


def run(cols, tmp, name, slow=4.0, sigint_at=None):
    """Run the dump on a pty of cols columns; drain its FIFO slowly for
    slow seconds (or, with sigint_at, signal it then and drain 2 s after).
    Returns (exit status, [(time, bytes)] of the pty's output, the time of
    the signal)."""
    fifo = os.path.join(tmp, name + ".fifo")
    os.mkfifo(fifo, 0o600)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
    os.set_blocking(master, False)
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    p = subprocess.Popen(
        [kcoredump, "dump", "--special-output", fix, "-o", fifo],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave,
        env=env)
    os.close(slave)
    # Non-blocking: opened before the dump opens its end.
    rd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    out = []
    t0 = time.monotonic()
    signalled = None
    while time.monotonic() < t0 + 120:
        now = time.monotonic()
        if sigint_at is not None and signalled is None and now - t0 >= sigint_at:
            p.send_signal(signal.SIGINT)
            signalled = now
        draining = (sigint_at is None and now - t0 >= slow) or (
            signalled is not None and now - signalled >= 2)
        try:
            os.read(rd, 1 << 20 if draining else 64 << 10)
        except BlockingIOError:
            pass
        try:
            d = os.read(master, 65536)
        except BlockingIOError:
            d = None
        except OSError:  # EIO: the dump closed the terminal
            break
        if d:
            out.append((time.monotonic(), d))
            continue
        if d is None and p.poll() is not None:
            # The dump has exited, but the terminal's last bytes may not
            # have reached the master yet (the kernel passes them on from
            # a work queue, late on a loaded machine): wait for them or
            # the hang-up before giving up.
            if select.select([master], [], [], 2.0)[0]:
                continue
            break
        time.sleep(0.005 if draining else 0.05)
    os.close(rd)
    rc = p.wait(timeout=60)
    os.close(master)
    return rc, out, signalled


def redraws(out):
    """[(time, text)] of each redraw, in order."""
    stream = b""
    marks = []
    for t, d in out:
        stream += d
        marks.append((t, len(stream)))
    res = []
    pos = 0
    for m in re.finditer(rb"\r\x1b\[K", stream):
        pos = m.end()
        end = stream.find(b"\r", pos)
        end = len(stream) if end < 0 else end
        t = next(t for t, ln in marks if ln >= pos)
        res.append((t, stream[pos:end].decode("utf-8", "replace")))
    return stream, res


with tempfile.TemporaryDirectory() as tmp:
    for cols in (80, 40):
        rc, out, _ = run(cols, tmp, "w%d" % cols)
        stream, rd = redraws(out)
        check(rc == 0, "%d columns: the dump exits 0 (%d)" % (cols, rc))
        check(len(rd) >= 5, "%d columns: redraws in place (%d)" % (cols, len(rd)))
        # One physical line: only the newline after the last redraw (the
        # summary goes to stdout).
        text = stream.decode("utf-8", "replace")
        check(text.count("\n") == 1 and text.endswith("\n"),
              "%d columns: one physical line (%d newlines)"
              % (cols, text.count("\n")), repr(text[-400:]))
        wide = [r for _, r in rd if len(r) > cols - 1]
        check(not wide, "%d columns: no redraw wider than %d columns "
              "(widest %d)" % (cols, cols - 1, max(len(r) for _, r in rd)),
              "\n".join(wide[:3]))
        last = rd[-1][1]
        m = re.match(r"100\.0%  ([\d.]+ \w+) of ([\d.]+ \w+)", last)
        check(m is not None and m.group(1) == m.group(2) and "done" in last,
              "%d columns: the last redraw says 100.0%%, X of X, done (%r)"
              % (cols, last))
        if cols != 80:
            continue
        # The slow part: before the drain speeds up (4 s in).  At 40
        # columns the line holds what has been done of the total and what
        # comes next or a phase, which need not change while the dump
        # waits.
        t0 = out[0][0]
        slow = [(t, r) for t, r in rd if t - t0 < 3.8]
        changes = [slow[0][0]] + [t for (t, r), (_, q) in zip(slow[1:], slow)
                                  if r != q]
        gaps = [b - a for a, b in zip(changes, changes[1:])]
        span = slow[-1][0] - slow[0][0]
        check(len(changes) >= span and (not gaps or max(gaps) <= 1.5),
              "%d columns: while the dump waits the line changes at least "
              "once a second (%d changes in %.1f s, longest gap %.2f s)"
              % (cols, len(changes), span, max(gaps) if gaps else 0),
              "\n".join("%.2f %s" % (t - t0, r) for t, r in slow))
        check(any(re.search(r"ETA \d+:\d\d:\d\d(,|$)", r) for _, r in slow),
              "80 columns: the ETA reads h:mm:ss",
              "\n".join(r for _, r in slow[:5]))

    rc, out, signalled = run(80, tmp, "sigint", sigint_at=1.5)
    stream, rd = redraws(out)
    stop = [t for t, r in rd if "stopping…" in r]
    check(rc != 0, "SIGINT: the dump exits non-zero (%d)" % rc)
    check(bool(stop) and signalled is not None and stop[0] - signalled < 1.0,
          "SIGINT: 'stopping…' is drawn within a second (%s)"
          % ("%.2f s" % (stop[0] - signalled) if stop and signalled else "never"),
          repr(stream[-400:]))
    check(all(len(r) <= 79 for _, r in rd), "SIGINT: no redraw wider than 79")

print("1..%d" % n)
sys.exit(1 if failed else 0)
