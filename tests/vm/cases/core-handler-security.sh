#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest: kcoredump core-handler as the kernel's core_pattern pipe against
# attackers (issue 15), installed with --owner user:
#   setuid   a setuid-root program run by uid 1000 crashes with
#            suid_dumpable=2 (dump mode 2): the core must be root's only
#   plain    the same program, not setuid: uid 1000 may read its core
#   linkmap  a process of uid 1000 rewrites its link map to a FIFO and a
#            canary and aborts: the handler must finish at once and never
#            open either (inotify: fswatch)
#   comm     a task named with an escape sequence: the kernel log shows it
#            escaped
# core-handler-security.host.sh reads what is left in $OUT.
set -eu
K=$KCOREDUMP
st=/tmp/st
mkdir -p "$st" /opt /tmp/lm
chmod 700 "$st"
chmod 1777 /tmp/lm
echo 2 > /proc/sys/fs/suid_dumpable
"$K" core-handler --dir "$st" --owner user --timeout 60 --print-pattern > "$OUT/pattern.txt"
"$K" core-handler --dir "$st" --owner user --timeout 60 --install > /dev/null
cat /proc/sys/kernel/core_pattern > "$OUT/core_pattern.txt"
cp /helpers/crash-name /opt/crash-setuid
cp /helpers/crash-name /opt/crash-plain
chown 0:0 /opt/crash-setuid /opt/crash-plain
chmod 4755 /opt/crash-setuid
chmod 755 /opt/crash-plain
chmod 777 "$OUT"

up() { cut -d' ' -f1 /proc/uptime; }
# meta PID: wait (bounded) for the metadata of pid PID anywhere in the store.
meta() {
	i=0
	while [ $i -lt 300 ]; do
		for m in "$st"/core.*."$1".*.json "$st"/user.*/core.*."$1".*.json; do
			[ -f "$m" ] && { echo "$m"; return 0; }
		done
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
pid_of() { awk '$1 == "pid" { print $2 }' "$1"; }

# --- setuid and plain ---------------------------------------------------------
for p in setuid plain; do
	runas 1000 1000 /opt/crash-$p "$p" "$OUT/$p.txt" || true
	m=$(meta "$(pid_of "$OUT/$p.txt")") || { echo "$p: no metadata"; exit 1; }
	cp "$m" "$OUT/$p.json"
	echo "$m" > "$OUT/$p.where"
	stat -c "%u:%g %a" "${m%.json}" "$m" > "$OUT/$p.stat"
	if runas 1000 1000 /bin/cat "${m%.json}" > /dev/null 2>&1; then
		echo yes > "$OUT/$p.user-reads"
	else
		echo no > "$OUT/$p.user-reads"
	fi
done
runas 1000 1000 "$K" list --dir "$st" --json > "$OUT/user-list.json" 2>&1 || true
if runas 1000 1000 /bin/ls "$st" > /dev/null 2>&1; then echo yes; else echo no; fi > "$OUT/user-lists-store"

# --- a lying link map -----------------------------------------------------------
mkfifo /tmp/lm/fifo
echo secret > /tmp/lm/canary
mkdir -p "$st/user.1000" # made by the plain crash already
fswatch "$OUT/linkmap.events" /tmp/lm/canary "$st" "$st/user.1000" > /tmp/fswatch.ready &
w=$!
i=0
while [ ! -s /tmp/fswatch.ready ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
t0=$(up)
runas 1000 1000 /tools/linkmap-crash --abort /tmp/lm/fifo /tmp/lm/canary /tmp/lm/fifo \
	> "$OUT/linkmap.txt" 2>&1 || true
lpid=$(awk '$1 == "ready" { print $2 }' "$OUT/linkmap.txt")
m=$(meta "$lpid") || { echo "linkmap: no metadata"; kill "$w"; exit 1; }
awk -v a="$t0" -v b="$(up)" 'BEGIN { printf "%.3f\n", b - a }' > "$OUT/linkmap.secs"
cp "$m" "$OUT/linkmap.json"
sleep 0.5
kill "$w" 2>/dev/null || true
grep -a "lm/fifo" "${m%.json}" > /dev/null && echo yes > "$OUT/linkmap.lie-in-core" || echo no > "$OUT/linkmap.lie-in-core"

# --- the kernel log -------------------------------------------------------------
/opt/crash-plain "$(printf '\033[31mred\007')" "$OUT/comm.txt" || true
meta "$(pid_of "$OUT/comm.txt")" > /dev/null || true
dmesg | grep 'kcoredump\[' > "$OUT/kmsg.txt" || true
echo 'core' > /proc/sys/kernel/core_pattern
echo 0 > /proc/sys/fs/suid_dumpable
echo 'all done'
