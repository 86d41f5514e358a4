/*
 * udcfs: a passthrough FUSE filesystem whose name cache and node table is libudcache.
 *
 * udcfs serves a backing filesystem at a mount point: a local directory (SOURCE), or an NFSv3
 * export (nfs://HOST[:PORT]/EXPORT, through libnfs). It is written against libfuse3's low-level
 * API: the kernel speaks in inode numbers ("nodeids") and (parent, name) pairs, which is exactly
 * what udcache caches. Every LOOKUP is answered by udc_lookup (lockless) or, on a miss, by
 * udc_resolve, whose miss callback asks the backend; negative answers are remembered (bounded
 * per hash bucket by udcache), and a directory that keeps missing is listed, so that its
 * complete listing answers its misses; FORGET drives udcache's lookup counts; READDIR is served
 * from udcache's cookie-indexed readdir cache with FUSE `off` values as cookies.
 *
 * One front end serves both backends: the FUSE operations (ops.c, dir.c) keep the cache and
 * call the backend (struct backend) for what only the backing filesystem can do.
 *
 * Files:
 *   udcfs.h   this header: the filesystem state, the node table and the backend interface;
 *   node.c    nodes (one per backing inode: its handle), lookup and forget, attributes;
 *   ops.c     the FUSE operations on nodes and names (attributes, create, unlink, rename, I/O);
 *   dir.c     the readdir callback, the FUSE directory operations, listing on misses;
 *   reaper.c  keeps the nodes under a bound by asking the kernel to forget;
 *   local.c   the local-directory backend (O_PATH fds, the caller's credentials per thread);
 *   nfs.c     the NFSv3 backend's operations (nfs.h: its shared state); nfs_rpc.c its
 *             connections and calls; nfs_attr.c the NFS client's cache rules (attribute
 *             timeouts, change attributes, wcc); nfs_plus.c what READDIRPLUS said of entries;
 *   main.c    options, mount, the session loop and the statistics.
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
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "udcache.h"

#define FH_MAX 64 /* the largest NFSv3 file handle */

/* What a node holds of its backing object: the backend's own, moved in by node_get. */
union bhandle {
	int fd; /* local: an O_PATH|O_NOFOLLOW fd */
	struct {
		uint32_t len;
		unsigned char data[FH_MAX];
	} fh; /* nfs: the file handle */
};

/* A backing object as a backend found or made it: attributes, and its handle. */
struct bobj {
	struct stat st; /* st_dev, st_ino: the identity (NFS: fsid, fileid) */
	union bhandle h;
};

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
	uint8_t held;                 /* `h` holds a handle: the slot holds a node */
	_Atomic uint64_t attr_timeo;  /* nfs: the attribute timeout (ns) that nfs_attr.c grows */
	_Atomic uint64_t cookieverf;  /* nfs directories: the last READDIRPLUS cookie verifier */
	_Atomic uint64_t change;      /* nfs: the change attribute last seen (nfs_attr.c) */
	_Atomic uint64_t foreign;     /* nfs directories: changes seen that udcfs did not make */
	union bhandle h;              /* the backend's handle of the backing object */
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

/* The command line (main.c). */
struct options {
	char *source;
	double entry_timeout, attr_timeout, negative_timeout;
	unsigned long cache_entries, cache_buckets, readdir_pages, readdir_page_entries;
	unsigned long max_nodes;
	unsigned negative_cap;
	unsigned list_after_misses;
	int stats;
	int allow_other, default_permissions;
	int attr_timeout_set, entry_timeout_set;
	/* nfs */
	unsigned acregmin, acregmax, acdirmin, acdirmax, actimeo;
	int actimeo_set, noac, nocache;
	char *lookupcache;
	unsigned connections, timeo, retrans;
};

struct backend;

struct udcfs {
	udc_cache *cache;
	struct fuse_session *se;
	const struct backend *be;      /* local.c's or nfs.c's */
	void *be_data;                 /* the backend's own state */
	struct node root;              /* FUSE_ROOT_ID: not in the slab, never freed */
	struct nodes nodes;
	pthread_rwlock_t name_locks[NAME_LOCKS];
	double entry_timeout;          /* kernel's dentry validity (s); 0: every lookup reaches us */
	double attr_timeout;           /* kernel's attribute validity (s) */
	double negative_timeout;       /* kernel's negative-dentry validity (s); 0: none */
	uint64_t attr_valid_ns;        /* local: udcache's attribute validity */
	unsigned list_after_misses;    /* list a directory after this many backing misses; 0: never */
	int keep_negatives;            /* a backend lookup that finds nothing files a negative */
	int switch_creds;              /* local, as root: creating requests run as the caller */
	gid_t *own_groups;             /* our supplementary groups, restored after a switch */
	int own_ngroups;
	/* counters for -o stats (relaxed: statistics only) */
	_Atomic uint64_t lookups, cached_positive, cached_negative, forgets;
};

/* What make_node creates (mknod, mkdir, symlink, create). */
enum make_kind { MAKE_NODE, MAKE_DIR, MAKE_SYMLINK, MAKE_FILE };

struct make {
	enum make_kind kind;
	mode_t mode;
	dev_t rdev;
	const char *target; /* MAKE_SYMLINK */
	int flags;          /* MAKE_FILE: open flags */
	uint64_t fh;        /* MAKE_FILE: the open file the backend made */
};

/*
 * A backend: what only the backing filesystem can do. Every call returns 0 (or a count) or
 * -errno, and runs on the FUSE worker that serves `req` (NULL: no request; the backend acts as
 * udcfs itself). Nodes passed in are held by the kernel or pinned by the caller. The front end
 * keeps udcache exact around these calls; a backend that learns attributes as a side effect
 * (NFS post-op attributes) files them itself (node.c's attr_* functions).
 */
struct backend {
	const char *name;
	/* Each node holds an open fd (local: an O_PATH fd): the node budget is then bounded by the
	 * open-file limit (see node_budget in main.c). */
	int node_holds_fd;
	/* Reaches o->source and fills the root node (its handle and identity), and sets what it
	 * needs of udcache's configuration: 0 or -1, after one line on stderr. */
	int (*init)(struct udcfs *fs, const struct options *o, udc_config *cfg);
	void (*destroy)(struct udcfs *fs);
	/* How long udcache may keep the attributes `st` of `n`, just read (NULL: attr_valid_ns). */
	uint64_t (*attr_ttl)(struct udcfs *fs, fuse_ino_t ino, struct node *n, const struct stat *st);
	/* Before a lookup in `dir` (NULL: nothing): see nfs_attr.c. */
	void (*lookup_prepare)(struct udcfs *fs, fuse_req_t req, fuse_ino_t dir);
	/* `name` in `dir`: 0 and *out (its handle then belongs to the caller), or -ENOENT, -errno */
	int (*lookup)(struct udcfs *fs, fuse_req_t req, struct node *dir, const char *name,
		      struct bobj *out);
	/* Fresh attributes of `n` (not from udcache). */
	int (*getattr)(struct udcfs *fs, fuse_req_t req, struct node *n, struct stat *st);
	/* FUSE setattr: the `valid` fields of `attr`; `fi` the open file or NULL. */
	int (*setattr)(struct udcfs *fs, fuse_req_t req, struct node *n, const struct stat *attr,
		       int valid, struct fuse_file_info *fi);
	/* Creates `name` in `dir` as the caller: 0 and *out (and m->fh for MAKE_FILE). */
	int (*make)(struct udcfs *fs, fuse_req_t req, struct node *dir, const char *name,
		    struct make *m, struct bobj *out);
	int (*link)(struct udcfs *fs, fuse_req_t req, struct node *n, struct node *newdir,
		    const char *newname);
	int (*remove)(struct udcfs *fs, fuse_req_t req, struct node *dir, const char *name,
		      int is_dir);
	int (*rename)(struct udcfs *fs, fuse_req_t req, struct node *dir, const char *name,
		      struct node *newdir, const char *newname, unsigned flags);
	/* The target into buf (NUL-terminated): its length, or -errno. */
	int (*readlink)(struct udcfs *fs, fuse_req_t req, struct node *n, char *buf, size_t size);
	int (*open)(struct udcfs *fs, fuse_req_t req, struct node *n, int flags, uint64_t *fh);
	void (*release)(struct udcfs *fs, struct node *n, uint64_t fh);
	int (*flush)(struct udcfs *fs, struct node *n, uint64_t fh);
	int (*fsync)(struct udcfs *fs, fuse_req_t req, struct node *n, uint64_t fh, int datasync);
	/* Bytes read into buf (0 at the end), or -errno. */
	ssize_t (*read)(struct udcfs *fs, fuse_req_t req, struct node *n, uint64_t fh, char *buf,
			size_t size, off_t off);
	ssize_t (*write)(struct udcfs *fs, fuse_req_t req, struct node *n, uint64_t fh,
			 struct fuse_bufvec *in, off_t off);
	int (*fallocate)(struct udcfs *fs, struct node *n, uint64_t fh, int mode, off_t off,
			 off_t len);
	int (*statfs)(struct udcfs *fs, fuse_req_t req, struct node *n, struct statvfs *sv);
	/* access(2) for the caller: 0 or -EACCES, -errno (NULL: the front end judges the mode
	 * bits). Asked only without default_permissions. */
	int (*access)(struct udcfs *fs, fuse_req_t req, struct node *n, int mask);
	/* An open directory: its handle for fill and releasedir. */
	int (*opendir)(struct udcfs *fs, fuse_req_t req, struct node *n, uint64_t *dh);
	void (*releasedir)(struct udcfs *fs, struct node *n, uint64_t dh);
	/* The readdir callback's work (see udc_readdir_fn): `dh` the reader's open directory, or
	 * NULL (a listing for lookups). */
	int (*fill)(struct udcfs *fs, fuse_req_t req, struct node *dir, const uint64_t *dh,
		    uint64_t cookie, size_t max, udc_fill *fill);
	/* The inode number readdir shows for ".." of `dir`. */
	uint64_t (*dotdot_ino)(struct udcfs *fs, struct node *dir, const uint64_t *dh);
	/* Whether two handles of one identity (dev, ino) are the same object (NULL: always).
	 * An NFS server reuses a removed file's number for a new file, under another handle. */
	int (*same)(const union bhandle *a, const union bhandle *b);
	/* Frees a handle no node holds any more. */
	void (*drop)(struct udcfs *fs, union bhandle *h);
	/* The udcache callbacks beyond lookup and readdir (NULL: none). */
	udc_revalidate_fn revalidate;
	/* Prints the backend's own statistics line for -o stats (NULL: none). */
	void (*stats)(struct udcfs *fs, const char *when, FILE *out);
	/* The backend files the attributes its changes leave (post-op attributes) for the nodes
	 * it changes and the directories it changes names in; else the front end expires them. */
	int post_attrs;
};

extern const struct backend local_backend;
extern const struct backend nfs_backend;

/* ---- node.c ---- */
/* A 64-bit mixing function (SplitMix64's finaliser): hashes of node identities and names. */
uint64_t mix64(uint64_t x);
int nodes_init(struct nodes *t, size_t buckets);
void nodes_destroy(struct udcfs *fs);
struct node *node_of(struct udcfs *fs, fuse_ino_t ino);
fuse_ino_t node_ino(struct udcfs *fs, const struct node *n);
/* Looks `name` up in `parent` (the backend) and returns its node pinned: 1 if new, 0 if it
 * existed, or -errno. */
int node_open(struct udcfs *fs, fuse_req_t req, fuse_ino_t parent, const char *name,
	      struct node **out, struct stat *st);
/* The node of an object the backend just made as (parent, name), pinned: as node_open. */
int node_made(struct udcfs *fs, struct bobj *o, fuse_ino_t parent, const char *name,
	      struct node **out);
void node_renamed(struct udcfs *fs, fuse_ino_t ino, fuse_ino_t parent, const char *name,
		  fuse_ino_t newparent, const char *newname);
/* The backend answered ESTALE for `ino` (the object is gone on the server): drops the name it
 * is known by from udcache, with everything cached below it, so the next lookup resolves
 * afresh. Returns -ESTALE. */
int node_stale(struct udcfs *fs, fuse_ino_t ino);
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
int fs_lookup(struct udcfs *fs, fuse_req_t req, fuse_ino_t parent, const char *name,
	      struct fuse_entry_param *e);
/* Fills *e for a lookup of `ino` already counted in udcache; on failure undoes the count. */
int fs_entry(struct udcfs *fs, fuse_req_t req, fuse_ino_t ino, const struct stat *fresh,
	     struct fuse_entry_param *e);
/* The attributes of `ino`: udcache's, or the backend's (then cached). */
int node_stat(struct udcfs *fs, fuse_req_t req, fuse_ino_t ino, struct stat *st);
/* Caches `st`, read after the node's attr_ver was `ver` (see node.c). */
void attr_cache(struct udcfs *fs, fuse_ino_t ino, const struct stat *st, uint32_t ver);
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


/* ---- ops.c, dir.c ---- */
extern const struct fuse_lowlevel_ops udcfs_ops;
int udcfs_readdir_fill(void *ctx, uint64_t dir, uint64_t cookie, size_t max, udc_fill *fill);
/* A backend's directory position (where to resume after an entry) as a udcache cookie, 0 if it
 * cannot be one; whether a cookie could have been issued; and the position of one that was. */
uint64_t dir_cookie_of(uint64_t pos);
int dir_cookie_valid(uint64_t cookie);
uint64_t dir_position_of(uint64_t cookie);
/* The largest list_after_misses (times dir.c's backoff, it must fit a node's 32-bit count). */
#define LIST_AFTER_MISSES_MAX (1u << 20)
/* A backing lookup in `dir` found nothing: every list_after_misses of them, read its listing. */
void dir_note_absent(struct udcfs *fs, fuse_req_t req, fuse_ino_t dir);
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
