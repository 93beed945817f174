#!/bin/bash
# SPDX-License-Identifier: MIT
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2016 # $x in the jq filters is jq's
# Host: the real process cores, read by kcoredump on the host and by our
# own ELF parser (vmcheck.py), against what the helpers said they did.
# shellcheck source=../lib/host-common.sh
source "$VM_HERE/lib/host-common.sh"
d=$1
guest_rc_ok "$d"
sed 's/^/# /' "$d/dump-times" 2>/dev/null || true
for h in crash-dense crash-sparse; do
	core=$d/cores/$h.core
	[[ -f "$core" ]] || { not_ok "$h: no core"; continue; }
	extra=()
	[[ $h == crash-sparse ]] && extra+=(--sparse)
	if "$KCOREDUMP" info --json "$core" > "$d/$h.info.json"; then
		ok "$h: kcoredump info --json on the host"
		extra+=(--info "$d/$h.info.json")
		# Same data and holes (sparsecp keeps them); the path, the file
		# system and which module files exist locally differ.
		jqcheck "$h: kcoredump info on the guest's tmpfs core and the host copy agree" \
			"$d/$h.info.json" \
			'def n: del(.source.path, .source.allocated_bytes)
				| .modules |= map({name, start, "end": .["end"], build_id});
			 n == ($g[0] | n)' \
			--slurpfile g "$d/$h.guest-info.json"
	else
		not_ok "$h: kcoredump info --json on the host failed"
	fi
	vmcheck core "$core" "$d/$h.txt" "${extra[@]}"
done
exit $fail
