/* insnmark: a QEMU TCG plugin that counts the guest instructions executed
 * between marker instructions the guest runs, user space and kernel apart.
 * It is the measure of `make bench`'s instruction tables (docs/performance.md).
 *
 * The marker is a 7-byte no-op, nopl 0x5AFEcccc(%rax) = 0F 1F 80 lo hi FE 5A,
 * where cccc = hi<<8 | lo says what to do:
 *   0x0001        start a window on the vCPU that runs it (counters zeroed)
 *   0x01nn        stop it and append "nn vcpu user kernel" to the output
 *   0x0002        start a global window (every vCPU: a whole program run,
 *                 fork to exit, wherever the scheduler puts it)
 *   0x02nn        stop it and append "nn G u0 k0 u1 k1 ..." (per vCPU)
 * Instructions are counted per translation block executed, the whole block
 * at its entry; a block whose address has bit 63 set is the kernel's. A
 * sample is exact up to one block at each end, the same for every program.
 *
 * Arguments (qemu -plugin libinsnmark.so,out=FILE[,prof=FILE]):
 *   out=FILE   where samples are appended (default /tmp/insnmark.txt)
 *   prof=FILE  also count user-space instructions by block address while
 *              any per-vCPU window is open and write "address count" lines
 *              at exit: the report maps them to a Go binary's functions.
 *   kprof=FILE the same for the kernel's instructions (map them with the
 *              guest's /proc/kallsyms).
 *   gprof=N    profile the global windows too, on vCPU N alone (a whole
 *              program run pinned there: a tool, an rc_pingpong client).
 *
 * Build: gcc -O2 -shared -fPIC -o libinsnmark.so insnmark.c -lpthread */
#include "qemu-plugin.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MAXV 16

static struct {
	int on;
	uint64_t user, kern;
} win[MAXV];
static int gon, gprof = -1;
static uint64_t guser[MAXV], gkern[MAXV];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;

/* The profile: an open-addressing table of block address -> instructions. */
static FILE *prof, *kprof;
static uint64_t *pkeys, *pvals;
static size_t pcap, plen;

struct block {
	uint64_t vaddr;
	uint32_t n;
	uint32_t kern;
};

static void prof_add(uint64_t va, uint64_t n)
{
	if (plen * 2 >= pcap) {
		size_t ncap = pcap ? pcap * 2 : 1 << 16;
		uint64_t *nk = calloc(ncap, sizeof *nk), *nv = calloc(ncap, sizeof *nv);
		if (!nk || !nv) {
			free(nk);
			free(nv);
			return;
		}
		for (size_t i = 0; i < pcap; i++) {
			if (!pkeys[i])
				continue;
			size_t j = (pkeys[i] * 0x9E3779B97F4A7C15ull) & (ncap - 1);
			while (nk[j])
				j = (j + 1) & (ncap - 1);
			nk[j] = pkeys[i];
			nv[j] = pvals[i];
		}
		free(pkeys);
		free(pvals);
		pkeys = nk, pvals = nv, pcap = ncap;
	}
	size_t j = (va * 0x9E3779B97F4A7C15ull) & (pcap - 1);
	while (pkeys[j] && pkeys[j] != va)
		j = (j + 1) & (pcap - 1);
	if (!pkeys[j])
		pkeys[j] = va, plen++;
	pvals[j] += n;
}

static void count(unsigned int v, uint64_t n, int kern, uint64_t va)
{
	if (v >= MAXV)
		return;
	if (win[v].on) {
		if (kern) {
			win[v].kern += n;
			if (kprof) {
				pthread_mutex_lock(&mu);
				prof_add(va, n);
				pthread_mutex_unlock(&mu);
			}
		} else {
			win[v].user += n;
			if (prof) {
				pthread_mutex_lock(&mu);
				prof_add(va, n);
				pthread_mutex_unlock(&mu);
			}
		}
	}
	if (gon) {
		if (kern)
			gkern[v] += n;
		else
			guser[v] += n;
		if ((int)v == gprof && !win[v].on && (kern ? kprof != NULL : prof != NULL)) {
			pthread_mutex_lock(&mu);
			prof_add(va, n);
			pthread_mutex_unlock(&mu);
		}
	}
}

/* Without a profile the block's size and ring travel in the pointer. */
static void tb_exec(unsigned int v, void *ud)
{
	uint64_t x = (uint64_t)(uintptr_t)ud;
	count(v, x & 0xffffffff, (int)(x >> 32), 0);
}

static void tb_exec_prof(unsigned int v, void *ud)
{
	const struct block *b = ud;
	count(v, b->n, (int)b->kern, b->vaddr);
}

static void mark(unsigned int v, void *ud)
{
	unsigned c = (unsigned)(uintptr_t)ud;
	if (v >= MAXV)
		return;
	if (c == 1) {
		win[v].user = win[v].kern = 0;
		win[v].on = 1;
		return;
	}
	if (c == 2) {
		pthread_mutex_lock(&mu);
		memset(guser, 0, sizeof guser);
		memset(gkern, 0, sizeof gkern);
		gon = 1;
		pthread_mutex_unlock(&mu);
		return;
	}
	pthread_mutex_lock(&mu);
	if ((c >> 8) == 1 && win[v].on) {
		win[v].on = 0;
		fprintf(out, "%u %u %llu %llu\n", c & 0xff, v, (unsigned long long)win[v].user,
			(unsigned long long)win[v].kern);
		fflush(out);
	} else if ((c >> 8) == 2 && gon) {
		gon = 0;
		fprintf(out, "%u G", c & 0xff);
		for (int i = 0; i < 4; i++)
			fprintf(out, " %llu %llu", (unsigned long long)guser[i], (unsigned long long)gkern[i]);
		fprintf(out, "\n");
		fflush(out);
	}
	pthread_mutex_unlock(&mu);
}

static void translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	uint64_t va = qemu_plugin_tb_vaddr(tb);
	int kern = (va >> 63) & 1;
	struct block *b = prof || kprof ? malloc(sizeof *b) : NULL;
	if (b) {
		b->vaddr = va, b->n = (uint32_t)n, b->kern = (uint32_t)kern;
		qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec_prof, QEMU_PLUGIN_CB_NO_REGS, b);
	} else {
		qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS,
						     (void *)(uintptr_t)(((uint64_t)kern << 32) | n));
	}
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
		if (qemu_plugin_insn_size(in) != 7)
			continue;
		const uint8_t *p = qemu_plugin_insn_data(in);
		if (p[0] == 0x0f && p[1] == 0x1f && p[2] == 0x80 && p[5] == 0xfe && p[6] == 0x5a)
			qemu_plugin_register_vcpu_insn_exec_cb(in, mark, QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)(p[3] | (p[4] << 8)));
	}
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	for (size_t i = 0; i < pcap; i++) {
		FILE *f = pkeys[i] >> 63 ? kprof : prof;
		if (pkeys[i] && f)
			fprintf(f, "%llx %llu\n", (unsigned long long)pkeys[i], (unsigned long long)pvals[i]);
	}
	if (prof)
		fclose(prof);
	if (kprof)
		fclose(kprof);
	prof = kprof = NULL;
	if (out)
		fclose(out);
	out = NULL;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	const char *path = "/tmp/insnmark.txt", *ppath = NULL;
	for (int i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4))
			path = argv[i] + 4;
		else if (!strncmp(argv[i], "prof=", 5))
			ppath = argv[i] + 5;
		else if (!strncmp(argv[i], "kprof=", 6) && !(kprof = fopen(argv[i] + 6, "w")))
			return -1;
		else if (!strncmp(argv[i], "gprof=", 6))
			gprof = atoi(argv[i] + 6);
	}
	out = fopen(path, "a");
	if (!out)
		return -1;
	if (ppath && !(prof = fopen(ppath, "w")))
		return -1;
	fprintf(out, "# insnmark target=%s\n", info->target_name);
	fflush(out);
	qemu_plugin_register_vcpu_tb_trans_cb(id, translate);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
