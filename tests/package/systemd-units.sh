#!/bin/bash
# SPDX-License-Identifier: MIT
# The systemd units of the coredump socket handler (debian/): systemd-
# analyze verify finds nothing to say about kcoredump-coredump.socket and
# kcoredump-coredump@.service (ExecStart pointed at the build's binary,
# which verify requires to exist), and they are what README.Debian and
# kcoredump(8) promise: the kernel's socket path, root's 0600, one
# service per connection (Accept=yes, at most 16), the service as the
# kcoredump user with no capabilities in systemd-coredump's sandbox; the
# sysusers.d entry creates that user.
#   systemd-units.sh SOURCE_DIR KCOREDUMP
set -euo pipefail
src=$1 kcoredump=$2
# shellcheck source=../lib/shell.sh
. "$src/tests/lib/shell.sh"
# shellcheck source=../lib/tap.sh
. "$src/tests/lib/tap.sh"
kcd_trap_errors
command -v systemd-analyze > /dev/null ||
	{ echo "systemd-units: systemd-analyze is missing (package systemd)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sock=$src/debian/kcoredump-coredump.socket
svc=$src/debian/kcoredump-coredump@.service
for f in "$sock" "$svc" "$src/debian/kcoredump.sysusers"; do
	[[ -f $f ]] || { echo "systemd-units: $f is missing" >&2; exit 1; }
done
cp "$sock" "$svc" "$tmp/"
sed -i "s|^ExecStart=/usr/bin/kcoredump |ExecStart=$kcoredump |" "$tmp/kcoredump-coredump@.service"
grep -q "^ExecStart=$kcoredump core-handler" "$tmp/kcoredump-coredump@.service" ||
	not_ok "ExecStart runs /usr/bin/kcoredump core-handler"
for u in kcoredump-coredump.socket kcoredump-coredump@.service; do
	rc=0
	(cd "$tmp" && systemd-analyze verify --man=no "./$u") > "$tmp/out" 2>&1 || rc=$?
	if [[ $rc -eq 0 && ! -s $tmp/out ]]; then
		ok "systemd-analyze verify $u: nothing to say"
	else
		not_ok "systemd-analyze verify $u (exit $rc): $(head -c 600 "$tmp/out")"
	fi
done
# key=value lines the units must have.
has() { # FILE LINE...
	local f=$1 l
	shift
	for l in "$@"; do
		if grep -qxF -- "$l" "$f"; then
			ok "${f##*/}: $l"
		else
			not_ok "${f##*/}: no line '$l'"
		fi
	done
}
has "$sock" ListenStream=/run/kcoredump/coredump.socket SocketMode=0600 \
	SocketUser=root Accept=yes MaxConnections=16
has "$svc" User=kcoredump CapabilityBoundingSet= NoNewPrivileges=yes \
	ProtectSystem=strict ReadWritePaths=/var/lib/kcoredump-socket \
	ProtectHome=yes PrivateTmp=yes PrivateNetwork=yes \
	RestrictAddressFamilies=AF_UNIX SystemCallFilter=@system-service
grep -qE '^u kcoredump ' "$src/debian/kcoredump.sysusers" &&
	ok "sysusers.d creates the kcoredump user" ||
	not_ok "sysusers.d: no 'u kcoredump' line"
# The socket path is the one core-handler --install looks for.
"$kcoredump" core-handler --help | grep -q -- '--socket PATH' &&
	grep -q '/run/kcoredump/coredump.socket' "$src/man/kcoredump.8" &&
	ok "kcoredump(8) names /run/kcoredump/coredump.socket" ||
	not_ok "core-handler --socket or the socket path in kcoredump(8)"  # lint-journal: a message
# Shipped disabled: nothing in debian/ enables them.
if grep -qE 'dh_installsystemd|systemctl enable' "$src/debian/rules" &&
	! grep -q -- '--no-enable' "$src/debian/rules"; then
	not_ok "debian/rules enables the units"
else
	ok "debian/rules does not enable the units"
fi
finish
