/* SPDX-License-Identifier: MIT */
/*
 * The core_pattern handler: store the ELF core the kernel writes into a
 * pipe ("|kcoredump core-handler %P %u %g %s %t %e") as a sparse ELF file
 * or a seekable .zst, with metadata beside it, within size limits and a
 * time limit.  The stream is read once, in order, from a descriptor that
 * cannot seek; pages that are all zero (what dump_skip() writes for
 * unpopulated memory on a pipe) are never written, and where the crashing
 * process's page tables say they will be zeros, never read either.
 *
 * A stored core keeps the stream's layout byte for byte: the sparse ELF
 * reads back identical to the core the kernel writes to a regular file,
 * and the .zst decompresses to it.  When a limit stops the copy, the core
 * ends at a page boundary and its program headers are rewritten so that
 * nothing points past the end (p_filesz shortened or 0); the metadata
 * says so and why.
 *
 * The stream is hostile (every process on the machine can shape it):
 * nothing in it names a file the handler opens, the handler gives up its
 * capabilities once the store and the crashing process's /proc files are
 * open, and the build IDs are read by a helper process with no
 * privileges at all.  Files are root's; the crashing user gets read
 * access (an ACL) only when the process ran with its own credentials.
 */
#ifndef KCOREDUMP_COREHANDLER_H
#define KCOREDUMP_COREHANDLER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dump.h"
#include "error.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Why a stored core is incomplete. */
enum kcore_ch_reason {
	KCORE_CH_COMPLETE,
	KCORE_CH_MAX_SIZE,     /* the per-core size limit */
	KCORE_CH_KEEP_FREE,    /* the file system's free-space reserve */
	KCORE_CH_MAX_USE,      /* the directory's total limit */
	KCORE_CH_TIMEOUT,      /* the time limit */
	KCORE_CH_CANCELLED,    /* a signal */
	KCORE_CH_SHORT,	       /* the stream ended before its headers said */
	KCORE_CH_NO_SPACE,     /* the file system filled up (ENOSPC, EDQUOT) */
	KCORE_CH_LOCK_TIMEOUT, /* the store lock stayed taken */
	KCORE_CH_REASON_NUM
};

/* "complete", "max-size", ... */
const char *kcore_ch_reason_name(enum kcore_ch_reason r);

/* What the kernel says about the crash (%P %u %g %s %t %e %d). */
struct kcore_ch_crash {
	int64_t pid; /* in the initial PID namespace */
	uint32_t uid, gid;
	int signal;
	int64_t time;	  /* seconds since the epoch */
	const char *comm; /* %e, may be NULL (then NT_PRPSINFO's name) */
	int dump_mode;	  /* %d: 0, 1 or 2; -1 when not known */
};

/* How the core reached the handler. */
enum kcore_ch_via {
	KCORE_CH_VIA_PIPE,   /* "|kcoredump core-handler ...": stdin */
	KCORE_CH_VIA_SOCKET, /* "@/path" (Linux 6.16): the core at once */
	KCORE_CH_VIA_SOCKET_REQUEST, /* "@@/path" (6.17): request, ack, core */
};

/* "pipe", "socket", "socket-request". */
const char *kcore_ch_via_name(enum kcore_ch_via v);

/* The crashing process at the other end of a coredump socket. */
struct kcore_ch_peer {
	int pidfd;	    /* SO_PEERPIDFD, or -1 */
	char pidfd_why[96]; /* why there is none, or no PIDFD_GET_INFO */
	bool have_peercred, have_info, have_cgroupid, have_coredump_mask;
	int64_t peer_pid; /* SO_PEERCRED: pid, effective uid and gid */
	uint32_t peer_uid, peer_gid;
	uint64_t cgroupid;	/* PIDFD_GET_INFO */
	uint32_t coredump_mask; /* PIDFD_INFO_COREDUMP */
	/* The request ("@@"): its size, size_ack, mask; our answer's mask. */
	uint32_t req_size, req_size_ack;
	uint64_t req_mask, ack_mask;
};

/* syslog(3) priorities for the log callback. */
#define KCORE_CH_LOG_ERR     3
#define KCORE_CH_LOG_WARNING 4
#define KCORE_CH_LOG_NOTICE  5
#define KCORE_CH_LOG_INFO    6
#define KCORE_CH_LOG_DEBUG   7

struct kcore_ch_opts {
	int in_fd;	  /* the core stream */
	bool close_input; /* close in_fd as soon as it is no longer read */
	int dir_fd;	  /* from kcore_coredir_open() */
	const char *dir;  /* its name, for messages and the metadata */
	enum kcore_compress compress; /* NONE (sparse ELF) or ZSTD/XZ */
	int level;
	unsigned threads; /* 0 = online CPUs */
	/*
	 * Limits, 0 = none.  max_size: bytes the core may take on disk
	 * (data pages of a sparse ELF; compressed bytes of a .zst).
	 * keep_free: bytes of the file system to leave free.  max_use:
	 * bytes all stored cores and metadata may take; the oldest other
	 * cores are removed first.
	 */
	uint64_t max_size, keep_free, max_use;
	/* Cores (each with its metadata) the store may hold in all, and of
	 * one crashing uid; 0 = no limit.  Checked when a core is
	 * published; older ones are removed first, in max_use's order
	 * (max_cores_per_user: that uid's oldest). */
	uint64_t max_cores, max_cores_per_user;
	/* Time for reading the stream, 0 = none; zeros the page tables
	 * let us move out unread (see no_pagemap) take none of it. */
	uint64_t timeout_ms;
	/*
	 * Let the crashing user read the core and metadata (an ACL entry,
	 * in the directory user.UID) when the process ran with its own
	 * credentials: uid == euid, gid == egid, AT_SECURE 0 and dump
	 * mode 1 (%d).  Otherwise, and without this, files are root's only.
	 */
	bool user_access;
	bool sync; /* fsync before publishing */
	/* Handlers that may store at once (slots in the directory); a
	 * handler finding none free stores nothing.  0 = 16. */
	unsigned max_handlers;
	/* Time for the build-ID helper; 0 = no build IDs. */
	uint64_t build_id_timeout_ms;
	/* Time the helper may spend unwinding the threads of the stored
	 * core with libdwfl after the build IDs (a backtrace, symbols from
	 * the mapped files and build-ID debuginfo under /usr/lib/debug);
	 * 0 = no backtrace. */
	uint64_t backtrace_timeout_ms;
	/* Why no journal entry is made (the metadata says so), or NULL:
	 * the result then carries one (journal) for the caller to send. */
	const char *journal_why_not;
	/* The unprivileged user and group the helper runs as (when we are
	 * root); 0 = nobody (65534). */
	uint32_t helper_uid, helper_gid;
	/*
	 * Keep this process's capabilities (tests that run several handlers
	 * in one process).  Otherwise the handler gives them up for good
	 * once the store and the /proc files are open.
	 */
	bool keep_privileges;
	struct kcore_ch_crash crash;
	volatile sig_atomic_t *cancel;
	/* Messages for the system log; called from this thread. */
	void (*log)(void *arg, int priority, const char *msg);
	void *log_arg;
	/* When this core's handling started (CLOCK_MONOTONIC ns; 0 = now):
	 * the process's start from a pipe, the connection's from a socket.
	 * timeout_ms counts from it. */
	uint64_t start_ns;
	/*
	 * Read every byte of the stream.  Otherwise, where the crashing
	 * process's page tables (/proc/PID/pagemap, looked at before and
	 * after the kernel writes the bytes) hold nothing in a private
	 * anonymous mapping, the zeros are consumed from the pipe with
	 * splice(2), unread.
	 */
	bool no_pagemap;
	/* Also record the crashing process's environment (/proc/PID/
	 * environ, at most 64 KiB) in the metadata. */
	bool record_environ;
	const char *procfs; /* NULL: "/proc" (tests) */
	/* How the stream came (the default: the pipe), and from a socket,
	 * its peer (kcore_ch_socket_accept()). */
	enum kcore_ch_via via;
	const struct kcore_ch_peer *peer;
	/* Log the steps too (KCORE_CH_LOG_DEBUG). */
	bool verbose;
};

struct kcore_ch_result {
	char *core_name; /* file name in the directory */
	char *meta_name;
	uint64_t stream_bytes;	  /* bytes read from the stream */
	uint64_t expected_bytes;  /* stream size the headers announce */
	uint64_t file_size;	  /* size of the stored file */
	uint64_t data_bytes;	  /* non-zero bytes kept (before compression) */
	uint64_t zero_bytes;	  /* zero pages not written */
	uint64_t allocated_bytes; /* st_blocks * 512 of the stored core */
	enum kcore_ch_reason reason;
	uint64_t cut_offset;   /* stream offset where a truncated core ends */
	unsigned segments_cut; /* PT_LOADs shortened or emptied */
	/* The cut core carries our note saying it is incomplete (there was
	 * room after the kernel's notes), so info and verify say so too. */
	bool cut_marked;
	unsigned removed; /* older cores removed for the limits */
	unsigned char sha256[KCORE_DIGEST_LEN]; /* of the stored stream bytes */
	double elapsed;				/* seconds */
	double stream_elapsed; /* seconds until the stream's end (or cut) */
	/* Zero bytes consumed unread because the page tables had nothing
	 * there (within zero_bytes); why the page tables were not used
	 * (NULL when they were); pagemap looks. */
	uint64_t unread_bytes;
	/* The time the stream spent in runs the page tables leave empty
	 * (the kernel walking them, then writing zeros): not counted in
	 * timeout_ms. */
	uint64_t hole_ns;
	char *pagemap_why;
	uint64_t pagemap_scans;
	/* Nothing was stored: every handler slot was taken (not an
	 * error: the kernel must not wait on us). */
	bool not_stored;
	bool user_access; /* the crashing user may read the files */
	char *subdir;	  /* where they are ("user.UID"), or NULL */
	/*
	 * The stored core as systemd-coredump describes one in the journal
	 * (MESSAGE_ID fc2e22bc6ee647b6b90729ab34a250b1): "FIELD=value"
	 * entries, values as they are (they may hold newlines), with
	 * COREDUMP_FILENAME the stored file and MESSAGE with the backtrace;
	 * NULL when nothing was stored.  For sd_journal_sendv().
	 */
	char **journal;
	size_t journal_count;
};

/*
 * Open (creating it 0700 if missing) the directory for stored cores,
 * without following a symlink in its last component; refuse one that
 * anybody but root and us could write to.
 */
struct kcore_error *kcore_coredir_open(const char *path, bool create,
				       int *ret_fd);

/*
 * Read the stream, store the core and its metadata.  Changes the
 * process's privileges: it keeps no capability afterwards.
 */
struct kcore_error *kcore_core_handle(const struct kcore_ch_opts *opts,
				      struct kcore_ch_result *ret);
void kcore_ch_result_deinit(struct kcore_ch_result *res);

/*
 * A connection from the kernel's coredump socket: the peer's facts
 * (SO_PEERCRED, SO_PEERPIDFD, PIDFD_GET_INFO) into *crash (pid, real uid
 * and gid, the dump mode, now as the time; signal 0 unless the kernel
 * says, then the core's notes tell) and *peer, and if the kernel sends a
 * request ("@@"), our answer: the kernel writes the core and waits until
 * we close.  *ret_via says which.  Then the core follows on fd.  Errors:
 * the request is malformed, short or refused, or nothing came within
 * timeout_ms (0 = no limit).  kcore_ch_peer_deinit() closes the pidfd.
 */
struct kcore_error *kcore_ch_socket_accept(int fd, uint64_t timeout_ms,
					   struct kcore_ch_crash *crash,
					   struct kcore_ch_peer *peer,
					   enum kcore_ch_via *ret_via);
void kcore_ch_peer_deinit(struct kcore_ch_peer *peer);
/* The pidfd still names a live (unreaped) process of thread group pid. */
bool kcore_ch_peer_alive(const struct kcore_ch_peer *peer, int64_t pid);

/* A stored core, as its metadata file describes it. */
struct kcore_stored_core {
	char *meta_name;
	char *core_name; /* NULL if the metadata names none */
	char *exe;	 /* NT_FILE executable, else pr_fname, else %e */
	char *comm;
	char *reason; /* "complete", "max-size", ... */
	int64_t pid, time;
	int64_t uid, gid, signal;
	uint64_t stream_bytes, file_size, allocated_bytes;
	bool core_present; /* the core file exists */
	char *crash_frame; /* the crashing thread's first frame, or NULL */
	int journal_entry; /* one was sent: 1, not: 0, not known: -1 */
	char *json;	   /* the metadata document as stored */
	char *subdir;	   /* "user.UID" for cores the user may read */
};

/*
 * The stored cores in a directory and its user.UID directories, oldest
 * first (by crash time, then name).  Metadata files that cannot be read
 * are skipped; a core is the file named like its metadata, whatever the
 * metadata says.
 */
struct kcore_error *kcore_coredir_list(int dir_fd,
				       struct kcore_stored_core **ret,
				       size_t *ret_count);
void kcore_stored_cores_free(struct kcore_stored_core *cores, size_t count);

#ifdef __cplusplus
}
#endif

#endif
