#!/bin/bash
# SPDX-License-Identifier: MIT
# README command (2): install what is missing, build warning-free, and run
# the test suite: unit, integration, lint and the real-kernel VM smoke tests
# (the first run downloads Debian's 6.12 kernel into ~/.cache/kcoredump).
set -euo pipefail
# shellcheck source=../tests/lib/shell.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/shell.sh"
kcd_trap_errors
cd "$(dirname "$0")/.."

scripts/install-deps.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKCOREDUMP_WERROR=ON
cmake --build "$build" -j"$(nproc)"
# Opt-in tiers (label heavy, kernel, matrix) need big downloads, kernel
# builds or hours of VM boots (the matrix: every case x kernel x arch).
ctest --test-dir "$build" --output-on-failure -LE 'heavy|kernel|matrix' "$@"
