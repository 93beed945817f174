/* SPDX-License-Identifier: MIT */
/* libkcore: everything in one include. */
#ifndef KCOREDUMP_KCORE_H
#define KCOREDUMP_KCORE_H

#include "error.h"
#include "io.h"
#include "notes.h"
#include "process.h"
#include "source.h"
#include "vmcoreinfo.h"

#define KCOREDUMP_VERSION "0.1.0"

#endif
