// SPDX-License-Identifier: MIT
/*
 * Progress lines on stderr (dump, convert, pid, verify, extract, mount's
 * prefetch): fields of a line, fitted to the terminal's width so that a
 * redraw with "\r\e[K" stays on one physical line (issue 46 item 1), and
 * the timer that redraws the last figures while a dump waits.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "kcoredump/dump.h"

void cli_progress_add(struct cli_progress_line *l, int keep, const char *fmt,
		      ...)
{
	va_list ap;

	if (l->n == CLI_PROGRESS_FIELDS)
		return;
	va_start(ap, fmt);
	vsnprintf(l->f[l->n].text, sizeof(l->f[l->n].text), fmt, ap);
	va_end(ap);
	l->f[l->n++].keep = keep;
}

/* Columns of UTF-8 text ("…" is one): the bytes that start a character. */
static size_t columns(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* The fields in[] says, in order: two spaces after the first (the
 * percentage), ", " between the others. */
static void join(const struct cli_progress_line *l, const bool *in, char *buf,
		 size_t size)
{
	size_t len = 0, shown = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < l->n && len + 1 < size; i++) {
		int n;

		if (!in[i])
			continue;
		n = snprintf(buf + len, size - len, "%s%s",
			     shown == 0	  ? ""
			     : shown == 1 ? "  "
					  : ", ",
			     l->f[i].text);
		if (n < 0)
			break;
		len += (size_t)n < size - len ? (size_t)n : size - len - 1;
		shown++;
	}
}

void cli_progress_fit(const struct cli_progress_line *l, unsigned width,
		      char *buf, size_t size)
{
	bool in[CLI_PROGRESS_FIELDS] = { false };
	size_t left = l->n;

	for (size_t i = 0; i < l->n; i++)
		in[i] = true;
	join(l, in, buf, size);
	/* Drop the field kept least (the last of equals) until it fits. */
	while (width && left > 1 && columns(buf) > width - 1) {
		size_t drop = l->n;

		for (size_t i = 0; i < l->n; i++)
			if (in[i] &&
			    (drop == l->n || l->f[i].keep <= l->f[drop].keep))
				drop = i;
		in[drop] = false;
		left--;
		join(l, in, buf, size);
	}
	/* One field still too wide: cut it, at a character's start. */
	if (width) {
		size_t cols = 0, i = 0;

		for (; buf[i]; i++) {
			if (((unsigned char)buf[i] & 0xc0) != 0x80 &&
			    ++cols > width - 1)
				break;
		}
		buf[i] = '\0';
	}
}

unsigned cli_term_width(void)
{
	struct winsize ws;
	const char *env = getenv("COLUMNS");

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	if (env && atoi(env) > 0)
		return (unsigned)atoi(env);
	return 80;
}

void cli_progress_print(struct cli_progress *ps,
			const struct cli_progress_line *l)
{
	char buf[CLI_PROGRESS_FIELDS * 64 + 32];

	/* Without a terminal: lines in a log, all the fields. */
	cli_progress_fit(l, ps->tty ? cli_term_width() : 0, buf, sizeof(buf));
	fprintf(stderr, "%s%s%s", ps->tty ? "\r\033[K" : "", buf,
		ps->tty ? "" : "\n");
	fflush(stderr);
	ps->shown = true;
}

const char *cli_hms(double seconds, char *buf, size_t size)
{
	uint64_t s = seconds > 0 ? (uint64_t)seconds : 0;

	snprintf(buf, size, "%" PRIu64 ":%02u:%02u", s / 3600,
		 (unsigned)(s / 60 % 60), (unsigned)(s % 60));
	return buf;
}

bool cli_progress_stopping(const struct cli_progress *ps)
{
	return ps->cancel && *ps->cancel;
}

/* What a dump has done of how much, in fields from the most kept to the
 * least: the percentage, done of total (the logical bytes: read, holes
 * and excluded pages add up to it), what comes next (the ETA, the phase
 * after the reads, or "stopping…" after a signal), the read rate, the
 * time since the start, what was written and its ratio, then how the
 * done bytes split into read, holes, excluded and shared. */
static void dump_line(struct cli_progress *ps,
		      const struct kcore_dump_stats *st, double elapsed)
{
	struct cli_progress_line l = { 0 };
	char a[32], b[32], next[64], t[32];
	double rate = elapsed > 0 ? (double)st->bytes_read / elapsed : 0;
	uint64_t left = st->bytes_total > st->bytes_done
				? st->bytes_total - st->bytes_done
				: 0;
	uint64_t parts = st->bytes_read + st->bytes_hole + st->bytes_excluded;
	uint64_t shared = st->bytes_done > parts ? st->bytes_done - parts : 0;
	bool reading = !st->phase || !strcmp(st->phase, "reading");

	if (cli_progress_stopping(ps)) {
		snprintf(next, sizeof(next), "stopping…");
	} else if (!reading) {
		snprintf(next, sizeof(next), "%s", st->phase);
	} else if (elapsed > 0 && st->bytes_done) {
		/* Holes go fast: estimate from the logical rate. */
		double lrate = (double)st->bytes_done / elapsed;

		snprintf(next, sizeof(next), "ETA %s",
			 cli_hms((double)left / lrate, t, sizeof(t)));
	} else {
		snprintf(next, sizeof(next), "ETA -:--:--");
	}
	cli_progress_add(&l, 100, "%5.1f%%",
			 st->bytes_total ? 100.0 * (double)st->bytes_done /
						   (double)st->bytes_total
					 : 100.0);
	cli_progress_add(&l, 90, "%s of %s",
			 cli_human_size(st->bytes_done, a, sizeof(a)),
			 cli_human_size(st->bytes_total, b, sizeof(b)));
	cli_progress_add(&l, 30, "read %s",
			 cli_human_size(st->bytes_read, a, sizeof(a)));
	cli_progress_add(&l, 20, "holes %s",
			 cli_human_size(st->bytes_hole, a, sizeof(a)));
	if (st->bytes_excluded)
		cli_progress_add(
			&l, 20, "excluded %s",
			cli_human_size(st->bytes_excluded, a, sizeof(a)));
	/* The rest of the done bytes: segments that share another's
	 * memory (a kernel image in the direct map), copied, not read. */
	if (shared)
		cli_progress_add(&l, 20, "shared %s",
				 cli_human_size(shared, a, sizeof(a)));
	cli_progress_add(&l, 60, "%s/s",
			 cli_human_size((uint64_t)rate, a, sizeof(a)));
	cli_progress_add(&l, 40, "written %s (%.1fx)",
			 cli_human_size(st->bytes_written, a, sizeof(a)),
			 st->bytes_written ? (double)st->bytes_done /
						     (double)st->bytes_written
					   : 0.0);
	cli_progress_add(&l, 80, "%s", next);
	cli_progress_add(&l, 50, "elapsed %s", cli_hms(elapsed, t, sizeof(t)));
	cli_progress_print(ps, &l);
}

static void draw(struct cli_progress *ps, const struct kcore_dump_stats *st,
		 double elapsed)
{
	if (ps->draw) {
		ps->draw(ps, st, elapsed);
		ps->shown = true;
		return;
	}
	dump_line(ps, st, elapsed);
}

struct cli_progress_timer {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	bool stop, have, stopping_shown;
	struct kcore_dump_stats st; /* the last figures */
	uint64_t at_ns;		    /* when they came (monotonic) */
	uint64_t drawn_ns;	    /* the last redraw */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void cli_dump_progress(void *arg, const struct kcore_dump_stats *st)
{
	struct cli_progress *ps = arg;
	struct cli_progress_timer *t = ps->timer;

	if (!t) {
		draw(ps, st, st->elapsed);
		return;
	}
	pthread_mutex_lock(&t->lock);
	t->st = *st;
	t->have = true;
	t->at_ns = mono_ns();
	/* Without a terminal: a line a second at most, the phases all. */
	if (ps->tty || t->at_ns - t->drawn_ns >= 1000000000u ||
	    (st->phase && strcmp(st->phase, "reading"))) {
		draw(ps, st, st->elapsed);
		t->drawn_ns = t->at_ns;
		t->stopping_shown = cli_progress_stopping(ps);
	}
	pthread_mutex_unlock(&t->lock);
}

/* Redraws every 500 ms on a terminal (a second without), and at once
 * when a signal asks the dump to stop: the dump may take seconds to wind
 * down (its last blocks), and the line says "stopping…" meanwhile. */
static void *progress_timer(void *arg)
{
	struct cli_progress *ps = arg;
	struct cli_progress_timer *t = ps->timer;
	uint64_t period = ps->tty ? 500000000u : 1000000000u;

	pthread_mutex_lock(&t->lock);
	while (!t->stop) {
		struct timespec until;
		uint64_t now;
		bool stopping;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 100000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&t->cv, &t->lock, &until);
		now = mono_ns();
		stopping = cli_progress_stopping(ps) && !t->stopping_shown;
		if (t->stop || !t->have ||
		    (now - t->drawn_ns < period && !stopping) ||
		    (t->st.phase && !strcmp(t->st.phase, "done")))
			continue;
		draw(ps, &t->st,
		     t->st.elapsed + (double)(now - t->at_ns) / 1e9);
		t->drawn_ns = now;
		t->stopping_shown = cli_progress_stopping(ps);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

void cli_progress_start(struct cli_progress *ps)
{
	struct cli_progress_timer *t = calloc(1, sizeof(*t));

	if (!t)
		return; /* progress then redraws with the dump only */
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cv, NULL);
	ps->timer = t;
	if (pthread_create(&t->thread, NULL, progress_timer, ps)) {
		ps->timer = NULL;
		pthread_cond_destroy(&t->cv);
		pthread_mutex_destroy(&t->lock);
		free(t);
	}
}

void cli_progress_stop(struct cli_progress *ps)
{
	struct cli_progress_timer *t = ps->timer;

	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	t->stop = true;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->lock);
	pthread_join(t->thread, NULL);
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->lock);
	free(t);
	ps->timer = NULL;
}
