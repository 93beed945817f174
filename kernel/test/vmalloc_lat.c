// SPDX-License-Identifier: GPL-2.0
/*
 * vmalloc_lat: latency of vmalloc() and vfree() as seen by a caller, for
 * measuring how much /proc/kcore readers (which take the vmap node locks
 * vmalloc() and vfree() need) delay them (tests/vm/cases/kernel-lock.sh).
 *
 *   echo N > /sys/module/vmalloc_lat/parameters/run
 *   cat /sys/module/vmalloc_lat/parameters/result
 *
 * Writing N runs N rounds of vmalloc(size) (size: the "size" parameter,
 * default 4 pages), touching the first page, and vfree(), each call timed
 * with ktime_get_ns(); the write returns when they are done.  "result"
 * then reads
 *   "n N vmalloc_ns p50 P p99 P p999 P max M vfree_ns p50 P p99 P p999 P max M"
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/vmalloc.h>
#include <linux/slab.h>
#include <linux/ktime.h>
#include <linux/sort.h>
#include <linux/sched.h>
#include <linux/mutex.h>

static unsigned int size = 4 * PAGE_SIZE;
module_param(size, uint, 0600);
MODULE_PARM_DESC(size, "bytes per vmalloc() (default 4 pages)");

static char result[256] = "none";
module_param_string(result, result, sizeof(result), 0400);
MODULE_PARM_DESC(result, "latencies of the last run");

static DEFINE_MUTEX(run_lock);

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

static u64 pct(const u64 *v, unsigned int n, unsigned int per_mille)
{
	unsigned int i = (unsigned int)(((u64)n * per_mille) / 1000);

	return v[min(i, n - 1)];
}

static int run(unsigned int n)
{
	u64 *va, *vf;
	unsigned int i;
	int len;

	va = kvmalloc_array(n, sizeof(*va), GFP_KERNEL);
	vf = kvmalloc_array(n, sizeof(*vf), GFP_KERNEL);
	if (!va || !vf) {
		kvfree(va);
		kvfree(vf);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		u64 t0, t1, t2, t3;
		char *p;

		t0 = ktime_get_ns();
		p = vmalloc(size);
		t1 = ktime_get_ns();
		if (!p) {
			kvfree(va);
			kvfree(vf);
			return -ENOMEM;
		}
		p[0] = 1;
		t2 = ktime_get_ns();
		vfree(p);
		t3 = ktime_get_ns();
		va[i] = t1 - t0;
		vf[i] = t3 - t2;
		cond_resched();
	}
	sort(va, n, sizeof(*va), cmp_u64, NULL);
	sort(vf, n, sizeof(*vf), cmp_u64, NULL);
	len = scnprintf(result, sizeof(result),
			"n %u vmalloc_ns p50 %llu p99 %llu p999 %llu max %llu "
			"vfree_ns p50 %llu p99 %llu p999 %llu max %llu",
			n, pct(va, n, 500), pct(va, n, 990), pct(va, n, 999),
			va[n - 1], pct(vf, n, 500), pct(vf, n, 990),
			pct(vf, n, 999), vf[n - 1]);
	kvfree(va);
	kvfree(vf);
	return len > 0 ? 0 : -EINVAL;
}

static int run_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n;
	int ret;

	ret = kstrtouint(val, 0, &n);
	if (ret)
		return ret;
	if (!n || n > 10000000)
		return -EINVAL;
	mutex_lock(&run_lock);
	ret = run(n);
	mutex_unlock(&run_lock);
	return ret;
}

static const struct kernel_param_ops run_ops = {
	.set = run_set,
};
module_param_cb(run, &run_ops, NULL, 0200);
MODULE_PARM_DESC(run, "write N: run N vmalloc()/vfree() rounds");

MODULE_DESCRIPTION("vmalloc()/vfree() latency percentiles");
MODULE_LICENSE("GPL");
