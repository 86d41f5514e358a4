/*
 * The local-directory backend: udcfs over a directory of a local filesystem (SOURCE).
 *
 * Rules
 *
 * - A node's handle is an O_PATH|O_NOFOLLOW fd of the backing inode; its identity is the
 *   backing (st_dev, st_ino). Operations on a node go through that fd (the *at calls, or
 *   /proc/self/fd/N where a call takes no fd), so a node stays the inode it was looked up as,
 *   whatever happens to its names.
 * - An open file's or directory's FUSE handle (fh) is a plain fd of the backing object.
 * - Credentials: when udcfs runs as root, an operation that creates an object runs with the
 *   caller's filesystem uid, gid and supplementary groups, set on the calling thread only (raw
 *   syscalls: glibc's setgroups would change every thread) and restored before the thread
 *   serves another request. Every other check is the kernel's (default_permissions).
 * - Readdir cookies are the backing directory's d_off positions (dir_cookie_of), so any cookie
 *   issued can be resumed at with lseek however the directory changes; a fill's verifier is
 *   the directory's ctime, which every change of its entries moves.
 */
#include "udcfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

static int neg_errno(int r)
{
	return r < 0 ? -errno : 0;
}

static void proc_path(char *buf, size_t size, int fd)
{
	snprintf(buf, size, "/proc/self/fd/%d", fd);
}

/* ---- credentials ---- */

struct creds {
	int switched;
};

static void creds_leave(struct udcfs *fs, struct creds *c)
{
	if (!c->switched)
		return;
	setfsuid(geteuid());
	setfsgid(getegid());
	if (syscall(SYS_setgroups, (size_t)fs->own_ngroups, fs->own_groups) < 0)
		fuse_log(FUSE_LOG_ERR, "udcfs: restoring groups: %s\n", strerror(errno));
	c->switched = 0;
}

static int creds_enter(struct udcfs *fs, fuse_req_t req, struct creds *c)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	gid_t small[32], *groups = small;
	int n;

	c->switched = 0;
	if (!fs->switch_creds || (ctx->uid == 0 && ctx->gid == 0))
		return 0;
	n = fuse_req_getgroups(req, 32, small);
	if (n > 32) {
		groups = malloc((size_t)n * sizeof(*groups));
		if (!groups)
			return -ENOMEM;
		n = fuse_req_getgroups(req, n, groups);
	}
	if (n < 0)
		n = 0; /* the caller's groups are unknown (no /proc): none */
	int r = (int)syscall(SYS_setgroups, (size_t)n, groups);
	if (groups != small)
		free(groups);
	if (r < 0)
		return -errno;
	setfsgid(ctx->gid);
	setfsuid(ctx->uid);
	c->switched = 1;
	/* setfsuid/setfsgid report no error: check the switch took. */
	if ((uid_t)setfsuid((uid_t)-1) != ctx->uid || (gid_t)setfsgid((gid_t)-1) != ctx->gid) {
		creds_leave(fs, c);
		return -EPERM;
	}
	return 0;
}

/* ---- set-up ---- */

static int local_init(struct udcfs *fs, const struct options *o, udc_config *cfg)
{
	struct stat st;

	(void)cfg; /* udcache's defaults: udcfs keeps its names exact itself */
	int fd = open(o->source, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "udcfs: SOURCE '%s': %s\n", o->source,
			errno == ENOTDIR ? "not a directory" : strerror(errno));
		return -1;
	}
	if (fstatat(fd, "", &st, AT_EMPTY_PATH) < 0) {
		fprintf(stderr, "udcfs: SOURCE '%s': %s\n", o->source, strerror(errno));
		close(fd);
		return -1;
	}
	fs->root.h.fd = fd;
	fs->root.held = 1;
	atomic_store(&fs->root.dev, st.st_dev);
	atomic_store(&fs->root.bino, st.st_ino);
	fs->attr_valid_ns = (uint64_t)(o->attr_timeout * 1e9);
	fs->keep_negatives = 1;
	if (geteuid() == 0) {
		fs->switch_creds = 1;
		fs->own_ngroups = getgroups(0, NULL);
		fs->own_groups = calloc((size_t)fs->own_ngroups + 1, sizeof(gid_t));
		if (!fs->own_groups || getgroups(fs->own_ngroups, fs->own_groups) < 0) {
			fprintf(stderr, "udcfs: getgroups: %s\n", strerror(errno));
			return -1;
		}
		if (o->allow_other && !o->default_permissions)
			fprintf(stderr, "udcfs: warning: allow_other without default_permissions: "
					"every user gets root's access to SOURCE\n");
	}
	return 0;
}

static void local_destroy(struct udcfs *fs)
{
	free(fs->own_groups);
	if (fs->root.held)
		close(fs->root.h.fd);
	fs->root.held = 0;
}

static void local_drop(struct udcfs *fs, union bhandle *h)
{
	(void)fs;
	close(h->fd);
}

/* ---- names and attributes ---- */

static int stat_fd(int fd, struct stat *st)
{
	return neg_errno(fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));
}

static int local_lookup(struct udcfs *fs, fuse_req_t req, struct node *dir, const char *name,
			struct bobj *out)
{
	(void)fs;
	(void)req;
	int fd = openat(dir->h.fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = stat_fd(fd, &out->st);
	if (r < 0) {
		close(fd);
		return r;
	}
	out->h.fd = fd;
	return 0;
}

static int local_getattr(struct udcfs *fs, fuse_req_t req, struct node *n, struct stat *st)
{
	(void)fs;
	(void)req;
	return stat_fd(n->h.fd, st);
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
	int r = utimensat(n->h.fd, "", ts, AT_EMPTY_PATH);
	if (r == 0 || errno != EINVAL)
		return r;
	proc_path(proc, sizeof(proc), n->h.fd);
	return utimensat(AT_FDCWD, proc, ts, 0);
}

static int local_setattr(struct udcfs *fs, fuse_req_t req, struct node *n,
			 const struct stat *attr, int valid, struct fuse_file_info *fi)
{
	char proc[64];
	int r = 0;

	(void)fs;
	(void)req;
	proc_path(proc, sizeof(proc), n->h.fd);
	if (valid & FUSE_SET_ATTR_MODE)
		r = neg_errno(fi ? fchmod((int)fi->fh, attr->st_mode) : chmod(proc, attr->st_mode));
	if (r == 0 && (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))) {
		uid_t uid = (valid & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1;
		gid_t gid = (valid & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1;
		r = neg_errno(fchownat(n->h.fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));
	}
	if (r == 0 && (valid & FUSE_SET_ATTR_SIZE))
		r = neg_errno(fi ? ftruncate((int)fi->fh, attr->st_size)
				 : truncate(proc, attr->st_size));
	if (r == 0 && (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
				FUSE_SET_ATTR_MTIME_NOW)))
		r = neg_errno(set_times(n, attr, valid, fi));
	return r;
}

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

static int make_backing(const struct node *dir, const char *name, struct make *m)
{
	int fd;

	switch (m->kind) {
	case MAKE_NODE:
		return neg_errno(mknodat(dir->h.fd, name, m->mode, m->rdev));
	case MAKE_DIR:
		return neg_errno(mkdirat(dir->h.fd, name, m->mode));
	case MAKE_SYMLINK:
		return neg_errno(symlinkat(m->target, dir->h.fd, name));
	case MAKE_FILE:
		fd = openat(dir->h.fd, name, backing_flags(m->flags | O_CREAT), m->mode);
		if (fd < 0)
			return -errno;
		m->fh = (uint64_t)fd;
		return 0;
	}
	return -EINVAL;
}

static int local_make(struct udcfs *fs, fuse_req_t req, struct node *dir, const char *name,
		      struct make *m, struct bobj *out)
{
	struct creds c;
	int r = creds_enter(fs, req, &c);

	if (r < 0)
		return r;
	r = make_backing(dir, name, m);
	creds_leave(fs, &c);
	if (r < 0)
		return r;
	r = local_lookup(fs, req, dir, name, out);
	if (r < 0 && m->kind == MAKE_FILE)
		close((int)m->fh);
	return r;
}

static int local_link(struct udcfs *fs, fuse_req_t req, struct node *n, struct node *newdir,
		      const char *newname)
{
	char proc[64];

	(void)fs;
	(void)req;
	int r = linkat(n->h.fd, "", newdir->h.fd, newname, AT_EMPTY_PATH);
	if (r < 0 && errno == ENOENT) {
		/* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; the /proc link does not. */
		proc_path(proc, sizeof(proc), n->h.fd);
		r = linkat(AT_FDCWD, proc, newdir->h.fd, newname, AT_SYMLINK_FOLLOW);
	}
	return neg_errno(r);
}

static int local_remove(struct udcfs *fs, fuse_req_t req, struct node *dir, const char *name,
			int is_dir)
{
	(void)fs;
	(void)req;
	return neg_errno(unlinkat(dir->h.fd, name, is_dir ? AT_REMOVEDIR : 0));
}

static int local_rename(struct udcfs *fs, fuse_req_t req, struct node *dir, const char *name,
			struct node *newdir, const char *newname, unsigned flags)
{
	(void)fs;
	(void)req;
	return neg_errno(renameat2(dir->h.fd, name, newdir->h.fd, newname, flags));
}

static int local_readlink(struct udcfs *fs, fuse_req_t req, struct node *n, char *buf,
			  size_t size)
{
	(void)fs;
	(void)req;
	ssize_t len = readlinkat(n->h.fd, "", buf, size);
	if (len < 0)
		return -errno;
	if ((size_t)len == size)
		return -ENAMETOOLONG;
	buf[len] = '\0';
	return (int)len;
}

/* ---- open files ---- */

static int local_open(struct udcfs *fs, fuse_req_t req, struct node *n, int flags, uint64_t *fh)
{
	char proc[64];

	(void)fs;
	(void)req;
	proc_path(proc, sizeof(proc), n->h.fd);
	int fd = open(proc, backing_flags(flags) & ~(O_CREAT | O_EXCL));
	if (fd < 0)
		return -errno;
	*fh = (uint64_t)fd;
	return 0;
}

static void local_release(struct udcfs *fs, struct node *n, uint64_t fh)
{
	(void)fs;
	(void)n;
	close((int)fh);
}

static int local_flush(struct udcfs *fs, struct node *n, uint64_t fh)
{
	(void)fs;
	(void)n;
	/* close() of a duplicate: what close(2) of the caller's fd would report (and its locks). */
	return neg_errno(close(dup((int)fh)));
}

static int local_fsync(struct udcfs *fs, fuse_req_t req, struct node *n, uint64_t fh,
		       int datasync)
{
	(void)fs;
	(void)req;
	(void)n;
	return neg_errno(datasync ? fdatasync((int)fh) : fsync((int)fh));
}

static ssize_t local_read(struct udcfs *fs, fuse_req_t req, struct node *n, uint64_t fh,
			  char *buf, size_t size, off_t off)
{
	size_t got = 0;

	(void)fs;
	(void)req;
	(void)n;
	while (got < size) {
		ssize_t r = pread((int)fh, buf + got, size - got, off + (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return got ? (ssize_t)got : -errno;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

static ssize_t local_write(struct udcfs *fs, fuse_req_t req, struct node *n, uint64_t fh,
			   struct fuse_bufvec *in, off_t off)
{
	struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in));

	(void)fs;
	(void)req;
	(void)n;
	out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	out.buf[0].fd = (int)fh;
	out.buf[0].pos = off;
	return fuse_buf_copy(&out, in, 0);
}

static int local_fallocate(struct udcfs *fs, struct node *n, uint64_t fh, int mode, off_t off,
			   off_t len)
{
	(void)fs;
	(void)n;
	return neg_errno(fallocate((int)fh, mode, off, len));
}

static int local_statfs(struct udcfs *fs, fuse_req_t req, struct node *n, struct statvfs *sv)
{
	(void)fs;
	(void)req;
	return neg_errno(fstatvfs(n->h.fd, sv));
}

/* ---- directories ---- */

static int local_opendir(struct udcfs *fs, fuse_req_t req, struct node *n, uint64_t *dh)
{
	(void)fs;
	(void)req;
	int fd = openat(n->h.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*dh = (uint64_t)fd;
	return 0;
}

static void local_releasedir(struct udcfs *fs, struct node *n, uint64_t dh)
{
	local_release(fs, n, dh);
}

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

static int is_dot_or_dotdot(const char *name)
{
	return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/* Up to `max` entries of the directory open at `fd`, after `cookie`, into `fill`. */
static int fill_from(int fd, uint64_t cookie, size_t max, udc_fill *fill)
{
	_Alignas(struct dirent64) char buf[8192];
	struct stat st;
	size_t added = 0;
	int eof = 0;

	if (cookie != 0 && !dir_cookie_valid(cookie))
		return -EINVAL; /* never issued */
	if (fstat(fd, &st) < 0)
		return -errno;
	uint64_t verifier = (uint64_t)st.st_ctim.tv_sec * 1000000000u + (uint64_t)st.st_ctim.tv_nsec;
	if (lseek(fd, cookie ? (off_t)dir_position_of(cookie) : 0, SEEK_SET) < 0)
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
					     udc_type_of_dtype(d->d_type),
					     dir_cookie_of((uint64_t)d->d_off));
			if (r < 0)
				return r;
			added++;
		}
	}
	return udc_fill_done(fill, eof, verifier ? verifier : 1);
}

static int local_fill(struct udcfs *fs, fuse_req_t req, struct node *dir, const uint64_t *dh,
		      uint64_t cookie, size_t max, udc_fill *fill)
{
	(void)fs;
	(void)req;
	if (dh)
		return fill_from((int)*dh, cookie, max, fill);
	int fd = openat(dir->h.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = fill_from(fd, cookie, max, fill);
	close(fd);
	return r;
}

static uint64_t local_dotdot_ino(struct udcfs *fs, struct node *dir, const uint64_t *dh)
{
	struct stat st;

	(void)fs;
	if (fstatat(dh ? (int)*dh : dir->h.fd, "..", &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	return st.st_ino;
}

const struct backend local_backend = {
	.name = "local",
	.node_holds_fd = 1,
	.init = local_init,
	.destroy = local_destroy,
	.lookup = local_lookup,
	.getattr = local_getattr,
	.setattr = local_setattr,
	.make = local_make,
	.link = local_link,
	.remove = local_remove,
	.rename = local_rename,
	.readlink = local_readlink,
	.open = local_open,
	.release = local_release,
	.flush = local_flush,
	.fsync = local_fsync,
	.read = local_read,
	.write = local_write,
	.fallocate = local_fallocate,
	.statfs = local_statfs,
	.opendir = local_opendir,
	.releasedir = local_releasedir,
	.fill = local_fill,
	.dotdot_ino = local_dotdot_ino,
	.drop = local_drop,
};
