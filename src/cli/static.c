// SPDX-License-Identifier: MIT
/* Only in the static build (KCOREDUMP_STATIC), linked with
 * -Wl,--wrap=dlopen,--wrap=getaddrinfo,--wrap=gethostbyname: these fail.
 *
 * A static glibc program that dlopens a shared library, or that looks a
 * name up through NSS (which dlopens libnss_*.so), gets a second C library
 * with its own heap and TLS; that works only when the host's glibc is the
 * very version it was linked with, which on a foreign host it is not.
 * kcoredump itself never looks names up; the callers that could are in
 * the libraries and cope with a failure:
 * - libdwfl's debuginfod client (elfutils 0.188 dlopens libdebuginfod.so.1
 *   when a build ID's file is not found locally): no debuginfod;
 * - OpenSSL's DSO loader (engines or providers named in a config file)
 *   and its BIO socket helpers (never called by kcoredump). */
#include <errno.h>
#include <netdb.h>
#include <stddef.h>

void *__wrap_dlopen(const char *file, int mode);
int __wrap_getaddrinfo(const char *node, const char *service,
		       const struct addrinfo *hints, struct addrinfo **res);
struct hostent *__wrap_gethostbyname(const char *name);

void *__wrap_dlopen(const char *file, int mode)
{
	(void)file;
	(void)mode;
	return NULL;
}

int __wrap_getaddrinfo(const char *node, const char *service,
		       const struct addrinfo *hints, struct addrinfo **res)
{
	(void)node;
	(void)service;
	(void)hints;
	*res = NULL;
	errno = ENOSYS;
	return EAI_SYSTEM;
}

struct hostent *__wrap_gethostbyname(const char *name)
{
	(void)name;
	h_errno = NO_RECOVERY;
	return NULL;
}
