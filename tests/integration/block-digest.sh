#!/bin/bash
# The segment digests as kcoredump(8) "Digests" defines them, recomputed
# here from the dump's bytes by Python's hashlib and python3-xxhash (not by
# kcoredump's code): the default XXH3-128 block digests
# (hash=xxh3-128-blocklist-v1) and --hash sha256's SHA-256 ones
# (hash=sha256-blocklist-v1); verify checks each by the method its note
# names and finds a changed byte in a data block under either; --hash is
# checked for bad values.
#   block-digest.sh KCOREDUMP FIXTURES
set -uo pipefail
kcoredump=$1 fix=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
if ! command -v jq >/dev/null || ! "$py" -c 'import xxhash' 2>/dev/null; then
	echo "1..0 # SKIP jq or python3-xxhash (scripts/install-deps.sh) not installed"
	exit 77
fi

# recompute DUMP NOTE-HASH: the segment digests of DUMP's PT_LOADs, one per
# line, and then the root, computed with the method named.
recompute() {
	"$py" - "$1" "$2" <<'PYEOF'
import hashlib, struct, sys
import xxhash
path, method = sys.argv[1], sys.argv[2]
tag, digest = {
    "xxh3-128-blocklist-v1": (b"kcoredump-xxh3-128-v1\0", lambda b: xxhash.xxh3_128(b).digest()),
    "sha256-blocklist-v1": (b"kcoredump-sha256-v1\0", lambda b: hashlib.sha256(b).digest()),
}[method]
with open(path, "rb") as f:
    data = f.read()
phoff, = struct.unpack_from("<Q", data, 0x20)
phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
block = 1 << 20
segs = []
for i in range(phnum):
    p_type, _, off, _, _, filesz, memsz, _ = struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize)
    if p_type != 1:
        continue
    h = hashlib.sha256(tag + struct.pack("<Q", memsz))
    content = data[off:off + filesz] + bytes(memsz - filesz) if memsz < (1 << 32) else None
    if content is None:
        sys.exit("segment too large for this check")
    for idx in range(0, (memsz + block - 1) // block):
        b = content[idx * block:(idx + 1) * block]
        if b.count(0) != len(b):
            h.update(struct.pack("<Q", idx) + digest(b))
    segs.append(h.digest())
for s in segs:
    print(s.hex())
print(hashlib.sha256(b"".join(segs)).hexdigest())
PYEOF
}

src=$fix/vmcore-twocopies.core
for spec in "xxh3 xxh3-128-blocklist-v1 xxh3-128" "xxh3-128 xxh3-128-blocklist-v1 xxh3-128" \
	"default xxh3-128-blocklist-v1 xxh3-128" \
	"sha256 sha256-blocklist-v1 sha256"; do
	read -r m note name <<<"$spec"
	args=(--hash "$m")
	[ "$m" = default ] && args=()
	out=$tmp/$m.elf
	if ! "$kcoredump" convert -q --json ${args[@]+"${args[@]}"} --format elf "$src" \
		-o "$out" >"$tmp/$m.json" 2>"$tmp/err"; then
		not_ok "$m: convert failed: $(head -c 300 "$tmp/err")"
		continue
	fi
	check "$m: the summary names the block digest $name" \
		[ "$(jq -r .block_digest "$tmp/$m.json")" = "$name" ]
	# The note (or trailer) names the method.
	if grep -a -q "^hash=$note\$" "$out"; then
		ok "$m: the metadata says hash=$note"
	else
		not_ok "$m: no hash=$note line in $out"
	fi
	recompute "$out" "$note" >"$tmp/$m.want" 2>"$tmp/err" || not_ok "$m: recompute: $(cat "$tmp/err")"
	jq -r '.segments[] | select(.sha256 != null) | .sha256' "$tmp/$m.json" >"$tmp/$m.got"
	jq -r .segment_digest_root "$tmp/$m.json" >>"$tmp/$m.got"
	if [ -s "$tmp/$m.want" ] && cmp -s "$tmp/$m.want" "$tmp/$m.got"; then
		ok "$m: $(($(wc -l <"$tmp/$m.got") - 1)) segment digests and the root = Python's $name recomputation"
	else
		not_ok "$m: digests differ from the recomputation: $(diff "$tmp/$m.want" "$tmp/$m.got" | head -5 | tr '\n' ' ')"
	fi
	"$kcoredump" verify --json "$out" >"$tmp/$m.v.json" 2>/dev/null
	st=$?
	check "$m: verify exit 0 and names $name" \
		[ "$st:$(jq -r '.digests_match,.block_digest' "$tmp/$m.v.json" 2>/dev/null | tr '\n' ' ')" = "0:true $name " ]
	# A byte changed inside the first segment's data: verify finds it.
	off=$(jq -r '[.segments[] | select(.data_bytes > 0)][0].offset' \
		<("$kcoredump" info --json "$out") 2>/dev/null)
	cp "$out" "$tmp/bad.elf"
	printf '\x5a' | dd of="$tmp/bad.elf" bs=1 seek=$((off + 4097)) conv=notrunc status=none
	"$kcoredump" verify -q "$tmp/bad.elf" 2>/dev/null
	st=$?
	check "$m: verify finds one changed byte (exit $st)" [ "$st" -ne 0 ]
done
check "the two methods give different roots" \
	[ "$(tail -1 "$tmp/xxh3.want")" != "$(tail -1 "$tmp/sha256.want")" ]
check "the default is xxh3" [ "$(tail -1 "$tmp/xxh3.got")" = "$(tail -1 "$tmp/default.got")" ]

"$kcoredump" convert -q --hash md5 "$src" -o "$tmp/x.elf" 2>"$tmp/err"
st=$?
check "--hash md5 is a usage error (exit $st)" [ "$st" -eq 2 ]
grep -q "unknown hash 'md5'" "$tmp/err" && ok "--hash md5 says so" || not_ok "--hash md5: $(cat "$tmp/err")"
finish
