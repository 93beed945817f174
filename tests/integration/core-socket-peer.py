#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# The kernel's side of a coredump socket connection, played by a test
# (tests/integration/core-socket.sh): facts from include/uapi/linux/
# coredump.h and fs/coredump.c (Linux 6.17), no kernel code.
#
#   core-socket-peer.py MODE CORE OUT -- HANDLER ARGS...
#       run HANDLER with one end of a socketpair as its stdin and play
#       MODE on the other: "request" (send a coredump_req, read the ack,
#       send mark 0, then the core), "plain" (the core at once, as for
#       "@"), "reject" (a request offering no kernel write), "short" (8
#       bytes of a request, then the end), "garbage" (neither), "refuse"
#       (answer the ack with mark 3), "silent" (nothing, the handler's
#       timeout must end it).  OUT gets one JSON line: the ack bytes, the
#       handler's exit status, whether it closed its end after the core
#       (or "refused": it closed before all was sent).  The handler serves
#       only a task the kernel is dumping (PIDFD_COREDUMPED), which this
#       script never is: every MODE must be refused, nothing stored.
#   core-socket-peer.py connect MODE CORE OUT SOCKET
#       the same against a listening socket (no handler to run).
#   core-socket-peer.py listen-fd SOCKET -- HANDLER ARGS...
#       a listening socket on fd 3 with LISTEN_FDS=1 and LISTEN_PID set,
#       as systemd passes it, then one "request" connection to it (CORE,
#       OUT from the environment); with DONE=PATH, no connection of its
#       own: the kernel's (a crash the test makes), until PATH exists.
import json
import os
import socket
import struct
import subprocess
import sys
import time

KERNEL, USERSPACE, REJECT, WAIT = 1, 2, 4, 8


def play(sock, mode, core):
    """MODE on sock; a server that closes at once (it serves only the
    kernel's connections for a crash) leaves "refused" true."""
    res = {"mode": mode}
    try:
        return play_(sock, mode, core, res)
    except (ConnectionResetError, BrokenPipeError) as e:
        res["refused"] = True
        res["error"] = str(e)
        return res


def play_(sock, mode, core, res):
    if mode in ("request", "refuse"):
        sock.sendall(struct.pack("<IIQ", 16, 16,
                                 KERNEL | USERSPACE | REJECT | WAIT))
        ack = b""
        while len(ack) < 16:
            b = sock.recv(16 - len(ack))
            if not b:
                break
            ack += b
        res["ack"] = ack.hex()
        if len(ack) == 16:
            size, spare, mask = struct.unpack("<IIQ", ack)
            res["ack_size"], res["ack_spare"], res["ack_mask"] = \
                size, spare, mask
        sock.sendall(struct.pack("<I", 3 if mode == "refuse" else 0))
        if mode == "refuse":
            sock.shutdown(socket.SHUT_WR)
            return res
    elif mode == "reject":
        sock.sendall(struct.pack("<IIQ", 16, 16, REJECT | WAIT))
        sock.shutdown(socket.SHUT_WR)
        return res
    elif mode == "short":
        sock.sendall(struct.pack("<II", 16, 16))
        sock.shutdown(socket.SHUT_WR)
        return res
    elif mode == "garbage":
        sock.sendall(b"GARBAGE!" * 4)
        sock.shutdown(socket.SHUT_WR)
        return res
    elif mode == "silent":
        time.sleep(4)
        return res
    with open(core, "rb") as f:
        while True:
            b = f.read(1 << 16)
            if not b:
                break
            try:
                sock.sendall(b)
            except (ConnectionResetError, BrokenPipeError) as e:
                # The server closed early (a limit cut the core): the
                # kernel stops writing there, as on a pipe.
                res["closed"] = True
                res["closed_early"] = True
                res["error"] = str(e)
                return res
    # The kernel shuts its side down, then (COREDUMP_WAIT) reads until
    # the server closes.
    sock.shutdown(socket.SHUT_WR)
    sock.settimeout(120)
    try:
        res["after_core"] = sock.recv(1).hex()
        res["closed"] = True
    except OSError as e:
        res["closed"] = False
        res["error"] = str(e)
    return res


def main():
    argv = sys.argv[1:]
    if argv[0] == "connect":
        mode, core, out, path = argv[1:5]
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        res = play(s, mode, core)
        s.close()
    elif argv[0] == "listen-fd":
        path = argv[1]
        cmd = argv[argv.index("--") + 1:]
        core, out = os.environ["CORE"], os.environ["OUT"]
        ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ls.bind(path)
        ls.listen(4)
        os.dup2(ls.fileno(), 3, inheritable=True)

        def pre():
            os.environ["LISTEN_PID"] = str(os.getpid())
            os.environ["LISTEN_FDS"] = "1"

        # sh sets LISTEN_PID to its own pid, then execs the handler.
        p = subprocess.Popen(
            ["/bin/sh", "-c",
             'LISTEN_PID=$$ LISTEN_FDS=1 exec "$@"', "sh"] + cmd,
            pass_fds=(3,))
        if ls.fileno() != 3:
            os.close(3)
        if os.environ.get("DONE"):
            # The kernel connects (the test crashes a process): wait
            # until the test says it is over.
            res = {"mode": "kernel"}
            for _ in range(1200):
                if os.path.exists(os.environ["DONE"]):
                    break
                time.sleep(0.1)
        else:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            res = play(s, "request", core)
            s.close()
        # The handler serves until told to stop.
        time.sleep(1)
        p.terminate()
        res["rc"] = p.wait(timeout=60)
        ls.close()
    else:
        mode, core, out = argv[0:3]
        cmd = argv[argv.index("--") + 1:]
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        p = subprocess.Popen(cmd, stdin=b)
        b.close()
        res = play(a, mode, core)
        res["rc"] = p.wait(timeout=600)
        a.close()
    with open(out, "w") as f:
        json.dump(res, f)
        f.write("\n")


main()
