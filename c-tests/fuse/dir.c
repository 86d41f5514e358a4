/*
 * Directories: the readdir backend udcache calls for the ranges its readdir cache lacks, and the
 * FUSE directory operations served from that cache.
 *
 * Offsets and cookies. A FUSE readdir `off` is where to continue: 0 is the start, DOT_OFF is
 * after ".", DOTDOT_OFF after "..", and anything else is a udcache readdir cookie, passed to
 * udc_readdir as is. udcfs lists "." and ".." itself, in front (they are not names udcache can
 * cache). The backend issues as an entry's cookie the backing directory's d_off of that entry
 * (the position after it, which lseek on the directory accepts) plus COOKIE_BIAS, so its cookies
 * are never 0, DOT_OFF or DOTDOT_OFF (a backing d_off is at least 1) -- except where the sum
 * would pass INT64_MAX, the largest position the kernel keeps for an open directory: a d_off
 * that high is issued as it is (ext4 and btrfs end a hashed listing at INT64_MAX itself). So
 * every cookie is a position the kernel can seek back to. A d_off of INT64_MAX - 3 or - 2 would
 * share its cookie with one of the two top positions (read back as the top one); a hashed
 * directory gives an entry such a position with a chance of about 2^-62.
 *
 * Inode numbers. A listed entry carries the backing d_ino, which is what readdir shows; udcache
 * only lists it. Nodeids come from lookups (readdirplus looks each entry up).
 *
 * Verifier. A fill reports the backing directory's ctime (ns) as its verifier: any change to the
 * directory's entries moves it, so udcache drops pages filled before a change made behind
 * udcfs's back when it next fills that directory. Changes made through udcfs are announced by
 * udcache itself (udc_add, udc_unlink, udc_rename do).
 *
 * Threading. udcache calls the backend on the thread that called udc_readdir; that thread's
 * open directory (the FUSE file handle) is passed to the backend through tls_dir, so a fill
 * reads with the handle's own fd. The kernel serialises readdir calls on one open directory.
 * A fill with no handle (dir_note_absent's) opens the directory for itself.
 *
 * Directories that keep missing. A backing lookup that finds nothing is remembered as one
 * negative entry per name, within udcache's per-bucket bound. A directory asked for many names
 * it lacks (seed 000's flood, a search path) is better answered by its complete listing, which
 * udcache asks before the backing directory: a name the listing lacks is "does not exist" with
 * no syscall and no negative entry. So every list_after_misses-th backing miss in a directory
 * (node.absent counts them) reads its listing through, LIST_MAX entries at most. The listing
 * stays complete until a name is created in the directory (udc_add marks it changed); misses
 * then reach the backing directory and count again. A directory too big to list within
 * LIST_MAX is tried again only after LIST_BACKOFF times as many misses. The listing runs inside
 * the lookup that counted the miss, before its reply: the kernel holds the parent until then, so
 * its node (and fd) cannot be freed by a FORGET meanwhile.
 */
#include "udcfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { DOT_OFF = 1, DOTDOT_OFF = 2, COOKIE_BIAS = 2, BATCH = 64 };
enum { LIST_MAX = 64 * BATCH, LIST_BACKOFF = 16 };

struct dir_handle {
	fuse_ino_t ino;
	int fd;
};

static _Thread_local const struct dir_handle *tls_dir;

static uint32_t udc_type_of_dtype(unsigned char t)
{
	switch (t) {
	case DT_DIR:
		return UDC_TYPE_DIR;
	case DT_REG:
		return UDC_TYPE_REG;
	case DT_LNK:
		return UDC_TYPE_LNK;
	case DT_UNKNOWN:
		return UDC_TYPE_UNKNOWN;
	default:
		return UDC_TYPE_OTHER;
	}
}

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

static int is_dot_or_dotdot(const char *name)
{
	return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/* The cookie of an entry whose backing d_off is `d_off` (see the top of the file). */
static uint64_t cookie_of(int64_t d_off)
{
	return d_off <= INT64_MAX - COOKIE_BIAS ? (uint64_t)d_off + COOKIE_BIAS : (uint64_t)d_off;
}

/* The backing position a cookie names. */
static off_t position_of(uint64_t cookie)
{
	return cookie > (uint64_t)INT64_MAX - COOKIE_BIAS ? (off_t)cookie
							   : (off_t)(cookie - COOKIE_BIAS);
}

/* Up to `max` entries of the directory open at `fd`, after `cookie`, into `fill`. */
static int fill_from(int fd, uint64_t cookie, size_t max, udc_fill *fill)
{
	_Alignas(struct dirent64) char buf[8192];
	struct stat st;
	size_t added = 0;
	int eof = 0;

	if ((cookie != 0 && cookie <= COOKIE_BIAS) || cookie > INT64_MAX)
		return -EINVAL; /* never issued */
	if (fstat(fd, &st) < 0)
		return -errno;
	uint64_t verifier = (uint64_t)st.st_ctim.tv_sec * 1000000000u + (uint64_t)st.st_ctim.tv_nsec;
	if (lseek(fd, cookie ? position_of(cookie) : 0, SEEK_SET) < 0)
		return -errno;
	while (added < max) {
		ssize_t n = getdents64(fd, buf, sizeof(buf));
		if (n < 0)
			return -errno;
		if (n == 0) {
			eof = 1;
			break;
		}
		for (ssize_t pos = 0; pos < n && added < max;) {
			const struct dirent64 *d = (const struct dirent64 *)(buf + pos);
			pos += d->d_reclen;
			if (is_dot_or_dotdot(d->d_name))
				continue;
			int r = udc_fill_add(fill, d->d_name, strlen(d->d_name), d->d_ino,
					     udc_type_of_dtype(d->d_type), cookie_of(d->d_off));
			if (r < 0)
				return r;
			added++;
		}
	}
	return udc_fill_done(fill, eof, verifier ? verifier : 1);
}

int udcfs_readdir_fill(void *ctx, uint64_t dir, uint64_t cookie, size_t max, udc_fill *fill)
{
	struct udcfs *fs = ctx;
	const struct dir_handle *h = tls_dir;

	int r;

	if (h && h->ino == dir) {
		r = fill_from(h->fd, cookie, max, fill);
	} else {
		int fd = openat(node_of(fs, dir)->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		r = fill_from(fd, cookie, max, fill);
		close(fd);
	}
	attr_read(fs, dir); /* getdents may have moved the directory's atime */
	return r;
}

void dir_note_absent(struct udcfs *fs, fuse_ino_t dir)
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
		end = udc_readdir(fs->cache, dir, cookie, ents, BATCH, &count);
		if (end != 0 || count == 0)
			break;
		read += count;
		cookie = ents[count - 1].cookie;
	}
	free(ents);
	/* Listed to the end: count afresh. Too big, or failed: wait LIST_BACKOFF times longer. */
	atomic_store_explicit(&n->absent, end == 1 ? 0 : every - every * LIST_BACKOFF,
			      memory_order_relaxed);
}

void udcfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int fd = openat(node_of(req_fs(req), ino)->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	fi->fh = (uint64_t)fd;
	node_opened(req_fs(req), ino, 1);
	if (fuse_reply_open(req, fi) == -ENOENT) {
		node_opened(req_fs(req), ino, -1);
		close(fd);
	}
}

void udcfs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	node_opened(req_fs(req), ino, -1);
	close((int)fi->fh);
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
	int found = fs_lookup(r->fs, dir, d->name, &e);
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

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi, int plus)
{
	struct udcfs *fs = req_fs(req);
	struct dir_handle h = { .ino = ino, .fd = (int)fi->fh };
	struct reply r = { .req = req, .fs = fs, .plus = plus, .size = size };
	udc_dirent *ents = malloc(BATCH * sizeof(*ents));
	uint64_t pos = (uint64_t)off;
	int err = 0;

	r.buf = malloc(size);
	/* a readdirplus entry takes more than 128 bytes: this bounds how many it can count */
	r.counted = malloc((size / 128 + 1) * sizeof(*r.counted));
	if (!ents || !r.buf || !r.counted) {
		err = ENOMEM;
		goto out;
	}
	if (pos < DOT_OFF) {
		struct stat st;
		if (fstat(h.fd, &st) == 0)
			add_plain(&r, ".", st.st_ino, S_IFDIR, DOT_OFF);
	}
	if (pos < DOTDOT_OFF && !r.full) {
		struct stat st;
		if (fstatat(h.fd, "..", &st, AT_SYMLINK_NOFOLLOW) == 0)
			add_plain(&r, "..", st.st_ino, S_IFDIR, DOTDOT_OFF);
	}
	uint64_t cookie = pos <= DOTDOT_OFF ? 0 : pos;
	while (!r.full) {
		size_t count = 0;
		tls_dir = &h;
		int end = udc_readdir(fs->cache, ino, cookie, ents, BATCH, &count);
		tls_dir = NULL;
		if (end < 0) {
			if (r.used == 0)
				err = -end; /* else: the entries so far; the error comes on the next call */
			break;
		}
		for (size_t i = 0; i < count && !r.full; i++) {
			add_listed(&r, ino, &ents[i]);
			if (!r.full)
				cookie = ents[i].cookie;
		}
		if (end == 1 || count == 0)
			break; /* end of directory (udcache never answers 0 entries otherwise) */
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
