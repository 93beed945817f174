#!/bin/bash
# SPDX-License-Identifier: MIT
# verify says how a dump is compressed (issue 28 item 10): a kdump with
# zstd pages is "compression": "zstd" with "page_compression": "zstd"
# (it said "none"), a .zst stream "zstd" with no page compression, a
# sparse ELF "none"; the text line says "zstd pages" for the kdump.
#   verify-compression.sh KCOREDUMP FIXDIR
set -uo pipefail
kcoredump=$1 fixdir=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
command -v jq > /dev/null || { echo "1..0 # SKIP jq is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
v=$fixdir/vmcore-twocopies.core
k() { "$kcoredump" "$@"; }
c() { k verify --json "$1" | jq -c '[.compression, .page_compression]'; }

k convert -q --format kdump --codec zstd "$v" -o "$tmp/z.kdump" || not_ok "kdump"
k convert -q --format kdump --codec lzo "$v" -o "$tmp/l.kdump" || not_ok "kdump"
k dump -q "$v" -o "$tmp/s.elf.zst" || not_ok "zst"
k dump -q "$v" -o "$tmp/p.elf" || not_ok "elf"
check "kdump, zstd pages: $(c "$tmp/z.kdump")" [ "$(c "$tmp/z.kdump")" = '["zstd","zstd"]' ]
check "kdump, lzo pages: $(c "$tmp/l.kdump")" [ "$(c "$tmp/l.kdump")" = '["lzo","lzo"]' ]
check ".elf.zst: $(c "$tmp/s.elf.zst")" [ "$(c "$tmp/s.elf.zst")" = '["zstd",null]' ]
check "sparse ELF: $(c "$tmp/p.elf")" [ "$(c "$tmp/p.elf")" = '["none",null]' ]
check "text: 'zstd pages' for the kdump" bash -c "'$kcoredump' verify '$tmp/z.kdump' | head -1 | grep -q ', zstd pages, '"
finish
