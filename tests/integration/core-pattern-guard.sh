#!/bin/bash
# SPDX-License-Identifier: MIT
# A crash test killed outright (ctest's timeout sends SIGKILL, so no EXIT
# trap runs) leaves this machine as it found it: core_pattern_setup's
# guardian puts core_pattern, core_pipe_limit and suid_dumpable back and
# removes the test's store, and until then holds the lock that keeps the
# next crash test out.  Needs root; changes the settings under the lock.
#   core-pattern-guard.sh KCOREDUMP
set -uo pipefail
kcoredump=$(readlink -f "$1")
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP needs root to set core_pattern"
	exit 77
fi
command -v setsid >/dev/null || { echo "1..0 # SKIP no setsid"; exit 77; }
out=$(mktemp -d /tmp/kcd-guard-test.XXXXXX)
trap 'rm -rf "$out"' EXIT

# A child test that changes all three settings, says where its store is,
# and waits to be killed.
cat > "$out/child.sh" <<CHILD
#!/bin/bash
set -uo pipefail
kcoredump=$kcoredump
. "$(dirname "$(readlink -f "$0")")/lib.sh"
core_pattern_setup guardchild
install_handler "\$tmp/store" || exit 1
[ -w /proc/sys/kernel/core_pipe_limit ] && echo 7 > /proc/sys/kernel/core_pipe_limit
[ -w /proc/sys/fs/suid_dumpable ] && echo 2 > /proc/sys/fs/suid_dumpable
echo "\$tmp" > "$out/tmp"
cat /proc/sys/kernel/core_pattern > "$out/pattern"
exec sleep 600 9>&-
CHILD
chmod +x "$out/child.sh"

# Take the lock first, so the settings read below are the ones the child
# will find (no other crash test is running).
exec 8>/tmp/kcd-core-pattern.lock
flock 8
before=$(cat /proc/sys/kernel/core_pattern)
limit=$(cat /proc/sys/kernel/core_pipe_limit)
dumpable=$(cat /proc/sys/fs/suid_dumpable)
flock -u 8
exec 8>&-

"$out/child.sh" &
child=$!
for ((i = 0; i < 200; i++)); do
	[ -s "$out/pattern" ] && break
	sleep 0.1
done
if [ ! -s "$out/pattern" ]; then
	not_ok "the child test installed its handler"
	kill -9 "$child" 2>/dev/null
	finish
fi
store=$(cat "$out/tmp")
case $(cat "$out/pattern") in
"|"*"core-handler"*"--dir $store/store"*) ok "the child test's pattern names its store: $(cat "$out/pattern")" ;;  # lint-journal: a case pattern
*) not_ok "the child test's pattern: $(cat "$out/pattern")" ;;
esac
kill -9 "$child"
wait "$child" 2>/dev/null

# The guardian polls twice a second; give it 20 s on a loaded machine.
for ((i = 0; i < 200; i++)); do
	[ "$(cat /proc/sys/kernel/core_pattern)" = "$before" ] && [ ! -e "$store" ] && break
	sleep 0.1
done
check "SIGKILLed: core_pattern back to '$before'" \
	[ "$(cat /proc/sys/kernel/core_pattern)" = "$before" ]
check "SIGKILLed: core_pipe_limit back to $limit" \
	[ "$(cat /proc/sys/kernel/core_pipe_limit)" = "$limit" ]
check "SIGKILLed: suid_dumpable back to $dumpable" \
	[ "$(cat /proc/sys/fs/suid_dumpable)" = "$dumpable" ]
check "SIGKILLed: the child's store is removed" [ ! -e "$store" ]
# The lock is free again once the guardian is done.
check "the lock is released" flock -w 20 /tmp/kcd-core-pattern.lock true
finish
