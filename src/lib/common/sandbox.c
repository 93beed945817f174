// SPDX-License-Identifier: MIT
/*
 * The seccomp filter of the processes that run libdwfl, a large parser
 * that is not ours, on hostile data: the core handler's build-ID helper
 * and info's module listing (modules.c).  Both are forked for it alone
 * and may read and write the descriptors they were given, manage
 * memory, signal themselves (tgkill of their own pid only) and exit;
 * nothing else.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

void kcore_sandbox_rlimits(unsigned cpu_seconds)
{
	struct rlimit rl;

	rl.rlim_cur = rl.rlim_max = cpu_seconds;
	setrlimit(RLIMIT_CPU, &rl);
	rl.rlim_cur = rl.rlim_max = 0;
	setrlimit(RLIMIT_FSIZE, &rl);
	setrlimit(RLIMIT_NPROC, &rl);
#ifndef UNDER_ASAN
	/* ASan reserves terabytes of address space for its shadow. */
	rl.rlim_cur = rl.rlim_max = 1ull << 30;
	setrlimit(RLIMIT_AS, &rl);
#endif
}

#if defined(__x86_64__)
#define SECCOMP_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SECCOMP_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef SECCOMP_ARCH
#define ALLOW(nr)                                        \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define DENY(nr, e)                                      \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
		BPF_STMT(BPF_RET | BPF_K,                \
			 SECCOMP_RET_ERRNO | ((e)&SECCOMP_RET_DATA))

/*
 * Reading the core and the mapped files, memory, the reply, dying: all
 * the process may do.  open() and its kin fail with EACCES (libdwfl then
 * goes on without the file), everything else with EPERM.
 */
/* The two halves of seccomp_data.args[0] (both architectures are little
 * endian). */
#define ARG0_LO offsetof(struct seccomp_data, args[0])
#define ARG0_HI (offsetof(struct seccomp_data, args[0]) + 4)

bool kcore_sandbox_seccomp(void)
{
	const uint32_t self = (uint32_t)getpid();
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SECCOMP_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
#ifdef __x86_64__
		/* No x32 system calls. */
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
#endif
		ALLOW(__NR_read),
		ALLOW(__NR_write),
		ALLOW(__NR_pread64),
		ALLOW(__NR_readv),
		ALLOW(__NR_writev),
		ALLOW(__NR_lseek),
		ALLOW(__NR_close),
		ALLOW(__NR_dup),
		ALLOW(__NR_fstat),
		ALLOW(__NR_newfstatat),
		ALLOW(__NR_mmap),
		ALLOW(__NR_munmap),
		ALLOW(__NR_mremap),
		ALLOW(__NR_mprotect),
		ALLOW(__NR_madvise),
		ALLOW(__NR_brk),
		ALLOW(__NR_futex),
		ALLOW(__NR_sendmsg),
		ALLOW(__NR_recvmsg),
		ALLOW(__NR_getpid),
		ALLOW(__NR_gettid),
		ALLOW(__NR_clock_gettime),
		ALLOW(__NR_rt_sigreturn),
		ALLOW(__NR_rt_sigprocmask),
		/* tgkill(tgid, ...) for our own tgid only (abort() and
		 * raise() signal the caller): the helper runs as nobody, and
		 * others running as nobody are not its to signal. */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_tgkill, 0, 6),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_LO),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, self, 0, 2),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_HI),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		ALLOW(__NR_sigaltstack),
		ALLOW(__NR_sched_yield),
		ALLOW(__NR_restart_syscall),
		ALLOW(__NR_exit),
		ALLOW(__NR_exit_group),
#ifdef __NR_open
		DENY(__NR_open, EACCES),
#endif
#ifdef __NR_creat
		DENY(__NR_creat, EACCES),
#endif
		DENY(__NR_openat, EACCES),
#ifdef __NR_openat2
		DENY(__NR_openat2, EACCES),
#endif
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]),
				   .filter = f };

	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0;
}
#else
bool kcore_sandbox_seccomp(void)
{
	return false; /* no filter written for this architecture */
}
#endif
