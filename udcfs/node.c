/*
 * Nodes, lookup and forget: how udcfs keeps its inodes in udcache.
 *
 * Rules
 *
 * - A node is one backing inode, held by its backend handle (local: an O_PATH fd; NFS: the file
 *   handle). It lives in a slab slot; its nodeid
 *   is (slot generation << 32 | slot + 2) (see udcfs.h). The generation is odd while the slot
 *   holds a node and even while it is free: allocation and freeing each bump it, under the
 *   node's bucket lock. Slots are never returned to the system, so reading a freed slot is safe,
 *   and its generation tells whether it still holds the node a nodeid named.
 * - udcache is the authority on which nodes the kernel holds: a node is "cached" while udcache's
 *   inode table has its nodeid (udc_getattr does not answer -ESTALE), that is from the udc_add
 *   (or udc_resolve) that first names it until a udc_forget takes its lookup count to zero.
 * - The identity index maps (backing dev, backing ino) -- for NFS (fsid, fileid), and the file
 *   handle, since a server reuses a removed file's number (be->same) -- to the node, so a
 *   backing inode has one
 *   node however many names (hard links) reach it. Its chains, and each node's `pending` count,
 *   are protected by the bucket lock of the node's identity (bucket_locks, striped).
 * - A node is freed exactly when it is neither cached nor pending, decided under its bucket lock.
 *   Both conditions can only become false again under that lock: `pending` is raised only by
 *   node_get (bucket lock held), and a node becomes cached again only through a udc_add made by
 *   a thread that pinned it (node_get) or that got its nodeid from the kernel (which then holds
 *   it, so it was cached all along). Hence the check at each point where one condition may have
 *   become true: node_unpin (pending reached 0) and node_forget (udc_forget may have dropped it).
 * - node_forget and the reaper read a slot they hold no claim on: they read the generation,
 *   then dev/ino, lock that bucket and check the generation again. Every change of a slot's
 *   identity (allocation, freeing) bumps the generation under the bucket lock of the identity it
 *   ends or begins, so an odd generation unchanged under the lock proves the identity read was
 *   that node's, and that the node stays while the lock is held.
 * - A node keeps one of its names, (parent nodeid, name), for the reaper (reaper.c); it is set
 *   when the node is made, follows renames (node_renamed), and is read and changed under the
 *   bucket lock. It may be out of date (unlinked, or the parent forgotten): the kernel then
 *   ignores the reaper's request.
 * - Name locks (name_locks, rwlocks striped by (parent, name), writer-preferring): a lookup that
 *   misses holds its name's stripe shared across udc_resolve (the backing lookup and udcache's
 *   filing of its answer); an operation that changes a name (create, unlink, rename...) holds it
 *   exclusive across the backing change and udcache's update. So udcache never files an answer
 *   the backing directory contradicted meanwhile (a stale positive after a racing unlink).
 *   Lookups that hit take no lock.
 * - Lock order: name stripes (ascending index) -> a bucket lock -> free_lock. udcache's own
 *   locks are taken inside any of them; udcache calls udcfs back (the miss and readdir callbacks)
 *   with none of its locks held.
 * - Attributes are cached in udcache (udc_setattr) for the backend's time to live
 *   (attr_cache); a change made through udcfs expires them (attr_stale) unless the backend
 *   filed the attributes the change left (NFS post-op attributes).
 */
#include "udcfs.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* ---- the slab ---- */

static struct node *slot_ptr(struct nodes *t, uint32_t slot)
{
	/* Acquire: pairs with the Release store publishing the chunk in slot_alloc. */
	struct node *chunk =
		atomic_load_explicit(&t->chunks[slot >> NODE_CHUNK_BITS], memory_order_acquire);
	return &chunk[slot & (NODE_CHUNK - 1)];
}

/* A free slot, or NULL when the slab is at its maximum or out of memory. */
static struct node *slot_alloc(struct nodes *t)
{
	struct node *n = NULL;

	pthread_mutex_lock(&t->free_lock);
	if (t->free_head == 0 && t->nchunks < NODE_MAX_CHUNKS) {
		struct node *chunk = calloc(NODE_CHUNK, sizeof(*chunk));
		if (chunk) {
			uint32_t base = t->nchunks << NODE_CHUNK_BITS;
			for (uint32_t i = 0; i < NODE_CHUNK; i++) {
				chunk[i].slot = base + i;
				chunk[i].next = i + 1 < NODE_CHUNK ? base + i + 2 : 0;
			}
			/* Release: slot_ptr's Acquire load sees an initialised chunk. */
			atomic_store_explicit(&t->chunks[t->nchunks], chunk, memory_order_release);
			t->nchunks++;
			t->free_head = base + 1;
		}
	}
	if (t->free_head) {
		n = slot_ptr(t, t->free_head - 1);
		t->free_head = n->next;
		n->next = 0;
	}
	pthread_mutex_unlock(&t->free_lock);
	return n;
}

static void slot_free(struct nodes *t, struct node *n)
{
	pthread_mutex_lock(&t->free_lock);
	n->next = t->free_head;
	t->free_head = n->slot + 1;
	pthread_mutex_unlock(&t->free_lock);
}

int nodes_init(struct nodes *t, size_t buckets)
{
	size_t nb = 1024;
	while (nb < buckets && nb < (1u << 30))
		nb <<= 1;
	t->buckets = calloc(nb, sizeof(*t->buckets));
	if (!t->buckets)
		return -ENOMEM;
	t->bucket_mask = nb - 1;
	pthread_mutex_init(&t->free_lock, NULL);
	for (unsigned i = 0; i < BUCKET_LOCKS; i++)
		pthread_mutex_init(&t->bucket_locks[i], NULL);
	pthread_mutex_init(&t->reaper_lock, NULL);
	pthread_cond_init(&t->reaper_wake, NULL);
	t->high = UINT64_MAX; /* no reaper until reaper_start */
	return 0;
}

void nodes_destroy(struct udcfs *fs)
{
	struct nodes *t = &fs->nodes;
	for (uint32_t c = 0; c < t->nchunks; c++) {
		struct node *chunk = atomic_load_explicit(&t->chunks[c], memory_order_relaxed);
		for (uint32_t i = 0; i < NODE_CHUNK; i++) {
			if (chunk[i].held)
				fs->be->drop(fs, &chunk[i].h);
			free(chunk[i].name);
		}
		free(chunk);
	}
	free(t->buckets);
}

/* ---- nodeids ---- */

struct node *node_of(struct udcfs *fs, fuse_ino_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return &fs->root;
	struct node *n = slot_ptr(&fs->nodes, (uint32_t)ino - 2);
	assert(atomic_load_explicit(&n->gen, memory_order_relaxed) == (uint32_t)(ino >> 32));
	return n;
}

fuse_ino_t node_ino(struct udcfs *fs, const struct node *n)
{
	if (n == &fs->root)
		return FUSE_ROOT_ID;
	uint64_t gen = atomic_load_explicit(&n->gen, memory_order_relaxed);
	return gen << 32 | (uint64_t)(n->slot + 2);
}

/* ---- the identity index ---- */

static uint64_t bucket_of(struct nodes *t, uint64_t dev, uint64_t bino)
{
	return mix64(dev * 0x9e3779b97f4a7c15ull ^ bino) & t->bucket_mask;
}

static pthread_mutex_t *bucket_lock(struct nodes *t, uint64_t bucket)
{
	return &t->bucket_locks[bucket & (BUCKET_LOCKS - 1)];
}

/* Whether udcache holds the node `ino` (see the rules). */
static bool cached(struct udcfs *fs, fuse_ino_t ino)
{
	udc_attr a;
	return udc_getattr(fs->cache, ino, &a) != -ESTALE;
}

/*
 * The node of backing object `o`, pinned; its handle becomes the node's or is dropped. A new
 * node remembers (parent, name) as its name. Returns 1 if the node is new, 0 if it existed, or
 * -ENOMEM.
 */
static int node_get(struct udcfs *fs, struct bobj *o, fuse_ino_t parent, const char *name,
		    struct node **out)
{
	struct nodes *t = &fs->nodes;
	const struct stat *st = &o->st;
	uint64_t dev = st->st_dev, bino = st->st_ino;
	uint64_t b = bucket_of(t, dev, bino);
	pthread_mutex_t *lock = bucket_lock(t, b);
	char *copy = strdup(name);
	struct node *n;

	pthread_mutex_lock(lock);
	for (uint32_t s = t->buckets[b]; s; s = n->next) {
		n = slot_ptr(t, s - 1);
		if (atomic_load_explicit(&n->dev, memory_order_relaxed) == dev &&
		    atomic_load_explicit(&n->bino, memory_order_relaxed) == bino &&
		    (!fs->be->same || fs->be->same(&n->h, &o->h))) {
			n->pending++;
			atomic_store_explicit(&n->referenced, 1, memory_order_relaxed);
			pthread_mutex_unlock(lock);
			fs->be->drop(fs, &o->h);
			free(copy);
			*out = n;
			return 0;
		}
	}
	n = copy ? slot_alloc(t) : NULL;
	if (!n) {
		pthread_mutex_unlock(lock);
		fs->be->drop(fs, &o->h);
		free(copy);
		return -ENOMEM;
	}
	assert(!n->held && n->pending == 0 && n->name == NULL);
	atomic_store_explicit(&n->dev, dev, memory_order_relaxed);
	atomic_store_explicit(&n->bino, bino, memory_order_relaxed);
	atomic_store_explicit(&n->opens, 0, memory_order_relaxed);
	atomic_store_explicit(&n->absent, 0, memory_order_relaxed);
	atomic_store_explicit(&n->referenced, 1, memory_order_relaxed);
	atomic_store_explicit(&n->attr_timeo, 0, memory_order_relaxed);
	atomic_store_explicit(&n->cookieverf, 0, memory_order_relaxed);
	atomic_store_explicit(&n->change, 0, memory_order_relaxed);
	atomic_store_explicit(&n->foreign, 0, memory_order_relaxed);
	n->is_dir = S_ISDIR(st->st_mode);
	n->h = o->h;
	n->held = 1;
	n->pending = 1;
	n->name_parent = parent;
	n->name = copy;
	n->next = t->buckets[b];
	t->buckets[b] = n->slot + 1;
	/* Release: a reader that sees the odd generation under this lock sees the fields above. */
	uint32_t gen = atomic_fetch_add_explicit(&n->gen, 1, memory_order_release) + 1;
	assert(gen & 1);
	(void)gen;
	uint64_t live = atomic_fetch_add_explicit(&t->live, 1, memory_order_relaxed) + 1;
	pthread_mutex_unlock(lock);
	if (live > t->high)
		reaper_kick(t);
	*out = n;
	return 1;
}

/* What freeing a node leaves to drop and free outside the bucket lock. */
struct dead {
	int held;
	union bhandle h;
	char *name;
};

/*
 * Takes `n` off its chain and ends its generation; the caller holds its bucket lock (`b`), has
 * checked it is neither cached nor pending, and must then call node_release with `*d`.
 */
static void node_unhash(struct nodes *t, uint64_t b, struct node *n, struct dead *d)
{
	uint32_t s = n->slot + 1;
	uint32_t *link = &t->buckets[b];

	assert(n->pending == 0 && n->held);
	while (*link != s)
		link = &slot_ptr(t, *link - 1)->next;
	*link = n->next;
	n->next = 0;
	d->held = 1;
	d->h = n->h;
	d->name = n->name;
	n->held = 0;
	n->name = NULL;
	/* Release: a node_forget that locks this bucket afterwards sees the even generation. */
	uint32_t gen = atomic_fetch_add_explicit(&n->gen, 1, memory_order_release) + 1;
	assert(!(gen & 1));
	(void)gen;
}

/* Second half of freeing, outside the bucket lock. */
static void node_release(struct udcfs *fs, struct node *n, struct dead *d)
{
	struct nodes *t = &fs->nodes;
	fs->be->drop(fs, &d->h);
	free(d->name);
	atomic_fetch_sub_explicit(&t->live, 1, memory_order_relaxed);
	slot_free(t, n);
}

int node_open(struct udcfs *fs, fuse_req_t req, fuse_ino_t parent, const char *name,
	      struct node **out, struct stat *st)
{
	struct bobj o;
	int r = fs->be->lookup(fs, req, node_of(fs, parent), name, &o);
	if (r < 0)
		return r;
	*st = o.st;
	return node_get(fs, &o, parent, name, out);
}

int node_made(struct udcfs *fs, struct bobj *o, fuse_ino_t parent, const char *name,
	      struct node **out)
{
	return node_get(fs, o, parent, name, out);
}

void node_unpin(struct udcfs *fs, struct node *n)
{
	struct nodes *t = &fs->nodes;
	uint64_t b = bucket_of(t, atomic_load_explicit(&n->dev, memory_order_relaxed),
			       atomic_load_explicit(&n->bino, memory_order_relaxed));
	pthread_mutex_t *lock = bucket_lock(t, b);
	struct dead d = { .held = 0 };

	pthread_mutex_lock(lock);
	assert(n->pending > 0);
	if (--n->pending == 0 && !cached(fs, node_ino(fs, n)))
		node_unhash(t, b, n, &d);
	pthread_mutex_unlock(lock);
	if (d.held)
		node_release(fs, n, &d);
}

/*
 * Locks the bucket of node `n` if its slot still holds generation `gen` (odd): returns the lock,
 * held, and the bucket in *bucket; or NULL. See the rules for why the unlocked reads are sound.
 */
static pthread_mutex_t *lock_slot(struct nodes *t, struct node *n, uint32_t gen, uint64_t *bucket)
{
	if (!(gen & 1))
		return NULL;
	uint64_t b = bucket_of(t, atomic_load_explicit(&n->dev, memory_order_relaxed),
			       atomic_load_explicit(&n->bino, memory_order_relaxed));
	pthread_mutex_t *lock = bucket_lock(t, b);
	pthread_mutex_lock(lock);
	if (atomic_load_explicit(&n->gen, memory_order_relaxed) == gen) {
		*bucket = b;
		return lock;
	}
	pthread_mutex_unlock(lock);
	return NULL;
}

void node_forget(struct udcfs *fs, fuse_ino_t ino, uint64_t nlookup)
{
	struct nodes *t = &fs->nodes;

	atomic_fetch_add_explicit(&fs->forgets, 1, memory_order_relaxed);
	if (ino == FUSE_ROOT_ID)
		return; /* the root is never forgotten in udcache */
	int r = udc_forget(fs->cache, ino, nlookup);
	if (r < 0)
		fuse_log(FUSE_LOG_ERR, "udcfs: forget(%#llx, %llu): %s\n", (unsigned long long)ino,
			 (unsigned long long)nlookup, strerror(-r));
	if (cached(fs, ino))
		return;
	/* Maybe dropped: free it unless a lookup has it pinned (see the rules for the reads). */
	struct node *n = slot_ptr(t, (uint32_t)ino - 2);
	uint64_t b;
	pthread_mutex_t *lock = lock_slot(t, n, (uint32_t)(ino >> 32), &b);
	struct dead d = { .held = 0 };
	if (!lock)
		return;
	if (n->pending == 0 && !cached(fs, ino))
		node_unhash(t, b, n, &d);
	pthread_mutex_unlock(lock);
	if (d.held)
		node_release(fs, n, &d);
}

void node_renamed(struct udcfs *fs, fuse_ino_t ino, fuse_ino_t parent, const char *name,
		  fuse_ino_t newparent, const char *newname)
{
	if (ino == FUSE_ROOT_ID)
		return;
	struct node *n = node_of(fs, ino);
	char *copy = strdup(newname), *old = NULL;
	uint64_t b;
	pthread_mutex_t *lock = lock_slot(&fs->nodes, n, (uint32_t)(ino >> 32), &b);
	if (lock) {
		if (copy && n->name_parent == parent && strcmp(n->name, name) == 0) {
			old = n->name;
			n->name = copy;
			n->name_parent = newparent;
			copy = NULL;
		}
		pthread_mutex_unlock(lock);
	}
	free(old);
	free(copy);
}

int node_stale(struct udcfs *fs, fuse_ino_t ino)
{
	struct reap_name rn = { 0 };
	uint64_t b;

	if (ino == FUSE_ROOT_ID)
		return -ESTALE;
	struct node *n = node_of(fs, ino);
	pthread_mutex_t *lock = lock_slot(&fs->nodes, n, (uint32_t)(ino >> 32), &b);
	if (lock) {
		rn.parent = n->name_parent;
		rn.len = strlen(n->name);
		memcpy(rn.name, n->name, rn.len + 1);
		pthread_mutex_unlock(lock);
	}
	if (rn.len)
		udc_invalidate(fs->cache, rn.parent, rn.name, rn.len);
	attr_stale(fs, ino);
	return -ESTALE;
}

uint32_t nodes_slots(struct nodes *t)
{
	pthread_mutex_lock(&t->free_lock);
	uint32_t n = t->nchunks * NODE_CHUNK;
	pthread_mutex_unlock(&t->free_lock);
	return n;
}

int node_reap_candidate(struct udcfs *fs, uint32_t slot, struct reap_name *out)
{
	struct nodes *t = &fs->nodes;
	struct node *n = slot_ptr(t, slot);
	uint64_t b;
	pthread_mutex_t *lock =
		lock_slot(t, n, atomic_load_explicit(&n->gen, memory_order_acquire), &b);
	int ok = 0;

	if (!lock)
		return 0;
	/* second chance: a node looked up since the last pass is spared once */
	if (!n->is_dir && atomic_load_explicit(&n->opens, memory_order_relaxed) == 0 &&
	    !atomic_exchange_explicit(&n->referenced, 0, memory_order_relaxed)) {
		out->parent = n->name_parent;
		out->len = strlen(n->name);
		memcpy(out->name, n->name, out->len + 1);
		ok = 1;
	}
	pthread_mutex_unlock(lock);
	return ok;
}

/* ---- attributes ---- */

uint32_t udc_type_of(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR:
		return UDC_TYPE_DIR;
	case S_IFREG:
		return UDC_TYPE_REG;
	case S_IFLNK:
		return UDC_TYPE_LNK;
	default:
		return UDC_TYPE_OTHER;
	}
}

static void attr_of_stat(const struct stat *st, udc_attr *a)
{
	*a = (udc_attr){
		.size = (uint64_t)st->st_size,
		.blocks = (uint64_t)st->st_blocks,
		.mode = st->st_mode,
		.nlink = (uint32_t)st->st_nlink,
		.uid = st->st_uid,
		.gid = st->st_gid,
		.rdev = (uint32_t)st->st_rdev,
		.blksize = (uint32_t)st->st_blksize,
		.atime_sec = st->st_atim.tv_sec,
		.mtime_sec = st->st_mtim.tv_sec,
		.ctime_sec = st->st_ctim.tv_sec,
		.atime_nsec = (uint32_t)st->st_atim.tv_nsec,
		.mtime_nsec = (uint32_t)st->st_mtim.tv_nsec,
		.ctime_nsec = (uint32_t)st->st_ctim.tv_nsec,
	};
}

static void stat_of_attr(const udc_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_size = (off_t)a->size;
	st->st_blocks = (blkcnt_t)a->blocks;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_rdev = a->rdev;
	st->st_blksize = a->blksize;
	st->st_atim = (struct timespec){ a->atime_sec, a->atime_nsec };
	st->st_mtim = (struct timespec){ a->mtime_sec, a->mtime_nsec };
	st->st_ctim = (struct timespec){ a->ctime_sec, a->ctime_nsec };
}

/*
 * Caches `st`, read after attr_ver was `ver`. A snapshot read before a change that has bumped
 * attr_ver already is not filed (nor shown to the backend's attr_ttl, whose view of the node it
 * would move back). If a change bumps attr_ver while it is filed, the entry is expired again: a
 * change bumps attr_ver and then expires (attr_stale) or files its own attributes, so whichever
 * of the orders the threads run in, a stale snapshot is never left valid (all SeqCst).
 */
void attr_cache(struct udcfs *fs, fuse_ino_t ino, const struct stat *st, uint32_t ver)
{
	struct node *n = node_of(fs, ino);
	udc_attr a;
	if (atomic_load(&n->attr_ver) != ver)
		return;
	attr_of_stat(st, &a);
	udc_setattr(fs->cache, ino, &a,
		    fs->be->attr_ttl ? fs->be->attr_ttl(fs, ino, n, st) : fs->attr_valid_ns);
	if (atomic_load(&n->attr_ver) != ver)
		attr_stale(fs, ino);
}

void attr_stale(struct udcfs *fs, fuse_ino_t ino)
{
	static const udc_attr none;
	atomic_fetch_add(&node_of(fs, ino)->attr_ver, 1);
	udc_setattr(fs->cache, ino, &none, 0);
}

static int ts_cmp(int64_t s1, uint32_t ns1, int64_t s2, uint32_t ns2)
{
	return s1 != s2 ? (s1 < s2 ? -1 : 1) : (ns1 != ns2 ? (ns1 < ns2 ? -1 : 1) : 0);
}

/*
 * A read of the backing inode updates its atime as the backing mount's relatime rule says
 * (atime not after mtime or ctime, or a day old), and the kernel, after a read, asks for the
 * atime afresh rather than trust its copy: so expire the cached attributes whenever that rule
 * may have moved the atime (or none are cached: a getattr in flight may be caching the old
 * one). While the atime is recent, a read costs one cache lookup and changes nothing.
 */
void attr_read(struct udcfs *fs, fuse_ino_t ino)
{
	struct timespec now;
	udc_attr a;

	if (udc_getattr(fs->cache, ino, &a) == 0 && clock_gettime(CLOCK_REALTIME, &now) == 0 &&
	    ts_cmp(a.atime_sec, a.atime_nsec, a.mtime_sec, a.mtime_nsec) > 0 &&
	    ts_cmp(a.atime_sec, a.atime_nsec, a.ctime_sec, a.ctime_nsec) > 0 &&
	    now.tv_sec - a.atime_sec < 24 * 3600)
		return;
	attr_stale(fs, ino);
}

int node_stat(struct udcfs *fs, fuse_req_t req, fuse_ino_t ino, struct stat *st)
{
	struct node *n = node_of(fs, ino);
	udc_attr a;
	if (udc_getattr(fs->cache, ino, &a) == 0) {
		stat_of_attr(&a, st);
		/* udc_getattr reports udcache's inode number (the nodeid); show the backing one */
		st->st_ino = atomic_load_explicit(&n->bino, memory_order_relaxed);
		return 0;
	}
	uint32_t ver = atomic_load(&n->attr_ver);
	int r = fs->be->getattr(fs, req, n, st);
	if (r == -ESTALE)
		return node_stale(fs, ino);
	if (r < 0)
		return r;
	attr_cache(fs, ino, st, ver);
	return 0;
}

/* Fills *e for `ino` (attributes from `fresh`, the cache, or the backing inode). */
static int entry_fill(struct udcfs *fs, fuse_req_t req, fuse_ino_t ino, const struct stat *fresh,
		      struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	if (fresh) {
		/* A node this thread just created: nothing else can have changed it. */
		e->attr = *fresh;
		attr_cache(fs, ino, fresh, atomic_load(&node_of(fs, ino)->attr_ver));
	} else {
		int r = node_stat(fs, req, ino, &e->attr);
		if (r < 0)
			return r;
	}
	e->ino = ino;
	e->attr_timeout = fs->attr_timeout;
	e->entry_timeout = fs->entry_timeout;
	return 0;
}

int fs_entry(struct udcfs *fs, fuse_req_t req, fuse_ino_t ino, const struct stat *fresh,
	     struct fuse_entry_param *e)
{
	int r = entry_fill(fs, req, ino, fresh, e);
	if (r < 0)
		node_forget(fs, ino, 1);
	return r;
}

/* ---- lookup ---- */

/* What the miss callback leaves for the lookup that called udc_resolve on this thread. */
struct miss {
	fuse_req_t req;
	struct node *node; /* pinned until udcache has filed it */
	int created;       /* node new: `st` may be cached */
	int absent;        /* the backing directory said ENOENT */
	struct stat st;
};

static _Thread_local struct miss *tls_miss;

int udcfs_miss(void *ctx, uint64_t parent, const char *name, size_t len, udc_entry *out)
{
	struct udcfs *fs = ctx;
	struct miss *m = tls_miss;
	char cname[256];

	/* udcache calls this only from udc_resolve, on the thread that called it: fs_lookup. */
	if (!m || len >= sizeof(cname))
		return -EIO;
	memcpy(cname, name, len);
	cname[len] = '\0';
	if (m->node) {
		node_unpin(fs, m->node);
		m->node = NULL;
	}
	struct node *n;
	int r = node_open(fs, m->req, parent, cname, &n, &m->st);
	if (r == -ESTALE)
		return node_stale(fs, parent);
	if (r == -ENOENT && fs->keep_negatives) {
		m->absent = 1;
		return 0;
	}
	if (r < 0)
		return r;
	m->node = n;
	m->created = r;
	*out = (udc_entry){ .ino = node_ino(fs, n), .type = udc_type_of(m->st.st_mode) };
	return 1;
}

int fs_lookup(struct udcfs *fs, fuse_req_t req, fuse_ino_t parent, const char *name,
	      struct fuse_entry_param *e)
{
	size_t len = strlen(name);
	udc_entry ent;
	int r;

	atomic_fetch_add_explicit(&fs->lookups, 1, memory_order_relaxed);
	if (fs->be->lookup_prepare)
		fs->be->lookup_prepare(fs, req, parent);
	for (;;) {
		r = udc_lookup(fs->cache, parent, name, len, &ent);
		if (r == UDC_NEGATIVE) {
			atomic_fetch_add_explicit(&fs->cached_negative, 1, memory_order_relaxed);
			return 0;
		}
		if (r != UDC_POSITIVE)
			break;
		r = udc_count_lookup(fs->cache, ent.ino);
		if (r == 0) {
			atomic_fetch_add_explicit(&fs->cached_positive, 1, memory_order_relaxed);
			struct node *n = node_of(fs, ent.ino);
			if (!atomic_load_explicit(&n->referenced, memory_order_relaxed))
				atomic_store_explicit(&n->referenced, 1, memory_order_relaxed);
			r = fs_entry(fs, req, ent.ino, NULL, e);
			return r < 0 ? r : 1;
		}
		if (r != -ESTALE)
			return r;
		/* forgotten between the lookup and the count: look again */
	}
	if (r < 0)
		return r;

	struct miss m = { .req = req };
	struct name_lock l;
	tls_miss = &m;
	name_lock_shared(fs, &l, parent, name);
	r = udc_resolve(fs->cache, parent, name, len, &ent);
	name_unlock(&l);
	tls_miss = NULL;
	if (r == UDC_POSITIVE) {
		bool fresh = m.node && m.created && node_ino(fs, m.node) == ent.ino;
		r = fs_entry(fs, req, ent.ino, fresh ? &m.st : NULL, e);
		if (r == 0)
			r = 1;
	} else if (r == UDC_NEGATIVE) {
		if (m.absent)
			dir_note_absent(fs, req, parent);
		r = 0;
	} else if (r >= 0) {
		r = -EIO; /* UDC_MISS: udc_resolve never answers it */
	}
	if (m.node)
		node_unpin(fs, m.node);
	return r;
}

/* ---- name locks ---- */

static unsigned name_stripe(fuse_ino_t parent, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull ^ mix64(parent);
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	return (unsigned)(mix64(h) & (NAME_LOCKS - 1));
}

void name_lock_shared(struct udcfs *fs, struct name_lock *l, fuse_ino_t parent, const char *name)
{
	l->first = &fs->name_locks[name_stripe(parent, name)];
	l->second = NULL;
	pthread_rwlock_rdlock(l->first);
}

void name_lock_excl(struct udcfs *fs, struct name_lock *l, fuse_ino_t parent, const char *name,
		    fuse_ino_t parent2, const char *name2)
{
	unsigned a = name_stripe(parent, name);
	unsigned b = name2 ? name_stripe(parent2, name2) : a;
	if (b < a) {
		unsigned t = a;
		a = b;
		b = t;
	}
	l->first = &fs->name_locks[a];
	l->second = b != a ? &fs->name_locks[b] : NULL;
	pthread_rwlock_wrlock(l->first);
	if (l->second)
		pthread_rwlock_wrlock(l->second);
}

void name_unlock(struct name_lock *l)
{
	if (l->second)
		pthread_rwlock_unlock(l->second);
	pthread_rwlock_unlock(l->first);
}
