// SPDX-License-Identifier: MIT
/*
 * What every step of the core_pattern handler uses: the reasons' names,
 * the monotonic clock and the log.  A leaf of the corehandler-*.c files, so
 * that their dependencies point one way (lint-circles).
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "corehandler-internal.h"

static const char *const reason_names[KCORE_CH_REASON_NUM] = {
	[KCORE_CH_COMPLETE] = "complete",
	[KCORE_CH_MAX_SIZE] = "max-size",
	[KCORE_CH_KEEP_FREE] = "keep-free",
	[KCORE_CH_MAX_USE] = "max-use",
	[KCORE_CH_TIMEOUT] = "timeout",
	[KCORE_CH_CANCELLED] = "cancelled",
	[KCORE_CH_SHORT] = "short-stream",
	[KCORE_CH_NO_SPACE] = "no-space",
	[KCORE_CH_LOCK_TIMEOUT] = "lock-timeout",
};

const char *kcore_ch_reason_name(enum kcore_ch_reason r)
{
	return (unsigned)r < KCORE_CH_REASON_NUM ? reason_names[r] : "unknown";
}

uint64_t ch_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void ch_log(struct ch *ch, int prio, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!ch->o->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ch->o->log(ch->o->log_arg, prio, msg);
}
