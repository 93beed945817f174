/* SPDX-License-Identifier: MIT */
/*
 * The plan's helpers shared inside libkcore (plan.c); the rest of them
 * are public (kcoredump/dump.h).  Not installed.
 */
#ifndef KCOREDUMP_PLAN_H
#define KCOREDUMP_PLAN_H

#include <stdint.h>

struct kcore_plan;
struct kcore_range;
/* The first of plan's excluded ranges (kcore_plan_exclude) that ends after
 * paddr, or NULL. */
const struct kcore_range *kcore_excluded_after(const struct kcore_plan *plan,
					       uint64_t paddr);

#endif
