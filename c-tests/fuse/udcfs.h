/*
 * udcfs: a passthrough FUSE filesystem whose name cache and node table is libudcache.
 *
 * udcfs mirrors a backing directory (SOURCE) at a mount point. It is written against libfuse3's
 * low-level API: the kernel speaks in inode numbers ("nodeids") and (parent, name) pairs, which
 * is exactly what udcache caches. Every LOOKUP is answered by udc_lookup (lockless) or, on a
 * miss, by udc_resolve, whose miss callback opens the name in the backing directory; negative
 * answers are remembered (bounded per hash bucket by udcache), and a directory that keeps
 * missing is listed, so that its complete listing answers its misses; FORGET drives udcache's
 * lookup counts; READDIR is served from udcache's cookie-indexed readdir cache with FUSE `off`
 * values as cookies.
 *
 * Files:
 *   udcfs.h  this header: the filesystem state and the node table's interface;
 *   node.c   nodes (one per backing inode: its O_PATH fd), lookup and forget, credentials;
 *   ops.c    the FUSE operations on nodes and names (attributes, create, unlink, rename, I/O);
 *   dir.c    the readdir backend, the FUSE directory operations, listing on misses;
 *   reaper.c keeps the nodes (each an fd) under the fd limit by asking the kernel to forget;
 *   main.c   options, mount, the session loop and the statistics.
 *
 * Nodeids. A nodeid is (generation << 32 | slot + 2): the slot of the node in a slab that never
 * shrinks, and the slot's generation, bumped every time the slot is freed. The root is
 * FUSE_ROOT_ID (1) == UDC_ROOT_INO. A nodeid is therefore never reused while the kernel or a
 * racing lookup may still hold it (the generation would have to wrap at 2^32 frees of one slot),
 * so udcache's "look up, then count" never counts the wrong node. udcache keys its inodes by the
 * nodeid; udc_entry.fs_data is unused (the nodeid already leads to the node in O(1)).
 */
#ifndef UDCFS_H
#define UDCFS_H

#define FUSE_USE_VERSION 312

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>

#include "udcache.h"

/* One backing inode the kernel knows (or a lookup is about to hand out). See node.c's rules. */
struct node {
	_Atomic uint32_t gen;         /* odd while the slot holds a node, even while it is free */
	uint32_t pending;             /* pins by lookups in flight (under the node's bucket lock) */
	_Atomic uint64_t dev;         /* backing identity; stable while gen is unchanged */
	_Atomic uint64_t bino;
	_Atomic uint32_t attr_ver;    /* bumped by every change that makes cached attributes stale */
	_Atomic uint32_t opens;       /* open files and directories of it (the reaper spares it) */
	_Atomic uint32_t absent;      /* directories: backing lookups that found nothing since it
				       * was last listed (see dir_note_absent) */
	_Atomic uint8_t referenced;   /* looked up since the reaper last passed (second chance) */
	uint8_t is_dir;
	int fd;                       /* O_PATH|O_NOFOLLOW fd of the backing inode; -1 when free */
	uint32_t next;                /* next slot + 1 in the bucket chain or the free list; 0: none */
	uint32_t slot;                /* this node's slot number (fixed) */
	uint64_t name_parent;         /* one name of it, (parent nodeid, name), for the reaper; */
	char *name;                   /* both under the node's bucket lock */
};

#define NODE_CHUNK_BITS 12u
#define NODE_CHUNK (1u << NODE_CHUNK_BITS)
#define NODE_MAX_CHUNKS (1u << 16) /* at most 2^28 live nodes */
#define NAME_LOCKS 1024u           /* stripes of the name locks (power of two) */
#define BUCKET_LOCKS 256u          /* stripes of the identity table's bucket locks */

/* The node table: a slab of nodes and an identity index (backing dev, ino) -> node. */
struct nodes {
	_Atomic(struct node *) chunks[NODE_MAX_CHUNKS];
	pthread_mutex_t free_lock; /* protects free_head, nchunks; taken inside a bucket lock */
	uint32_t free_head;        /* slot + 1 of the first free node; 0: none */
	uint32_t nchunks;
	uint32_t *buckets;         /* slot + 1 of each chain's first node; 0: empty */
	uint64_t bucket_mask;
	pthread_mutex_t bucket_locks[BUCKET_LOCKS];
	_Atomic uint64_t live;     /* nodes allocated and not freed (root excluded) */
	/* the reaper (reaper.c) */
	uint64_t high, low;        /* start above `high` live nodes, aim below `low` */
	_Atomic int reaper_kicked;
	pthread_mutex_t reaper_lock; /* protects reaper_quit; reaper_wake's mutex */
	pthread_cond_t reaper_wake;
	int reaper_quit, reaper_started;
	pthread_t reaper;
	_Atomic uint64_t reaped;   /* names the kernel was asked to drop */
};

struct udcfs {
	udc_cache *cache;
	struct fuse_session *se;
	struct node root;              /* FUSE_ROOT_ID: not in the slab, never freed */
	struct nodes nodes;
	pthread_rwlock_t name_locks[NAME_LOCKS];
	double entry_timeout;          /* kernel's dentry validity (s); 0: every lookup reaches us */
	double attr_timeout;           /* kernel's and udcache's attribute validity (s) */
	double negative_timeout;       /* kernel's negative-dentry validity (s); 0: none */
	uint64_t attr_valid_ns;
	unsigned list_after_misses;    /* list a directory after this many backing misses; 0: never */
	int switch_creds;              /* running as root: creating requests run as the caller */
	gid_t *own_groups;             /* our supplementary groups, restored after a switch */
	int own_ngroups;
	/* counters for -o stats (relaxed: statistics only) */
	_Atomic uint64_t lookups, cached_positive, cached_negative, forgets;
};

/* ---- node.c ---- */
int nodes_init(struct nodes *t, size_t buckets);
void nodes_destroy(struct nodes *t);
struct node *node_of(struct udcfs *fs, fuse_ino_t ino);
fuse_ino_t node_ino(struct udcfs *fs, const struct node *n);
/* Opens `name` in `parent` and returns its node pinned: 1 if new, 0 if it existed, or -errno. */
int node_open(struct udcfs *fs, fuse_ino_t parent, const char *name, struct node **out,
	      struct stat *st);
void node_renamed(struct udcfs *fs, fuse_ino_t ino, fuse_ino_t parent, const char *name,
		  fuse_ino_t newparent, const char *newname);
/* An open (+1) or release (-1) of the node `ino` (the kernel holds it: no race with freeing). */
static inline void node_opened(struct udcfs *fs, fuse_ino_t ino, int delta)
{
	atomic_fetch_add_explicit(&node_of(fs, ino)->opens, (uint32_t)delta, memory_order_relaxed);
}

/* A name the reaper may ask the kernel to drop. */
struct reap_name {
	uint64_t parent;
	size_t len;
	char name[256];
};
uint32_t nodes_slots(struct nodes *t);
int node_reap_candidate(struct udcfs *fs, uint32_t slot, struct reap_name *out);

/* ---- reaper.c ---- */
int reaper_start(struct udcfs *fs, uint64_t high);
void reaper_stop(struct udcfs *fs);
void reaper_kick(struct nodes *t);
void node_unpin(struct udcfs *fs, struct node *n);
void node_forget(struct udcfs *fs, fuse_ino_t ino, uint64_t nlookup);
int udcfs_miss(void *ctx, uint64_t parent, const char *name, size_t len, udc_entry *out);
/* FUSE lookup: 1 and *e (counted), 0 if the name does not exist, or -errno. */
int fs_lookup(struct udcfs *fs, fuse_ino_t parent, const char *name,
	      struct fuse_entry_param *e);
/* Fills *e for a lookup of `ino` already counted in udcache; on failure undoes the count. */
int fs_entry(struct udcfs *fs, fuse_ino_t ino, const struct stat *fresh,
	     struct fuse_entry_param *e);
int node_stat(struct udcfs *fs, fuse_ino_t ino, struct stat *st);
void attr_stale(struct udcfs *fs, fuse_ino_t ino);
/* `ino` was read (file data, a symlink's target, a directory's entries): its atime may move. */
void attr_read(struct udcfs *fs, fuse_ino_t ino);
uint32_t udc_type_of(mode_t mode);

/* Name locks: a miss resolution holds its name's stripe shared, a change of a name exclusive. */
struct name_lock {
	pthread_rwlock_t *first, *second; /* second: NULL, or a second stripe (rename) */
};
void name_lock_shared(struct udcfs *fs, struct name_lock *l, fuse_ino_t parent, const char *name);
void name_lock_excl(struct udcfs *fs, struct name_lock *l, fuse_ino_t parent, const char *name,
		    fuse_ino_t parent2, const char *name2);
void name_unlock(struct name_lock *l);

/* Credentials of a creating request (see node.c). */
struct creds {
	int switched;
};
int creds_enter(struct udcfs *fs, fuse_req_t req, struct creds *c);
void creds_leave(struct udcfs *fs, struct creds *c);

/* ---- ops.c, dir.c ---- */
extern const struct fuse_lowlevel_ops udcfs_ops;
int udcfs_readdir_fill(void *ctx, uint64_t dir, uint64_t cookie, size_t max, udc_fill *fill);
/* The largest list_after_misses (times dir.c's backoff, it must fit a node's 32-bit count). */
#define LIST_AFTER_MISSES_MAX (1u << 20)
/* A backing lookup in `dir` found nothing: every list_after_misses of them, read its listing. */
void dir_note_absent(struct udcfs *fs, fuse_ino_t dir);
void udcfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void udcfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi);
void udcfs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi);
void udcfs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

static inline struct udcfs *req_fs(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

#endif
