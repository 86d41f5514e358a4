/*
 * The FUSE operations on nodes and names.
 *
 * Every operation that changes a name holds that name's lock exclusive (two for rename, see
 * node.c) across the change in the backing directory and the matching change in udcache, so the
 * cache stays exact: a created name is added (udc_add, which counts the kernel's lookup of the
 * reply), a removed one unlinked (left negative), a renamed one moved (udc_rename, with the same
 * RENAME_NOREPLACE / RENAME_EXCHANGE flags as renameat2). If udcache refuses a change it did not
 * expect (its picture of that name was stale: something changed the backing directory behind
 * udcfs), the names involved are invalidated, so the next lookup asks the backing directory.
 *
 * Attributes are cached in udcache for attr_timeout; every change to an inode or a directory's
 * entries marks the inodes involved stale (attr_stale) after making it.
 */
#include "udcfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

static int neg_errno(int r)
{
	return r < 0 ? -errno : 0;
}

/* Replies with a counted entry; if the request was interrupted the kernel never saw the lookup. */
static void reply_entry(fuse_req_t req, struct udcfs *fs, const struct fuse_entry_param *e)
{
	if (fuse_reply_entry(req, e) == -ENOENT)
		node_forget(fs, e->ino, 1);
}

static void proc_path(char *buf, size_t size, int fd)
{
	snprintf(buf, size, "/proc/self/fd/%d", fd);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct udcfs *fs = req_fs(req);
	struct fuse_entry_param e;
	int r = fs_lookup(fs, parent, name, &e);

	if (r > 0) {
		reply_entry(req, fs, &e);
	} else if (r == 0 && fs->negative_timeout > 0) {
		memset(&e, 0, sizeof(e)); /* ino 0: a negative entry the kernel may keep */
		e.entry_timeout = fs->negative_timeout;
		fuse_reply_entry(req, &e);
	} else {
		fuse_reply_err(req, r == 0 ? ENOENT : -r);
	}
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	node_forget(req_fs(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		node_forget(req_fs(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct udcfs *fs = req_fs(req);
	struct stat st;
	int r = node_stat(fs, ino, &st);

	(void)fi;
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, &st, fs->attr_timeout);
}

static int set_times(const struct node *n, const struct stat *attr, int valid,
		     struct fuse_file_info *fi)
{
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT } };
	char proc[64];

	if (valid & FUSE_SET_ATTR_ATIME_NOW)
		ts[0].tv_nsec = UTIME_NOW;
	else if (valid & FUSE_SET_ATTR_ATIME)
		ts[0] = attr->st_atim;
	if (valid & FUSE_SET_ATTR_MTIME_NOW)
		ts[1].tv_nsec = UTIME_NOW;
	else if (valid & FUSE_SET_ATTR_MTIME)
		ts[1] = attr->st_mtim;
	if (fi)
		return futimens((int)fi->fh, ts);
	/* An O_PATH fd: utimensat with AT_EMPTY_PATH acts on the inode itself (symlinks too). */
	int r = utimensat(n->fd, "", ts, AT_EMPTY_PATH);
	if (r == 0 || errno != EINVAL)
		return r;
	proc_path(proc, sizeof(proc), n->fd);
	return utimensat(AT_FDCWD, proc, ts, 0);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid,
		       struct fuse_file_info *fi)
{
	struct udcfs *fs = req_fs(req);
	struct node *n = node_of(fs, ino);
	char proc[64];
	int r = 0;

	proc_path(proc, sizeof(proc), n->fd);
	if (valid & FUSE_SET_ATTR_MODE)
		r = neg_errno(fi ? fchmod((int)fi->fh, attr->st_mode) : chmod(proc, attr->st_mode));
	if (r == 0 && (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))) {
		uid_t uid = (valid & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1;
		gid_t gid = (valid & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1;
		r = neg_errno(fchownat(n->fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));
	}
	if (r == 0 && (valid & FUSE_SET_ATTR_SIZE))
		r = neg_errno(fi ? ftruncate((int)fi->fh, attr->st_size)
				 : truncate(proc, attr->st_size));
	if (r == 0 && (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
				FUSE_SET_ATTR_MTIME_NOW)))
		r = neg_errno(set_times(n, attr, valid, fi));
	attr_stale(fs, ino); /* also after a partial change */
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	op_getattr(req, ino, fi);
}

/*
 * Names `ino` (a node the caller pinned or the kernel holds) as (parent, name) in udcache,
 * counting the kernel's lookup of the reply. The caller holds the name's lock exclusive.
 */
static int name_bind(struct udcfs *fs, fuse_ino_t parent, const char *name, fuse_ino_t ino,
		     mode_t mode)
{
	size_t len = strlen(name);
	udc_entry ent = { .ino = ino, .type = udc_type_of(mode) };
	int r = udc_add(fs->cache, parent, name, len, &ent);

	if (r == -EEXIST) {
		/* udcache had the name positive although the backing directory had not: stale. */
		udc_invalidate(fs->cache, parent, name, len);
		r = udc_add(fs->cache, parent, name, len, &ent);
	}
	if (r < 0) {
		/* Left uncached (a later lookup asks the backing directory); still count the reply. */
		udc_invalidate(fs->cache, parent, name, len);
		r = udc_count_lookup(fs->cache, ino);
	}
	return r < 0 ? r : 0;
}

/* Names the object just created at (parent, name) and fills *e. Name lock held exclusive. */
static int name_new(struct udcfs *fs, fuse_ino_t parent, const char *name,
		    struct fuse_entry_param *e)
{
	struct node *n;
	struct stat st;
	int r = node_open(fs, parent, name, &n, &st);

	if (r < 0)
		return r;
	int created = r;
	fuse_ino_t ino = node_ino(fs, n);
	r = name_bind(fs, parent, name, ino, st.st_mode);
	if (r == 0)
		r = fs_entry(fs, ino, created ? &st : NULL, e);
	node_unpin(fs, n);
	return r;
}

enum make_kind { MAKE_NODE, MAKE_DIR, MAKE_SYMLINK, MAKE_FILE };

struct make {
	enum make_kind kind;
	mode_t mode;
	dev_t rdev;
	const char *target; /* MAKE_SYMLINK */
	int flags;          /* MAKE_FILE: open flags */
	int fd;             /* MAKE_FILE: the open file */
};

/*
 * Open flags for the backing file. O_DIRECT is dropped (virtiofsd does the same): the data of a
 * WRITE lies in libfuse's buffer behind the request header, never aligned as O_DIRECT needs, so
 * every direct write would fail with EINVAL. The kernel still bypasses its own page cache for
 * the FUSE file opened with O_DIRECT.
 */
static int backing_flags(int flags)
{
	return (flags | O_CLOEXEC) & ~(O_NOFOLLOW | O_DIRECT);
}

static int make_backing(const struct node *parent, const char *name, struct make *m)
{
	switch (m->kind) {
	case MAKE_NODE:
		return mknodat(parent->fd, name, m->mode, m->rdev);
	case MAKE_DIR:
		return mkdirat(parent->fd, name, m->mode);
	case MAKE_SYMLINK:
		return symlinkat(m->target, parent->fd, name);
	case MAKE_FILE:
		m->fd = openat(parent->fd, name, backing_flags(m->flags | O_CREAT), m->mode);
		return m->fd < 0 ? -1 : 0;
	}
	errno = EINVAL;
	return -1;
}

/* Creates (parent, name) as the caller (see creds_enter) and names it: 0 and *e, or -errno. */
static int make_node(fuse_req_t req, fuse_ino_t parent, const char *name, struct make *m,
		     struct fuse_entry_param *e)
{
	struct udcfs *fs = req_fs(req);
	struct name_lock l;
	struct creds c;

	name_lock_excl(fs, &l, parent, name, 0, NULL);
	int r = creds_enter(fs, req, &c);
	if (r == 0) {
		r = neg_errno(make_backing(node_of(fs, parent), name, m));
		creds_leave(fs, &c);
	}
	if (r == 0) {
		attr_stale(fs, parent);
		r = name_new(fs, parent, name, e);
		if (r < 0 && m->kind == MAKE_FILE)
			close(m->fd);
	} else if (r == -EEXIST) {
		udc_invalidate(fs->cache, parent, name, strlen(name)); /* udcache may think not */
	}
	name_unlock(&l);
	return r;
}

static void reply_made(fuse_req_t req, fuse_ino_t parent, const char *name, struct make *m)
{
	struct fuse_entry_param e;
	int r = make_node(req, parent, name, m, &e);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		reply_entry(req, req_fs(req), &e);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct make m = { .kind = MAKE_NODE, .mode = mode, .rdev = rdev };
	reply_made(req, parent, name, &m);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct make m = { .kind = MAKE_DIR, .mode = mode };
	reply_made(req, parent, name, &m);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct make m = { .kind = MAKE_SYMLINK, .target = link };
	reply_made(req, parent, name, &m);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct udcfs *fs = req_fs(req);
	struct make m = { .kind = MAKE_FILE, .mode = mode, .flags = fi->flags };
	struct fuse_entry_param e;
	int r = make_node(req, parent, name, &m, &e);

	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	fi->fh = (uint64_t)m.fd;
	node_opened(fs, e.ino, 1);
	if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		node_opened(fs, e.ino, -1);
		close(m.fd);
		node_forget(fs, e.ino, 1);
	}
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct udcfs *fs = req_fs(req);
	struct node *n = node_of(fs, ino);
	struct fuse_entry_param e;
	struct name_lock l;
	struct stat st;
	char proc[64];

	name_lock_excl(fs, &l, newparent, newname, 0, NULL);
	int r = linkat(n->fd, "", node_of(fs, newparent)->fd, newname, AT_EMPTY_PATH);
	if (r < 0 && errno == ENOENT) {
		/* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; the /proc link does not. */
		proc_path(proc, sizeof(proc), n->fd);
		r = linkat(AT_FDCWD, proc, node_of(fs, newparent)->fd, newname, AT_SYMLINK_FOLLOW);
	}
	r = neg_errno(r);
	if (r == 0) {
		attr_stale(fs, newparent);
		attr_stale(fs, ino); /* nlink, ctime */
		r = node_stat(fs, ino, &st);
		if (r == 0)
			r = name_bind(fs, newparent, newname, ino, st.st_mode);
		if (r == 0)
			r = fs_entry(fs, ino, NULL, &e);
	} else if (r == -EEXIST) {
		udc_invalidate(fs->cache, newparent, newname, strlen(newname));
	}
	name_unlock(&l);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		reply_entry(req, fs, &e);
}

static void remove_name(fuse_req_t req, fuse_ino_t parent, const char *name, int flags)
{
	struct udcfs *fs = req_fs(req);
	size_t len = strlen(name);
	struct name_lock l;
	udc_entry victim;

	name_lock_excl(fs, &l, parent, name, 0, NULL);
	/* The kernel holds the inode it is removing, so a positive answer stays valid. */
	int known = udc_lookup(fs->cache, parent, name, len, &victim) == UDC_POSITIVE;
	int r = neg_errno(unlinkat(node_of(fs, parent)->fd, name, flags));
	if (r == 0) {
		/* No dentry to unlink (-ENOENT: never looked up, or shrunk away) may still leave the
		 * directory's cached listing naming it: invalidate takes that back too. */
		if (udc_unlink(fs->cache, parent, name, len) < 0)
			udc_invalidate(fs->cache, parent, name, len);
		attr_stale(fs, parent);
		if (known)
			attr_stale(fs, victim.ino);
	} else if (r == -ENOENT) {
		udc_invalidate(fs->cache, parent, name, len);
	}
	name_unlock(&l);
	fuse_reply_err(req, -r);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, 0);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, AT_REMOVEDIR);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct udcfs *fs = req_fs(req);
	size_t len = strlen(name), newlen = strlen(newname);
	udc_entry from, to;
	struct name_lock l;

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	name_lock_excl(fs, &l, parent, name, newparent, newname);
	int have_from = udc_lookup(fs->cache, parent, name, len, &from) == UDC_POSITIVE;
	int have_to = udc_lookup(fs->cache, newparent, newname, newlen, &to) == UDC_POSITIVE;
	int r = neg_errno(renameat2(node_of(fs, parent)->fd, name, node_of(fs, newparent)->fd,
				    newname, flags));
	if (r == 0) {
		if (udc_rename(fs->cache, parent, name, len, newparent, newname, newlen, flags) < 0) {
			udc_invalidate(fs->cache, parent, name, len);
			udc_invalidate(fs->cache, newparent, newname, newlen);
		}
		attr_stale(fs, parent);
		if (newparent != parent)
			attr_stale(fs, newparent);
		if (have_from) {
			attr_stale(fs, from.ino); /* ctime */
			node_renamed(fs, from.ino, parent, name, newparent, newname);
		}
		if (have_to) {
			attr_stale(fs, to.ino); /* nlink or ctime */
			if (flags & RENAME_EXCHANGE)
				node_renamed(fs, to.ino, newparent, newname, parent, name);
		}
	} else if (r == -ENOENT || r == -EEXIST) {
		udc_invalidate(fs->cache, parent, name, len);
		udc_invalidate(fs->cache, newparent, newname, newlen);
	}
	name_unlock(&l);
	fuse_reply_err(req, -r);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[PATH_MAX + 1];
	ssize_t n = readlinkat(node_of(req_fs(req), ino)->fd, "", buf, sizeof(buf));

	attr_read(req_fs(req), ino);
	if (n < 0)
		fuse_reply_err(req, errno);
	else if ((size_t)n == sizeof(buf))
		fuse_reply_err(req, ENAMETOOLONG);
	else {
		buf[n] = '\0';
		fuse_reply_readlink(req, buf);
	}
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct udcfs *fs = req_fs(req);
	char proc[64];

	proc_path(proc, sizeof(proc), node_of(fs, ino)->fd);
	int fd = open(proc, backing_flags(fi->flags) & ~(O_CREAT | O_EXCL));
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	if (fi->flags & O_TRUNC)
		attr_stale(fs, ino);
	fi->fh = (uint64_t)fd;
	node_opened(fs, ino, 1);
	if (fuse_reply_open(req, fi) == -ENOENT) {
		node_opened(fs, ino, -1);
		close(fd);
	}
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	node_opened(req_fs(req), ino, -1);
	close((int)fi->fh);
	fuse_reply_err(req, 0);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	/* close() of a duplicate: what close(2) of the caller's fd would report (and its locks). */
	fuse_reply_err(req, -neg_errno(close(dup((int)fi->fh))));
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	int fd = (int)fi->fh;
	fuse_reply_err(req, -neg_errno(datasync ? fdatasync(fd) : fsync(fd)));
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct udcfs *fs = req_fs(req);
	char *buf = malloc(size ? size : 1);
	size_t got = 0;
	int err = 0;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* Read here rather than in fuse_reply_data: the read may move the atime, and the cached
	 * attributes must be expired after it but before the reply (after the reply the kernel may
	 * forget the node). libfuse reads into a buffer like this one unless splicing is on. */
	while (got < size) {
		ssize_t n = pread((int)fi->fh, buf + got, size - got, off + (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			break;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	attr_read(fs, ino);
	if (err && got == 0)
		fuse_reply_err(req, err);
	else
		fuse_reply_buf(req, buf, got);
	free(buf);
}

static void op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
			 struct fuse_file_info *fi)
{
	struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in));

	out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	out.buf[0].fd = (int)fi->fh;
	out.buf[0].pos = off;
	ssize_t n = fuse_buf_copy(&out, in, 0);
	attr_stale(req_fs(req), ino); /* size, mtime */
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	int r = neg_errno(fallocate((int)fi->fh, mode, off, len));
	attr_stale(req_fs(req), ino);
	fuse_reply_err(req, -r);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	if (fstatvfs(node_of(req_fs(req), ino)->fd, &sv) < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_statfs(req, &sv);
}

static int in_group(fuse_req_t req, gid_t want)
{
	gid_t groups[64];
	int n = fuse_req_getgroups(req, 64, groups);
	for (int i = 0; i < n && i < 64; i++)
		if (groups[i] == want)
			return 1;
	return 0;
}

/* access(2) for the caller (sent only without default_permissions): the mode bits' answer. */
static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct udcfs *fs = req_fs(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct statvfs sv;
	struct stat st;
	int r = node_stat(fs, ino, &st);

	if (r == 0 && (mask & W_OK) && fstatvfs(node_of(fs, ino)->fd, &sv) == 0 &&
	    (sv.f_flag & ST_RDONLY))
		r = -EROFS;
	if (r == 0 && ctx->uid == 0) {
		if ((mask & X_OK) && !S_ISDIR(st.st_mode) && !(st.st_mode & 0111))
			r = -EACCES;
	} else if (r == 0) {
		unsigned bits = st.st_mode;
		if (ctx->uid == st.st_uid)
			bits >>= 6;
		else if (ctx->gid == st.st_gid || in_group(req, st.st_gid))
			bits >>= 3;
		unsigned want = (unsigned)mask & 7;
		if ((bits & want) != want)
			r = -EACCES;
	}
	fuse_reply_err(req, -r);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	op_fsync(req, ino, datasync, fi);
}

const struct fuse_lowlevel_ops udcfs_ops = {
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.symlink = op_symlink,
	.link = op_link,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.rename = op_rename,
	.create = op_create,
	.open = op_open,
	.read = op_read,
	.write_buf = op_write_buf,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.fallocate = op_fallocate,
	.opendir = udcfs_opendir,
	.readdir = udcfs_readdir,
	.readdirplus = udcfs_readdirplus,
	.releasedir = udcfs_releasedir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.access = op_access,
};
