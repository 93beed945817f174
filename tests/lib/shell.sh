# shellcheck shell=bash
# SPDX-License-Identifier: MIT
# Sourced by every script that runs under `set -e` (the README commands,
# the VM rig, the kernel helpers, bench/): two habits that keep a failure
# from being silent.
#
# kcd_trap_errors: an ERR trap that names the script, the line and the
# command that failed, so `set -e` never ends a script with a bare exit 1.
#
# kcd_newest_entry DIR ERE: the newest (sort -V) subdirectory of DIR whose
# name matches ERE and that holds a .complete marker, or nothing.  It never
# fails: an empty or missing cache is the normal first run, and a
# `find | grep | sort` pipeline in a `$(...)` under pipefail would end the
# script there (issue 14: grep exits 1 when nothing matches).

kcd_trap_errors()
{
	set -o errtrace
	trap 'kcd__report_error $? "${BASH_SOURCE[0]:-$0}" "$LINENO" "$BASH_COMMAND"' ERR
}

kcd__report_error()
{
	# Only the script's own shell reports: inside $(...), a pipeline or
	# ( ... ) a failure may be harmless (without inherit_errexit, set -e
	# does not apply there), and when it is not, the statement that ran
	# the subshell fails too and is reported here.
	((BASH_SUBSHELL == 0)) || return 0
	echo "$(basename "$2"): line $3: '$4' failed (exit status $1)" >&2
}

kcd_newest_entry()
{
	local dir=$1 re=$2 d names=()
	for d in "$dir"/*/; do
		d=${d%/}
		d=${d##*/}
		if [[ "$d" =~ $re && -f "$dir/$d/.complete" ]]; then
			names+=("$d")
		fi
	done
	if ((${#names[@]})); then
		printf '%s\n' "${names[@]}" | sort -V | tail -n 1
	fi
	return 0
}
