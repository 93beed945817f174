/* SPDX-License-Identifier: MIT */
/*
 * The name and type of kcoredump's metadata note (the writers, the
 * readers, verify and the core handler); not installed.
 */
#ifndef KCOREDUMP_METANOTE_H
#define KCOREDUMP_METANOTE_H

/* Our metadata note in the dumps we write and in cut handler cores: its
 * name, and its type ("KCMD", clear of the CORE note types). */
#define KCORE_META_NOTE_NAME "KCOREDUMP"
#define KCORE_META_NOTE_TYPE 0x4b434d44u

#endif
