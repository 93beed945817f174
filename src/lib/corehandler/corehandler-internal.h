/* SPDX-License-Identifier: MIT */
/*
 * The core_pattern handler's state, shared by its parts (not installed):
 *
 *   corehandler-stream.c  the pipe: reading, the ELF headers and notes,
 *                         cutting the headers (hostile input, no I/O but
 *                         the stream)
 *   corehandler-store.c   the store: the copy into the output file, the
 *                         digest, names and publishing
 *   corehandler-vacuum.c  the store's limits: lock, handler slots,
 *                         reservations, removing older cores
 *                         (corehandler-vacuum.h); their totals in the
 *                         lock file: corehandler-totals.c
 *   corehandler-meta.c    the metadata document
 *   corehandler-journal.c the journal entry (systemd-coredump's fields)
 *   corehandler-priv.c    privileges: capabilities, the sandboxed
 *                         build-ID helper process, ACLs
 *   corehandler-wire.c    what the handler and the helper send each
 *                         other (the reply parsed with bounds)
 *   corehandler-buildid.c what the helper runs: libdwfl without opening
 *                         a path; the package notes of the first pages
 *                         (in the handler, without privileges)
 *   corehandler-socket.c  the kernel's coredump socket: the peer, the
 *                         request protocol; where the process runs
 *   corehandler-facts.c   the crashing process's facts from /proc/PID
 *                         (as systemd-coredump records them)
 *   corehandler.c         the handler, in that order
 *
 * Dependencies point one way: corehandler.c uses all; store uses stream
 * and vacuum; vacuum uses totals;
 * meta and priv use buildid's types; stream uses corehandler-holes.c.
 */
#ifndef KCOREDUMP_COREHANDLER_INTERNAL_H
#define KCOREDUMP_COREHANDLER_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "corehandler-holes.h"
#include "kcoredump/corehandler.h"
#include "kcoredump/kcore.h"
#include "kcoredump/output.h"
#include "source-impl.h"

#define CH_BLOCK KCORE_HASH_BLOCK /* 1 MiB, the hash block */
#define CH_PAGE	 4096u
/* Headers and notes beyond this are refused (10,000 threads fit). */
#define CH_MAX_PREFIX (256u << 20)
/* First pages kept for the build IDs of a compressed core. */
#define CH_MAX_CAPTURE (64u << 20)
/* Room for the compressed headers of a .zst/.xz core to grow by when a
 * cut rewrites them (more moves the rest of the file). */
#define CH_HEADER_ROOM 4096u
/* Handler slots, at most. */
#define CH_MAX_HANDLERS 256
/* File mappings the handler opens for the build-ID step, at most. */
#define CH_MAX_MAPS 512

struct ch_phdr {
	uint32_t type, flags;
	uint64_t offset, vaddr, paddr, filesz, memsz, align;
};

struct ch_capture {
	size_t off; /* in ch->cap */
	uint32_t len;
	bool done;
};

/* What NT_AUXV says of the process's credentials (the kernel's copy). */
struct ch_creds {
	bool have_uid, have_euid, have_gid, have_egid, have_secure;
	uint64_t uid, euid, gid, egid, secure;
};

/*
 * A file the crashing process mapped at offset 0, opened by the handler
 * itself through /proc/PID/map_files (O_PATH: nothing of the file's own
 * code runs), for the build-ID helper.
 */
struct ch_map {
	uint64_t start, end;
	int fd;
	const char *name; /* NT_FILE's (into ch->prefix) */
};

/* A module as the build-ID helper reports it. */
struct ch_module {
	char *name;
	uint64_t start, end;
	unsigned char build_id[64];
	unsigned build_id_len;
};

/* A frame of a backtrace: its pc, and where it is when known. */
struct ch_frame {
	uint64_t pc;
	char *func;   /* symbol, or NULL */
	char *module; /* the module's name (a path), or NULL */
	uint64_t func_off, module_off;
};

struct ch_bt_thread {
	int64_t tid;
	struct ch_frame *frames;
	size_t nframes;
	bool truncated; /* more frames than CH_BT_MAX_FRAMES */
	char *error;	/* why unwinding stopped, if not at the end */
};

/* Threads and frames a backtrace holds, at most (as systemd-coredump). */
#define CH_BT_MAX_THREADS 64
#define CH_BT_MAX_FRAMES  64
/* Of a compressed core, the bytes kept from each thread's stack pointer
 * up (for the backtrace), at most. */
#define CH_STACK_WINDOW (256u << 10)

/* Stream bytes [off, off + len) of PT_LOAD ph, kept at buf_off of
 * ch->win_buf. */
struct ch_window {
	size_t ph;
	uint64_t off, len;
	size_t buf_off;
};
/* Build-ID debuginfo files the helper is given, at most. */
#define CH_MAX_DEBUG 64

struct ch_backtrace {
	bool made; /* an unwind was tried */
	struct ch_bt_thread *threads;
	size_t nthreads;
	bool threads_truncated, timed_out;
	char *error;	      /* why there is none */
	unsigned debug_files; /* /usr/lib/debug files it was given */
	double seconds;
};

struct ch_buildids {
	struct ch_module *mods;
	size_t count;
	char *error;	  /* why there are none, or fewer */
	bool incomplete;  /* the first pages kept were not all */
	const char *from; /* "stored core" or "first pages" */
	/* The sandbox the helper ran in, as it saw itself. */
	int64_t uid, gid;
	bool no_new_privs, seccomp, chroot;
	uint64_t cap_eff;
	struct ch_backtrace bt;
};

/* A build-ID debuginfo file under /usr/lib/debug/.build-id, opened by
 * the handler (never a path from the core) for the helper. */
struct ch_debugfile {
	unsigned char id[64];
	unsigned id_len;
	int fd;
};

/* A module's FDO packaging metadata note (owner "FDO", type 0xcafe1a7e:
 * a JSON object of strings), from the first page of its file in the
 * core; the values decoded, each NULL if absent. */
#define CH_MAX_PACKAGE_JSON 4096u
struct ch_package {
	size_t module; /* in ch->ids.mods */
	char *type, *name, *version, *arch, *os_cpe, *debuginfod;
};

struct ch_helper;
struct coredir_scan;

/* Where the store's limits stand for this handler. */
struct ch_store {
	int lock_fd;	   /* .kcoredump.lock, flock()ed around decisions */
	int slot_fd;	   /* ours: .kcoredump.slot.N */
	unsigned nslots;   /* N < nslots */
	int slot;	   /* N, or -1 */
	uint64_t reserved; /* bytes the slot announces */
	bool limits_full;  /* a reservation was refused */
	/* Our last full look at the store (NULL: none), and the lock
	 * file's generation when it began. */
	struct coredir_scan *scan;
	uint64_t scan_gen;
	/* The build-ID helper's root (when we are root): an empty directory
	 * of ours, already removed, made by ch_vacuum_enter() under the
	 * lock (a change of the store's directory the totals expect). */
	bool has_empty;
	int empty_fd;
	enum kcore_ch_reason full_reason;
};

/* Where the crashing process runs, from /proc/PID (when proc_ok). */
#define CH_NS_NUM 7
struct ch_place {
	bool known;
	int64_t ns_pid; /* its pid in its own PID namespace, -1 */
	int pid_levels; /* NSpid entries: 1 = our PID namespace */
	bool container; /* a PID namespace other than ours */
	int ns_err;	/* errno of the first unreadable ns link, or 0 */
	const char *ns_name[CH_NS_NUM];
	char ns[CH_NS_NUM][48]; /* "pid:[4026531836]", "" unreadable */
	bool ns_differs[CH_NS_NUM];
};

/* Facts of the crashing process from /proc/PID (as systemd-coredump
 * records them), each NULL or -1 when not known. */
#define CH_MAX_CMDLINE (64u << 10)
#define CH_MAX_ENVIRON (64u << 10)
#define CH_MAX_FDS     1024u
struct ch_fd {
	int fd;
	char *target;
	bool have_info;
	uint64_t pos;
	unsigned flags;
	uint64_t mnt_id;
};
struct ch_limit {
	char name[32]; /* "open_files" for "Max open files" */
	char soft[24], hard[24], units[16];
};
#define CH_MAX_LIMITS 32
/* A fact of /proc/PID that could not be read, and the errno. */
#define CH_MAX_UNREADABLE 10
struct ch_unreadable {
	const char *what; /* the metadata member: "cwd", "open_fds", ... */
	int err;
};
struct ch_facts {
	char *cmdline; /* arguments separated by spaces */
	size_t cmdline_len;
	bool cmdline_truncated;
	char *cwd, *root, *cgroup;
	char *unit, *user_unit, *slice, *session;
	int64_t owner_uid;
	char boot_id[40], machine_id[40], hostname[256];
	struct ch_limit limits[CH_MAX_LIMITS];
	size_t nlimits;
	struct ch_fd *fds;
	size_t nfds;
	bool fds_truncated;
	char *environ; /* NUL-separated entries (record_environ) */
	size_t environ_len;
	bool environ_truncated;
	struct ch_unreadable unreadable[CH_MAX_UNREADABLE];
	size_t nunreadable;
	/* Why the kernel refused them, when it was access (NUL if not). */
	char unreadable_why[320];
};

struct ch {
	const struct kcore_ch_opts *o;
	struct kcore_ch_result *res;
	const char *in_name;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC; 0 = none */
	bool eof, stopped;    /* stopped: timeout or cancel while reading */
	bool input_closed;
	uint64_t last_read_ns;
	enum kcore_ch_reason stop_reason;

	/* The ELF header fields we use. */
	bool is64, big;
	uint16_t machine, phentsize;
	uint64_t phoff, shoff;
	uint16_t shentsize, shnum, shstrndx;
	bool xnum; /* e_phnum == PN_XNUM */
	size_t phnum;
	struct ch_phdr *ph;
	uint64_t first_data; /* the first PT_LOAD's data (or the prefix end) */

	unsigned char *prefix; /* stream bytes [0, prefix_len) */
	size_t prefix_len;
	uint64_t expected; /* stream size the headers announce */

	/* Output. */
	struct kcore_output *out;
	struct kcore_ostream *os;
	int subdir_fd;	 /* where the core goes: dir_fd or user.UID */
	uint64_t stored; /* bytes on disk so far (a .zst: at publishing) */
	uint64_t zdata;	 /* data bytes handed to the compressor */
	uint64_t zpos;	 /* stream position of the .zst writer */
	uint64_t stored_header_off;
	uint64_t cut; /* UINT64_MAX = not cut */
	/* A .zst/.xz without --keep-free: the room the file system had
	 * for more data (after what the compressor holds and the end of
	 * the stream) when ch->zpos was space_at; zero runs written. */
	uint64_t space_room, space_at, zruns;
	bool space_known;
	struct ch_store store;

	/* Digest records: le64 block index + SHA-256 of the block. */
	unsigned char *recs;
	size_t nrecs, caprecs;

	/* First pages of PT_LOADs, in p_offset order (compressed cores). */
	size_t *order, norder, next_cap;
	struct ch_capture *caps; /* by phdr index */
	unsigned char *cap;
	size_t cap_len, cap_size;
	bool cap_full;
	/* The threads' stack pointers (NT_PRSTATUS), and the windows of a
	 * compressed core's stacks kept from them (ch_store_plan_stacks). */
	uint64_t sps[CH_BT_MAX_THREADS];
	size_t nsps;
	struct ch_window wins[CH_BT_MAX_THREADS];
	size_t nwins;
	unsigned char *win_buf;

	/* Where the crashing process's page tables say the stream is zeros
	 * (NULL: read everything), and /dev/null to splice them into. */
	struct ch_holes *holes;
	int null_fd;
	size_t pipe_size; /* F_GETPIPE_SZ (of drain_pipe on a socket) */
	/* The stream is the coredump socket: its hole bytes go through
	 * drain_pipe (splice needs a pipe at one end) to /dev/null. */
	bool in_sock;
	int drain_pipe[2];
	/* The kernel frames the core in records (COREDUMP_HOLES, acked on
	 * the coredump socket): the bytes left of the current data record,
	 * and the zeros left of the current hole record, which it did not
	 * send. */
	bool framed;
	uint64_t rec_data, rec_hole;

	/* From the notes. */
	struct kcore_source fake; /* path and info for the note decoders */
	char *exe, *fname, *psargs;
	struct kcore_file_table files; /* NT_FILE; names point into prefix */
	unsigned nthreads;
	int note_signal;
	char *note_error;
	struct ch_creds creds;

	/* Whether the crashing process is the one the kernel named (it is
	 * dumping core), so that its /proc files describe the core. */
	bool proc_ok;
	int proc_fd;	    /* /proc/PID, opened while it dumps (or -1) */
	char proc_why[256]; /* why not proc_ok */
	struct ch_facts facts;
	struct ch_map maps[CH_MAX_MAPS];
	size_t nmaps;
	struct ch_helper *helper;
	struct ch_buildids ids;
	struct ch_package *pkgs;
	size_t npkgs;

	/* The crashing user may read the core (--owner user, and the
	 * process ran with its own credentials), and why (not). */
	bool user_access;
	char access_why[160];

	/* The signal: the kernel's, else the notes'. */
	int signal;
	struct ch_place place;
};

/* ---- corehandler-log.c ---- */
void ch_log(struct ch *ch, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
uint64_t ch_mono_ns(void);

/* ---- corehandler-stream.c ---- */
struct kcore_error *ch_fill(struct ch *ch, void *buf, size_t len,
			    size_t *ret_done);
struct kcore_error *ch_drain(struct ch *ch, uint64_t pos, uint64_t len,
			     uint64_t *ret_done);
/* The stream bytes from start that are zeros not to read (a hole run of
 * the page tables, or the kernel's hole record), in whole units; 0 if
 * none. */
uint64_t ch_zero_run(const struct ch *ch, uint64_t start, uint64_t unit);
void ch_drop_holes(struct ch *ch, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
long ch_pipe_bytes(const struct ch *ch);
struct kcore_error *ch_read_headers(struct ch *ch);
void ch_parse_notes(struct ch *ch);
void ch_put_phdr_file(const struct ch *ch, unsigned char *buf, size_t i,
		      uint64_t offset, uint64_t filesz);
void ch_put_phdr_vaddr(const struct ch *ch, unsigned char *buf, size_t i,
		       uint64_t vaddr, uint64_t memsz);
void ch_put_shoff(const struct ch *ch, unsigned char *buf, uint64_t shoff,
		  uint16_t shnum, uint16_t shstrndx);
size_t ch_xnum_shdr(const struct ch *ch, unsigned char *p);
/* Shorten the headers in ch->prefix to end at ch->cut; the file size. */
void ch_cut_headers(struct ch *ch, uint64_t *ret_size);
/* The build-id note of the ELF file whose first page is page. */
size_t ch_first_page_build_id(const unsigned char *page, size_t len,
			      const unsigned char **ret);
void ch_stream_deinit(struct ch *ch);

/* ---- corehandler-store.c ---- */
struct kcore_error *ch_store_open(struct ch *ch);
struct kcore_error *ch_store_copy(struct ch *ch);
/* Under the store lock: the limits again, the metadata, then the core. */
struct kcore_error *ch_store_publish(struct ch *ch, const char *meta,
				     size_t meta_len);
void ch_store_set_cut(struct ch *ch, uint64_t off, enum kcore_ch_reason why);
struct kcore_error *ch_store_finish_digest(struct ch *ch, uint64_t size);
/* A compressed core: keep a window of each thread's stack (from its
 * stack pointer up) as the stream passes, for the backtrace. */
void ch_store_plan_stacks(struct ch *ch);
/* The headers, notes, first pages and stack windows as a small core
 * (compressed cores); malloc()ed. */
unsigned char *ch_store_first_pages_core(struct ch *ch, size_t *ret_len);
void ch_store_deinit(struct ch *ch);

/* ---- corehandler-socket.c ---- */
/* The coredump request's COREDUMP_HOLES: holes as records, not zeros. */
#define CH_REQ_HOLES (1ull << 4)
/* ch->place from /proc/PID (through ch->proc_fd, if ch->proc_ok); a
 * socket's pidfd is checked afterwards, and proc_ok cleared if the
 * process is not that one. */
void ch_place_facts(struct ch *ch);

/* ---- corehandler-facts.c ---- */
/* Whether /proc/PID is the process dumping this core (ch->proc_fd then
 * opened; else ch->proc_why says why not). */
bool ch_facts_dumping(struct ch *ch);
/* ch->facts: the process's through ch->proc_fd (when ch->proc_ok), the
 * machine's always. */
void ch_facts_gather(struct ch *ch);
void ch_facts_deinit(struct ch *ch);
/* The unit, slice, session and owner of a cgroup path, as systemd's
 * cgroup-util derives them (facts->cgroup must be set). */
void ch_cgroup_units(struct ch_facts *f);

/* ---- corehandler-meta.c ---- */
/* The backtrace as text, systemd-coredump's way ("Stack trace of
 * thread N:" and a line per frame); appended to f. */
void ch_backtrace_text(const struct ch_backtrace *bt, FILE *f);
/* The journal entry of a stored core into ch->res->journal. */
void ch_journal_build(struct ch *ch);
struct kcore_error *ch_meta_build(struct ch *ch, char **ret, size_t *ret_len);

/* ---- corehandler-priv.c ---- */
/* Keep only the capabilities the steps before the copy need. */
struct kcore_error *ch_priv_restrict(struct ch *ch);
/* Open the mapped files for the helper (needs CAP_SYS_ADMIN). */
void ch_priv_open_maps(struct ch *ch);
/* Start the build-ID helper (it drops everything at once). */
void ch_priv_start_helper(struct ch *ch);
/* Drop every capability that is left, for good. */
struct kcore_error *ch_priv_drop(struct ch *ch);
/* Send the core (fd, or a memory image) to the helper, wait for the
 * modules within its time limit; ch->ids says what came. */
void ch_priv_build_ids(struct ch *ch, int core_fd, const unsigned char *img,
		       size_t img_len);
/* Decide ch->user_access from the options, %d and NT_AUXV. */
void ch_priv_decide_access(struct ch *ch);
/* Give the crashing user read access to fd (an ACL entry); dir: and
 * search access. */
int ch_priv_grant_read(int fd, uint32_t uid, bool dir);
/* Search access only (the store: no listing of others' cores). */
int ch_priv_grant_search(int fd, uint32_t uid);
void ch_priv_deinit(struct ch *ch);

/* ---- corehandler-wire.c ---- */
struct ch_buildid_input;
/*
 * The helper's reply, in two parts: what it saw of itself and the
 * modules, as soon as it has them; then the backtrace (frames beyond
 * budget bytes left out, their thread marked truncated), so that a
 * backtrace past the time limit costs only itself.  malloc()ed.
 */
char *ch_wire_modules(const struct ch_buildids *ids, size_t *ret_len);
char *ch_wire_backtrace(const struct ch_backtrace *bt, size_t budget,
			size_t *ret_len);
/* The reply parsed into *ids with every length checked.  *ret_bt_cut:
 * in, the helper was killed; out, no backtrace came.  False if the
 * modules' part is not whole (killed: nothing set). */
bool ch_wire_parse_reply(const unsigned char *buf, size_t len,
			 struct ch_buildids *ids, bool *ret_bt_cut);
/* The helper's one message: the core's descriptor, whether it is the
 * first-pages image, the backtrace's time and the debuginfo files
 * (CH_MAX_DEBUG at most); 0 or -1. */
int ch_wire_send_input(int sock, int fd, bool memory, uint64_t bt_ms,
		       const struct ch_debugfile *debug, size_t ndebug);
/* Received into *in (and debug, CH_MAX_DEBUG of them); false if the
 * message is not one. */
bool ch_wire_recv_input(int sock, struct ch_buildid_input *in,
			struct ch_debugfile *debug);

/* ---- corehandler-buildid.c (in the helper) ---- */
struct ch_buildid_input {
	int core_fd; /* the stored core, read-only, or a memfd image */
	bool memory; /* core_fd holds the first-pages image */
	const struct ch_map *maps;
	size_t nmaps;
	/* Unwind the threads within this time after the build IDs; 0 =
	 * no backtrace.  Debuginfo only from these files. */
	uint64_t backtrace_ms;
	const struct ch_debugfile *debug;
	size_t ndebug;
	/* Called with the modules, before the unwinding (may be NULL). */
	void (*on_modules)(const struct ch_buildids *ids, void *arg);
	void *arg;
};
void ch_buildid_scan(const struct ch_buildid_input *in,
		     struct ch_buildids *ret);
void ch_buildids_deinit(struct ch_buildids *ids);
void ch_backtrace_deinit(struct ch_backtrace *bt);
/* Open /usr/lib/debug/.build-id/NN/REST.debug for the build IDs in the
 * first page of each file the core maps at offset 0 (read from the
 * stored core or the pages kept); at most max; the count. */
size_t ch_buildid_debug_files(struct ch *ch, struct ch_debugfile *out,
			      size_t max);
/* A compressed core: add the build IDs in the first pages of the files
 * NT_FILE maps at offset 0 that the helper did not report. */
void ch_buildid_add_first_pages(struct ch *ch);
/* The package notes in the first page of each module's file in the
 * core (ch->pkgs); the JSON bounded and parsed strictly. */
void ch_buildid_packages(struct ch *ch);
void ch_packages_deinit(struct ch *ch);
/* A package note's JSON (len bytes) into p; false if it is not a flat
 * object of string members. */
bool ch_package_parse(const char *json, size_t len, struct ch_package *p);

#endif
