#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: all quick cases in one boot, each into /results/<case>/.
# smoke.host.sh runs the matching host checks.
. /cases/group-lib.sh
run_group static-bin info-kcore read-kcore cat-kcore process-cores timing
