#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest (arm64, tests/vm/run.sh --arch arm64): the arm64 cases in one boot,
# each into /results/<case>/.  Needs --tool-src tests/tools/pidtarget.c.
. /cases/group-lib.sh
run_group arm64-kcore pid-live
