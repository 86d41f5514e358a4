/* dcache_stress.c -- the negative-dentry flood tool of the 2020 "dcache: increase poison
 * resistance" thread, ported onto libudcache, with the same options and output lines.
 *
 *   dcache_stress [-i ITERATIONS] [-n NAMES] [-p PREFIX] [-o DIR] [-u] [-s] [-d]
 *                 [-B BUCKETS] [-D DIR [-S STATSFILE]]
 *
 * Each iteration touches NAMES new names (PREFIX, the iteration and the index, in hex) in a
 * fresh temporary directory: looks each up (by default: a miss, so a negative entry), or
 * creates and removes it (-u), or creates it as a directory and enters it (-d); -s touches each
 * name twice, -o also looks it up in another directory. Between iterations it prints the
 * dentry-state figures and the time of a walk over the directory's children (the tool's
 * "inotify time": adding an inotify watch walks them in Linux).
 *
 * Two modes:
 *   library mode (default) -- the names live in a udcache cache: a lookup is udc_resolve
 *     through a lookup callback into an in-memory filesystem kept by this program; creating is
 *     udc_add, removing udc_unlink followed by the kernel's forget (udc_forget); the
 *     dentry-state figures are udc_stats_get's; the children walk is udc_children. -o names a
 *     second directory of the cache; -B sets the cache's hash buckets (default 2^20, the
 *     original's assumption for an 8 GB machine).
 *   path mode (-D DIR) -- the original tool on real paths: the temporary directory is made in
 *     DIR (a mounted udcfs, for instance) and the calls are access(2), mknod(2), unlink(2),
 *     mkdir(2), chdir(2), faccessat(2) and inotify_add_watch(2); the figures are read from
 *     STATSFILE (default /proc/sys/fs/dentry-state: six numbers, the sixth the bucket count
 *     or 0). -o opens a real directory.
 */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "udcache.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the figures ------------------------------------------------------------------------- */

typedef struct {
    long nr_dentry, nr_unused, age_limit, want_pages, nr_negative, nr_buckets;
} dentry_state;

static void print_state(dentry_state st) {
    if (!st.nr_buckets)
        st.nr_buckets = 1 << 20; /* the original's assumption for 8 GB of memory */
    double total = st.nr_dentry ? (double)st.nr_dentry : 1.0; /* no division by zero */
    printf("nr_dentry = %ld\t%.1fM\n", st.nr_dentry, (double)st.nr_dentry / 1e6);
    printf("nr_buckets = %ld\t%.1f avg\n", st.nr_buckets,
           (double)st.nr_dentry / (double)st.nr_buckets);
    printf("nr_unused = %ld\t%.1f%%\n", st.nr_unused, (double)st.nr_unused * 100. / total);
    printf("nr_negative = %ld\t%.1f%%\n\n", st.nr_negative,
           (double)st.nr_negative * 100. / total);
}

/* ---- the two modes: what each step of the tool does ------------------------------------ */

/* The steps of the tool, done by the library mode on a udcache cache or by the path mode on
 * real paths. `other` selects the -o directory. */
typedef struct {
    void (*state)(void *m);                         /* print the dentry-state figures */
    void (*watch_time)(void *m);                    /* print the "inotify time" */
    void (*enter_temp)(void *m, char *dir_name);    /* make the temporary directory, enter it */
    void (*access)(void *m, int other, const char *name);
    void (*mknod_unlink)(void *m, const char *name);
    void (*mkdir_chdir)(void *m, const char *name);
    void (*remove_temp)(void *m, const char *dir_name); /* leave it and remove it */
    void (*finish)(void *m);                        /* free everything */
} mode;

/* ---- library mode: an in-memory filesystem behind a udcache cache ------------------------ */

/* The filesystem's names: a chained hash table of (parent, name) -> (ino, type). */
typedef struct node {
    struct node *next;
    uint64_t parent, ino;
    uint32_t type;
    size_t len;
    char name[];
} node;

typedef struct {
    node **buckets;
    size_t nbuckets, count;
    uint64_t next_ino;
} memfs;

static uint64_t hash_name(uint64_t parent, const char *name, size_t len) {
    uint64_t h = 0xcbf29ce484222325ull ^ parent; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)name[i]) * 0x100000001b3ull;
    return h;
}

static node **memfs_slot(memfs *fs, uint64_t parent, const char *name, size_t len) {
    node **p = &fs->buckets[hash_name(parent, name, len) & (fs->nbuckets - 1)];
    while (*p && !((*p)->parent == parent && (*p)->len == len && !memcmp((*p)->name, name, len)))
        p = &(*p)->next;
    return p;
}

static uint64_t memfs_create(memfs *fs, uint64_t parent, const char *name, uint32_t type) {
    size_t len = strlen(name);
    node **p = memfs_slot(fs, parent, name, len);
    if (*p)
        errx(2, "create %s: exists", name);
    node *n = malloc(sizeof *n + len);
    if (!n)
        err(2, "malloc");
    *n = (node){.next = NULL, .parent = parent, .ino = fs->next_ino++, .type = type, .len = len};
    memcpy(n->name, name, len);
    *p = n;
    fs->count++;
    return n->ino;
}

static void memfs_remove(memfs *fs, uint64_t parent, const char *name) {
    node **p = memfs_slot(fs, parent, name, strlen(name));
    node *n = *p;
    if (!n)
        errx(2, "remove %s: no such name", name);
    *p = n->next;
    free(n);
    fs->count--;
}

static void memfs_free(memfs *fs) {
    for (size_t b = 0; b < fs->nbuckets; b++)
        for (node *n = fs->buckets[b], *next; n; n = next) {
            next = n->next;
            free(n);
        }
    free(fs->buckets);
}

/* The lookup callback: the single-threaded tool reads the table without a lock. */
static int memfs_lookup(void *ctx, uint64_t parent, const char *name, size_t len,
                        udc_entry *out) {
    node *n = *memfs_slot(ctx, parent, name, len);
    if (!n)
        return 0;
    out->ino = n->ino;
    out->type = n->type;
    out->fs_data = 0;
    return 1;
}

typedef struct {
    udc_cache *cache;
    memfs fs;
    uint64_t cwd, other, temp; /* current, -o and temporary directories (0: none) */
    const char *other_name;
} lib;

static void lib_check(int ret, const char *what, const char *name) {
    if (ret < 0)
        errx(2, "%s %s: %s", what, name, strerror(-ret));
}

static void lib_state(void *m) {
    lib *l = m;
    udc_stats s = {.size = sizeof s};
    lib_check(udc_stats_get(l->cache, &s), "udc_stats_get", "");
    dentry_state st = {(long)s.nr_dentry, (long)s.nr_unused, 0, 0, (long)s.nr_negative,
                       (long)s.nr_buckets};
    print_state(st);
}

/* access(name): a lookup through the cache, which asks the filesystem on a miss. */
static void lib_access(void *m, int other, const char *name) {
    lib *l = m;
    uint64_t dir = other ? l->other : l->cwd;
    udc_entry e;
    int r = udc_resolve(l->cache, dir, name, strlen(name), &e);
    lib_check(r, "resolve", name);
    if (r == UDC_POSITIVE) /* the kernel would forget it when it drops the dentry */
        lib_check(udc_forget(l->cache, e.ino, 1), "forget", name);
}

/* A creation as a FUSE reply files it: the filesystem's, then the cache's (one lookup). */
static uint64_t lib_create(lib *l, const char *name, uint32_t type) {
    uint64_t ino = memfs_create(&l->fs, l->cwd, name, type);
    udc_entry e = {.ino = ino, .type = type, .fs_data = 0};
    lib_check(udc_add(l->cache, l->cwd, name, strlen(name), &e), "add", name);
    return ino;
}

/* mknod and unlink: the filesystem's, the cache's, and the kernel's forget of the lookup. */
static void lib_mknod_unlink(void *m, const char *name) {
    lib *l = m;
    uint64_t ino = lib_create(l, name, UDC_TYPE_REG);
    memfs_remove(&l->fs, l->cwd, name);
    lib_check(udc_unlink(l->cache, l->cwd, name, strlen(name)), "unlink", name);
    lib_check(udc_forget(l->cache, ino, 1), "forget", name);
}

static void lib_mkdir_chdir(void *m, const char *name) {
    lib *l = m;
    l->cwd = lib_create(l, name, UDC_TYPE_DIR);
}

/* The "inotify time": a walk over the temporary directory's cached children. */
static void lib_children_time(void *m) {
    lib *l = m;
    double tm = now();
    lib_check(udc_children(l->cache, l->temp, NULL, NULL), "children", "");
    tm = now() - tm;
    printf("inotify time: %f seconds\n\n", tm);
}

/* The cache, its callbacks and the filesystem; the directories are made by lib_enter. */
static void lib_init(lib *l, size_t buckets, const char *other) {
    udc_config cfg;
    udc_config_init(&cfg);
    cfg.buckets = buckets;
    lib_check(udc_cache_new(&cfg, &l->cache), "udc_cache_new", "");
    l->fs.nbuckets = 1 << 16;
    l->fs.buckets = calloc(l->fs.nbuckets, sizeof *l->fs.buckets);
    l->fs.next_ino = 2;
    if (!l->fs.buckets)
        err(2, "calloc");
    udc_ops ops = {.size = sizeof ops, .lookup = memfs_lookup, .ctx = &l->fs};
    lib_check(udc_set_ops(l->cache, &ops), "udc_set_ops", "");
    l->other_name = other;
}

/* mkdtemp in the root, and chdir; the -o directory beside it. */
static void lib_enter(void *m, char *dir_name) {
    lib *l = m;
    srand((unsigned)getpid() ^ (unsigned)time(NULL));
    for (char *x = strchr(dir_name, 'X'); x && *x; x++)
        *x = "abcdefghijklmnopqrstuvwxyz0123456789"[rand() % 36];
    l->cwd = UDC_ROOT_INO;
    l->temp = lib_create(l, dir_name, UDC_TYPE_DIR);
    if (l->other_name)
        l->other = lib_create(l, l->other_name, UDC_TYPE_DIR);
    l->cwd = l->temp;
}

/* rmdir: the filesystem's, the cache's (the directory and every entry below it), and the
 * kernel's forget of the directory. */
static void lib_remove(void *m, const char *dir_name) {
    lib *l = m;
    memfs_remove(&l->fs, UDC_ROOT_INO, dir_name);
    lib_check(udc_invalidate(l->cache, UDC_ROOT_INO, dir_name, strlen(dir_name)), "invalidate",
              dir_name);
    lib_check(udc_forget(l->cache, l->temp, 1), "forget", dir_name);
}

static void lib_finish(void *m) {
    lib *l = m;
    udc_cache_destroy(l->cache);
    memfs_free(&l->fs);
}

static const mode library_mode = {lib_state,       lib_children_time, lib_enter,
                                  lib_access,      lib_mknod_unlink,  lib_mkdir_chdir,
                                  lib_remove,      lib_finish};

/* ---- path mode ---------------------------------------------------------------------------- */

static const char *stats_file = "/proc/sys/fs/dentry-state";

typedef struct {
    const char *root; /* -D */
    int other;        /* the -o directory, or -1 */
} paths;

static void path_state(void *m) {
    (void)m;
    dentry_state st;
    FILE *f = fopen(stats_file, "r");
    if (!f)
        err(2, "open %s", stats_file);
    if (fscanf(f, "%ld %ld %ld %ld %ld %ld", &st.nr_dentry, &st.nr_unused, &st.age_limit,
               &st.want_pages, &st.nr_negative, &st.nr_buckets) != 6)
        errx(2, "read %s: not six numbers", stats_file);
    fclose(f);
    print_state(st);
}

static void path_inotify_time(void *m) {
    (void)m;
    int fd = inotify_init1(0);
    if (fd < 0)
        err(2, "inotify_init1");
    double tm = now();
    inotify_add_watch(fd, ".", IN_OPEN);
    tm = now() - tm;
    printf("inotify time: %f seconds\n\n", tm);
    close(fd);
}

static void path_enter(void *m, char *dir_name) {
    paths *p = m;
    if (chdir(p->root))
        err(2, "chdir %s", p->root);
    if (!mkdtemp(dir_name))
        err(2, "mkdtemp");
    if (chdir(dir_name))
        err(2, "chdir");
}

static void path_access(void *m, int other, const char *name) {
    paths *p = m;
    if (other)
        faccessat(p->other, name, F_OK, 0);
    else
        access(name, F_OK);
}

static void path_mknod_unlink(void *m, const char *name) {
    (void)m;
    if (mknod(name, S_IFREG, 0))
        err(2, "mknod %s", name);
    if (unlink(name))
        err(2, "unlink %s", name);
}

static void path_mkdir_chdir(void *m, const char *name) {
    (void)m;
    if (mkdir(name, 0775))
        err(2, "mkdir %s", name);
    if (chdir(name))
        err(2, "chdir %s", name);
}

static void path_remove(void *m, const char *dir_name) {
    (void)m;
    if (chdir(".."))
        err(2, "chdir");
    if (rmdir(dir_name))
        err(2, "rmdir");
}

static void path_finish(void *m) {
    paths *p = m;
    if (p->other >= 0)
        close(p->other);
}

static const mode path_mode = {path_state,       path_inotify_time, path_enter,
                               path_access,      path_mknod_unlink, path_mkdir_chdir,
                               path_remove,      path_finish};

/* ---- the tool ----------------------------------------------------------------------------- */

typedef struct {
    int iterations, names, unlink_each, chdir_each, twice;
    char prefix[256];
    const char *other, *root; /* -o, -D */
    size_t buckets;
} options;

static void usage(const char *argv0, const options *o) {
    printf("usage: %s [-i <iterations>] [-n <names>] [-p <prefix>] [-o <dir>] [-u] [-s]\n"
           " -i test iterations, default %d\n"
           " -n names at each iterations, default %d\n"
           " -p prefix for names\n"
           " -o interlave with other dir\n"
           " -s touch twice\n"
           " -u mknod-unlink sequence\n"
           " -d mkdir-chdir sequence (leaves garbage)\n"
           " -B hash buckets of the cache (library mode), default %zu\n"
           " -D work in a temporary directory in <dir> on real paths (path mode)\n"
           " -S dentry-state file (path mode), default %s\n",
           argv0, o->iterations, o->names, o->buckets, stats_file);
}

/* The name of index `index` in iteration `iteration`. */
static void make_name(char *name, size_t size, const options *o, int iteration, int index) {
    int n = snprintf(name, size, "%s%08x%08x", o->prefix, (unsigned)iteration, (unsigned)index);
    if (n < 0 || (size_t)n >= size)
        errx(2, "prefix too long");
}

/* The tool: the same steps and output lines in either mode. */
static int flood(const options *o, const mode *md, void *m) {
    char dir_name[] = "dcache_stress.XXXXXX", name[300];
    md->enter_temp(m, dir_name);
    md->state(m);
    if (!o->chdir_each)
        md->watch_time(m);
    printf("working in temporary directory %s\n\n", dir_name);

    long long total = 0;
    for (int it = 1; it <= o->iterations; it++) {
        printf("start iteration %d, %d names\n", it, o->names);
        double tm = now();
        for (int i = 0; i < o->names; i++) {
            make_name(name, sizeof name, o, it, i);
            if (o->unlink_each)
                md->mknod_unlink(m, name);
            else if (o->chdir_each)
                md->mkdir_chdir(m, name);
            else
                md->access(m, 0, name);
            if (o->twice)
                md->access(m, 0, name);
            if (o->other) {
                md->access(m, 1, name);
                if (o->twice)
                    md->access(m, 1, name);
            }
        }
        total += o->names;
        tm = now() - tm;
        printf("iteration %d complete in %f seconds, total names %lld\n\n", it, tm, total);
        md->state(m);
        if (!o->chdir_each)
            md->watch_time(m);
    }

    if (o->chdir_each) {
        printf("leave temporary directory %s\n", dir_name);
    } else {
        printf("removing temporary directory %s\n", dir_name);
        double tm = now();
        md->remove_temp(m, dir_name);
        tm = now() - tm;
        printf("remove complete in %f seconds\n\n", tm);
        md->state(m);
    }
    md->finish(m);
    return 0;
}

int main(int argc, char **argv) {
    options o = {.iterations = 10, .names = 1 << 20, .buckets = 1 << 20};
    int opt;
    while ((opt = getopt(argc, argv, "i:n:p:o:usdB:D:S:h")) != -1) {
        switch (opt) {
        case 'i': o.iterations = atoi(optarg); break;
        case 'n': o.names = atoi(optarg); break;
        case 'p':
            if (strlen(o.prefix) + strlen(optarg) >= sizeof o.prefix)
                errx(2, "prefix too long");
            strcat(o.prefix, optarg);
            break;
        case 'o': o.other = optarg; break;
        case 'u': o.unlink_each = 1; break;
        case 'd': o.chdir_each = 1; break;
        case 's': o.twice = 1; break;
        case 'B': o.buckets = (size_t)strtoull(optarg, NULL, 0); break;
        case 'D': o.root = optarg; break;
        case 'S': stats_file = optarg; break;
        default:
            usage(argv[0], &o);
            return 1;
        }
    }
    if (optind != argc) {
        usage(argv[0], &o);
        return 1;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (o.root) {
        paths p = {.root = o.root, .other = -1};
        if (o.other && (p.other = open(o.other, O_RDONLY | O_DIRECTORY)) < 0)
            err(2, "open %s", o.other);
        return flood(&o, &path_mode, &p);
    }
    lib l = {0};
    lib_init(&l, o.buckets, o.other);
    return flood(&o, &library_mode, &l);
}
