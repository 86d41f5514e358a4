/*
 * Directories: the readdir callback udcache calls for the ranges its readdir cache lacks (the
 * backend's fill), and the FUSE directory operations served from that cache.
 *
 * Offsets and cookies. A FUSE readdir `off` is where to continue: 0 is the start, DOT_OFF is
 * after ".", DOTDOT_OFF after "..", and anything else is a udcache readdir cookie, passed to
 * udc_readdir as is. udcfs lists "." and ".." itself, in front (they are not names udcache can
 * cache); a backend never issues a cookie of DOTDOT_OFF or less (local.c and nfs.c say how).
 *
 * Inode numbers. A listed entry carries the backing inode number, which is what readdir shows;
 * udcache only lists it. Nodeids come from lookups (readdirplus looks each entry up).
 *
 * Verifier. A fill reports the directory's change attribute as its verifier (local: its ctime;
 * NFS: its change attribute, see nfs_attr.c): udcache drops pages filled before a change made
 * behind udcfs's back when it next fills that directory. Changes made through udcfs are
 * announced by udcache itself (udc_add, udc_unlink, udc_rename do).
 *
 * Threading. udcache calls the callback on the thread that called udc_readdir; that thread's
 * request and open directory (the FUSE file handle) are passed to the callback through
 * tls_fill, so a fill reads with the handle's own state and the caller's credentials. The
 * kernel serialises readdir calls on one open directory. A fill with no handle
 * (dir_note_absent's) reads without one.
 *
 * Replies. A reply reads no further than the directory's cached pages reach once it holds an
 * entry: it asks udc_readdir once for more entries than it can take, and udc_readdir, having
 * copied any, stops where the cached pages stop; fewer than asked for end the reply. The
 * kernel may pass on only part of a reply (a getdents buffer smaller than the reply takes
 * what fits; the rest is asked for again from the last cookie it took), so filling the next
 * page for a reply's tail could fill it while the reader is still inside the page before; if
 * that fill finds the directory changed, it makes that page stale and the reader reads its
 * rest again. Filled only for a reply that holds nothing yet, a page is filled when the reader
 * has reached it, and a listing of a changing directory reads each page once.
 *
 * Directories that keep missing. A backing lookup that finds nothing is remembered as one
 * negative entry per name, within udcache's per-bucket bound. A directory asked for many names
 * it lacks (a flood of unique names, a search path) is better answered by its complete listing,
 * which udcache asks before the backend: a name the listing lacks is "does not exist" with no
 * backend call and no negative entry. So every list_after_misses-th backend miss in a directory
 * (node.absent counts them) reads its listing through, LIST_MAX entries at most. The listing
 * stays complete until a name is created in the directory (udc_add marks it changed); misses
 * then reach the backend and count again. A directory too big to list within LIST_MAX is tried
 * again only after LIST_BACKOFF times as many misses. The listing runs inside the lookup that
 * counted the miss, before its reply: the kernel holds the parent until then, so its node
 * cannot be freed by a FORGET meanwhile.
 */
#include "udcfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { DOT_OFF = 1, DOTDOT_OFF = 2, BATCH = 64 };
enum { LIST_MAX = 64 * BATCH, LIST_BACKOFF = 16 };

/*
 * Backend positions as cookies. A backend's position of an entry (a local d_off, an NFS cookie:
 * where to resume after it; 0 is the start) is issued as the cookie position + COOKIE_BIAS, so
 * that cookies are never 0, DOT_OFF or DOTDOT_OFF -- except where the sum would pass
 * INT64_MAX, the largest position the kernel keeps for an open directory: a position that high
 * is issued as it is (ext4 and btrfs end a hashed listing at INT64_MAX itself, and NFS servers
 * over them pass that on). So every cookie is a position the kernel can hand back. A position
 * of INT64_MAX - 3 or - 2 would share its cookie with one of the two top positions (read back
 * as the top one); a hashed directory gives an entry such a position with a chance of about
 * 2^-62. Positions above INT64_MAX cannot be issued (dir_cookie_of: 0).
 */
enum { COOKIE_BIAS = 2 };

uint64_t dir_cookie_of(uint64_t pos)
{
	if (pos > INT64_MAX)
		return 0;
	return pos <= (uint64_t)INT64_MAX - COOKIE_BIAS ? pos + COOKIE_BIAS : pos;
}

int dir_cookie_valid(uint64_t cookie)
{
	return cookie > COOKIE_BIAS && cookie <= INT64_MAX;
}

uint64_t dir_position_of(uint64_t cookie)
{
	return cookie > (uint64_t)INT64_MAX - COOKIE_BIAS ? cookie : cookie - COOKIE_BIAS;
}

/* The reader a fill on this thread serves (see the rules). */
struct fill_ctx {
	fuse_req_t req;
	fuse_ino_t ino;
	const uint64_t *dh; /* the open directory's handle, or NULL */
};

static _Thread_local const struct fill_ctx *tls_fill;

static mode_t mode_of_udc_type(uint32_t type)
{
	switch (type) {
	case UDC_TYPE_DIR:
		return S_IFDIR;
	case UDC_TYPE_REG:
		return S_IFREG;
	case UDC_TYPE_LNK:
		return S_IFLNK;
	default:
		return 0; /* DT_UNKNOWN: the reader stats it */
	}
}

int udcfs_readdir_fill(void *ctx, uint64_t dir, uint64_t cookie, size_t max, udc_fill *fill)
{
	struct udcfs *fs = ctx;
	const struct fill_ctx *f = tls_fill;
	const uint64_t *dh = f && f->ino == dir ? f->dh : NULL;

	int r = fs->be->fill(fs, f ? f->req : NULL, node_of(fs, dir), dh, cookie, max, fill);
	if (r == -ESTALE)
		node_stale(fs, dir);
	attr_read(fs, dir); /* reading entries may have moved the directory's atime */
	return r;
}

/* udc_readdir of up to `max` entries for the request `req`, whose open directory is `dh`
 * (NULL: none). */
static int readdir_for(struct udcfs *fs, fuse_req_t req, fuse_ino_t dir, const uint64_t *dh,
		       uint64_t cookie, udc_dirent *ents, size_t max, size_t *count)
{
	const struct fill_ctx f = { .req = req, .ino = dir, .dh = dh };
	const struct fill_ctx *outer = tls_fill;

	tls_fill = &f;
	int r = udc_readdir(fs->cache, dir, cookie, ents, max, count);
	tls_fill = outer;
	return r;
}

/*
 * A listing failed with `err` (a udc_readdir error). -ELOOP: the backend's cookies lead round in
 * a cycle (a broken server). udcache kept none of the pages that close the cycle, but the pages
 * before them hold cookies the cycle reused: an unknown change makes them all stale, so the
 * next listing starts afresh. Called where the error ends the listing (not while a reader goes
 * on: dropping the pages under it would also drop what lets udcache see the cycle).
 */
static void listing_failed(struct udcfs *fs, fuse_ino_t dir, int err)
{
	if (err == -ELOOP)
		udc_dir_changed(fs->cache, dir, 0);
}

void dir_note_absent(struct udcfs *fs, fuse_req_t req, fuse_ino_t dir)
{
	uint32_t every = fs->list_after_misses;
	struct node *n = node_of(fs, dir);

	/* Relaxed: a count; the one thread that takes it to `every` lists. */
	if (!every || atomic_fetch_add_explicit(&n->absent, 1, memory_order_relaxed) + 1 != every)
		return;
	udc_dirent *ents = malloc(BATCH * sizeof(*ents));
	uint64_t cookie = 0;
	int end = -ENOMEM;
	for (size_t read = 0; ents && read < LIST_MAX;) {
		size_t count = 0;
		end = readdir_for(fs, req, dir, NULL, cookie, ents, BATCH, &count);
		if (end != 0 || count == 0)
			break;
		read += count;
		cookie = ents[count - 1].cookie;
	}
	free(ents);
	listing_failed(fs, dir, end);
	/* Listed to the end: count afresh. Too big, or failed: wait LIST_BACKOFF times longer. */
	atomic_store_explicit(&n->absent, end == 1 ? 0 : every - every * LIST_BACKOFF,
			      memory_order_relaxed);
}

void udcfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct udcfs *fs = req_fs(req);
	uint64_t dh;
	int r = fs->be->opendir(fs, req, node_of(fs, ino), &dh);

	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	fi->fh = dh;
	node_opened(fs, ino, 1);
	if (fuse_reply_open(req, fi) == -ENOENT) {
		node_opened(fs, ino, -1);
		fs->be->releasedir(fs, node_of(fs, ino), dh);
	}
}

void udcfs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct udcfs *fs = req_fs(req);

	node_opened(fs, ino, -1);
	fs->be->releasedir(fs, node_of(fs, ino), fi->fh);
	fuse_reply_err(req, 0);
}

/* One reply being built: a buffer of `size`, and for readdirplus the lookups it counted. */
struct reply {
	fuse_req_t req;
	struct udcfs *fs;
	int plus;
	char *buf;
	size_t size, used;
	fuse_ino_t *counted;
	size_t ncounted;
	int full;
};

/* Appends an entry without attributes (nodeid 0 in readdirplus); sets r->full if it won't fit. */
static void add_plain(struct reply *r, const char *name, uint64_t ino, mode_t mode, uint64_t off)
{
	size_t need;

	if (r->plus) {
		struct fuse_entry_param e = { .attr = { .st_ino = ino, .st_mode = mode } };
		need = fuse_add_direntry_plus(r->req, r->buf + r->used, r->size - r->used, name, &e,
					      (off_t)off);
	} else {
		struct stat st = { .st_ino = ino, .st_mode = mode };
		need = fuse_add_direntry(r->req, r->buf + r->used, r->size - r->used, name, &st,
					 (off_t)off);
	}
	if (need > r->size - r->used)
		r->full = 1;
	else
		r->used += need;
}

/* Appends a listed entry; readdirplus looks it up (counting a lookup the kernel will forget). */
static void add_listed(struct reply *r, fuse_ino_t dir, const udc_dirent *d)
{
	struct fuse_entry_param e;

	if (!r->plus) {
		add_plain(r, d->name, d->ino, mode_of_udc_type(d->type), d->cookie);
		return;
	}
	int found = fs_lookup(r->fs, r->req, dir, d->name, &e);
	if (found == 0 || found == -ENOENT)
		return; /* removed since it was listed */
	if (found < 0) {
		add_plain(r, d->name, d->ino, mode_of_udc_type(d->type), d->cookie);
		return;
	}
	size_t need = fuse_add_direntry_plus(r->req, r->buf + r->used, r->size - r->used, d->name,
					     &e, (off_t)d->cookie);
	if (need > r->size - r->used) {
		r->full = 1;
		node_forget(r->fs, e.ino, 1);
		return;
	}
	r->used += need;
	r->counted[r->ncounted++] = e.ino;
}

/*
 * The most entries a reply can take, plus one: its size over the size of an entry with a
 * one-byte name. Asked for that many, udcache answers what the reply can hold in one call.
 */
static size_t reply_capacity(const struct reply *r)
{
	size_t least;

	if (r->plus) {
		struct fuse_entry_param e = { .attr = { .st_mode = S_IFREG } };
		least = fuse_add_direntry_plus(r->req, r->buf, 0, "x", &e, 1);
	} else {
		struct stat st = { .st_mode = S_IFREG };
		least = fuse_add_direntry(r->req, r->buf, 0, "x", &st, 1);
	}
	return r->size / least + 1;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi, int plus)
{
	struct udcfs *fs = req_fs(req);
	const uint64_t dh = fi->fh;
	struct reply r = { .req = req, .fs = fs, .plus = plus, .size = size };
	udc_dirent *ents = NULL;
	uint64_t pos = (uint64_t)off;
	size_t want = 0;
	int err = 0;

	r.buf = malloc(size);
	if (r.buf) {
		want = reply_capacity(&r);
		ents = malloc(want * sizeof(*ents));
		r.counted = malloc(want * sizeof(*r.counted));
	}
	if (!ents || !r.buf || !r.counted) {
		err = ENOMEM;
		goto out;
	}
	if (pos < DOT_OFF)
		add_plain(&r, ".", atomic_load_explicit(&node_of(fs, ino)->bino, memory_order_relaxed),
			  S_IFDIR, DOT_OFF);
	if (pos < DOTDOT_OFF && !r.full)
		add_plain(&r, "..", fs->be->dotdot_ino(fs, node_of(fs, ino), &dh), S_IFDIR,
			  DOTDOT_OFF);
	uint64_t cookie = pos <= DOTDOT_OFF ? 0 : pos;
	while (!r.full) {
		size_t count = 0;
		int end = readdir_for(fs, req, ino, &dh, cookie, ents, want, &count);
		if (end < 0) {
			if (r.used == 0) {
				err = -end; /* else: the entries so far; the error comes on the next call */
				listing_failed(fs, ino, end);
			}
			break;
		}
		for (size_t i = 0; i < count && !r.full; i++) {
			add_listed(&r, ino, &ents[i]);
			if (!r.full)
				cookie = ents[i].cookie;
		}
		/* The end of the directory, or of its cached pages: see "Replies" in the rules. The
		 * reply goes on only where readdirplus left out entries removed since listed. */
		if (end == 1 || count < want)
			break;
	}
out:
	if (err) {
		fuse_reply_err(req, err);
	} else if (fuse_reply_buf(req, r.buf, r.used) == -ENOENT) {
		for (size_t i = 0; i < r.ncounted; i++) /* interrupted: the kernel saw none */
			node_forget(fs, r.counted[i], 1);
	}
	free(r.counted);
	free(r.buf);
	free(ents);
}

void udcfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, 0);
}

void udcfs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, 1);
}
