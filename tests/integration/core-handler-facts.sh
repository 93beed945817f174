#!/bin/bash
# SPDX-License-Identifier: MIT
# kcoredump core-handler as this machine's core_pattern records what
# systemd-coredump records of a crashing process (read from /proc/PID
# while it dumps): the full command line (longer than the 80 bytes of
# PRPSINFO), cwd, root, cgroup, boot and machine ID, rlimits, open fds
# with their targets; the environment only with --record-environ, and
# show prints it to root only.  show prints them with coredumpctl's
# labels, show --json has them in the record.  A program linked with an
# FDO package note: its package (name with a quote escaped) in the
# metadata and show, for a sparse ELF and a .zst core.
#
# Changes /proc/sys/kernel/core_pattern: only under the lock
# /tmp/kcd-core-pattern.lock (other tests change it too), and puts the
# old pattern back on every exit.  Needs root.
#   core-handler-facts.sh KCOREDUMP
set -uo pipefail
kcoredump=$(readlink -f "$1")
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3

core_pattern_setup chfacts jq flock setpriv

# install DIR ARGS...: the handler as core_pattern, storing into DIR, in
# the form --print-pattern prints (lib.sh: install_handler).
install() {
	install_handler "$@" || bail_out "cannot install the handler as core_pattern"
}
jqcheck() { # WHAT FILE [JQ-OPTIONS...] FILTER
	if jq -e "${@:3}" "$2" >/dev/null; then
		ok "$1"
	else
		not_ok "$1"
		jq -c '{cmdline, cwd, root, cgroup, boot_id, rlimits, open_fds, environ}' "$2" 2>&1 | diag
	fi
}
hasnt() { # WHAT FILE FIXED-STRING
	if grep -qF -- "$3" "$2"; then
		not_ok "$1: '$3' is there"
	else
		ok "$1"
	fi
}

# The "crashing" process: python in a known directory, with a file open
# as fd 7, RLIMIT_NOFILE 777, a marked environment variable and a
# command line longer than PRPSINFO's 80 bytes; 16 MiB of data, so that
# the kernel is still writing (and the process in /proc) when the
# handler looks.  It dies of SIGSEGV.
work=$tmp/work
mkdir -p "$work"
echo held > "$work/held.txt"
zeros=$(printf ' 0%.0s' {1..40})
script='import time; b = b"x" * (16 << 20); time.sleep(1000)'
crash() { # prints the pid
	local i
	# shellcheck disable=SC2086 # the zeros are 40 arguments
	(exec 9>&- && cd "$work" && ulimit -n 777 && exec 7<"$work/held.txt" &&
		KCD_FACTS_SECRET=s3cr3t-value exec "$PY" -c "$script" $zeros) \
		>/dev/null 2>&1 &
	local pid=$!
	# Until it runs the script (its command line is python's).
	for ((i = 0; i < 300; i++)); do
		grep -qF time.sleep "/proc/$pid/cmdline" 2>/dev/null && break
		sleep 0.1
	done
	sleep 0.5
	kill -SEGV "$pid"
	wait "$pid" 2>/dev/null
	echo "$pid"
}
cmdline="$PY -c $script$zeros"
boot_id=$(cat /proc/sys/kernel/random/boot_id)

# --- 1. with --record-environ --------------------------------------------
d=$tmp/s1
install "$d" --record-environ
pid=$(crash)
if m=$(wait_meta "$d" "$pid"); then
	jqcheck "full command line (${#cmdline} bytes, PRPSINFO has $(jq '.prpsinfo_args | length' "$m"))" \
		"$m" --arg c "$cmdline" '.cmdline == $c and (.prpsinfo_args | length) < ($c | length)'
	jqcheck "cwd $work, root /" "$m" --arg w "$work" '.cwd == $w and .root == "/"'
	jqcheck "fd 7 is $work/held.txt, read-only at position 0" "$m" \
		--arg t "$work/held.txt" '[.open_fds[] | select(.fd == 7)][0] |
		.target == $t and .pos == 0 and (.flags | test("[04]$"))'
	jqcheck "rlimits: open_files 777 soft and hard" "$m" \
		'.rlimits.open_files.soft == "777" and .rlimits.open_files.hard == "777"'
	jqcheck "boot ID $boot_id, machine ID, hostname" "$m" --arg b "$boot_id" \
		'.boot_id == $b and (.hostname | length > 0) and
		(.machine_id == null or (.machine_id | test("^[0-9a-f]{32}$")))'
	cg=$(sed -n 's/^0:://p' "/proc/self/cgroup")
	jqcheck "cgroup ${cg:-?} and its slice" "$m" --arg c "$cg" '.cgroup == $c and (.slice | endswith(".slice"))'
	jqcheck "the environment has KCD_FACTS_SECRET" "$m" \
		'.environ | index("KCD_FACTS_SECRET=s3cr3t-value") != null'
	out=$tmp/show1
	"$kcoredump" show --dir "$d" "$pid" >"$out" 2>&1
	has "show: Command Line is the full one" "$out" "Command Line: ${cmdline//\"/\\\"}"
	has "show: CWD" "$out" "CWD: $work"
	has "show: Root" "$out" "Root: /"
	has "show: Control Group" "$out" "Control Group: $cg"
	has "show: Boot ID" "$out" "Boot ID: $boot_id"
	has "show: open fd 7" "$out" "7:$work/held.txt"
	has "show: rlimit" "$out" "open_files soft 777 hard 777 files"
	has "show to root: the environment" "$out" "KCD_FACTS_SECRET=s3cr3t-value"
	"$kcoredump" show --json --dir "$d" "$pid" >"$tmp/show1.json" 2>&1
	jqcheck "show --json: the record has cwd, cmdline, open_fds, environ" "$tmp/show1.json" \
		--arg w "$work" --arg c "$cmdline" '.cores[0].record | .cwd == $w and .cmdline == $c and
		(.open_fds | length) > 0 and (.environ | length) > 0'
	# Another user reading the same store: no environment.
	pub=$tmp/pub
	cp -a "$d" "$pub"
	chmod -R a+rX "$pub"
	setpriv --reuid 65534 --regid 65534 --clear-groups \
		"$kcoredump" show --dir "$pub" "$pid" >"$tmp/show1.nobody" 2>&1
	has "show as nobody: CWD still" "$tmp/show1.nobody" "CWD: $work"
	hasnt "show as nobody: no environment" "$tmp/show1.nobody" "KCD_FACTS_SECRET"
	hasnt "show as nobody: no Environment row" "$tmp/show1.nobody" "Environment:"
else
	not_ok "crash with --record-environ: no metadata for pid $pid in $d"
fi

# --- 2. without it: no environment ------------------------------------------
d=$tmp/s2
install "$d"
pid=$(crash)
if m=$(wait_meta "$d" "$pid"); then
	jqcheck "without --record-environ: no environ member, the rest there" "$m" \
		--arg w "$work" 'has("environ") == false and .cwd == $w'
	"$kcoredump" show --dir "$d" "$pid" >"$tmp/show2" 2>&1
	hasnt "without --record-environ: show has no environment" "$tmp/show2" "KCD_FACTS_SECRET"
else
	not_ok "crash without --record-environ: no metadata for pid $pid in $d"
fi

# --- 3. a module's package note --------------------------------------------
# A program linked with an FDO packaging metadata note (ld
# --package-metadata: .note.package in the first page's PT_NOTE), in a
# .zst and a sparse ELF core.
prog=$tmp/kcd-pkg
printf '#include <unistd.h>\nint main(void) { for (;;) pause(); }\n' >"$tmp/pkg.c"
pkgjson='{"type":"deb","name":"kcd-\"test","version":"1.2-3","architecture":"amd64"}'
if command -v cc >/dev/null &&
	cc -o "$prog" "$tmp/pkg.c" -Xlinker "--package-metadata=$pkgjson" 2>"$tmp/cc.err"; then
	for fmt in none zstd; do
		d=$tmp/p-$fmt
		install "$d" --compress $fmt
		(exec 9>&- && exec "$prog") >/dev/null 2>&1 &
		pid=$!
		sleep 0.5
		kill -SEGV "$pid"
		wait "$pid" 2>/dev/null
		if m=$(wait_meta "$d" "$pid"); then
			id=$(jq -r --arg f "$prog" '.build_ids[] | select(.name == $f) | .build_id' "$m")
			jqcheck "$fmt core: the package note of $prog (build ID ${id:-?})" "$m" \
				--arg f "$prog" --arg id "$id" '.packages | length == 1 and
				.[0].file == $f and .[0].build_id == $id and .[0].type == "deb" and
				.[0].name == "kcd-\"test" and .[0].version == "1.2-3" and
				.[0].architecture == "amd64"'
			"$kcoredump" show --dir "$d" "$pid" >"$tmp/show-$fmt" 2>&1
			has "$fmt core: show prints the package" "$tmp/show-$fmt" \
				'Package:  kcd-\"test 1.2-3 (deb) in '"$prog"
		else
			not_ok "$fmt core of a packaged program: no metadata for pid $pid in $d"
		fi
	done
else
	skip "package note: cannot link a program with --package-metadata ($(head -c 200 "$tmp/cc.err" 2>/dev/null))"
fi
finish
