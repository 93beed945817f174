#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest (Linux 6.17 or later; the rig's 7.3): kcoredump core-handler on
# the kernel's coredump socket.  A listener (core-handler --socket, a
# child per connection: the guest has no systemd) on
# /run/kcoredump/coredump.socket; --install picks "@@" (the request
# protocol); crash-dense (3 threads, anon + file data), crash-sparse (GIB
# GiB NORESERVE, 4 touched pages) and crash-dense inside unshare -pfm
# (another PID and mount namespace) crash into it; the kernel's own
# regular-file cores of the same programs (ASLR off) are kept to compare;
# then the same with "@" (no request).  core-socket.host.sh checks.
set -eu

GIB=${1:-1}
K=$KCOREDUMP
SOCK=/run/kcoredump/coredump.socket
mkdir -p /run/kcoredump /tmp/ks /tmp/file "$OUT/cores"
chmod 700 /tmp/ks
# shellcheck disable=SC3045 # busybox ash has ulimit -c
ulimit -c unlimited
echo 0 > /proc/sys/kernel/randomize_va_space
cp /helpers/crash-dense /helpers/crash-sparse "$OUT/"
uname -r > "$OUT/uname.txt"
cat /proc/sys/kernel/core_modes > "$OUT/core_modes.txt" 2>/dev/null || true

# Wait (bounded) until DIR holds N metadata files; print the newest.
wait_count() {
	i=0
	while [ $i -lt 900 ]; do
		n=$(find "$1" -maxdepth 1 -name 'core.*.json' | wc -l)
		if [ "$n" -ge "$2" ]; then
			ls -t "$1"/core.*.json | head -n 1
			return 0
		fi
		sleep 0.2
		i=$((i + 1))
	done
	echo "only $n of $2 metadata files in $1 after 180 s" >&2
	return 1
}

# shellcheck source-path=SCRIPTDIR source=socket-lib.sh
. /cases/socket-lib.sh
start_listener /tmp/ks "$SOCK" "$OUT/listener.log"
stat -c "%a %u" "$SOCK" > "$OUT/socket.stat"

"$K" core-handler -D /tmp/ks --print-pattern > "$OUT/pattern.txt"
"$K" core-handler -D /tmp/ks --install > "$OUT/installed.txt" 2> "$OUT/install.err"
cat /proc/sys/kernel/core_pattern > "$OUT/core_pattern.txt"

count=0
# crash_into MODE NAME: crash NAME's program, keep its metadata and core
# as MODE.NAME in $OUT.
crash_into() {
	mode=$1 name=$2
	rc=0
	case $name in
	crash-sparse) crash-sparse "$OUT/$mode.$name.txt" "$GIB" || rc=$? ;;
	container)
		# sh is the namespace's init; crash-dense its child.
		unshare -pfm sh -c "crash-dense '$OUT/$mode.$name.txt'; exit \$?" ||
			rc=$?
		;;
	*) "$name" "$OUT/$mode.$name.txt" || rc=$? ;;
	esac
	[ "$rc" -eq 134 ] || { echo "$mode $name: expected exit 134, got $rc"; exit 1; }
	count=$((count + 1))
	meta=$(wait_count /tmp/ks $count)
	cp "$meta" "$OUT/$mode.$name.json"
	sparsecp "${meta%.json}" "$OUT/cores/$mode.$name"
}

for h in crash-dense crash-sparse container; do
	crash_into request "$h"
done

# --- "@": the core at once, no request ---------------------------------------
echo "@$SOCK" > /proc/sys/kernel/core_pattern
cat /proc/sys/kernel/core_pattern > "$OUT/core_pattern.plain.txt"
crash_into plain crash-dense

# --- the kernel's regular-file cores of the same programs ---------------------
echo '/tmp/file/core.%p' > /proc/sys/kernel/core_pattern
for h in crash-dense crash-sparse; do
	rc=0
	if [ "$h" = crash-sparse ]; then
		crash-sparse "$OUT/file.$h.txt" "$GIB" || rc=$?
	else
		crash-dense "$OUT/file.$h.txt" || rc=$?
	fi
	[ "$rc" -eq 134 ] || { echo "file $h: expected exit 134, got $rc"; exit 1; }
	pid=$(awk '$1 == "pid" { print $2 }' "$OUT/file.$h.txt")
	sparsecp "/tmp/file/core.$pid" "$OUT/cores/file.$h"
	rm -f "/tmp/file/core.$pid"
done

kill "$listener"
wait "$listener" || true
"$K" list -D /tmp/ks --json > "$OUT/list.json"

# --- unprivileged: the handler as uid 999 (what kcoredump-coredump@.service
# runs as), --owner user; a plain and a setuid program of uid 1000 crash
# (suid_dumpable 2: the setuid one's core must stay the store owner's).
echo 2 > /proc/sys/fs/suid_dumpable
mkdir -p /tmp/ku /run/ku /opt
chown 999:999 /tmp/ku /run/ku
chmod 700 /tmp/ku
chmod 777 "$OUT"
cp /helpers/crash-name /opt/crash-setuid
cp /helpers/crash-name /opt/crash-plain
chown 0:0 /opt/crash-setuid /opt/crash-plain
chmod 4755 /opt/crash-setuid
chmod 755 /opt/crash-plain
runas 999 999 "$K" core-handler -D /tmp/ku --owner user --timeout 900 -v \
	--socket /run/ku/coredump.socket 2> "$OUT/unpriv.log" &
ulistener=$!
i=0
while [ ! -S /run/ku/coredump.socket ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
stat -c "%a %u" /run/ku/coredump.socket > "$OUT/unpriv-socket.stat"
echo "@@/run/ku/coredump.socket" > /proc/sys/kernel/core_pattern
umeta() { # PID: its metadata anywhere in the unprivileged store
	i=0
	while [ $i -lt 900 ]; do
		for m in /tmp/ku/core.*."$1".*.json /tmp/ku/user.*/core.*."$1".*.json; do
			[ -f "$m" ] && { echo "$m"; return 0; }
		done
		sleep 0.2
		i=$((i + 1))
	done
	echo "no metadata for pid $1 in /tmp/ku" >&2
	return 1
}
for p in plain setuid; do
	runas 1000 1000 /opt/crash-$p "$p" "$OUT/unpriv.$p.txt" || true
	m=$(umeta "$(awk '$1 == "pid" { print $2 }' "$OUT/unpriv.$p.txt")")
	cp "$m" "$OUT/unpriv.$p.json"
	echo "$m" > "$OUT/unpriv.$p.where"
	stat -c "%u %a" "${m%.json}" > "$OUT/unpriv.$p.stat"
	if runas 1000 1000 /bin/cat "${m%.json}" > /dev/null 2>&1; then
		echo yes > "$OUT/unpriv.$p.user-reads"
	else
		echo no > "$OUT/unpriv.$p.user-reads"
	fi
done
grep -E '^Cap(Eff|Prm)' "/proc/$ulistener/status" > "$OUT/unpriv-caps.txt" || true
kill "$ulistener"
wait "$ulistener" || true
echo 0 > /proc/sys/fs/suid_dumpable
echo 'core' > /proc/sys/kernel/core_pattern
echo 'all done'
