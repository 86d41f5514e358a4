/* stress_test.c -- threads looking up, walking, adding, unlinking, renaming, forgetting,
 * resolving through a callback and setting attributes on one cache at once, with checks during
 * the run and invariant checks at the end.
 *
 *   stress_test [-t THREADS] [-m MILLISECONDS] [-d DIRS] [-k NAMES]
 *
 * The namespace: directories d0..d{D-1} under the root (swapped by RENAME_EXCHANGE while
 * others walk through them); in each, names n0..n{K-1} that threads add (fresh inode numbers),
 * unlink, rename and forget, and names c0..c{K-1} only ever resolved through the lookup
 * callback (even ones exist). Checks:
 *   during the run -- every positive answer (lookup, walk, resolve) is an inode whose fs_data
 *     matches its number (no torn or stale entry); every error is one the operation may give;
 *     a getattr snapshot is never torn; forget of a thread's own inode always succeeds;
 *   at the end -- each inode has at most one name; the stats agree with a scan of every name;
 *     each existing callback name was asked of the callback exactly once (misses coalesced,
 *     positives never evicted); the inode count is exactly the root, the directories, the
 *     live added inodes and the resolved callback names; after every thread's remaining
 *     inodes are forgotten, no n-name is positive. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "udcache.h"

#define MAX_DIRS 64
#define MAX_NAMES 256
#define DIR_INO(i) (2 + (uint64_t)(i))
#define CB_INO(d, k) (1000000 + (uint64_t)(d) * MAX_NAMES + (uint64_t)(k))
#define FS_DATA(ino) ((ino) * 0x9e3779b97f4a7c15ull)

static int nthreads = 4, millis = 1500, ndirs = 8, nnames = 64;
static udc_cache *cache;
static atomic_bool stop;
static atomic_uint_fast64_t next_ino = 10000;
static atomic_int cb_calls[MAX_DIRS][MAX_NAMES];
static atomic_long failures_reported;

/* A failed check during the run: counted, and the first few printed. */
#define FAIL(...)                                                                         \
    do {                                                                                  \
        CHECK(!"stress check");                                                           \
        if (atomic_fetch_add(&failures_reported, 1) < 20)                                 \
            fprintf(stderr, __VA_ARGS__);                                                 \
    } while (0)

static int below(rng *r, int n) { return (int)(rng_next(r) % (uint64_t)n); }

static int name_of(char *buf, char kind, int k) { return snprintf(buf, 16, "%c%d", kind, k); }

/* A positive entry must be a consistent inode. */
static void check_entry(const udc_entry *e, const char *op) {
    if (e->ino == 0 || e->fs_data != FS_DATA(e->ino))
        FAIL("%s: inconsistent entry ino %llu fs_data %llx\n", op, (unsigned long long)e->ino,
             (unsigned long long)e->fs_data);
}

static int fs_lookup(void *ctx, uint64_t parent, const char *name, size_t len, udc_entry *out) {
    (void)ctx;
    int d = (int)(parent - DIR_INO(0)), k = atoi(name + 1);
    if (name[0] != 'c' || len < 2 || d < 0 || d >= ndirs || k < 0 || k >= nnames) {
        FAIL("callback asked for %.*s in %llu\n", (int)len, name, (unsigned long long)parent);
        return -EIO;
    }
    atomic_fetch_add(&cb_calls[d][k], 1);
    /* A slow filesystem: concurrent misses of one name overlap, and must wait for this call. */
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
    if (k % 2)
        return 0;
    uint64_t ino = CB_INO(d, k);
    udc_entry e = {.ino = ino, .type = UDC_TYPE_REG, .fs_data = FS_DATA(ino)};
    *out = e;
    return 1;
}

typedef struct {
    int id;
    uint64_t *mine; /* inodes this thread added and has not forgotten */
    size_t nmine, cap;
    long adds, forgets, ops;
} worker;

static void forget_one(worker *w, size_t i) {
    int r = udc_forget(cache, w->mine[i], 1);
    if (r != 0)
        FAIL("forget of own inode %llu: %d\n", (unsigned long long)w->mine[i], r);
    else
        w->forgets++;
    w->mine[i] = w->mine[--w->nmine];
}

static void *run(void *arg) {
    worker *w = arg;
    rng r = {.state = 0x1234567ull * (uint64_t)(w->id + 1)};
    char a[16], b[16], path[40];
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        w->ops++;
        int d = below(&r, ndirs), d2 = below(&r, ndirs), k = below(&r, nnames);
        int la = name_of(a, 'n', k), lb = name_of(b, 'n', below(&r, nnames));
        udc_entry e;
        int op = below(&r, 100), ret;
        if (op < 30) { /* lookup */
            ret = udc_lookup(cache, DIR_INO(d), a, (size_t)la, &e);
            if (ret == UDC_POSITIVE)
                check_entry(&e, "lookup");
            else if (ret != UDC_NEGATIVE && ret != UDC_MISS)
                FAIL("lookup: %d\n", ret);
        } else if (op < 45) { /* walk through a directory that may be being swapped */
            udc_walk_result wr = {.size = sizeof wr};
            int n = snprintf(path, sizeof path, "d%d/../d%d/%s", d2, d, a);
            ret = udc_walk(cache, UDC_ROOT_INO, path, (size_t)n, &wr);
            if (ret == UDC_WALK_FOUND)
                check_entry(&wr.entry, "walk");
            else if (ret != UDC_WALK_NEGATIVE && ret != UDC_WALK_MISS)
                FAIL("walk %s: %d\n", path, ret);
        } else if (op < 58) { /* add, with a fresh inode */
            uint64_t ino = atomic_fetch_add(&next_ino, 1);
            udc_entry f = {.ino = ino, .type = UDC_TYPE_REG, .fs_data = FS_DATA(ino)};
            ret = udc_add(cache, DIR_INO(d), a, (size_t)la, &f);
            if (ret == 0) {
                if (w->nmine == w->cap) {
                    w->cap = w->cap ? 2 * w->cap : 64;
                    w->mine = realloc(w->mine, w->cap * sizeof *w->mine);
                }
                w->mine[w->nmine++] = ino;
                w->adds++;
            } else if (ret != -EEXIST) {
                FAIL("add: %d\n", ret);
            }
        } else if (op < 68) { /* unlink */
            ret = udc_unlink(cache, DIR_INO(d), a, (size_t)la);
            if (ret != 0 && ret != -ENOENT)
                FAIL("unlink: %d\n", ret);
        } else if (op < 80) { /* rename, any flags */
            unsigned flags = (unsigned)below(&r, 3);
            ret = udc_rename(cache, DIR_INO(d), a, (size_t)la, DIR_INO(d2), b, (size_t)lb, flags);
            if (ret != 0 && ret != -ENOENT && ret != -EEXIST)
                FAIL("rename: %d\n", ret);
        } else if (op < 83) { /* swap two directories: every walk through them must cope */
            char da[16], db[16];
            int lda = name_of(da, 'd', d), ldb = name_of(db, 'd', d2);
            ret = udc_rename(cache, UDC_ROOT_INO, da, (size_t)lda, UDC_ROOT_INO, db, (size_t)ldb,
                             UDC_RENAME_EXCHANGE);
            if (ret != 0)
                FAIL("exchange d%d d%d: %d\n", d, d2, ret);
        } else if (op < 88) { /* forget one of ours */
            if (w->nmine > 0)
                forget_one(w, (size_t)below(&r, (int)w->nmine));
        } else if (op < 96) { /* resolve a callback name */
            int lc = name_of(a, 'c', k);
            ret = udc_resolve(cache, DIR_INO(d), a, (size_t)lc, &e);
            if (ret == UDC_POSITIVE) {
                check_entry(&e, "resolve");
                if (k % 2 || e.ino != CB_INO(d, k))
                    FAIL("resolve c%d in d%d gave %llu\n", k, d, (unsigned long long)e.ino);
            } else if (ret != UDC_NEGATIVE || k % 2 == 0) {
                FAIL("resolve c%d: %d\n", k, ret);
            }
        } else { /* attributes of a directory: never a torn snapshot */
            udc_attr at;
            if (op < 98) {
                uint64_t v = rng_next(&r) >> 1;
                udc_attr set = {.size = v, .blocks = v, .mtime_sec = (int64_t)v,
                                .nlink = (uint32_t)v};
                ret = udc_setattr(cache, DIR_INO(d), &set, 1000000000ull);
                if (ret != 0)
                    FAIL("setattr: %d\n", ret);
            } else if ((ret = udc_getattr(cache, DIR_INO(d), &at)) == 0) {
                if (at.size != at.blocks || (int64_t)at.size != at.mtime_sec ||
                    (uint32_t)at.size != at.nlink)
                    FAIL("torn attributes\n");
            } else if (ret != -ENODATA) {
                FAIL("getattr: %d\n", ret);
            }
        }
    }
    return NULL;
}

/* Scans every name; checks the end-state invariants. */
static void check_end(worker *ws) {
    uint64_t positives = 0, negatives = 0, cb_positive = 0;
    uint64_t *seen = calloc((size_t)ndirs * (size_t)nnames, sizeof *seen);
    size_t nseen = 0;
    char a[16];
    for (int d = 0; d < ndirs; d++) {
        for (int k = 0; k < nnames; k++) {
            udc_entry e;
            int la = name_of(a, 'n', k);
            int r = udc_lookup(cache, DIR_INO(d), a, (size_t)la, &e);
            if (r == UDC_POSITIVE) {
                positives++;
                check_entry(&e, "end lookup");
                for (size_t i = 0; i < nseen; i++)
                    if (seen[i] == e.ino)
                        FAIL("inode %llu has two names\n", (unsigned long long)e.ino);
                seen[nseen++] = e.ino;
            } else if (r == UDC_NEGATIVE) {
                negatives++;
            }
            la = name_of(a, 'c', k);
            r = udc_lookup(cache, DIR_INO(d), a, (size_t)la, &e);
            int calls = atomic_load(&cb_calls[d][k]);
            if (r == UDC_POSITIVE) {
                positives++;
                cb_positive++;
                CHECK_EQ(e.ino, CB_INO(d, k));
                CHECK_EQ(calls, 1); /* coalesced, and never evicted */
            } else if (r == UDC_NEGATIVE) {
                negatives++;
                CHECK(k % 2 == 1);
            } else if (k % 2 == 0) {
                /* A miss: an even name resolved would be positive, so it never was. (An odd
                 * one may have been resolved negative and evicted since.) */
                CHECK_EQ(calls, 0);
            }
        }
    }
    free(seen);
    udc_stats s = {.size = sizeof s};
    CHECK_EQ(udc_stats_get(cache, &s), 0);
    /* Every entry is one of the names scanned, or a directory's name in the root. */
    CHECK_EQ(s.nr_dentry, positives + negatives + (uint64_t)ndirs);
    CHECK_EQ(s.nr_negative, negatives);
    long live = 0;
    for (int t = 0; t < nthreads; t++)
        live += ws[t].adds - ws[t].forgets;
    CHECK_EQ(s.nr_inodes, 1 + (uint64_t)ndirs + (uint64_t)live + cb_positive);

    /* Forget every inode the threads still hold: then no n-name may be positive. */
    for (int t = 0; t < nthreads; t++)
        while (ws[t].nmine > 0)
            forget_one(&ws[t], ws[t].nmine - 1);
    CHECK_EQ(udc_stats_get(cache, &s), 0);
    CHECK_EQ(s.nr_inodes, 1 + (uint64_t)ndirs + cb_positive);
    for (int d = 0; d < ndirs; d++)
        for (int k = 0; k < nnames; k++) {
            int la = name_of(a, 'n', k);
            udc_entry e;
            CHECK(udc_lookup(cache, DIR_INO(d), a, (size_t)la, &e) != UDC_POSITIVE);
        }
    /* The directories are all still there, under some name each. */
    for (int d = 0; d < ndirs; d++) {
        int la = name_of(a, 'd', d);
        udc_entry e;
        CHECK_EQ(udc_lookup(cache, UDC_ROOT_INO, a, (size_t)la, &e), UDC_POSITIVE);
        CHECK(e.ino >= DIR_INO(0) && e.ino < DIR_INO(ndirs));
    }
}

int main(int argc, char **argv) {
    int opt;
    while ((opt = getopt(argc, argv, "t:m:d:k:")) != -1) {
        switch (opt) {
        case 't': nthreads = atoi(optarg); break;
        case 'm': millis = atoi(optarg); break;
        case 'd': ndirs = atoi(optarg); break;
        case 'k': nnames = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: %s [-t threads] [-m ms] [-d dirs] [-k names]\n", argv[0]);
            return 2;
        }
    }
    if (nthreads < 1 || nthreads > 64 || ndirs < 2 || ndirs > MAX_DIRS || nnames < 2 ||
        nnames > MAX_NAMES || millis < 1) {
        fprintf(stderr, "stress_test: option out of range\n");
        return 2;
    }
    udc_config cfg;
    udc_config_init(&cfg);
    cfg.expected_entries = 4096;
    CHECK_EQ(udc_cache_new(&cfg, &cache), 0);
    udc_ops ops = {.size = sizeof ops, .lookup = fs_lookup};
    CHECK_EQ(udc_set_ops(cache, &ops), 0);
    for (int d = 0; d < ndirs; d++) {
        char a[16];
        int la = name_of(a, 'd', d);
        udc_entry e = {.ino = DIR_INO(d), .type = UDC_TYPE_DIR, .fs_data = FS_DATA(DIR_INO(d))};
        CHECK_EQ(udc_add(cache, UDC_ROOT_INO, a, (size_t)la, &e), 0);
    }

    worker *ws = calloc((size_t)nthreads, sizeof *ws);
    pthread_t *tids = calloc((size_t)nthreads, sizeof *tids);
    for (int t = 0; t < nthreads; t++) {
        ws[t].id = t;
        CHECK_EQ(pthread_create(&tids[t], NULL, run, &ws[t]), 0);
    }
    struct timespec ts = {millis / 1000, (long)(millis % 1000) * 1000000};
    nanosleep(&ts, NULL);
    atomic_store(&stop, 1);
    long ops_done = 0, adds = 0;
    for (int t = 0; t < nthreads; t++) {
        CHECK_EQ(pthread_join(tids[t], NULL), 0);
        ops_done += ws[t].ops;
        adds += ws[t].adds;
    }
    CHECK(ops_done > 0 && adds > 0);
    check_end(ws);

    udc_stats s = {.size = sizeof s};
    udc_stats_get(cache, &s);
    printf("stress_test: %d threads, %d ms: %ld operations, %ld adds; walk_fallbacks %llu, "
           "backend_lookups %llu, coalesced_misses %llu\n",
           nthreads, millis, ops_done, adds, (unsigned long long)s.walk_fallbacks,
           (unsigned long long)s.backend_lookups, (unsigned long long)s.coalesced_misses);
    udc_cache_destroy(cache);
    for (int t = 0; t < nthreads; t++)
        free(ws[t].mine);
    free(ws);
    free(tids);
    return check_summary("stress");
}
