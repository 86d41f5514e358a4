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
 * Attributes are cached in udcache (node.c); every change to an inode or a directory's entries
 * leaves the inodes involved with the attributes the backend filed for them (NFS post-op
 * attributes) or expired (attr_stale), after making it.
 */
#include "udcfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The attributes of `ino` that a change through udcfs made stale: the backend filed the new
 * ones (be->post_attrs) or they are expired.
 */
static void changed(struct udcfs *fs, fuse_ino_t ino)
{
	if (!fs->be->post_attrs)
		attr_stale(fs, ino);
}

/* Replies with a counted entry; if the request was interrupted the kernel never saw the lookup. */
static void reply_entry(fuse_req_t req, struct udcfs *fs, const struct fuse_entry_param *e)
{
	if (fuse_reply_entry(req, e) == -ENOENT)
		node_forget(fs, e->ino, 1);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct udcfs *fs = req_fs(req);
	struct fuse_entry_param e;
	int r = fs_lookup(fs, req, parent, name, &e);

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
	int r = node_stat(fs, req, ino, &st);

	(void)fi;
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, &st, fs->attr_timeout);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid,
		       struct fuse_file_info *fi)
{
	struct udcfs *fs = req_fs(req);
	int r = fs->be->setattr(fs, req, node_of(fs, ino), attr, valid, fi);

	changed(fs, ino); /* also after a partial change */
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

/* Names the object just made at (parent, name) and fills *e. Name lock held exclusive. */
static int name_new(fuse_req_t req, fuse_ino_t parent, const char *name, struct bobj *o,
		    struct fuse_entry_param *e)
{
	struct udcfs *fs = req_fs(req);
	struct node *n;
	struct stat st = o->st;
	int r = node_made(fs, o, parent, name, &n);

	if (r < 0)
		return r;
	int created = r;
	fuse_ino_t ino = node_ino(fs, n);
	r = name_bind(fs, parent, name, ino, st.st_mode);
	if (r == 0)
		r = fs_entry(fs, req, ino, created ? &st : NULL, e);
	node_unpin(fs, n);
	return r;
}

/* Creates (parent, name) as the caller and names it: 0 and *e, or -errno. */
static int make_node(fuse_req_t req, fuse_ino_t parent, const char *name, struct make *m,
		     struct fuse_entry_param *e)
{
	struct udcfs *fs = req_fs(req);
	struct name_lock l;
	struct bobj o;

	name_lock_excl(fs, &l, parent, name, 0, NULL);
	int r = fs->be->make(fs, req, node_of(fs, parent), name, m, &o);
	if (r == 0) {
		changed(fs, parent);
		r = name_new(req, parent, name, &o, e);
		if (r < 0 && m->kind == MAKE_FILE)
			fs->be->release(fs, node_of(fs, parent), m->fh);
	} else if (r == -EEXIST) {
		udc_invalidate(fs->cache, parent, name, strlen(name)); /* udcache may think not */
	} else if (r == -ESTALE) {
		node_stale(fs, parent);
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
	fi->fh = m.fh;
	node_opened(fs, e.ino, 1);
	if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		node_opened(fs, e.ino, -1);
		fs->be->release(fs, node_of(fs, e.ino), m.fh);
		node_forget(fs, e.ino, 1);
	}
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct udcfs *fs = req_fs(req);
	struct fuse_entry_param e;
	struct name_lock l;
	struct stat st;

	name_lock_excl(fs, &l, newparent, newname, 0, NULL);
	int r = fs->be->link(fs, req, node_of(fs, ino), node_of(fs, newparent), newname);
	if (r == 0) {
		changed(fs, newparent);
		attr_stale(fs, ino); /* nlink, ctime */
		r = node_stat(fs, req, ino, &st);
		if (r == 0)
			r = name_bind(fs, newparent, newname, ino, st.st_mode);
		if (r == 0)
			r = fs_entry(fs, req, ino, NULL, &e);
	} else if (r == -EEXIST) {
		udc_invalidate(fs->cache, newparent, newname, strlen(newname));
	} else if (r == -ESTALE) {
		node_stale(fs, newparent);
	}
	name_unlock(&l);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		reply_entry(req, fs, &e);
}

static void remove_name(fuse_req_t req, fuse_ino_t parent, const char *name, int is_dir)
{
	struct udcfs *fs = req_fs(req);
	size_t len = strlen(name);
	struct name_lock l;
	udc_entry victim;

	name_lock_excl(fs, &l, parent, name, 0, NULL);
	/* The kernel holds the inode it is removing, so a positive answer stays valid. */
	int known = udc_lookup(fs->cache, parent, name, len, &victim) == UDC_POSITIVE;
	int r = fs->be->remove(fs, req, node_of(fs, parent), name, is_dir);
	if (r == 0) {
		/* No dentry to unlink (-ENOENT: never looked up, or shrunk away) may still leave the
		 * directory's cached listing naming it: invalidate takes that back too. */
		if (udc_unlink(fs->cache, parent, name, len) < 0)
			udc_invalidate(fs->cache, parent, name, len);
		changed(fs, parent);
		if (known)
			attr_stale(fs, victim.ino);
	} else if (r == -ENOENT) {
		udc_invalidate(fs->cache, parent, name, len);
	} else if (r == -ESTALE) {
		node_stale(fs, parent);
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
	remove_name(req, parent, name, 1);
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
	int r = fs->be->rename(fs, req, node_of(fs, parent), name, node_of(fs, newparent), newname,
			       flags);
	if (r == 0) {
		if (udc_rename(fs->cache, parent, name, len, newparent, newname, newlen, flags) < 0) {
			udc_invalidate(fs->cache, parent, name, len);
			udc_invalidate(fs->cache, newparent, newname, newlen);
		}
		changed(fs, parent);
		if (newparent != parent)
			changed(fs, newparent);
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
	} else if (r == -ESTALE) {
		node_stale(fs, parent);
		node_stale(fs, newparent);
	}
	name_unlock(&l);
	fuse_reply_err(req, -r);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct udcfs *fs = req_fs(req);
	char buf[PATH_MAX + 1];
	int r = fs->be->readlink(fs, req, node_of(fs, ino), buf, sizeof(buf));

	attr_read(fs, ino);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_readlink(req, buf);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct udcfs *fs = req_fs(req);
	uint64_t fh;
	int r = fs->be->open(fs, req, node_of(fs, ino), fi->flags, &fh);

	if (r == -ESTALE)
		node_stale(fs, ino);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	if (fi->flags & O_TRUNC)
		attr_stale(fs, ino);
	fi->fh = fh;
	node_opened(fs, ino, 1);
	if (fuse_reply_open(req, fi) == -ENOENT) {
		node_opened(fs, ino, -1);
		fs->be->release(fs, node_of(fs, ino), fh);
	}
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct udcfs *fs = req_fs(req);

	node_opened(fs, ino, -1);
	fs->be->release(fs, node_of(fs, ino), fi->fh);
	fuse_reply_err(req, 0);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct udcfs *fs = req_fs(req);
	fuse_reply_err(req, -fs->be->flush(fs, node_of(fs, ino), fi->fh));
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct udcfs *fs = req_fs(req);
	fuse_reply_err(req, -fs->be->fsync(fs, req, node_of(fs, ino), fi->fh, datasync));
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct udcfs *fs = req_fs(req);
	char *buf = malloc(size ? size : 1);

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* Read here rather than in fuse_reply_data: the read may move the atime, and the cached
	 * attributes must be expired after it but before the reply (after the reply the kernel may
	 * forget the node). libfuse reads into a buffer like this one unless splicing is on. */
	ssize_t got = fs->be->read(fs, req, node_of(fs, ino), fi->fh, buf, size, off);
	attr_read(fs, ino);
	if (got < 0)
		fuse_reply_err(req, (int)-got);
	else
		fuse_reply_buf(req, buf, (size_t)got);
	free(buf);
}

static void op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
			 struct fuse_file_info *fi)
{
	struct udcfs *fs = req_fs(req);
	ssize_t n = fs->be->write(fs, req, node_of(fs, ino), fi->fh, in, off);

	changed(fs, ino); /* size, mtime */
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	struct udcfs *fs = req_fs(req);
	int r = fs->be->fallocate(fs, node_of(fs, ino), fi->fh, mode, off, len);

	attr_stale(fs, ino);
	fuse_reply_err(req, -r);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct udcfs *fs = req_fs(req);
	struct statvfs sv;
	int r = fs->be->statfs(fs, req, node_of(fs, ino), &sv);

	if (r < 0)
		fuse_reply_err(req, -r);
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

	if (fs->be->access) {
		fuse_reply_err(req, -fs->be->access(fs, req, node_of(fs, ino), mask));
		return;
	}
	int r = node_stat(fs, req, ino, &st);
	if (r == 0 && (mask & W_OK) && fs->be->statfs(fs, req, node_of(fs, ino), &sv) == 0 &&
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
