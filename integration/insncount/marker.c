/* marker: the insnmark markers from the shell, for windows around whole
 * program runs (make bench's tool rows), and CPU pinning (the guest has no
 * taskset).
 *   marker start          open a global window (0x0002)
 *   marker stop N         close it as sample N (0x0200|N, N 0..255)
 *   marker vstart         open a window on this vCPU (0x0001; pin it)
 *   marker vstop N        close it as sample N (0x0100|N)
 *   marker pin CPU CMD... run CMD pinned to CPU
 *   marker pinpid CPU PID pin the running task PID (a kernel thread) to CPU
 * The marker instruction is written into an executable page and called, so
 * one binary serves every N. Static: it runs before and after anything. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int mark(unsigned code)
{
	unsigned char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("marker: mmap");
		return 1;
	}
	const unsigned char code7[] = {0x0f, 0x1f, 0x80, code & 0xff, (code >> 8) & 0xff, 0xfe, 0x5a, 0xc3};
	memcpy(p, code7, sizeof code7);
	((void (*)(void))p)();
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "start"))
		return mark(0x0002);
	if (argc == 3 && !strcmp(argv[1], "stop"))
		return mark(0x0200 | (atoi(argv[2]) & 0xff));
	if (argc == 2 && !strcmp(argv[1], "vstart"))
		return mark(0x0001);
	if (argc == 3 && !strcmp(argv[1], "vstop"))
		return mark(0x0100 | (atoi(argv[2]) & 0xff));
	if (argc == 4 && !strcmp(argv[1], "pinpid")) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(atoi(argv[2]), &set);
		if (sched_setaffinity(atoi(argv[3]), sizeof set, &set)) {
			perror("marker: sched_setaffinity");
			return 1;
		}
		return 0;
	}
	if (argc >= 4 && !strcmp(argv[1], "pin")) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(atoi(argv[2]), &set);
		if (sched_setaffinity(0, sizeof set, &set)) {
			perror("marker: sched_setaffinity");
			return 1;
		}
		execvp(argv[3], argv + 3);
		perror(argv[3]);
		return 127;
	}
	fprintf(stderr, "usage: marker start | stop N | vstart | vstop N | pin CPU CMD [ARG...] | pinpid CPU PID\n");
	return 2;
}
