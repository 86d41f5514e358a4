/*
 * The NFS client's cache rules, kept with udcache's mechanisms (nfs(5): attribute caching,
 * lookupcache, close-to-open, weak cache consistency).
 *
 * Rules
 *
 * - Attributes. Every attribute a reply carries is filed in udcache (attr_cache) for the
 *   node's attribute timeout: acregmin/acdirmin after a change was seen, doubling with each
 *   refresh that finds the object unchanged, up to acregmax/acdirmax (nfs_attr_ttl); noac: 0.
 * - Change attribute. NFSv3 has none of its own: a node's change attribute is a hash of its
 *   mtime, ctime and size (change_of). n->change holds the last one seen.
 * - Foreign changes. A directory whose change attribute moved without udcfs having made the
 *   change counts a foreign change (n->foreign) and reports it to udcache as its verifier
 *   (foreign + 1) with udc_dir_changed: its cached listing pages and negative entries are no
 *   longer trusted, and its positive names are revalidated at their next use (their entry
 *   timeouts are set to 0). A readdir fill reports the same verifier. So the verifier udcache
 *   sees moves only when another client changed the directory.
 * - Weak cache consistency. A change udcfs makes returns the directory's (or file's) wcc data:
 *   when its pre-op attributes equal the change attribute udcfs last saw (a compare-and-swap of
 *   n->change from pre to post), the change was udcfs's own alone: the post-op attributes are
 *   filed and nothing is invalidated (udcache already knows what udcfs changed). Otherwise
 *   someone else changed the object too, and the post-op attributes are a foreign change.
 *   Concurrent changes of one directory by udcfs may be judged foreign (their replies arrive in
 *   any order): a needless invalidation, never a missed one.
 * - Lookups. Before a lookup in a directory, its attributes are made fresh (nfs_dir_fresh: a
 *   lockless udc_getattr, and a GETATTR once they expired), so a foreign change is seen no later
 *   than the attribute timeout allows, and names are judged against it: negatives are trusted
 *   only while no foreign change came after them; positives are revalidated (nfs_revalidate)
 *   every acdirmin, or at their next use after a foreign change, by a LOOKUP compared by file
 *   handle. lookupcache=positive keeps no negatives; none asks the server at every lookup.
 * - Close-to-open: every open fetches the file's attributes (nfs.c).
 * - Memory order. n->change and n->foreign are read and changed with C11's default (sequentially
 *   consistent) atomics: no other data is published through them, and what a reader does with a
 *   value that another thread moves at the same time is at worst a needless revalidation or
 *   invalidation (a change judged foreign, an entry of nfs_plus.c not taken). n->attr_timeo is
 *   relaxed: a timeout that a racing refresh overwrites is still one the rules allow.
 */
#include "nfs.h"

#include <errno.h>
#include <string.h>
#include <sys/sysmacros.h>

static uint64_t change_of(uint64_t msec, uint64_t mnsec, uint64_t csec, uint64_t cnsec,
			  uint64_t size)
{
	uint64_t h = mix64(msec ^ mix64(mnsec ^ mix64(csec ^ mix64(cnsec ^ mix64(size)))));
	return h ? h : 1; /* 0: none seen */
}

static uint64_t change_of_stat(const struct stat *st)
{
	return change_of((uint64_t)st->st_mtim.tv_sec, (uint64_t)st->st_mtim.tv_nsec,
			 (uint64_t)st->st_ctim.tv_sec, (uint64_t)st->st_ctim.tv_nsec,
			 (uint64_t)st->st_size);
}

uint64_t nfs_change_of_fattr(const fattr3 *a)
{
	return change_of(a->mtime.seconds, a->mtime.nseconds, a->ctime.seconds, a->ctime.nseconds,
			 a->size);
}

static uint64_t change_of_wcc(const wcc_attr *w)
{
	return change_of(w->mtime.seconds, w->mtime.nseconds, w->ctime.seconds, w->ctime.nseconds,
			 w->size);
}

void stat_of_fattr(const fattr3 *a, struct stat *st)
{
	static const mode_t types[] = { [NF3REG] = S_IFREG, [NF3DIR] = S_IFDIR,
					[NF3BLK] = S_IFBLK, [NF3CHR] = S_IFCHR,
					[NF3LNK] = S_IFLNK, [NF3SOCK] = S_IFSOCK,
					[NF3FIFO] = S_IFIFO };
	memset(st, 0, sizeof(*st));
	st->st_dev = (dev_t)a->fsid;
	st->st_ino = (ino_t)a->fileid;
	st->st_mode = (a->type >= NF3REG && a->type <= NF3FIFO ? types[a->type] : S_IFREG) |
		      (a->mode & 07777);
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_size = (off_t)a->size;
	st->st_blocks = (blkcnt_t)((a->used + 511) / 512);
	st->st_blksize = 4096;
	st->st_rdev = makedev(a->rdev.specdata1, a->rdev.specdata2);
	st->st_atim = (struct timespec){ a->atime.seconds, a->atime.nseconds };
	st->st_mtim = (struct timespec){ a->mtime.seconds, a->mtime.nseconds };
	st->st_ctim = (struct timespec){ a->ctime.seconds, a->ctime.nseconds };
}

uint64_t nfs_dir_verifier(struct node *dir)
{
	return atomic_load(&dir->foreign) + 1;
}

struct expire_ctx {
	struct udcfs *fs;
	fuse_ino_t dir;
};

static int expire_child(void *ctx, const char *name, size_t len, const udc_entry *e)
{
	struct expire_ctx *x = ctx;
	(void)e;
	udc_set_entry_timeout(x->fs->cache, x->dir, name, len, 0);
	return 0;
}

/* Directory `n` changed behind udcfs: see the rules. */
static void foreign_change(struct udcfs *fs, fuse_ino_t ino, struct node *n)
{
	uint64_t f = atomic_fetch_add(&n->foreign, 1) + 1;
	struct expire_ctx x = { fs, ino };

	udc_dir_changed(fs->cache, ino, f + 1);
	udc_children(fs->cache, ino, expire_child, &x);
}

uint64_t nfs_attr_ttl(struct udcfs *fs, fuse_ino_t ino, struct node *n, const struct stat *st)
{
	struct nfs_state *s = nfs_of(fs);
	uint64_t v = change_of_stat(st);
	uint64_t old = atomic_exchange(&n->change, v);
	uint64_t min = n->is_dir ? s->acdirmin : s->acregmin;
	uint64_t max = n->is_dir ? s->acdirmax : s->acregmax;
	uint64_t t = atomic_load_explicit(&n->attr_timeo, memory_order_relaxed);

	if (old != v && old != 0 && n->is_dir)
		foreign_change(fs, ino, n);
	if (old != v || t < min)
		t = min;
	else
		t = t > max / 2 ? max : 2 * t;
	atomic_store_explicit(&n->attr_timeo, t, memory_order_relaxed);
	return t;
}

void nfs_keep_post(struct nfs_attrs *k, const post_op_attr *pa)
{
	k->has = pa->attributes_follow != 0;
	if (k->has)
		k->a = pa->post_op_attr_u.attributes;
}

void nfs_keep_wcc(struct nfs_wcc *k, const wcc_data *w)
{
	k->has_before = w->before.attributes_follow != 0;
	k->has_after = w->after.attributes_follow != 0;
	if (k->has_before)
		k->before = w->before.pre_op_attr_u.attributes;
	if (k->has_after)
		k->after = w->after.post_op_attr_u.attributes;
}

/* Files `st`, which a change udcfs made left: later than any reply in flight (see node.c). */
static void file_changed(struct udcfs *fs, fuse_ino_t ino, struct node *n, const struct stat *st)
{
	uint32_t ver = atomic_fetch_add(&n->attr_ver, 1) + 1;
	attr_cache(fs, ino, st, ver);
}

void nfs_apply_post(struct udcfs *fs, struct node *n, const struct nfs_attrs *k)
{
	fuse_ino_t ino = node_ino(fs, n);
	struct stat st;

	if (!k->has) {
		attr_stale(fs, ino);
		return;
	}
	stat_of_fattr(&k->a, &st);
	file_changed(fs, ino, n, &st);
}

void nfs_apply_wcc(struct udcfs *fs, struct node *n, const struct nfs_wcc *k)
{
	fuse_ino_t ino = node_ino(fs, n);
	struct stat st;

	if (!k->has_after) {
		attr_stale(fs, ino);
		return;
	}
	stat_of_fattr(&k->after, &st);
	if (k->has_before) {
		uint64_t pre = change_of_wcc(&k->before);
		/* Own change alone: n->change moves from pre to post, and nfs_attr_ttl then sees
		 * no change. Otherwise it sees post as a change (foreign for a directory). */
		atomic_compare_exchange_strong(&n->change, &pre, change_of_stat(&st));
	}
	file_changed(fs, ino, n, &st);
}

void nfs_dir_fresh(struct udcfs *fs, fuse_req_t req, fuse_ino_t dir)
{
	udc_attr a;
	struct stat st;

	if (udc_getattr(fs->cache, dir, &a) == 0)
		return;
	node_stat(fs, req, dir, &st); /* a GETATTR, through nfs_attr_ttl */
}

/*
 * udcache's revalidate callback (see the rules): a name whose timeout passed, or a negative
 * whose directory changed. Runs on the thread of the lookup that asked (fs_lookup's
 * udc_resolve), with the parent made fresh just before.
 */
int nfs_revalidate(void *ctx, uint64_t parent, const char *name, size_t len,
		   const udc_cached *cached, int may_block, uint64_t *ttl_ns)
{
	struct udcfs *fs = ctx;
	struct nfs_state *s = nfs_of(fs);
	udc_attr a;

	if (cached->negative)
		return UDC_REVAL_INVALID; /* the lookup callback asks the server, once */
	if (!cached->dir_changed && s->lookupcache != LOOKUPCACHE_NONE &&
	    udc_getattr(fs->cache, parent, &a) == 0) {
		*ttl_ns = s->acdirmin;
		return UDC_REVAL_VALID;
	}
	if (!may_block)
		return UDC_REVAL_NEEDS_BLOCK;
	/* A LOOKUP: the same file id is the same name. */
	char cname[256];
	struct bobj o;
	if (len >= sizeof(cname))
		return UDC_REVAL_INVALID;
	memcpy(cname, name, len);
	cname[len] = '\0';
	if (fs->be->lookup(fs, NULL, node_of(fs, parent), cname, &o) < 0)
		return UDC_REVAL_INVALID;
	fs->be->drop(fs, &o.h);
	/* The same object: the same handle (a file id alone may have been reused). */
	if (!fs->be->same(&node_of(fs, cached->entry.ino)->h, &o.h))
		return UDC_REVAL_INVALID;
	*ttl_ns = s->lookupcache == LOOKUPCACHE_NONE ? 0 : s->acdirmin;
	return UDC_REVAL_VALID;
}
