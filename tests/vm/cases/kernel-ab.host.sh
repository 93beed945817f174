#!/bin/bash
# SPDX-License-Identifier: MIT
# Host: kernel-ab.sh's cores are checked (and compared with KCD_REFERENCE's,
# if set) by kernel-coredump.host.sh; the timings are bench/kernel-ab.sh's.
exec bash "$VM_HERE/cases/kernel-coredump.host.sh" "$@"
