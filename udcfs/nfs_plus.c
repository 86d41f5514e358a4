/*
 * What READDIRPLUS said of each entry -- its file handle and attributes -- kept for the
 * lookups that follow a listing (`ls -l`, `find`, the kernel's own READDIRPLUS): a name a fresh
 * listing answered is not asked of the server again.
 *
 * Rules
 *
 * - A fixed table of PLUS_SETS sets of PLUS_WAYS slots, each slot holding at most one entry:
 *   (directory nodeid, name) -> (handle, attributes, when it was read, the directory's change
 *   attribute in that reply). An entry goes to the set its (directory, name) hashes to, into a
 *   free slot or else over the oldest entry of the set, so the table stays bounded whatever is
 *   listed, and a listing of a few hundred names keeps them all (a name is lost only when more
 *   than PLUS_WAYS of the names kept hash to one set). Each set is protected by its stripe of
 *   `locks`.
 * - plus_take hands an entry to a lookup, and removes it, only if it is for that directory and
 *   name, was read less than acdirmin ago, and the directory's change attribute is still the
 *   one the reply carried (nfs_attr.c's n->change: any change since, udcfs's own or another
 *   client's, moves it): what the lookup then files in udcache answers from there on.
 *   Anything else is a miss, and the lookup asks the server.
 * - A change udcfs makes to a name (create, remove, rename, link) forgets that name's entry
 *   first (plus_forget), whatever the change attribute says: a reply of a listing in flight
 *   during the change may carry the directory's attributes from before it.
 */
#include "nfs.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { PLUS_SETS = 4096, PLUS_WAYS = 4, PLUS_LOCKS = 64 };

struct plus_entry {
	uint64_t dir, change, when_ns;
	union bhandle h;
	fattr3 a;
	size_t len;
	char name[];
};

struct plus_table {
	pthread_mutex_t locks[PLUS_LOCKS];
	struct plus_entry *slots[PLUS_SETS][PLUS_WAYS];
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static size_t set_of(uint64_t dir, const char *name, size_t len)
{
	uint64_t h = mix64(dir);
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 0x100000001b3ull;
	return (size_t)(mix64(h) % PLUS_SETS);
}

static int is_for(const struct plus_entry *e, uint64_t dir, const char *name, size_t len)
{
	return e && e->dir == dir && e->len == len && memcmp(e->name, name, len) == 0;
}

int plus_init(struct nfs_state *s)
{
	s->plus = calloc(1, sizeof(*s->plus));
	if (!s->plus)
		return -1;
	for (int i = 0; i < PLUS_LOCKS; i++)
		pthread_mutex_init(&s->plus->locks[i], NULL);
	return 0;
}

void plus_destroy(struct nfs_state *s)
{
	if (!s->plus)
		return;
	for (int i = 0; i < PLUS_SETS; i++)
		for (int w = 0; w < PLUS_WAYS; w++)
			free(s->plus->slots[i][w]);
	free(s->plus);
	s->plus = NULL;
}

void plus_keep(struct nfs_state *s, uint64_t dir, uint64_t change, const char *name,
	       const nfs_fh3 *fh, const fattr3 *a)
{
	size_t len = strlen(name);
	if (fh->data.data_len == 0 || fh->data.data_len > FH_MAX || s->acdirmin == 0)
		return;
	struct plus_entry *e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return;
	*e = (struct plus_entry){ .dir = dir, .change = change, .when_ns = now_ns(), .a = *a,
				  .len = len };
	e->h.fh.len = fh->data.data_len;
	memcpy(e->h.fh.data, fh->data.data_val, fh->data.data_len);
	memcpy(e->name, name, len + 1);
	size_t i = set_of(dir, name, len);
	struct plus_entry **set = s->plus->slots[i];
	pthread_mutex_t *lock = &s->plus->locks[i % PLUS_LOCKS];
	int victim = 0;
	pthread_mutex_lock(lock);
	for (int w = 0; w < PLUS_WAYS; w++) {
		if (!set[w] || is_for(set[w], dir, name, len)) {
			victim = w; /* free, or the same name read again */
			break;
		}
		if (set[w]->when_ns < set[victim]->when_ns)
			victim = w;
	}
	struct plus_entry *old = set[victim];
	set[victim] = e;
	pthread_mutex_unlock(lock);
	free(old);
}

/* Takes the entry of (dir, name) out of the table: it, or NULL. */
static struct plus_entry *plus_remove(struct nfs_state *s, uint64_t dir, const char *name)
{
	size_t len = strlen(name), i = set_of(dir, name, len);
	struct plus_entry **set = s->plus->slots[i], *e = NULL;
	pthread_mutex_t *lock = &s->plus->locks[i % PLUS_LOCKS];

	pthread_mutex_lock(lock);
	for (int w = 0; w < PLUS_WAYS && !e; w++) {
		if (is_for(set[w], dir, name, len)) {
			e = set[w];
			set[w] = NULL;
		}
	}
	pthread_mutex_unlock(lock);
	return e;
}

void plus_forget(struct nfs_state *s, uint64_t dir, const char *name)
{
	free(plus_remove(s, dir, name));
}

int plus_take(struct nfs_state *s, uint64_t dir, uint64_t change, const char *name,
	      struct bobj *out)
{
	struct plus_entry *e = plus_remove(s, dir, name);

	if (!e)
		return 0;
	int fresh = e->change == change && now_ns() - e->when_ns < s->acdirmin;
	if (fresh) {
		out->h = e->h;
		stat_of_fattr(&e->a, &out->st);
	}
	free(e);
	return fresh;
}
