/* SPDX-License-Identifier: MIT */
/*
 * The coredump socket's request protocol (include/uapi/linux/coredump.h
 * of Linux 6.17+, and posting 4's COREDUMP_HOLES and struct
 * coredump_record), for the rig's programs, which are built against the
 * host's headers (they may predate it).
 */
#ifndef KCOREDUMP_TEST_COREDUMP_PROTO_H
#define KCOREDUMP_TEST_COREDUMP_PROTO_H

#include <stdint.h>

#define CD_KERNEL    (1ULL << 0)
#define CD_USERSPACE (1ULL << 1)
#define CD_REJECT    (1ULL << 2)
#define CD_WAIT	     (1ULL << 3)
#define CD_HOLES     (1ULL << 4) /* posting 4 */
#define CD_REC_DATA  1U
#define CD_REC_HOLE  2U

struct cd_req {
	uint32_t size, size_ack;
	uint64_t mask;
};

struct cd_ack {
	uint32_t size, spare;
	uint64_t mask;
};

struct cd_record {
	uint32_t size, type;
	uint64_t len;
};

#endif
