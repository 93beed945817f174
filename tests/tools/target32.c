// SPDX-License-Identifier: MIT
/*
 * target32: the 32-bit (ia32) process tests/integration/pid-32bit.sh
 * captures.  Built there with cc -m32 (libc6-dev-i386, lib32gcc-12-dev).
 * Two worker threads wait on a pipe in park(); the main thread fills a
 * pattern on its stack and in a global, prints "ready THREADS" and
 * blocks in fgets() until stdin ends.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NWORKERS 2

unsigned int pattern32[1024];
static int pipefd[2];

__attribute__((noinline)) static void *park(void *arg)
{
	char c;

	(void)arg;
	while (read(pipefd[0], &c, 1) < 0)
		;
	return NULL;
}

__attribute__((noinline)) static void wait_input(volatile unsigned *stack)
{
	char line[64];

	printf("ready threads=%d stack=%p global=%p\n", NWORKERS + 1,
	       (void *)stack, (void *)pattern32);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	stack[0] ^= 0;
}

int main(void)
{
	volatile unsigned stack[256];
	pthread_t t[NWORKERS];

	if (pipe(pipefd) != 0)
		return 1;
	for (unsigned i = 0; i < 1024; i++)
		pattern32[i] = 0x32320000u + i;
	for (unsigned i = 0; i < 256; i++)
		stack[i] = 0x5ca1ab1eu ^ i;
	for (int i = 0; i < NWORKERS; i++)
		if (pthread_create(&t[i], NULL, park, NULL) != 0)
			return 1;
	wait_input(stack);
	if (write(pipefd[1], "xx", NWORKERS) != NWORKERS)
		return 1;
	for (int i = 0; i < NWORKERS; i++)
		pthread_join(t[i], NULL);
	return 0;
}
