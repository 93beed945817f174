// SPDX-License-Identifier: MIT
/* libkcore's build facts for `kcoredump version`: static or shared, the
 * target machine and the library versions.  Versions come from each
 * library at run time where it has a call for it (so a shared build says
 * what it loaded), else from its headers or pkg-config at build time. */
#include <gnu/libc-version.h>
#include <lzma.h>
#include <openssl/opensslv.h>
#include <openssl/crypto.h>
#include <zlib.h>
#include <zstd.h>
#include <elfutils/libdwfl.h>
#include <lzo/lzoconf.h>
#ifdef KCOREDUMP_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif
#ifdef KCOREDUMP_HAVE_NETTLE
#include <nettle/version.h>
#include <stdio.h>
#endif

#include "kcoredump/version.h"

#ifndef KCOREDUMP_SNAPPY_VERSION
#define KCOREDUMP_SNAPPY_VERSION "unknown"
#endif
/* libcap and libacl have no version call: their pkg-config versions. */
#ifndef KCOREDUMP_LIBCAP_VERSION
#define KCOREDUMP_LIBCAP_VERSION "unknown"
#endif
#ifndef KCOREDUMP_LIBACL_VERSION
#define KCOREDUMP_LIBACL_VERSION "unknown"
#endif

bool kcore_build_is_static(void)
{
#ifdef KCOREDUMP_STATIC
	return true;
#else
	return false;
#endif
}

const char *kcore_build_machine(void)
{
#if defined(__x86_64__)
	return "x86_64";
#elif defined(__aarch64__)
	return "aarch64";
#elif defined(__i386__)
	return "i386";
#elif defined(__riscv) && __riscv_xlen == 64
	return "riscv64";
#elif defined(__powerpc64__)
	return "ppc64";
#elif defined(__s390x__)
	return "s390x";
#else
	return "unknown";
#endif
}

const char *kcore_build_libc_version(void)
{
	return gnu_get_libc_version();
}

const struct kcore_library_version *kcore_library_versions(size_t *ret_count)
{
	static struct kcore_library_version v[11];
#ifdef KCOREDUMP_HAVE_NETTLE
	static char nettle[24];
#endif
	size_t n = 0;

	v[n++] = (struct kcore_library_version){ "elfutils",
						 dwfl_version(NULL) };
	v[n++] = (struct kcore_library_version){ "zstd", ZSTD_versionString() };
	v[n++] = (struct kcore_library_version){ "liblzma",
						 lzma_version_string() };
	v[n++] = (struct kcore_library_version){
		"openssl", OpenSSL_version(OPENSSL_VERSION_STRING)
	};
#ifdef KCOREDUMP_HAVE_NETTLE
	snprintf(nettle, sizeof(nettle), "%d.%d", nettle_version_major(),
		 nettle_version_minor());
	v[n++] = (struct kcore_library_version){ "nettle", nettle };
#endif
	v[n++] = (struct kcore_library_version){ "zlib", zlibVersion() };
#ifdef KCOREDUMP_HAVE_LIBDEFLATE
	v[n++] = (struct kcore_library_version){ "libdeflate",
						 LIBDEFLATE_VERSION_STRING };
#endif
	v[n++] = (struct kcore_library_version){ "lzo", lzo_version_string() };
	v[n++] = (struct kcore_library_version){ "snappy",
						 KCOREDUMP_SNAPPY_VERSION };
	v[n++] = (struct kcore_library_version){ "libcap",
						 KCOREDUMP_LIBCAP_VERSION };
	v[n++] = (struct kcore_library_version){ "libacl",
						 KCOREDUMP_LIBACL_VERSION };
	*ret_count = n;
	return v;
}
