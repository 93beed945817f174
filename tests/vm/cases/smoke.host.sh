#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# Host: the host checks of every case smoke.sh ran, each on its subdir.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
run_host_group "$1" static-bin info-kcore read-kcore cat-kcore process-cores timing
