#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: the host checks of every case arm64-smoke.sh ran.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
run_host_group "$1" arm64-kcore pid-live
