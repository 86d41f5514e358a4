/*
 * The NFSv3 backend's shared state and internal interface (nfs.c, nfs_rpc.c, nfs_attr.c).
 */
#ifndef UDCFS_NFS_H
#define UDCFS_NFS_H

#include "udcfs.h"

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>

/* NFSv3 procedure numbers (RFC 1813), the index of the call counters. */
enum nfs_proc {
	NFSPROC3_NULL, NFSPROC3_GETATTR, NFSPROC3_SETATTR, NFSPROC3_LOOKUP, NFSPROC3_ACCESS,
	NFSPROC3_READLINK, NFSPROC3_READ, NFSPROC3_WRITE, NFSPROC3_CREATE, NFSPROC3_MKDIR,
	NFSPROC3_SYMLINK, NFSPROC3_MKNOD, NFSPROC3_REMOVE, NFSPROC3_RMDIR, NFSPROC3_RENAME,
	NFSPROC3_LINK, NFSPROC3_READDIR, NFSPROC3_READDIRPLUS, NFSPROC3_FSSTAT, NFSPROC3_FSINFO,
	NFSPROC3_PATHCONF, NFSPROC3_COMMIT, NFS_NPROC
};

/* NFS3ERR_BAD_COOKIE as an errno (Linux's internal number for it); never returned to FUSE. */
#define NFS_EBADCOOKIE 523

/* AUTH_SYS credentials (RFC 5531: at most 16 supplementary groups). */
struct nfs_cred {
	uint32_t uid, gid, ngroups;
	uint32_t groups[16];
};

/* One connection: a mounted libnfs context, used by one thread at a time (nfs_rpc.c). */
struct nfs_conn {
	struct nfs_context *nfs;
	struct rpc_context *rpc;
	struct nfs_cred cred; /* what its AUTH_SYS says now */
	int has_cred;
	int next_free;        /* index of the next free connection; -1: none */
};

struct plus_table;

enum lookupcache { LOOKUPCACHE_ALL, LOOKUPCACHE_POSITIVE, LOOKUPCACHE_NONE };

struct nfs_state {
	char *url;
	struct nfs_conn *conns;
	unsigned nconns;
	pthread_mutex_t lock; /* protects free_head; `idle`'s mutex */
	pthread_cond_t idle;
	int free_head;
	uint64_t call_timeout_ms; /* timeo x (retrans + 1) */
	uint64_t acregmin, acregmax, acdirmin, acdirmax; /* ns */
	enum lookupcache lookupcache;
	int nocache; /* -o nocache: listings are read afresh at every opendir too */
	uint32_t rsize, wsize;
	_Atomic int no_plus; /* the server refused READDIRPLUS: READDIR */
	struct plus_table *plus; /* nfs_plus.c */
	/* relaxed: statistics only */
	_Atomic uint64_t calls[NFS_NPROC];
	_Atomic uint64_t jukebox_retries, reconnects, cookie_restarts;
};

static inline struct nfs_state *nfs_of(struct udcfs *fs)
{
	return fs->be_data;
}

/* ---- nfs_rpc.c ---- */
int nfs_connect_all(struct nfs_state *s, const char *url, unsigned n);
void nfs_disconnect_all(struct nfs_state *s);
/* The root file handle of the export (after nfs_connect_all). */
int nfs_root_fh(struct nfs_state *s, union bhandle *h);
/*
 * Calls procedure `proc` with `args` as the caller of `req` (NULL: udcfs itself, uid 0) on a
 * free connection, retrying NFS3ERR_JUKEBOX after a pause. `take` runs with the reply (status
 * OK or not) before libnfs frees it, and copies what the caller needs into `out`. Returns the
 * NFS status as -errno (0: NFS3_OK), or -EIO when no reply came within the call timeout.
 */
typedef void (*nfs_take_fn)(void *res, void *out);
int nfs_call(struct nfs_state *s, fuse_req_t req, enum nfs_proc proc, void *args,
	     nfs_take_fn take, void *out);
int nfs_errno(int nfsstat);

/* ---- nfs_plus.c ---- */
int plus_init(struct nfs_state *s);
void plus_destroy(struct nfs_state *s);
/* Keeps what a READDIRPLUS of directory `dir` (change attribute `change`) said of `name`. */
void plus_keep(struct nfs_state *s, uint64_t dir, uint64_t change, const char *name,
	       const nfs_fh3 *fh, const fattr3 *a);
/* Drops what a listing of `dir` said of `name` (udcfs is changing that name). */
void plus_forget(struct nfs_state *s, uint64_t dir, const char *name);
/* 1 and *out if a fresh listing of `dir` answered `name` (its handle is then the caller's). */
int plus_take(struct nfs_state *s, uint64_t dir, uint64_t change, const char *name,
	      struct bobj *out);

/* ---- nfs_attr.c ---- */
void stat_of_fattr(const fattr3 *a, struct stat *st);
/* The change attribute (see nfs_attr.c) of attributes a reply carried. */
uint64_t nfs_change_of_fattr(const fattr3 *a);
uint64_t nfs_attr_ttl(struct udcfs *fs, fuse_ino_t ino, struct node *n, const struct stat *st);
/* Copies of a reply's attributes, taken inside the reply (nfs_keep_*), filed after it: the
 * attributes of `n` (or expired, if the reply had none), and a change's wcc data (see
 * nfs_attr.c's rules). */
struct nfs_attrs {
	int has;
	fattr3 a;
};
struct nfs_wcc {
	int has_before, has_after;
	wcc_attr before;
	fattr3 after;
};
void nfs_keep_post(struct nfs_attrs *k, const post_op_attr *pa);
void nfs_keep_wcc(struct nfs_wcc *k, const wcc_data *w);
void nfs_apply_post(struct udcfs *fs, struct node *n, const struct nfs_attrs *k);
void nfs_apply_wcc(struct udcfs *fs, struct node *n, const struct nfs_wcc *k);
/* Before a lookup in `dir`: makes its cached attributes fresh, so that its names are judged
 * against a change attribute no older than the attribute cache allows. */
void nfs_dir_fresh(struct udcfs *fs, fuse_req_t req, fuse_ino_t dir);
uint64_t nfs_dir_verifier(struct node *dir);
int nfs_revalidate(void *ctx, uint64_t parent, const char *name, size_t len,
		   const udc_cached *cached, int may_block, uint64_t *ttl_ns);

#endif
