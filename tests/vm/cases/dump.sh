#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: every `kcoredump dump` case in one boot, each into /results/<case>/.
# dump.host.sh runs the matching host checks.
. /cases/group-lib.sh
run_group dump-range dump-verify-zst dump-vmalloc dump-ram
