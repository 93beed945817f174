#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2016 # $x in the jq filters is jq's
# Host: kcoredump's `info --json /proc/kcore` against the kernel's own views.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
j=$d/info.json
guest_rc_ok "$d"
rel=$(cat "$d/uname-r")

jqcheck "info.json is one JSON document" "$j" '. != null'
jqcheck "source.kind is live-kcore" "$j" '.source.kind == "live-kcore"'
jqcheck "source.machine is x86_64, little endian, 4 KiB pages" "$j" \
	'.source.machine == "x86_64" and .source.byte_order == "little" and .source.page_size == 4096'
jqcheck "source.kernel_release is '$rel'" "$j" '.source.kernel_release == $r' --arg r "$rel"
jqcheck "VMCOREINFO OSRELEASE is '$rel'" "$j" '.vmcoreinfo.lines.OSRELEASE == $r' --arg r "$rel"
jqcheck "addresses are \"0x...\" strings" "$j" \
	'[.segments[] | .vaddr, .offset] | all(type == "string" and startswith("0x"))'
jqcheck "segments of class ram, text, vmalloc, modules" "$j" \
	'[.segments[].class] as $c | ["ram", "text", "vmalloc", "modules"] | all(. as $x | $c | index($x))'
vmcheck kcore-info "$d"
exit $fail
