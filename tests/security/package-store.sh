#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 27 item 9: the package's store and pattern.
#  - debian/kcoredump.tmpfiles set /var/lib/kcoredump to 0700 at every
#    boot, which resets the ACL mask: users lost the access --owner user
#    grants them.  systemd-tmpfiles, run twice on a root of our own with
#    an ACL granted in between, must keep the ACL's mask; a new store is
#    still created 0700 root.
#  - the commented pattern in debian/50-kcoredump-core-pattern.conf is the
#    one --print-pattern prints (it lacked --dump-mode=%d).
#   package-store.sh KCOREDUMP DEBIAN-DIR
set -uo pipefail
kcoredump=$1 debian=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

printed=$("$kcoredump" core-handler --print-pattern)
# The pipe line (the socket line beside it is for the socket unit).
shipped=$(sed -n 's/^#kernel.core_pattern = \(|\)/\1/p' "$debian/50-kcoredump-core-pattern.conf")
check "the shipped pattern is what --print-pattern prints: '$shipped'" \
	[ "${shipped#|/usr/bin/kcoredump }" = "${printed#|* }" -a -n "$shipped" ]

if ! command -v systemd-tmpfiles >/dev/null; then
	echo "# SKIP the tmpfiles checks: no systemd-tmpfiles"
	finish
fi
root=$tmp/root
mkdir "$root"
cp "$debian/kcoredump.tmpfiles" "$tmp/kcoredump.conf" # it wants .conf
systemd-tmpfiles --create --root="$root" "$tmp/kcoredump.conf" 2>"$tmp/err"
sed 's/^/# /' "$tmp/err"
check "tmpfiles creates the store" [ -d "$root/var/lib/kcoredump" ]
mode=$(stat -c '%a %U' "$root/var/lib/kcoredump" 2>/dev/null)
check "0700 root ($mode)" [ "$mode" = "700 root" ]
# acl ENTRIES...: "tag perm id" triples as system.posix_acl_access.
acl() {
	"$PY" - "$root/var/lib/kcoredump" "$@" <<'PY'
import os, struct, sys
path, op = sys.argv[1], sys.argv[2]
name = "system.posix_acl_access"
if op == "set":   # USER_OBJ rwx, USER 1000 r-x, GROUP_OBJ ---, MASK r-x, OTHER ---
    ents = [(0x01, 7, 0xFFFFFFFF), (0x02, 5, 1000), (0x04, 0, 0xFFFFFFFF),
            (0x10, 5, 0xFFFFFFFF), (0x20, 0, 0xFFFFFFFF)]
    os.setxattr(path, name, struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in ents))
else:             # the mask's permissions
    b = os.getxattr(path, name)
    ents = [struct.unpack_from("<HHI", b, 4 + 8 * i) for i in range((len(b) - 4) // 8)]
    print([p for t, p, i in ents if t == 0x10][0])
PY
}
if ! acl set 2>"$tmp/err"; then
	echo "# SKIP the ACL check: $(tail -n 1 "$tmp/err") (no ACLs on $tmp's file system)"
	finish
fi
systemd-tmpfiles --create --root="$root" "$tmp/kcoredump.conf" 2>"$tmp/err"
mask=$(acl get 2>/dev/null)
check "a second run (a boot) keeps the ACL's mask r-x (mask $mask)" [ "$mask" = 5 ]
finish
