#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest (not a case of the rig): a case that never ends, for
# tests/vm/selftest/timeout.sh.
echo "waiting for a file that never comes"
sleep 100000
