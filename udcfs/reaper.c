/*
 * The reaper: keeps the number of nodes (each an open O_PATH fd) under the process's fd limit.
 *
 * The kernel keeps a FUSE inode, and so udcfs keeps its node and fd, for as long as a dentry of
 * it stays in the kernel's dcache. With entry_timeout=0 that is still until memory pressure (the
 * kernel deletes stale dentries at their last use only for virtio-fs), so listing a directory of
 * 20,000 files, or a `find` over 100,000, leaves that many nodes, and a process limited to
 * 20,000 fds starts failing with EMFILE. libfuse's passthrough_ll has the same limit.
 *
 * Rules
 *
 * - When a new node takes the live count above `high` (node_budget in main.c, or -o max_nodes),
 *   node_get kicks the reaper thread (once: reaper_kicked). The reaper sweeps the slab like a
 *   clock: a node that is a directory, is open, or was looked up since the hand last passed it
 *   (its `referenced` bit, which the sweep clears: a second chance) is spared; for the others it
 *   asks the kernel to drop the node's remembered name (fuse_lowlevel_notify_inval_entry). The
 *   kernel then evicts the inode if nothing else uses it and sends FORGET, and node_forget frees
 *   the node; udcache drops the inode and its names at the same forget.
 * - A round sends at most (live - low) requests (low = high * 2/3) and inspects each slot at
 *   most twice, then the reaper sleeps 20 ms for the forgets to arrive, and goes on while the
 *   count stays above `high`.
 * - Directories are never reaped: dropping a directory's dentry would drop everything cached
 *   below it and make getcwd fail for a process inside it.
 * - The reaper holds no lock while it notifies (libfuse's rule: a notification must not wait on
 *   anything a request in progress may hold). It reads a node under its bucket lock only
 *   (node_reap_candidate). reaper_lock protects reaper_quit and is reaper_wake's mutex.
 */
#include "udcfs.h"

#include <errno.h>
#include <string.h>
#include <time.h>

/* One round: asks the kernel to drop up to (live - low) names. */
static void reap_round(struct udcfs *fs, uint32_t *cursor)
{
	struct nodes *t = &fs->nodes;
	uint64_t live = atomic_load_explicit(&t->live, memory_order_relaxed);
	uint32_t slots = nodes_slots(t);
	struct reap_name rn;
	uint64_t sent = 0;

	if (live <= t->low || slots == 0)
		return;
	for (uint64_t i = 0; i < 2ull * slots && sent < live - t->low; i++) {
		uint32_t slot = (*cursor)++ % slots;
		if (node_reap_candidate(fs, slot, &rn) &&
		    fuse_lowlevel_notify_inval_entry(fs->se, rn.parent, rn.name, rn.len) == 0)
			sent++;
	}
	atomic_fetch_add_explicit(&t->reaped, sent, memory_order_relaxed);
}

static void *reaper_main(void *arg)
{
	struct udcfs *fs = arg;
	struct nodes *t = &fs->nodes;
	const struct timespec pause = { 0, 20 * 1000 * 1000 };
	uint32_t cursor = 0;

	pthread_mutex_lock(&t->reaper_lock);
	for (;;) {
		while (!t->reaper_quit &&
		       atomic_load_explicit(&t->live, memory_order_relaxed) <= t->high) {
			atomic_store(&t->reaper_kicked, 0);
			pthread_cond_wait(&t->reaper_wake, &t->reaper_lock);
		}
		if (t->reaper_quit)
			break;
		pthread_mutex_unlock(&t->reaper_lock);
		reap_round(fs, &cursor);
		nanosleep(&pause, NULL);
		pthread_mutex_lock(&t->reaper_lock);
	}
	pthread_mutex_unlock(&t->reaper_lock);
	return NULL;
}

void reaper_kick(struct nodes *t)
{
	if (atomic_exchange(&t->reaper_kicked, 1))
		return;
	pthread_mutex_lock(&t->reaper_lock);
	pthread_cond_signal(&t->reaper_wake);
	pthread_mutex_unlock(&t->reaper_lock);
}

int reaper_start(struct udcfs *fs, uint64_t high)
{
	struct nodes *t = &fs->nodes;

	t->low = high / 3 * 2;
	t->high = high;
	int r = pthread_create(&t->reaper, NULL, reaper_main, fs);
	if (r != 0) {
		t->high = UINT64_MAX;
		return -r;
	}
	t->reaper_started = 1;
	return 0;
}

void reaper_stop(struct udcfs *fs)
{
	struct nodes *t = &fs->nodes;

	if (!t->reaper_started)
		return;
	pthread_mutex_lock(&t->reaper_lock);
	t->reaper_quit = 1;
	pthread_cond_signal(&t->reaper_wake);
	pthread_mutex_unlock(&t->reaper_lock);
	pthread_join(t->reaper, NULL);
	t->reaper_started = 0;
}
