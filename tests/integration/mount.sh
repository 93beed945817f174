#!/bin/bash
# SPDX-License-Identifier: MIT
# kcoredump mount: the FUSE file system's vmcore is the dump as a plain
# ELF core, read by real readers.
#  - a mounted .zst / .xz / kdump of the kcore fixture: crash --osrelease
#    prints the release (on the .zst itself it cannot: "unknown");
#  - the mounted vmcore of a .zst and an .xz process core is byte for byte
#    what `kcoredump extract` writes (cmp), st_blocks counts its data and
#    SEEK_DATA/SEEK_HOLE find the same data runs as on the extracted file;
#  - gdb `thread apply all bt` on the mounted .zst process core prints
#    what it prints on the extracted core;
#  - the 1 TiB sparse .zst: mounted, its vmcore has 1 TiB and a few KiB
#    of blocks, its last data page reads right;
#  - once mounted, the vmcore's pages with data are in the page cache
#    (fincore) before anything reads them, not with --no-prefetch;
#  - unmount with fusermount3 -u, and on SIGTERM in the foreground (-F,
#    a relative mount point: the daemon's working directory is /);
#    the file system is read-only;
#  - a clear error without /dev/fuse (a private mount namespace whose /dev
#    lacks it) or without fusermount3 in PATH.
# Skips (77) only when /dev/fuse is absent.
#   mount.sh KCOREDUMP FIXDIR
set -uo pipefail
kcoredump=$1 fixdir=$2
. "$(dirname "$0")/lib.sh"
[[ -e /dev/fuse ]] || { echo "1..0 # SKIP no /dev/fuse"; exit 77; }
tmp=$(mktemp -d)
mounts=()
cleanup()
{
	for m in "${mounts[@]}"; do
		fusermount3 -u "$m" 2> /dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

# mnt DUMP DIR [OPTIONS...]: mount DUMP on DIR (background daemon).
mnt()
{
	local dump=$1 dir=$2
	shift 2
	mkdir -p "$dir"
	mounts+=("$dir")
	"$kcoredump" mount "$@" "$dump" "$dir"
}

# Data runs of FILE as "start end" lines, by SEEK_DATA/SEEK_HOLE.
runs()
{
	/usr/bin/python3 - "$1" << 'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
p = 0
while True:
    try:
        d = os.lseek(fd, p, os.SEEK_DATA)
    except OSError:
        break
    h = os.lseek(fd, d, os.SEEK_HOLE)
    print(d, h)
    p = h
PY
}

kcore=$fixdir/kcore-x86_64.core
proc=$fixdir/process-x86_64.core
sparse=$fixdir/sparse-1t.core
release=$("$kcoredump" info --json --no-holes --no-modules "$kcore" | jq -r .source.kernel_release)

# Kernel dumps in every container, read by crash through the mount.
"$kcoredump" dump -q -T 2 "$kcore" -o "$tmp/k.zst" &&
	"$kcoredump" dump -q -T 2 --frame-size 1M "$kcore" -o "$tmp/k.xz" &&
	"$kcoredump" convert -q -T 2 --format kdump "$kcore" -o "$tmp/k.kdump" ||
	not_ok "dumps of $kcore"
for f in k.zst k.xz k.kdump; do
	if ! mnt "$tmp/$f" "$tmp/m-$f"; then
		not_ok "$f: mounted"
		continue
	fi
	got=$(crash --osrelease "$tmp/m-$f/vmcore" 2>&1 | tail -n 1)
	[[ $got == "$release" ]] && ok "$f: crash --osrelease on the mounted vmcore says $got" ||
		not_ok "$f: crash --osrelease on the mounted vmcore says '$got', not $release"
done
got=$(crash --osrelease "$tmp/k.zst" 2>&1 | tail -n 1)
[[ $got != "$release" ]] && ok "k.zst itself: crash cannot read it ('$got')" ||
	diag "crash reads the .zst itself"

# Process cores: the mounted file is the extracted file.
for c in zst xz; do
	d=$tmp/p.$c
	"$kcoredump" dump -q -T 2 "$proc" -o "$d" &&
		"$kcoredump" extract -q "$d" -o "$tmp/p-$c.elf" || not_ok "$d: dump and extract"
	if ! mnt "$d" "$tmp/m-p$c"; then
		not_ok "p.$c: mounted"
		continue
	fi
	v=$tmp/m-p$c/vmcore
	cmp "$v" "$tmp/p-$c.elf" && ok "p.$c: the mounted vmcore equals extract's output (cmp)" ||
		not_ok "p.$c: the mounted vmcore differs from extract's output"
	# Without the background decoding, the same bytes.
	if mnt "$d" "$tmp/m-n$c" --no-prefetch; then
		cmp "$tmp/m-n$c/vmcore" "$tmp/p-$c.elf" &&
			ok "p.$c --no-prefetch: the mounted vmcore equals extract's output" ||
			not_ok "p.$c --no-prefetch: the mounted vmcore differs from extract's output"
	else
		not_ok "p.$c --no-prefetch: mounted"
	fi
	a=$(stat -c %s "$v") b=$(stat -c %s "$tmp/p-$c.elf")
	[[ $a == "$b" ]] && ok "p.$c: size $a" || not_ok "p.$c: size $a, extracted $b"
	blocks=$(stat -c %b "$v") size=$(stat -c %s "$v")
	if ((blocks * 512 < size)); then
		ok "p.$c: st_blocks $blocks counts data only (size $size)"
	else
		not_ok "p.$c: st_blocks $blocks for size $size"
	fi
	runs "$v" > "$tmp/runs-m" && runs "$tmp/p-$c.elf" > "$tmp/runs-e"
	# The extracted file's data runs (whole pages; zero pages are holes)
	# lie inside the mount's, taken to whole pages (the map may call a
	# zero page data, and knows holes finer than a page).
	if /usr/bin/python3 - "$tmp/runs-m" "$tmp/runs-e" << 'PY'; then
import sys
m = [tuple(map(int, l.split())) for l in open(sys.argv[1])]
e = [tuple(map(int, l.split())) for l in open(sys.argv[2])]
pages = []
for a, b in m:
    a, b = a // 4096 * 4096, (b + 4095) // 4096 * 4096
    if pages and a <= pages[-1][1]:
        pages[-1] = (pages[-1][0], max(b, pages[-1][1]))
    else:
        pages.append((a, b))
ok = bool(m) and all(any(a <= s and t <= b for a, b in pages) for s, t in e)
sys.exit(0 if ok else 1)
PY
		ok "p.$c: SEEK_DATA/SEEK_HOLE on the mount: $(wc -l < "$tmp/runs-m") data runs covering the extracted file's $(wc -l < "$tmp/runs-e")"
	else
		not_ok "p.$c: SEEK_DATA/SEEK_HOLE runs do not cover the extracted file's"
	fi
done
if command -v gdb > /dev/null; then
	bt() { gdb -nx -batch -ex 'set pagination off' -ex 'thread apply all bt' -c "$1" 2>&1 |
		grep -v -e '^warning' -e "^Core was generated" -e '^\[New' -e '^$'; }
	bt "$tmp/m-pzst/vmcore" > "$tmp/bt-m"
	bt "$tmp/p-zst.elf" > "$tmp/bt-e"
	if [[ -s $tmp/bt-e ]] && grep -q '^#0' "$tmp/bt-e" && cmp -s "$tmp/bt-m" "$tmp/bt-e"; then
		ok "gdb thread apply all bt: the mounted .zst equals the extracted core ($(grep -c '^#' "$tmp/bt-e") frames)"
	else
		not_ok "gdb thread apply all bt differs (or is empty)"
		diff "$tmp/bt-m" "$tmp/bt-e" | head -n 10 | sed 's/^/#   /'
	fi
else
	skip "gdb not installed"
fi
if echo x 2> /dev/null > "$tmp/m-pzst/vmcore"; then
	not_ok "the mount is writable"
else
	ok "the mount is read-only"
fi

# Once mounted, the prefetch gives the pages with data to the kernel's
# page cache (reads of them then never reach kcoredump), none read; with
# --no-prefetch nothing is there.  fincore counts the pages.
x=$fixdir/pn-xnum.core
if ! command -v fincore > /dev/null; then
	skip "no fincore (util-linux) to count cached pages"
elif "$kcoredump" dump -q -T 2 --frame-size 256K "$x" -o "$tmp/x.zst" &&
	"$kcoredump" extract -q "$tmp/x.zst" -o "$tmp/x.elf" &&
	mnt "$tmp/x.zst" "$tmp/m-xp" && mnt "$tmp/x.zst" "$tmp/m-xn" --no-prefetch; then
	want=$(/usr/bin/python3 -c '
import sys
d = open(sys.argv[1], "rb").read()
print(sum(1 for i in range(0, len(d), 4096) if d[i:i + 4096].strip(b"\0")))' "$tmp/x.elf")
	got=0
	for _ in $(seq 300); do
		got=$(fincore --noheadings --output PAGES "$tmp/m-xp/vmcore" 2> /dev/null | tr -d ' ' || true)
		got=${got:-0}
		((got * 100 >= want * 99)) && break
		sleep 0.1
	done
	no=$(fincore --noheadings --output PAGES "$tmp/m-xn/vmcore" 2> /dev/null | tr -d ' ' || true)
	no=${no:--1}
	if ((want > 1000 && got * 100 >= want * 99)); then
		ok "prefetch: $got of the $want pages with data in the page cache, none read"
	else
		not_ok "prefetch: $got of the $want pages with data in the page cache, none read"
	fi
	if ((no >= 0 && no * 10 < want)); then
		ok "--no-prefetch: $no pages in the page cache"
	else
		not_ok "--no-prefetch: $no pages in the page cache (of $want)"
	fi
	cmp "$tmp/m-xp/vmcore" "$tmp/x.elf" &&
		ok "prefetch: the mounted vmcore (from the page cache) equals extract's output" ||
		not_ok "prefetch: the mounted vmcore differs from extract's output"
else
	not_ok "dump, extract and mounts of $x"
fi

# The 1 TiB sparse process core.
"$kcoredump" dump -q -T 2 "$sparse" -o "$tmp/s.zst" || not_ok "dump of $sparse"
if mnt "$tmp/s.zst" "$tmp/m-s"; then
	v=$tmp/m-s/vmcore
	size=$(stat -c %s "$v") blocks=$(stat -c %b "$v")
	# The dump's size, not the source's: our headers and note need not
	# take the room mkcore's do (extract writes the same ELF sparse).
	"$kcoredump" extract -q "$tmp/s.zst" -o "$tmp/s.elf"
	want=$(stat -c %s "$tmp/s.elf")
	if [[ $size == "$want" ]] && ((blocks < 2048)); then
		ok "s.zst: vmcore of $size bytes in $blocks blocks"
	else
		not_ok "s.zst: vmcore $size bytes (want $want, as extracted), $blocks blocks"
	fi
	last=$(runs "$v" | tail -n 1)
	start=${last% *}
	last=$(runs "$sparse" | tail -n 1)
	src_start=${last% *}
	cmp -n 4096 -i "$start:$src_start" "$v" "$sparse" > /dev/null &&
		ok "s.zst: the last data run (at $start) reads as the source's (at $src_start)" ||
		not_ok "s.zst: the last data run (at $start) differs from the source's (at $src_start)"
fi

# Unmounting.
if fusermount3 -u "$tmp/m-s" && ! mountpoint -q "$tmp/m-s"; then
	ok "fusermount3 -u unmounts"
else
	not_ok "fusermount3 -u did not unmount"
fi
mkdir -p "$tmp/m-f"
mounts+=("$tmp/m-f")
# A relative mount point: the daemon changes to / and still unmounts it.
(cd "$tmp" && exec "$kcoredump" mount -F p.zst m-f) 2> "$tmp/fg.err" &
pid=$!
for _ in $(seq 100); do
	mountpoint -q "$tmp/m-f" && break
	sleep 0.1
done
mountpoint -q "$tmp/m-f" && ok "mount -f: mounted in the foreground" || not_ok "mount -f: not mounted"
kill -TERM "$pid"
wait "$pid"
st=$?
if ! mountpoint -q "$tmp/m-f" && [[ $st == 0 ]]; then
	ok "mount -f (relative mount point): SIGTERM unmounts, exit 0"
else
	not_ok "mount -f (relative mount point): after SIGTERM: exit $st, $(mountpoint "$tmp/m-f"), $(cat "$tmp/fg.err")"
fi

# SIGTERM as soon as the mount is there, while the prefetcher's own stat()
# of the file may still wait for the loop that the signal ended: the daemon
# must still exit (it deadlocked on that stat, unkillable, 9 of 20 times
# on a loaded machine).  A hang is ended through fusectl when it can be.
abort_fuse() { # DIR
	local c
	c=$(awk -v d="$1" '$5 == d { split($3, a, ":"); print a[2] }' /proc/self/mountinfo) || true
	if [[ -n $c && -w /sys/fs/fuse/connections/$c/abort ]]; then
		echo 1 > "/sys/fs/fuse/connections/$c/abort"
	fi
	fusermount3 -u -z "$1" 2> /dev/null || true
}
mkdir -p "$tmp/m-t"
mounts+=("$tmp/m-t")
hung=0 tries=10
for _ in $(seq $tries); do
	"$kcoredump" mount -F -q "$tmp/p.zst" "$tmp/m-t" 2> /dev/null &
	pid=$!
	for _ in $(seq 600); do
		mountpoint -q "$tmp/m-t" && break
		sleep 0.05
	done
	kill -TERM "$pid"
	# A loose bound: an exit takes milliseconds, a deadlock forever.
	for _ in $(seq 300); do
		kill -0 "$pid" 2> /dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2> /dev/null; then
		hung=$((hung + 1))
		abort_fuse "$tmp/m-t"
		kill -KILL "$pid" 2> /dev/null
	fi
	wait "$pid" 2> /dev/null
	mountpoint -q "$tmp/m-t" && fusermount3 -u "$tmp/m-t" 2> /dev/null
done
check "mount -F: SIGTERM right after mounting ends the daemon ($hung of $tries hung)" [ $hung -eq 0 ]

# Missing pieces give one clear line.
mkdir -p "$tmp/m-x"
if command -v unshare > /dev/null && unshare -m true 2> /dev/null; then
	out=$(unshare -m --propagation private sh -c \
		'mount -t tmpfs none /dev && exec "$0" mount "$1" "$2"' \
		"$kcoredump" "$tmp/p.zst" "$tmp/m-x" 2>&1)
	st=$?
	if [[ $st != 0 && $out == *"/dev/fuse"*"missing"* ]]; then
		ok "no /dev/fuse: exit $st, $out"
	else
		not_ok "no /dev/fuse: exit $st, '$out'"
	fi
else
	skip "no unshare -m here to hide /dev/fuse"
fi
out=$(PATH=/nonexistent "$kcoredump" mount "$tmp/p.zst" "$tmp/m-x" 2>&1)
st=$?
if [[ $st != 0 && $out == *fusermount3*"not found"* ]]; then
	ok "no fusermount3: exit $st, $out"
else
	not_ok "no fusermount3: exit $st, '$out'"
fi
out=$("$kcoredump" mount "$tmp/p.zst" "$tmp/nowhere" 2>&1)
[[ $? != 0 && $out == *nowhere* ]] && ok "a missing mount point: $out" ||
	not_ok "a missing mount point: '$out'"
finish
