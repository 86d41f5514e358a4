/*
 * The NFSv3 backend: udcfs as a userspace NFS client of an export (nfs://HOST[:PORT]/EXPORT),
 * speaking NFSv3 through libnfs's raw RPC interface, by file handle.
 *
 * Rules
 *
 * - A node's handle is its NFS file handle; its identity is (fsid, fileid).
 * - Every call carries the asking process's uid, gid and supplementary groups (AUTH_SYS,
 *   nfs_rpc.c), so the server checks permissions and owns what is created as it would for the
 *   kernel's client. Calls udcfs makes for itself (revalidation, mount) go as uid 0.
 * - Every reply's attributes are filed (nfs_attr.c): the objects' own, directories' post-op
 *   attributes and wcc data. Attributes a reply carries without a change (LOOKUP's, READ's) are
 *   filed as a read is (attr_cache with the attr_ver read before the call: a change made
 *   meanwhile expires them again); a change's are filed after it (nfs_apply_*).
 * - Writes are UNSTABLE and committed (COMMIT) at flush, fsync and release, with the write
 *   verifier checked: a server that restarted in between lost the data, which is reported as
 *   EIO. An open file's FUSE handle is a struct nfs_open.
 * - Readdir: READDIRPLUS (READDIR where the server does not support it) at the reader's cookie
 *   with the directory's last cookie verifier. udcache cookies are the NFS cookies as dir.c
 *   maps positions (dir_cookie_of). A stale cookie verifier (NFS3ERR_BAD_COOKIE) is
 *   renewed by a READDIRPLUS at cookie 0 and the read retried once: cookies of this server
 *   stay positions in the directory, so the reader resumes where it was.
 * - Renames: NFSv3 has no RENAME_NOREPLACE or RENAME_EXCHANGE. NOREPLACE is a LOOKUP of the
 *   target then a RENAME (not atomic against another client: as close as NFSv3 allows);
 *   EXCHANGE is EINVAL.
 */
#include "nfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static nfs_fh3 fh3(const union bhandle *h)
{
	return (nfs_fh3){ .data = { h->fh.len, (char *)h->fh.data } };
}

static nfs_fh3 fh_of(struct node *n)
{
	return fh3(&n->h);
}

static int fh_copy(union bhandle *h, const nfs_fh3 *fh)
{
	if (fh->data.data_len == 0 || fh->data.data_len > FH_MAX)
		return -EIO; /* a malformed reply */
	h->fh.len = fh->data.data_len;
	memcpy(h->fh.data, fh->data.data_val, fh->data.data_len);
	return 0;
}

/* Files attributes a reply carried without a change, read after attr_ver was `ver`. */
static void seen(struct udcfs *fs, struct node *n, uint32_t ver, const struct nfs_attrs *k)
{
	struct stat st;
	if (!k->has)
		return;
	stat_of_fattr(&k->a, &st);
	attr_cache(fs, node_ino(fs, n), &st, ver);
}

/* ---- lookup and attributes ---- */

struct lookup_out {
	int has_fh;
	union bhandle h;
	struct nfs_attrs obj, dir;
};

static void take_lookup(void *res, void *out)
{
	LOOKUP3res *r = res;
	struct lookup_out *o = out;
	if (r->status == NFS3_OK) {
		o->has_fh = fh_copy(&o->h, &r->LOOKUP3res_u.resok.object) == 0;
		nfs_keep_post(&o->obj, &r->LOOKUP3res_u.resok.obj_attributes);
		nfs_keep_post(&o->dir, &r->LOOKUP3res_u.resok.dir_attributes);
	} else {
		nfs_keep_post(&o->dir, &r->LOOKUP3res_u.resfail.dir_attributes);
	}
}

struct getattr_out {
	fattr3 a;
};

static void take_getattr(void *res, void *out)
{
	GETATTR3res *r = res;
	if (r->status == NFS3_OK)
		((struct getattr_out *)out)->a = r->GETATTR3res_u.resok.obj_attributes;
}

static int getattr_fh(struct udcfs *fs, fuse_req_t req, nfs_fh3 fh, struct stat *st)
{
	GETATTR3args args = { .object = fh };
	struct getattr_out o;
	int r = nfs_call(nfs_of(fs), req, NFSPROC3_GETATTR, &args, take_getattr, &o);
	if (r == 0)
		stat_of_fattr(&o.a, st);
	return r;
}

static int nb_getattr(struct udcfs *fs, fuse_req_t req, struct node *n, struct stat *st)
{
	return getattr_fh(fs, req, fh_of(n), st);
}

/* The object a reply named: its handle, and its attributes (a GETATTR if the reply had none). */
static int object_of(struct udcfs *fs, fuse_req_t req, const union bhandle *h,
		     const struct nfs_attrs *attrs, struct bobj *out)
{
	out->h = *h;
	if (attrs->has) {
		stat_of_fattr(&attrs->a, &out->st);
		return 0;
	}
	return getattr_fh(fs, req, fh3(h), &out->st);
}

static int nb_lookup(struct udcfs *fs, fuse_req_t req, struct node *dir, const char *name,
		      struct bobj *out)
{
	LOOKUP3args args = { .what = { .dir = fh_of(dir), .name = (char *)name } };
	struct lookup_out o = { 0 };
	uint32_t ver = atomic_load(&dir->attr_ver);

	if (plus_take(nfs_of(fs), node_ino(fs, dir), atomic_load(&dir->change), name, out))
		return 0;
	int r = nfs_call(nfs_of(fs), req, NFSPROC3_LOOKUP, &args, take_lookup, &o);

	seen(fs, dir, ver, &o.dir);
	if (r < 0)
		return r;
	if (!o.has_fh)
		return -EIO;
	return object_of(fs, req, &o.h, &o.obj, out);
}

static void take_wcc_setattr(void *res, void *out)
{
	SETATTR3res *r = res;
	nfs_keep_wcc(out, r->status == NFS3_OK ? &r->SETATTR3res_u.resok.obj_wcc
					       : &r->SETATTR3res_u.resfail.obj_wcc);
}

static void set_time(time_how *how, nfstime3 *t, int now, int given, const struct timespec *ts)
{
	if (now) {
		*how = SET_TO_SERVER_TIME;
	} else if (given) {
		*how = SET_TO_CLIENT_TIME;
		t->seconds = (u_int)ts->tv_sec;
		t->nseconds = (u_int)ts->tv_nsec;
	}
}

static int nb_setattr(struct udcfs *fs, fuse_req_t req, struct node *n, const struct stat *attr,
		       int valid, struct fuse_file_info *fi)
{
	SETATTR3args args = { .object = fh_of(n) };
	sattr3 *s = &args.new_attributes;
	struct nfs_wcc w = { 0 };

	(void)fi;
	if (valid & FUSE_SET_ATTR_MODE) {
		s->mode.set_it = 1;
		s->mode.set_mode3_u.mode = attr->st_mode & 07777;
	}
	if (valid & FUSE_SET_ATTR_UID) {
		s->uid.set_it = 1;
		s->uid.set_uid3_u.uid = attr->st_uid;
	}
	if (valid & FUSE_SET_ATTR_GID) {
		s->gid.set_it = 1;
		s->gid.set_gid3_u.gid = attr->st_gid;
	}
	if (valid & FUSE_SET_ATTR_SIZE) {
		s->size.set_it = 1;
		s->size.set_size3_u.size = (uint64_t)attr->st_size;
	}
	set_time(&s->atime.set_it, &s->atime.set_atime_u.atime, valid & FUSE_SET_ATTR_ATIME_NOW,
		 valid & FUSE_SET_ATTR_ATIME, &attr->st_atim);
	set_time(&s->mtime.set_it, &s->mtime.set_mtime_u.mtime, valid & FUSE_SET_ATTR_MTIME_NOW,
		 valid & FUSE_SET_ATTR_MTIME, &attr->st_mtim);
	int r = nfs_call(nfs_of(fs), req, NFSPROC3_SETATTR, &args, take_wcc_setattr, &w);
	nfs_apply_wcc(fs, n, &w);
	return r;
}

/* ---- making and removing names ---- */

struct made_out {
	int has_fh;
	union bhandle h;
	struct nfs_attrs obj;
	struct nfs_wcc dir;
};

/* CREATE, MKDIR, SYMLINK and MKNOD replies share one shape. */
static void take_made(int status, const post_op_fh3 *fh, const post_op_attr *attrs,
		      const wcc_data *dir, struct made_out *o)
{
	if (status == NFS3_OK) {
		o->has_fh = fh->handle_follows && fh_copy(&o->h, &fh->post_op_fh3_u.handle) == 0;
		nfs_keep_post(&o->obj, attrs);
	}
	nfs_keep_wcc(&o->dir, dir);
}

static void take_create(void *res, void *out)
{
	CREATE3res *r = res;
	if (r->status == NFS3_OK)
		take_made(r->status, &r->CREATE3res_u.resok.obj, &r->CREATE3res_u.resok.obj_attributes,
			  &r->CREATE3res_u.resok.dir_wcc, out);
	else
		take_made(r->status, NULL, NULL, &r->CREATE3res_u.resfail.dir_wcc, out);
}

static void take_mkdir(void *res, void *out)
{
	MKDIR3res *r = res;
	if (r->status == NFS3_OK)
		take_made(r->status, &r->MKDIR3res_u.resok.obj, &r->MKDIR3res_u.resok.obj_attributes,
			  &r->MKDIR3res_u.resok.dir_wcc, out);
	else
		take_made(r->status, NULL, NULL, &r->MKDIR3res_u.resfail.dir_wcc, out);
}

static void take_symlink(void *res, void *out)
{
	SYMLINK3res *r = res;
	if (r->status == NFS3_OK)
		take_made(r->status, &r->SYMLINK3res_u.resok.obj,
			  &r->SYMLINK3res_u.resok.obj_attributes, &r->SYMLINK3res_u.resok.dir_wcc,
			  out);
	else
		take_made(r->status, NULL, NULL, &r->SYMLINK3res_u.resfail.dir_wcc, out);
}

static void take_mknod(void *res, void *out)
{
	MKNOD3res *r = res;
	if (r->status == NFS3_OK)
		take_made(r->status, &r->MKNOD3res_u.resok.obj, &r->MKNOD3res_u.resok.obj_attributes,
			  &r->MKNOD3res_u.resok.dir_wcc, out);
	else
		take_made(r->status, NULL, NULL, &r->MKNOD3res_u.resfail.dir_wcc, out);
}

/* An open file: what COMMIT needs. */
struct nfs_open {
	int dirty;        /* unstable writes since the last COMMIT */
	int has_verf;
	char verf[NFS3_WRITEVERFSIZE];
	pthread_mutex_t lock; /* protects the above */
};

static int open_new(uint64_t *fh)
{
	struct nfs_open *o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	pthread_mutex_init(&o->lock, NULL);
	*fh = (uint64_t)(uintptr_t)o;
	return 0;
}

static int nb_make(struct udcfs *fs, fuse_req_t req, struct node *dir, const char *name,
		    struct make *m, struct bobj *out)
{
	struct nfs_state *s = nfs_of(fs);
	diropargs3 where = { .dir = fh_of(dir), .name = (char *)name };
	sattr3 mode = { .mode = { .set_it = 1, .set_mode3_u.mode = m->mode & 07777 } };
	struct made_out o = { 0 };
	int r;

	plus_forget(s, node_ino(fs, dir), name);
	switch (m->kind) {
	case MAKE_FILE: {
		CREATE3args args = { .where = where };
		args.how.mode = (m->flags & O_EXCL) ? GUARDED : UNCHECKED;
		args.how.createhow3_u.obj_attributes = mode;
		r = nfs_call(s, req, NFSPROC3_CREATE, &args, take_create, &o);
		break;
	}
	case MAKE_DIR: {
		MKDIR3args args = { .where = where, .attributes = mode };
		r = nfs_call(s, req, NFSPROC3_MKDIR, &args, take_mkdir, &o);
		break;
	}
	case MAKE_SYMLINK: {
		SYMLINK3args args = { .where = where };
		args.symlink.symlink_data = (char *)m->target;
		r = nfs_call(s, req, NFSPROC3_SYMLINK, &args, take_symlink, &o);
		break;
	}
	case MAKE_NODE: {
		MKNOD3args args = { .where = where };
		devicedata3 dev = { .dev_attributes = mode,
				    .spec = { major(m->rdev), minor(m->rdev) } };
		switch (m->mode & S_IFMT) {
		case S_IFCHR:
			args.what.type = NF3CHR;
			args.what.mknoddata3_u.chr_device = dev;
			break;
		case S_IFBLK:
			args.what.type = NF3BLK;
			args.what.mknoddata3_u.blk_device = dev;
			break;
		case S_IFSOCK:
			args.what.type = NF3SOCK;
			args.what.mknoddata3_u.sock_attributes = mode;
			break;
		case S_IFIFO:
			args.what.type = NF3FIFO;
			args.what.mknoddata3_u.pipe_attributes = mode;
			break;
		case S_IFREG:
		case 0: {
			/* mknod of a regular file: a CREATE, as the kernel's client makes it */
			CREATE3args c = { .where = where };
			c.how.mode = GUARDED;
			c.how.createhow3_u.obj_attributes = mode;
			r = nfs_call(s, req, NFSPROC3_CREATE, &c, take_create, &o);
			goto made;
		}
		default:
			return -EINVAL;
		}
		r = nfs_call(s, req, NFSPROC3_MKNOD, &args, take_mknod, &o);
		break;
	}
	default:
		return -EINVAL;
	}
made:
	nfs_apply_wcc(fs, dir, &o.dir);
	if (r < 0)
		return r;
	if (!o.has_fh) {
		r = nb_lookup(fs, req, dir, name, out);
	} else {
		r = object_of(fs, req, &o.h, &o.obj, out);
	}
	if (r == 0 && m->kind == MAKE_FILE)
		r = open_new(&m->fh);
	return r;
}

struct link_out {
	struct nfs_attrs file;
	struct nfs_wcc dir;
};

static void take_link(void *res, void *out)
{
	LINK3res *r = res;
	struct link_out *o = out;
	if (r->status == NFS3_OK) {
		nfs_keep_post(&o->file, &r->LINK3res_u.resok.file_attributes);
		nfs_keep_wcc(&o->dir, &r->LINK3res_u.resok.linkdir_wcc);
	} else {
		nfs_keep_post(&o->file, &r->LINK3res_u.resfail.file_attributes);
		nfs_keep_wcc(&o->dir, &r->LINK3res_u.resfail.linkdir_wcc);
	}
}

static int nb_link(struct udcfs *fs, fuse_req_t req, struct node *n, struct node *newdir,
		    const char *newname)
{
	LINK3args args = { .file = fh_of(n),
			   .link = { .dir = fh_of(newdir), .name = (char *)newname } };
	struct link_out o = { 0 };

	plus_forget(nfs_of(fs), node_ino(fs, newdir), newname);
	int r = nfs_call(nfs_of(fs), req, NFSPROC3_LINK, &args, take_link, &o);

	nfs_apply_wcc(fs, newdir, &o.dir);
	nfs_apply_post(fs, n, &o.file);
	return r;
}

static void take_remove(void *res, void *out)
{
	REMOVE3res *r = res;
	nfs_keep_wcc(out, r->status == NFS3_OK ? &r->REMOVE3res_u.resok.dir_wcc
					       : &r->REMOVE3res_u.resfail.dir_wcc);
}

static void take_rmdir(void *res, void *out)
{
	RMDIR3res *r = res;
	nfs_keep_wcc(out, r->status == NFS3_OK ? &r->RMDIR3res_u.resok.dir_wcc
					       : &r->RMDIR3res_u.resfail.dir_wcc);
}

static int nb_remove(struct udcfs *fs, fuse_req_t req, struct node *dir, const char *name,
		      int is_dir)
{
	diropargs3 what = { .dir = fh_of(dir), .name = (char *)name };
	struct nfs_wcc w = { 0 };
	int r;

	plus_forget(nfs_of(fs), node_ino(fs, dir), name);
	if (is_dir) {
		RMDIR3args args = { .object = what };
		r = nfs_call(nfs_of(fs), req, NFSPROC3_RMDIR, &args, take_rmdir, &w);
	} else {
		REMOVE3args args = { .object = what };
		r = nfs_call(nfs_of(fs), req, NFSPROC3_REMOVE, &args, take_remove, &w);
	}
	nfs_apply_wcc(fs, dir, &w);
	return r;
}

struct rename_out {
	struct nfs_wcc from, to;
};

static void take_rename(void *res, void *out)
{
	RENAME3res *r = res;
	struct rename_out *o = out;
	if (r->status == NFS3_OK) {
		nfs_keep_wcc(&o->from, &r->RENAME3res_u.resok.fromdir_wcc);
		nfs_keep_wcc(&o->to, &r->RENAME3res_u.resok.todir_wcc);
	} else {
		nfs_keep_wcc(&o->from, &r->RENAME3res_u.resfail.fromdir_wcc);
		nfs_keep_wcc(&o->to, &r->RENAME3res_u.resfail.todir_wcc);
	}
}

static int nb_rename(struct udcfs *fs, fuse_req_t req, struct node *dir, const char *name,
		      struct node *newdir, const char *newname, unsigned flags)
{
	RENAME3args args = { .from = { .dir = fh_of(dir), .name = (char *)name },
			     .to = { .dir = fh_of(newdir), .name = (char *)newname } };
	struct rename_out o = { 0 };
	struct bobj target;

	if (flags & RENAME_EXCHANGE)
		return -EINVAL;
	plus_forget(nfs_of(fs), node_ino(fs, dir), name);
	plus_forget(nfs_of(fs), node_ino(fs, newdir), newname);
	if (flags & RENAME_NOREPLACE) {
		int r = nb_lookup(fs, req, newdir, newname, &target);
		if (r == 0)
			return -EEXIST;
		if (r != -ENOENT)
			return r;
	}
	int r = nfs_call(nfs_of(fs), req, NFSPROC3_RENAME, &args, take_rename, &o);
	nfs_apply_wcc(fs, dir, &o.from);
	if (newdir != dir)
		nfs_apply_wcc(fs, newdir, &o.to);
	return r;
}

struct readlink_out {
	char *buf;
	size_t size;
	int len;
	struct nfs_attrs attrs;
};

static void take_readlink(void *res, void *out)
{
	READLINK3res *r = res;
	struct readlink_out *o = out;
	if (r->status != NFS3_OK) {
		nfs_keep_post(&o->attrs, &r->READLINK3res_u.resfail.symlink_attributes);
		return;
	}
	nfs_keep_post(&o->attrs, &r->READLINK3res_u.resok.symlink_attributes);
	size_t len = r->READLINK3res_u.resok.data ? strlen(r->READLINK3res_u.resok.data) : 0;
	if (len >= o->size) {
		o->len = -ENAMETOOLONG;
		return;
	}
	memcpy(o->buf, r->READLINK3res_u.resok.data, len);
	o->buf[len] = '\0';
	o->len = (int)len;
}

static int nb_readlink(struct udcfs *fs, fuse_req_t req, struct node *n, char *buf, size_t size)
{
	READLINK3args args = { .symlink = fh_of(n) };
	struct readlink_out o = { .buf = buf, .size = size, .len = -EIO };
	uint32_t ver = atomic_load(&n->attr_ver);
	int r = nfs_call(nfs_of(fs), req, NFSPROC3_READLINK, &args, take_readlink, &o);

	seen(fs, n, ver, &o.attrs);
	return r < 0 ? r : o.len;
}

/* ---- open files ---- */

static int nb_open_file(struct udcfs *fs, fuse_req_t req, struct node *n, int flags,
			 uint64_t *fh)
{
	struct stat st;
	uint32_t ver = atomic_load(&n->attr_ver);
	/* Close-to-open: an open sees the file's attributes as they are now. */
	int r = nb_getattr(fs, req, n, &st);

	if (r < 0)
		return r;
	attr_cache(fs, node_ino(fs, n), &st, ver);
	if ((flags & O_TRUNC) && st.st_size != 0) {
		struct stat size0 = { .st_size = 0 };
		r = nb_setattr(fs, req, n, &size0, FUSE_SET_ATTR_SIZE, NULL);
		if (r < 0)
			return r;
	}
	return open_new(fh);
}

struct commit_out {
	char verf[NFS3_WRITEVERFSIZE];
	struct nfs_wcc w;
};

static void take_commit(void *res, void *out)
{
	COMMIT3res *r = res;
	struct commit_out *o = out;
	if (r->status == NFS3_OK) {
		memcpy(o->verf, r->COMMIT3res_u.resok.verf, sizeof(o->verf));
		nfs_keep_wcc(&o->w, &r->COMMIT3res_u.resok.file_wcc);
	} else {
		nfs_keep_wcc(&o->w, &r->COMMIT3res_u.resfail.file_wcc);
	}
}

/* Commits the unstable writes of `o`: 0, or -EIO if the server lost them. */
static int commit(struct udcfs *fs, fuse_req_t req, struct node *n, struct nfs_open *o)
{
	COMMIT3args args = { .file = fh_of(n) };
	struct commit_out c = { 0 };
	int r = 0;

	pthread_mutex_lock(&o->lock);
	if (o->dirty) {
		r = nfs_call(nfs_of(fs), req, NFSPROC3_COMMIT, &args, take_commit, &c);
		nfs_apply_wcc(fs, n, &c.w);
		if (r == 0 && o->has_verf && memcmp(c.verf, o->verf, sizeof(c.verf)) != 0)
			r = -EIO; /* the server restarted: what was written unstable is lost */
		o->dirty = 0;
		o->has_verf = 0;
	}
	pthread_mutex_unlock(&o->lock);
	return r;
}

static void nb_release(struct udcfs *fs, struct node *n, uint64_t fh)
{
	struct nfs_open *o = (struct nfs_open *)(uintptr_t)fh;
	commit(fs, NULL, n, o);
	pthread_mutex_destroy(&o->lock);
	free(o);
}

static int nb_flush(struct udcfs *fs, struct node *n, uint64_t fh)
{
	return commit(fs, NULL, n, (struct nfs_open *)(uintptr_t)fh);
}

static int nb_fsync(struct udcfs *fs, fuse_req_t req, struct node *n, uint64_t fh, int datasync)
{
	(void)datasync;
	return commit(fs, req, n, (struct nfs_open *)(uintptr_t)fh);
}

struct read_out {
	char *buf;
	size_t got;
	int eof;
	struct nfs_attrs attrs;
};

static void take_read(void *res, void *out)
{
	READ3res *r = res;
	struct read_out *o = out;
	if (r->status != NFS3_OK) {
		nfs_keep_post(&o->attrs, &r->READ3res_u.resfail.file_attributes);
		return;
	}
	READ3resok *ok = &r->READ3res_u.resok;
	nfs_keep_post(&o->attrs, &ok->file_attributes);
	size_t n = ok->data.data_len < ok->count ? ok->data.data_len : ok->count;
	memcpy(o->buf, ok->data.data_val, n);
	o->got = n;
	o->eof = ok->eof;
}

static ssize_t nb_read(struct udcfs *fs, fuse_req_t req, struct node *n, uint64_t fh, char *buf,
			size_t size, off_t off)
{
	struct nfs_state *s = nfs_of(fs);
	size_t got = 0;

	(void)fh;
	while (got < size) {
		uint32_t count = size - got < s->rsize ? (uint32_t)(size - got) : s->rsize;
		READ3args args = { .file = fh_of(n), .offset = (uint64_t)off + got, .count = count };
		struct read_out o = { .buf = buf + got };
		uint32_t ver = atomic_load(&n->attr_ver);
		int r = nfs_call(s, req, NFSPROC3_READ, &args, take_read, &o);
		seen(fs, n, ver, &o.attrs);
		if (r < 0)
			return got ? (ssize_t)got : r;
		got += o.got;
		if (o.eof || o.got == 0)
			break;
	}
	return (ssize_t)got;
}

struct write_out {
	uint32_t count;
	char verf[NFS3_WRITEVERFSIZE];
	struct nfs_wcc w;
};

static void take_write(void *res, void *out)
{
	WRITE3res *r = res;
	struct write_out *o = out;
	if (r->status == NFS3_OK) {
		o->count = r->WRITE3res_u.resok.count;
		memcpy(o->verf, r->WRITE3res_u.resok.verf, sizeof(o->verf));
		nfs_keep_wcc(&o->w, &r->WRITE3res_u.resok.file_wcc);
	} else {
		nfs_keep_wcc(&o->w, &r->WRITE3res_u.resfail.file_wcc);
	}
}

static ssize_t nb_write(struct udcfs *fs, fuse_req_t req, struct node *n, uint64_t fh,
			 struct fuse_bufvec *in, off_t off)
{
	struct nfs_state *s = nfs_of(fs);
	struct nfs_open *o = (struct nfs_open *)(uintptr_t)fh;
	size_t size = fuse_buf_size(in), done = 0;
	char *data = malloc(size ? size : 1);

	if (!data)
		return -ENOMEM;
	struct fuse_bufvec mem = FUSE_BUFVEC_INIT(size);
	mem.buf[0].mem = data;
	ssize_t copied = fuse_buf_copy(&mem, in, 0);
	if (copied < 0) {
		free(data);
		return copied;
	}
	size = (size_t)copied;
	while (done < size) {
		uint32_t count = size - done < s->wsize ? (uint32_t)(size - done) : s->wsize;
		WRITE3args args = { .file = fh_of(n), .offset = (uint64_t)off + done, .count = count,
				    .stable = UNSTABLE,
				    .data = { count, data + done } };
		struct write_out w = { 0 };
		int r = nfs_call(s, req, NFSPROC3_WRITE, &args, take_write, &w);
		nfs_apply_wcc(fs, n, &w.w);
		if (r < 0 || w.count == 0) {
			free(data);
			return done ? (ssize_t)done : (r < 0 ? r : -EIO);
		}
		pthread_mutex_lock(&o->lock);
		if (o->has_verf && memcmp(o->verf, w.verf, sizeof(w.verf)) != 0)
			o->dirty = 2; /* the server restarted between writes: COMMIT reports it */
		else if (!o->dirty)
			o->dirty = 1;
		if (!o->has_verf) {
			memcpy(o->verf, w.verf, sizeof(w.verf));
			o->has_verf = 1;
		}
		pthread_mutex_unlock(&o->lock);
		done += w.count;
	}
	free(data);
	return (ssize_t)done;
}

static int nb_fallocate(struct udcfs *fs, struct node *n, uint64_t fh, int mode, off_t off,
			 off_t len)
{
	(void)fs;
	(void)n;
	(void)fh;
	(void)mode;
	(void)off;
	(void)len;
	return -EOPNOTSUPP; /* NFSv3 has no ALLOCATE */
}

struct fsstat_out {
	FSSTAT3resok ok;
};

static void take_fsstat(void *res, void *out)
{
	FSSTAT3res *r = res;
	if (r->status == NFS3_OK)
		((struct fsstat_out *)out)->ok = r->FSSTAT3res_u.resok;
}

static int nb_statfs(struct udcfs *fs, fuse_req_t req, struct node *n, struct statvfs *sv)
{
	FSSTAT3args args = { .fsroot = fh_of(n) };
	struct fsstat_out o;
	int r = nfs_call(nfs_of(fs), req, NFSPROC3_FSSTAT, &args, take_fsstat, &o);

	if (r < 0)
		return r;
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = sv->f_frsize = 4096;
	sv->f_blocks = o.ok.tbytes / 4096;
	sv->f_bfree = o.ok.fbytes / 4096;
	sv->f_bavail = o.ok.abytes / 4096;
	sv->f_files = o.ok.tfiles;
	sv->f_ffree = o.ok.ffiles;
	sv->f_favail = o.ok.afiles;
	sv->f_namemax = 255;
	return 0;
}

struct access_out {
	uint32_t granted;
	struct nfs_attrs attrs;
};

static void take_access(void *res, void *out)
{
	ACCESS3res *r = res;
	struct access_out *o = out;
	if (r->status == NFS3_OK) {
		o->granted = r->ACCESS3res_u.resok.access;
		nfs_keep_post(&o->attrs, &r->ACCESS3res_u.resok.obj_attributes);
	} else {
		nfs_keep_post(&o->attrs, &r->ACCESS3res_u.resfail.obj_attributes);
	}
}

/* The server's answer, as the kernel's client asks it (ACCESS with the caller's credentials). */
static int nb_access(struct udcfs *fs, fuse_req_t req, struct node *n, int mask)
{
	uint32_t want = 0;
	if (mask & R_OK)
		want |= ACCESS3_READ;
	if (mask & W_OK)
		want |= ACCESS3_MODIFY | ACCESS3_EXTEND | (n->is_dir ? ACCESS3_DELETE : 0);
	if (mask & X_OK)
		want |= n->is_dir ? ACCESS3_LOOKUP : ACCESS3_EXECUTE;
	if (!want) /* F_OK: the object is there */
		return nb_getattr(fs, req, n, &(struct stat){ 0 });
	ACCESS3args args = { .object = fh_of(n), .access = want };
	struct access_out o = { 0 };
	uint32_t ver = atomic_load(&n->attr_ver);
	int r = nfs_call(nfs_of(fs), req, NFSPROC3_ACCESS, &args, take_access, &o);
	seen(fs, n, ver, &o.attrs);
	if (r < 0)
		return r;
	return (o.granted & want) == want ? 0 : -EACCES;
}

/* ---- directories ---- */

static int nb_opendir(struct udcfs *fs, fuse_req_t req, struct node *n, uint64_t *dh)
{
	(void)req;
	*dh = 0; /* the listing state lives in udcache's readdir cache */
	if (nfs_of(fs)->nocache)
		udc_dir_changed(fs->cache, node_ino(fs, n), 0); /* its pages are stale: read anew */
	return 0;
}

static void nb_releasedir(struct udcfs *fs, struct node *n, uint64_t dh)
{
	(void)fs;
	(void)n;
	(void)dh;
}

/* What one READDIRPLUS (or READDIR) reply adds to a fill. */
struct fill_out {
	struct nfs_state *s;
	uint64_t dir_ino; /* for nfs_plus.c */
	udc_fill *fill;
	size_t max, added;
	int err;      /* a udc_fill_add refusal: a malformed name, or a cookie out of range */
	int eof;      /* the reply's eof, and every entry of it added */
	int plus;
	char verf[NFS3_COOKIEVERFSIZE];
	struct nfs_attrs dir;
};

static uint32_t udc_type_of_ftype(const post_op_attr *a)
{
	if (!a->attributes_follow)
		return UDC_TYPE_UNKNOWN;
	switch (a->post_op_attr_u.attributes.type) {
	case NF3DIR:
		return UDC_TYPE_DIR;
	case NF3REG:
		return UDC_TYPE_REG;
	case NF3LNK:
		return UDC_TYPE_LNK;
	default:
		return UDC_TYPE_OTHER;
	}
}

static int fill_one(struct fill_out *o, const char *name, uint64_t fileid, uint32_t type,
		    uint64_t cookie)
{
	if (!name)
		return -EIO;
	if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))
		return 0;
	uint64_t c = dir_cookie_of(cookie);
	if (c == 0)
		return -EOVERFLOW; /* not a position FUSE can hand back */
	int r = udc_fill_add(o->fill, name, strlen(name), fileid ? fileid : 1, type, c);
	if (r == 0)
		o->added++;
	return r;
}

static void take_readdirplus(void *res, void *out)
{
	READDIRPLUS3res *r = res;
	struct fill_out *o = out;
	if (r->status != NFS3_OK) {
		nfs_keep_post(&o->dir, &r->READDIRPLUS3res_u.resfail.dir_attributes);
		return;
	}
	READDIRPLUS3resok *ok = &r->READDIRPLUS3res_u.resok;
	nfs_keep_post(&o->dir, &ok->dir_attributes);
	memcpy(o->verf, ok->cookieverf, sizeof(o->verf));
	/* the directory as this reply saw it: what its entries are valid for (nfs_plus.c) */
	uint64_t change = o->dir.has ? nfs_change_of_fattr(&o->dir.a) : 0;
	const entryplus3 *e = ok->reply.entries;
	for (; e && o->added < o->max; e = e->nextentry) {
		int rr = fill_one(o, e->name, e->fileid, udc_type_of_ftype(&e->name_attributes),
				  e->cookie);
		if (rr < 0) {
			o->err = rr;
			return;
		}
		if (change && e->name_handle.handle_follows && e->name_attributes.attributes_follow)
			plus_keep(o->s, o->dir_ino, change, e->name,
				  &e->name_handle.post_op_fh3_u.handle,
				  &e->name_attributes.post_op_attr_u.attributes);
	}
	o->eof = ok->reply.eof && !e;
}

static void take_readdir(void *res, void *out)
{
	READDIR3res *r = res;
	struct fill_out *o = out;
	if (r->status != NFS3_OK) {
		nfs_keep_post(&o->dir, &r->READDIR3res_u.resfail.dir_attributes);
		return;
	}
	READDIR3resok *ok = &r->READDIR3res_u.resok;
	nfs_keep_post(&o->dir, &ok->dir_attributes);
	memcpy(o->verf, ok->cookieverf, sizeof(o->verf));
	const entry3 *e = ok->reply.entries;
	for (; e && o->added < o->max; e = e->nextentry) {
		int rr = fill_one(o, e->name, e->fileid, UDC_TYPE_UNKNOWN, e->cookie);
		if (rr < 0) {
			o->err = rr;
			return;
		}
	}
	o->eof = ok->reply.eof && !e;
}

/* One READDIRPLUS (or READDIR) at NFS cookie `cookie` with verifier `verf`. */
static int read_dir(struct udcfs *fs, fuse_req_t req, struct node *dir, uint64_t cookie,
		    const char *verf, struct fill_out *o)
{
	struct nfs_state *s = nfs_of(fs);
	uint32_t ver = atomic_load(&dir->attr_ver);
	int r;

	if (!atomic_load_explicit(&s->no_plus, memory_order_relaxed)) {
		READDIRPLUS3args args = { .dir = fh_of(dir), .cookie = cookie,
					  .dircount = (count3)(o->max * 32 + 512),
					  .maxcount = (count3)(o->max * 256 + 1024) };
		memcpy(args.cookieverf, verf, NFS3_COOKIEVERFSIZE);
		r = nfs_call(s, req, NFSPROC3_READDIRPLUS, &args, take_readdirplus, o);
		if (r != -EOPNOTSUPP)
			goto done;
		atomic_store_explicit(&s->no_plus, 1, memory_order_relaxed);
	}
	READDIR3args args = { .dir = fh_of(dir), .cookie = cookie,
			      .count = (count3)(o->max * 64 + 512) };
	memcpy(args.cookieverf, verf, NFS3_COOKIEVERFSIZE);
	r = nfs_call(s, req, NFSPROC3_READDIR, &args, take_readdir, o);
done:
	seen(fs, dir, ver, &o->dir);
	return r;
}

static int nb_fill(struct udcfs *fs, fuse_req_t req, struct node *dir, const uint64_t *dh,
		    uint64_t cookie, size_t max, udc_fill *fill)
{
	uint64_t v = atomic_load(&dir->cookieverf);
	char verf[NFS3_COOKIEVERFSIZE];
	struct fill_out o = { .s = nfs_of(fs), .dir_ino = node_ino(fs, dir), .fill = fill,
			      .max = max };

	(void)dh;
	if (cookie != 0 && !dir_cookie_valid(cookie))
		return -EINVAL; /* never issued */
	uint64_t nfs_cookie = cookie ? dir_position_of(cookie) : 0;
	memcpy(verf, &v, sizeof(verf));
	int r = read_dir(fs, req, dir, nfs_cookie, verf, &o);
	if (r == -NFS_EBADCOOKIE && nfs_cookie != 0 && o.added == 0) {
		/* A new cookie verifier (the directory changed): ask for it, then resume. */
		struct fill_out probe = { .s = o.s, .fill = fill, .max = 0 };
		atomic_fetch_add_explicit(&o.s->cookie_restarts, 1, memory_order_relaxed);
		memset(verf, 0, sizeof(verf));
		r = read_dir(fs, req, dir, 0, verf, &probe);
		if (r == 0) {
			memcpy(verf, probe.verf, sizeof(verf));
			r = read_dir(fs, req, dir, nfs_cookie, verf, &o);
		}
		if (r == -NFS_EBADCOOKIE)
			r = -EINVAL;
	}
	if (r < 0)
		return r == -NFS_EBADCOOKIE ? -EINVAL : r;
	if (o.err)
		return o.err == -ENOSPC ? 0 : o.err;
	memcpy(&v, o.verf, sizeof(v));
	atomic_store(&dir->cookieverf, v);
	return udc_fill_done(fill, o.eof, nfs_dir_verifier(dir));
}

static uint64_t nb_dotdot_ino(struct udcfs *fs, struct node *dir, const uint64_t *dh)
{
	(void)fs;
	(void)dh;
	return atomic_load_explicit(&dir->bino, memory_order_relaxed);
}

static int nb_same(const union bhandle *a, const union bhandle *b)
{
	return a->fh.len == b->fh.len && memcmp(a->fh.data, b->fh.data, a->fh.len) == 0;
}

static void nb_drop(struct udcfs *fs, union bhandle *h)
{
	(void)fs;
	(void)h; /* a file handle is plain bytes */
}

/* ---- statistics ---- */

/*
 * One line of RPC counts by procedure, as the client sent them (a JUKEBOX retry counts again):
 * "udcfs-nfs: when=W GETATTR=n SETATTR=n ... rpcs=total jukebox_retries=n reconnects=n
 * cookie_restarts=n" (a cookie_restart: a READDIR(PLUS) refused with BAD_COOKIE, asked again).
 */
static void nb_stats(struct udcfs *fs, const char *when, FILE *out)
{
	static const char *const names[NFS_NPROC] = {
		"NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK", "READ", "WRITE",
		"CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR", "RENAME", "LINK",
		"READDIR", "READDIRPLUS", "FSSTAT", "FSINFO", "PATHCONF", "COMMIT"
	};
	struct nfs_state *s = nfs_of(fs);
	uint64_t total = 0;

	fprintf(out, "udcfs-nfs: when=%s", when);
	for (int p = NFSPROC3_GETATTR; p < NFS_NPROC; p++) {
		uint64_t n = atomic_load_explicit(&s->calls[p], memory_order_relaxed);
		total += n;
		fprintf(out, " %s=%llu", names[p], (unsigned long long)n);
	}
	fprintf(out, " rpcs=%llu jukebox_retries=%llu reconnects=%llu cookie_restarts=%llu\n",
		(unsigned long long)total,
		(unsigned long long)atomic_load_explicit(&s->jukebox_retries, memory_order_relaxed),
		(unsigned long long)atomic_load_explicit(&s->reconnects, memory_order_relaxed),
		(unsigned long long)atomic_load_explicit(&s->cookie_restarts, memory_order_relaxed));
}

/* ---- set-up ---- */

static uint64_t secs(unsigned s)
{
	return (uint64_t)s * 1000000000ull;
}

static int nb_init(struct udcfs *fs, const struct options *o, udc_config *cfg)
{
	struct nfs_state *s = calloc(1, sizeof(*s));
	struct stat st;

	if (!s) {
		fprintf(stderr, "udcfs: out of memory\n");
		return -1;
	}
	fs->be_data = s;
	s->acregmin = secs(o->acregmin);
	s->acregmax = secs(o->acregmax);
	s->acdirmin = secs(o->acdirmin);
	s->acdirmax = secs(o->acdirmax);
	if (o->actimeo_set)
		s->acregmin = s->acregmax = s->acdirmin = s->acdirmax = secs(o->actimeo);
	if (o->noac || o->nocache)
		s->acregmin = s->acregmax = s->acdirmin = s->acdirmax = 0;
	if (s->acregmin > s->acregmax || s->acdirmin > s->acdirmax) {
		fprintf(stderr, "udcfs: -o acregmin/acdirmin above acregmax/acdirmax\n");
		return -1;
	}
	s->lookupcache = LOOKUPCACHE_ALL;
	if (o->lookupcache && strcmp(o->lookupcache, "positive") == 0)
		s->lookupcache = LOOKUPCACHE_POSITIVE;
	else if (o->lookupcache && strcmp(o->lookupcache, "none") == 0)
		s->lookupcache = LOOKUPCACHE_NONE;
	else if (o->lookupcache && strcmp(o->lookupcache, "all") != 0) {
		fprintf(stderr, "udcfs: -o lookupcache: all, positive or none, not '%s'\n",
			o->lookupcache);
		return -1;
	}
	if (o->nocache) {
		/* A client without a cache, for comparisons: lookupcache=none and noac, no listing
		 * read on misses, and every opendir reads the listing afresh (nb_opendir). */
		s->lookupcache = LOOKUPCACHE_NONE;
		s->nocache = 1;
		fs->list_after_misses = 0;
	}
	s->call_timeout_ms = (uint64_t)o->timeo * 100 * (o->retrans + 1);
	int r = plus_init(s) == 0 ? nfs_connect_all(s, o->source, o->connections) : -ENOMEM;
	if (r == 0)
		r = nfs_root_fh(s, &fs->root.h);
	if (r == 0)
		r = getattr_fh(fs, NULL, fh_of(&fs->root), &st);
	if (r < 0) {
		fprintf(stderr, "udcfs: %s: cannot mount: %s\n", o->source, strerror(-r));
		return -1;
	}
	fs->root.held = 1;
	fs->root.is_dir = 1;
	atomic_store(&fs->root.dev, st.st_dev);
	atomic_store(&fs->root.bino, st.st_ino);
	fs->keep_negatives = s->lookupcache == LOOKUPCACHE_ALL;
	/* Positive names are judged again every acdirmin (nfs_revalidate); negatives live until
	 * a foreign change of their directory, which nfs_dir_fresh finds. */
	cfg->entry_timeout_ns = s->lookupcache == LOOKUPCACHE_NONE ? 0 : s->acdirmin;
	cfg->negative_timeout_ns = fs->keep_negatives ? UINT64_MAX : 0;
	return 0;
}

static void nb_destroy(struct udcfs *fs)
{
	struct nfs_state *s = fs->be_data;
	if (!s)
		return;
	nfs_disconnect_all(s);
	plus_destroy(s);
	free(s);
	fs->be_data = NULL;
}

const struct backend nfs_backend = {
	.name = "nfs",
	.init = nb_init,
	.destroy = nb_destroy,
	.attr_ttl = nfs_attr_ttl,
	.lookup_prepare = nfs_dir_fresh,
	.lookup = nb_lookup,
	.getattr = nb_getattr,
	.setattr = nb_setattr,
	.make = nb_make,
	.link = nb_link,
	.remove = nb_remove,
	.rename = nb_rename,
	.readlink = nb_readlink,
	.open = nb_open_file,
	.release = nb_release,
	.flush = nb_flush,
	.fsync = nb_fsync,
	.read = nb_read,
	.write = nb_write,
	.fallocate = nb_fallocate,
	.statfs = nb_statfs,
	.access = nb_access,
	.opendir = nb_opendir,
	.releasedir = nb_releasedir,
	.fill = nb_fill,
	.dotdot_ino = nb_dotdot_ino,
	.same = nb_same,
	.drop = nb_drop,
	.revalidate = nfs_revalidate,
	.stats = nb_stats,
	.post_attrs = 1,
};
