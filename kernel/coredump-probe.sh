#!/bin/bash
# SPDX-License-Identifier: MIT
# kernel/coredump-probe.sh [GIB]: build kernel/test/coredump-probe.c and
# run it on this machine's kernel (6.17 or later: "@@" core patterns)
# with core_pattern "@@<its socket>", under the lock every core_pattern
# test shares, the old pattern restored on exit (tests/integration/lib.sh
# core_pattern_setup).  Prints what a COREDUMP_USERSPACE | COREDUMP_WAIT
# server can read of the dying process (see the program's comment).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../tests/lib/shell.sh
. "$here/../tests/lib/shell.sh"
kcd_trap_errors
# shellcheck source-path=SCRIPTDIR source=../tests/integration/lib.sh
. "$here/../tests/integration/lib.sh"
core_pattern_setup coredump-probe gcc
# shellcheck disable=SC2154 # core_pattern_setup made $tmp
gcc -O2 -Wall -o "$tmp/coredump-probe" "$here/test/coredump-probe.c" -lpthread
echo "@@$tmp/probe.sock" > /proc/sys/kernel/core_pattern
timeout 300 "$tmp/coredump-probe" "$tmp/probe.sock" "${1:-64}"
