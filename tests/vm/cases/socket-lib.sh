#!/bin/sh
# SPDX-License-Identifier: MIT
# Sourced by guest cases (not a case): helpers for the coredump socket.

# start_listener STORE SOCKET LOG [ARGS...]: kcoredump core-handler
# --socket SOCKET storing into STORE (stderr to LOG) in the background,
# its pid in $listener, once SOCKET exists (else the case fails).
start_listener() {
	store=$1 sock=$2 log=$3
	shift 3
	"$KCOREDUMP" core-handler -D "$store" --timeout 900 -v "$@" --socket "$sock" \
		2> "$log" &
	# shellcheck disable=SC2034 # read by the sourcing case
	listener=$!
	i=0
	while [ ! -S "$sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	[ -S "$sock" ] || { echo "the listener did not create $sock"; exit 1; }
}
