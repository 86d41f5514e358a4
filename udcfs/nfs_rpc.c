/*
 * The NFS backend's connections and calls.
 *
 * Design. A libnfs context is not thread-safe, and FUSE serves requests on several worker
 * threads. udcfs keeps a pool of `connections` contexts, each mounted on the export at start;
 * a call takes a free one, sends its request and runs that context's event loop (poll +
 * rpc_service) on the calling thread until the reply, then gives it back. So up to
 * `connections` calls are in flight at once, each on the thread that needs its answer: no
 * hand-off to an I/O thread and back (two context switches per call), and a reply's data is
 * read straight into what the caller keeps. A thread that finds no free connection waits for
 * one (the pool is as large as FUSE's worker count by default, so that is rare).
 *
 * Rules
 *
 * - s->lock protects the free list (free_head, next_free); a connection off the list belongs
 *   to the one thread that took it, which alone touches its context, including its AUTH_SYS
 *   credentials (set before a call when they differ from the connection's current ones).
 * - A call's reply callback runs inside rpc_service on the calling thread; it copies what the
 *   caller keeps (`take`), since libnfs frees the reply when the callback returns.
 * - NFS3ERR_JUKEBOX ("try again later", e.g. a server in its grace period) is retried after a
 *   pause, as the kernel's client does, until the call timeout.
 * - A call with no reply within timeo x (retrans + 1) fails with -EIO: its connection is
 *   disconnected (libnfs fails what was in flight and reconnects on the next call).
 */
#include "nfs.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * The export's root handle after a mount. libnfs 4 exports this function but declares it in a
 * private header only, with its handle struct: both are declared here as that version has them.
 */
struct nfs_fh {
	int len;
	char *val;
};
const struct nfs_fh *nfs_get_rootfh(struct nfs_context *nfs);

enum { JUKEBOX_PAUSE_MS = 100, POLL_MS = 100 };

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int nfs_errno(int st)
{
	switch (st) {
	case NFS3_OK:
		return 0;
	case NFS3ERR_PERM:
	case NFS3ERR_NOENT:
	case NFS3ERR_IO:
	case NFS3ERR_NXIO:
	case NFS3ERR_ACCES:
	case NFS3ERR_EXIST:
	case NFS3ERR_XDEV:
	case NFS3ERR_NODEV:
	case NFS3ERR_NOTDIR:
	case NFS3ERR_ISDIR:
	case NFS3ERR_INVAL:
	case NFS3ERR_FBIG:
	case NFS3ERR_NOSPC:
	case NFS3ERR_ROFS:
	case NFS3ERR_MLINK:
		return -st; /* the same numbers as Linux's errno */
	case NFS3ERR_NAMETOOLONG:
		return -ENAMETOOLONG;
	case NFS3ERR_NOTEMPTY:
		return -ENOTEMPTY;
	case NFS3ERR_DQUOT:
		return -EDQUOT;
	case NFS3ERR_STALE:
	case NFS3ERR_BADHANDLE:
		return -ESTALE;
	case NFS3ERR_REMOTE:
		return -EREMOTE;
	case NFS3ERR_BAD_COOKIE:
		return -NFS_EBADCOOKIE;
	case NFS3ERR_NOTSUPP:
		return -EOPNOTSUPP;
	case NFS3ERR_TOOSMALL:
	case NFS3ERR_BADTYPE:
		return -EINVAL;
	case NFS3ERR_JUKEBOX:
		return -EAGAIN;
	default:
		return -EIO;
	}
}

int nfs_connect_all(struct nfs_state *s, const char *url, unsigned n)
{
	s->conns = calloc(n, sizeof(*s->conns));
	if (!s->conns)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->idle, NULL);
	s->free_head = -1;
	for (unsigned i = 0; i < n; i++) {
		struct nfs_conn *c = &s->conns[i];
		c->nfs = nfs_init_context();
		if (!c->nfs)
			return -ENOMEM;
		s->nconns = i + 1;
		struct nfs_url *u = nfs_parse_url_dir(c->nfs, url);
		if (!u) {
			fprintf(stderr, "udcfs: %s: %s\n", url, nfs_get_error(c->nfs));
			return -EINVAL;
		}
		int r = nfs_mount(c->nfs, u->server, u->path);
		if (r < 0)
			fprintf(stderr, "udcfs: %s: %s\n", url, nfs_get_error(c->nfs));
		nfs_destroy_url(u);
		if (r < 0)
			return r;
		c->rpc = nfs_get_rpc_context(c->nfs);
		c->next_free = s->free_head;
		s->free_head = (int)i;
	}
	uint64_t rmax = nfs_get_readmax(s->conns[0].nfs), wmax = nfs_get_writemax(s->conns[0].nfs);
	s->rsize = (uint32_t)(rmax && rmax < (1u << 20) ? rmax : 1u << 20);
	s->wsize = (uint32_t)(wmax && wmax < (1u << 20) ? wmax : 1u << 20);
	return 0;
}

void nfs_disconnect_all(struct nfs_state *s)
{
	for (unsigned i = 0; i < s->nconns; i++)
		if (s->conns[i].nfs)
			nfs_destroy_context(s->conns[i].nfs);
	free(s->conns);
	s->conns = NULL;
	s->nconns = 0;
}

int nfs_root_fh(struct nfs_state *s, union bhandle *h)
{
	const struct nfs_fh *fh = nfs_get_rootfh(s->conns[0].nfs);
	if (!fh || fh->len <= 0 || fh->len > FH_MAX)
		return -EIO;
	h->fh.len = (uint32_t)fh->len;
	memcpy(h->fh.data, fh->val, (size_t)fh->len);
	return 0;
}

static struct nfs_conn *conn_take(struct nfs_state *s)
{
	pthread_mutex_lock(&s->lock);
	while (s->free_head < 0)
		pthread_cond_wait(&s->idle, &s->lock);
	struct nfs_conn *c = &s->conns[s->free_head];
	s->free_head = c->next_free;
	pthread_mutex_unlock(&s->lock);
	return c;
}

static void conn_give(struct nfs_state *s, struct nfs_conn *c)
{
	pthread_mutex_lock(&s->lock);
	c->next_free = s->free_head;
	s->free_head = (int)(c - s->conns);
	pthread_cond_signal(&s->idle);
	pthread_mutex_unlock(&s->lock);
}

/* The caller of `req` as AUTH_SYS credentials; udcfs itself (uid 0) without a request. */
static void cred_of(fuse_req_t req, struct nfs_cred *cred)
{
	memset(cred, 0, sizeof(*cred));
	if (!req)
		return;
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	gid_t groups[16];
	int n = fuse_req_getgroups(req, 16, groups);
	cred->uid = ctx->uid;
	cred->gid = ctx->gid;
	for (int i = 0; i < n && i < 16; i++)
		cred->groups[cred->ngroups++] = groups[i];
}

static int conn_auth(struct nfs_conn *c, const struct nfs_cred *cred)
{
	if (c->has_cred && memcmp(&c->cred, cred, sizeof(*cred)) == 0)
		return 0;
	uint32_t groups[16];
	memcpy(groups, cred->groups, sizeof(groups));
	struct AUTH *auth =
		libnfs_authunix_create("udcfs", cred->uid, cred->gid, cred->ngroups, groups);
	if (!auth)
		return -ENOMEM;
	rpc_set_auth(c->rpc, auth); /* frees the one it replaces */
	c->cred = *cred;
	c->has_cred = 1;
	return 0;
}

/* One call in flight on a connection. */
struct call {
	int done;
	int rpc_status; /* RPC_STATUS_* */
	int nfs_status;
	nfs_take_fn take;
	void *out;
};

static void call_done(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct call *call = priv;

	(void)rpc;
	call->rpc_status = status;
	if (status == RPC_STATUS_SUCCESS) {
		/* Every NFSv3 reply starts with its nfsstat3. */
		call->nfs_status = *(const int *)data;
		if (call->nfs_status != NFS3ERR_JUKEBOX && call->take)
			call->take(data, call->out);
	}
	call->done = 1;
}

static int send_call(struct rpc_context *rpc, enum nfs_proc proc, void *args, struct call *call)
{
	switch (proc) {
	case NFSPROC3_GETATTR:
		return rpc_nfs3_getattr_async(rpc, call_done, args, call);
	case NFSPROC3_SETATTR:
		return rpc_nfs3_setattr_async(rpc, call_done, args, call);
	case NFSPROC3_LOOKUP:
		return rpc_nfs3_lookup_async(rpc, call_done, args, call);
	case NFSPROC3_ACCESS:
		return rpc_nfs3_access_async(rpc, call_done, args, call);
	case NFSPROC3_READLINK:
		return rpc_nfs3_readlink_async(rpc, call_done, args, call);
	case NFSPROC3_READ:
		return rpc_nfs3_read_async(rpc, call_done, args, call);
	case NFSPROC3_WRITE:
		return rpc_nfs3_write_async(rpc, call_done, args, call);
	case NFSPROC3_CREATE:
		return rpc_nfs3_create_async(rpc, call_done, args, call);
	case NFSPROC3_MKDIR:
		return rpc_nfs3_mkdir_async(rpc, call_done, args, call);
	case NFSPROC3_SYMLINK:
		return rpc_nfs3_symlink_async(rpc, call_done, args, call);
	case NFSPROC3_MKNOD:
		return rpc_nfs3_mknod_async(rpc, call_done, args, call);
	case NFSPROC3_REMOVE:
		return rpc_nfs3_remove_async(rpc, call_done, args, call);
	case NFSPROC3_RMDIR:
		return rpc_nfs3_rmdir_async(rpc, call_done, args, call);
	case NFSPROC3_RENAME:
		return rpc_nfs3_rename_async(rpc, call_done, args, call);
	case NFSPROC3_LINK:
		return rpc_nfs3_link_async(rpc, call_done, args, call);
	case NFSPROC3_READDIR:
		return rpc_nfs3_readdir_async(rpc, call_done, args, call);
	case NFSPROC3_READDIRPLUS:
		return rpc_nfs3_readdirplus_async(rpc, call_done, args, call);
	case NFSPROC3_FSSTAT:
		return rpc_nfs3_fsstat_async(rpc, call_done, args, call);
	case NFSPROC3_COMMIT:
		return rpc_nfs3_commit_async(rpc, call_done, args, call);
	default:
		return -1;
	}
}

/* Runs one call on `c` to its end: 0 (a reply; its status in call->nfs_status) or -EIO. */
static int run_call(struct nfs_state *s, struct nfs_conn *c, enum nfs_proc proc, void *args,
		    struct call *call, uint64_t deadline)
{
	if (send_call(c->rpc, proc, args, call) != 0)
		return -EIO;
	atomic_fetch_add_explicit(&s->calls[proc], 1, memory_order_relaxed);
	while (!call->done) {
		struct pollfd p = { .fd = rpc_get_fd(c->rpc), .events = (short)rpc_which_events(c->rpc) };
		int n = poll(&p, 1, POLL_MS);
		if (n < 0 && errno != EINTR)
			n = 0;
		if (rpc_service(c->rpc, n > 0 ? p.revents : 0) < 0 && !call->done) {
			/* the connection broke: libnfs fails the call (and reconnects later) */
			rpc_disconnect(c->rpc, "udcfs: connection lost");
			atomic_fetch_add_explicit(&s->reconnects, 1, memory_order_relaxed);
		}
		if (!call->done && now_ms() >= deadline) {
			rpc_disconnect(c->rpc, "udcfs: call timed out");
			atomic_fetch_add_explicit(&s->reconnects, 1, memory_order_relaxed);
			if (!call->done)
				return -EIO; /* the callback would write to a call that is gone */
		}
	}
	return call->rpc_status == RPC_STATUS_SUCCESS ? 0 : -EIO;
}

int nfs_call(struct nfs_state *s, fuse_req_t req, enum nfs_proc proc, void *args,
	     nfs_take_fn take, void *out)
{
	struct nfs_cred cred;
	uint64_t deadline = now_ms() + s->call_timeout_ms;
	int r;

	cred_of(req, &cred);
	for (;;) {
		struct nfs_conn *c = conn_take(s);
		struct call call = { .take = take, .out = out };
		r = conn_auth(c, &cred);
		if (r == 0)
			r = run_call(s, c, proc, args, &call, deadline);
		conn_give(s, c);
		if (r < 0)
			return r;
		if (call.nfs_status != NFS3ERR_JUKEBOX)
			return nfs_errno(call.nfs_status);
		if (now_ms() + JUKEBOX_PAUSE_MS >= deadline)
			return -EIO;
		atomic_fetch_add_explicit(&s->jukebox_retries, 1, memory_order_relaxed);
		nanosleep(&(struct timespec){ 0, JUKEBOX_PAUSE_MS * 1000000L }, NULL);
	}
}
